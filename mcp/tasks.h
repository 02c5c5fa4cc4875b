/* tasks.h: one session's tasks (2025-11-25 task-augmented tools/call). */
#ifndef ABX_MCP_TASKS_H
#define ABX_MCP_TASKS_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MCP_TASKS_MAX 64
#define MCP_TASK_TTL_DEFAULT_MS (60u * 60 * 1000)  /* a result is kept an hour after creation... */
#define MCP_TASK_TTL_MAX_MS (24u * 60 * 60 * 1000) /* ...and never more than a day */
#define MCP_TASK_POLL_MS 500

typedef enum mcp_task_status {
    MCP_TASK_WORKING,
    MCP_TASK_COMPLETED,
    MCP_TASK_FAILED,
    MCP_TASK_CANCELLED
} mcp_task_status;

typedef struct mcp_task {
    char id[33]; /* 128 random bits, hex */
    mcp_task_status status;
    char status_message[200];
    int64_t created_ms, updated_ms; /* wall clock, for the ISO 8601 times */
    uint64_t expires_ms;            /* monotonic */
    unsigned ttl_ms;
    json_t *result;     /* the CallToolResult, once terminal (owned) */
    atomic_int *cancel; /* the running call's flag (borrowed while working) */
} mcp_task;

typedef struct mcp_tasks {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast when a task ends */
    mcp_task *tasks[MCP_TASKS_MAX];
    int ntasks;
    bool ended;
} mcp_tasks;

void mcp_tasks_init(mcp_tasks *t);
/* Cancels what is working, wakes every waiter, frees every task. */
void mcp_tasks_end(mcp_tasks *t);
/* A new working task for a call whose flag is cancel; ttl_ms 0: the
 * default (bounded by MCP_TASK_TTL_MAX_MS). Returns its Task object
 * (caller owns) and copies its id to id; NULL when the table is full of
 * live tasks or the session has ended. */
json_t *mcp_tasks_create(mcp_tasks *t, unsigned ttl_ms, atomic_int *cancel, char id[33]);
/* The call behind task id has returned result (a CallToolResult, taken;
 * NULL: it failed before it could say anything). A task cancelled or
 * expired meanwhile keeps its status and the result is dropped. */
void mcp_tasks_finish(mcp_tasks *t, const char *id, json_t *result);
/* tasks/get and tasks/cancel: the Task object (caller owns), or NULL with
 * *code and *message set (-32602: no such task, or already terminal). */
json_t *mcp_tasks_get(mcp_tasks *t, const char *id, int *code, const char **message);
json_t *mcp_tasks_cancel(mcp_tasks *t, const char *id, int *code, const char **message);
/* tasks/list: {tasks: [...]} (caller owns). */
json_t *mcp_tasks_list(mcp_tasks *t);
/* tasks/result: blocks until task id is terminal (or *stop becomes
 * non-zero, or the session ends: NULL with -32603), then returns what the
 * call returned, with the related-task _meta (caller owns); NULL with
 * *code and *message when there is no such task. */
json_t *mcp_tasks_result(mcp_tasks *t, const char *id, atomic_int *stop, int *code, const char **message);

#endif
