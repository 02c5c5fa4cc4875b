/* kernel.c: run_code.
 *
 * Owns: how code runs in a sandbox. python and javascript go to a kernel
 * (mcp/kernels/: a small interpreter loop started inside the sandbox as a
 * background process tagged "abx-kernel-<language>"), which keeps state for
 * the sandbox's life on the code-interpreter-v1 template and is started
 * fresh for each call on base. shell runs through bash; typescript and r
 * run when their runtime exists inside and fail with E8009 naming what is
 * missing otherwise.
 *
 * A call: send {"id","code","cwd","timeout"} on the kernel's stdin, read its
 * stdout from the last offset until the reply line (MARKER + JSON) appears.
 * Past the timeout the kernel gets SIGINT (the cell is interrupted, the
 * kernel lives on); if no reply comes within KILL_GRACE_MS it is killed and
 * the next call starts a new one. Everything goes through libabx's public
 * process API, so it works on any provider that has one.
 */
#include "kernel.h"
#include "kernel_sources.h"
#include "b64.h"
#include "bounds.h"
#include "reply_scan.h"
#include "error_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KILL_GRACE_MS 3000
#define MAX_WAIT_SLICE_MS 250

typedef struct mcp_kernel {
    char language[16];
    int pid;
    unsigned long long out_off, err_off;
    unsigned next_id;
    struct mcp_kernel *next;
} mcp_kernel;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void mcp_code_result_clear(mcp_code_result *r)
{
    free(r->stdout_data);
    free(r->stderr_data);
    free(r->result);
    json_decref(r->output_files);
    memset(r, 0, sizeof *r);
}

void mcp_kernels_free(mcp_sandbox *b)
{
    mcp_kernel *k = b->kernels;
    while (k) {
        mcp_kernel *next = k->next;
        free(k);
        k = next;
    }
    b->kernels = NULL;
}

static int fail(abx_error **err, int code)
{
    if (err) {
        abx_error_free(*err);
        *err = NULL;
    }
    return code < 0 ? code : -code;
}

/* ---- starting kernels ---------------------------------------------------- */

static bool is_kernel_language(const char *lang)
{
    return strcmp(lang, "python") == 0 || strcmp(lang, "javascript") == 0;
}

static int kernel_start(mcp_sandbox *b, const char *lang, const char *cwd, mcp_kernel *k, abx_error **err)
{
    char tag[48];
    snprintf(tag, sizeof tag, "abx-kernel-%s", lang);
    /* the kernel starts from a file in the sandbox, not from its source on
     * the command line (one line in `abx ps`, not the whole kernel) */
    bool python = strcmp(lang, "python") == 0;
    const char *file = python ? "/tmp/.abx-kernels/python_kernel.py" : "/tmp/.abx-kernels/node_kernel.js";
    const char *src = python ? python_kernel : node_kernel;
    int rc = abx_sandbox_write_file(b->handle, file, src, strlen(src), NULL, err);
    if (rc < 0)
        return rc;
    const char *argv_py[] = {"python3", "-u", file, NULL};
    const char *argv_js[] = {"node", file, NULL};
    abx_exec_options o = {.cwd = cwd, .tag = tag};
    int pid = 0;
    rc = abx_sandbox_start_background_argv(b->handle, python ? argv_py : argv_js, &o, &pid, err);
    if (rc < 0)
        return rc;
    memset(k, 0, sizeof *k);
    snprintf(k->language, sizeof k->language, "%s", lang);
    k->pid = pid;
    return 0;
}

/* The live kernel for lang in b (lock: b->kernel_mu held), starting one. */
static int kernel_get(mcp_sandbox *b, const char *lang, const char *cwd, mcp_kernel **out, abx_error **err)
{
    for (mcp_kernel *k = b->kernels; k; k = k->next) {
        if (strcmp(k->language, lang) != 0)
            continue;
        abx_process_output o;
        if (abx_sandbox_read_output(b->handle, k->pid, ~0ull, ~0ull, 0, &o, NULL) == 0 && o.running) {
            k->out_off = o.stdout_offset;
            k->err_off = o.stderr_offset;
            abx_process_output_clear(&o);
            *out = k;
            return 0;
        }
        abx_process_output_clear(&o);
        k->pid = 0; /* dead: start again below */
        int rc = kernel_start(b, lang, cwd, k, err);
        if (rc == 0)
            *out = k;
        return rc;
    }
    mcp_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return fail(err, ABX_ENOMEM);
    int rc = kernel_start(b, lang, cwd, k, err);
    if (rc < 0) {
        free(k);
        return rc;
    }
    k->next = b->kernels;
    b->kernels = k;
    *out = k;
    return 0;
}

static void kernel_forget(mcp_sandbox *b, mcp_kernel *k)
{
    for (mcp_kernel **p = &b->kernels; *p; p = &(*p)->next) {
        if (*p == k) {
            *p = k->next;
            free(k);
            return;
        }
    }
}

/* ---- one request --------------------------------------------------------- */

/* What a call reads from the kernel: its stdout through the bounded reply
 * scanner (bytes outside the reply came from processes the cell started:
 * they belong to its output) and its own stderr (a crash, a subprocess),
 * both capped (lib/bounds.h). */
typedef struct reply_reader {
    abx_reply_scan scan;
    abx_capbuf extra_err;
} reply_reader;

/* Appends a capbuf's kept bytes to out, marking the cut (the dropped bytes)
 * by counting them into *total. */
static void move_kept(abx_capbuf *from, abx_capbuf *to)
{
    size_t len = 0, cut = 0;
    uint64_t dropped = abx__capbuf_dropped(from);
    char *kept = abx__capbuf_take(from, &len, &cut);
    if (kept) {
        abx__capbuf_append(to, kept, cut);
        abx__capbuf_skip(to, dropped); /* counted where they were dropped */
        abx__capbuf_append(to, kept + cut, len - cut);
    }
    free(kept);
}

static char *take_all(abx_capbuf *b, size_t *len, size_t *total, size_t *cut)
{
    *total = (size_t)b->total;
    char *data = abx__capbuf_take(b, len, cut);
    return data ? data : calloc(1, 1);
}

/* Appends a stream the kernel capped itself (its head and tail, with the
 * total it saw and where it cut) to to. */
static void append_kernel_stream(abx_capbuf *to, json_t *doc, const char *name)
{
    char key[32];
    size_t n;
    char *data = abx__b64_decode_or_empty(json_string_value(json_object_get(doc, name)), &n);
    snprintf(key, sizeof key, "%s_bytes", name);
    json_int_t total = json_integer_value(json_object_get(doc, key));
    snprintf(key, sizeof key, "%s_cut", name);
    json_int_t cut = json_integer_value(json_object_get(doc, key));
    if (cut < 0 || cut > (json_int_t)n)
        cut = (json_int_t)n;
    if (data) {
        abx__capbuf_append(to, data, (size_t)cut);
        if (total > (json_int_t)n)
            abx__capbuf_skip(to, (uint64_t)total - n);
        abx__capbuf_append(to, data + cut, n - (size_t)cut);
    }
    free(data);
}

static void fill_result(json_t *doc, reply_reader *r, mcp_code_result *out)
{
    abx_capbuf so, se;
    abx__capbuf_init(&so, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    abx__capbuf_init(&se, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    move_kept(&r->scan.other, &so);
    append_kernel_stream(&so, doc, "stdout");
    append_kernel_stream(&se, doc, "stderr");
    move_kept(&r->extra_err, &se);
    out->stdout_data = take_all(&so, &out->stdout_len, &out->stdout_total, &out->stdout_cut);
    out->stderr_data = take_all(&se, &out->stderr_len, &out->stderr_total, &out->stderr_cut);
    out->exit_code = (int)json_integer_value(json_object_get(doc, "exit_code"));
    const char *res = json_string_value(json_object_get(doc, "result"));
    out->result = res ? strdup(res) : NULL;
    const char *saved = json_string_value(json_object_get(doc, "stdout_path"));
    snprintf(out->stdout_path, sizeof out->stdout_path, "%s", saved ? saved : "");
    saved = json_string_value(json_object_get(doc, "stderr_path"));
    snprintf(out->stderr_path, sizeof out->stderr_path, "%s", saved ? saved : "");
    json_t *files = json_object_get(doc, "files");
    out->output_files = json_is_array(files) ? json_incref(files) : json_array();
}

static int send_request(mcp_sandbox *b, mcp_kernel *k, unsigned id, const mcp_code_request *req, abx_error **err)
{
    json_t *msg = json_pack("{s:i, s:s, s:s, s:i, s:I}", "id", (int)id, "code", req->code, "cwd", req->cwd, "timeout",
                            (int)req->timeout_s, "save_after", (json_int_t)req->save_after);
    char *line = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!line)
        return fail(err, ABX_ENOMEM);
    size_t n = strlen(line);
    line[n] = '\n'; /* json_dumps left room for the NUL: use it for the newline */
    int rc = abx_sandbox_send_stdin(b->handle, k->pid, line, n + 1, err);
    free(line);
    return rc;
}

/* Waits for the reply to id. Returns 0 with the reply, -ABX_ETIMEOUT after
 * SIGINT and the grace without one, -ABX_ECANCELLED, or an error. */
static int await_reply(mcp_sandbox *b, mcp_kernel *k, unsigned id, const mcp_code_request *req,
                       mcp_code_result *out, abx_error **err)
{
    reply_reader r;
    abx__reply_scan_init(&r.scan, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    abx__capbuf_init(&r.extra_err, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    uint64_t deadline = now_ms() + (uint64_t)req->timeout_s * 1000u;
    bool interrupted = false;
    int rc = 0;
    for (;;) {
        uint64_t now = now_ms();
        if (req->should_cancel && req->should_cancel(req->userdata)) {
            abx_sandbox_signal(b->handle, k->pid, SIGINT, NULL);
            rc = fail(err, ABX_ECANCELLED);
            break;
        }
        if (now >= deadline) {
            if (interrupted) {
                abx_sandbox_signal(b->handle, k->pid, SIGKILL, NULL);
                rc = fail(err, ABX_ETIMEOUT);
                break;
            }
            abx_sandbox_signal(b->handle, k->pid, SIGINT, NULL);
            interrupted = true;
            out->timed_out = true;
            deadline = now + KILL_GRACE_MS;
            continue;
        }
        unsigned slice = (unsigned)(deadline - now < MAX_WAIT_SLICE_MS ? deadline - now : MAX_WAIT_SLICE_MS);
        abx_process_output o;
        rc = abx_sandbox_read_output(b->handle, k->pid, k->out_off, k->err_off, slice, &o, err);
        if (rc < 0)
            break;
        /* bytes the shim's ring dropped before this read still count as output */
        unsigned long long first = o.stdout_offset - o.stdout_len;
        if (first > k->out_off)
            abx__capbuf_skip(&r.scan.other, first - k->out_off);
        if (o.stderr_offset - o.stderr_len > k->err_off)
            abx__capbuf_skip(&r.extra_err, o.stderr_offset - o.stderr_len - k->err_off);
        size_t used = 0;
        json_t *doc = abx__reply_scan_feed(&r.scan, o.stdout_data, o.stdout_len, (long long)id, &used);
        k->out_off = o.stdout_offset - (o.stdout_len - used); /* the rest is the next call's */
        k->err_off = o.stderr_offset;
        abx__capbuf_append(&r.extra_err, o.stderr_data, o.stderr_len);
        bool running = o.running;
        int o_exit = o.exit_code;
        abx_process_output_clear(&o);
        if (doc) {
            fill_result(doc, &r, out);
            json_decref(doc);
            break;
        }
        if (!running) {
            /* the kernel died (it exited, or the OOM killer took it): the
             * sandbox is fine; the caller reports it as the cell's result */
            out->kernel_died = true;
            out->exit_code = o_exit;
            rc = fail(err, ABX_ENOTRUNNING);
            break;
        }
    }
    abx__reply_scan_free(&r.scan);
    abx__capbuf_free(&r.extra_err);
    return rc;
}

/* ---- languages without a kernel ------------------------------------------ */

static bool has_program(mcp_sandbox *b, const char *name)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    abx_exec_result r;
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    bool ok = abx_sandbox_exec_argv(b->handle, argv, NULL, &r, NULL) == 0 && r.exit_code == 0;
    abx_exec_result_clear(&r);
    return ok;
}

static int run_oneshot(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out, abx_error **err)
{
    const char *argv[6] = {NULL};
    const char *lang = req->language;
    if (strcmp(lang, "shell") == 0) {
        argv[0] = "/bin/bash";
        argv[1] = "-c";
        argv[2] = req->code;
    } else if (strcmp(lang, "r") == 0) {
        if (!has_program(b, "Rscript"))
            return abx__error_set(err, ABX_ECMDNOTFOUND, "language r: Rscript is not installed in the sandbox");
        argv[0] = "Rscript";
        argv[1] = "-e";
        argv[2] = req->code;
    } else {
        static const char *const ts_runners[] = {"tsx", "ts-node", "deno", "bun"};
        const char *runner = NULL;
        for (size_t i = 0; i < 4 && !runner; i++)
            if (has_program(b, ts_runners[i]))
                runner = ts_runners[i];
        if (!runner)
            return abx__error_set(err, ABX_ECMDNOTFOUND,
                                  "language typescript: no TypeScript runtime (tsx, ts-node, deno or bun) in the sandbox");
        argv[0] = runner;
        argv[1] = strcmp(runner, "deno") == 0 ? "eval" : "-e";
        argv[2] = req->code;
    }
    abx_exec_options o = {.cwd = req->cwd, .timeout_s = req->timeout_s, .keep_output = true,
                          .should_cancel = req->should_cancel, .userdata = req->userdata,
                          .save_output_after = req->save_after};
    abx_exec_result r;
    int rc = abx_sandbox_exec_argv(b->handle, argv, &o, &r, err);
    if (rc < 0)
        return rc;
    out->exit_code = r.exit_code;
    out->timed_out = r.timed_out;
    out->stdout_data = r.stdout_data ? r.stdout_data : calloc(1, 1);
    out->stdout_len = r.stdout_len;
    out->stdout_total = r.stdout_total;
    out->stdout_cut = r.stdout_cut;
    out->stderr_data = r.stderr_data ? r.stderr_data : calloc(1, 1);
    out->stderr_len = r.stderr_len;
    out->stderr_total = r.stderr_total;
    out->stderr_cut = r.stderr_cut;
    snprintf(out->stdout_path, sizeof out->stdout_path, "%s", r.stdout_path);
    snprintf(out->stderr_path, sizeof out->stderr_path, "%s", r.stderr_path);
    out->output_files = json_array();
    return 0;
}

/* Languages whose kernel was lost (lock: b->kernel_mu held). */
static void remember_lost(mcp_sandbox *b, const char *lang)
{
    char tag[24];
    snprintf(tag, sizeof tag, "[%s]", lang);
    size_t used = strlen(b->lost_kernels);
    if (!strstr(b->lost_kernels, tag) && used + strlen(tag) < sizeof b->lost_kernels)
        snprintf(b->lost_kernels + used, sizeof b->lost_kernels - used, "%s", tag);
}

/* True (once) when lang's kernel had been lost. Lock held. */
static bool take_lost(mcp_sandbox *b, const char *lang)
{
    char tag[24];
    snprintf(tag, sizeof tag, "[%s]", lang);
    char *at = strstr(b->lost_kernels, tag);
    if (!at)
        return false;
    memmove(at, at + strlen(tag), strlen(at + strlen(tag)) + 1);
    return true;
}

int mcp_run_code(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!is_kernel_language(req->language))
        return run_oneshot(b, req, out, err);
    pthread_mutex_lock(&b->kernel_mu);
    mcp_kernel *k = NULL;
    mcp_kernel fresh;
    int rc;
    if (req->stateful) {
        bool reset = take_lost(b, req->language);
        rc = kernel_get(b, req->language, req->cwd, &k, err);
        out->state_reset = rc == 0 && reset;
    } else {
        rc = kernel_start(b, req->language, req->cwd, &fresh, err);
        k = &fresh;
    }
    if (rc == 0) {
        unsigned id = ++k->next_id;
        rc = send_request(b, k, id, req, err);
        if (rc == 0)
            rc = await_reply(b, k, id, req, out, err);
        if (!req->stateful) {
            abx_sandbox_signal(b->handle, k->pid, SIGKILL, NULL);
        } else if (rc == -ABX_ETIMEOUT || rc == -ABX_ENOTRUNNING) {
            abx_sandbox_signal(b->handle, k->pid, SIGKILL, NULL);
            kernel_forget(b, k); /* the next call starts a new kernel */
        }
    }
    if (req->stateful && (rc == -ABX_ETIMEOUT || out->kernel_died))
        remember_lost(b, req->language);
    pthread_mutex_unlock(&b->kernel_mu);
    if (rc == -ABX_ENOTRUNNING && out->kernel_died) {
        int code = out->exit_code;
        mcp_code_result_clear(out);
        out->kernel_died = true;
        out->exit_code = code ? code : 1;
        char msg[400];
        if (code > 128)
            snprintf(msg, sizeof msg,
                     "KernelDied: the %s kernel was killed by signal %d%s; its state (variables, imports) is gone and "
                     "the next call starts a new kernel\n",
                     req->language, code - 128,
                     code - 128 == SIGKILL ? " (most often the sandbox's memory limit: use less memory, or create "
                                             "a sandbox with more)" : "");
        else
            snprintf(msg, sizeof msg,
                     "KernelDied: the %s kernel exited with status %d (the code ended the interpreter, e.g. "
                     "os._exit or process.exit); its state is gone and the next call starts a new kernel\n",
                     req->language, code);
        out->stdout_data = calloc(1, 1);
        out->stderr_data = strdup(msg);
        out->stderr_len = out->stderr_total = out->stderr_cut = out->stderr_data ? strlen(out->stderr_data) : 0;
        out->output_files = json_array();
        return 0;
    }
    if (rc == -ABX_ETIMEOUT) {
        /* the cell ran past its timeout and did not stop when interrupted */
        mcp_code_result_clear(out);
        out->timed_out = true;
        out->exit_code = 124;
        out->stdout_data = calloc(1, 1);
        out->stderr_data = strdup("TimeoutError: the code ran past its timeout and was stopped; the kernel was restarted\n");
        out->stderr_len = out->stderr_total = out->stderr_data ? strlen(out->stderr_data) : 0;
        out->output_files = json_array();
        return 0;
    }
    return rc;
}
