/* server.c: the MCP protocol: JSON-RPC 2.0 messages, the lifecycle,
 * tools/list and tools/call dispatch, cancellation, logging, and the end
 * of the session. Transport-independent: stdio.c (and later the HTTP
 * transport) hand it one message at a time with a sink for the answers.
 *
 * Session states:
 *   NEW          -> initialize answered            -> READY
 *   READY        tools/list, tools/call, resources/read (and their lists), ping,
 *                logging/setLevel served; each call and read runs on its own thread (at most MAX_INFLIGHT at
 * once), so a slow call never blocks a ping or another call any          -> mcp_server_shutdown -> ENDED
 * (calls cancelled and awaited, the session's sandboxes destroyed) Errors: malformed JSON -32700, wrong
 * shapes -32600, unknown methods -32601, bad params and unknown tools -32602; an id that cannot be read is
 * omitted, never sent as null.
 */
#include "server.h"
#include "text.h"
#include "bounds.h"
#include "parse.h"
#include "session.h"
#include "tasks.h"
#include "tools.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INFLIGHT 64
#define LATEST_VERSION "2025-11-25"
#define MODERN_VERSION "2026-07-28" /* stateless: no initialize, per-request _meta */
#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define LIST_CACHE_MS 300000 /* tools/list and the resource lists change only with a new abx */

static const char *const supported_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

typedef struct inflight {
    json_t *id;
    mcp_call *call;
} inflight;

struct mcp_server {
    const mcp_toolset *tools;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mcp_session session;
    mcp_tasks tasks;
    char name[64];
    bool initialized;
    bool stateless;              /* every request is of the stateless revision (config) */
    json_t *client_capabilities; /* initialize's (owned); set once, before any call */
    bool ended;
    char version[16]; /* the negotiated protocol version */
    int log_level;
    inflight calls[MAX_INFLIGHT];
    int ncalls;
};

/* ---- sending ----------------------------------------------------------------- */

static void send_msg(const mcp_sink *sink, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text) {
        sink->send(sink->ctx, text, strlen(text));
        free(text);
    }
}

static void send_result(const mcp_sink *sink, json_t *id, json_t *result)
{
    send_msg(sink, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

/* id NULL: the message's id could not be read, so it is left out. */
static void send_error(const mcp_sink *sink, json_t *id, int code, const char *message)
{
    json_t *msg =
        json_pack("{s:s, s:{s:i, s:s}}", "jsonrpc", "2.0", "error", "code", code, "message", message);
    json_object_set(msg, "id", id ? id : json_null()); /* JSON-RPC: null when it could not be read */
    send_msg(sink, msg);
}

static void send_error_data(const mcp_sink *sink, json_t *id, int code, const char *message, json_t *data)
{
    send_msg(sink, json_pack("{s:s, s:O, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id", id, "error", "code",
                             code, "message", message, "data", data));
}

static void sink_done(const mcp_sink *sink)
{
    if (sink->done)
        sink->done(sink->ctx);
}

/* ---- lifecycle ------------------------------------------------------------------ */

int mcp_server_new(const mcp_server_config *cfg, mcp_server **out, abx_error **err)
{
    mcp_server *s = calloc(1, sizeof *s);
    if (!s)
        return -ABX_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    mcp_tasks_init(&s->tasks);
    snprintf(s->name, sizeof s->name, "%s", cfg && cfg->name ? cfg->name : "agent-sandbox");
    s->tools = cfg && cfg->tools ? cfg->tools : &mcp_abx_tools;
    s->log_level = 8; /* nothing is sent until the client sets a level */
    s->stateless = cfg && cfg->stateless;
    int rc = mcp_session_init(&s->session, cfg ? cfg->template_name : NULL, cfg ? cfg->provider : NULL,
                              cfg ? cfg->tenant : NULL, err);
    if (rc < 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int mcp_server_calls_in_flight(mcp_server *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->ncalls;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void mcp_server_shutdown(mcp_server *s)
{
    pthread_mutex_lock(&s->mu);
    if (s->ended) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    s->ended = true;
    for (int i = 0; i < s->ncalls; i++)
        atomic_store(&s->calls[i].call->cancelled, 1);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 15;
    while (s->ncalls > 0)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) != 0)
            break;
    pthread_mutex_unlock(&s->mu);
    mcp_tasks_end(&s->tasks);
    mcp_session_end(&s->session);
}

void mcp_server_free(mcp_server *s)
{
    if (!s)
        return;
    mcp_server_shutdown(s);
    pthread_mutex_lock(&s->mu);
    bool idle = s->ncalls == 0;
    pthread_mutex_unlock(&s->mu);
    if (idle) { /* a call that outlived the shutdown's wait keeps its server */
        json_decref(s->client_capabilities);
        free(s);
    }
}

/* ---- methods ------------------------------------------------------------------- */

const char *mcp_server_protocol_version(mcp_server *s)
{
    return s->version;
}

/* The server's capabilities; modern (2026-07-28): without tasks, which that
 * revision moved to an extension abx does not offer. */
static json_t *capabilities(mcp_server *s, bool modern)
{
    json_t *c = json_pack("{s:{s:b}, s:{}}", "tools", "listChanged", 0, "logging");
    if (s->tools->read_resource)
        json_object_set_new(c, "resources", json_pack("{s:b, s:b}", "subscribe", 0, "listChanged", 0));
    if (s->tools->runs_as_task && !modern)
        json_object_set_new(
            c, "tasks",
            json_pack("{s:{}, s:{}, s:{s:{s:{}}}}", "list", "cancel", "requests", "tools", "call"));
    return c;
}

static const char instructions[] =
    "Run code and commands in isolated sandboxes. Calls without sandbox_id use one default "
    "sandbox, created on first use; create_sandbox makes a new default. Sandboxes this session "
    "creates are destroyed when it ends.";

static json_t *server_info(mcp_server *s)
{
    return json_pack("{s:s, s:s, s:s}", "name", s->name, "version", abx_version(), "title",
                     "abx agent sandbox");
}

static json_t *initialize_result(mcp_server *s, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *version = LATEST_VERSION;
    for (size_t i = 0; asked && i < sizeof supported_versions / sizeof supported_versions[0]; i++)
        if (strcmp(asked, supported_versions[i]) == 0)
            version = supported_versions[i];
    snprintf(s->version, sizeof s->version, "%s", version);
    json_t *caps = json_object_get(params, "capabilities");
    s->client_capabilities = json_is_object(caps) ? json_incref(caps) : NULL;
    return json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", version, "capabilities",
                     capabilities(s, false), "serverInfo", server_info(s), "instructions", instructions);
}

/* ---- the stateless revision (2026-07-28) ----------------------------------------- */

/* A result of the stateless revision: resultType, the server's identity in
 * _meta, and (cache_ms >= 0) how long a client may keep it. Takes r. */
static json_t *modern_result(mcp_server *s, json_t *r, long cache_ms)
{
    if (!r)
        return NULL;
    json_object_set_new(r, "resultType", json_string("complete"));
    json_t *meta = json_object_get(r, "_meta");
    if (!json_is_object(meta)) {
        meta = json_object();
        json_object_set_new(r, "_meta", meta);
    }
    json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", server_info(s));
    if (cache_ms >= 0) {
        json_object_set_new(r, "ttlMs", json_integer(cache_ms));
        json_object_set_new(r, "cacheScope", json_string("private")); /* one tenant's view */
    }
    return r;
}

static json_t *discover_result(mcp_server *s)
{
    json_t *versions = json_array();
    json_array_append_new(versions, json_string(MODERN_VERSION));
    for (size_t i = 0; i < sizeof supported_versions / sizeof supported_versions[0]; i++)
        json_array_append_new(versions, json_string(supported_versions[i]));
    return json_pack("{s:o, s:o, s:o, s:s}", "supportedVersions", versions, "capabilities",
                     capabilities(s, true), "serverInfo", server_info(s), "instructions", instructions);
}

/* What a job's thread does with its target. */
typedef enum job_kind {
    JOB_TOOL,        /* tools/call of the tool named target */
    JOB_RESOURCE,    /* resources/read of the URI target */
    JOB_TASK_RESULT, /* tasks/result of the task target: waits for its end */
} job_kind;

/* A request answered on its own thread. A tool call run as a task (task_id
 * set) answers nothing itself: its result goes to the task table. */
typedef struct call_job {
    mcp_server *srv;
    mcp_call call;
    json_t *id;
    json_t *params;
    json_t *args; /* the arguments object (an empty one when none came) */
    job_kind kind;
    int log_level; /* a modern request's own (_meta logLevel; 8: none) */
    char task_id[33];
    char *target; /* the tool's name, the resource's URI or the task's id; owned */
} call_job;

static void call_job_free(call_job *j)
{
    json_decref(j->id);
    json_decref(j->params);
    json_decref(j->args);
    json_decref(j->call.rpc_error);
    free(j->target);
    free(j);
}

/* One tool call's thread. It stays counted in the server's calls until its
 * very last use of the server: mcp_server_shutdown waits for that count to
 * reach zero and the server may be freed right after (a thread that
 * touched the server after leaving the count was a use after free, found
 * by tests/fuzz/fuzz-mcp.c). */
static void *call_thread(void *arg)
{
    call_job *j = arg;
    mcp_server *s = j->srv;
    json_t *result = NULL;
    if (j->kind == JOB_RESOURCE) {
        result = s->tools->read_resource(&j->call, j->target);
    } else if (j->kind == JOB_TASK_RESULT) {
        int code = 0;
        const char *message = NULL;
        result = mcp_tasks_result(&s->tasks, j->target, &j->call.cancelled, &code, &message);
        if (!result)
            j->call.rpc_error = json_pack("{s:i, s:s}", "code", code, "message", message);
    } else {
        result = s->tools->call(&j->call, j->target);
    }
    if (j->task_id[0]) {
        mcp_tasks_finish(&s->tasks, j->task_id, result);
        result = NULL;
    }
    if (j->call.modern)
        result = modern_result(s, result, j->kind == JOB_RESOURCE ? 0 : -1);
    bool dropped = atomic_load(&j->call.cancelled) != 0;
    /* a cancelled request gets no response */
    if (dropped)
        json_decref(result);
    else if (result)
        send_result(&j->call.sink, j->id, result);
    else if (j->call.rpc_error)
        send_msg(&j->call.sink,
                 json_pack("{s:s, s:O, s:O}", "jsonrpc", "2.0", "id", j->id, "error", j->call.rpc_error));
    sink_done(&j->call.sink);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->ncalls; i++) {
        if (s->calls[i].call == &j->call) {
            s->calls[i] = s->calls[--s->ncalls];
            break;
        }
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu); /* the last touch of the server */
    call_job_free(j);
    return NULL;
}

/* Runs job j on its own thread, counted among the calls in flight (a
 * task's call under no request id: notifications/cancelled does not reach
 * it, tasks/cancel does). Returns NULL (j is then the thread's), or the
 * reason it could not start (j is still the caller's; nothing was sent). */
static const char *start_job(mcp_server *s, call_job *j)
{
    j->srv = s;
    j->call.session = &s->session;
    j->call.args = j->args;
    pthread_mutex_lock(&s->mu);
    j->call.log_level = j->call.modern ? j->log_level : s->log_level;
    bool full = s->ncalls >= MAX_INFLIGHT || s->ended;
    if (!full)
        s->calls[s->ncalls++] = (inflight){j->task_id[0] ? NULL : j->id, &j->call};
    pthread_mutex_unlock(&s->mu);
    if (full)
        return "Server busy: too many tool calls in flight";
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &attr, call_thread, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_mutex_lock(&s->mu);
        s->ncalls--;
        pthread_mutex_unlock(&s->mu);
        return "Internal error";
    }
    return NULL;
}

/* Starts j answering on sink; an error answers at once. */
static void start_answering(mcp_server *s, call_job *j, json_t *id, const mcp_sink *sink)
{
    j->call.sink = *sink;
    j->call.progress_token = json_object_get(json_object_get(j->params, "_meta"), "progressToken");
    const char *failed = start_job(s, j);
    if (failed) {
        call_job_free(j);
        send_error(sink, id, -32603, failed);
        sink_done(sink);
    }
}

/* A job for request id (params and args referenced); NULL on ENOMEM, with
 * the error sent. */
static call_job *new_job(json_t *id, json_t *params, json_t *args, const char *target, job_kind kind,
                         const mcp_sink *sink)
{
    call_job *j = calloc(1, sizeof *j);
    char *t = strdup(target);
    if (!j || !t) {
        free(j);
        free(t);
        send_error(sink, id, -32603, "Internal error");
        sink_done(sink);
        return NULL;
    }
    j->id = json_incref(id);
    j->params = json_incref(params);
    j->args = args ? json_incref(args) : json_object();
    j->target = t;
    j->kind = kind;
    return j;
}

/* Where a task's call sends what it would have streamed: nowhere (its
 * request was answered with the task). */
static void send_nowhere(void *ctx, const char *json, size_t len)
{
    (void)ctx;
    (void)json;
    (void)len;
}

static const mcp_sink no_sink = {send_nowhere, NULL, NULL};

/* The task's TTL a client asked for (0: none asked). */
static unsigned ttl_asked(json_t *task)
{
    json_t *ttl = json_object_get(task, "ttl");
    double ms = json_is_number(ttl) ? json_number_value(ttl) : 0;
    if (!(ms >= 1)) /* NaN too */
        return 0;
    return ms >= MCP_TASK_TTL_MAX_MS ? MCP_TASK_TTL_MAX_MS : (unsigned)ms;
}

/* tools/call with params.task: the task answers at once (CreateTaskResult)
 * and the call runs on, its result kept for tasks/result. Takes j. */
static void start_task(mcp_server *s, call_job *j, json_t *id, json_t *task, const mcp_sink *sink)
{
    j->call.sink = no_sink;
    json_t *created = mcp_tasks_create(&s->tasks, ttl_asked(task), &j->call.cancelled, j->task_id);
    const char *failed = created ? start_job(s, j) : "Server busy: too many tasks working";
    if (failed && created) /* the task lets go of the call's flag before the call goes */
        mcp_tasks_finish(&s->tasks, j->task_id, NULL);
    if (failed)
        call_job_free(j);
    if (failed) {
        json_decref(created);
        send_error(sink, id, -32603, failed);
    } else {
        send_result(sink, id,
                    json_pack("{s:o, s:{s:s}}", "task", created, "_meta",
                              "io.modelcontextprotocol/model-immediate-response",
                              "The call runs as a task; its result comes when it ends."));
    }
    sink_done(sink);
}

/* A modern request's: its log level (8: no log messages) and the flag. */
static void set_modern(mcp_server *s, call_job *j, bool modern)
{
    j->call.modern = modern;
    json_t *meta = json_object_get(j->params, "_meta");
    j->call.client_capabilities = modern ? json_object_get(meta, META_CAPABILITIES) : s->client_capabilities;
    int level = mcp_log_level_from_name(json_string_value(json_object_get(meta, META_LOG_LEVEL)));
    j->log_level = level < 0 ? 8 : level;
}

static void tools_call(mcp_server *s, json_t *id, json_t *params, bool modern, const mcp_sink *sink)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    json_t *task = modern ? NULL : json_object_get(params, "task"); /* 2026-07-28: an extension */
    bool as_task = task && !json_is_null(task);
    int code = -32602;
    const char *bad = !name                     ? "Invalid params: name must be a string"
                      : !s->tools->exists(name) ? "Unknown tool"
                      : args && !json_is_object(args) && !json_is_null(args)
                          ? "Invalid params: arguments must be an object"
                      : as_task && !json_is_object(task) ? "Invalid params: task must be an object"
                                                         : NULL;
    if (!bad && as_task && !(s->tools->runs_as_task && s->tools->runs_as_task(name))) {
        code = -32601;
        bad = "Method not found: this tool does not run as a task (its execution.taskSupport is forbidden)";
    }
    if (bad) {
        send_error(sink, id, code, bad);
        sink_done(sink);
        return;
    }
    call_job *j = new_job(id, params, json_is_object(args) ? args : NULL, name, JOB_TOOL, sink);
    if (j)
        set_modern(s, j, modern);
    if (j && as_task)
        start_task(s, j, id, task, sink);
    else if (j)
        start_answering(s, j, id, sink);
}

static void resources_read(mcp_server *s, json_t *id, json_t *params, bool modern, const mcp_sink *sink)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (!uri || json_string_length(json_object_get(params, "uri")) > 8192) {
        send_error(sink, id, -32602, "Invalid params: uri must be a string of at most 8192 bytes");
        sink_done(sink);
        return;
    }
    call_job *j = new_job(id, params, NULL, uri, JOB_RESOURCE, sink);
    if (j)
        set_modern(s, j, modern);
    if (j)
        start_answering(s, j, id, sink);
}

/* tasks/get, tasks/cancel, tasks/list answer at once; tasks/result waits
 * on its own thread. */
static void tasks_method(mcp_server *s, const char *method, json_t *id, json_t *params, const mcp_sink *sink)
{
    const char *task_id = json_string_value(json_object_get(params, "taskId"));
    int code = -32602;
    const char *message = "Invalid params: taskId must be a string";
    json_t *r = NULL;
    if (strcmp(method, "tasks/list") == 0) {
        json_t *cursor = json_object_get(params, "cursor");
        message = "Invalid params: unknown cursor";
        r = cursor && !json_is_null(cursor) ? NULL : mcp_tasks_list(&s->tasks);
    } else if (task_id && strcmp(method, "tasks/result") == 0) {
        call_job *j = new_job(id, params, NULL, task_id, JOB_TASK_RESULT, sink);
        if (j)
            start_answering(s, j, id, sink);
        return;
    } else if (task_id && strcmp(method, "tasks/get") == 0) {
        r = mcp_tasks_get(&s->tasks, task_id, &code, &message);
    } else if (task_id) {
        r = mcp_tasks_cancel(&s->tasks, task_id, &code, &message);
    }
    if (r)
        send_result(sink, id, r);
    else
        send_error(sink, id, code, message);
    sink_done(sink);
}

void mcp_server_cancel(mcp_server *s, json_t *id)
{
    pthread_mutex_lock(&s->mu);
    for (int i = 0; id && i < s->ncalls; i++)
        if (s->calls[i].id && json_equal(s->calls[i].id, id))
            atomic_store(&s->calls[i].call->cancelled, 1);
    pthread_mutex_unlock(&s->mu);
}

static void cancel_request(mcp_server *s, json_t *params)
{
    mcp_server_cancel(s, json_object_get(params, "requestId"));
}

static bool id_valid(json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

static void handle_request(mcp_server *s, const char *method, json_t *id, json_t *params,
                           const mcp_sink *sink)
{
    if (params && !json_is_object(params)) {
        send_error(sink, id, -32602, "Invalid params: params must be an object");
    } else if (strcmp(method, "initialize") == 0) {
        pthread_mutex_lock(&s->mu);
        bool again = s->initialized;
        s->initialized = true;
        pthread_mutex_unlock(&s->mu);
        if (again)
            send_error(sink, id, -32600, "Invalid request: the session is already initialized");
        else
            send_result(sink, id, initialize_result(s, params));
    } else if (strcmp(method, "ping") == 0) {
        send_result(sink, id, json_object());
    } else if (!s->initialized) {
        send_error(sink, id, -32600, "Invalid request: initialize first");
    } else if (strcmp(method, "tools/list") == 0) {
        json_t *cursor = json_object_get(params, "cursor");
        if (cursor && !json_is_null(cursor))
            send_error(sink, id, -32602, "Invalid params: unknown cursor");
        else
            send_result(sink, id, json_pack("{s:o}", "tools", s->tools->list()));
    } else if (strcmp(method, "tools/call") == 0) {
        tools_call(s, id, params, false, sink);
        return; /* the call's thread finishes the sink */
    } else if (strcmp(method, "resources/read") == 0 && s->tools->read_resource) {
        resources_read(s, id, params, false, sink);
        return; /* the read's thread finishes the sink */
    } else if (strcmp(method, "resources/list") == 0 && s->tools->read_resource) {
        send_result(sink, id, json_pack("{s:[]}", "resources")); /* files are reached through links */
    } else if (strcmp(method, "resources/templates/list") == 0 && s->tools->read_resource) {
        send_result(sink, id, json_pack("{s:o}", "resourceTemplates", s->tools->resource_templates()));
    } else if (s->tools->runs_as_task &&
               (strcmp(method, "tasks/get") == 0 || strcmp(method, "tasks/result") == 0 ||
                strcmp(method, "tasks/cancel") == 0 || strcmp(method, "tasks/list") == 0)) {
        tasks_method(s, method, id, params, sink);
        return;
    } else if (strcmp(method, "logging/setLevel") == 0) {
        int level = mcp_log_level_from_name(json_string_value(json_object_get(params, "level")));
        if (level < 0) {
            send_error(sink, id, -32602, "Invalid params: unknown level");
        } else {
            pthread_mutex_lock(&s->mu);
            s->log_level = level;
            pthread_mutex_unlock(&s->mu);
            send_result(sink, id, json_object());
        }
    } else {
        send_error(sink, id, -32601, "Method not found");
    }
    sink_done(sink);
}

/* UnsupportedProtocolVersionError: the versions served, and the one asked
 * (at most 64 bytes of it). */
static void unsupported_version(const mcp_sink *sink, json_t *id, json_t *asked)
{
    json_t *supported = json_array();
    json_array_append_new(supported, json_string(MODERN_VERSION));
    for (size_t i = 0; i < sizeof supported_versions / sizeof supported_versions[0]; i++)
        json_array_append_new(supported, json_string(supported_versions[i]));
    size_t n = json_string_length(asked);
    json_t *requested = json_stringn(json_string_value(asked), n < 64 ? n : 64);
    send_error_data(
        sink, id, -32022, "Unsupported protocol version",
        json_pack("{s:o, s:o}", "supported", supported, "requested", requested ? requested : json_null()));
}

/* A request of the stateless revision (2026-07-28): no initialize, its
 * version and the client's capabilities in its own _meta; the tools and
 * resources of the server's one session (STDIO: the process; HTTP: the
 * token's stateless session), so the default sandbox stays across calls. */
static void handle_modern(mcp_server *s, const char *method, json_t *id, json_t *params, const mcp_sink *sink)
{
    json_t *meta = json_object_get(params, "_meta");
    json_t *version = json_object_get(meta, META_VERSION);
    bool lists = strcmp(method, "tools/list") == 0 || strcmp(method, "resources/list") == 0 ||
                 strcmp(method, "resources/templates/list") == 0;
    json_t *cursor = json_object_get(params, "cursor");
    if (params && !json_is_object(params)) {
        send_error(sink, id, -32602, "Invalid params: params must be an object");
    } else if (!json_is_string(version) || !json_is_object(json_object_get(meta, META_CAPABILITIES))) {
        send_error(sink, id, -32602,
                   "Invalid params: a request of protocol " MODERN_VERSION " carries _meta with " META_VERSION
                   " (a string) and " META_CAPABILITIES " (an object)");
    } else if (strcmp(json_string_value(version), MODERN_VERSION) != 0) {
        unsupported_version(sink, id, version);
    } else if (strcmp(method, "server/discover") == 0) {
        send_result(sink, id, modern_result(s, discover_result(s), LIST_CACHE_MS));
    } else if (lists && cursor && !json_is_null(cursor)) {
        send_error(sink, id, -32602, "Invalid params: unknown cursor");
    } else if (strcmp(method, "tools/list") == 0) {
        send_result(sink, id, modern_result(s, json_pack("{s:o}", "tools", s->tools->list()), LIST_CACHE_MS));
    } else if (strcmp(method, "tools/call") == 0) {
        tools_call(s, id, params, true, sink);
        return; /* the call's thread finishes the sink */
    } else if (strcmp(method, "resources/read") == 0 && s->tools->read_resource) {
        resources_read(s, id, params, true, sink);
        return;
    } else if (strcmp(method, "resources/list") == 0 && s->tools->read_resource) {
        send_result(sink, id, modern_result(s, json_pack("{s:[]}", "resources"), LIST_CACHE_MS));
    } else if (strcmp(method, "resources/templates/list") == 0 && s->tools->read_resource) {
        send_result(sink, id,
                    modern_result(s, json_pack("{s:o}", "resourceTemplates", s->tools->resource_templates()),
                                  LIST_CACHE_MS));
    } else { /* initialize, ping, logging/setLevel, the tasks methods, subscriptions/listen: not in this
                revision */
        send_error(sink, id, -32601, "Method not found");
    }
    sink_done(sink);
}

/* Whether a request is of the stateless revision: on a stateless server
 * (HTTP without a session) all are; elsewhere server/discover and any
 * request whose _meta names its protocol version. */
static bool is_modern(const mcp_server *s, const char *method, json_t *params)
{
    return s->stateless || strcmp(method, "server/discover") == 0 ||
           json_object_get(json_object_get(params, "_meta"), META_VERSION) != NULL;
}

static void handle_notification(mcp_server *s, const char *method, json_t *params)
{
    if (strcmp(method, "notifications/cancelled") == 0)
        cancel_request(s, params);
    /* notifications/initialized and unknown notifications need no answer */
}

void mcp_server_handle(mcp_server *s, const char *text, size_t len, const mcp_sink *sink)
{
    json_error_t jerr;
    if (!abx__json_depth_ok(text, len, ABX_BOUND_JSON_DEPTH)) {
        send_error(sink, NULL, -32600, "Invalid request: nested too deeply");
        sink_done(sink);
        return;
    }
    json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!msg) {
        send_error(sink, NULL, -32700, "Parse error");
        sink_done(sink);
        return;
    }
    if (json_is_array(msg)) {
        send_error(sink, NULL, -32600, "Invalid request: batches are not supported");
        sink_done(sink);
        json_decref(msg);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
    bool has_id = id != NULL;
    if (!json_is_object(msg) || !version || strcmp(version, "2.0") != 0 || (has_id && !id_valid(id)) ||
        (method && !json_is_string(method))) {
        send_error(sink, has_id && id_valid(id) ? id : NULL, -32600, "Invalid request");
        sink_done(sink);
    } else if (!method) {
        sink_done(sink); /* a response from the client: nothing asked, nothing to do */
    } else if (!has_id) {
        handle_notification(s, json_string_value(method), json_object_get(msg, "params"));
        sink_done(sink);
    } else if (is_modern(s, json_string_value(method), json_object_get(msg, "params"))) {
        handle_modern(s, json_string_value(method), id, json_object_get(msg, "params"), sink);
    } else {
        handle_request(s, json_string_value(method), id, json_object_get(msg, "params"), sink);
    }
    json_decref(msg);
}
