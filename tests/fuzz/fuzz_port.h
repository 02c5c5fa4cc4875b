/* fuzz_port.h: a free TCP port on loopback for a fuzz target's in-process
 * server (the kernel picks one; the server binds it right after). */
#ifndef ABX_FUZZ_PORT_H
#define ABX_FUZZ_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int fuzz_free_loopback_port(void)
{
    int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof a) < 0 ||
        getsockname(probe, (struct sockaddr *)&a, &al) < 0)
        abort();
    close(probe);
    return ntohs(a.sin_port);
}

#endif
