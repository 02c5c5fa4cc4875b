/* init_server.c: pid 1 of a persistent sandbox.
 *
 * Owns: starting processes inside the sandbox on the shim's request (see
 * init_proto.h), signalling them, reaping every process of the namespace,
 * and reporting the exits of those it started. It keeps only the
 * capabilities it needs to start a process as root or user and to signal
 * it; the seccomp filter is already loaded (jail.c) and is inherited by
 * every child. Does not own output, buffers or lifetime (the shim does).
 *
 * States: SERVING (poll control socket and SIGCHLD) -> shim gone (control
 * socket hangs up) -> _exit, which kills the pid namespace.
 */
#include "init_server.h"
#include "init_proto.h"
#include "abx/abx.h"
#include "privs.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#define MAX_ARGS 4096

static void send_json(int fd, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return;
    size_t len = strlen(text);
    if (len <= ABX_INIT_MSG_MAX)
        while (send(fd, text, len, MSG_NOSIGNAL) < 0 && errno == EINTR)
            ;
    free(text);
}

/* Receives one datagram and up to 3 fds. Returns bytes, 0 on hang-up, -1. */
static ssize_t recv_msg(int fd, char *buf, size_t cap, int fds[3], int *nfds)
{
    struct iovec iov = {buf, cap - 1};
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(3 * sizeof(int))];
    } ctrl;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctrl, .msg_controllen = sizeof ctrl};
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    *nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *got = (int *)CMSG_DATA(c);
        for (int i = 0; i < count; i++) {
            if (*nfds < 3)
                fds[(*nfds)++] = got[i];
            else
                close(got[i]);
        }
    }
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

typedef struct spawn_request {
    const char *argv[MAX_ARGS + 1];
    const char *envp[MAX_ARGS + 1];
    const char *cwd;
    unsigned uid;
    bool pty; /* fds are one pseudo-terminal slave: it becomes the controlling terminal */
} spawn_request;

static int parse_strings(json_t *arr, const char **out)
{
    if (!json_is_array(arr) || json_array_size(arr) > MAX_ARGS)
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v))
            return -1;
        out[i] = json_string_value(v);
    }
    out[json_array_size(arr)] = NULL;
    return 0;
}

typedef struct exec_failure {
    int code;
    int err;
} exec_failure;

/* The child: becomes the requested user with nothing else, then execs. */
__attribute__((noreturn)) static void child_exec(const spawn_request *r, const int fds[3], int status_fd,
                                                 bool full_id_range, bool root_caps)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    exec_failure f = {ABX_EJAIL, 0};
    const char *step = "";
    if (setsid() < 0 || dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
        goto fail;
    if (r->pty && ioctl(0, TIOCSCTTY, 0) < 0)
        goto fail;
    if (abx__privs_set_rlimits() < 0)
        goto fail;
    if ((r->uid == 0 && root_caps ? abx__privs_drop_to_root_caps(full_id_range, &step)
                                  : abx__privs_drop_all(r->uid, r->uid, full_id_range, &step)) < 0)
        goto fail;
    if (chdir(r->cwd) < 0) {
        f.code = errno == ENOENT || errno == ENOTDIR ? ABX_ENOENT : ABX_EPERM;
        goto fail;
    }
    umask(022);
    if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
        goto fail;
    execvpe(r->argv[0], (char *const *)r->argv, (char *const *)r->envp);
    f.code = errno == ENOENT || errno == ENOTDIR   ? ABX_ECMDNOTFOUND
             : errno == EACCES || errno == ENOEXEC ? ABX_ENOEXEC
                                                   : ABX_EPERM;
fail:
    f.err = errno;
    (void)abx__write_all(status_fd, &f, sizeof f);
    _exit(127);
}

static void spawn_reply_error(int ctl, json_int_t seq, int code, const char *message)
{
    send_json(ctl, json_pack("{s:s, s:I, s:i, s:s}", "op", "spawned", "seq", seq, "code", code, "message",
                             message));
}

static void spawn_one(int ctl, json_int_t seq, const spawn_request *r, const int fds[3], bool full_id_range,
                      bool root_caps)
{
    int status[2];
    if (pipe2(status, O_CLOEXEC) < 0) {
        spawn_reply_error(ctl, seq, ABX_ESYS, "pipe failed");
        return;
    }
    /* vfork: the child borrows init's memory until its exec (init waits for
     * that anyway, on the status pipe), so no page table is copied and torn
     * down per process started. The child changes only what is its own
     * (signal dispositions and mask, fds, ids, capabilities, rlimits, cwd,
     * umask); libcap's one allocation is freed before the exec. */
    pid_t pid = vfork();
    if (pid == 0) {
        close(status[0]);
        child_exec(r, fds, status[1], full_id_range, root_caps);
    }
    close(status[1]);
    exec_failure f;
    ssize_t n = pid < 0 ? -1 : abx__read_full(status[0], &f, sizeof f);
    close(status[0]);
    if (pid < 0) {
        spawn_reply_error(ctl, seq, ABX_ELIMIT, "fork failed: process limit reached");
        return;
    }
    if (n != (ssize_t)sizeof f) {
        send_json(ctl, json_pack("{s:s, s:I, s:i}", "op", "spawned", "seq", seq, "pid", (int)pid));
        return;
    }
    char message[320];
    const char *path = abx__env_path((const char *const *)r->envp);
    if (f.code == ABX_ECMDNOTFOUND && !strchr(r->argv[0], '/'))
        snprintf(message, sizeof message, "%.100s: command not found on the sandbox's PATH (%.120s)",
                 r->argv[0], path ? path : "unset");
    else if (f.code == ABX_ECMDNOTFOUND)
        snprintf(message, sizeof message, "%.200s: command not found", r->argv[0]);
    else if (f.code == ABX_ENOENT)
        snprintf(message, sizeof message, "working directory %.200s: %s", r->cwd, strerror(f.err));
    else
        snprintf(message, sizeof message, "%.200s: %s", r->argv[0], strerror(f.err));
    send_json(ctl, json_pack("{s:s, s:I, s:i, s:s, s:i}", "op", "spawned", "seq", seq, "code", f.code,
                             "message", message, "pid", (int)pid));
}

static void handle_spawn(int ctl, json_t *msg, const int fds[3], bool full_id_range, bool root_caps)
{
    json_int_t seq = json_integer_value(json_object_get(msg, "seq"));
    spawn_request *r = calloc(1, sizeof *r); /* 64 KiB: off the stack */
    if (!r) {
        spawn_reply_error(ctl, seq, ABX_ENOMEM, "out of memory");
        return;
    }
    r->cwd = json_string_value(json_object_get(msg, "cwd"));
    r->uid = (unsigned)json_integer_value(json_object_get(msg, "uid"));
    r->pty = json_is_true(json_object_get(msg, "pty"));
    if (parse_strings(json_object_get(msg, "argv"), r->argv) < 0 || !r->argv[0] ||
        parse_strings(json_object_get(msg, "env"), r->envp) < 0 || !r->cwd || (r->uid != 0 && r->uid != 1000))
        spawn_reply_error(ctl, seq, ABX_EINVAL, "malformed spawn request");
    else
        spawn_one(ctl, seq, r, fds, full_id_range, root_caps);
    free(r);
}

/* Every process of the sandbox but init: SIGKILL to all of them at once
 * (kill(-1) from a namespace's init spares only init; a process being
 * forked meanwhile is not made), then reaps them, reporting each exit as
 * usual, until none is left or KILLALL_WAIT_MS passed; then "killed". */
#define KILLALL_WAIT_MS 3000
static void kill_all(int ctl, json_int_t seq)
{
    (void)kill(-1, SIGKILL); /* ESRCH: there was nobody */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid > 0) {
            send_json(ctl, json_pack("{s:s, s:i, s:i}", "op", "exit", "pid", (int)pid, "status", st));
            continue;
        }
        if (pid < 0 && errno == ECHILD)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > KILLALL_WAIT_MS)
            break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    send_json(ctl, json_pack("{s:s, s:I}", "op", "killed", "seq", seq));
}

static void handle_message(int ctl, const char *text, const int fds[3], int nfds, bool full_id_range,
                           bool root_caps)
{
    json_t *msg = json_loads(text, 0, NULL);
    const char *op = json_string_value(json_object_get(msg, "op"));
    if (op && strcmp(op, "spawn") == 0 && nfds == 3) {
        handle_spawn(ctl, msg, fds, full_id_range, root_caps);
    } else if (op && strcmp(op, "signal") == 0) {
        pid_t pid = (pid_t)json_integer_value(json_object_get(msg, "pid"));
        int sig = (int)json_integer_value(json_object_get(msg, "sig"));
        if (pid > 1 && sig > 0 && sig < NSIG && kill(-pid, sig) < 0)
            kill(pid, sig);
    } else if (op && strcmp(op, "killall") == 0) {
        kill_all(ctl, json_integer_value(json_object_get(msg, "seq")));
    }
    json_decref(msg);
}

/* Keeps CAP_SETUID, CAP_SETGID, CAP_SETPCAP and CAP_KILL; drops the rest
 * from every set, the bounding set included. With root_caps, root's set
 * (privs.h) stays permitted, not effective, for the processes root starts. */
static int keep_spawn_capabilities(bool root_caps)
{
    static const cap_value_t keep[] = {CAP_SETUID, CAP_SETGID, CAP_SETPCAP, CAP_KILL};
    for (int c = 0; c < 64; c++) {
        bool kept = false;
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
            kept |= keep[k] == c;
        for (int k = 0; root_caps && k < ABX_ROOT_CAPS_COUNT; k++)
            kept |= abx__root_caps[k] == c; /* in the bounding set, for root's processes */
        if (!kept && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    }
    cap_t caps = cap_init();
    if (!caps)
        return -1;
    cap_value_t root_set[ABX_ROOT_CAPS_COUNT];
    for (int k = 0; k < ABX_ROOT_CAPS_COUNT; k++)
        root_set[k] = (cap_value_t)abx__root_caps[k];
    int rc = root_caps ? cap_set_flag(caps, CAP_PERMITTED, ABX_ROOT_CAPS_COUNT, root_set, CAP_SET) : 0;
    if (rc == 0)
        rc = cap_set_flag(caps, CAP_PERMITTED, 4, keep, CAP_SET);
    if (rc == 0)
        rc = cap_set_flag(caps, CAP_EFFECTIVE, 4, keep, CAP_SET);
    if (rc == 0)
        rc = cap_set_proc(caps);
    cap_free(caps);
    return rc;
}

void abx__init_serve(int ctl, bool full_id_range, bool root_caps)
{
    if (keep_spawn_capabilities(root_caps) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        _exit(125);
    static const int reaped[] = {SIGCHLD, 0};
    int sigfd = abx__signalfd_block(reaped, 0);
    if (sigfd < 0)
        _exit(125);
    char *buf = malloc(ABX_INIT_MSG_MAX + 1);
    if (!buf)
        _exit(125);
    for (;;) {
        struct pollfd p[2] = {{.fd = ctl, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            (void)read(sigfd, &si, sizeof si);
            int st;
            pid_t pid;
            while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
                send_json(ctl, json_pack("{s:s, s:i, s:i}", "op", "exit", "pid", (int)pid, "status", st));
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            int fds[3], nfds = 0;
            ssize_t n = recv_msg(ctl, buf, ABX_INIT_MSG_MAX + 1, fds, &nfds);
            if (n <= 0 && !(p[0].revents & POLLIN))
                _exit(0); /* the shim is gone: so is the sandbox */
            if (n == 0)
                _exit(0);
            if (n > 0)
                handle_message(ctl, buf, fds, nfds, full_id_range, root_caps);
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
        }
    }
}
