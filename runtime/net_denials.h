/* net_denials.h: the packets a sandbox's network policy refused, as the
 * packet filter logs them (runtime/net_denials.c): its deny_N chain sends
 * the first bytes of each refused packet, at most a few a second, to the
 * nflog group ABX_DENIAL_GROUP_BASE + N; this reads that group. */
#ifndef ABX_NET_DENIALS_H
#define ABX_NET_DENIALS_H

#include <stdbool.h>

#define ABX_DENIAL_GROUP_BASE 30000u
#define ABX_DENIAL_COPY_BYTES 64 /* an IPv4 header and the ports after it */

typedef struct abx_net_denial {
    char destination[16]; /* dotted IPv4 */
    unsigned port;        /* 0 when the protocol has none */
    char protocol[8];     /* "tcp", "udp", "icmp", or the number */
} abx_net_denial;

/* A non-blocking socket bound to slot's group; -1 when the kernel will not
 * (no nfnetlink_log). The caller closes it. */
int abx__net_denials_open(unsigned slot);
/* Reads what is waiting on fd: at most max denials into out; their count
 * (0 when nothing is waiting), -1 on an error. */
int abx__net_denials_read(int fd, abx_net_denial *out, int max);
/* The destination of an IPv4 packet's first len bytes; false when they
 * are not one. (Pure: tested on its own.) */
bool abx__net_denial_parse(const unsigned char *ip, unsigned len, abx_net_denial *out);

#endif
