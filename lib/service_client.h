/* service_client.h: a host user without root goes through the machine's
 * abx service (lib/service_client.c). */
#ifndef ABX_SERVICE_CLIENT_H
#define ABX_SERVICE_CLIENT_H

#include "abx/abx.h"

#define ABX_SERVICE_SOCKET "/run/abx/abx.sock"

/* abx_run through the service: a sandbox made for this host user, the
 * command run in it with this process's stdio, the sandbox killed after.
 * As abx_run (opts already checked). */
/* A local create that failed for want of root (E8006, E8007, E8008,
 * E8010) in a process that is not root: the error gains the way out (the
 * machine's abx service). rc is returned as it is. */
int abx__service_hint(int rc, abx_error **err);
/* Templates through the service: the build's context packed here
 * (abx_template_pack_context) and sent; an import's archive opened here
 * and streamed; inspect ("GET") and remove ("DELETE", "DELETE-FORCE") of
 * the user's own. As the abx_template_* calls they serve. */
int abx__service_template_build(abx_client *c, const abx_template_build_options *o, char **info,
                                abx_error **err);
int abx__service_template_import(abx_client *c, const char *name, const char *source, char **info,
                                 abx_error **err);
int abx__service_template_call(abx_client *c, const char *method, const char *name, char **json,
                               abx_error **err);
/* A TCP connection to port of sandbox id (bare) through the service's
 * tunnel (GET /abx/tunnel, upgraded): *fd is the caller's. */
int abx__service_tunnel(const char *socket_path, const char *id, unsigned port, int *fd, abx_error **err);
int abx__run_through_service(const abx_run_options *opts, int *exit_status, abx_error **err);

#endif
