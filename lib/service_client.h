/* service_client.h: a host user without root goes through the machine's
 * abx service (lib/service_client.c). */
#ifndef ABX_SERVICE_CLIENT_H
#define ABX_SERVICE_CLIENT_H

#include "abx/abx.h"

#define ABX_SERVICE_SOCKET "/run/abx/abx.sock"

/* abx_run through the service: a sandbox made for this host user, the
 * command run in it with this process's stdio, the sandbox killed after.
 * As abx_run (opts already checked). */
/* Whether the service answers GET /health on socket_path (within 3 s). */
bool abx__service_reachable(const char *socket_path);
int abx__run_through_service(const abx_run_options *opts, int *exit_status, abx_error **err);

#endif
