/* shim_code.c: E2B's code-interpreter API (../shared/e2b-protocol.md §3)
 * served by the shim: /execute (NDJSON) and /contexts. It is the one place
 * where notebook state lives: MCP's run_code, the CLI and E2B's SDK all
 * run cells here, so every client of a sandbox sees the same variables.
 *
 * Owns: contexts (one kernel process each: mcp/kernels/python_kernel.py or
 * node_kernel.js, started from a file through the shim's own process table
 * with stdin open), the default context per language and user, and turning
 * a kernel's reply into E2B's NDJSON lines (number_of_executions, stdout,
 * stderr, result, error, end_of_execution) plus one line of abx's own
 * ({"type":"abx"}: exact byte counts, saved outputs, the kernel's fate),
 * which E2B's SDK ignores.
 *
 * A context runs one cell at a time (its run_mu); different contexts run
 * in parallel. A cell past its timeout, or whose client hung up, gets
 * SIGINT; a kernel that still does not answer within KILL_GRACE_MS is
 * killed. A kernel that dies (it exited, or the memory limit killed it) is
 * reported as the kernel's death, and the next cell in that context runs
 * in a new kernel and says that the state was reset.
 *
 * Lifetime: code_mu guards the table and each context's refs/deleted; a
 * context is freed when it is deleted and no execution holds it.
 */
#include "shim_code.h"
#include "buf.h"
#include "b64.h"
#include "error_internal.h"
#include "kernel_sources.h"
#include "shim_files.h"
#include "sysutil.h"
#include "reply_scan.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>

#define EXEC_TIMEOUT_S 300
#define KILL_GRACE_MS 3000

typedef struct code_context {
    char id[40];
    char language[16];
    char cwd[256];
    unsigned uid;
    atomic_int pid;      /* written under run_mu */
    uint64_t out_off;    /* where the next reply is read from in the kernel's stdout (run_mu) */
    unsigned executions; /* (run_mu) */
    bool is_default;
    bool listed;  /* in sh->contexts; false: a one-call ("fresh") context */
    int refs;     /* executions holding it (code_mu) */
    bool deleted; /* (code_mu) */
    pthread_mutex_t run_mu;
    char lost_why[200]; /* (run_mu) why the last kernel went: the next cell says its state was reset */
} code_context;

/* The languages a context runs: python and bash (its cells as %%bash) on
 * the Python kernel, javascript and typescript (transpiled by the typescript
 * module inside) on the Node kernel. E2B's others (r, java) have no kernel
 * here: /execute answers them with an error line naming these. */
#define LANGUAGES "python, javascript, typescript and bash"

static bool language_ok(const char *l)
{
    return strcmp(l, "python") == 0 || strcmp(l, "javascript") == 0 || strcmp(l, "typescript") == 0 ||
           strcmp(l, "bash") == 0;
}

static bool on_python(const char *language)
{
    return strcmp(language, "python") == 0 || strcmp(language, "bash") == 0;
}

static const char *normalise(const char *l)
{
    if (!l)
        return "python";
    if (strcmp(l, "js") == 0)
        return "javascript";
    if (strcmp(l, "ts") == 0)
        return "typescript";
    if (strcmp(l, "sh") == 0 || strcmp(l, "shell") == 0)
        return "bash";
    return l;
}

/* Writes the kernel's source into the sandbox (/tmp/.abx-<uid>/, as the
 * kernel's own user) so that it starts from a file: its command line stays
 * one line in `ps`, not the whole source. Returns the path in *path. */
static int write_kernel_file(shim *sh, const code_context *c, char *path, size_t len, abx_error **err)
{
    bool python = on_python(c->language);
    snprintf(path, len, "/tmp/.abx-%u/%s", c->uid, python ? "python_kernel.py" : "node_kernel.js");
    const char *src = python ? python_kernel : node_kernel;
    int fd = -1;
    int rc = abx__fs_open_file(sh, c->uid, path, O_WRONLY | O_CREAT | O_TRUNC, &fd, err);
    if (rc < 0)
        return rc;
    rc = abx__write_all(fd, src, strlen(src)) < 0
             ? abx__error_errno(err, ABX_EIO, errno, "writing the kernel")
             : 0;
    close(fd);
    return rc;
}

static int spawn_kernel(shim *sh, code_context *c, abx_error **err)
{
    char file[96];
    int rc = write_kernel_file(sh, c, file, sizeof file, err);
    if (rc < 0)
        return rc;
    json_t *args = on_python(c->language) ? json_pack("[s, s]", "-u", file)
                                          : json_pack("[s, s]", "--expose-internals", file);
    char tag[64];
    snprintf(tag, sizeof tag, "abx-context-%s", c->id);
    shim_start_request r = {.cmd = on_python(c->language) ? "python3" : "node",
                            .args = args,
                            .cwd = c->cwd,
                            .tag = tag,
                            .uid = c->uid,
                            .stdin_open = true};
    int pid = abx__shim_proc_start(sh, &r, err);
    json_decref(args);
    if (pid < 0)
        return pid;
    atomic_store(&c->pid, pid);
    c->out_off = 0;
    return 0;
}

/* ---- contexts --------------------------------------------------------------- */

/* Lock held (code_mu). */
static code_context *find(shim *sh, const char *id)
{
    for (int i = 0; i < sh->ncontexts; i++)
        if (strcmp(sh->contexts[i]->id, id) == 0)
            return sh->contexts[i];
    return NULL;
}

static void context_free(code_context *c)
{
    pthread_mutex_destroy(&c->run_mu);
    free(c);
}

/* A new context (its kernel not started yet: the first cell starts it).
 * listed: put in the table (code_mu held), else the caller's alone. */
static int context_new(shim *sh, const char *language, const char *cwd, unsigned uid, bool is_default,
                       bool listed, code_context **out, abx_error **err)
{
    if (listed && sh->ncontexts >= (int)(sizeof sh->contexts / sizeof sh->contexts[0]))
        return abx__error_set(err, ABX_ELIMIT, "too many contexts (16): delete one");
    code_context *c = calloc(1, sizeof *c);
    if (!c)
        return abx__error_set(err, ABX_ENOMEM, "context");
    unsigned char raw[8];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        free(c);
        return abx__error_set(err, ABX_ESYS, "no randomness");
    }
    for (int i = 0; i < 8; i++)
        snprintf(c->id + 2 * i, 3, "%02x", raw[i]);
    snprintf(c->language, sizeof c->language, "%s", language);
    snprintf(c->cwd, sizeof c->cwd, "%s",
             cwd && *cwd               ? cwd
             : sh->template_workdir[0] ? sh->template_workdir
                                       : "/home/user");
    c->uid = uid;
    c->is_default = is_default;
    c->listed = listed;
    pthread_mutex_init(&c->run_mu, NULL);
    if (listed)
        sh->contexts[sh->ncontexts++] = c;
    *out = c;
    return 0;
}

/* Takes a reference (code_mu held). */
static code_context *hold(code_context *c)
{
    c->refs++;
    return c;
}

/* Drops a reference; frees a deleted context nobody holds. */
static void release(shim *sh, code_context *c)
{
    pthread_mutex_lock(&sh->code_mu);
    bool gone = --c->refs == 0 && c->deleted;
    pthread_mutex_unlock(&sh->code_mu);
    if (gone)
        context_free(c);
}

static void unlist_locked(shim *sh, code_context *c)
{
    for (int i = 0; i < sh->ncontexts; i++)
        if (sh->contexts[i] == c)
            sh->contexts[i] = sh->contexts[--sh->ncontexts];
    c->deleted = true;
}

static json_t *context_json(const code_context *c)
{
    return json_pack("{s:s, s:s, s:s}", "id", c->id, "language", c->language, "cwd", c->cwd);
}

int abx__code_context_create(shim *sh, json_t *req, unsigned uid, json_t **out, abx_error **err)
{
    const char *lang = normalise(json_string_value(json_object_get(req, "language")));
    if (!language_ok(lang))
        return abx__error_set(err, ABX_EINVAL, "language: " LANGUAGES);
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = NULL;
    int rc = context_new(sh, lang, json_string_value(json_object_get(req, "cwd")), uid, false, true, &c, err);
    if (rc == 0)
        hold(c);
    pthread_mutex_unlock(&sh->code_mu);
    if (rc < 0)
        return rc;
    /* the kernel starts now, so that a bad context fails here, not later */
    pthread_mutex_lock(&c->run_mu);
    rc = spawn_kernel(sh, c, err);
    pthread_mutex_unlock(&c->run_mu);
    if (rc == 0)
        *out = context_json(c);
    if (rc < 0) {
        pthread_mutex_lock(&sh->code_mu);
        unlist_locked(sh, c);
        pthread_mutex_unlock(&sh->code_mu);
    }
    release(sh, c);
    return rc;
}

json_t *abx__code_contexts_list(shim *sh)
{
    json_t *list = json_array();
    pthread_mutex_lock(&sh->code_mu);
    for (int i = 0; i < sh->ncontexts; i++)
        json_array_append_new(list, context_json(sh->contexts[i]));
    pthread_mutex_unlock(&sh->code_mu);
    return list;
}

int abx__code_context_delete(shim *sh, const char *id, abx_error **err)
{
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = find(sh, id);
    int pid = c ? atomic_load(&c->pid) : 0;
    bool free_now = false;
    if (c) {
        unlist_locked(sh, c);
        free_now = c->refs == 0;
    }
    pthread_mutex_unlock(&sh->code_mu);
    if (!c)
        return abx__error_set(err, ABX_ENOENT, "context not found");
    if (pid > 0)
        abx__shim_proc_signal(sh, pid, SIGKILL); /* a cell running in it ends with the kernel's death */
    if (free_now)
        context_free(c);
    return 0;
}

int abx__code_context_restart(shim *sh, const char *id, abx_error **err)
{
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = find(sh, id);
    if (c)
        hold(c);
    pthread_mutex_unlock(&sh->code_mu);
    if (!c)
        return abx__error_set(err, ABX_ENOENT, "context not found");
    int pid = atomic_load(&c->pid);
    if (pid > 0)
        abx__shim_proc_signal(sh, pid, SIGKILL); /* a running cell ends first */
    pthread_mutex_lock(&c->run_mu);
    pid = atomic_load(&c->pid);
    if (pid > 0)
        abx__shim_proc_signal(sh, pid, SIGKILL);
    int rc = spawn_kernel(sh, c, err);
    c->executions = 0;
    c->lost_why[0] = '\0'; /* asked for: no surprise to report */
    pthread_mutex_unlock(&c->run_mu);
    release(sh, c);
    return rc;
}

/* ---- one cell ----------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    return abx__shim_now_ms();
}

typedef struct cell_request {
    const char *code;
    const char *cwd; /* NULL: the context's */
    json_t *env;     /* for this cell only; may be NULL */
    unsigned timeout_s;
    uint64_t save_after; /* 0, or keep a longer stream whole in the sandbox */
    int client_fd;       /* the caller's connection: a hang-up interrupts the cell; -1 none */
} cell_request;

typedef struct cell_outcome {
    json_t *reply;  /* the kernel's reply, or NULL */
    bool timed_out; /* interrupted at its timeout */
    bool cancelled; /* the client hung up */
    bool died;      /* the kernel died during the cell */
    int died_code;  /* its exit status, or 128 + signal */
    char died_why[200];
    unsigned long oom_kills_before; /* the sandbox cgroup's count when the cell began */
} cell_outcome;

static bool client_gone(int fd)
{
    if (fd < 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void describe_death(shim *sh, const code_context *c, const shim_proc *p, cell_outcome *o)
{
    int code;
    bool exited;
    char status[96];
    abx__shim_proc_end_fields(p, &code, &exited, status, sizeof status);
    o->died = true;
    if (exited) {
        o->died_code = code;
        snprintf(o->died_why, sizeof o->died_why,
                 "the %s kernel exited with status %d (the code ended the interpreter, e.g. os._exit or "
                 "process.exit)",
                 c->language, code);
    } else {
        int sig = WTERMSIG(p->wait_status);
        o->died_code = 128 + sig;
        if (sig == SIGKILL && abx__cgroup_oom_kills(&sh->jail.cgroup) > o->oom_kills_before)
            snprintf(o->died_why, sizeof o->died_why,
                     "the %s kernel was killed by signal 9 by the sandbox's memory limit (%u MiB): use less "
                     "memory, "
                     "or create a sandbox with more",
                     c->language, sh->limits.memory_mb);
        else
            snprintf(o->died_why, sizeof o->died_why, "the %s kernel was killed by signal %d", c->language,
                     sig);
    }
}

/* Waits for the reply to id in c's kernel stdout. The channel is read
 * through a bounded scanner (reply_scan.h): a kernel or cell that floods
 * it costs the shim at most ABX_BOUND_KERNEL_LINE. Lock: run_mu held;
 * takes sh->mu while reading. */
static void await_reply(shim *sh, code_context *c, unsigned id, const cell_request *req, cell_outcome *o)
{
    uint64_t deadline = now_ms() + (uint64_t)req->timeout_s * 1000u;
    bool interrupted = false;
    abx_reply_scan scan;
    abx__reply_scan_init(&scan, 0, 0); /* bytes outside replies are not kept */
    char *buf = malloc(65536);
    int pid = atomic_load(&c->pid);
    pthread_mutex_lock(&sh->mu);
    while (buf && !o->reply) {
        shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
        if (!p)
            break;
        bool trunc = false, got = false;
        size_t n;
        while (!o->reply && (n = abx__ring_read(&p->out, &c->out_off, buf, 65536, &trunc)) > 0) {
            size_t used = 0;
            o->reply = abx__reply_scan_feed(&scan, buf, n, id, &used);
            c->out_off -= n - used; /* what follows the reply is the next call's */
            got = true;
        }
        if (o->reply)
            break;
        if (got)
            abx__shim_wake(sh); /* the kernel may be paused on a full ring */
        if (p->exited) {
            describe_death(sh, c, p, o);
            break;
        }
        if (sh->ending)
            break;
        uint64_t now = now_ms();
        bool gone = !interrupted && client_gone(req->client_fd);
        if (now >= deadline || gone) {
            if (interrupted)
                break;
            interrupted = true;
            o->timed_out = !gone;
            o->cancelled = gone;
            pthread_mutex_unlock(&sh->mu);
            abx__shim_proc_signal(sh, pid, SIGINT);
            pthread_mutex_lock(&sh->mu);
            deadline = now + KILL_GRACE_MS;
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
    }
    pthread_mutex_unlock(&sh->mu);
    free(buf);
    abx__reply_scan_free(&scan);
}

/* Makes sure c has a live kernel; *reset_why is set (non-empty) when the
 * one before had gone, taking its state with it. Lock: run_mu held. */
static int ensure_kernel(shim *sh, code_context *c, char *reset_why, size_t len, abx_error **err)
{
    reset_why[0] = '\0';
    int pid = atomic_load(&c->pid);
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = pid > 0 ? abx__shim_proc_find_locked(sh, pid, NULL) : NULL;
    bool alive = p && !p->exited;
    pthread_mutex_unlock(&sh->mu);
    if (alive)
        return 0;
    if (c->lost_why[0])
        snprintf(reset_why, len, "%s", c->lost_why);
    else if (pid > 0 && c->executions > 0)
        snprintf(reset_why, len, "the %s kernel had stopped (killed from outside, or by the memory limit)",
                 c->language);
    c->lost_why[0] = '\0';
    return spawn_kernel(sh, c, err);
}

static int send_cell(shim *sh, code_context *c, unsigned id, const cell_request *req)
{
    json_t *msg = json_pack("{s:i, s:s, s:s, s:i, s:I, s:s}", "id", (int)id, "code", req->code, "cwd",
                            req->cwd && *req->cwd ? req->cwd : c->cwd, "timeout", (int)req->timeout_s,
                            "save_after", (json_int_t)req->save_after, "language", c->language);
    if (strcmp(c->language, "bash") == 0) { /* the Python kernel's %%bash runs the cell in bash */
        size_t n = strlen(req->code);
        char *cell = malloc(n + 8);
        if (cell) {
            memcpy(cell, "%%bash\n", 7);
            memcpy(cell + 7, req->code, n + 1);
            json_object_set_new(msg, "code", json_string(cell));
            free(cell);
        }
    }
    if (json_is_object(req->env))
        json_object_set(msg, "env", req->env);
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return -ABX_ENOMEM;
    size_t n = strlen(text);
    text[n] = '\n';
    int rc = abx__shim_proc_write_stdin(sh, atomic_load(&c->pid), text, n + 1);
    free(text);
    return rc;
}

/* ---- the answer --------------------------------------------------------------- */

/* Appends a kernel stream (base64 of its head and tail, cut where the head
 * ends) as up to two E2B lines of valid UTF-8; *text_cut gets the byte
 * length of the first part as sent. */
static void stream_lines(json_t *lines, json_t *reply, const char *name, size_t *text_cut)
{
    char *raw = NULL;
    long n = abx__b64_decode(json_string_value(json_object_get(reply, name)) ?: "", &raw);
    char key[24];
    snprintf(key, sizeof key, "%s_cut", name);
    json_int_t cut = json_integer_value(json_object_get(reply, key));
    if (n < 0)
        n = 0;
    if (cut < 0 || cut > n)
        cut = n;
    *text_cut = 0;
    const char *parts[2] = {raw, raw ? raw + cut : NULL};
    size_t lens[2] = {(size_t)cut, (size_t)(n - cut)};
    for (int i = 0; i < 2 && raw; i++) {
        if (lens[i] == 0)
            continue;
        size_t clean_len = 0;
        char *clean = abx__utf8_clean(parts[i], lens[i], &clean_len);
        if (!clean)
            continue;
        if (i == 0)
            *text_cut = clean_len;
        json_array_append_new(lines, json_pack("{s:s, s:s%}", "type", name, "text", clean, clean_len));
        free(clean);
    }
    free(raw);
}

static const char *const RESULT_FORMATS[] = {"text",  "html", "markdown",   "svg",  "png",   "jpeg", "pdf",
                                             "latex", "json", "javascript", "data", "chart", "extra"};

/* E2B result lines from the kernel's results (display() outputs, figures,
 * the final expression's value, in order); only known formats pass. */
static void result_lines(json_t *lines, json_t *reply)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(reply, "results"), i, r)
    {
        json_t *line = json_pack("{s:s, s:b}", "type", "result", "is_main_result",
                                 json_is_true(json_object_get(r, "is_main_result")));
        for (size_t k = 0; k < sizeof RESULT_FORMATS / sizeof RESULT_FORMATS[0]; k++) {
            json_t *v = json_object_get(r, RESULT_FORMATS[k]);
            if (v && !json_is_null(v))
                json_object_set(line, RESULT_FORMATS[k], v);
        }
        json_array_append_new(lines, line);
    }
}

static json_t *error_line(const char *name, const char *value, const char *traceback)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value", value, "traceback",
                     traceback);
}

static json_t *answer_lines(const code_context *c, unsigned id, const cell_outcome *o, const char *reset_why)
{
    json_t *lines = json_array();
    json_array_append_new(
        lines, json_pack("{s:s, s:i}", "type", "number_of_executions", "execution_count", (int)id));
    json_t *abx = json_pack("{s:s, s:s, s:b, s:b}", "type", "abx", "context_id", c->id, "timed_out",
                            o->timed_out, "kernel_died", o->died);
    if (reset_why[0]) {
        json_object_set_new(abx, "state_reset", json_true());
        json_object_set_new(abx, "state_reset_reason", json_string(reset_why));
    }
    if (o->reply) {
        size_t out_cut = 0, err_cut = 0;
        stream_lines(lines, o->reply, "stdout", &out_cut);
        stream_lines(lines, o->reply, "stderr", &err_cut);
        result_lines(lines, o->reply);
        json_t *e = json_object_get(o->reply, "error");
        if (json_is_object(e))
            json_array_append_new(lines,
                                  error_line(json_string_value(json_object_get(e, "name")) ?: "Error",
                                             json_string_value(json_object_get(e, "value")) ?: "",
                                             json_string_value(json_object_get(e, "traceback")) ?: ""));
        json_object_set_new(
            abx, "exit_code",
            json_integer(o->timed_out ? 124 : json_integer_value(json_object_get(o->reply, "exit_code"))));
        json_object_set(abx, "stdout_bytes", json_object_get(o->reply, "stdout_bytes"));
        json_object_set(abx, "stderr_bytes", json_object_get(o->reply, "stderr_bytes"));
        json_object_set_new(abx, "stdout_cut", json_integer((json_int_t)out_cut));
        json_object_set_new(abx, "stderr_cut", json_integer((json_int_t)err_cut));
        static const char *const copied[] = {"stdout_path", "stderr_path", "files"};
        for (size_t k = 0; k < 3; k++) {
            json_t *v = json_object_get(o->reply, copied[k]);
            if (v && !json_is_null(v))
                json_object_set(abx, copied[k], v);
        }
    } else if (o->died) {
        char value[320];
        snprintf(value, sizeof value,
                 "%s; its state (variables, imports) is gone and the next cell starts a new kernel",
                 o->died_why);
        json_array_append_new(lines, error_line("KernelDied", value, ""));
        json_object_set_new(abx, "exit_code", json_integer(o->died_code ? o->died_code : 1));
    } else {
        json_array_append_new(
            lines,
            error_line("TimeoutError",
                       o->cancelled ? "the cell was cancelled and did not stop; its kernel was restarted"
                                    : "the cell ran past its timeout and did not stop when "
                                      "interrupted; its kernel was restarted (state is gone)",
                       ""));
        json_object_set_new(abx, "exit_code", json_integer(124));
    }
    json_array_append_new(lines, abx);
    json_array_append_new(lines, json_pack("{s:s}", "type", "end_of_execution"));
    return lines;
}

static int ndjson(json_t *lines, char **out, abx_error **err)
{
    abx_buf buf;
    abx__buf_init(&buf, (size_t)1 << 30); /* our own result lines: bounded where they were made */
    int rc = 0;
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l)
    {
        char *t = json_dumps(l, JSON_COMPACT);
        if (!t || abx__buf_append_str(&buf, t) < 0 || abx__buf_append(&buf, "\n", 1) < 0)
            rc = -ABX_ENOMEM;
        free(t);
    }
    *out = rc == 0 ? abx__buf_take(&buf, NULL) : NULL;
    abx__buf_free(&buf);
    return *out ? 0 : abx__error_set(err, ABX_ENOMEM, "answer");
}

/* Runs one cell in c (held by the caller). */
static int run_cell(shim *sh, code_context *c, const cell_request *req, char **out, abx_error **err)
{
    pthread_mutex_lock(&c->run_mu);
    char reset_why[200];
    int rc = ensure_kernel(sh, c, reset_why, sizeof reset_why, err);
    if (rc < 0) {
        pthread_mutex_unlock(&c->run_mu);
        return rc;
    }
    unsigned id = ++c->executions;
    cell_outcome o = {.oom_kills_before = abx__cgroup_oom_kills(&sh->jail.cgroup)};
    if (send_cell(sh, c, id, req) == 0)
        await_reply(sh, c, id, req, &o);
    if (!o.reply) { /* the kernel died, or would not stop: it goes, and so does its state */
        abx__shim_proc_signal(sh, atomic_load(&c->pid), SIGKILL);
        snprintf(c->lost_why, sizeof c->lost_why, "%s",
                 o.died ? o.died_why : "the last cell ran past its timeout and its kernel was stopped");
    }
    json_t *lines = answer_lines(c, id, &o, reset_why);
    pthread_mutex_unlock(&c->run_mu);
    json_decref(o.reply);
    rc = ndjson(lines, out, err);
    json_decref(lines);
    return rc;
}

/* A language E2B knows and this sandbox has no kernel for (r, java, ...):
 * an execution whose error names the ones it runs, as E2B's SDK shows an
 * execution's error (the language's name is the client's: bounded). */
static int unsupported_language(const char *lang, char **out, abx_error **err)
{
    char value[200];
    snprintf(value, sizeof value, "language %.32s%s has no kernel in this sandbox; it runs " LANGUAGES, lang,
             strlen(lang) > 32 ? "..." : "");
    json_t *lines = json_pack("[{s:s, s:i}, o, {s:s, s:i}, {s:s}]", "type", "number_of_executions",
                              "execution_count", 0, error_line("UnsupportedLanguage", value, ""), "type",
                              "abx", "exit_code", 1, "type", "end_of_execution");
    int rc = lines ? ndjson(lines, out, err) : abx__error_set(err, ABX_ENOMEM, "answer");
    json_decref(lines);
    return rc;
}

int abx__code_execute(shim *sh, json_t *req, unsigned uid, int client_fd, char **out, abx_error **err)
{
    const char *code = json_string_value(json_object_get(req, "code"));
    const char *ctx_id = json_string_value(json_object_get(req, "context_id"));
    const char *lang_in = json_string_value(json_object_get(req, "language"));
    json_t *timeout = json_object_get(req, "timeout"), *save = json_object_get(req, "save_after");
    json_t *cwd = json_object_get(req, "cwd");
    bool fresh = json_is_true(json_object_get(req, "fresh"));
    if (!code)
        return abx__error_set(err, ABX_EINVAL, "code: a string is required");
    if (ctx_id && lang_in)
        return abx__error_set(err, ABX_EINVAL, "context_id and language: give one, not both");
    if (ctx_id && fresh)
        return abx__error_set(err, ABX_EINVAL, "context_id and fresh: give one, not both");
    if (timeout && (!json_is_integer(timeout) || json_integer_value(timeout) < ABX_TIMEOUT_MIN_S ||
                    json_integer_value(timeout) > ABX_TIMEOUT_MAX_S))
        return abx__error_set(err, ABX_EINVAL, "timeout: seconds from %d to %d", ABX_TIMEOUT_MIN_S,
                              ABX_TIMEOUT_MAX_S);
    if (save && (!json_is_integer(save) || json_integer_value(save) < 0))
        return abx__error_set(err, ABX_EINVAL, "save_after: a number of bytes");
    if (cwd && (!json_is_string(cwd) || json_string_value(cwd)[0] != '/'))
        return abx__error_set(err, ABX_EINVAL, "cwd: an absolute path");
    const char *lang = normalise(lang_in);
    if (!ctx_id && !language_ok(lang))
        return unsupported_language(lang, out, err);
    cell_request cell = {.code = code,
                         .cwd = json_string_value(cwd),
                         .env = json_object_get(req, "env_vars"),
                         .timeout_s = timeout ? (unsigned)json_integer_value(timeout) : EXEC_TIMEOUT_S,
                         .save_after = save ? (uint64_t)json_integer_value(save) : 0,
                         .client_fd = client_fd};
    code_context *c = NULL;
    int rc = 0;
    pthread_mutex_lock(&sh->code_mu);
    if (fresh) { /* a kernel for this cell alone */
        rc = context_new(sh, lang, NULL, uid, false, false, &c, err);
    } else if (ctx_id) {
        c = find(sh, ctx_id);
        if (!c)
            rc = abx__error_set(err, ABX_ENOENT, "context not found");
    } else {
        for (int i = 0; i < sh->ncontexts && !c; i++)
            if (sh->contexts[i]->is_default && strcmp(sh->contexts[i]->language, lang) == 0 &&
                sh->contexts[i]->uid == uid)
                c = sh->contexts[i];
        if (!c)
            rc =
                context_new(sh, lang, NULL, uid, true, true, &c, err); /* the template's WORKDIR, else home */
    }
    if (rc == 0)
        hold(c);
    pthread_mutex_unlock(&sh->code_mu);
    if (rc < 0)
        return rc;
    rc = run_cell(sh, c, &cell, out, err);
    if (fresh) {
        abx__shim_proc_signal(sh, atomic_load(&c->pid), SIGKILL);
        pthread_mutex_lock(&sh->code_mu);
        c->deleted = true;
        pthread_mutex_unlock(&sh->code_mu);
    }
    release(sh, c);
    return rc;
}
