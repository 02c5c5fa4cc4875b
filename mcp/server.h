/* server.h: the MCP server, transport-independent. */
#ifndef ABX_MCP_SERVER_H
#define ABX_MCP_SERVER_H

#include "abx/abx.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Where the messages that answer one incoming message go. send gets one
 * compact JSON message (no newline); done is called once when nothing more
 * will be sent for it (after the response, or at once for a notification). */
typedef struct mcp_sink {
    void (*send)(void *ctx, const char *json, size_t len);
    void (*done)(void *ctx);
    void *ctx;
} mcp_sink;

struct mcp_call;

/* A set of tools. abx's fifteen (tools.c) are the default; the conformance
 * test server (tests/) brings its own. */
typedef struct mcp_toolset {
    json_t *(*list)(void); /* tools/list; caller owns */
    bool (*exists)(const char *name);
    json_t *(*call)(struct mcp_call *call, const char *name); /* a CallToolResult */
    /* resources/read of uri: a ReadResourceResult, or NULL with
     * call->rpc_error set. NULL: no resources capability. */
    json_t *(*read_resource)(struct mcp_call *call, const char *uri);
    json_t *(*resource_templates)(void); /* resources/templates/list's; caller owns */
    /* Whether tools/call of name may run as a task (execution.taskSupport
     * optional). NULL: no tasks capability. */
    bool (*runs_as_task)(const char *name);
} mcp_toolset;

typedef struct mcp_server_config {
    const mcp_toolset *tools;  /* NULL: abx's fifteen tools */
    const char *template_name; /* for sandboxes the session creates ("base" if NULL) */
    const char *provider;      /* --provider (NULL: resolve) */
    const char *name;          /* serverInfo.name ("agent-sandbox" if NULL) */
    const char *tenant;        /* whose sandboxes the session reaches (session.h); NULL: the user's */
    bool stateless;            /* every request is of the 2026-07-28 revision (HTTP without a session) */
} mcp_server_config;

typedef struct mcp_server mcp_server;

int mcp_server_new(const mcp_server_config *cfg, mcp_server **out, abx_error **err);
/* Handles one message. Quick methods answer before returning; tools/call
 * runs on a worker thread and answers later through sink (copied). */
void mcp_server_handle(mcp_server *srv, const char *text, size_t len, const mcp_sink *sink);
/* Cancels request id in flight (as notifications/cancelled does): it stops
 * and answers nothing. A finished or unknown id is ignored. */
void mcp_server_cancel(mcp_server *srv, json_t *id);
/* Number of tool calls in flight. */
int mcp_server_calls_in_flight(mcp_server *srv);
/* Ends the session: cancels calls in flight, waits for them, destroys every
 * sandbox the session created. Idempotent. */
void mcp_server_shutdown(mcp_server *srv);
void mcp_server_free(mcp_server *srv);
/* The protocol version initialize negotiated ("" before it). */
const char *mcp_server_protocol_version(mcp_server *srv);

/* The tools as tools/list sends them; caller owns. */
json_t *mcp_tools_list(void);

#endif
