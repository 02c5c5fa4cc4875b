/* sandbox_envd.c: the data plane of abx.h (processes, code, files): the
 * public calls, which check their arguments once and go through the
 * sandbox's data plane (data_plane.h), and the two planes that speak E2B's
 * envd protocol (envd_client.c): abx__data_shim (abx's own shim: the
 * local provider, background output from the shim's rings) and
 * abx__data_envd (any other envd: E2B hosts, exec plugins that hand a
 * sandbox over with an envd_url; background tasks followed by this
 * process). An exec plugin's own plane is lib/provider_epp.c's.
 *
 * Owns: exec (streamed, with stdin, a terminal, cancel and saved outputs),
 * background processes, signals and stdin, the code interpreter
 * (lib/code.c), and files (ranges, sparse downloads, listings in abx's own
 * JSON style).
 */
#include "provider.h"
#include "buf.h"
#include "b64.h"
#include "bounds.h"
#include "capbuf.h"
#include "epp_exec.h"
#include "code.h"
#include "error_internal.h"
#include "parse.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- processes ---------------------------------------------------------- */

/* NULL (no user named): the sandbox's default, its template's USER or user. */
static const char *user_of(const char *user)
{
    return !user ? NULL : strcmp(user, "root") == 0 ? "root" : "user";
}

static int check_user(const char *user, abx_error **err)
{
    if (user && strcmp(user, "root") != 0 && strcmp(user, "user") != 0)
        return abx__error_set(err, ABX_EINVAL, "user: must be root or user");
    return 0;
}

/* The size of the terminal on fd; false (and the sizes untouched) when fd
 * is not one. */
static bool terminal_size(int fd, unsigned *rows, unsigned *cols)
{
    struct winsize ws;
    if (fd < 0 || ioctl(fd, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
        return false;
    *rows = ws.ws_row;
    *cols = ws.ws_col;
    return true;
}

static json_t *start_request(const char *const *argv, const abx_exec_options *o, bool want_stdin,
                             abx_error **err, int *rc)
{
    json_t *args = json_array();
    for (size_t i = 1; argv[i]; i++)
        json_array_append_new(args, json_string(argv[i]));
    json_t *envs = json_object();
    *rc = abx__pairs_to_object(o ? o->envs : NULL, envs, "envs", true, err);
    json_t *proc = json_pack("{s:s, s:o, s:o}", "cmd", argv[0], "args", args, "envs", envs);
    if (o && o->cwd)
        json_object_set_new(proc, "cwd", json_string(o->cwd));
    json_t *req = json_pack("{s:o, s:b}", "process", proc, "stdin", want_stdin);
    if (o && !o->cwd && o->default_cwd) /* an abx extension: envd ignores what it does not know */
        json_object_set_new(req, "defaultCwd", json_string(o->default_cwd));
    if (o && o->tag)
        json_object_set_new(req, "tag", json_string(o->tag));
    if (o && o->save_output_after)
        json_object_set_new(req, "saveOutputAfter", json_integer((json_int_t)o->save_output_after));
    if (o && o->pty) {
        unsigned rows = 24, cols = 80;
        terminal_size(o->pty_fd, &rows, &cols);
        json_object_set_new(req, "pty",
                            json_pack("{s:{s:i, s:i}}", "size", "rows", (int)rows, "cols", (int)cols));
    }
    return req;
}

static void shell_argv(const abx_sandbox *s, const char *command, const char *argv[4])
{
    bool bash = s->shell[0] ? strcmp(s->shell, "/bin/bash") == 0 : access("/bin/bash", X_OK) == 0;
    argv[0] = bash ? "/bin/bash" : "/bin/sh";
    argv[1] = bash ? "-l" : "-c";
    argv[2] = bash ? "-c" : command;
    argv[3] = bash ? command : NULL;
}

typedef struct exec_state {
    abx_sandbox *sandbox;
    const abx_exec_options *opts;
    pthread_t pump; /* copies opts->stdin_fd to the command (with_stdin) */
    bool pumping;
    atomic_bool stop_pump;
    bool (*should_cancel)(void *userdata);
    abx_exec_result *result;
    int pid;
    bool ended;
    bool stop_at_start;
    bool cancelled_at_start; /* cancel came before the start event: stopped there */
    abx_capbuf out, err;     /* kept output: head and tail (base/bounds.h) */
} exec_state;

/* Moves what st kept into its result (exec_state's buffers are empty after). */
static void exec_keep_result(exec_state *st)
{
    abx_exec_result *r = st->result;
    r->stdout_total = st->out.total;
    r->stderr_total = st->err.total;
    r->stdout_data = abx__capbuf_take(&st->out, &r->stdout_len, &r->stdout_cut);
    r->stderr_data = abx__capbuf_take(&st->err, &r->stderr_len, &r->stderr_cut);
}

static int signal_from_status(const char *status)
{
    if (!status || strncmp(status, "signal: ", 8) != 0)
        return 0;
    for (int sig = 1; sig < 65; sig++) {
        const char *name = strsignal(sig);
        if (name && strcasecmp(name, status + 8) == 0)
            return sig;
    }
    return SIGKILL;
}

/* The stdin pump: the caller's bytes to the command, then its stdin closed.
 * It polls so that it ends as soon as the command does (stop_pump), even
 * when the caller's input never ends. */
static int send_input(abx_sandbox *s, int pid, const char *kind, const void *data, size_t len,
                      abx_error **err);

static void *stdin_pump(void *arg)
{
    exec_state *st = arg;
    const abx_exec_options *o = st->opts;
    char buf[65536];
    unsigned rows = 0, cols = 0;
    if (o->pty)
        terminal_size(o->pty_fd, &rows, &cols);
    while (!atomic_load(&st->stop_pump)) {
        unsigned r = rows, c = cols; /* a terminal's new size goes with the next wake (at most 100 ms) */
        if (o->pty && terminal_size(o->pty_fd, &r, &c) && (r != rows || c != cols)) {
            rows = r;
            cols = c;
            abx_sandbox_pty_resize(st->sandbox, st->pid, rows, cols, NULL);
        }
        struct pollfd p = {.fd = o->stdin_fd, .events = POLLIN};
        int ready = poll(&p, 1, 100);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0)
            continue;
        ssize_t n = read(o->stdin_fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0 || send_input(st->sandbox, st->pid, o->pty ? "pty" : "stdin", buf, (size_t)n, NULL) < 0)
            break;
    }
    if (!o->pty) /* a terminal has no end of input of its own: its process decides when it is done */
        abx_sandbox_close_stdin(st->sandbox, st->pid, NULL);
    return NULL;
}

static int exec_event(json_t *msg, void *ud)
{
    exec_state *st = ud;
    json_t *ev = json_object_get(msg, "event");
    json_t *start = json_object_get(ev, "start");
    if (start) {
        st->pid = (int)json_integer_value(json_object_get(start, "pid"));
        if (st->opts->with_stdin && st->pid > 0 && !st->stop_at_start)
            st->pumping = pthread_create(&st->pump, NULL, stdin_pump, st) == 0;
        if (st->opts->should_cancel && st->opts->should_cancel(st->opts->userdata))
            st->cancelled_at_start = true;
        return st->stop_at_start || st->cancelled_at_start;
    }
    json_t *data = json_object_get(ev, "data");
    if (data) {
        const char *which = json_object_get(data, "stdout") ? "stdout"
                            : json_object_get(data, "pty")  ? "pty"
                                                            : "stderr";
        char *raw = NULL;
        long len = abx__b64_decode(json_string_value(json_object_get(data, which)) ?: "", &raw);
        if (len >= 0) {
            bool out = which[3] != 'e'; /* stdout, or a terminal's one stream */
            abx_output_fn fn = out ? st->opts->on_stdout : st->opts->on_stderr;
            if (fn)
                fn(raw, (size_t)len, st->opts->userdata);
            if (st->opts->keep_output)
                abx__capbuf_append(out ? &st->out : &st->err, raw, (size_t)len);
        }
        free(raw);
        return 0;
    }
    json_t *end = json_object_get(ev, "end");
    if (end) {
        st->ended = true;
        int code = (int)json_integer_value(json_object_get(end, "exitCode"));
        if (!json_is_true(json_object_get(end, "exited")))
            code = 128 + signal_from_status(json_string_value(json_object_get(end, "status")));
        st->result->exit_code = code;
        const char *saved_out = json_string_value(json_object_get(end, "stdoutPath"));
        const char *saved_err = json_string_value(json_object_get(end, "stderrPath"));
        snprintf(st->result->stdout_path, sizeof st->result->stdout_path, "%s", saved_out ? saved_out : "");
        snprintf(st->result->stderr_path, sizeof st->result->stderr_path, "%s", saved_err ? saved_err : "");
    }
    return 0;
}

/* The transfer is only cut once the start event has named the process,
 * so a cancelled command can always be killed; a cancel that comes
 * earlier is honoured at the start event (exec_event). */
static bool exec_cancel(void *ud)
{
    exec_state *st = ud;
    return st->pid > 0 && st->opts->should_cancel(st->opts->userdata);
}

void abx_exec_result_clear(abx_exec_result *r)
{
    if (!r)
        return;
    free(r->stdout_data);
    free(r->stderr_data);
    memset(r, 0, sizeof *r);
}

static int kill_pid(abx_sandbox *s, int pid)
{
    json_t *req =
        json_pack("{s:{s:{s:i}}, s:s}", "process", "selector", "pid", pid, "signal", "SIGNAL_SIGKILL");
    json_t *resp = NULL;
    int rc = abx__envd_unary(&s->envd, "/process.Process/SendSignal", NULL, req, &resp, NULL);
    json_decref(req);
    json_decref(resp);
    return rc;
}

char *abx__quoted_command(const char *const *argv)
{
    size_t len = 1;
    for (size_t i = 0; argv[i]; i++)
        len += strlen(argv[i]) * 4 + 3;
    char *out = malloc(len), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; argv[i]; i++) {
        if (i)
            *p++ = ' ';
        *p++ = '\'';
        for (const char *c = argv[i]; *c; c++) {
            if (*c == '\'') {
                memcpy(p, "'\\''", 4);
                p += 4;
            } else {
                *p++ = *c;
            }
        }
        *p++ = '\'';
    }
    *p = '\0';
    return out;
}

/* envd's exec: argv, or command through the sandbox's shell; waits. */
static int envd_exec(abx_sandbox *s, const char *const *argv, const char *command,
                     const abx_exec_options *opts, abx_exec_result *out, abx_error **err)
{
    const char *shell[5] = {NULL};
    if (!argv) {
        shell_argv(s, command, shell);
        argv = shell;
    }
    int rc = 0;
    json_t *req = start_request(argv, opts, opts->with_stdin, err, &rc);
    if (rc < 0) {
        json_decref(req);
        return rc;
    }
    exec_state st = {.sandbox = s, .opts = opts, .result = out};
    abx__capbuf_init(&st.out, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    abx__capbuf_init(&st.err, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    unsigned deadline = opts->timeout_s ? opts->timeout_s * 1000u : 0;
    rc = abx__envd_stream(&s->envd, "/process.Process/Start", user_of(opts->user), req, deadline, exec_event,
                          &st, opts->should_cancel ? exec_cancel : NULL, err);
    json_decref(req);
    if (st.pumping) {
        atomic_store(&st.stop_pump, true);
        pthread_join(st.pump, NULL);
    }
    /* output is handed over only with success: a failed call leaves nothing
     * in *out for its caller to free */
    if (rc == 0 || rc == -ABX_ETIMEOUT)
        exec_keep_result(&st);
    abx__capbuf_free(&st.out);
    abx__capbuf_free(&st.err);
    if (rc == 0 && st.cancelled_at_start) {
        abx_exec_result_clear(out);
        rc = abx__error_set(err, ABX_ECANCELLED, "cancelled");
    }
    if (rc == -ABX_ECANCELLED && st.pid > 0)
        kill_pid(s, st.pid);
    if (rc == -ABX_ETIMEOUT && st.pid > 0) {
        kill_pid(s, st.pid);
        abx_error_free(err ? *err : NULL);
        if (err)
            *err = NULL;
        out->timed_out = true;
        out->exit_code = 124;
        return 0;
    }
    if (rc == 0 && !st.ended)
        rc = abx__error_set(err, ABX_ENOTRUNNING, "the command's stream ended without its exit");
    if (rc < 0)
        abx_exec_result_clear(out);
    return rc;
}

static const abx_exec_options no_options;

int abx_sandbox_exec_argv(abx_sandbox *s, const char *const *argv, const abx_exec_options *opts,
                          abx_exec_result *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!opts)
        opts = &no_options;
    int rc = check_user(opts->user, err);
    if (rc < 0)
        return rc;
    if (!argv || !argv[0] || !argv[0][0])
        return abx__error_set(err, ABX_EINVAL, "command: must not be empty");
    return s->data->exec(s, argv, NULL, opts, out, err);
}

int abx_sandbox_exec(abx_sandbox *s, const char *command, const abx_exec_options *opts, abx_exec_result *out,
                     abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!opts)
        opts = &no_options;
    int rc = check_user(opts->user, err);
    if (rc < 0)
        return rc;
    if (!command || !*command)
        return abx__error_set(err, ABX_EINVAL, "command: must not be empty");
    return s->data->exec(s, NULL, command, opts, out, err);
}

/* ---- background tasks this process follows -------------------------------------------
 * An E2B cloud's envd keeps no output of a background process for a later
 * reader, so for providers with a task table (ops->task_table) the Start
 * stream is not dropped at the start event: a thread keeps reading it into
 * the client's table (lib/epp_exec.c, the same one exec plugins use), read
 * by abx_sandbox_read_output for as long as this client lives. */

typedef struct follow_state {
    atomic_int refs; /* the starter's and the thread's */
    abx_envd envd;   /* a copy: the handle may be freed before the task ends */
    json_t *req;
    char user[16];
    char tag[64];
    abx_epp_execs *table;
    abx_client *client; /* a reference: the table lives in its state */
    pthread_mutex_t mu;
    pthread_cond_t started;
    int pid; /* > 0 once the start event came */
    bool done;
    char exec_id[16];
} follow_state;

static void follow_unref(follow_state *f)
{
    if (atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    abx__envd_cleanup(&f->envd);
    explicit_bzero(f->envd.token, sizeof f->envd.token);
    json_decref(f->req);
    abx_client_free(f->client);
    pthread_cond_destroy(&f->started);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static int follow_event(json_t *msg, void *ud)
{
    follow_state *f = ud;
    json_t *ev = json_object_get(msg, "event");
    json_t *start = json_object_get(ev, "start"), *data = json_object_get(ev, "data"),
           *end = json_object_get(ev, "end");
    if (start) {
        int pid = (int)json_integer_value(json_object_get(start, "pid"));
        snprintf(f->exec_id, sizeof f->exec_id, "%d", pid);
        if (pid > 0)
            abx__epp_execs_claim(f->table, f->exec_id, pid, f->tag[0] ? f->tag : NULL);
        pthread_mutex_lock(&f->mu);
        f->pid = pid > 0 ? pid : -1;
        pthread_cond_broadcast(&f->started);
        pthread_mutex_unlock(&f->mu);
        return pid > 0 ? 0 : 1;
    }
    char why[160];
    if (data) {
        const char *which = json_object_get(data, "stdout") ? "stdout" : "stderr";
        json_t *params = json_pack("{s:s, s:s, s:O}", "exec_id", f->exec_id, "stream", which, "data_b64",
                                   json_object_get(data, which));
        if (params)
            abx__epp_execs_notify(f->table, "exec.output", params, why, sizeof why);
        json_decref(params);
    } else if (end) {
        int code = (int)json_integer_value(json_object_get(end, "exitCode"));
        if (!json_is_true(json_object_get(end, "exited")))
            code = 128 + signal_from_status(json_string_value(json_object_get(end, "status")));
        json_t *params = json_pack("{s:s, s:i}", "exec_id", f->exec_id, "exit_code", code);
        if (params)
            abx__epp_execs_notify(f->table, "exec.exit", params, why, sizeof why);
        json_decref(params);
    }
    return 0;
}

static void *follow_main(void *arg)
{
    follow_state *f = arg;
    int rc =
        abx__envd_stream(&f->envd, "/process.Process/Start", f->user, f->req, 0, follow_event, f, NULL, NULL);
    if (f->exec_id[0])
        abx__epp_execs_end(f->table, f->exec_id,
                           rc < 0 ? "the connection to the sandbox ended" : "its stream ended");
    pthread_mutex_lock(&f->mu);
    f->done = true;
    pthread_cond_broadcast(&f->started);
    pthread_mutex_unlock(&f->mu);
    follow_unref(f);
    return NULL;
}

static int start_followed(abx_sandbox *s, json_t *req, const abx_exec_options *o, int *pid, abx_error **err)
{
    follow_state *f = calloc(1, sizeof *f);
    if (!f) {
        json_decref(req);
        return abx__error_set(err, ABX_ENOMEM, "task");
    }
    atomic_init(&f->refs, 2);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->started, NULL);
    f->req = req;
    f->table = s->ops->task_table(s, &f->client);
    snprintf(f->user, sizeof f->user, "%s", user_of(o->user) ? user_of(o->user) : "");
    snprintf(f->tag, sizeof f->tag, "%s", o->tag ? o->tag : "");
    abx__envd_init(&f->envd, s->envd.base_url, s->envd.unix_socket[0] ? s->envd.unix_socket : NULL,
                   s->envd.token);
    abx__envd_route(&f->envd, s->envd.route_id, s->envd.code_url);
    pthread_t t;
    if (!f->table || pthread_create(&t, NULL, follow_main, f) != 0) {
        atomic_store(&f->refs, 1);
        follow_unref(f);
        return abx__error_set(err, ABX_ENOMEM, "task");
    }
    pthread_detach(t);
    pthread_mutex_lock(&f->mu);
    while (!f->pid && !f->done)
        pthread_cond_wait(&f->started, &f->mu);
    *pid = f->pid > 0 ? f->pid : 0;
    pthread_mutex_unlock(&f->mu);
    follow_unref(f);
    return *pid ? 0 : abx__error_set(err, ABX_ENOTRUNNING, "the sandbox did not start the task");
}

/* envd's background start: the stream is read up to the start event
 * (follow: on, into the task table, by a thread of this process). */
static int envd_start_as(abx_sandbox *s, const char *const *argv, const char *command,
                         const abx_exec_options *opts, int *pid, bool follow, abx_error **err)
{
    const char *shell[5] = {NULL};
    if (!argv) {
        shell_argv(s, command, shell);
        argv = shell;
    }
    int rc = 0;
    json_t *req = start_request(argv, opts, true, err, &rc);
    if (rc < 0) {
        json_decref(req);
        return rc;
    }
    if (follow && s->ops->task_table) /* the sandbox keeps no output for us: this process follows it */
        return start_followed(s, req, opts, pid, err);
    abx_exec_result unused;
    memset(&unused, 0, sizeof unused);
    exec_state st = {.opts = &no_options, .result = &unused, .stop_at_start = true};
    rc = abx__envd_stream(&s->envd, "/process.Process/Start", user_of(opts->user), req, 0, exec_event, &st,
                          NULL, err);
    json_decref(req);
    if (rc < 0)
        return rc;
    if (st.pid <= 0)
        return abx__error_set(err, ABX_ENOTRUNNING, "the sandbox did not report the process");
    *pid = st.pid;
    return 0;
}

static int shim_start(abx_sandbox *s, const char *const *argv, const char *command, const abx_exec_options *o,
                      int *pid, abx_error **err)
{
    return envd_start_as(s, argv, command, o, pid, false, err);
}

static int envd_start(abx_sandbox *s, const char *const *argv, const char *command, const abx_exec_options *o,
                      int *pid, abx_error **err)
{
    return envd_start_as(s, argv, command, o, pid, true, err);
}

int abx_sandbox_start_background_argv(abx_sandbox *s, const char *const *argv, const abx_exec_options *opts,
                                      int *pid, abx_error **err)
{
    *pid = 0;
    if (!opts)
        opts = &no_options;
    if (!argv || !argv[0] || !argv[0][0])
        return abx__error_set(err, ABX_EINVAL, "command: must not be empty");
    int rc = check_user(opts->user, err);
    return rc < 0 ? rc : s->data->start(s, argv, NULL, opts, pid, err);
}

int abx_sandbox_start_background(abx_sandbox *s, const char *command, const abx_exec_options *opts, int *pid,
                                 abx_error **err)
{
    *pid = 0;
    if (!opts)
        opts = &no_options;
    if (!command || !*command)
        return abx__error_set(err, ABX_EINVAL, "command: must not be empty");
    int rc = check_user(opts->user, err);
    return rc < 0 ? rc : s->data->start(s, NULL, command, opts, pid, err);
}

static int process_call(abx_sandbox *s, const char *method, json_t *req, abx_error **err)
{
    json_t *resp = NULL;
    int rc = abx__envd_unary(&s->envd, method, NULL, req, &resp, err);
    json_decref(req);
    json_decref(resp);
    return rc;
}

static int envd_signal(abx_sandbox *s, int pid, int sig, abx_error **err)
{
    return process_call(s, "/process.Process/SendSignal",
                        json_pack("{s:{s:{s:i}}, s:i}", "process", "selector", "pid", pid, "signal", sig),
                        err);
}

/* SendInput: bytes to a process's stdin, or ("pty") to its terminal. */
static int send_input(abx_sandbox *s, int pid, const char *kind, const void *data, size_t len,
                      abx_error **err)
{
    char *enc = abx__b64_encode(data, len);
    if (!enc)
        return abx__error_set(err, ABX_ENOMEM, "input");
    int rc = process_call(
        s, "/process.Process/SendInput",
        json_pack("{s:{s:{s:i}}, s:{s:s}}", "process", "selector", "pid", pid, "input", kind, enc), err);
    free(enc);
    return rc;
}

static int envd_send_input(abx_sandbox *s, int pid, const void *data, size_t len, bool eof, abx_error **err)
{
    if (eof)
        return process_call(s, "/process.Process/CloseStdin",
                            json_pack("{s:{s:{s:i}}}", "process", "selector", "pid", pid), err);
    return send_input(s, pid, "stdin", data, len, err);
}

static int envd_pty_resize(abx_sandbox *s, int pid, unsigned rows, unsigned cols, abx_error **err)
{
    return process_call(s, "/process.Process/Update",
                        json_pack("{s:{s:{s:i}}, s:{s:{s:i, s:i}}}", "process", "selector", "pid", pid, "pty",
                                  "size", "rows", (int)rows, "cols", (int)cols),
                        err);
}

static int envd_list_processes(abx_sandbox *s, char **json, abx_error **err)
{
    json_t *resp = NULL;
    int rc = abx__envd_unary(&s->envd, "/process.Process/List", NULL, NULL, &resp, err);
    if (rc < 0)
        return rc;
    json_t *list = json_object_get(resp, "processes");
    *json = list ? json_dumps(list, JSON_COMPACT) : strdup("[]");
    json_decref(resp);
    return *json ? 0 : abx__error_set(err, ABX_ENOMEM, "processes");
}

/* A slot the sandbox's data plane leaves empty. */
static int cannot(const abx_sandbox *s, const char *what, abx_error **err)
{
    return abx__error_set(err, ABX_ENOTSUP, "%s: provider '%s' cannot", what, s->ops->name);
}

int abx_sandbox_signal(abx_sandbox *s, int pid, int sig, abx_error **err)
{
    if (pid <= 0 || sig <= 0 || sig >= 65)
        return abx__error_set(err, ABX_EINVAL,
                              "signal: expected a process id and a signal number from 1 to 64");
    return s->data->signal ? s->data->signal(s, pid, sig, err) : cannot(s, "signals", err);
}

int abx_sandbox_send_stdin(abx_sandbox *s, int pid, const void *data, size_t len, abx_error **err)
{
    return s->data->send_input ? s->data->send_input(s, pid, data, len, false, err) : cannot(s, "stdin", err);
}

int abx_sandbox_close_stdin(abx_sandbox *s, int pid, abx_error **err)
{
    return s->data->send_input ? s->data->send_input(s, pid, "", 0, true, err) : cannot(s, "stdin", err);
}

int abx_sandbox_pty_resize(abx_sandbox *s, int pid, unsigned rows, unsigned cols, abx_error **err)
{
    return s->data->pty_resize ? s->data->pty_resize(s, pid, rows, cols, err) : cannot(s, "terminals", err);
}

int abx_sandbox_list_processes(abx_sandbox *s, char **json, abx_error **err)
{
    *json = NULL;
    return s->data->list_processes ? s->data->list_processes(s, json, err)
                                   : cannot(s, "listing processes", err);
}

void abx_process_output_clear(abx_process_output *o)
{
    if (!o)
        return;
    free(o->stdout_data);
    free(o->stderr_data);
    memset(o, 0, sizeof *o);
}

int abx_sandbox_read_output(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                            unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                            abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (pid <= 0)
        return abx__error_set(err, ABX_EINVAL, "task: expected a process id");
    return s->data->read_output
               ? s->data->read_output(s, pid, stdout_offset, stderr_offset, wait_ms, out, err)
               : cannot(s, "reading a task's buffered output", err);
}

bool abx_sandbox_tasks_outlive_client(const abx_sandbox *s)
{
    return s && s->data->tasks_outlive_client;
}

bool abx_sandbox_has_code_interpreter(const abx_sandbox *s)
{
    return s && s->data->code_interpreter;
}

/* ---- background output: the shim's rings, or what this process follows ---------------- */

/* The shim keeps each process's last output in rings, read by offset
 * (GET /abx/output: abx's own extension of envd). */
static int shim_read_output(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                            unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                            abx_error **err)
{
    char path[200];
    snprintf(path, sizeof path, "/abx/output?pid=%d&stdout_offset=%llu&stderr_offset=%llu&wait=%u", pid,
             stdout_offset, stderr_offset, wait_ms > 600000 ? 600000 : wait_ms);
    json_t *doc = NULL;
    int rc = abx__envd_json(&s->envd, "GET", path, NULL, &doc, err);
    if (rc < 0)
        return rc;
    out->pid = pid;
    out->running = strcmp(json_string_value(json_object_get(doc, "status")) ?: "", "running") == 0;
    out->exit_code = out->running ? 0 : (int)json_integer_value(json_object_get(doc, "exit_code"));
    out->stdout_offset = (unsigned long long)json_integer_value(json_object_get(doc, "stdout_offset"));
    out->stderr_offset = (unsigned long long)json_integer_value(json_object_get(doc, "stderr_offset"));
    out->truncated = json_is_true(json_object_get(doc, "stdout_truncated")) ||
                     json_is_true(json_object_get(doc, "stderr_truncated"));
    out->stdout_data =
        abx__b64_decode_or_empty(json_string_value(json_object_get(doc, "stdout")), &out->stdout_len);
    out->stderr_data =
        abx__b64_decode_or_empty(json_string_value(json_object_get(doc, "stderr")), &out->stderr_len);
    json_decref(doc);
    if (!out->stdout_data || !out->stderr_data) {
        abx_process_output_clear(out);
        return abx__error_set(err, ABX_ENOMEM, "output");
    }
    return 0;
}

int abx__data_followed_output(abx_sandbox *s, int pid, unsigned long long so, unsigned long long se,
                              unsigned wait_ms, abx_process_output *out, abx_error **err)
{
    if (!s->ops->task_table)
        return cannot(s, "reading a task's buffered output", err);
    abx_client *ref = NULL;
    abx_epp_execs *table = s->ops->task_table(s, &ref);
    char why[200] = "";
    int rc = table ? abx__epp_execs_read(table, NULL, pid, so, se, wait_ms > 600000 ? 600000 : wait_ms, out,
                                         why, sizeof why)
                   : -ABX_ENOMEM;
    abx_client_free(ref);
    if (rc == -ABX_EPROVIDER) { /* what came stays readable; the end is unknown */
        out->running = false;
        out->exit_code = -1;
        return 0;
    }
    if (rc == -ABX_ENOTASK)
        return abx__error_set(err, ABX_ENOTASK,
                              "no task %d here: a task's output is kept by the abx process that "
                              "started it (one MCP session)",
                              pid);
    return rc < 0 ? abx__error_set(err, -rc, "task output") : 0;
}

/* ---- code ---------------------------------------------------------------- */

static bool code_should_cancel(void *ud)
{
    const abx_code_options *o = ud;
    return o->should_cancel(o->userdata);
}

int abx_sandbox_run_code(abx_sandbox *s, const char *code, const abx_code_options *opts, abx_code_result *out,
                         abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!code)
        return abx__error_set(err, ABX_EINVAL, "code: required");
    if (!s->data->code_interpreter)
        return cannot(s, "a code interpreter", err);
    int rc = 0;
    json_t *req = abx__code_request(code, opts, err, &rc);
    if (!req)
        return rc;
    char *answer = NULL;
    size_t len = 0;
    bool cancellable = opts && opts->should_cancel;
    rc = abx__envd_post_raw(&s->envd, "/execute", NULL, req, cancellable ? code_should_cancel : NULL,
                            cancellable ? (void *)opts : NULL, &answer, &len, err);
    json_decref(req);
    if (rc < 0)
        return rc;
    rc = abx__code_parse_answer(answer, len, out);
    free(answer);
    return rc < 0 ? abx__error_set(err, -rc, "reading the answer") : 0;
}

/* ---- files -------------------------------------------------------------- */

typedef struct mem_reader {
    const char *data;
    size_t len, pos;
} mem_reader;

static size_t mem_read(char *buf, size_t len, void *ud)
{
    mem_reader *m = ud;
    size_t n = m->len - m->pos < len ? m->len - m->pos : len;
    memcpy(buf, m->data + m->pos, n);
    m->pos += n;
    return n;
}

/* The user and the path every file call takes. */
static int check_file_args(const char *user, const char *path, abx_error **err)
{
    int rc = check_user(user, err);
    if (rc < 0)
        return rc;
    if (!path || !*path)
        return abx__error_set(err, ABX_EINVAL, "path: must not be empty");
    return 0;
}

/* ---- files over envd ------------------------------------------------------- */

static int envd_upload(abx_sandbox *s, const char *path, const char *user, abx_envd_read_fn fn, void *ud,
                       long long size, abx_error **err)
{
    return abx__envd_upload(&s->envd, path, user_of(user), fn, ud, size, err);
}

static int envd_download(abx_sandbox *s, const char *path, const char *user, abx_envd_range *range,
                         abx_envd_write_fn fn, void *ud, abx_error **err)
{
    return range ? abx__envd_download_range(&s->envd, path, user_of(user), range, fn, ud, err)
                 : abx__envd_download(&s->envd, path, user_of(user), fn, ud, err);
}

static int envd_fs(abx_sandbox *s, const char *method, const char *user, json_t *req, json_t **resp,
                   abx_error **err)
{
    int rc = abx__envd_unary(&s->envd, method, user_of(user), req, resp, err);
    json_decref(req);
    return rc;
}

int abx_sandbox_write_file(abx_sandbox *s, const char *path, const void *data, size_t len, const char *user,
                           abx_error **err)
{
    int rc = check_file_args(user, path, err);
    if (rc < 0)
        return rc;
    mem_reader m = {data, len, 0};
    return s->data->upload(s, path, user, mem_read, &m, (long long)len, err);
}

#define HOLE_BLOCK 4096

typedef struct fd_io {
    int fd;
    unsigned long long bytes; /* written or skipped, pending not counted */
    bool failed;
    bool sparse;    /* downloads into a regular file: whole zero blocks become holes */
    size_t pending; /* sparse: the start of the next block, gathered across pieces */
    char block[HOLE_BLOCK];
} fd_io;

static bool all_zero(const char *p, size_t n)
{
    return n > 0 && p[0] == 0 && memcmp(p, p + 1, n - 1) == 0;
}

static size_t fd_read(char *buf, size_t len, void *ud)
{
    fd_io *f = ud;
    ssize_t n;
    do
        n = read(f->fd, buf, len);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        f->failed = true;
        return ABX_ENVD_READ_ABORT;
    }
    f->bytes += (unsigned long long)n;
    return (size_t)n;
}

int abx_sandbox_write_file_from_fd(abx_sandbox *s, const char *path, int fd, const char *user,
                                   unsigned long long *written, abx_error **err)
{
    int rc = check_file_args(user, path, err);
    if (rc < 0)
        return rc;
    struct stat st;
    long long size = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    fd_io f = {.fd = fd};
    rc = s->data->upload(s, path, user, fd_read, &f, size, err);
    if (rc == 0 && f.failed)
        rc = abx__error_errno(err, ABX_EIO, errno, "reading the local file");
    if (written)
        *written = f.bytes;
    return rc;
}

/* A read into memory, bounded by what the caller asked for. */
typedef struct mem_writer {
    abx_buf b;
    bool too_big;
} mem_writer;

static size_t mem_write(const char *bytes, size_t len, void *ud)
{
    mem_writer *m = ud;
    int rc = abx__buf_append(&m->b, bytes, len);
    m->too_big |= rc == -ABX_ETOOBIG;
    return rc == 0 ? len : 0;
}

/* Hands what a read gathered to the caller (an empty string for an empty
 * file), or frees it when the read failed (rc < 0). */
static int take_read(mem_writer *m, int rc, char **data, size_t *len, abx_error **err)
{
    if (rc < 0) {
        abx__buf_free(&m->b);
        return rc;
    }
    *data = abx__buf_take(&m->b, len);
    return *data ? 0 : abx__error_set(err, ABX_ENOMEM, "file");
}

int abx_sandbox_read_file(abx_sandbox *s, const char *path, const char *user, size_t max_len, char **data,
                          size_t *len, abx_error **err)
{
    *data = NULL;
    *len = 0;
    int rc = check_file_args(user, path, err);
    if (rc < 0)
        return rc;
    mem_writer m = {0};
    abx__buf_init(&m.b, max_len);
    rc = s->data->download(s, path, user, NULL, mem_write, &m, err);
    if (m.too_big) {
        abx_error_free(err ? *err : NULL);
        if (err)
            *err = NULL;
        abx__buf_free(&m.b);
        return abx__error_set(err, ABX_ETOOBIG, "the file is larger than %zu bytes", max_len);
    }
    return take_read(&m, rc, data, len, err);
}

int abx_sandbox_read_file_range(abx_sandbox *s, const char *path, const char *user, unsigned long long offset,
                                size_t length, char **data, size_t *len, unsigned long long *file_size,
                                abx_error **err)
{
    *data = NULL;
    *len = 0;
    *file_size = 0;
    int rc = check_file_args(user, path, err);
    if (rc < 0)
        return rc;
    if (length == 0)
        return abx__error_set(err, ABX_EINVAL, "length: must be at least 1");
    mem_writer m = {0};
    abx__buf_init(&m.b, length);
    abx_envd_range range = {.offset = offset, .length = length};
    rc = s->data->download(s, path, user, &range, mem_write, &m, err);
    *file_size = range.file_size >= 0 ? (unsigned long long)range.file_size : offset + m.b.len;
    return take_read(&m, rc, data, len, err);
}

/* One whole block of a sparse download: a hole when it is all zeros. */
static int put_block(fd_io *f, const char *block)
{
    int rc = all_zero(block, HOLE_BLOCK) ? (lseek(f->fd, HOLE_BLOCK, SEEK_CUR) < 0 ? -1 : 0)
                                         : abx__write_all(f->fd, block, HOLE_BLOCK);
    if (rc == 0)
        f->bytes += HOLE_BLOCK;
    return rc;
}

/* Writes a download to f->fd. Into a regular file, every whole aligned
 * block of zeros is skipped with lseek, so a sparse file in the sandbox
 * (truncate -s 100G) stays sparse on the host instead of filling its disk;
 * a block split between two pieces is gathered first (pieces fall where
 * the transport cuts them). flush_pending writes the last part block;
 * abx_sandbox_read_file_to_fd sets the final size. */
static size_t fd_write(const char *bytes, size_t len, void *ud)
{
    fd_io *f = ud;
    if (!f->sparse) {
        if (abx__write_all(f->fd, bytes, len) < 0) {
            f->failed = true;
            return 0;
        }
        f->bytes += len;
        return len;
    }
    for (size_t done = 0; done < len;) {
        size_t take = len - done < HOLE_BLOCK - f->pending ? len - done : HOLE_BLOCK - f->pending;
        int rc = 0;
        if (f->pending == 0 && take == HOLE_BLOCK) {
            rc = put_block(f, bytes + done);
        } else {
            memcpy(f->block + f->pending, bytes + done, take);
            f->pending += take;
            if (f->pending == HOLE_BLOCK) {
                f->pending = 0;
                rc = put_block(f, f->block);
            }
        }
        if (rc < 0) {
            f->failed = true;
            return 0;
        }
        done += take;
    }
    return len;
}

static int flush_pending(fd_io *f)
{
    if (f->pending == 0)
        return 0;
    if (abx__write_all(f->fd, f->block, f->pending) < 0)
        return -1;
    f->bytes += f->pending;
    f->pending = 0;
    return 0;
}

int abx_sandbox_read_file_to_fd(abx_sandbox *s, const char *path, int fd, const char *user,
                                unsigned long long *read_bytes, abx_error **err)
{
    int rc = check_file_args(user, path, err);
    if (rc < 0)
        return rc;
    struct stat st;
    fd_io f = {.fd = fd, .sparse = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0};
    rc = s->data->download(s, path, user, NULL, fd_write, &f, err);
    if (rc == 0 && flush_pending(&f) < 0)
        rc = abx__error_errno(err, ABX_EIO, errno, "writing the downloaded file");
    if (rc == 0 && f.sparse && ftruncate(fd, (off_t)f.bytes) < 0)
        rc = abx__error_errno(err, ABX_EIO, errno, "setting the downloaded file's size");
    if (read_bytes)
        *read_bytes = f.bytes;
    return rc;
}

static int fs_call(abx_sandbox *s, const char *method, const char *user, json_t *req, json_t **resp,
                   abx_error **err)
{
    int rc = check_user(user, err);
    if (rc < 0) {
        json_decref(req);
        return rc;
    }
    return s->data->fs(s, method, user, req, resp, err);
}

/* One envd EntryInfo in abx's own JSON style (snake_case, numbers as
 * numbers, plain enums): the envd wire keeps E2B's shapes, abx's API and
 * output do not. Returns a new reference. */
static json_t *entry_from_envd(json_t *e)
{
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *size = json_string_value(json_object_get(e, "size"));
    json_t *target = json_object_get(e, "symlinkTarget");
    json_t *out = json_pack(
        "{s:O?, s:s, s:O?, s:I, s:O?, s:O?, s:O?, s:O?, s:O?}", "name", json_object_get(e, "name"), "type",
        target                                             ? "symlink"
        : type && strcmp(type, "FILE_TYPE_DIRECTORY") == 0 ? "dir"
                                                           : "file",
        "path", json_object_get(e, "path"), "size",
        (json_int_t)(size ? strtoll(size, NULL, 10) : json_integer_value(json_object_get(e, "size"))), "mode",
        json_object_get(e, "mode"), "permissions", json_object_get(e, "permissions"), "owner",
        json_object_get(e, "owner"), "group", json_object_get(e, "group"), "modified_time",
        json_object_get(e, "modifiedTime"));
    if (out && target) {
        json_object_set(out, "symlink_target", target);
        json_object_set_new(out, "target_type",
                            json_string(type && strcmp(type, "FILE_TYPE_DIRECTORY") == 0 ? "dir" : "file"));
    }
    return out;
}

int abx_sandbox_list_files(abx_sandbox *s, const char *path, unsigned depth, const char *user, char **json,
                           abx_error **err)
{
    json_t *resp = NULL;
    int rc = fs_call(
        s, "/filesystem.Filesystem/ListDir", user,
        json_pack("{s:s, s:i}", "path", path && *path ? path : "/", "depth", (int)(depth ? depth : 1)), &resp,
        err);
    if (rc < 0)
        return rc;
    json_t *entries = json_object_get(resp, "entries"), *list = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) json_array_append_new(list, entry_from_envd(e));
    *json = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    json_decref(resp);
    if (!*json)
        return abx__error_set(err, ABX_ENOMEM, "listing");
    return 0;
}

int abx_sandbox_stat(abx_sandbox *s, const char *path, const char *user, char **json, abx_error **err)
{
    if (!path || !*path)
        return abx__error_set(err, ABX_EINVAL, "path: must not be empty");
    json_t *resp = NULL;
    int rc = fs_call(s, "/filesystem.Filesystem/Stat", user, json_pack("{s:s}", "path", path), &resp, err);
    if (rc < 0)
        return rc;
    json_t *entry = entry_from_envd(json_object_get(resp, "entry"));
    *json = json_dumps(entry, JSON_COMPACT);
    json_decref(entry);
    json_decref(resp);
    if (!*json)
        return abx__error_set(err, ABX_ENOMEM, "stat");
    return 0;
}

int abx_sandbox_mkdir(abx_sandbox *s, const char *path, const char *user, bool *created, abx_error **err)
{
    if (!path || !*path)
        return abx__error_set(err, ABX_EINVAL, "path: must not be empty");
    json_t *resp = NULL;
    abx_error *local_err = NULL;
    int rc = fs_call(s, "/filesystem.Filesystem/MakeDir", user, json_pack("{s:s}", "path", path), &resp,
                     &local_err);
    json_decref(resp);
    if (created)
        *created = rc == 0;
    if (rc < 0 && abx_error_code(local_err) == ABX_EINVAL &&
        strstr(abx_error_message(local_err), "already exists")) {
        abx_error_free(local_err);
        return 0;
    }
    if (rc < 0) {
        if (err)
            *err = local_err;
        else
            abx_error_free(local_err);
    }
    return rc;
}

int abx_sandbox_remove(abx_sandbox *s, const char *path, const char *user, abx_error **err)
{
    if (!path || !*path)
        return abx__error_set(err, ABX_EINVAL, "path: must not be empty");
    json_t *resp = NULL;
    int rc = fs_call(s, "/filesystem.Filesystem/Remove", user, json_pack("{s:s}", "path", path), &resp, err);
    json_decref(resp);
    return rc;
}

int abx_sandbox_move(abx_sandbox *s, const char *from, const char *to, const char *user, abx_error **err)
{
    if (!from || !*from || !to || !*to)
        return abx__error_set(err, ABX_EINVAL, "source and destination: must not be empty");
    json_t *resp = NULL;
    int rc = fs_call(s, "/filesystem.Filesystem/Move", user,
                     json_pack("{s:s, s:s}", "source", from, "destination", to), &resp, err);
    json_decref(resp);
    return rc;
}

/* ---- the planes ------------------------------------------------------------------------ */

const abx_data_plane abx__data_shim = {
    .name = "shim",
    .code_interpreter = true,
    .tasks_outlive_client = true,
    .exec = envd_exec,
    .start = shim_start,
    .read_output = shim_read_output,
    .signal = envd_signal,
    .send_input = envd_send_input,
    .pty_resize = envd_pty_resize,
    .list_processes = envd_list_processes,
    .upload = envd_upload,
    .download = envd_download,
    .fs = envd_fs,
};

const abx_data_plane abx__data_envd = {
    .name = "envd",
    .code_interpreter = true,
    .tasks_outlive_client = true,
    .exec = envd_exec,
    .start = envd_start,
    .read_output = abx__data_followed_output,
    .signal = envd_signal,
    .send_input = envd_send_input,
    .pty_resize = envd_pty_resize,
    .list_processes = envd_list_processes,
    .upload = envd_upload,
    .download = envd_download,
    .fs = envd_fs,
};
