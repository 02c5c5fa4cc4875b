/* transport_stdio.h: the MCP STDIO transport. */
#ifndef ABX_MCP_STDIO_H
#define ABX_MCP_STDIO_H

#include "server.h"

/* Serves srv on stdin/stdout (one JSON-RPC message per line; logs on stderr
 * only) until stdin ends or SIGTERM, SIGINT or SIGHUP arrives, then ends
 * the session (destroying its sandboxes). Returns the exit status. */
int mcp_stdio_serve(mcp_server *srv);

#endif
