/* init_server.h: a persistent sandbox's init, serving spawn requests. */
#ifndef ABX_INIT_SERVER_H
#define ABX_INIT_SERVER_H

#include <stdbool.h>

/* Serves the shim on ctl_fd until it closes, then exits. Runs as root
 * inside with only CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL; every
 * process it starts drops all of them. Never returns. */
__attribute__((noreturn)) void abx__init_serve(int ctl_fd, bool full_id_range, bool root_caps);

#endif
