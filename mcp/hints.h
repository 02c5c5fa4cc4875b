/* hints.h: what an MCP tool error tells its reader to do next. */
#ifndef ABX_MCP_HINTS_H
#define ABX_MCP_HINTS_H

/* The hint of error code (an ABX_E* value, either sign) for a model
 * calling tools: in terms of tools and their arguments, never a CLI verb,
 * a flag or "run as root" (abx_err_hint is the CLI's). Static text. */
const char *mcp_hint(int code);

#endif
