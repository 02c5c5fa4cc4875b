/* transport_http.h: the MCP Streamable HTTP transport. */
#ifndef ABX_MCP_TRANSPORT_HTTP_H
#define ABX_MCP_TRANSPORT_HTTP_H

#include "server.h"

typedef struct mcp_http_config {
    const char *listen;               /* "HOST:PORT" (port 0: any free port) */
    const char *const *tokens;        /* accepted Bearer tokens, NULL-terminated; none: no auth */
    unsigned session_ttl_s;           /* idle sessions end after this; 0: 1800 */
    unsigned max_sessions;            /* 0: 256 */
    const char *const *allowed_hosts; /* extra Host/Origin names, NULL-terminated; may be NULL */
    mcp_server_config server;         /* how each session's server is made */
} mcp_http_config;

/* Serves until SIGTERM, SIGINT or SIGHUP, then ends every session (which
 * destroys their sandboxes). Prints "abx mcp: listening on http://H:P/mcp"
 * on stderr once it accepts connections. Returns 0, or -ABX_E* with *err
 * set when it could not start (e.g. a non-loopback address without a
 * token: E8020). */
int mcp_http_serve(const mcp_http_config *cfg, abx_error **err);

#endif
