/* resources.h: sandbox files as MCP resources (sandbox://ID/PATH). */
#ifndef ABX_MCP_RESOURCES_H
#define ABX_MCP_RESOURCES_H

#include "tools.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_RESOURCE_SCHEME "sandbox://"

/* The URI of file PATH (absolute) in sandbox ID: the id and the path
 * percent-encoded (":" of a qualified id too, so that a URL parser does not
 * read it as a port). Caller frees; NULL when PATH is not absolute or on
 * ENOMEM. */
char *mcp_resource_uri(const char *id, const char *path);
/* Splits a URI mcp_resource_uri could have made into its id and path
 * (decoded, NUL-terminated). False for anything else: another scheme, no
 * path, a bad or NUL escape, a part longer than its buffer. */
bool mcp_resource_parse(const char *uri, char *id, size_t id_len, char *path, size_t path_len);
/* A resource_link content block for PATH in sandbox ID; size < 0: unknown.
 * NULL on failure (the result then simply has no link). Caller owns. */
json_t *mcp_resource_link(const char *id, const char *path, const char *name, const char *description,
                          const char *mime, long long size);
/* resources/read of URI for the call's session: a ReadResourceResult, or
 * NULL with call->rpc_error set (not found: -32002, for a sandbox or file
 * the session cannot reach exactly as for one that does not exist). */
json_t *mcp_resources_read(mcp_call *call, const char *uri);
/* resources/templates/list's templates. Caller owns. */
json_t *mcp_resource_templates(void);

#endif
