/* envd_front.c: E2B's envd data plane answered by `abx serve` itself, for
 * a sandbox whose provider has none to relay (an exec plugin's: its
 * endpoint is E8004), through libabx's process and file calls, so that
 * E2B's SDKs drive such sandboxes unchanged: commands (process.Process
 * Start as a Connect stream, List, SendSignal, SendInput, CloseStdin),
 * files (GET and POST /files, multipart or octet-stream), and
 * filesystem.Filesystem (Stat, ListDir, MakeDir, Move, Remove), /health.
 *
 * Owns: the token such a sandbox's envd is reached with (serve keeps it in
 * the sandbox's notes, "envd_token": every route but /health needs it in
 * X-Access-Token), the user (Basic auth, or the username query), the
 * bounds on what one request holds (ENVD_FRONT_MAX_BODY of a request,
 * ENVD_FRONT_MAX_FILE of a file, both ways), and the Connect wire forms
 * (envelopes, proto3 JSON, errors through abx__connect_code).
 *
 * A started command's events come from a worker thread through a pipe
 * the response reads as they are written; the stream's pid is this
 * front's own (an exec plugin's commands have none until they end).
 */
#include "serve.h"
#include "http_listener.h"
#include "b64.h"
#include "buf.h"
#include "error_internal.h"
#include "netlibs.h"
#include "parse.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENVD_FRONT_MAX_BODY (1u << 20)
#define ENVD_FRONT_MAX_FILE (64u << 20)

typedef enum front_kind { FRONT_HEALTH, FRONT_RPC, FRONT_START, FRONT_READ, FRONT_WRITE } front_kind;

struct envd_front {
    atomic_int refs; /* the connection's, a running command's worker */
    front_kind kind;
    abx_sandbox *sandbox; /* taken at begin; freed with the front */
    char method[64];      /* an RPC's "<Service>/<Method>" */
    char user[8];         /* "user" or "root" */
    char path[4096];      /* /files: the query's path */
    abx_buf body;         /* an RPC's body, or an upload's current part */
    bool too_big;
    struct MHD_PostProcessor *pp; /* a multipart upload */
    char part_path[4096];         /* the part being gathered ("": none yet) */
    json_t *written;              /* POST /files' answer: [{path, name, type}] */
    int upload_rc;                /* the first failure of an upload */
    int events[2];                /* a command's stream: the worker writes [1], the response reads [0] */
    atomic_bool reader_gone;      /* the stream's response ended: the command is stopped */
    unsigned timeout_s;           /* Connect-Timeout-Ms, in whole seconds (0: none) */
};

static envd_front *front_ref(envd_front *f)
{
    atomic_fetch_add(&f->refs, 1);
    return f;
}

static void front_unref(envd_front *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    for (int i = 0; i < 2; i++)
        if (f->events[i] >= 0)
            close(f->events[i]);
    if (f->pp)
        MHD_destroy_post_processor(f->pp);
    abx__buf_free(&f->body);
    json_decref(f->written);
    abx_sandbox_free(f->sandbox);
    free(f);
}

/* ---- answers ---------------------------------------------------------------------------- */

static int send_doc(struct MHD_Connection *c, unsigned status, const char *type, json_t *doc)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    struct MHD_Response *r = text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
                                  : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(text);
        return -1;
    }
    if (type)
        MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}

/* A Connect unary error (or envd's JSON error for /files): the code from
 * abx's, the message with it first, never more than abx's words. */
static int send_failure(struct MHD_Connection *c, int rc, abx_error *err)
{
    int code = rc < 0 ? -rc : rc;
    unsigned status = 500;
    const char *name = abx__connect_code(code, &status);
    char message[600];
    snprintf(message, sizeof message, "%s: %s", abx_err_name(code),
             err && abx_error_message(err) ? abx_error_message(err) : abx_strerror(code));
    abx_error_free(err);
    return send_doc(c, status, "application/json", json_pack("{s:s, s:s}", "code", name, "message", message));
}

/* ---- entries: libabx's file objects as envd's EntryInfo ---------------------------------- */

static json_t *entry_of(json_t *in)
{
    const char *type = json_string_value(json_object_get(in, "type"));
    const char *target_type = json_string_value(json_object_get(in, "target_type"));
    const char *t = type && strcmp(type, "dir") == 0 ? "FILE_TYPE_DIRECTORY"
                    : type && strcmp(type, "symlink") == 0 && target_type && strcmp(target_type, "dir") == 0
                        ? "FILE_TYPE_DIRECTORY"
                        : "FILE_TYPE_FILE";
    char size[32];
    snprintf(size, sizeof size, "%lld", (long long)json_integer_value(json_object_get(in, "size")));
    json_t *e =
        json_pack("{s:s, s:s, s:s, s:s}", "name", json_string_value(json_object_get(in, "name")) ?: "",
                  "type", t, "path", json_string_value(json_object_get(in, "path")) ?: "", "size", size);
    static const char *const copied[][2] = {
        {"mode", "mode"},   {"permissions", "permissions"},    {"owner", "owner"},
        {"group", "group"}, {"modified_time", "modifiedTime"}, {"symlink_target", "symlinkTarget"}};
    for (size_t i = 0; e && i < sizeof copied / sizeof copied[0]; i++) {
        json_t *v = json_object_get(in, copied[i][0]);
        if (v && !json_is_null(v))
            json_object_set(e, copied[i][1], v);
    }
    return e;
}

/* ---- the commands a front runs ------------------------------------------------------------ */

typedef struct run_ctx {
    envd_front *f;
    char **argv;
    char **envs;
    char *cwd;
    int pid;
    atomic_bool stop;     /* SendSignal asked it to end */
    struct run_ctx *next; /* in front_runs */
} run_ctx;

/* The commands the envd fronts of this process run (each a Start stream),
 * by the pid a front gave it: SendSignal stops one, List shows them. */
typedef struct front_runs {
    pthread_mutex_t mu;
    run_ctx *head;
    int next_pid;
} front_runs;
static front_runs runs = {PTHREAD_MUTEX_INITIALIZER, NULL, 1000};

static void runs_add(run_ctx *r)
{
    pthread_mutex_lock(&runs.mu);
    r->pid = runs.next_pid++ % 1000000 + 1000;
    r->next = runs.head;
    runs.head = r;
    pthread_mutex_unlock(&runs.mu);
}

static void runs_remove(run_ctx *r)
{
    pthread_mutex_lock(&runs.mu);
    for (run_ctx **p = &runs.head; *p; p = &(*p)->next) {
        if (*p == r) {
            *p = r->next;
            break;
        }
    }
    pthread_mutex_unlock(&runs.mu);
}

/* Stops the run pid of sandbox sb; false when there is none. */
static bool runs_stop(abx_sandbox *sb, int pid)
{
    bool found = false;
    pthread_mutex_lock(&runs.mu);
    for (run_ctx *r = runs.head; r && !found; r = r->next) {
        if (r->pid == pid && strcmp(abx_sandbox_id(r->f->sandbox), abx_sandbox_id(sb)) == 0) {
            atomic_store(&r->stop, true);
            found = true;
        }
    }
    pthread_mutex_unlock(&runs.mu);
    return found;
}

/* The runs of sandbox sb as process.Process List entries, appended to list. */
static void runs_list(abx_sandbox *sb, json_t *list)
{
    pthread_mutex_lock(&runs.mu);
    for (run_ctx *r = runs.head; r; r = r->next) {
        if (strcmp(abx_sandbox_id(r->f->sandbox), abx_sandbox_id(sb)) != 0)
            continue;
        json_t *args = json_array();
        for (size_t i = 1; r->argv[i]; i++)
            json_array_append_new(args, json_string(r->argv[i]));
        json_array_append_new(list,
                              json_pack("{s:i, s:{s:s, s:o, s:{}, s:s}}", "pid", r->pid, "config", "cmd",
                                        r->argv[0], "args", args, "envs", "cwd", r->cwd ? r->cwd : ""));
    }
    pthread_mutex_unlock(&runs.mu);
}

/* ---- the unary RPCs ----------------------------------------------------------------------- */

static const char *str(json_t *req, const char *key)
{
    return json_string_value(json_object_get(req, key));
}

static int fs_rpc(envd_front *f, const char *m, json_t *req, json_t **out, abx_error **err)
{
    abx_sandbox *s = f->sandbox;
    char *text = NULL;
    int rc;
    if (strcmp(m, "Stat") == 0 || strcmp(m, "MakeDir") == 0) {
        const char *p = str(req, "path");
        bool created = true;
        rc = strcmp(m, "MakeDir") == 0 ? abx_sandbox_mkdir(s, p, f->user, &created, err) : 0;
        if (rc == 0 && !created)
            return abx__error_set(err, ABX_EINVAL,
                                  "already exists"); /* envd's already_exists: the SDK's false */
        if (rc == 0)
            rc = abx_sandbox_stat(s, p, f->user, &text, err);
        json_t *e = rc == 0 ? json_loads(text, 0, NULL) : NULL;
        *out = rc == 0 ? json_pack("{s:o}", "entry", entry_of(e)) : NULL;
        json_decref(e);
    } else if (strcmp(m, "ListDir") == 0) {
        json_int_t depth = json_integer_value(json_object_get(req, "depth"));
        rc = abx_sandbox_list_files(s, str(req, "path"), depth > 0 && depth < 64 ? (unsigned)depth : 1,
                                    f->user, &text, err);
        json_t *all = rc == 0 ? json_loads(text, 0, NULL) : NULL, *entries = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(all, i, e) json_array_append_new(entries, entry_of(e));
        json_decref(all);
        *out = json_pack("{s:o}", "entries", entries);
    } else if (strcmp(m, "Move") == 0) {
        rc = abx_sandbox_move(s, str(req, "source"), str(req, "destination"), f->user, err);
        if (rc == 0)
            rc = abx_sandbox_stat(s, str(req, "destination"), f->user, &text, err);
        json_t *e = rc == 0 ? json_loads(text, 0, NULL) : NULL;
        *out = rc == 0 ? json_pack("{s:o}", "entry", entry_of(e)) : NULL;
        json_decref(e);
    } else if (strcmp(m, "Remove") == 0) {
        rc = abx_sandbox_remove(s, str(req, "path"), f->user, err);
        *out = json_object();
    } else {
        rc = abx__error_set(err, ABX_ENOTSUP, "filesystem.Filesystem/%s: not for this provider's sandboxes",
                            m);
    }
    abx_free(text);
    return rc;
}

/* {process: {selector: {pid}}} */
static int selected_pid(json_t *req)
{
    json_t *sel = json_object_get(json_object_get(json_object_get(req, "process"), "selector"), "pid");
    if (!sel)
        sel = json_object_get(json_object_get(req, "process"), "pid");
    return json_is_integer(sel) ? (int)json_integer_value(sel) : -1;
}

static int process_rpc(envd_front *f, const char *m, json_t *req, json_t **out, abx_error **err)
{
    abx_sandbox *s = f->sandbox;
    int rc;
    if (strcmp(m, "List") == 0) { /* the commands this front runs, and the plugin's own tasks */
        char *text = NULL;
        json_t *list = abx_sandbox_list_processes(s, &text, NULL) == 0 ? json_loads(text, 0, NULL) : NULL;
        abx_free(text);
        if (!json_is_array(list)) {
            json_decref(list);
            list = json_array();
        }
        runs_list(s, list);
        rc = 0;
        *out = json_pack("{s:o}", "processes", list);
    } else if (strcmp(m, "SendSignal") == 0) {
        const char *sig = str(req, "signal");
        int pid = selected_pid(req);
        rc = runs_stop(s, pid)
                 ? 0
                 : abx_sandbox_signal(s, pid, sig && strcmp(sig, "SIGNAL_SIGTERM") == 0 ? 15 : 9, err);
        *out = json_object();
    } else if (strcmp(m, "SendInput") == 0) {
        char *bytes = NULL;
        long n = abx__b64_decode(str(json_object_get(req, "input"), "stdin") ?: "", &bytes);
        rc = n < 0 ? abx__error_set(err, ABX_EINVAL, "input.stdin: base64")
                   : abx_sandbox_send_stdin(s, selected_pid(req), bytes, (size_t)n, err);
        free(bytes);
        *out = json_object();
    } else if (strcmp(m, "CloseStdin") == 0) {
        rc = abx_sandbox_close_stdin(s, selected_pid(req), err);
        *out = json_object();
    } else {
        rc = abx__error_set(err, ABX_ENOTSUP, "process.Process/%s: not for this provider's sandboxes", m);
    }
    return rc;
}

static int answer_rpc(envd_front *f, struct MHD_Connection *c)
{
    json_t *req = f->body.len ? json_loadb(f->body.data, f->body.len, 0, NULL) : json_object();
    if (!json_is_object(req)) {
        json_decref(req);
        return send_failure(c, ABX_EINVAL, NULL);
    }
    json_t *out = NULL;
    abx_error *err = NULL;
    int rc = strncmp(f->method, "filesystem.Filesystem/", 22) == 0
                 ? fs_rpc(f, f->method + 22, req, &out, &err)
                 : process_rpc(f, f->method + 16, req, &out, &err);
    json_decref(req);
    if (rc < 0) {
        json_decref(out);
        return send_failure(c, rc, err);
    }
    return send_doc(c, 200, "application/json", out ? out : json_object());
}

/* ---- process.Process/Start: a Connect stream ---------------------------------------------- */

/* One envelope: flag, big-endian length, JSON. false: the reader is gone. */
static bool put_envelope(int fd, unsigned flag, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return false;
    size_t n = strlen(text);
    unsigned char head[5] = {(unsigned char)flag, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                             (unsigned char)(n >> 8), (unsigned char)n};
    bool ok = abx__write_all(fd, head, sizeof head) == 0 && abx__write_all(fd, text, n) == 0;
    free(text);
    return ok;
}

static void on_output(const char *data, size_t len, void *ud, const char *stream)
{
    run_ctx *r = ud;
    char *b64 = abx__b64_encode(data, len);
    if (b64)
        put_envelope(r->f->events[1], 0, json_pack("{s:{s:{s:s}}}", "event", "data", stream, b64));
    free(b64);
}
static void on_stdout(const char *data, size_t len, void *ud)
{
    on_output(data, len, ud, "stdout");
}
static void on_stderr(const char *data, size_t len, void *ud)
{
    on_output(data, len, ud, "stderr");
}

static void free_strings(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The command stops when its stream's reader went away or it was signalled. */
static bool reader_gone(void *ud)
{
    run_ctx *r = ud;
    return atomic_load(&r->f->reader_gone) || atomic_load(&r->stop);
}

static void *run_main(void *arg)
{
    run_ctx *r = arg;
    envd_front *f = r->f;
    int fd = f->events[1];
    put_envelope(fd, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", r->pid));
    abx_exec_options o = {.cwd = r->cwd,
                          .user = f->user,
                          .envs = (const char *const *)r->envs,
                          .on_stdout = on_stdout,
                          .on_stderr = on_stderr,
                          .userdata = r,
                          .should_cancel = reader_gone,
                          .timeout_s = f->timeout_s};
    abx_exec_result res;
    abx_error *err = NULL;
    int rc = abx_sandbox_exec_argv(f->sandbox, (const char *const *)r->argv, &o, &res, &err);
    if (rc == 0) {
        char status[48];
        snprintf(status, sizeof status, "exit status %d", res.exit_code);
        put_envelope(fd, 0,
                     json_pack("{s:{s:{s:i, s:b, s:s}}}", "event", "end", "exitCode", res.exit_code, "exited",
                               1, "status", status));
        put_envelope(fd, 2, json_object());
        abx_exec_result_clear(&res);
    } else if (rc == -ABX_ECANCELLED && atomic_load(&r->stop)) { /* killed by SendSignal, as envd says it */
        put_envelope(fd, 0,
                     json_pack("{s:{s:{s:i, s:b, s:s}}}", "event", "end", "exitCode", -1, "exited", 0,
                               "status", "signal: killed"));
        put_envelope(fd, 2, json_object());
    } else {
        unsigned st = 500;
        int code = -rc;
        char message[600];
        snprintf(message, sizeof message, "%s: %s", abx_err_name(code),
                 abx_error_message(err) ? abx_error_message(err) : abx_strerror(code));
        put_envelope(
            fd, 2,
            json_pack("{s:{s:s, s:s}}", "error", "code", abx__connect_code(code, &st), "message", message));
    }
    abx_error_free(err);
    close(fd);
    f->events[1] = -1;
    runs_remove(r);
    free_strings(r->argv);
    free_strings(r->envs);
    free(r->cwd);
    free(r);
    front_unref(f);
    return NULL;
}

static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    envd_front *f = cls;
    return abx__http_read_fd(f->events[0], buf, max);
}

static void events_done(void *cls)
{
    envd_front *f = cls;
    atomic_store(&f->reader_gone, true);
    front_unref(f);
}

/* The Start request ({process: {cmd, args, envs, cwd}}, one envelope) as a
 * command of its own; NULL with the reason. */
static run_ctx *run_request(envd_front *f, abx_error **err)
{
    json_t *req = NULL;
    if (f->body.len >= 5) {
        size_t n = ((size_t)(unsigned char)f->body.data[1] << 24) |
                   ((size_t)(unsigned char)f->body.data[2] << 16) |
                   ((size_t)(unsigned char)f->body.data[3] << 8) | (size_t)(unsigned char)f->body.data[4];
        if (n <= f->body.len - 5)
            req = json_loadb(f->body.data + 5, n, 0, NULL);
    }
    json_t *proc = json_object_get(req, "process"), *args = json_object_get(proc, "args"),
           *envs = json_object_get(proc, "envs");
    const char *cmd = json_string_value(json_object_get(proc, "cmd"));
    size_t nargs = json_is_array(args) ? json_array_size(args) : 0;
    run_ctx *r = cmd && nargs < 4096 ? calloc(1, sizeof *r) : NULL;
    bool ok = r && (r->argv = calloc(nargs + 2, sizeof *r->argv)) &&
              (r->envs = calloc((json_is_object(envs) ? json_object_size(envs) : 0) + 1, sizeof *r->envs)) &&
              (r->argv[0] = strdup(cmd));
    for (size_t i = 0; ok && i < nargs; i++)
        ok = json_is_string(json_array_get(args, i)) &&
             (r->argv[i + 1] = strdup(json_string_value(json_array_get(args, i))));
    const char *k;
    json_t *v;
    size_t ne = 0;
    json_object_foreach(json_is_object(envs) ? envs : NULL, k, v)
    {
        if (ok)
            ok = json_is_string(v) && asprintf(&r->envs[ne++], "%s=%s", k, json_string_value(v)) >= 0;
    }
    const char *cwd = json_string_value(json_object_get(proc, "cwd"));
    if (ok && cwd && *cwd)
        ok = (r->cwd = strdup(cwd)) != NULL;
    json_decref(req);
    if (!ok) {
        if (r) {
            free_strings(r->argv);
            free_strings(r->envs);
            free(r->cwd);
            free(r);
        }
        abx__error_set(err, ABX_EINVAL, "process: expected {cmd, args, envs, cwd} in one Connect envelope");
        return NULL;
    }
    return r;
}

static int answer_start(envd_front *f, struct MHD_Connection *c)
{
    abx_error *err = NULL;
    run_ctx *r = run_request(f, &err);
    if (!r)
        return send_failure(c, ABX_EINVAL, err);
    r->f = front_ref(f); /* the worker's */
    runs_add(r);
    pthread_t t;
    if (pipe2(f->events, O_CLOEXEC) < 0 || pthread_create(&t, NULL, run_main, r) != 0) {
        runs_remove(r);
        front_unref(f);
        free_strings(r->argv);
        free_strings(r->envs);
        free(r->cwd);
        free(r);
        return send_failure(c, ABX_ESYS, NULL);
    }
    pthread_detach(t);
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_events,
                                                                  front_ref(f), events_done);
    if (!resp) {
        front_unref(f);
        return -1;
    }
    MHD_add_response_header(resp, "Content-Type", "application/connect+json");
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok == MHD_YES ? 0 : -1;
}

/* ---- /files ---------------------------------------------------------------------------------- */

/* The gathered part goes into the sandbox, and into the answer. */
static void flush_part(envd_front *f)
{
    if (!f->part_path[0])
        return;
    abx_error *err = NULL;
    int rc = f->too_big ? -ABX_ETOOBIG
                        : abx_sandbox_write_file(f->sandbox, f->part_path, f->body.data ? f->body.data : "",
                                                 f->body.len, f->user, &err);
    abx_error_free(err);
    if (rc < 0 && f->upload_rc == 0)
        f->upload_rc = rc;
    if (rc == 0) {
        const char *slash = strrchr(f->part_path, '/');
        json_array_append_new(f->written, json_pack("{s:s, s:s, s:s}", "path", f->part_path, "name",
                                                    slash ? slash + 1 : f->part_path, "type", "file"));
    }
    abx__buf_free(&f->body);
    abx__buf_init(&f->body, ENVD_FRONT_MAX_FILE);
    f->too_big = false;
    f->part_path[0] = '\0';
}

static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                               const char *content_type, const char *transfer_encoding, const char *data,
                               uint64_t off, size_t size)
{
    (void)kind, (void)content_type, (void)transfer_encoding;
    envd_front *f = cls;
    if (!key || strcmp(key, "file") != 0)
        return MHD_YES;
    const char *target = f->path[0] ? f->path : filename;
    /* libmicrohttpd may open a part with an empty call at offset 0 and then
     * give its first bytes at offset 0 again: that is the same part */
    bool same_part =
        f->part_path[0] && f->body.len == 0 && !f->too_big && target && strcmp(target, f->part_path) == 0;
    if (off == 0 && !same_part) {
        flush_part(f);
        if (!target || !*target || strlen(target) >= sizeof f->part_path) {
            f->upload_rc = f->upload_rc ? f->upload_rc : -ABX_EINVAL;
            return MHD_YES;
        }
        snprintf(f->part_path, sizeof f->part_path, "%s", target);
    }
    if (f->part_path[0] && abx__buf_append(&f->body, data, size) < 0)
        f->too_big = true;
    return MHD_YES;
}

static int answer_read(envd_front *f, struct MHD_Connection *c)
{
    char *data = NULL;
    size_t len = 0;
    abx_error *err = NULL;
    int rc = abx_sandbox_read_file(f->sandbox, f->path, f->user, ENVD_FRONT_MAX_FILE, &data, &len, &err);
    if (rc < 0)
        return send_failure(c, rc, err);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_COPY);
    abx_free(data);
    if (!r)
        return -1;
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}

/* ---- the request ------------------------------------------------------------------------------- */

/* Whom the request acts as: Basic "<user>:" (RPCs), else the username
 * query (/files); "user" when neither says. */
static bool user_of(struct MHD_Connection *c, char out[8])
{
    const char *basic = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *query = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username");
    const char *who = query && *query ? query : "user";
    char *decoded = NULL;
    if (basic && strncmp(basic, "Basic ", 6) == 0 && abx__b64_decode(basic + 6, &decoded) >= 0) {
        char *colon = strchr(decoded, ':');
        if (colon)
            *colon = '\0';
        who = decoded;
    }
    bool ok = strcmp(who, "user") == 0 || strcmp(who, "root") == 0;
    if (ok)
        snprintf(out, 8, "%s", who);
    free(decoded);
    return ok;
}

/* The token serve gave the sandbox's envd (its notes' envd_token). */
static bool token_ok(struct MHD_Connection *c, abx_sandbox *sb)
{
    char *text = NULL;
    json_t *notes = abx_sandbox_notes(sb, &text, NULL) == 0 ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    const char *want = json_string_value(json_object_get(notes, "envd_token"));
    const char *got = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    bool ok = want && got && strlen(got) == strlen(want) && CRYPTO_memcmp(got, want, strlen(want)) == 0;
    json_decref(notes);
    return ok;
}

envd_front *serve_envd_begin(struct MHD_Connection *c, abx_sandbox *sb, const char *url, const char *method,
                             unsigned *status, char **body)
{
    bool post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
    envd_front *f = calloc(1, sizeof *f);
    if (!f) {
        abx_sandbox_free(sb);
        *status = 500;
        return NULL;
    }
    atomic_init(&f->refs, 1);
    f->events[0] = f->events[1] = -1;
    f->sandbox = sb;
    abx__buf_init(&f->body, ENVD_FRONT_MAX_BODY);
    const char *path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
    snprintf(f->path, sizeof f->path, "%s", path ? path : "");
    const char *why = NULL;
    *status = 404;
    if (strcmp(url, "/health") == 0 && get)
        f->kind = FRONT_HEALTH;
    else if (!token_ok(c, sb))
        why = "unauthorized: this sandbox's X-Access-Token is required", *status = 401;
    else if (!user_of(c, f->user))
        why = "user: root or user", *status = 401;
    else if (strcmp(url, "/files") == 0 && get && *f->path)
        f->kind = FRONT_READ;
    else if (strcmp(url, "/files") == 0 && post) {
        f->kind = FRONT_WRITE;
        abx__buf_free(&f->body);
        abx__buf_init(&f->body, ENVD_FRONT_MAX_FILE);
        f->written = json_array();
        const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (type && strncmp(type, "multipart/form-data", 19) == 0) {
            if (!(f->pp = MHD_create_post_processor(c, 65536, on_part, f)))
                why = "a multipart body expected", *status = 400;
        } else if (*f->path) {
            snprintf(f->part_path, sizeof f->part_path, "%s", f->path);
        } else {
            why = "path: required for an octet-stream upload", *status = 400;
        }
    } else if (post && strcmp(url, "/process.Process/Start") == 0) {
        f->kind = FRONT_START;
        const char *ms = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connect-Timeout-Ms");
        unsigned long long t = 0;
        if (ms && abx__parse_u64(ms, &t) == 0 && t > 0)
            f->timeout_s = t / 1000 + 1 < ABX_TIMEOUT_MAX_S ? (unsigned)(t / 1000 + 1) : ABX_TIMEOUT_MAX_S;
    } else if (post &&
               (strncmp(url, "/process.Process/", 17) == 0 ||
                strncmp(url, "/filesystem.Filesystem/", 23) == 0) &&
               strlen(url + 1) < sizeof f->method) {
        f->kind = FRONT_RPC;
        snprintf(f->method, sizeof f->method, "%s", url + 1);
    } else
        why = "no such endpoint";
    if (why) {
        *body = strdup(why);
        front_unref(f);
        return NULL;
    }
    return f;
}

bool serve_envd_upload(envd_front *f, const char *data, size_t len)
{
    if (f->pp)
        return MHD_post_process(f->pp, data, len) == MHD_YES;
    if (f->kind == FRONT_HEALTH || f->kind == FRONT_READ)
        return true; /* a body these do not take: dropped */
    if (abx__buf_append(&f->body, data, len) < 0)
        f->too_big = true;
    return true;
}

int serve_envd_finish(envd_front *f, struct MHD_Connection *c)
{
    switch (f->kind) {
    case FRONT_HEALTH:
        return send_doc(c, 204, NULL, NULL);
    case FRONT_READ:
        return answer_read(f, c);
    case FRONT_WRITE:
        flush_part(f);
        if (f->upload_rc < 0)
            return send_failure(c, f->upload_rc, NULL);
        return send_doc(c, 200, "application/json", json_incref(f->written));
    case FRONT_START:
        return f->too_big ? send_failure(c, ABX_ETOOBIG, NULL) : answer_start(f, c);
    case FRONT_RPC:
        return f->too_big ? send_failure(c, ABX_ETOOBIG, NULL) : answer_rpc(f, c);
    }
    return -1;
}

void serve_envd_release(envd_front *f)
{
    front_unref(f);
}
