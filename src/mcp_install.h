/* mcp_install.h: `abx mcp install` and the clients part of `abx mcp status`. */
#ifndef ABX_MCP_INSTALL_H
#define ABX_MCP_INSTALL_H

#include "cli.h"
#include <jansson.h>
#include <stddef.h>

#define MCP_SERVER_NAME "agent-sandbox"

/* Writes the agent-sandbox entry into target's configuration, in scope
 * ("user", "project" or NULL for the client's usual one). */
int mcp_install(cli_ctx *ctx, const char *target, const char *scope);
/* {client: {path, installed, scope, scopes: {user|project: {path, installed}}}}
 * for every client abx knows (a new object). */
json_t *mcp_install_state(void);
/* What stops sandboxes here for this user, as one line in out; false when
 * nothing does. */
bool mcp_host_problems(char *out, size_t len);

#endif
