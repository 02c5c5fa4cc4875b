/* jail.c: a process tree in new namespaces: the sandbox's init and its command.
 *
 * Owns: namespace creation, the uid/gid maps, the handshake between the
 * supervisor (the process that calls abx__jail_start) and the sandbox's
 * init, init's own life (pid 1: reap, forward signals, exit with the
 * command), and starting the command with every privilege dropped.
 *
 * Sequence (each step checked; any failure is reported and fatal):
 *
 *   supervisor                          init (pid 1 in new user, pid, mount,
 *                                            net, UTS and IPC namespaces)
 *   cgroup create, seccomp filter built
 *   clone(NEWUSER|NEWPID|NEWNS|...) --> wait for "go"
 *   uid/gid maps, cgroup attach
 *   "go" ----------------------------> become uid 0 inside, unshare(NEWCGROUP)
 *                                       rootfs (rootfs.c), hostname, lo up
 *                                       fork --> command: setsid, rlimits, drop
 *                                                privileges (privs.c), chdir,
 *                                                fds cloexec, seccomp, exec
 *                                       drop own privileges, non-dumpable;
 *                                       arm PDEATHSIG=SIGKILL; reap until the
 *                                       command exits
 *   read report pipe (EOF = exec'd)
 *   wait for init; its exit is the command's status
 *
 * Root inside maps to the first id of a host range of the sandbox's own
 * (uid_pool.c) when abx runs as root, or to the caller's own uid/gid only
 * otherwise. As root, the user namespace is created while the supervisor's
 * thread has that first id as its effective uid, so the namespace is owned
 * by it and not by host root: what the kernel counts against a
 * namespace's owner (inotify instances, ...) is the sandbox's alone. Killing
 * init (or the supervisor dying, through PDEATHSIG) kills the whole pid
 * namespace. Every credential change clears a process's parent-death
 * signal, so init arms it after its last one, then checks the lifeline (the
 * "go" pipe, whose write end the supervisor holds until abx__jail_destroy)
 * in case the supervisor died before that.
 */
#include "jail.h"
#include "error_internal.h"
#include "init_server.h"
#include "privs.h"
#include "rootfs.h"
#include "seccomp_policy.h"
#include "sysutil.h"
#include "uid_pool.h"

#include <linux/securebits.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

extern char **environ;

/* What the inside tells the supervisor when something fails before exec. */
typedef struct jail_report {
    int code;        /* positive abx code */
    int exit_status; /* 125 setup, 126 not executable, 127 not found */
    char what[240];
} jail_report;

__attribute__((noreturn, format(printf, 4, 5))) static void report_fail(int fd, int code, int exit_status,
                                                                        const char *fmt, ...)
{
    jail_report r;
    memset(&r, 0, sizeof r);
    r.code = code;
    r.exit_status = exit_status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.what, sizeof r.what, fmt, ap);
    va_end(ap);
    (void)abx__write_all(fd, &r, sizeof r);
    _exit(exit_status);
}

int abx__jail_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return 125;
}

/* ---- inside: the command ------------------------------------------------ */

static void reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL); /* SIG_IGN would survive exec */
}

/* The command's process: inherits init's seccomp filter, then gives up
 * everything else before exec. */
__attribute__((noreturn)) static void command_main(const abx_jail_config *cfg, int report_fd,
                                                   bool full_id_range)
{
    reset_signals();
    if (setsid() < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "setsid: %s", strerror(errno));
    if (cfg->terminal && ioctl(0, TIOCSCTTY, 0) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "controlling terminal: %s", strerror(errno));
    if (abx__privs_set_rlimits() < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "rlimits: %s", strerror(errno));
    for (int i = 0; cfg->stdio && i < 3; i++)
        if (dup2(cfg->stdio[i], i) < 0)
            report_fail(report_fd, ABX_EJAIL, 125, "standard fds: %s", strerror(errno));
    uid_t id = cfg->as_root ? 0 : ABX_SANDBOX_USER_UID;
    const char *step = "";
    int dropped = cfg->as_root && cfg->root_caps ? abx__privs_drop_to_root_caps(full_id_range, &step)
                                                 : abx__privs_drop_all(id, id, full_id_range, &step);
    if (dropped < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "%s: %s", step, strerror(errno));
    if (chdir(cfg->cwd) < 0)
        report_fail(report_fd, errno == ENOENT || errno == ENOTDIR ? ABX_ENOENT : ABX_EPERM, 125,
                    "working directory %s: %s", cfg->cwd, strerror(errno));
    umask(022);
    if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "close_range: %s", strerror(errno));
    environ = (char **)cfg->envp;
    execvp(cfg->argv[0], (char *const *)cfg->argv);
    int e = errno;
    const char *path = abx__env_path((const char *const *)cfg->envp);
    if ((e == ENOENT || e == ENOTDIR) && !strchr(cfg->argv[0], '/'))
        report_fail(report_fd, ABX_ECMDNOTFOUND, 127, "%s: command not found on the sandbox's PATH (%s)",
                    cfg->argv[0], path ? path : "unset");
    if (e == ENOENT || e == ENOTDIR)
        report_fail(report_fd, ABX_ECMDNOTFOUND, 127, "%s: command not found", cfg->argv[0]);
    report_fail(report_fd, e == EACCES || e == ENOEXEC ? ABX_ENOEXEC : ABX_EPERM, 126, "%s: %s", cfg->argv[0],
                strerror(e));
}

/* ---- inside: init ------------------------------------------------------- */

static int loopback_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* pid 1: reaps every orphan, forwards the supervisor's signals to the
 * command's process group, and exits with the command's status (which ends
 * the pid namespace and everything left in it). */
__attribute__((noreturn)) static void init_reap_loop(pid_t command)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            kill(-command, sig);
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
            if (pid == command)
                _exit(abx__jail_exit_code(status));
    }
}

/* init was forked from the supervisor and still holds the caller's
 * environment (which may hold secrets) in its memory, where
 * /proc/1/environ would show it. The command gets cfg->envp instead. */
static void scrub_inherited_environment(void)
{
    for (char **e = environ; e && *e; e++)
        explicit_bzero(*e, strlen(*e));
    clearenv();
}

/* The same for the command line, which /proc/1/cmdline shows whatever the
 * dumpable flag: overwrite the argument area (which starts at argv[0]) in
 * place. Runs after the command was forked, which has its own copy. */
static void scrub_command_line(void)
{
    char buf[64];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        len += (size_t)n;
    close(fd);
    if (len > 0) {
        memset(program_invocation_name, 0, len);
        snprintf(program_invocation_name, len, "abx-init");
    }
}

/* Arms init's parent-death signal (after its last credential change, which
 * would clear it), then exits if the supervisor is already gone: its end
 * of the lifeline pipe then reads as hung up. Killing init takes the whole
 * pid namespace with it. */
static void tie_life_to_supervisor(int lifeline_fd, int report_fd)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "PR_SET_PDEATHSIG: %s", strerror(errno));
    struct pollfd p = {.fd = lifeline_fd, .events = POLLIN};
    if (poll(&p, 1, 0) < 0 || (p.revents & (POLLHUP | POLLERR)))
        _exit(125);
    close(lifeline_fd);
}

/* init was forked from the supervisor without an exec, so it still holds
 * the supervisor's descriptors (state-directory files, pipes, signalfds).
 * Closes every one above stderr but KEEP_A and KEEP_B (-1: none); failure
 * is fatal. */
static void close_inherited_fds(int keep_a, int keep_b)
{
    int lo = keep_a < keep_b ? keep_a : keep_b, hi = keep_a < keep_b ? keep_b : keep_a;
    unsigned from = 3;
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        int keep = i == 0 ? lo : hi;
        if (keep < 3 || (unsigned)keep < from)
            continue;
        if ((unsigned)keep > from)
            rc = (int)syscall(SYS_close_range, from, (unsigned)keep - 1, 0u);
        from = (unsigned)keep + 1;
    }
    if (rc == 0)
        rc = (int)syscall(SYS_close_range, from, ~0u, 0u);
    if (rc < 0)
        _exit(125);
}

/* /proc/sys/user of a proc instance of the sandbox's own (a detached
 * mount, gone with the fd): through the host's proc every live user
 * namespace leaves a dentry of each of these names in one hash chain of
 * that superblock, so each lookup there costs a compare per live sandbox
 * (2 ms each with 1000 alive); a fresh superblock has one. -1 with errno. */
static int open_own_sysctls(void)
{
    int fs = fsopen("proc", FSOPEN_CLOEXEC);
    if (fs < 0)
        return -1;
    int mnt = fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0
                  ? -1
                  : fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    int saved = errno;
    close(fs);
    if (mnt < 0) {
        errno = saved;
        return -1;
    }
    int dir = openat(mnt, "sys/user", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    saved = errno;
    close(mnt);
    errno = saved;
    return dir;
}

/* The sandbox's own user namespace limits (/proc/sys/user, per
 * namespace): no namespaces of any kind inside (seccomp refuses them too),
 * and inotify bounded as the host bounds one user. A limit this kernel
 * does not have is skipped; any other failure is fatal. */
static int limit_user_namespace(char *why, size_t len)
{
    int dir = open_own_sysctls();
    if (dir < 0) {
        snprintf(why, len, "/proc/sys/user of a proc of its own: %s", strerror(errno));
        return -1;
    }
    static const char *const limits[][2] = {
        {"max_user_namespaces", "0"},     {"max_pid_namespaces", "0"},   {"max_net_namespaces", "0"},
        {"max_mnt_namespaces", "0"},      {"max_ipc_namespaces", "0"},   {"max_uts_namespaces", "0"},
        {"max_cgroup_namespaces", "0"},   {"max_time_namespaces", "0"},  {"max_inotify_instances", "128"},
        {"max_inotify_watches", "65536"}, {"max_fanotify_groups", "16"}, {"max_fanotify_marks", "8192"},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        if (abx__write_file_at(dir, limits[i][0], limits[i][1]) < 0 && errno != ENOENT) {
            snprintf(why, len, "/proc/sys/user/%s: %s", limits[i][0], strerror(errno));
            close(dir);
            return -1;
        }
    }
    close(dir);
    return 0;
}

/* Id-maps the detached tree for the user namespace of pid (nosuid, nodev,
 * and read-only when asked). 0, or -ABX_EJAIL (the tree is still the caller's). */
static int idmap_tree(int tree, pid_t pid, bool read_only, abx_error **err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    int userns = open(path, O_RDONLY | O_CLOEXEC);
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                          (read_only ? MOUNT_ATTR_RDONLY : 0),
                              .userns_fd = (uint64_t)userns};
    int rc =
        userns < 0 || mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0 ? -1 : 0;
    int saved = errno;
    if (userns >= 0)
        close(userns);
    if (rc < 0)
        return abx__error_errno(err, ABX_EJAIL, saved,
                                "an id-mapped view of the tree (needs kernel 5.12+ and a filesystem that "
                                "supports it)");
    return 0;
}

int abx__jail_idmapped_tree(const char *root, pid_t pid, abx_error **err)
{
    int tree = open_tree(AT_FDCWD, root, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0)
        return abx__error_errno(err, ABX_EJAIL, errno, "opening the tree to id-map");
    int rc = idmap_tree(tree, pid, false, err);
    if (rc < 0) {
        close(tree);
        return rc;
    }
    return tree;
}

/* The volumes' trees, id-mapped for sandbox pid, sent to its init after
 * the template's (each tree_fd consumed). */
static int send_volumes(const abx_jail_config *cfg, pid_t pid, int sock, abx_error **err)
{
    int rc = 0;
    if (cfg->durable) {
        rc = idmap_tree(cfg->layer_fd, pid, false, err);
        if (rc == 0 && abx__send_fd(sock, cfg->layer_fd) < 0)
            rc = abx__error_errno(err, ABX_EJAIL, errno, "handing the durable layer to the sandbox");
    }
    for (size_t i = 0; i < cfg->n_volumes; i++) {
        int tree = cfg->volumes[i].tree_fd;
        cfg->volumes[i].tree_fd = -1;
        if (rc == 0)
            rc = idmap_tree(tree, pid, cfg->volumes[i].read_only, err);
        if (rc == 0 && abx__send_fd(sock, tree) < 0)
            rc = abx__error_errno(err, ABX_EJAIL, errno, "volume: handing its tree to the sandbox");
        close(tree);
    }
    return rc;
}

/* Whether init sends its overlay's upper directory back (jail.h upper_fd):
 * a persistent sandbox over a template, which a snapshot may record. */
static bool wants_upper(const abx_jail_config *cfg)
{
    return !cfg->argv && cfg->template_root && !cfg->template_writable;
}

/* The template's tree, id-mapped for sandbox pid, sent to its init. */
static int send_template(const char *root, pid_t pid, int sock, abx_error **err)
{
    int tree = abx__jail_idmapped_tree(root, pid, err);
    if (tree < 0)
        return tree;
    int rc = abx__send_fd(sock, tree);
    int saved = errno;
    saved = errno;
    close(tree);
    return rc < 0 ? abx__error_errno(err, ABX_EJAIL, saved, "template: handing its tree to the sandbox") : 0;
}

__attribute__((noreturn)) static void init_main(const abx_jail_config *cfg, int go_fd, int report_fd,
                                                int control_fd, int template_sock, scmp_filter_ctx filter,
                                                bool full_id_range)
{
    char go;
    char resolv[ABX_JAIL_RESOLV_MAX + 1] = ""; /* "r": the sandbox's resolv.conf follows "go" */
    if (abx__read_full(go_fd, &go, 1) != 1)
        _exit(125); /* the supervisor gave up or died */
    unsigned char len = 0;
    if (go == 'r' &&
        (abx__read_full(go_fd, &len, 1) != 1 || abx__read_full(go_fd, resolv, len) != (ssize_t)len))
        _exit(125);
    resolv[len] = '\0';
    int template_fd = -1;
    abx_rootfs_volume volumes[ABX_VOLUME_MOUNTS_MAX];
    if (template_sock >= 0 && cfg->template_root && (template_fd = abx__recv_fd(template_sock)) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "template: its tree did not arrive: %s", strerror(errno));
    int layer_fd = -1;
    if (template_sock >= 0 && cfg->durable && (layer_fd = abx__recv_fd(template_sock)) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "the durable layer did not arrive: %s", strerror(errno));
    for (size_t i = 0; i < cfg->n_volumes; i++) {
        volumes[i] = (abx_rootfs_volume){.fd = abx__recv_fd(template_sock), .path = cfg->volumes[i].path};
        if (volumes[i].fd < 0)
            report_fail(report_fd, ABX_EJAIL, 125, "volume: its tree did not arrive: %s", strerror(errno));
    }
    bool send_upper = template_sock >= 0 && wants_upper(cfg);
    if (template_sock >= 0 && !send_upper)
        close(template_sock);
    scrub_inherited_environment();
    /* the supervisor's borrowed owner id came with SECBIT_NO_SETUID_FIXUP */
    if (full_id_range && prctl(PR_SET_SECUREBITS, 0UL) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "securebits: %s", strerror(errno));
    if (full_id_range && setgroups(0, NULL) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "setgroups: %s", strerror(errno));
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "becoming root inside: %s", strerror(errno));
    if (unshare(CLONE_NEWCGROUP) < 0)
        report_fail(report_fd, ABX_EHOSTSUPPORT, 125, "cgroup namespace: %s", strerror(errno));
    char why[256];
    if (full_id_range && limit_user_namespace(why, sizeof why) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "user namespace limits: %s", why);
    abx_rootfs_spec spec = {.hostname = cfg->id,
                            .disk_mb = cfg->limits.disk_mb,
                            .full_id_range = full_id_range,
                            .resolv_conf = go == 'r' ? resolv : NULL,
                            .template_fd = template_fd,
                            .template_writable = cfg->template_writable,
                            .layer_fd = layer_fd,
                            .host_view = cfg->template_host_view,
                            .volumes = volumes,
                            .n_volumes = cfg->n_volumes};
    int upper_fd = -1;
    spec.upper_out = send_upper ? &upper_fd : NULL;
    if (abx__rootfs_build(&spec, why, sizeof why) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "root filesystem: %s", why);
    if (send_upper && abx__send_fd(template_sock, upper_fd) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "handing the writable layer to the supervisor: %s",
                    strerror(errno));
    if (send_upper) {
        close(upper_fd);
        close(template_sock);
    }
    if (sethostname(cfg->id, strlen(cfg->id)) < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "sethostname: %s", strerror(errno));
    if (!cfg->host_network && loopback_up() < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "loopback: %s", strerror(errno));
    /* The filter goes on once, here, after the last mount: both init and
     * the command (which inherits it) live under it from now on. */
    int rc = seccomp_load(filter);
    if (rc < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "seccomp: %s", strerror(-rc));

    if (!cfg->argv) {
        scrub_command_line();
        tie_life_to_supervisor(go_fd, report_fd);
        /* nothing of the supervisor's is left by the time it hears we serve */
        close_inherited_fds(control_fd, report_fd);
        close(report_fd); /* EOF tells the supervisor we are serving */
        abx__init_serve(control_fd, full_id_range, cfg->root_caps);
    }
    pid_t command = fork();
    if (command < 0)
        report_fail(report_fd, ABX_EJAIL, 125, "fork: %s", strerror(errno));
    if (command == 0)
        command_main(cfg, report_fd, full_id_range);

    scrub_command_line();
    /* init keeps nothing it does not need: it can still signal the command
     * because it takes the command's uid. */
    uid_t id = cfg->as_root ? 0 : ABX_SANDBOX_USER_UID;
    const char *step = "";
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || abx__privs_drop_all(id, id, full_id_range, &step) < 0) {
        kill(command, SIGKILL);
        report_fail(report_fd, ABX_EJAIL, 125, "init privileges: %s", strerror(errno));
    }
    tie_life_to_supervisor(go_fd, report_fd);
    close_inherited_fds(report_fd, -1);
    close(report_fd);
    init_reap_loop(command);
}

/* ---- outside: the supervisor ------------------------------------------- */

static int check_host(abx_error **err)
{
    if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL)
        return abx__error_set(err, ABX_EHOSTSUPPORT, "the kernel has no seccomp support");
    static const char *const ns[] = {"user", "pid", "mnt", "net", "uts", "ipc", "cgroup"};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", ns[i]);
        if (access(path, F_OK) < 0)
            return abx__error_set(err, ABX_EHOSTSUPPORT, "the kernel has no %s namespaces", ns[i]);
    }
    return 0;
}

static int write_id_maps(pid_t pid, bool full_id_range, uid_t base, abx_error **err)
{
    char path[64], map[64];
    if (full_id_range) {
        snprintf(map, sizeof map, "0 %u %u\n", (unsigned)base, ABX_HOST_ID_COUNT);
        snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
        if (abx__write_file_at(AT_FDCWD, path, map) < 0)
            return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "writing the uid map");
        snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
        if (abx__write_file_at(AT_FDCWD, path, map) < 0)
            return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "writing the gid map");
        return 0;
    }
    snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
    if (abx__write_file_at(AT_FDCWD, path, "deny") < 0)
        return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "denying setgroups");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)geteuid());
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if (abx__write_file_at(AT_FDCWD, path, map) < 0)
        return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "writing the uid map");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)getegid());
    snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
    if (abx__write_file_at(AT_FDCWD, path, map) < 0)
        return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "writing the gid map");
    return 0;
}

/* The calling thread (only: raw system calls, not glibc's all-thread
 * wrappers) takes owner as its effective uid, keeping its capabilities
 * (SECBIT_NO_SETUID_FIXUP), so that a user namespace it creates is owned
 * by owner. restore_owner undoes both; if it cannot, the process must not
 * go on with borrowed credentials, so it aborts. */
static int borrow_owner(uid_t owner, int *saved_bits)
{
    *saved_bits = prctl(PR_GET_SECUREBITS);
    if (*saved_bits < 0 || prctl(PR_SET_SECUREBITS, (unsigned long)*saved_bits | SECBIT_NO_SETUID_FIXUP) < 0)
        return -1;
    if (syscall(SYS_setresuid, -1, owner, -1) < 0) {
        int e = errno;
        if (prctl(PR_SET_SECUREBITS, (unsigned long)*saved_bits) < 0)
            abort();
        errno = e;
        return -1;
    }
    return 0;
}

static void restore_owner(int saved_bits)
{
    if (syscall(SYS_setresuid, -1, 0, -1) < 0 || prctl(PR_SET_SECUREBITS, (unsigned long)saved_bits) < 0 ||
        geteuid() != 0)
        abort();
}

static void kill_and_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

void abx__jail_clear(abx_jail *jail)
{
    memset(jail, 0, sizeof *jail);
    jail->init_pid = -1;
    jail->report_fd = jail->control_fd = jail->lifeline_fd = jail->uid_range_fd = -1;
    jail->upper_sock = jail->upper_fd = -1;
}

int abx__jail_start(const abx_jail_config *cfg, abx_jail *jail, abx_error **err)
{
    abx__jail_clear(jail);
    bool full_id_range = geteuid() == 0;
    if ((cfg->template_writable || cfg->host_network) &&
        (!full_id_range || !cfg->template_root || !cfg->argv))
        return abx__error_set(err, ABX_EINVAL, "a build step runs one command in a template's tree, as root");
    if (!full_id_range && cfg->template_root)
        return abx__error_set(err, ABX_EPERM,
                              "sandboxes from a template need abx to run as root (id-mapped mounts)");
    if (cfg->n_volumes > ABX_VOLUME_MOUNTS_MAX || (!full_id_range && (cfg->n_volumes || cfg->durable)))
        return abx__error_set(
            err, ABX_EPERM,
            "volumes and durable sandboxes need abx to run as root (id-mapped mounts); at most %d volumes",
            ABX_VOLUME_MOUNTS_MAX);
    if (!full_id_range && !cfg->as_root)
        return abx__error_set(err, ABX_EPERM,
                              "running as 'user' inside needs abx to run as root; use --user root");
    int rc = check_host(err);
    if (rc < 0)
        return rc;
    if (full_id_range && (rc = abx__uid_range_take(&jail->host_id_base, &jail->uid_range_fd, err)) < 0)
        return rc;
    if ((rc = abx__cgroup_create(&jail->cgroup, cfg->host_name ? cfg->host_name : cfg->id, &cfg->limits,
                                 cfg->argv == NULL, err)) < 0) {
        abx__jail_release_ids(jail);
        return rc;
    }
    scmp_filter_ctx filter = abx__seccomp_policy_new();
    if (!filter) {
        abx__cgroup_destroy(&jail->cgroup);
        return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "building the seccomp filter");
    }
    int go[2], report[2], control[2] = {-1, -1}, tpl[2] = {-1, -1};
    if ((!cfg->argv && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) ||
        ((cfg->template_root || cfg->n_volumes || cfg->durable) &&
         socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, tpl) < 0)) {
        int saved = errno;
        for (int i = 0; i < 2; i++)
            if (control[i] >= 0)
                close(control[i]);
        seccomp_release(filter);
        abx__cgroup_destroy(&jail->cgroup);
        return abx__error_errno(err, ABX_ESYS, saved, "socketpair");
    }
    if (pipe2(go, O_CLOEXEC) < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "pipe");
        goto out_filter;
    }
    if (pipe2(report, O_CLOEXEC) < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "pipe");
        goto out_go;
    }
    int saved_bits = 0;
    if (full_id_range && borrow_owner(jail->host_id_base, &saved_bits) < 0) {
        rc = abx__error_errno(err, ABX_EJAIL, errno, "taking the sandbox's owner id");
        close(go[0]);
        close(go[1]);
        close(report[0]);
        close(report[1]);
        goto out_filter;
    }
    unsigned long netns = cfg->host_network ? 0 : CLONE_NEWNET;
    long pid = syscall(
        SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | netns | CLONE_NEWUTS | CLONE_NEWIPC | SIGCHLD,
        NULL, NULL, NULL, NULL);
    if (pid != 0 && full_id_range)
        restore_owner(saved_bits);
    if (pid == 0) {
        close(go[1]);
        close(report[0]);
        if (control[0] >= 0)
            close(control[0]);
        if (tpl[0] >= 0)
            close(tpl[0]);
        init_main(cfg, go[0], report[1], control[1], tpl[1], filter, full_id_range);
    }
    if (tpl[1] >= 0)
        close(tpl[1]);
    close(go[0]);
    close(report[1]);
    if (control[1] >= 0)
        close(control[1]);
    control[1] = -1;
    jail->control_fd = control[0];
    if (pid < 0) {
        int saved = errno;
        char buf[32]; /* read only now: a lookup in the host's /proc/sys costs more with each sandbox */
        rc = abx__read_small_file("/proc/sys/user/max_user_namespaces", buf, sizeof buf) == 0 &&
                     strtol(buf, NULL, 10) <= 0
                 ? abx__error_set(err, ABX_EHOSTSUPPORT,
                                  "user namespaces are disabled (user.max_user_namespaces = 0)")
                 : abx__error_errno(err, ABX_EHOSTSUPPORT, saved, "creating namespaces");
        close(go[1]);
        close(report[0]);
        goto out_filter;
    }
    if ((rc = write_id_maps((pid_t)pid, full_id_range, jail->host_id_base, err)) < 0 ||
        (rc = abx__cgroup_attach(&jail->cgroup, (pid_t)pid, err)) < 0) {
        close(go[1]);
        close(report[0]);
        kill_and_reap((pid_t)pid);
        goto out_filter;
    }
    if (tpl[0] >= 0) {
        rc = cfg->template_root ? send_template(cfg->template_root, (pid_t)pid, tpl[0], err) : 0;
        if (rc == 0)
            rc = send_volumes(cfg, (pid_t)pid, tpl[0], err);
        if (rc == 0 && wants_upper(cfg))
            jail->upper_sock = tpl[0]; /* init answers on it once its root is built */
        else
            close(tpl[0]);
        tpl[0] = -1;
        if (rc < 0) {
            close(go[1]);
            close(report[0]);
            kill_and_reap((pid_t)pid);
            goto out_filter;
        }
    }
    char go_msg[2 + ABX_JAIL_RESOLV_MAX + 1] = "g";
    size_t go_len = 1;
    if (cfg->before_go &&
        (rc = cfg->before_go(cfg->before_go_ctx, (pid_t)pid, go_msg + 2, ABX_JAIL_RESOLV_MAX + 1, err)) < 0) {
        close(go[1]);
        close(report[0]);
        kill_and_reap((pid_t)pid);
        goto out_filter;
    }
    if (cfg->before_go && go_msg[2]) { /* "r", a length byte, the resolv.conf text */
        go_msg[0] = 'r';
        go_msg[1] = (char)(unsigned char)strnlen(go_msg + 2, ABX_JAIL_RESOLV_MAX);
        go_len = 2 + (unsigned char)go_msg[1];
    }
    if (abx__write_all(go[1], go_msg, go_len) < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "starting the sandbox");
        close(go[1]);
        close(report[0]);
        kill_and_reap((pid_t)pid);
        goto out_filter;
    }
    jail->lifeline_fd = go[1];
    seccomp_release(filter);
    jail->init_pid = (pid_t)pid;
    jail->report_fd = report[0];
    return 0;

out_go:
    close(go[0]);
    close(go[1]);
out_filter:
    for (int i = 0; i < 2; i++)
        if (tpl[i] >= 0)
            close(tpl[i]);
    if (jail->upper_sock >= 0)
        close(jail->upper_sock);
    jail->upper_sock = -1;
    if (control[0] >= 0)
        close(control[0]);
    if (control[1] >= 0)
        close(control[1]);
    jail->control_fd = -1;
    seccomp_release(filter);
    abx__cgroup_destroy(&jail->cgroup);
    abx__jail_release_ids(jail);
    return rc;
}

int abx__jail_wait_started(abx_jail *jail, int *exit_status, abx_error **err)
{
    jail_report r;
    ssize_t n = abx__read_full(jail->report_fd, &r, sizeof r);
    close(jail->report_fd);
    jail->report_fd = -1;
    if (n == 0 && jail->upper_sock >= 0) {
        jail->upper_fd = abx__recv_fd(jail->upper_sock);
        close(jail->upper_sock);
        jail->upper_sock = -1;
        if (jail->upper_fd < 0)
            return abx__error_errno(err, ABX_EJAIL, errno, "the sandbox's writable layer did not arrive");
    }
    if (n == 0)
        return 0; /* every write end closed by exec or exit without a word */
    if (n != (ssize_t)sizeof r) {
        *exit_status = 125;
        return abx__error_set(err, ABX_EJAIL, "the sandbox's init failed before reporting");
    }
    r.what[sizeof r.what - 1] = '\0';
    *exit_status = r.exit_status;
    return abx__error_set(err, r.code, "%s", r.what);
}

void abx__jail_destroy(abx_jail *jail)
{
    if (jail->lifeline_fd >= 0) {
        close(jail->lifeline_fd);
        jail->lifeline_fd = -1;
    }
    if (jail->control_fd >= 0) {
        close(jail->control_fd);
        jail->control_fd = -1;
    }
    if (jail->report_fd >= 0) {
        close(jail->report_fd);
        jail->report_fd = -1;
    }
    if (jail->upper_sock >= 0)
        close(jail->upper_sock);
    if (jail->upper_fd >= 0)
        close(jail->upper_fd);
    jail->upper_sock = jail->upper_fd = -1;
    if (jail->init_pid > 0 && !jail->reaped) {
        kill(jail->init_pid, SIGKILL);
        abx__cgroup_thaw_now(&jail->cgroup); /* paused, or frozen by a reaper that died: it must run to die */
        int status = 0;
        while (waitpid(jail->init_pid, &status, 0) < 0 && errno == EINTR)
            ;
        jail->reaped = true;
        jail->init_status = status;
    }
    abx__cgroup_destroy(&jail->cgroup);
    abx__jail_release_ids(jail);
}

void abx__jail_release_ids(abx_jail *jail)
{
    if (jail->uid_range_fd >= 0)
        close(jail->uid_range_fd); /* the range is free for the next sandbox */
    jail->uid_range_fd = -1;
}
