/* tasks.c: one session's tasks (2025-11-25 task-augmented tools/call).
 * Owns the task table: unguessable ids (128 bits, random_id.h), the
 * status machine (working -> completed | failed | cancelled, terminal
 * states final), each task's TTL (the client's, bounded; the task and its
 * result are forgotten after it), and the waits of tasks/result.
 *
 * The table belongs to one session (one mcp_server), so a task is seen
 * only by the client that created it; an id it does not hold answers as
 * one that does not exist. The table is bounded (MCP_TASKS_MAX): expired
 * tasks go first, then the oldest finished one; a table full of working
 * tasks refuses a new one.
 */
#include "tasks.h"
#include "random_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static json_t *iso(int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[40], out[48];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, sizeof out, "%s.%03dZ", buf, (int)(ms % 1000));
    return json_string(out);
}

static const char *status_name(mcp_task_status s)
{
    switch (s) {
    case MCP_TASK_WORKING:
        return "working";
    case MCP_TASK_COMPLETED:
        return "completed";
    case MCP_TASK_FAILED:
        return "failed";
    case MCP_TASK_CANCELLED:
        return "cancelled";
    }
    return "failed";
}

/* The Task object of task (caller owns). */
static json_t *task_json(const mcp_task *k)
{
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:o, s:I}", "taskId", k->id, "status", status_name(k->status), "createdAt",
                  iso(k->created_ms), "lastUpdatedAt", iso(k->updated_ms), "ttl", (json_int_t)k->ttl_ms);
    if (k->status == MCP_TASK_WORKING)
        json_object_set_new(o, "pollInterval", json_integer(MCP_TASK_POLL_MS));
    if (k->status_message[0])
        json_object_set_new(o, "statusMessage", json_string(k->status_message));
    return o;
}

void mcp_tasks_init(mcp_tasks *t)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
}

static void task_free(mcp_task *k)
{
    json_decref(k->result);
    free(k);
}

/* Removes entry i (mu held); a working task's call is told to stop. */
static void remove_at(mcp_tasks *t, int i)
{
    mcp_task *k = t->tasks[i];
    if (k->status == MCP_TASK_WORKING && k->cancel)
        atomic_store(k->cancel, 1);
    t->tasks[i] = t->tasks[--t->ntasks];
    task_free(k);
}

void mcp_tasks_end(mcp_tasks *t)
{
    pthread_mutex_lock(&t->mu);
    t->ended = true;
    while (t->ntasks > 0)
        remove_at(t, t->ntasks - 1);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Forgets expired tasks (mu held). */
static void purge_expired(mcp_tasks *t)
{
    uint64_t now = mono_ms();
    for (int i = t->ntasks - 1; i >= 0; i--)
        if (t->tasks[i]->expires_ms <= now)
            remove_at(t, i);
}

/* Makes room for one more (mu held): false when every task is working. */
static bool make_room(mcp_tasks *t)
{
    purge_expired(t);
    if (t->ntasks < MCP_TASKS_MAX)
        return true;
    int oldest = -1;
    for (int i = 0; i < t->ntasks; i++)
        if (t->tasks[i]->status != MCP_TASK_WORKING &&
            (oldest < 0 || t->tasks[i]->created_ms < t->tasks[oldest]->created_ms))
            oldest = i;
    if (oldest < 0)
        return false;
    remove_at(t, oldest);
    return true;
}

/* The live task id names (mu held), or NULL. */
static mcp_task *find(mcp_tasks *t, const char *id)
{
    purge_expired(t);
    for (int i = 0; id && i < t->ntasks; i++)
        if (strcmp(t->tasks[i]->id, id) == 0)
            return t->tasks[i];
    return NULL;
}

json_t *mcp_tasks_create(mcp_tasks *t, unsigned ttl_ms, atomic_int *cancel, char id[33])
{
    mcp_task *k = calloc(1, sizeof *k);
    if (!k || abx__random_id(k->id, sizeof k->id) < 0) {
        free(k);
        return NULL;
    }
    k->ttl_ms = ttl_ms == 0                    ? MCP_TASK_TTL_DEFAULT_MS
                : ttl_ms > MCP_TASK_TTL_MAX_MS ? MCP_TASK_TTL_MAX_MS
                                               : ttl_ms;
    k->created_ms = k->updated_ms = wall_ms();
    k->expires_ms = mono_ms() + k->ttl_ms;
    k->cancel = cancel;
    k->status = MCP_TASK_WORKING;
    pthread_mutex_lock(&t->mu);
    bool ok = !t->ended && make_room(t);
    if (ok)
        t->tasks[t->ntasks++] = k;
    json_t *o = ok ? task_json(k) : NULL;
    pthread_mutex_unlock(&t->mu);
    if (!ok) {
        free(k);
        return NULL;
    }
    memcpy(id, k->id, sizeof k->id);
    return o;
}

/* The first line of a failed result's text, as the task's status message. */
static void failure_message(mcp_task *k, json_t *result)
{
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(result, "content"), i, b)
    {
        const char *text = json_string_value(json_object_get(b, "text"));
        if (!text)
            continue;
        size_t n = strcspn(text, "\n");
        snprintf(k->status_message, sizeof k->status_message, "%.*s", (int)(n < 199 ? n : 199), text);
        return;
    }
}

void mcp_tasks_finish(mcp_tasks *t, const char *id, json_t *result)
{
    if (!result)
        result = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                           "Internal error: the call ended without a result", "isError", 1);
    pthread_mutex_lock(&t->mu);
    mcp_task *k = find(t, id);
    if (k && k->status == MCP_TASK_WORKING) {
        bool failed = json_is_true(json_object_get(result, "isError"));
        k->status = failed ? MCP_TASK_FAILED : MCP_TASK_COMPLETED;
        if (failed)
            failure_message(k, result);
        k->result = result;
        k->cancel = NULL;
        k->updated_ms = wall_ms();
        result = NULL;
    } else if (k) {
        k->cancel = NULL; /* cancelled meanwhile: it stays so */
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    json_decref(result);
}

static json_t *no_task(int *code, const char **message)
{
    *code = -32602;
    *message = "Failed to retrieve task: Task not found";
    return NULL;
}

json_t *mcp_tasks_get(mcp_tasks *t, const char *id, int *code, const char **message)
{
    pthread_mutex_lock(&t->mu);
    mcp_task *k = find(t, id);
    json_t *o = k ? task_json(k) : NULL;
    pthread_mutex_unlock(&t->mu);
    return o ? o : no_task(code, message);
}

json_t *mcp_tasks_cancel(mcp_tasks *t, const char *id, int *code, const char **message)
{
    pthread_mutex_lock(&t->mu);
    mcp_task *k = find(t, id);
    json_t *o = NULL;
    if (k && k->status != MCP_TASK_WORKING) {
        *code = -32602;
        *message = "Cannot cancel task: it has already ended";
    } else if (k) {
        if (k->cancel)
            atomic_store(k->cancel, 1);
        k->status = MCP_TASK_CANCELLED;
        snprintf(k->status_message, sizeof k->status_message, "The task was cancelled by request.");
        k->updated_ms = wall_ms();
        o = task_json(k);
        pthread_cond_broadcast(&t->cv);
    } else {
        no_task(code, message);
    }
    pthread_mutex_unlock(&t->mu);
    return o;
}

json_t *mcp_tasks_list(mcp_tasks *t)
{
    json_t *list = json_array();
    pthread_mutex_lock(&t->mu);
    purge_expired(t);
    for (int i = 0; i < t->ntasks; i++)
        json_array_append_new(list, task_json(t->tasks[i]));
    pthread_mutex_unlock(&t->mu);
    return json_pack("{s:o}", "tasks", list);
}

/* What tasks/result answers for terminal task k (mu held; caller owns). */
static json_t *terminal_result(const mcp_task *k)
{
    json_t *r = k->result ? json_deep_copy(k->result)
                          : json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text",
                                      "The task was cancelled before it finished.", "isError", 1);
    json_t *meta = json_object_get(r, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(r, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/related-task", json_pack("{s:s}", "taskId", k->id));
    return r;
}

json_t *mcp_tasks_result(mcp_tasks *t, const char *id, atomic_int *stop, int *code, const char **message)
{
    pthread_mutex_lock(&t->mu);
    json_t *r = NULL;
    for (;;) {
        mcp_task *k = find(t, id);
        if (!k) {
            no_task(code, message);
            break;
        }
        if (k->status != MCP_TASK_WORKING) {
            r = terminal_result(k);
            break;
        }
        if (t->ended || (stop && atomic_load(stop))) {
            *code = -32603;
            *message = "Internal error: the session is ending";
            break;
        }
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 200 * 1000000L; /* wakes to see stop */
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&t->cv, &t->mu, &deadline);
    }
    pthread_mutex_unlock(&t->mu);
    return r;
}
