/* shim_proc.c: the shim's process table.
 *
 * Owns: starting processes through init (one spawn request per process,
 * with its three pipes), the table of processes and their bounded output
 * (the last 1 MiB per stream, readable by absolute offset, with a
 * truncation flag), a stream saved whole to a file in the sandbox when its
 * starter asked (save_after), stdin, signals, and what a finished process
 * reports.
 * Does not own HTTP or the event loop (shim_http.c, shim.c).
 *
 * A process's life: PENDING (spawn sent; held in a reply slot) -> RUNNING
 * (the event loop got "spawned" and put it in the table) -> EXITED (init
 * reported its wait status) -> FINISHED (its pipes reached EOF, or 100 ms
 * passed since the exit while a descendant still holds them).
 */
#include "shim.h"
#include "error_internal.h"
#include "init_proto.h"
#include "sandbox_env.h"
#include "shim_files.h"
#include "sysutil.h"
#include "bounds.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FINISH_GRACE_MS 100
#define SPAWN_WAIT_S 15
#define SHIM_READ_CHUNK 65536

/* Bytes waiting in a pipe the event loop has not read yet. */
static bool pipe_has_data(int fd)
{
    int n = 0;
    return fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

bool abx__shim_proc_finished_locked(const shim_proc *p)
{
    if (!p->exited)
        return false;
    if (p->out_fd < 0 && p->err_fd < 0)
        return true;
    /* a paused pipe still holds output a stream is waiting for, and so does
     * one the event loop has not drained yet (a busy host can take longer
     * than the grace to get to it): only an idle pipe that a descendant
     * keeps open is given up on after the grace */
    return !p->paused && !pipe_has_data(p->out_fd) && !pipe_has_data(p->err_fd) &&
           abx__shim_now_ms() - p->exited_at_ms >= FINISH_GRACE_MS;
}

bool abx__shim_stream_attach_locked(shim *sh, int pid, const uint64_t *out_off, const uint64_t *err_off)
{
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    if (!p || p->nstreams >= ABX_SHIM_MAX_STREAMS)
        return false;
    p->stream_out[p->nstreams] = out_off;
    p->stream_err[p->nstreams] = err_off;
    p->nstreams++;
    p->awaiting_stream = false;
    return true;
}

void abx__shim_stream_detach_locked(shim *sh, int pid, const uint64_t *out_off)
{
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    for (int i = 0; p && i < p->nstreams; i++) {
        if (p->stream_out[i] == out_off) {
            p->nstreams--;
            p->stream_out[i] = p->stream_out[p->nstreams];
            p->stream_err[i] = p->stream_err[p->nstreams];
            break;
        }
    }
    abx__shim_wake(sh);
}

size_t abx__shim_proc_read_room_locked(shim_proc *p, bool err_stream)
{
    const abx_ring *b = err_stream ? &p->err : &p->out;
    size_t room = SHIM_READ_CHUNK, cap = abx__ring_capacity(b);
    if (p->awaiting_stream) /* as a stream at offset 0 would */
        room = b->total < cap ? (cap - (size_t)b->total < room ? cap - (size_t)b->total : room) : 0;
    for (int i = 0; i < p->nstreams; i++) {
        uint64_t lag = b->total - *(err_stream ? p->stream_err[i] : p->stream_out[i]);
        size_t free_bytes = lag < cap ? cap - (size_t)lag : 0;
        if (free_bytes < room)
            room = free_bytes;
    }
    return room;
}

void abx__shim_proc_end_fields(const shim_proc *p, int *exit_code, bool *exited, char *status, size_t len)
{
    int w = p->wait_status;
    if (WIFSIGNALED(w)) {
        *exit_code = -1;
        *exited = false;
        char name[64];
        snprintf(name, sizeof name, "%s", strsignal(WTERMSIG(w)));
        for (char *c = name; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        snprintf(status, len, "signal: %s", name);
    } else {
        *exit_code = WEXITSTATUS(w);
        *exited = true;
        snprintf(status, len, "exit status %d", *exit_code);
    }
}

void abx__shim_proc_free(shim_proc *p)
{
    if (!p)
        return;
    if (p->stdin_fd >= 0)
        close(p->stdin_fd);
    if (p->out_fd >= 0)
        close(p->out_fd);
    if (p->err_fd >= 0)
        close(p->err_fd);
    for (int i = 0; i < 2; i++)
        if (p->save_fd[i] >= 0)
            close(p->save_fd[i]);
    if (p->pty_master >= 0)
        close(p->pty_master);
    abx__ring_release(&p->out);
    abx__ring_release(&p->err);
    json_decref(p->config);
    free(p);
}

shim_proc *abx__shim_proc_find_locked(shim *sh, int pid, const char *tag)
{
    for (int i = sh->nprocs - 1; i >= 0; i--) {
        shim_proc *p = sh->procs[i];
        if (pid > 0 ? p->pid == pid : (tag && strcmp(p->tag, tag) == 0))
            return p;
    }
    return NULL;
}

/* Makes room in the table by forgetting the oldest finished process. */
static bool make_room_locked(shim *sh)
{
    if (sh->nprocs < ABX_SHIM_MAX_PROCS)
        return true;
    for (int i = 0; i < sh->nprocs; i++) {
        if (abx__shim_proc_finished_locked(sh->procs[i]) && sh->procs[i]->nstreams == 0) {
            abx__shim_proc_free(sh->procs[i]);
            memmove(&sh->procs[i], &sh->procs[i + 1], (size_t)(sh->nprocs - i - 1) * sizeof sh->procs[0]);
            sh->nprocs--;
            return true;
        }
    }
    return false;
}

static int send_spawn(shim *sh, json_t *msg, const int fds[3])
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return -ABX_ENOMEM;
    if (strlen(text) > ABX_INIT_MSG_MAX) {
        free(text);
        return -ABX_ETOOBIG;
    }
    pthread_mutex_lock(&sh->mu);
    sh->spawned = true; /* a claim now has something to end (abx__shim_claim) */
    pthread_mutex_unlock(&sh->mu);
    struct iovec iov = {text, strlen(text)};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(3 * sizeof(int))];
    } ctrl;
    memset(&ctrl, 0, sizeof ctrl);
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctrl, .msg_controllen = sizeof ctrl};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(3 * sizeof(int));
    memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
    ssize_t n;
    do
        n = sendmsg(sh->jail.control_fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    free(text);
    return n < 0 ? -ABX_ENOTRUNNING : 0;
}

static json_t *build_env(shim *sh, const shim_start_request *req)
{
    json_t *env = json_array();
    abx_sandbox_env base;
    if (abx__sandbox_env_init(&base, sh->id, req->uid == 0, NULL, NULL) < 0)
        return env;
    const char *k;
    json_t *v;
    json_object_foreach(sh->template_env, k, v)
    {
        char pair[4096];
        snprintf(pair, sizeof pair, "%s=%s", k, json_string_value(v));
        abx__sandbox_env_put(&base, pair, NULL);
    }
    json_object_foreach(sh->envs, k, v)
    {
        char pair[4096];
        snprintf(pair, sizeof pair, "%s=%s", k, json_string_value(v));
        abx__sandbox_env_put(&base, pair, NULL);
    }
    if (req->envs) {
        json_object_foreach(req->envs, k, v)
        {
            char pair[4096];
            snprintf(pair, sizeof pair, "%s=%s", k, json_string_value(v));
            abx__sandbox_env_put(&base, pair, NULL);
        }
    }
    for (int i = 0; i < base.n; i++)
        json_array_append_new(env, json_string(base.vars[i]));
    abx__sandbox_env_free(&base);
    return env;
}

static int alloc_reply_locked(shim *sh, unsigned *seq)
{
    for (size_t i = 0; i < sizeof sh->replies / sizeof sh->replies[0]; i++) {
        if (sh->replies[i].seq == 0) {
            *seq = ++sh->next_seq ? sh->next_seq : ++sh->next_seq;
            sh->replies[i] = (shim_reply){.seq = *seq};
            return (int)i;
        }
    }
    return -1;
}

static json_t *wait_reply(shim *sh, int slot)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += SPAWN_WAIT_S;
    pthread_mutex_lock(&sh->mu);
    while (!sh->replies[slot].done && !sh->ending)
        if (pthread_cond_timedwait(&sh->cv, &sh->mu, &deadline) == ETIMEDOUT)
            break;
    json_t *msg = sh->replies[slot].msg;
    sh->replies[slot] = (shim_reply){0};
    pthread_mutex_unlock(&sh->mu);
    return msg;
}

static shim_proc *proc_new(shim *sh, const shim_start_request *req, json_t *msg);
static int spawn_and_wait(shim *sh, shim_proc *p, json_t *msg, const int child_fds[3], abx_error **err);
static int start_pty(shim *sh, const shim_start_request *req, json_t *msg, abx_error **err);

/* A template whose config sets PATH (Docker's ENV PATH) runs its commands
 * with that PATH, as docker exec does: a login shell (bash -l -c, how
 * E2B's clients and libabx send a command line) would let Debian's
 * /etc/profile reset it, so such a shell is not a login one there. */
static void keep_template_path(const shim *sh, json_t *argv)
{
    const char *cmd = json_string_value(json_array_get(argv, 0));
    size_t n = cmd ? strlen(cmd) : 0;
    bool bash = n >= 4 && strcmp(cmd + n - 4, "bash") == 0 && (n == 4 || cmd[n - 5] == '/');
    if (bash && json_object_get(sh->template_env, "PATH") && json_array_size(argv) >= 3 &&
        strcmp(json_string_value(json_array_get(argv, 1)) ?: "", "-l") == 0 &&
        strcmp(json_string_value(json_array_get(argv, 2)) ?: "", "-c") == 0)
        json_array_remove(argv, 1);
}

int abx__shim_proc_start(shim *sh, const shim_start_request *req, abx_error **err)
{
    if (!req->cmd || !*req->cmd)
        return abx__error_set(err, ABX_EINVAL, "process.cmd: required");
    json_t *argv = json_array();
    json_array_append_new(argv, json_string(req->cmd));
    size_t i;
    json_t *a;
    json_array_foreach(req->args, i, a) json_array_append(argv, a);
    keep_template_path(sh, argv);
    const char *home = sh->template_workdir[0]                          ? sh->template_workdir
                       : req->default_cwd && req->default_cwd[0] == '/' ? req->default_cwd
                       : req->uid == 0                                  ? "/root"
                                                                        : "/home/user";
    json_t *msg =
        json_pack("{s:s, s:o, s:o, s:s, s:i}", "op", "spawn", "argv", argv, "env", build_env(sh, req), "cwd",
                  req->cwd && *req->cwd ? req->cwd : home, "uid", (int)req->uid);
    if (req->pty)
        return start_pty(sh, req, msg, err);
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        int e = errno;
        for (int k = 0; k < 2; k++) {
            if (in[k] >= 0)
                close(in[k]);
            if (out[k] >= 0)
                close(out[k]);
            if (errp[k] >= 0)
                close(errp[k]);
        }
        json_decref(msg);
        return abx__error_errno(err, ABX_ELIMIT, e, "pipes for the process");
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(errp[0], F_SETFL, O_NONBLOCK);
    shim_proc *p = proc_new(sh, req, msg);
    if (!p) {
        for (int k = 0; k < 2; k++) {
            close(in[k]);
            close(out[k]);
            close(errp[k]);
        }
        json_decref(msg);
        return abx__error_set(err, ABX_ENOMEM, "process");
    }
    p->stdin_fd = in[1];
    p->out_fd = out[0];
    p->err_fd = errp[0];
    if (!req->stdin_open) {
        close(p->stdin_fd);
        p->stdin_fd = -1;
    }
    int child_fds[3] = {in[0], out[1], errp[1]};
    int rc = spawn_and_wait(sh, p, msg, child_fds, err);
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    json_decref(msg);
    return rc;
}

/* A process with a pseudo-terminal (E2B's pty.create, `abx exec -t`): its
 * stdin, stdout and stderr are the slave, which init makes its controlling
 * terminal; our side (the master) gives its output, takes its input, and
 * resizes it. The terminal's one stream is the process's stdout. */
static int start_pty(shim *sh, const shim_start_request *req, json_t *msg, abx_error **err)
{
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[64];
    int slave = -1;
    if (master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 &&
        ptsname_r(master, name, sizeof name) == 0)
        slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    struct winsize ws = {.ws_row = (unsigned short)(req->rows ? req->rows : 24),
                         .ws_col = (unsigned short)(req->cols ? req->cols : 80)};
    shim_proc *p = slave >= 0 && ioctl(master, TIOCSWINSZ, &ws) == 0 ? proc_new(sh, req, msg) : NULL;
    if (!p) {
        int e = errno;
        if (master >= 0)
            close(master);
        if (slave >= 0)
            close(slave);
        json_decref(msg);
        return abx__error_errno(err, ABX_ELIMIT, e, "a pseudo-terminal for the process");
    }
    fcntl(master, F_SETFL, O_NONBLOCK);
    p->out_fd = master;
    p->err_fd = -1;
    p->stdin_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
    p->pty_master = fcntl(master, F_DUPFD_CLOEXEC, 3);
    if (p->stdin_fd >= 0) /* input writes wait for room, as a pipe's do */
        fcntl(p->stdin_fd, F_SETFL, 0);
    json_object_set_new(msg, "pty", json_true());
    int child_fds[3] = {slave, slave, slave};
    int rc = spawn_and_wait(sh, p, msg, child_fds, err);
    close(slave);
    json_decref(msg);
    return rc;
}

int abx__shim_proc_resize(shim *sh, int pid, unsigned rows, unsigned cols)
{
    if (rows == 0 || cols == 0 || rows > 10000 || cols > 10000)
        return -ABX_EINVAL;
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    int rc = !p ? -ABX_ENOTFOUND : p->pty_master < 0 ? -ABX_ENOTSUP : 0;
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    if (rc == 0 && ioctl(p->pty_master, TIOCSWINSZ, &ws) < 0)
        rc = -ABX_EIO;
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

/* A new process record for req (spawn sent later); takes nothing. */
static shim_proc *proc_new(shim *sh, const shim_start_request *req, json_t *msg)
{
    shim_proc *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->out.pool = p->err.pool = &sh->ring_pool;
    p->awaiting_stream = req->streamed;
    p->uid = req->uid;
    p->save_after = req->save_after;
    p->save_fd[0] = p->save_fd[1] = -1;
    p->stdin_fd = p->out_fd = p->err_fd = p->pty_master = -1;
    snprintf(p->tag, sizeof p->tag, "%s", req->tag ? req->tag : "");
    p->config = json_pack("{s:s, s:o, s:o, s:s}", "cmd", req->cmd, "args",
                          req->args ? json_incref(req->args) : json_array(), "envs",
                          req->envs ? json_incref(req->envs) : json_object(), "cwd",
                          json_string_value(json_object_get(msg, "cwd")));
    return p;
}

/* Sends the spawn for p (the child's fds: child_fds, which the caller
 * closes) and waits for init's answer; the pid, or -ABX_E* with p freed. */
static int spawn_and_wait(shim *sh, shim_proc *p, json_t *msg, const int child_fds[3], abx_error **err)
{
    pthread_mutex_lock(&sh->mu);
    unsigned seq = 0;
    int slot = make_room_locked(sh) ? alloc_reply_locked(sh, &seq) : -1;
    pthread_mutex_unlock(&sh->mu);
    int rc = 0;
    if (slot < 0) {
        rc = abx__error_set(err, ABX_ELIMIT, "too many processes in this sandbox (at most %d tracked)",
                            ABX_SHIM_MAX_PROCS);
    } else {
        json_object_set_new(msg, "seq", json_integer(seq));
        pthread_mutex_lock(&sh->mu);
        sh->replies[slot].pending = p; /* the event loop registers it on "spawned" */
        pthread_mutex_unlock(&sh->mu);
        rc = send_spawn(sh, msg, child_fds);
        if (rc < 0)
            rc = abx__error_set(err, -rc, "the sandbox is not running");
    }
    if (slot < 0 || rc < 0) {
        if (slot >= 0) {
            pthread_mutex_lock(&sh->mu);
            sh->replies[slot] = (shim_reply){0};
            pthread_mutex_unlock(&sh->mu);
        }
        abx__shim_proc_free(p);
        return rc;
    }
    json_t *reply = wait_reply(sh, slot);
    if (!reply)
        return abx__error_set(err, ABX_ENOTRUNNING, "the sandbox did not start the process");
    int pid = (int)json_integer_value(json_object_get(reply, "pid"));
    int code = (int)json_integer_value(json_object_get(reply, "code"));
    if (code != 0) {
        rc = abx__error_set(err, code, "%s", json_string_value(json_object_get(reply, "message")));
        json_decref(reply);
        return rc;
    }
    json_decref(reply);
    return pid;
}

int abx__shim_kill_all(shim *sh, abx_error **err)
{
    pthread_mutex_lock(&sh->mu);
    unsigned seq = 0;
    int slot = alloc_reply_locked(sh, &seq);
    pthread_mutex_unlock(&sh->mu);
    if (slot < 0)
        return abx__error_set(err, ABX_ELIMIT, "the sandbox's init is busy");
    json_t *msg = json_pack("{s:s, s:i}", "op", "killall", "seq", (int)seq);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    ssize_t n = -1;
    if (text) {
        do
            n = send(sh->jail.control_fd, text, strlen(text), MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
    }
    free(text);
    if (n < 0) {
        pthread_mutex_lock(&sh->mu);
        sh->replies[slot] = (shim_reply){0};
        pthread_mutex_unlock(&sh->mu);
        return abx__error_set(err, ABX_ENOTRUNNING, "the sandbox is not running");
    }
    json_t *reply = wait_reply(sh, slot);
    json_decref(reply);
    return reply ? 0 : abx__error_set(err, ABX_ENOTRUNNING, "the sandbox's init did not answer");
}

/* The event loop: a message from init. */
void abx__shim_on_init_message(shim *sh, json_t *msg)
{
    const char *op = json_string_value(json_object_get(msg, "op"));
    if (!op)
        return;
    pthread_mutex_lock(&sh->mu);
    if (strcmp(op, "spawned") == 0 || strcmp(op, "killed") == 0) {
        unsigned seq = (unsigned)json_integer_value(json_object_get(msg, "seq"));
        for (size_t i = 0; i < sizeof sh->replies / sizeof sh->replies[0]; i++) {
            shim_reply *r = &sh->replies[i];
            if (r->seq != seq || r->done)
                continue;
            shim_proc *p = r->pending;
            r->pending = NULL;
            int pid = (int)json_integer_value(json_object_get(msg, "pid"));
            bool ok = json_object_get(msg, "code") == NULL && pid > 0;
            if (ok && p && make_room_locked(sh)) {
                p->pid = pid;
                sh->procs[sh->nprocs++] = p;
            } else {
                abx__shim_proc_free(p);
            }
            r->msg = json_incref(msg);
            r->done = true;
        }
    } else if (strcmp(op, "exit") == 0) {
        int pid = (int)json_integer_value(json_object_get(msg, "pid"));
        for (int i = sh->nprocs - 1; i >= 0; i--) {
            shim_proc *p = sh->procs[i];
            if (p->pid == pid && !p->exited) {
                p->exited = true;
                p->wait_status = (int)json_integer_value(json_object_get(msg, "status"));
                p->exited_at_ms = abx__shim_now_ms();
                if (p->stdin_fd >= 0) {
                    close(p->stdin_fd);
                    p->stdin_fd = -1;
                }
                break;
            }
        }
    }
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

/* ---- saving whole output ------------------------------------------------ */

void abx__shim_saved_path(int pid, bool err_stream, char *out, size_t len)
{
    snprintf(out, len, "/tmp/.abx-output/%d.%s", pid, err_stream ? "stderr" : "stdout");
}

static void save_end_locked(shim_proc *p, int i)
{
    if (p->save_fd[i] >= 0)
        close(p->save_fd[i]);
    p->save_fd[i] = -1;
    p->save_ended[i] = true;
}

/* Opens the file for stream i and remembers it among the sandbox's newest
 * saved outputs, removing the oldest. False when it cannot be made. */
static bool save_open_locked(shim *sh, shim_proc *p, int i)
{
    char path[48];
    abx__shim_saved_path(p->pid, i == 1, path, sizeof path);
    unsigned index = sh->saved_next++ % ABX_SHIM_SAVED_OUTPUTS;
    char *slot = sh->saved_files[index];
    if (slot[0] && strcmp(slot, path) != 0) /* never with more rights than its writer had */
        abx__fs_remove(sh, sh->saved_uids[index], slot, NULL);
    snprintf(slot, sizeof sh->saved_files[0], "%s", path);
    sh->saved_uids[index] = p->uid;
    if (abx__fs_open_file(sh, p->uid, path, O_WRONLY | O_CREAT | O_TRUNC, &p->save_fd[i], NULL) < 0)
        return false;
    /* saving never takes more than a quarter of the sandbox's free space:
     * the sandbox's own writes come first */
    struct statvfs vfs;
    uint64_t avail = fstatvfs(p->save_fd[i], &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize : 0;
    p->save_cap[i] = avail / 4 < ABX_BOUND_SAVED_OUTPUT ? avail / 4 : ABX_BOUND_SAVED_OUTPUT;
    return true;
}

static bool save_write(shim_proc *p, int i, const char *data, size_t n)
{
    if (p->saved[i] + n > p->save_cap[i] || abx__write_all(p->save_fd[i], data, n) < 0)
        return false;
    p->saved[i] += n;
    return true;
}

/* The chunk just appended to stream i also goes to its saved file once the
 * stream has passed save_after bytes; the first time, what the ring still
 * holds from before the chunk is written first. Lock: mu held. */
static void save_output_locked(shim *sh, shim_proc *p, int i, const char *chunk, size_t n)
{
    abx_ring *b = i ? &p->err : &p->out;
    if (!p->save_after || b->total <= p->save_after || p->save_ended[i])
        return;
    if (p->save_fd[i] < 0) {
        if (!save_open_locked(sh, p, i)) {
            save_end_locked(p, i);
            return;
        }
        char earlier[16384];
        uint64_t off = 0, upto = b->total - n;
        bool trunc = false;
        while (off < upto) {
            size_t want = upto - off < sizeof earlier ? (size_t)(upto - off) : sizeof earlier;
            size_t got = abx__ring_read(b, &off, earlier, want, &trunc);
            if (got == 0 || !save_write(p, i, earlier, got)) {
                save_end_locked(p, i);
                return;
            }
        }
    }
    if (!save_write(p, i, chunk, n))
        save_end_locked(p, i);
}

/* The event loop: fd is readable (or at EOF). Reads no more than the
 * process's streams have room for (the fd is non-blocking, so the lock is
 * held across the read). */
void abx__shim_on_output(shim *sh, int fd)
{
    char buf[SHIM_READ_CHUNK];
    pthread_mutex_lock(&sh->mu);
    for (int i = 0; i < sh->nprocs; i++) {
        shim_proc *p = sh->procs[i];
        int *slot = p->out_fd == fd ? &p->out_fd : p->err_fd == fd ? &p->err_fd : NULL;
        if (!slot)
            continue;
        bool is_err = slot == &p->err_fd;
        size_t room = abx__shim_proc_read_room_locked(p, is_err);
        ssize_t n = 1;
        if (room > 0) {
            do
                n = read(fd, buf, room);
            while (n < 0 && errno == EINTR);
        }
        if (n > 0 && room > 0) {
            abx__ring_append(is_err ? &p->err : &p->out, buf, (size_t)n);
            save_output_locked(sh, p, is_err, buf, (size_t)n);
        } else if (n == 0 || (n < 0 && errno != EAGAIN)) {
            close(fd);
            *slot = -1;
            if (p->save_fd[is_err] >= 0) { /* the stream is whole: the file is done */
                close(p->save_fd[is_err]);
                p->save_fd[is_err] = -1;
            }
        }
        break;
    }
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

static int send_signal_msg(shim *sh, int pid, int sig)
{
    char msg[96];
    snprintf(msg, sizeof msg, "{\"op\":\"signal\",\"pid\":%d,\"sig\":%d}", pid, sig);
    ssize_t n;
    do
        n = send(sh->jail.control_fd, msg, strlen(msg), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -ABX_ENOTRUNNING : 0;
}

int abx__shim_proc_signal(shim *sh, int pid, int sig)
{
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    bool running = p && !p->exited;
    pthread_mutex_unlock(&sh->mu);
    if (!p)
        return -ABX_ENOTFOUND;
    return running ? send_signal_msg(sh, pid, sig) : 0;
}

int abx__shim_proc_write_stdin(shim *sh, int pid, const void *buf, size_t len)
{
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    int fd = p && p->stdin_fd >= 0 ? dup(p->stdin_fd) : -1;
    pthread_mutex_unlock(&sh->mu);
    if (!p)
        return -ABX_ENOTFOUND;
    if (fd < 0)
        return -ABX_ENOTRUNNING;
    int rc = abx__write_all(fd, buf, len) < 0 ? -ABX_ENOTRUNNING : 0;
    close(fd);
    return rc;
}

int abx__shim_proc_close_stdin(shim *sh, int pid)
{
    pthread_mutex_lock(&sh->mu);
    shim_proc *p = abx__shim_proc_find_locked(sh, pid, NULL);
    if (p && p->stdin_fd >= 0) {
        close(p->stdin_fd);
        p->stdin_fd = -1;
    }
    pthread_mutex_unlock(&sh->mu);
    return p ? 0 : -ABX_ENOTFOUND;
}
