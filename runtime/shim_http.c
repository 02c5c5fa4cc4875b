/* shim_http.c: the shim's HTTP server: the envd-compatible data plane.
 *
 * Owns: routing, the access token check, the Basic-auth user, request body
 * limits, Connect RPC framing (unary JSON, and server-streaming with 5-byte
 * envelopes), and the /files byte streams. Serves, on a Unix socket only
 * its owner can open (mode 0600 in a 0700 directory):
 *
 *   GET  /health                                       204, no token needed
 *   POST /process.Process/{Start,Connect}              server-streaming
 *   POST /filesystem.Filesystem/WatchDir                server-streaming (shim_watch.c)
 *   POST /process.Process/{List,SendInput,SendSignal,CloseStdin,Update}
 *   POST /filesystem.Filesystem/{Stat,ListDir,MakeDir,Move,Remove}
 *   GET  /files?path=&username=                        raw bytes, streamed from the file (one Range:
 * bytes=A-B) POST /files?path=&username=                        octet-stream or multipart, streamed to the
 * file GET  /abx/info   POST /abx/timeout {timeout}   POST /abx/kill POST /abx/claim {timeout, envs,
 * metadata, token}  a standby sandbox's first user (warm pool): nothing that ran before survives it, and the
 * token is the sandbox's from then on POST /abx/network {mode, allow_out, deny_out}      a new network policy
 * (netpolicy.h), now GET  /abx/output?pid=&stdout_offset=&stderr_offset=&wait=   buffered output by offset
 *   POST /execute, GET|POST /contexts, DELETE /contexts/ID, POST /contexts/ID/restart
 *                                                      E2B's code-interpreter API (shim_code.c)
 *
 * Shapes follow ../shared/e2b-protocol.md §2. Every request but /health
 * needs X-Access-Token equal to the sandbox's token (compared in constant
 * time). libmicrohttpd parses HTTP; one thread per connection, so a
 * streaming response may block waiting for output.
 */
#include "shim.h"
#include "http_listener.h"
#include "buf.h"
#include "shim_decode.h"
#include "error_internal.h"
#include "shim_code.h"
#include "shim_files.h"
#include "shim_watch.h"
#include "net.h"
#include "netpolicy.h"
#include "parse.h"
#include "b64.h"
#include "sysutil.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include "netlibs.h"
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RPC_BODY (8u << 20)
#define STREAM_CHUNK 32768
#define DEFAULT_KEEPALIVE_S 90

typedef enum req_kind { REQ_RPC, REQ_UPLOAD_RAW, REQ_UPLOAD_MULTIPART, REQ_DONE } req_kind;

typedef struct req_ctx {
    req_kind kind;
    bool rest_when_answered; /* its answer sent, the shim puts the sandbox at rest (abx__shim_pause) */
    abx_buf body;            /* an RPC's body, at most MAX_RPC_BODY */
    bool too_big;
    unsigned uid;
    /* uploads */
    int fd;
    char path[4096];
    json_t *written; /* [{path, name, type}] */
    struct MHD_PostProcessor *pp;
    struct pp_ctx *pc;
    abx_error *err;
    int code; /* first failure, positive */
} req_ctx;

/* ---- small helpers ------------------------------------------------------ */

static enum MHD_Result send_bytes(struct MHD_Connection *c, unsigned status, const char *type,
                                  const char *body, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return MHD_NO;
    enum MHD_Result ok = send_bytes(c, status, "application/json", text, strlen(text));
    free(text);
    return ok;
}

/* An error body: the message carries the abx code first ("E8023: ...")
 * so that abx's own client can give the user the right code back. */
static json_t *error_doc(int code, const char *message, unsigned *status)
{
    char text[600];
    snprintf(text, sizeof text, "%s: %s", abx_err_name(code),
             message && *message ? message : abx_strerror(code));
    return json_pack("{s:s, s:s}", "code", abx__connect_code(code, status), "message", text);
}

static enum MHD_Result send_error(struct MHD_Connection *c, int code, const char *message)
{
    if (code < 0)
        code = -code;
    unsigned status;
    json_t *doc = error_doc(code, message, &status);
    return send_json(c, status, doc);
}

static enum MHD_Result send_abx_error(struct MHD_Connection *c, abx_error *err, int rc)
{
    enum MHD_Result r = send_error(c, err ? (int)abx_error_code(err) : -rc, abx_error_message(err));
    abx_error_free(err);
    return r;
}

static bool token_ok(shim *sh, struct MHD_Connection *c)
{
    const char *got = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    size_t want = strlen(sh->token);
    return got && strlen(got) == want && CRYPTO_memcmp(got, sh->token, want) == 0;
}

static char *b64(const char *data, size_t len)
{
    return abx__b64_encode(data, len);
}

static long unb64(const char *in, char **out)
{
    return abx__b64_decode(in, out);
}

/* ---- streaming (process Start and Connect) ------------------------------ */

typedef enum stream_phase { PH_START, PH_DATA, PH_TRAILER, PH_DONE } stream_phase;

typedef struct stream_ctx {
    shim *sh;
    int pid;
    bool attached;
    uint64_t out_off, err_off;
    stream_phase phase;
    char *pending;
    size_t pending_len, pending_pos;
    uint64_t deadline_ms; /* 0: none */
    unsigned keepalive_s;
    uint64_t last_emit_ms;
    const char *trailer_error; /* connect code, or NULL for success */
    abx_watch *watch;          /* a WatchDir stream (else a process's); owned */
} stream_ctx;

static void stream_set(stream_ctx *s, uint8_t flags, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    size_t n = text ? strlen(text) : 0;
    free(s->pending);
    s->pending = malloc(n + 5);
    if (!s->pending) {
        free(text);
        s->pending_len = 0;
        return;
    }
    s->pending[0] = (char)flags;
    s->pending[1] = (char)((n >> 24) & 0xff);
    s->pending[2] = (char)((n >> 16) & 0xff);
    s->pending[3] = (char)((n >> 8) & 0xff);
    s->pending[4] = (char)(n & 0xff);
    memcpy(s->pending + 5, text, n);
    free(text);
    s->pending_len = n + 5;
    s->pending_pos = 0;
    s->last_emit_ms = abx__shim_now_ms();
}

static json_t *data_event(const char *stream, const char *bytes, size_t n)
{
    char *enc = b64(bytes, n);
    json_t *e = json_pack("{s:{s:{s:s}}}", "event", "data", stream, enc ? enc : "");
    free(enc);
    return e;
}

/* Produces the next envelope, waiting for output if there is none yet.
 * Called without the lock. */
static void stream_next(stream_ctx *s)
{
    shim *sh = s->sh;
    static const size_t chunk = STREAM_CHUNK;
    char *buf = malloc(chunk);
    if (!buf) {
        s->phase = PH_DONE;
        return;
    }
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        if (s->phase == PH_START) {
            stream_set(s, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", s->pid));
            s->phase = PH_DATA;
            break;
        }
        if (s->phase == PH_TRAILER) {
            stream_set(s, 2,
                       s->trailer_error
                           ? json_pack("{s:{s:s, s:s}}", "error", "code", s->trailer_error, "message",
                                       strcmp(s->trailer_error, "deadline_exceeded") == 0
                                           ? "the stream's deadline passed; the process goes on"
                                           : "the sandbox ended")
                           : json_object());
            s->phase = PH_DONE;
            break;
        }
        shim_proc *p = abx__shim_proc_find_locked(sh, s->pid, NULL);
        if (!p || sh->ending) {
            s->trailer_error = "unavailable";
            s->phase = PH_TRAILER;
            continue;
        }
        bool trunc = false;
        size_t n = abx__ring_read(&p->out, &s->out_off, buf, chunk, &trunc);
        if (n > 0) {
            if (p->paused)
                abx__shim_wake(sh); /* room again: read the pipe on */
            stream_set(s, 0, data_event(p->pty_master >= 0 ? "pty" : "stdout", buf, n));
            break;
        }
        n = abx__ring_read(&p->err, &s->err_off, buf, chunk, &trunc);
        if (n > 0) {
            if (p->paused)
                abx__shim_wake(sh);
            stream_set(s, 0, data_event("stderr", buf, n));
            break;
        }
        if (abx__shim_proc_finished_locked(p)) {
            int code;
            bool exited;
            char status[96];
            abx__shim_proc_end_fields(p, &code, &exited, status, sizeof status);
            json_t *end = json_pack("{s:i, s:b, s:s}", "exitCode", code, "exited", exited, "status", status);
            for (int i = 0; i < 2; i++) { /* abx's own: where a saved whole stream is */
                char path[48];
                abx__shim_saved_path(p->pid, i == 1, path, sizeof path);
                if (p->saved[i] > 0)
                    json_object_set_new(end, i ? "stderrPath" : "stdoutPath", json_string(path));
            }
            stream_set(s, 0, json_pack("{s:{s:o}}", "event", "end", end));
            s->phase = PH_TRAILER;
            break;
        }
        uint64_t now = abx__shim_now_ms();
        if (s->deadline_ms && now >= s->deadline_ms) {
            s->trailer_error = "deadline_exceeded";
            s->phase = PH_TRAILER;
            continue;
        }
        uint64_t keepalive_at = s->last_emit_ms + (uint64_t)s->keepalive_s * 1000;
        if (now >= keepalive_at) {
            stream_set(s, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
            break;
        }
        uint64_t wake = keepalive_at;
        if (s->deadline_ms && s->deadline_ms < wake)
            wake = s->deadline_ms;
        if (p->exited && now + 20 < wake)
            wake = now + 20; /* the finish grace has no event of its own */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t delta = wake - now;
        ts.tv_sec += (time_t)(delta / 1000);
        ts.tv_nsec += (long)(delta % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
    }
    pthread_mutex_unlock(&sh->mu);
    free(buf);
}

/* A WatchDir stream's next envelope: start, then events as they come,
 * keepalives between, and the trailer when the directory goes, the
 * deadline passes or the sandbox ends. */
static void watch_next(stream_ctx *s)
{
    if (s->phase == PH_START) {
        stream_set(s, 0, json_pack("{s:{}}", "start")); /* WatchDirResponse's oneof is at its top level */
        s->phase = PH_DATA;
        return;
    }
    if (s->phase == PH_TRAILER) {
        stream_set(s, 2,
                   s->trailer_error ? json_pack("{s:{s:s, s:s}}", "error", "code", s->trailer_error,
                                                "message", "the watch ended")
                                    : json_object());
        s->phase = PH_DONE;
        return;
    }
    for (;;) {
        uint64_t now = abx__shim_now_ms();
        if (s->sh->ending || (s->deadline_ms && now >= s->deadline_ms)) {
            s->trailer_error = s->sh->ending ? "unavailable" : "deadline_exceeded";
            s->phase = PH_TRAILER;
            watch_next(s);
            return;
        }
        uint64_t keepalive_at = s->last_emit_ms + (uint64_t)s->keepalive_s * 1000;
        if (now >= keepalive_at) {
            stream_set(s, 0, json_pack("{s:{}}", "keepalive"));
            return;
        }
        bool ended = false;
        unsigned wait = keepalive_at - now < 500 ? (unsigned)(keepalive_at - now) : 500;
        json_t *ev = abx__watch_next(s->watch, wait, &ended);
        if (ev) {
            stream_set(s, 0, ev);
            return;
        }
        if (ended) {
            s->phase = PH_TRAILER;
            watch_next(s);
            return;
        }
    }
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    stream_ctx *s = cls;
    while (s->pending_pos >= s->pending_len) {
        if (s->phase == PH_DONE)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (s->watch)
            watch_next(s);
        else
            stream_next(s);
    }
    size_t n = s->pending_len - s->pending_pos;
    if (n > max)
        n = max;
    memcpy(out, s->pending + s->pending_pos, n);
    s->pending_pos += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    stream_ctx *s = cls;
    if (s->attached) {
        pthread_mutex_lock(&s->sh->mu);
        abx__shim_stream_detach_locked(s->sh, s->pid, &s->out_off);
        pthread_mutex_unlock(&s->sh->mu);
    }
    abx__watch_close(s->watch);
    free(s->pending);
    free(s);
}

/* A stream's context with the client's keepalive interval and deadline. */
static stream_ctx *stream_new(shim *sh, struct MHD_Connection *c)
{
    stream_ctx *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->sh = sh;
    s->keepalive_s = DEFAULT_KEEPALIVE_S;
    s->last_emit_ms = abx__shim_now_ms();
    const char *ka = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Keepalive-Ping-Interval");
    unsigned v;
    if (ka && abx__parse_uint(ka, 1, 3600, &v) == 0)
        s->keepalive_s = v;
    const char *deadline = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connect-Timeout-Ms");
    if (deadline && abx__parse_uint(deadline, 1, 4000000000u, &v) == 0)
        s->deadline_ms = abx__shim_now_ms() + v;
    return s;
}

static enum MHD_Result queue_stream(struct MHD_Connection *c, stream_ctx *s)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, stream_reader, s, stream_free);
    if (!r) {
        stream_free(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/connect+json");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

/* A streaming call that fails before its stream starts: Connect's end of
 * stream (flag 2) with the error, under a 200, as streaming clients read it. */
static enum MHD_Result send_stream_error(struct MHD_Connection *c, abx_error *err, int rc)
{
    unsigned status;
    json_t *doc = error_doc(err ? (int)abx_error_code(err) : -rc, abx_error_message(err), &status);
    abx_error_free(err);
    stream_ctx *s = calloc(1, sizeof *s);
    if (!s) {
        json_decref(doc);
        return MHD_NO;
    }
    stream_set(s, 2, json_pack("{s:o}", "error", doc));
    s->phase = PH_DONE;
    return queue_stream(c, s);
}

/* filesystem.Filesystem/WatchDir {path, recursive?, includeEntry?}. */
static enum MHD_Result watch_stream(shim *sh, struct MHD_Connection *c, json_t *req, unsigned uid)
{
    const char *path = json_string_value(json_object_get(req, "path"));
    abx_watch *w = NULL;
    abx_error *err = NULL;
    int rc =
        abx__watch_open(sh, uid, path ? path : "", json_is_true(json_object_get(req, "recursive")), &w, &err);
    if (rc < 0)
        return send_stream_error(c, err, rc);
    stream_ctx *s = stream_new(sh, c);
    if (!s) {
        abx__watch_close(w);
        return MHD_NO;
    }
    s->watch = w;
    return queue_stream(c, s);
}

static enum MHD_Result start_stream(shim *sh, struct MHD_Connection *c, int pid, bool from_now)
{
    stream_ctx *s = stream_new(sh, c);
    if (!s)
        return MHD_NO;
    s->pid = pid;
    pthread_mutex_lock(&sh->mu);
    shim_proc *proc = abx__shim_proc_find_locked(sh, pid, NULL);
    if (proc && from_now) {
        s->out_off = proc->out.total;
        s->err_off = proc->err.total;
    }
    s->attached = abx__shim_stream_attach_locked(sh, pid, &s->out_off, &s->err_off);
    if (!s->attached && proc)
        proc->awaiting_stream = false; /* no stream after all: do not hold its output */
    pthread_mutex_unlock(&sh->mu);
    return queue_stream(c, s);
}

/* A streaming request's body is one envelope around a JSON message. */
/* ---- process.Process ---------------------------------------------------- */

static enum MHD_Result rpc_start(shim *sh, struct MHD_Connection *c, json_t *req, unsigned uid)
{
    json_t *proc = json_object_get(req, "process");
    json_t *pty = json_object_get(req, "pty");
    json_t *size = json_object_get(pty, "size");
    if (pty && !json_is_null(pty) && !json_is_object(pty))
        return send_error(c, ABX_EINVAL, "pty: {size: {cols, rows}} expected");
    shim_start_request sr = {
        .cmd = json_string_value(json_object_get(proc, "cmd")),
        .args = json_object_get(proc, "args"),
        .envs = json_object_get(proc, "envs"),
        .cwd = json_string_value(json_object_get(proc, "cwd")),
        .default_cwd = json_string_value(json_object_get(req, "defaultCwd")),
        .tag = json_string_value(json_object_get(req, "tag")),
        .uid = uid,
        .stdin_open = json_is_true(json_object_get(req, "stdin")),
        .streamed = true,
        .pty = json_is_object(pty),
        .rows = (unsigned)json_integer_value(json_object_get(size, "rows")),
        .cols = (unsigned)json_integer_value(json_object_get(size, "cols")),
        .save_after = (uint64_t)(json_integer_value(json_object_get(req, "saveOutputAfter")) > 0
                                     ? json_integer_value(json_object_get(req, "saveOutputAfter"))
                                     : 0),
    };
    if (sr.pty && (sr.rows > 10000 || sr.cols > 10000))
        return send_error(c, ABX_EINVAL, "pty.size: rows and cols up to 10000");
    if (!sr.cmd || !*sr.cmd || !abx__shim_string_array_ok(sr.args) || !abx__shim_string_map_ok(sr.envs))
        return send_error(c, ABX_EINVAL,
                          "process: cmd (string), args (strings) and envs (string map) expected");
    abx_error *err = NULL;
    int pid = abx__shim_proc_start(sh, &sr, &err);
    if (pid < 0)
        return send_abx_error(c, err, pid);
    return start_stream(sh, c, pid, false);
}

/* {process: {selector: {pid} | {tag}}} or {process: {pid} | {tag}} */
static int selected_pid(shim *sh, json_t *req)
{
    json_t *p = json_object_get(req, "process");
    json_t *sel = json_object_get(p, "selector");
    if (!sel)
        sel = p;
    json_t *pid = json_object_get(sel, "pid");
    const char *tag = json_string_value(json_object_get(sel, "tag"));
    int found = -1;
    pthread_mutex_lock(&sh->mu);
    shim_proc *proc =
        abx__shim_proc_find_locked(sh, json_is_integer(pid) ? (int)json_integer_value(pid) : 0, tag);
    if (proc)
        found = proc->pid;
    pthread_mutex_unlock(&sh->mu);
    return found;
}

static enum MHD_Result rpc_list(shim *sh, struct MHD_Connection *c)
{
    json_t *list = json_array();
    pthread_mutex_lock(&sh->mu);
    for (int i = 0; i < sh->nprocs; i++) {
        shim_proc *p = sh->procs[i];
        if (p->exited)
            continue;
        json_t *e = json_pack("{s:O, s:i}", "config", p->config, "pid", p->pid);
        if (p->tag[0])
            json_object_set_new(e, "tag", json_string(p->tag));
        json_array_append_new(list, e);
    }
    pthread_mutex_unlock(&sh->mu);
    return send_json(c, 200, json_pack("{s:o}", "processes", list));
}

static enum MHD_Result rpc_process(shim *sh, struct MHD_Connection *c, const char *method, json_t *req)
{
    if (strcmp(method, "List") == 0)
        return rpc_list(sh, c);
    int pid = selected_pid(sh, req);
    if (pid <= 0)
        return send_error(c, ABX_ENOTASK, "process not found");
    if (strcmp(method, "SendSignal") == 0) {
        json_t *sig = json_object_get(req, "signal");
        int n = json_is_integer(sig) ? (int)json_integer_value(sig)
                                     : abx__shim_signal_from_name(json_string_value(sig));
        if (n <= 0 || n >= 65)
            return send_error(c, ABX_EINVAL, "signal: unknown");
        int rc = abx__shim_proc_signal(sh, pid, n);
        return rc < 0 ? send_error(c, -rc, NULL) : send_json(c, 200, json_object());
    }
    if (strcmp(method, "SendInput") == 0) { /* input: {stdin} or, for a terminal, {pty} */
        json_t *input = json_object_get(req, "input");
        const char *in = json_string_value(json_object_get(input, "stdin"));
        if (!in)
            in = json_string_value(json_object_get(input, "pty"));
        char *bytes = NULL;
        long n = in ? unb64(in, &bytes) : -1;
        if (n < 0)
            return send_error(c, ABX_EINVAL, "input.stdin or input.pty: base64 bytes expected");
        int rc = abx__shim_proc_write_stdin(sh, pid, bytes, (size_t)n);
        free(bytes);
        return rc < 0 ? send_error(c, -rc, "stdin is closed") : send_json(c, 200, json_object());
    }
    if (strcmp(method, "CloseStdin") == 0) {
        int rc = abx__shim_proc_close_stdin(sh, pid);
        return rc < 0 ? send_error(c, -rc, NULL) : send_json(c, 200, json_object());
    }
    if (strcmp(method, "Update") == 0) { /* {process, pty: {size: {cols, rows}}}: a terminal's new size */
        json_t *size = json_object_get(json_object_get(req, "pty"), "size");
        json_t *rows = json_object_get(size, "rows"), *cols = json_object_get(size, "cols");
        if (!json_is_integer(rows) || !json_is_integer(cols) || json_integer_value(rows) < 1 ||
            json_integer_value(cols) < 1 || json_integer_value(rows) > 10000 ||
            json_integer_value(cols) > 10000)
            return send_error(c, ABX_EINVAL, "pty.size: rows and cols from 1 to 10000");
        int rc = abx__shim_proc_resize(sh, pid, (unsigned)json_integer_value(rows),
                                       (unsigned)json_integer_value(cols));
        return rc < 0 ? send_error(c, -rc, rc == -ABX_ENOTSUP ? "the process has no terminal" : NULL)
                      : send_json(c, 200, json_object());
    }
    return send_error(c, ABX_ENOTSUP, "unknown process method");
}

/* ---- filesystem.Filesystem ---------------------------------------------- */

static enum MHD_Result rpc_filesystem(shim *sh, struct MHD_Connection *c, const char *method, json_t *req,
                                      unsigned uid)
{
    const char *path = json_string_value(json_object_get(req, "path"));
    abx_error *err = NULL;
    json_t *entry = NULL;
    int rc;
    if (strcmp(method, "Stat") == 0) {
        rc = abx__fs_stat(sh, uid, path, &entry, &err);
    } else if (strcmp(method, "ListDir") == 0) {
        json_t *depth = json_object_get(req, "depth");
        json_t *entries = NULL;
        rc = abx__fs_list(sh, uid, path, json_is_integer(depth) ? (unsigned)json_integer_value(depth) : 1,
                          &entries, &err);
        if (rc == 0)
            return send_json(c, 200, json_pack("{s:o}", "entries", entries));
    } else if (strcmp(method, "MakeDir") == 0) {
        bool exists = false;
        rc = abx__fs_mkdir(sh, uid, path, &exists, &entry, &err);
        if (exists) {
            abx_error_free(err);
            json_decref(entry);
            return send_json(c, 409,
                             json_pack("{s:s, s:s}", "code", "already_exists", "message",
                                       "E8001: directory already exists"));
        }
    } else if (strcmp(method, "Move") == 0) {
        rc = abx__fs_move(sh, uid, json_string_value(json_object_get(req, "source")),
                          json_string_value(json_object_get(req, "destination")), &entry, &err);
    } else if (strcmp(method, "Remove") == 0) {
        rc = abx__fs_remove(sh, uid, path, &err);
        if (rc == 0)
            return send_json(c, 200, json_object());
    } else if (strcmp(method, "CreateWatcher") == 0) {
        char id[33];
        rc = abx__watchers_create(sh, uid, path ? path : "", json_is_true(json_object_get(req, "recursive")),
                                  id, &err);
        if (rc == 0)
            return send_json(c, 200, json_pack("{s:s}", "watcherId", id));
    } else if (strcmp(method, "GetWatcherEvents") == 0) {
        json_t *events = NULL;
        rc = abx__watchers_events(sh, uid, json_string_value(json_object_get(req, "watcherId")), &events,
                                  &err);
        if (rc == 0)
            return send_json(c, 200, json_pack("{s:o}", "events", events));
    } else if (strcmp(method, "RemoveWatcher") == 0) {
        rc = abx__watchers_remove(sh, uid, json_string_value(json_object_get(req, "watcherId")), &err);
        if (rc == 0)
            return send_json(c, 200, json_object());
    } else {
        return send_error(c, ABX_ENOTSUP, "unknown filesystem method");
    }
    if (rc < 0)
        return send_abx_error(c, err, rc);
    return send_json(c, 200, json_pack("{s:o}", "entry", entry ? entry : json_object()));
}

/* ---- abx's own control endpoints ----------------------------------------- */

static enum MHD_Result abx_output(shim *sh, struct MHD_Connection *c)
{
    unsigned pid = 0, wait_ms = 0;
    unsigned long long so = 0, se = 0;
    const char *v;
    if (!(v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid")) ||
        abx__parse_uint(v, 1, 4194304, &pid) < 0)
        return send_error(c, ABX_EINVAL, "pid: expected a process id");
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stdout_offset")) &&
        abx__parse_u64(v, &so) < 0)
        return send_error(c, ABX_EINVAL, "stdout_offset: expected a whole number");
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "stderr_offset")) &&
        abx__parse_u64(v, &se) < 0)
        return send_error(c, ABX_EINVAL, "stderr_offset: expected a whole number");
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait")) &&
        abx__parse_uint(v, 0, 600000, &wait_ms) < 0)
        return send_error(c, ABX_EINVAL, "wait: expected milliseconds, at most 600000");
    uint64_t out_off = so, err_off = se;
    uint64_t deadline = abx__shim_now_ms() + wait_ms;
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = abx__shim_proc_find_locked(sh, (int)pid, NULL);
    while (p && wait_ms && !abx__shim_proc_finished_locked(p) && p->out.total <= out_off &&
           p->err.total <= err_off && !sh->ending) {
        uint64_t now = abx__shim_now_ms();
        if (now >= deadline)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t d = deadline - now < 20 ? deadline - now : 20;
        ts.tv_nsec += (long)d * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
        p = abx__shim_proc_find_locked(sh, (int)pid, NULL);
    }
    if (!p) {
        pthread_mutex_unlock(&sh->mu);
        return send_error(c, ABX_ENOTASK, "process not found");
    }
    char *out = malloc(ABX_OUTBUF_CAP), *errb = malloc(ABX_OUTBUF_CAP);
    bool tout = false, terr = false;
    size_t no = out ? abx__ring_read(&p->out, &out_off, out, ABX_OUTBUF_CAP, &tout) : 0;
    size_t ne = errb ? abx__ring_read(&p->err, &err_off, errb, ABX_OUTBUF_CAP, &terr) : 0;
    bool finished = abx__shim_proc_finished_locked(p);
    json_t *doc =
        json_pack("{s:i, s:s, s:I, s:I, s:b, s:b}", "pid", p->pid, "status", finished ? "exited" : "running",
                  "stdout_offset", (json_int_t)out_off, "stderr_offset", (json_int_t)err_off,
                  "stdout_truncated", tout, "stderr_truncated", terr);
    if (finished) {
        int code;
        bool exited;
        char status[96];
        abx__shim_proc_end_fields(p, &code, &exited, status, sizeof status);
        json_object_set_new(doc, "exit_code", json_integer(exited ? code : 128 + WTERMSIG(p->wait_status)));
    } else {
        json_object_set_new(doc, "exit_code", json_null());
    }
    pthread_mutex_unlock(&sh->mu);
    char *eo = b64(out ? out : "", no), *ee = b64(errb ? errb : "", ne);
    json_object_set_new(doc, "stdout", json_string(eo ? eo : ""));
    json_object_set_new(doc, "stderr", json_string(ee ? ee : ""));
    free(eo);
    free(ee);
    free(out);
    free(errb);
    return send_json(c, 200, doc);
}

/* CPU (over 100 ms), memory and disk in use now. */
static enum MHD_Result abx_metrics(shim *sh, struct MHD_Connection *c)
{
    unsigned long long cpu0 = 0, cpu1 = 0, mem = 0;
    unsigned long long t0 = abx__now_ns();
    abx__cgroup_usage(&sh->jail.cgroup, &cpu0, &mem);
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
    abx__cgroup_usage(&sh->jail.cgroup, &cpu1, &mem);
    unsigned long long wall_us = (abx__now_ns() - t0) / 1000;
    double pct = wall_us && cpu1 > cpu0 ? 100.0 * (double)(cpu1 - cpu0) / (double)wall_us : 0.0;
    struct statfs fs;
    unsigned long long disk_used = 0;
    if (fstatfs(sh->rootfd, &fs) == 0)
        disk_used = (unsigned long long)(fs.f_blocks - fs.f_bfree) * (unsigned long long)fs.f_bsize;
    return send_json(c, 200,
                     json_pack("{s:i, s:f, s:I, s:I, s:I, s:I}", "cpu_count", (int)sh->limits.cpu_count,
                               "cpu_used_pct", pct, "mem_used", (json_int_t)mem, "mem_total",
                               (json_int_t)sh->limits.memory_mb << 20, "disk_used", (json_int_t)disk_used,
                               "disk_total", (json_int_t)sh->limits.disk_mb << 20));
}

/* What the sandbox has used since it started, as counters and gauges read
 * now (metrics): no sampling interval, nothing kept between calls but the
 * CPU counter's high mark (v1 hosts sum the members' times, which dip
 * while an ended process waits to be reaped). */
/* GET /abx/history: the last hour's samples, oldest first, and one now:
 * [{t, cpu_us, mem_bytes}]. */
static enum MHD_Result abx_history(shim *sh, struct MHD_Connection *c)
{
    json_t *samples = json_array();
    pthread_mutex_lock(&sh->mu);
    for (unsigned i = 0; samples && i < sh->history_n; i++) {
        const shim_sample *h = &sh->history[(sh->history_head + i) % SHIM_HISTORY];
        json_array_append_new(samples,
                              json_pack("{s:I, s:I, s:I}", "t", (json_int_t)h->t, "cpu_us",
                                        (json_int_t)h->cpu_us, "mem_bytes", (json_int_t)h->mem_bytes));
    }
    pthread_mutex_unlock(&sh->mu);
    abx_cgroup_stats cs;
    if (samples && abx__cgroup_stats(&sh->jail.cgroup, &cs) == 0)
        json_array_append_new(samples,
                              json_pack("{s:I, s:I, s:I}", "t", (json_int_t)time(NULL), "cpu_us",
                                        (json_int_t)cs.cpu_us, "mem_bytes", (json_int_t)cs.mem_bytes));
    return send_json(c, 200, samples);
}

static enum MHD_Result abx_stats(shim *sh, struct MHD_Connection *c)
{
    abx_cgroup_stats cs;
    abx__cgroup_stats(&sh->jail.cgroup, &cs);
    struct statfs fs;
    unsigned long long disk_used = 0;
    if (fstatfs(sh->rootfd, &fs) == 0)
        disk_used = (unsigned long long)(fs.f_blocks - fs.f_bfree) * (unsigned long long)fs.f_bsize;
    pthread_mutex_lock(&sh->mu);
    if (cs.cpu_us < sh->cpu_us_high)
        cs.cpu_us = sh->cpu_us_high;
    sh->cpu_us_high = cs.cpu_us;
    abx_net_counters nc;
    bool networked = sh->net && abx__net_counters(sh->net, &nc) == 0;
    pthread_mutex_unlock(&sh->mu);
    json_t *doc = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "cpu_us", (json_int_t)cs.cpu_us, "mem_bytes",
        (json_int_t)cs.mem_bytes, "mem_peak_bytes", (json_int_t)cs.mem_peak_bytes, "mem_limit_bytes",
        (json_int_t)sh->limits.memory_mb << 20, "pids", (json_int_t)cs.pids, "pids_limit",
        (json_int_t)sh->limits.pids, "oom_kills", (json_int_t)cs.oom_kills, "disk_used_bytes",
        (json_int_t)disk_used, "disk_limit_bytes", (json_int_t)sh->limits.disk_mb << 20);
    if (doc && networked)
        json_object_set_new(doc, "network",
                            json_pack("{s:I, s:I, s:I, s:I, s:I}", "out_bytes", (json_int_t)nc.out_bytes,
                                      "out_packets", (json_int_t)nc.out_packets, "in_bytes",
                                      (json_int_t)nc.in_bytes, "in_packets", (json_int_t)nc.in_packets,
                                      "refused_packets", (json_int_t)nc.refused_packets));
    return send_json(c, 200, doc);
}

/* An /abx/ change's answer: the sandbox's details after it, or its error. Frees err. */
static enum MHD_Result info_or_error(shim *sh, struct MHD_Connection *c, int rc, abx_error *err)
{
    if (rc < 0) {
        enum MHD_Result r = send_error(c, -rc, abx_error_message(err));
        abx_error_free(err);
        return r;
    }
    abx_error_free(err);
    pthread_mutex_lock(&sh->mu);
    json_t *doc = abx__shim_info_locked(sh);
    pthread_mutex_unlock(&sh->mu);
    return send_json(c, 200, doc);
}

static enum MHD_Result abx_control(shim *sh, struct MHD_Connection *c, const char *url, const char *method,
                                   json_t *req, bool *rest_when_answered)
{
    if (strcmp(url, "/abx/info") == 0 && strcmp(method, "GET") == 0) {
        pthread_mutex_lock(&sh->mu);
        json_t *doc = abx__shim_info_locked(sh);
        pthread_mutex_unlock(&sh->mu);
        return send_json(c, 200, doc);
    }
    if (strcmp(url, "/abx/output") == 0 && strcmp(method, "GET") == 0)
        return abx_output(sh, c);
    if (strcmp(url, "/abx/metrics") == 0 && strcmp(method, "GET") == 0)
        return abx_metrics(sh, c);
    if (strcmp(url, "/abx/stats") == 0 && strcmp(method, "GET") == 0)
        return abx_stats(sh, c);
    if (strcmp(url, "/abx/history") == 0 && strcmp(method, "GET") == 0)
        return abx_history(sh, c);
    if (strcmp(method, "POST") != 0)
        return send_error(c, ABX_ENOTSUP, "unknown abx endpoint");
    if (strcmp(url, "/abx/timeout") == 0) {
        json_t *t = json_object_get(req, "timeout");
        if (!json_is_integer(t) || json_integer_value(t) < ABX_TIMEOUT_MIN_S ||
            json_integer_value(t) > ABX_TIMEOUT_MAX_S)
            return send_error(c, ABX_EINVAL,
                              "timeout: an integer from 1 to " ABX_STRINGIFY(ABX_TIMEOUT_MAX_S) " seconds");
        abx__shim_set_timeout(sh, (unsigned)json_integer_value(t));
        pthread_mutex_lock(&sh->mu);
        json_t *doc = abx__shim_info_locked(sh);
        pthread_mutex_unlock(&sh->mu);
        return send_json(c, 200, doc);
    }
    if (strcmp(url, "/abx/network") == 0) {
        abx_error *err = NULL;
        json_t *policy = NULL;
        int rc = abx__net_policy_normalize(req, &policy, &err);
        if (rc == 0)
            rc = abx__shim_set_network(sh, policy, &err);
        json_decref(policy);
        return info_or_error(sh, c, rc, err);
    }
    if (strcmp(url, "/abx/claim") == 0) {
        json_t *t = json_object_get(req, "timeout"), *envs = json_object_get(req, "envs"),
               *meta = json_object_get(req, "metadata");
        const char *token = json_string_value(json_object_get(req, "token"));
        if (!json_is_integer(t) || json_integer_value(t) < ABX_TIMEOUT_MIN_S ||
            json_integer_value(t) > ABX_TIMEOUT_MAX_S || !json_is_object(envs) || !json_is_object(meta) ||
            !abx__shim_string_map_ok(envs) || !abx__shim_string_map_ok(meta) || !token ||
            strlen(token) < 32 || strlen(token) >= sizeof sh->token)
            return send_error(c, ABX_EINVAL,
                              "claim: timeout 1-" ABX_STRINGIFY(
                                  ABX_TIMEOUT_MAX_S) ", envs and metadata string maps, a new token");
        abx_error *err = NULL;
        int rc =
            abx__shim_claim(sh, (unsigned)json_integer_value(t),
                            json_is_true(json_object_get(req, "pause_on_timeout")), envs, meta, token, &err);
        return info_or_error(sh, c, rc, err);
    }
    if (strcmp(url, "/abx/snapshot") == 0) {
        abx_error *err = NULL;
        json_t *made = NULL;
        int rc = abx__shim_snapshot(sh, json_string_value(json_object_get(req, "dest")), &made, &err);
        if (rc < 0) {
            enum MHD_Result r = send_error(c, (int)abx_error_code(err), abx_error_message(err));
            abx_error_free(err);
            return r;
        }
        return send_json(c, 200, made);
    }
    if (strcmp(url, "/abx/kill") == 0) {
        abx__shim_request_end(sh);
        return send_json(c, 200, json_pack("{s:b}", "success", 1));
    }
    if (strcmp(url, "/abx/pause") == 0 || strcmp(url, "/abx/resume") == 0) {
        json_t *t = json_object_get(req, "timeout");
        if (t && (!json_is_integer(t) || json_integer_value(t) < ABX_TIMEOUT_MIN_S ||
                  json_integer_value(t) > ABX_TIMEOUT_MAX_S))
            return send_error(c, ABX_EINVAL,
                              "timeout: an integer from 1 to " ABX_STRINGIFY(ABX_TIMEOUT_MAX_S) " seconds");
        abx_error *err = NULL;
        int rc = abx__shim_pause(sh, url[5] == 'p', t ? (unsigned)json_integer_value(t) : 0,
                                 rest_when_answered, &err);
        return info_or_error(sh, c, rc, err);
    }
    return send_error(c, ABX_ENOTSUP, "unknown abx endpoint");
}

/* ---- /files ------------------------------------------------------------- */

/* A file sent by GET /files: exactly the size it had when opened, read as
 * the client takes it. A file that shrinks meanwhile (sandbox code can
 * truncate it) ends the transfer with an error (the client sees a short
 * body and a closed connection), never a thread spinning on a short read;
 * a client that leaves frees it at once (file_stream_free). */
#define FILE_BLOCK (256 * 1024) /* a read and a send per 256 KiB: 1 GiB in 4096 of each */

typedef struct file_stream {
    int fd;
    uint64_t start; /* a range's first byte */
    uint64_t size;  /* bytes served from start */
} file_stream;

static ssize_t file_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    file_stream *fs = cls;
    if (pos >= fs->size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (max > fs->size - pos)
        max = (size_t)(fs->size - pos);
    ssize_t n;
    do
        n = pread(fs->fd, buf, max, (off_t)(fs->start + pos));
    while (n < 0 && errno == EINTR);
    return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void file_stream_free(void *cls)
{
    file_stream *fs = cls;
    close(fs->fd);
    free(fs);
}

/* One byte range, "bytes=FIRST-" or "bytes=FIRST-LAST" (RFC 9110 14.1.2;
 * other forms are ignored and the whole file is served). Returns 1 with
 * [*first, *last] clamped to the file, 0 for no usable range, -1 when
 * FIRST is past the end (416). */
static int parse_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
    if (!h || strncmp(h, "bytes=", 6) != 0 || !isdigit((unsigned char)h[6]))
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long a = strtoull(h + 6, &end, 10), b = 0;
    if (errno || *end != '-')
        return 0;
    bool open_end = end[1] == '\0';
    if (!open_end) {
        const char *second = end + 1;
        if (!isdigit((unsigned char)*second))
            return 0;
        b = strtoull(second, &end, 10);
        if (errno || *end || b < a)
            return 0;
    }
    if (a >= size)
        return -1;
    *first = a;
    *last = open_end || b >= size ? size - 1 : b;
    return 1;
}

static enum MHD_Result files_get(shim *sh, struct MHD_Connection *c)
{
    unsigned uid;
    if (abx__shim_user_from_name(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username"),
                                 sh->default_uid, &uid) < 0)
        return send_error(c, ABX_EAUTH, "username: root or user");
    const char *path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
    int fd = -1;
    abx_error *err = NULL;
    int rc = abx__fs_open_file(sh, uid, path, O_RDONLY, &fd, &err);
    if (rc < 0)
        return send_abx_error(c, err, rc);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return send_error(c, ABX_EIO, "stat failed");
    }
    uint64_t size = (uint64_t)st.st_size, first = 0, last = 0;
    int ranged = parse_range(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"), size, &first, &last);
    char content_range[96];
    if (ranged < 0) { /* past the end: 416, with the size */
        close(fd);
        snprintf(content_range, sizeof content_range, "bytes */%llu", (unsigned long long)size);
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Content-Range", content_range);
        enum MHD_Result ok = MHD_queue_response(c, 416, r);
        MHD_destroy_response(r);
        return ok;
    }
    if (!ranged)
        last = size ? size - 1 : 0;
    uint64_t count = size ? last - first + 1 : 0;
    file_stream *fs = malloc(sizeof *fs);
    struct MHD_Response *r =
        fs ? MHD_create_response_from_callback(count, FILE_BLOCK, file_read, fs, file_stream_free) : NULL;
    if (fs)
        *fs = (file_stream){.fd = fd, .start = first, .size = count};
    if (!r) {
        free(fs);
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/octet-stream");
    if (ranged) {
        snprintf(content_range, sizeof content_range, "bytes %llu-%llu/%llu", (unsigned long long)first,
                 (unsigned long long)last, (unsigned long long)size);
        MHD_add_response_header(r, "Content-Range", content_range);
    }
    enum MHD_Result ok = MHD_queue_response(c, ranged ? 206 : 200, r);
    MHD_destroy_response(r);
    return ok;
}

static void upload_fail(req_ctx *rc, abx_error *err, int code)
{
    if (rc->code == 0) {
        rc->code = err ? (int)abx_error_code(err) : code;
        rc->err = err;
    } else {
        abx_error_free(err);
    }
}

static void upload_close(req_ctx *rc)
{
    if (rc->fd >= 0) {
        if (close(rc->fd) < 0 && rc->code == 0)
            rc->code = ABX_EIO;
        rc->fd = -1;
    }
}

static int upload_open(shim *sh, req_ctx *rc, const char *path)
{
    upload_close(rc);
    abx_error *err = NULL;
    char abs_path[4096];
    if (abx__fs_absolute(rc->uid, path, abs_path, sizeof abs_path) < 0) {
        upload_fail(rc, NULL, ABX_EINVAL);
        return -1;
    }
    int r = abx__fs_open_file(sh, rc->uid, abs_path, O_WRONLY | O_CREAT | O_TRUNC, &rc->fd, &err);
    if (r < 0) {
        upload_fail(rc, err, -r);
        return -1;
    }
    snprintf(rc->path, sizeof rc->path, "%s", abs_path);
    const char *slash = strrchr(abs_path, '/');
    json_array_append_new(rc->written, json_pack("{s:s, s:s, s:s}", "path", abs_path, "name",
                                                 slash ? slash + 1 : abs_path, "type", "file"));
    return 0;
}

static void upload_write(req_ctx *rc, const char *data, size_t len)
{
    if (rc->fd < 0 || rc->code)
        return;
    while (len > 0) {
        ssize_t n = write(rc->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            upload_fail(rc, NULL,
                        errno == ENOSPC || errno == EDQUOT || errno == EFBIG ? ABX_ETOOBIG : ABX_EIO);
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

typedef struct pp_ctx {
    shim *sh;
    req_ctx *rc;
    const char *query_path;
    bool part_open;    /* a part's file is open, */
    size_t part_bytes; /* with this many of its bytes written, */
    char part[4096];   /* named so */
} pp_ctx;

static enum MHD_Result multipart_part(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *filename, const char *content_type,
                                      const char *transfer_encoding, const char *data, uint64_t off,
                                      size_t size)
{
    (void)kind, (void)content_type, (void)transfer_encoding;
    pp_ctx *pc = cls;
    req_ctx *rc = pc->rc;
    if (!key || strcmp(key, "file") != 0)
        return MHD_YES;
    /* libmicrohttpd may open a part with an empty call at offset 0, then
     * give its first bytes at offset 0 again: the same part, opened once */
    const char *target = pc->query_path && *pc->query_path ? pc->query_path : filename;
    bool same_part = pc->part_open && pc->part_bytes == 0 && target && strcmp(target, pc->part) == 0;
    if (off == 0 && !same_part) {
        pc->part_open = false;
        if (!target || !*target) {
            upload_fail(rc, NULL, ABX_EINVAL);
            return MHD_YES;
        }
        /* a second part with the same query path would overwrite: keep the first name */
        if (upload_open(pc->sh, rc, target) < 0)
            return MHD_YES;
        pc->part_open = true;
        pc->part_bytes = 0;
        snprintf(pc->part, sizeof pc->part, "%s", target);
    }
    upload_write(rc, data, size);
    pc->part_bytes += size;
    return MHD_YES;
}

/* ---- dispatch ----------------------------------------------------------- */

/* E2B's code-interpreter API: /execute and /contexts (shim_code.c). */
static enum MHD_Result code_api(shim *sh, struct MHD_Connection *c, const char *url, const char *method,
                                req_ctx *rc)
{
    unsigned uid;
    if (abx__shim_user_from_basic(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                                  sh->default_uid, &uid) < 0)
        return send_error(c, ABX_EAUTH, "user: root or user");
    json_t *req = abx__shim_json_body(rc->body.data, rc->body.len);
    if (!json_is_object(req)) {
        json_decref(req);
        return send_error(c, ABX_EINVAL, "body: a JSON object expected");
    }
    abx_error *err = NULL;
    enum MHD_Result r;
    int rcode = 0;
    if (strcmp(url, "/execute") == 0 && strcmp(method, "POST") == 0) {
        char *lines = NULL;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        rcode = abx__code_execute(sh, req, uid, ci ? ci->connect_fd : -1, &lines, &err);
        r = rcode < 0 ? send_abx_error(c, err, rcode)
                      : send_bytes(c, 200, "application/x-ndjson", lines, strlen(lines));
        free(lines);
    } else if (strcmp(url, "/contexts") == 0 && strcmp(method, "POST") == 0) {
        json_t *ctx = NULL;
        rcode = abx__code_context_create(sh, req, uid, &ctx, &err);
        r = rcode < 0 ? send_abx_error(c, err, rcode) : send_json(c, 200, ctx);
    } else if (strcmp(url, "/contexts") == 0 && strcmp(method, "GET") == 0) {
        r = send_json(c, 200, abx__code_contexts_list(sh));
    } else {
        char id[64] = "";
        bool restart = false;
        const char *rest = url + 10; /* after "/contexts/" */
        const char *slash = strchr(rest, '/');
        snprintf(id, sizeof id, "%.*s", (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
        restart = slash && strcmp(slash, "/restart") == 0 && strcmp(method, "POST") == 0;
        if (restart)
            rcode = abx__code_context_restart(sh, id, &err);
        else if (!slash && strcmp(method, "DELETE") == 0)
            rcode = abx__code_context_delete(sh, id, &err);
        else
            rcode = abx__error_set(&err, ABX_ENOTSUP, "unknown code-interpreter endpoint");
        r = rcode < 0 ? send_abx_error(c, err, rcode) : send_json(c, 200, json_object());
    }
    json_decref(req);
    return r;
}

static bool paused(shim *sh)
{
    pthread_mutex_lock(&sh->mu);
    bool p = sh->paused;
    pthread_mutex_unlock(&sh->mu);
    return p;
}

static enum MHD_Result dispatch_rpc(shim *sh, struct MHD_Connection *c, const char *url, const char *method,
                                    req_ctx *rc)
{
    if (strncmp(url, "/abx/", 5) != 0 && paused(sh)) /* its processes are stopped: nothing would answer */
        return send_error(c, ABX_ENOTRUNNING, "the sandbox is paused: resume it first");
    if (strcmp(url, "/execute") == 0 || strcmp(url, "/contexts") == 0 || strncmp(url, "/contexts/", 10) == 0)
        return code_api(sh, c, url, method, rc);
    if (strncmp(url, "/abx/", 5) == 0) {
        json_t *req = abx__shim_json_body(rc->body.data, rc->body.len);
        if (!req)
            return send_error(c, ABX_EINVAL, "body: JSON expected");
        enum MHD_Result r = abx_control(sh, c, url, method, req, &rc->rest_when_answered);
        json_decref(req);
        return r;
    }
    if (strcmp(method, "POST") != 0)
        return send_error(c, ABX_ENOTSUP, "method not allowed");
    unsigned uid;
    if (abx__shim_user_from_basic(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                                  sh->default_uid, &uid) < 0)
        return send_error(c, ABX_EAUTH, "user: root or user");
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    bool streaming = type && strncmp(type, "application/connect+json", 24) == 0;
    json_t *req = streaming ? abx__shim_connect_unwrap(rc->body.data, rc->body.len)
                            : (abx__shim_json_body(rc->body.data, rc->body.len));
    if (!json_is_object(req)) {
        json_decref(req);
        return send_error(c, ABX_EINVAL, "body: a JSON object expected");
    }
    enum MHD_Result r;
    if (strcmp(url, "/process.Process/Start") == 0) {
        r = rpc_start(sh, c, req, uid);
    } else if (strcmp(url, "/process.Process/Connect") == 0) {
        int pid = selected_pid(sh, req);
        r = pid > 0 ? start_stream(sh, c, pid, true) : send_error(c, ABX_ENOTASK, "process not found");
    } else if (strncmp(url, "/process.Process/", 17) == 0) {
        r = rpc_process(sh, c, url + 17, req);
    } else if (strcmp(url, "/filesystem.Filesystem/WatchDir") == 0) {
        r = watch_stream(sh, c, req, uid);
    } else if (strncmp(url, "/filesystem.Filesystem/", 23) == 0) {
        r = rpc_filesystem(sh, c, url + 23, req, uid);
    } else {
        r = send_error(c, ABX_ENOTSUP, "unknown method");
    }
    json_decref(req);
    return r;
}

static enum MHD_Result begin(shim *sh, struct MHD_Connection *c, const char *url, const char *method,
                             req_ctx *rc)
{
    if (strcmp(url, "/files") == 0 && strcmp(method, "POST") == 0) {
        if (abx__shim_user_from_name(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username"),
                                     sh->default_uid, &rc->uid) < 0)
            return send_error(c, ABX_EAUTH, "username: root or user");
        const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        rc->written = json_array();
        if (type && strncmp(type, "multipart/form-data", 19) == 0) {
            rc->kind = REQ_UPLOAD_MULTIPART;
            pp_ctx *pc = calloc(1, sizeof *pc);
            if (!pc)
                return MHD_NO;
            pc->sh = sh;
            pc->rc = rc;
            pc->query_path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
            rc->pp = MHD_create_post_processor(c, 65536, multipart_part, pc);
            if (!rc->pp) {
                free(pc);
                return send_error(c, ABX_EINVAL, "multipart body expected");
            }
            rc->pc = pc; /* freed with the request */
            return MHD_YES;
        }
        rc->kind = REQ_UPLOAD_RAW;
        const char *path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
        if (!path || !*path)
            return send_error(c, ABX_EINVAL, "path: required for an octet-stream upload");
        upload_open(sh, rc, path);
        return MHD_YES;
    }
    rc->kind = REQ_RPC;
    return MHD_YES;
}

static enum MHD_Result finish(shim *sh, struct MHD_Connection *c, const char *url, const char *method,
                              req_ctx *rc)
{
    if (rc->kind == REQ_UPLOAD_RAW || rc->kind == REQ_UPLOAD_MULTIPART) {
        upload_close(rc);
        if (rc->code) {
            int code = rc->code;
            const char *msg = rc->err ? abx_error_message(rc->err) : NULL;
            if (code == ABX_ETOOBIG) {
                unsigned st;
                return send_json(c, 507, error_doc(code, "not enough space in the sandbox", &st));
            }
            return send_error(c, code, msg);
        }
        if (json_array_size(rc->written) == 0)
            return send_error(c, ABX_EINVAL, "no file part named 'file'");
        return send_json(c, 200, json_incref(rc->written));
    }
    if (rc->too_big)
        return send_error(c, ABX_ETOOBIG, "request body over 8 MiB");
    if (strcmp(url, "/files") == 0 && strcmp(method, "GET") == 0)
        return files_get(sh, c);
    return dispatch_rpc(sh, c, url, method, rc);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    shim *sh = cls;
    req_ctx *rc = *con_cls;
    if (!rc) {
        if (strcmp(url, "/health") == 0)
            return send_bytes(c, 204, NULL, "", 0);
        if (!token_ok(sh, c))
            return send_json(c, 401,
                             json_pack("{s:s, s:s}", "code", "unauthenticated", "message",
                                       "E8020: missing or wrong X-Access-Token"));
        rc = calloc(1, sizeof *rc);
        if (!rc)
            return MHD_NO;
        rc->fd = -1;
        abx__buf_init(&rc->body, MAX_RPC_BODY);
        *con_cls = rc;
        return begin(sh, c, url, method, rc);
    }
    if (rc->kind == REQ_DONE)
        return MHD_YES;
    if (*upload_size > 0) {
        if (rc->kind == REQ_UPLOAD_RAW) {
            upload_write(rc, upload, *upload_size);
        } else if (rc->kind == REQ_UPLOAD_MULTIPART) {
            MHD_post_process(rc->pp, upload, *upload_size);
        } else {
            int added = abx__buf_append(&rc->body, upload, *upload_size);
            if (added == -ABX_ETOOBIG)
                rc->too_big = true;
            else if (added < 0)
                return MHD_NO; /* no memory */
        }
        *upload_size = 0;
        return MHD_YES;
    }
    enum MHD_Result r = finish(sh, c, url, method, rc);
    rc->kind = REQ_DONE;
    return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c, (void)toe;
    req_ctx *rc = *con_cls;
    if (!rc)
        return;
    if (rc->rest_when_answered)
        abx__shim_request_rest(cls);
    if (rc->pp)
        MHD_destroy_post_processor(rc->pp);
    free(rc->pc);
    upload_close(rc);
    json_decref(rc->written);
    abx_error_free(rc->err);
    abx__buf_free(&rc->body);
    free(rc);
    *con_cls = NULL;
}

/* The data plane on the state directory's socket (shim.c bound it), with
 * the listener skeleton of every abx server (base/http_listener.c): no
 * idle timeout (a stream may stay quiet for long), a header deadline. */
int abx__shim_http_start(shim *sh, abx_error **err)
{
    abx_http_service svc = {.listen_fd = sh->listen_fd,
                            .handler = on_request,
                            .handler_cls = sh,
                            .completed = on_completed,
                            .env_prefix = "ABX_SHIM",
                            .idle_s = ABX_HTTP_FOREVER,
                            .header_deadline_s = 30,
                            .max_connections = 1024};
    abx_http_listener *l = NULL;
    int rc = abx__http_start(&svc, &l, err);
    if (rc < 0)
        return abx__error_wrap(err, rc, "starting the data-plane server");
    sh->httpd = l;
    if (sh->code_listen_fd >= 0) { /* abx-oci's agent: the code interpreter's own port, the same routes */
        svc.listen_fd = sh->code_listen_fd;
        l = NULL;
        if ((rc = abx__http_start(&svc, &l, err)) < 0)
            return abx__error_wrap(err, rc, "starting the code interpreter's server");
        sh->httpd_code = l;
    }
    return 0;
}

void abx__shim_http_stop(shim *sh)
{
    abx__http_stop(sh->httpd);
    sh->httpd = NULL;
}
