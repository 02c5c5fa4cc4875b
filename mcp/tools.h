/* tools.h: the fifteen tools: schemas, validation, handlers. */
#ifndef ABX_MCP_TOOLS_H
#define ABX_MCP_TOOLS_H

#include "server.h"
#include "session.h"
#include <stdatomic.h>

typedef struct mcp_call {
    mcp_session *session;
    json_t *args;           /* borrowed; an object */
    json_t *progress_token; /* borrowed; NULL without one */
    double progress;        /* the last progress value sent */
    uint64_t output_bytes;  /* output seen so far (progress messages) */
    uint64_t last_progress_ms;
    bool sandbox_replaced; /* the default sandbox had ended and a new one took its place */
    bool used_default;     /* the call used (or lazily made) the default sandbox */
    atomic_int cancelled;
    mcp_sink sink;
    int log_level; /* the server's, at the call's start */
    pthread_mutex_t *send_mu;
    /* the request is of the stateless revision (2026-07-28): no session
     * of the protocol's, so a result made on the default sandbox names it */
    bool modern;
    /* the client's capabilities (borrowed): a stateless request's own
     * _meta, else what initialize said; NULL when unknown */
    json_t *client_capabilities;
    char default_id[96]; /* the default sandbox the call used ("" if none) */
    /* set (owned by the server) by a method that answers a JSON-RPC error
     * ({code, message}) instead of a result */
    json_t *rpc_error;
} mcp_call;

/* Runs tool name; returns a CallToolResult, or NULL when there is no such
 * tool (a protocol error for the caller). */
json_t *mcp_tools_call(mcp_call *call, const char *name);
/* The tool list (tools/list) built from mcp/tools.json. Never NULL. */
json_t *mcp_tools_list(void);
bool mcp_tool_exists(const char *name);
int mcp_log_level_from_name(const char *name);
/* Sends notifications/message when level is at or above the call's level. */
void mcp_call_log(mcp_call *c, int level, const char *text);
/* Sends notifications/progress (only when the request asked for it). */
void mcp_call_progress(mcp_call *c, double progress, double total, const char *message);
/* abx's fifteen tools as a toolset. */
extern const mcp_toolset mcp_abx_tools;

#endif
