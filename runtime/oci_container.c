/* oci_container.c: an OCI container's first process, and exec into it.
 *
 * Owns the order in which a container is made from its config:
 *
 *   abx-oci create (P)                intermediate (I)             container init (C)
 *   cgroup made, resources written,
 *   seccomp filter built
 *   fork ------------------------->  moved into the cgroup
 *                                     setns: the config's paths
 *                                     unshare(NEWUSER) --> P writes uid_map/gid_map
 *                                     unshare(the other new ones)
 *                                     fork ----------------------> (pid 1 of a new pid namespace)
 *   <-- C's pid ------------------    exits (C goes to the caller's subreaper)
 *   rlimits, oom_score_adj                                         mounts under the root, devices
 *   prestart, createRuntime hooks <----------------------------    asks for them
 *   --------------------------------------------------------->    createContainer hooks, pivot_root,
 *                                                                   masked and read-only paths,
 *                                                                   hostname, sysctls, terminal
 *   <-- ready --------------------------------------------------   waits on the exec fifo
 *   pid file, exits                   (abx-oci start writes it)    startContainer hooks, user,
 *                                                                   capabilities, no_new_privs,
 *                                                                   seccomp, exec process.args
 *
 * Every step is checked; a failure before "ready" is sent to P, which
 * kills what was made and removes the cgroup. Does not own the state
 * directory (lib/oci.c).
 */
#include "oci_container.h"
#include "error_internal.h"
#include "init_server.h"
#include "rootfs.h"
#include "seccomp_policy.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

enum sync_kind { SYNC_GO, SYNC_ERR, SYNC_MAPS, SYNC_PID, SYNC_HOOKS, SYNC_READY };

typedef struct sync_msg {
    int kind;
    int value;
    char text[480];
} sync_msg;

static int sync_send(int fd, int kind, int value, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int sync_send(int fd, int kind, int value, const char *fmt, ...)
{
    sync_msg m = {.kind = kind, .value = value};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof m.text, fmt, ap);
    va_end(ap);
    return send(fd, &m, sizeof m, MSG_NOSIGNAL) == (ssize_t)sizeof m ? 0 : -1;
}

/* Waits for one message; -1 when the other side is gone (EOF). */
static int sync_recv(int fd, sync_msg *m)
{
    ssize_t n;
    do
        n = recv(fd, m, sizeof *m, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof *m)
        return -1;
    m->text[sizeof m->text - 1] = '\0';
    return 0;
}

/* In C or I: says what failed and ends the process. */
__attribute__((noreturn, format(printf, 2, 3))) static void die(int fd, const char *fmt, ...)
{
    sync_msg m = {.kind = SYNC_ERR};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof m.text, fmt, ap);
    va_end(ap);
    send(fd, &m, sizeof m, MSG_NOSIGNAL);
    _exit(1);
}

unsigned long long abx__oci_proc_start_time(pid_t pid, bool *zombie)
{
    char path[64], text[1024];
    *zombie = false;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (pid <= 0 || abx__read_small_file(path, text, sizeof text) < 0)
        return 0;
    const char *p = strrchr(text, ')');
    char state = 0;
    unsigned long long start = 0;
    if (!p || sscanf(p + 2, "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                     &state, &start) != 2)
        return 0;
    *zombie = state == 'Z' || state == 'X';
    return start;
}

/* ---- paths inside the root ---- */

/* root + path with every symlink on the way resolved inside root (an
 * absolute link restarts at root, ".." stops at it): a mount destination
 * can never land outside the container's root. Missing components are
 * kept as they are. */
static int resolve_in_root(const char *root, const char *path, char *out, size_t len)
{
    char rest[PATH_MAX], cur[PATH_MAX] = "";
    snprintf(rest, sizeof rest, "%s", path);
    for (int links = 0; rest[0];) {
        char *p = rest;
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        char comp[NAME_MAX + 1];
        if (n > NAME_MAX)
            return errno = ENAMETOOLONG, -1;
        memcpy(comp, p, n);
        comp[n] = '\0';
        memmove(rest, p + n, strlen(p + n) + 1);
        if (n == 0 || strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            char *slash = strrchr(cur, '/');
            if (slash)
                *slash = '\0';
            continue;
        }
        char full[PATH_MAX * 2], target[PATH_MAX];
        snprintf(full, sizeof full, "%s%s/%s", root, cur, comp);
        ssize_t t = readlink(full, target, sizeof target - 1);
        if (t < 0) {
            size_t used = strlen(cur);
            if (used + n + 2 > sizeof cur)
                return errno = ENAMETOOLONG, -1;
            snprintf(cur + used, sizeof cur - used, "/%s", comp);
            continue;
        }
        if (++links > 255)
            return errno = ELOOP, -1;
        target[t] = '\0';
        if (target[0] == '/')
            cur[0] = '\0';
        char joined[PATH_MAX * 2];
        snprintf(joined, sizeof joined, "%s/%s", target, rest);
        size_t jl = strlen(joined);
        if (jl >= sizeof rest)
            return errno = ENAMETOOLONG, -1;
        memcpy(rest, joined, jl + 1);
    }
    int w = snprintf(out, len, "%s%s", root, cur[0] ? cur : "/");
    return w > 0 && (size_t)w < len ? 0 : (errno = ENAMETOOLONG, -1);
}

static int mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/* Makes an empty file at path (and its parents) for a file bind mount. */
static int touch_p(const char *path)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (mkdir_p(parent, 0755) < 0)
            return -1;
    }
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno == EISDIR)
        return 0;
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* A bind mount's remount to flags, keeping the ones the kernel locks
 * (a mount made in another user namespace keeps nosuid, nodev, noexec). */
static int remount_bind(const char *path, unsigned long flags)
{
    unsigned long locked = abx__rootfs_locked_flags(path) & (MS_NOSUID | MS_NODEV | MS_NOEXEC);
    return mount(NULL, path, NULL, MS_BIND | MS_REMOUNT | flags | locked, NULL);
}

/* ---- mounts ---- */

typedef struct container_ctx {
    const abx_oci_create_params *p;
    const abx_cgroup *cg;
    bool in_userns; /* a user namespace of its own: devices are bound, not made */
    int sync_fd;
    int tree_fd;      /* the sandbox profile: the root, id-mapped for the container's user namespace; -1 */
    int *bind_fds;    /* the sandbox profile: each bind mount's source as a detached tree (-1 for others) */
    const char *root; /* where the root is mounted while it is built: the config's, or STAGED_ROOT */
} container_ctx;

/* Under the sandbox profile the root is built where root in the user
 * namespace can reach it (host directories above a bundle are often
 * 0700): the id-mapped tree on a tmpfs of the container's mount namespace. */
#define STAGING "/tmp"
#define STAGED_ROOT "/tmp/root"

/* v1: a tmpfs with each controller's own leaf of the container bound in
 * it; v2: the container's own cgroup directory. */
static void mount_cgroups(const container_ctx *c, const char *dest, unsigned long flags)
{
    const abx_cgroup *cg = c->cg;
    bool ro = flags & MS_RDONLY;
    if (cg->version == 2) {
        if (mount(cg->dirs[0], dest, NULL, MS_BIND | MS_REC, NULL) < 0 ||
            remount_bind(dest, (ro ? MS_RDONLY : 0) | MS_NOSUID | MS_NODEV | MS_NOEXEC) < 0)
            die(c->sync_fd, "mounting the cgroup filesystem at %s: %s", dest, strerror(errno));
        return;
    }
    if (mount("tmpfs", dest, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0)
        die(c->sync_fd, "mounting a tmpfs for cgroups at %s: %s", dest, strerror(errno));
    for (int i = 0; i < cg->ndirs + cg->nextra; i++) {
        const char *dir = i < cg->ndirs ? cg->dirs[i] : cg->extra[i - cg->ndirs];
        const char *after = dir + strlen("/sys/fs/cgroup/");
        char name[64], target[PATH_MAX + 80];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(after, "/"), after);
        snprintf(target, sizeof target, "%s/%s", dest, name);
        if (mkdir(target, 0755) < 0 && errno != EEXIST)
            continue;
        if (mount(dir, target, NULL, MS_BIND, NULL) < 0)
            die(c->sync_fd, "binding cgroup %s: %s", name, strerror(errno));
        remount_bind(target, (ro ? MS_RDONLY : 0) | MS_NOSUID | MS_NODEV | MS_NOEXEC);
    }
    if (ro)
        remount_bind(dest, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
}

static void mount_one(const container_ctx *c, const abx_oci_mount *m)
{
    char dest[PATH_MAX];
    const char *root = c->root;
    if (resolve_in_root(root, m->destination, dest, sizeof dest) < 0)
        die(c->sync_fd, "mount destination %s: %s", m->destination, strerror(errno));
    if (strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0) {
        if (mkdir_p(dest, 0755) < 0)
            die(c->sync_fd, "making %s: %s", m->destination, strerror(errno));
        mount_cgroups(c, dest, m->flags);
        return;
    }
    if (m->bind && c->bind_fds && c->bind_fds[m - c->p->spec->mounts] >= 0) {
        int tree = c->bind_fds[m - c->p->spec->mounts];
        struct stat st;
        if (fstat(tree, &st) < 0 || (S_ISDIR(st.st_mode) ? mkdir_p(dest, 0755) : touch_p(dest)) < 0)
            die(c->sync_fd, "making %s: %s", m->destination, strerror(errno));
        if (move_mount(tree, "", AT_FDCWD, dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            die(c->sync_fd, "bind mounting %s on %s: %s", m->source, m->destination, strerror(errno));
        close(tree);
        unsigned long rest = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
        if (rest && remount_bind(dest, rest) < 0)
            die(c->sync_fd, "remounting %s: %s", m->destination, strerror(errno));
    } else if (m->bind) {
        struct stat st;
        if (stat(m->source, &st) < 0)
            die(c->sync_fd, "bind mount source %s: %s", m->source, strerror(errno));
        if ((S_ISDIR(st.st_mode) ? mkdir_p(dest, 0755) : touch_p(dest)) < 0)
            die(c->sync_fd, "making %s: %s", m->destination, strerror(errno));
        if (mount(m->source, dest, NULL, MS_BIND | (m->flags & MS_REC), NULL) < 0)
            die(c->sync_fd, "bind mounting %s on %s: %s", m->source, m->destination, strerror(errno));
        unsigned long rest = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
        if (rest && remount_bind(dest, rest) < 0)
            die(c->sync_fd, "remounting %s: %s", m->destination, strerror(errno));
    } else {
        if (mkdir_p(dest, 0755) < 0)
            die(c->sync_fd, "making %s: %s", m->destination, strerror(errno));
        unsigned long flags = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
        if (mount(m->source[0] ? m->source : m->type, dest, m->type, flags, m->data[0] ? m->data : NULL) <
            0) {
            /* a sysfs or mqueue of a namespace we do not own: the host's, bound, as runc does */
            const char *host = strcmp(m->type, "sysfs") == 0    ? "/sys"
                               : strcmp(m->type, "mqueue") == 0 ? "/dev/mqueue"
                                                                : NULL;
            if (!host || errno != EPERM || mount(host, dest, NULL, MS_BIND | MS_REC, NULL) < 0)
                die(c->sync_fd, "mounting %s (%s) on %s: %s", m->source, m->type, m->destination,
                    strerror(errno));
            remount_bind(dest, flags);
        }
    }
    if (m->propagation && mount(NULL, dest, NULL, m->propagation, NULL) < 0)
        die(c->sync_fd, "setting the propagation of %s: %s", m->destination, strerror(errno));
}

static void make_device(const container_ctx *c, const char *path, char type, unsigned major, unsigned minor,
                        unsigned mode, uid_t uid, gid_t gid)
{
    char dest[PATH_MAX];
    if (resolve_in_root(c->root, path, dest, sizeof dest) < 0)
        die(c->sync_fd, "device %s: %s", path, strerror(errno));
    unlink(dest);
    mode_t kind = type == 'b' ? S_IFBLK : type == 'p' ? S_IFIFO : S_IFCHR;
    if (!c->in_userns) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", dest);
        *strrchr(parent, '/') = '\0';
        if (mkdir_p(parent, 0755) < 0 || mknod(dest, kind | (mode & 07777), makedev(major, minor)) < 0 ||
            chown(dest, uid, gid) < 0)
            die(c->sync_fd, "making device %s: %s", path, strerror(errno));
        return;
    }
    /* in a user namespace of its own a container cannot make devices: the host's node, bound */
    if (touch_p(dest) < 0 || mount(path, dest, NULL, MS_BIND, NULL) < 0)
        die(c->sync_fd, "binding device %s: %s", path, strerror(errno));
}

static bool has_dev_mount(const abx_oci_spec *spec)
{
    for (size_t i = 0; i < spec->n_mounts; i++)
        if (strcmp(spec->mounts[i].destination, "/dev") == 0 && !spec->mounts[i].bind)
            return true;
    return false;
}

static void setup_dev(const container_ctx *c)
{
    const abx_oci_spec *spec = c->p->spec;
    static const struct {
        const char *path;
        unsigned major, minor;
    } defaults[] = {{"/dev/null", 1, 3},   {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
                    {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
    if (has_dev_mount(spec)) {
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
            make_device(c, defaults[i].path, 'c', defaults[i].major, defaults[i].minor, 0666, 0, 0);
        static const char *const links[][2] = {
            {"/proc/self/fd", "/dev/fd"},       {"/proc/self/fd/0", "/dev/stdin"},
            {"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"},
            {"/proc/kcore", "/dev/core"},       {"pts/ptmx", "/dev/ptmx"}};
        for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
            char dest[PATH_MAX];
            /* resolved inside the root: an image's /dev may be a symlink */
            if (resolve_in_root(c->root, links[i][1], dest, sizeof dest) < 0)
                die(c->sync_fd, "linking %s: %s", links[i][1], strerror(errno));
            unlink(dest);
            if (symlink(links[i][0], dest) < 0 && errno != EEXIST)
                die(c->sync_fd, "linking %s: %s", links[i][1], strerror(errno));
        }
    }
    for (size_t i = 0; i < spec->n_devices; i++) {
        const abx_oci_device *d = &spec->devices[i];
        make_device(c, d->path, d->type == 'u' ? 'c' : d->type, (unsigned)d->major, (unsigned)d->minor,
                    d->mode, d->uid, d->gid);
    }
}

static void pivot(const container_ctx *c)
{
    const char *root = c->root;
    if (chdir(root) < 0)
        die(c->sync_fd, "entering the root %s: %s", root, strerror(errno));
    if (c->p->no_pivot) {
        if (mount(root, "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0)
            die(c->sync_fd, "moving the root (--no-pivot): %s", strerror(errno));
    } else {
        if (syscall(SYS_pivot_root, ".", ".") < 0)
            die(c->sync_fd, "pivot_root: %s", strerror(errno));
        /* the old root is stacked under the new one: detach it */
        if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0 || umount2(".", MNT_DETACH) < 0)
            die(c->sync_fd, "detaching the old root: %s", strerror(errno));
    }
    if (chdir("/") < 0)
        die(c->sync_fd, "chdir /: %s", strerror(errno));
}

static void mask_paths(const container_ctx *c, char *const *paths)
{
    for (size_t i = 0; paths && paths[i]; i++) {
        struct stat st;
        if (lstat(paths[i], &st) < 0) {
            if (errno == ENOENT)
                continue;
            die(c->sync_fd, "masking %s: %s", paths[i], strerror(errno));
        }
        int rc = S_ISDIR(st.st_mode) ? mount("tmpfs", paths[i], "tmpfs", MS_RDONLY, "size=0")
                                     : mount("/dev/null", paths[i], NULL, MS_BIND, NULL);
        if (rc < 0)
            die(c->sync_fd, "masking %s: %s", paths[i], strerror(errno));
    }
}

static void readonly_paths(const container_ctx *c, char *const *paths)
{
    for (size_t i = 0; paths && paths[i]; i++) {
        if (access(paths[i], F_OK) < 0 && errno == ENOENT)
            continue;
        if (mount(paths[i], paths[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
            remount_bind(paths[i], MS_RDONLY) < 0)
            die(c->sync_fd, "making %s read-only: %s", paths[i], strerror(errno));
    }
}

/* abx's sandbox profile masks these on top of the config's own lists. */
static char *const sandbox_masked[] = {"/proc/kcore",         "/proc/keys",        "/proc/timer_list",
                                       "/proc/sched_debug",   "/proc/acpi",        "/proc/scsi",
                                       "/proc/sysrq-trigger", "/proc/kallsyms",    "/proc/latency_stats",
                                       "/sys/firmware",       "/sys/kernel/debug", NULL};
static char *const sandbox_readonly[] = {"/proc/sys", "/proc/bus", "/proc/fs", "/proc/irq", NULL};

static void write_sysctls(const container_ctx *c)
{
    const abx_oci_spec *spec = c->p->spec;
    for (size_t i = 0; i < spec->n_sysctls; i++) {
        if (c->p->profile.sandbox && strncmp(spec->sysctl_keys[i], "net.", 4) == 0)
            continue; /* written by the runtime in the network namespace (abx__oci_net_sysctls) */
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "/proc/sys/%s", spec->sysctl_keys[i]);
        for (char *p = path + 10; n > 0 && *p; p++)
            if (*p == '.')
                *p = '/';
        if (abx__write_file_at(AT_FDCWD, path, spec->sysctl_values[i]) < 0)
            die(c->sync_fd, "sysctl %s: %s", spec->sysctl_keys[i], strerror(errno));
    }
}

/* ---- terminal ---- */

/* A pseudo-terminal of the container's own devpts: the master goes over
 * the console socket, the slave becomes the process's stdio and
 * controlling terminal. Returns -1 with errno, *step naming the step. */
static int setup_terminal(int console_fd, const abx_oci_process *proc, const char **step)
{
    *step = "opening /dev/ptmx";
    int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return -1;
    int unlock = 0, ptn = -1;
    *step = "unlocking the pseudo-terminal";
    if (ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCGPTN, &ptn) < 0)
        return -1;
    char name[64];
    snprintf(name, sizeof name, "/dev/pts/%d", ptn);
    *step = "opening the pseudo-terminal's slave";
    int slave = open(name, O_RDWR | O_NOCTTY);
    if (slave < 0)
        return -1;
    struct winsize ws = {.ws_row = proc->console_rows, .ws_col = proc->console_cols};
    *step = "setting the terminal's size";
    if (ws.ws_row && ioctl(slave, TIOCSWINSZ, &ws) < 0)
        return -1;
    *step = "sending the pseudo-terminal over the console socket";
    if (abx__send_fd(console_fd, master) < 0)
        return -1;
    close(master);
    close(console_fd);
    *step = "making the pseudo-terminal the controlling terminal";
    if (setsid() < 0 && errno != EPERM)
        return -1;
    if (ioctl(slave, TIOCSCTTY, 0) < 0)
        return -1;
    for (int fd = 0; fd < 3; fd++)
        if (dup2(slave, fd) < 0)
            return -1;
    if (slave > 2)
        close(slave);
    return 0;
}

/* ---- the process ---- */

static const char *env_get(char *const *env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

/* args[0] found on the process's PATH (its own env's, as runc does), into out. */
static int lookup_program(const abx_oci_process *proc, char *out, size_t len)
{
    const char *prog = proc->args[0];
    if (strchr(prog, '/')) {
        snprintf(out, len, "%s", prog);
        return access(out, F_OK) == 0 ? 0 : -1;
    }
    const char *path = env_get(proc->env, "PATH");
    if (!path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", prog);
        struct stat st;
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return 0;
        p += n;
        if (*p == ':')
            p++;
    }
    errno = ENOENT;
    return -1;
}

/* The process's environment, with HOME from the container's passwd (or
 * "/") when the config sets none. The caller frees the array, not its strings. */
static char **process_env(const abx_oci_process *proc)
{
    size_t n = 0;
    while (proc->env[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    memcpy(env, proc->env, n * sizeof *env);
    if (env_get(proc->env, "HOME"))
        return env;
    static char home[PATH_MAX + 8];
    snprintf(home, sizeof home, "HOME=/");
    FILE *f = fopen("/etc/passwd", "re");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        char *fields[7] = {0}, *save = NULL;
        int k = 0;
        for (char *t = strtok_r(line, ":\n", &save); t && k < 7; t = strtok_r(NULL, ":\n", &save))
            fields[k++] = t;
        if (k >= 6 && strtoul(fields[2], NULL, 10) == proc->uid) {
            snprintf(home, sizeof home, "HOME=%s", fields[5]);
            break;
        }
    }
    if (f)
        fclose(f);
    env[n] = home;
    return env;
}

static int set_caps(const abx_oci_process *proc, const char **step)
{
    if (!proc->has_caps)
        return 0;
    cap_t caps = cap_init();
    *step = "setting capabilities";
    if (!caps)
        return -1;
    static const cap_flag_t flags[3] = {CAP_EFFECTIVE, CAP_INHERITABLE, CAP_PERMITTED};
    static const int sets[3] = {ABX_OCI_CAP_EFFECTIVE, ABX_OCI_CAP_INHERITABLE, ABX_OCI_CAP_PERMITTED};
    for (int s = 0; s < 3; s++)
        for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
            if (proc->caps[sets[s]] & (1ull << cap)) {
                cap_value_t v = cap;
                cap_set_flag(caps, flags[s], 1, &v, CAP_SET);
            }
    int rc = cap_set_proc(caps);
    cap_free(caps);
    if (rc < 0)
        return -1;
    /* an ambient capability needs to be permitted and inheritable too: one
     * that is not stays out, as with runc (its configs list ambient ones
     * that are not inheritable) */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (proc->caps[ABX_OCI_CAP_AMBIENT] & (1ull << cap))
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0);
    return 0;
}

static int drop_bounding(const abx_oci_process *proc)
{
    if (!proc->has_caps)
        return 0;
    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (!(proc->caps[ABX_OCI_CAP_BOUNDING] & (1ull << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
            errno != EINVAL)
            return -1;
    return 0;
}

static int load_filters(scmp_filter_ctx filter, bool sandbox, const char **step)
{
    *step = "loading the seccomp profile";
    int rc = filter ? seccomp_load(filter) : 0;
    if (rc < 0)
        return errno = -rc, -1;
    if (!sandbox)
        return 0;
    *step = "loading abx's seccomp list";
    scmp_filter_ctx own = abx__seccomp_policy_new();
    if (!own)
        return -1;
    seccomp_attr_set(own, SCMP_FLTATR_CTL_NNP, 0);
    rc = seccomp_load(own);
    seccomp_release(own);
    return rc < 0 ? (errno = -rc, -1) : 0;
}

/* Becomes the config's process (user, groups, capabilities,
 * no_new_privs, seccomp) and execs it; on failure writes the step to
 * fd 2 and exits 127 or 126. Never returns. */
__attribute__((noreturn)) static void become_process(const abx_oci_process *proc, scmp_filter_ctx filter,
                                                     bool sandbox, int preserve_fds)
{
    const char *step = "setting the umask";
    if (proc->umask >= 0)
        umask((mode_t)proc->umask);
    char program[PATH_MAX];
    char **env = process_env(proc);
    step = "finding the program";
    if (!env || lookup_program(proc, program, sizeof program) < 0)
        goto fail;
    step = "dropping capabilities from the bounding set";
    if (drop_bounding(proc) < 0)
        goto fail;
    step = "keeping capabilities across the uid change";
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        goto fail;
    if (!proc->no_new_privileges && load_filters(filter, sandbox, &step) < 0)
        goto fail;
    step = "setting supplementary groups";
    if (setgroups(proc->n_additional_gids, proc->additional_gids) < 0 && errno != EPERM)
        goto fail;
    step = "switching user";
    if (setresgid(proc->gid, proc->gid, proc->gid) < 0 || setresuid(proc->uid, proc->uid, proc->uid) < 0)
        goto fail;
    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (set_caps(proc, &step) < 0)
        goto fail;
    step = "setting no_new_privs";
    if (proc->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        goto fail;
    if (proc->apparmor_profile && access("/proc/self/attr/apparmor/exec", W_OK) == 0) {
        char value[300];
        snprintf(value, sizeof value, "exec %s", proc->apparmor_profile);
        step = "setting the AppArmor profile";
        if (abx__write_file_at(AT_FDCWD, "/proc/self/attr/apparmor/exec", value) < 0)
            goto fail;
    }
    if (proc->no_new_privileges && load_filters(filter, sandbox, &step) < 0)
        goto fail;
    syscall(SYS_close_range, 3 + preserve_fds, ~0u, 4 /* CLOSE_RANGE_CLOEXEC */);
    environ = env;
    execv(program, proc->args);
    step = "exec";
fail:;
    int saved = errno;
    dprintf(2, "abx-oci: %s %s: %s\n", step, proc->args[0], strerror(saved));
    _exit(saved == ENOENT ? 127 : 126);
}

/* ---- hooks ---- */

int abx__oci_hooks_run(const abx_oci_hook *hooks, size_t n, const char *state_json, abx_error **err)
{
    for (size_t i = 0; i < n; i++) {
        const abx_oci_hook *h = &hooks[i];
        int in[2];
        if (pipe2(in, O_CLOEXEC) < 0)
            return abx__error_errno(err, ABX_ESYS, errno, "hook: pipe");
        pid_t pid = fork();
        if (pid < 0) {
            close(in[0]);
            close(in[1]);
            return abx__error_errno(err, ABX_ESYS, errno, "hook: fork");
        }
        if (pid == 0) {
            dup2(in[0], 0);
            char *no_env[] = {NULL};
            char *argv0[] = {h->path, NULL};
            execve(h->path, h->args && h->args[0] ? h->args : argv0, h->env ? h->env : no_env);
            _exit(127);
        }
        close(in[0]);
        /* the state fits the pipe (made large enough, up to the kernel's
         * pipe-max-size): a hook that never reads its stdin cannot hold the
         * runtime here past its timeout; what does not fit is cut */
        size_t len = strlen(state_json);
        fcntl(in[1], F_SETPIPE_SZ, (int)(len < (1u << 20) ? len + 1 : 1u << 20));
        fcntl(in[1], F_SETFL, O_NONBLOCK);
        (void)!write(in[1], state_json, len);
        close(in[1]);
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (h->timeout_s > 0 && pidfd >= 0) {
            struct pollfd pfd = {pidfd, POLLIN, 0};
            int ready;
            do
                ready = poll(&pfd, 1, h->timeout_s * 1000);
            while (ready < 0 && errno == EINTR);
            if (ready == 0)
                kill(pid, SIGKILL);
        }
        if (pidfd >= 0)
            close(pidfd);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && h->timeout_s > 0)
            return abx__error_set(err, ABX_ETIMEOUT, "hook %s did not end within its timeout of %d s",
                                  h->path, h->timeout_s);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return abx__error_set(err, ABX_EJAIL, "hook %s failed (exit status %d)", h->path,
                                  WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return 0;
}

/* The OCI state given to hooks on stdin. The caller frees it. */
static char *hook_state(const abx_oci_create_params *p, const char *status, pid_t pid)
{
    json_t *st =
        json_pack("{s:s, s:s, s:s, s:i, s:s, s:O}", "ociVersion", p->spec->oci_version, "id", p->id, "status",
                  status, "pid", (int)pid, "bundle", p->bundle, "annotations", p->spec->annotations);
    char *text = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    return text;
}

/* ---- the container's init (C) ---- */

__attribute__((noreturn)) static void container_init(const container_ctx *c, int fifo_fd, int console_fd,
                                                     scmp_filter_ctx filter)
{
    const abx_oci_spec *spec = c->p->spec;
    int fd = c->sync_fd;
    unsigned long prop = spec->rootfs_propagation ? spec->rootfs_propagation : MS_SLAVE | MS_REC;
    if (mount(NULL, "/", NULL, (prop & ~MS_SHARED) | MS_REC | (prop & MS_SHARED ? MS_SLAVE : 0), NULL) < 0)
        die(fd, "making / %s: %s", prop & MS_PRIVATE ? "private" : "a slave", strerror(errno));
    if (c->tree_fd >= 0) { /* the sandbox profile: the id-mapped view of the root, staged */
        if (mount("tmpfs", STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755") < 0 ||
            mkdir(STAGED_ROOT, 0755) < 0 ||
            move_mount(c->tree_fd, "", AT_FDCWD, STAGED_ROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            die(fd, "mounting the id-mapped root: %s", strerror(errno));
        close(c->tree_fd);
    } else if (mount(spec->root_path, spec->root_path, NULL, MS_BIND | MS_REC, NULL) < 0)
        die(fd, "binding the root %s: %s", spec->root_path, strerror(errno));
    for (size_t i = 0; i < spec->n_mounts; i++)
        mount_one(c, &spec->mounts[i]);
    setup_dev(c);
    sync_msg m;
    if (sync_send(fd, SYNC_HOOKS, 0, "createRuntime") < 0 || sync_recv(fd, &m) < 0 || m.kind != SYNC_GO)
        _exit(1);
    pid_t host_pid = m.value;
    char *state = hook_state(c->p, "created", host_pid);
    abx_error *herr = NULL;
    if (abx__oci_hooks_run(spec->hooks[ABX_OCI_HOOK_CREATE_CONTAINER],
                           spec->n_hooks[ABX_OCI_HOOK_CREATE_CONTAINER], state ? state : "{}", &herr) < 0)
        die(fd, "createContainer %s", abx_error_message(herr));
    pivot(c);
    if (spec->rootfs_propagation & MS_SHARED && mount(NULL, "/", NULL, spec->rootfs_propagation, NULL) < 0)
        die(fd, "making / shared: %s", strerror(errno));
    if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0)
        die(fd, "setting the hostname: %s", strerror(errno));
    if (spec->domainname && setdomainname(spec->domainname, strlen(spec->domainname)) < 0)
        die(fd, "setting the domain name: %s", strerror(errno));
    write_sysctls(c); /* before /proc/sys is made read-only */
    mask_paths(c, spec->masked_paths);
    readonly_paths(c, spec->readonly_paths);
    if (c->p->profile.sandbox) {
        mask_paths(c, sandbox_masked);
        readonly_paths(c, sandbox_readonly);
    }
    if (spec->root_readonly && remount_bind("/", MS_RDONLY) < 0)
        die(fd, "making the root read-only: %s", strerror(errno));
    if (chdir(spec->process.cwd) < 0)
        die(fd, "chdir to cwd (\"%s\") set in config.json failed: %s", spec->process.cwd, strerror(errno));
    char program[PATH_MAX];
    if (lookup_program(&spec->process, program, sizeof program) < 0)
        die(fd, "exec: \"%s\": executable file not found in $PATH", spec->process.args[0]);
    const char *step;
    if (console_fd >= 0 && setup_terminal(console_fd, &spec->process, &step) < 0)
        die(fd, "%s: %s", step, strerror(errno));
    if (sync_send(fd, SYNC_READY, 0, "ready") < 0)
        _exit(1);
    close(fd);
    char go;
    ssize_t got;
    do
        got = read(fifo_fd, &go, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1)
        _exit(1);
    /* fifo_fd stays open (close-on-exec): its closing at the exec tells
     * `start` the process runs, so that poststart hooks come after it */
    free(state);
    state = hook_state(c->p, "running", host_pid);
    if (abx__oci_hooks_run(spec->hooks[ABX_OCI_HOOK_START_CONTAINER],
                           spec->n_hooks[ABX_OCI_HOOK_START_CONTAINER], state ? state : "{}", &herr) < 0) {
        dprintf(2, "abx-oci: startContainer %s\n", abx_error_message(herr));
        _exit(1);
    }
    free(state);
    become_process(&spec->process, filter, c->p->profile.sandbox, c->p->preserve_fds);
}

/* ---- the intermediate (I) ---- */

static int open_ns(const char *path, int sync_fd)
{
    int nsfd = open(path, O_RDONLY | O_CLOEXEC);
    if (nsfd < 0)
        die(sync_fd, "opening namespace %s: %s", path, strerror(errno));
    return nsfd;
}

/* Joins the config's namespace paths (the user namespace first), then
 * makes the new ones (the user namespace first, its maps written by P). */
static void enter_namespaces(container_ctx *c)
{
    const abx_oci_spec *spec = c->p->spec;
    int fd = c->sync_fd;
    const abx_oci_namespace *user = abx__oci_spec_namespace(spec, CLONE_NEWUSER);
    /* the sandbox profile: always a user namespace of its own (lib/oci.c refuses one to join) */
    static const abx_oci_namespace fresh_user = {CLONE_NEWUSER, NULL};
    if (c->p->profile.sandbox)
        user = &fresh_user;
    if (user && user->path) {
        int nsfd = open_ns(user->path, fd);
        if (setns(nsfd, CLONE_NEWUSER) < 0)
            die(fd, "joining user namespace %s: %s", user->path, strerror(errno));
        close(nsfd);
    }
    int fresh = 0;
    for (size_t i = 0; i < spec->n_namespaces; i++) {
        const abx_oci_namespace *ns = &spec->namespaces[i];
        if (ns->flag == CLONE_NEWUSER)
            continue;
        if (!ns->path) {
            fresh |= ns->flag;
            continue;
        }
        int nsfd = open_ns(ns->path, fd);
        if (setns(nsfd, ns->flag) < 0)
            die(fd, "joining namespace %s: %s", ns->path, strerror(errno));
        close(nsfd);
    }
    c->in_userns = user != NULL;
    if (user && !user->path) {
        sync_msg m;
        if (unshare(CLONE_NEWUSER) < 0)
            die(fd, "making a user namespace: %s", strerror(errno));
        if (sync_send(fd, SYNC_MAPS, 0, "maps") < 0 || sync_recv(fd, &m) < 0 || m.kind != SYNC_GO)
            _exit(1);
        if (c->p->profile.sandbox && (c->tree_fd = abx__recv_fd(fd)) < 0)
            die(fd, "the id-mapped root did not arrive");
        for (size_t i = 0; c->p->profile.sandbox && i < spec->n_mounts; i++)
            if (spec->mounts[i].bind && (c->bind_fds[i] = abx__recv_fd(fd)) < 0)
                die(fd, "the source of mount %s did not arrive", spec->mounts[i].destination);
    }
    if (user && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0))
        die(fd, "becoming root in the user namespace: %s", strerror(errno));
    if (fresh && unshare(fresh) < 0)
        die(fd, "making namespaces: %s", strerror(errno));
}

static int write_idmap(pid_t pid, const char *file, const abx_oci_idmap *maps, size_t n, abx_error **err)
{
    char path[64], text[ABX_OCI_MAX_IDMAPS * 40 + 1] = "";
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%u %u %u\n", maps[i].container_id,
                                 maps[i].host_id, maps[i].size);
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    if (abx__write_file_at(AT_FDCWD, path, text) < 0)
        return abx__error_errno(err, ABX_EJAIL, errno, file);
    return 0;
}

/* The maps the container gets: the config's, or under the sandbox
 * profile its root and the ids above it moved onto the pool's range. */
static int write_maps(const abx_oci_create_params *p, pid_t pid, abx_error **err)
{
    const abx_oci_spec *spec = p->spec;
    if (p->profile.sandbox) {
        abx_oci_idmap own = {0, (uint32_t)p->profile.host_id_base, 65536};
        int rc = write_idmap(pid, "uid_map", &own, 1, err);
        return rc < 0 ? rc : write_idmap(pid, "gid_map", &own, 1, err);
    }
    int rc = write_idmap(pid, "uid_map", spec->uid_maps, spec->n_uid_maps, err);
    return rc < 0 ? rc : write_idmap(pid, "gid_map", spec->gid_maps, spec->n_gid_maps, err);
}

static int set_rlimits(pid_t pid, const abx_oci_process *proc, abx_error **err)
{
    for (size_t i = 0; i < proc->n_rlimits; i++) {
        struct rlimit rl = {proc->rlimits[i].soft, proc->rlimits[i].hard};
        if (prlimit(pid, (__rlimit_resource_t)proc->rlimits[i].resource, &rl, NULL) < 0)
            return abx__error_set(err, ABX_EJAIL, "error setting rlimit type %d: %s",
                                  proc->rlimits[i].resource, strerror(errno));
    }
    return 0;
}

static int set_oom_score(pid_t pid, const abx_oci_process *proc, abx_error **err)
{
    if (!proc->has_oom_score_adj)
        return 0;
    char path[64], value[16];
    snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)pid);
    snprintf(value, sizeof value, "%d", proc->oom_score_adj);
    return abx__write_file_at(AT_FDCWD, path, value) < 0
               ? abx__error_errno(err, ABX_EJAIL, errno, "oom_score_adj")
               : 0;
}

static int connect_console(const char *path, abx_error **err)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return abx__error_set(err, ABX_EINVAL, "--console-socket: the path is longer than %zu bytes",
                              sizeof addr.sun_path - 1);
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return abx__error_errno(err, ABX_EIO, saved, "connecting to the console socket");
    }
    return fd;
}

/* The sandbox profile: each bind mount's source as a detached tree, opened
 * here (the container's root cannot reach host paths under 0700
 * directories), id-mapped for its user namespace where the filesystem
 * allows it (else its files keep their host owners, shown as nobody). */
static int send_bind_sources(const abx_oci_spec *spec, pid_t child, int fd, abx_error **err)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        const abx_oci_mount *m = &spec->mounts[i];
        if (!m->bind)
            continue;
        int tree = abx__jail_idmapped_tree(m->source, child, NULL);
        if (tree < 0)
            tree = open_tree(AT_FDCWD, m->source,
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->flags & MS_REC ? AT_RECURSIVE : 0));
        if (tree < 0)
            return abx__error_errno(err, ABX_EJAIL, errno, m->source);
        int rc = abx__send_fd(fd, tree);
        close(tree);
        if (rc < 0)
            return abx__error_set(err, ABX_EJAIL, "the container's init is gone");
    }
    return 0;
}

/* P's side: waits for the messages of I and C until C is ready. */
static int parent_sync(const abx_oci_create_params *p, int fd, pid_t child, pid_t *pid, abx_error **err)
{
    sync_msg m;
    *pid = 0;
    while (sync_recv(fd, &m) == 0) {
        int rc = 0;
        switch ((enum sync_kind)m.kind) {
        case SYNC_ERR:
            return abx__error_set(err, ABX_EJAIL, "%s", m.text);
        case SYNC_MAPS:
            if ((rc = write_maps(p, child, err)) < 0)
                return rc;
            if (sync_send(fd, SYNC_GO, 0, "go") < 0)
                return abx__error_set(err, ABX_EJAIL, "the container's init is gone");
            if (p->profile.sandbox) { /* the root, id-mapped for the user namespace just made */
                int tree = abx__jail_idmapped_tree(p->spec->root_path, child, err);
                if (tree < 0)
                    return tree;
                rc = abx__send_fd(fd, tree);
                close(tree);
                if (rc < 0 || (rc = send_bind_sources(p->spec, child, fd, err)) < 0)
                    return rc < 0 && err && *err
                               ? rc
                               : abx__error_set(err, ABX_EJAIL, "the container's init is gone");
            }
            continue;
        case SYNC_PID:
            *pid = m.value;
            if ((rc = set_rlimits(*pid, &p->spec->process, err)) < 0 ||
                (rc = set_oom_score(*pid, &p->spec->process, err)) < 0)
                return rc;
            continue;
        case SYNC_HOOKS: {
            /* the init and its intermediate share this socket: the pid may come after */
            while (*pid <= 0) {
                sync_msg more;
                if (sync_recv(fd, &more) < 0)
                    return abx__error_set(err, ABX_EJAIL, "the container's init exited during setup");
                if (more.kind == SYNC_ERR)
                    return abx__error_set(err, ABX_EJAIL, "%s", more.text);
                if (more.kind != SYNC_PID)
                    return abx__error_set(err, ABX_EJAIL, "the container's init spoke out of turn");
                *pid = more.value;
                if ((rc = set_rlimits(*pid, &p->spec->process, err)) < 0 ||
                    (rc = set_oom_score(*pid, &p->spec->process, err)) < 0)
                    return rc;
            }
            /* the namespaces exist, the process does not yet: its egress filter goes on now */
            if (p->egress_script && (rc = abx__oci_egress_apply(*pid, p->egress_script, err)) < 0)
                return rc;
            if (p->profile.sandbox &&
                (rc = abx__oci_net_sysctls(*pid, p->spec->sysctl_keys, p->spec->sysctl_values,
                                           p->spec->n_sysctls, err)) < 0)
                return rc;
            char *state = hook_state(p, "created", *pid);
            rc = abx__oci_hooks_run(p->spec->hooks[ABX_OCI_HOOK_PRESTART],
                                    p->spec->n_hooks[ABX_OCI_HOOK_PRESTART], state ? state : "{}", err);
            if (rc == 0)
                rc = abx__oci_hooks_run(p->spec->hooks[ABX_OCI_HOOK_CREATE_RUNTIME],
                                        p->spec->n_hooks[ABX_OCI_HOOK_CREATE_RUNTIME], state ? state : "{}",
                                        err);
            free(state);
            if (rc < 0)
                return rc;
            if (sync_send(fd, SYNC_GO, *pid, "go") < 0)
                return abx__error_set(err, ABX_EJAIL, "the container's init is gone");
            continue;
        }
        case SYNC_READY:
            return *pid > 0 ? 0 : abx__error_set(err, ABX_EJAIL, "the container's init sent no pid");
        case SYNC_GO:
            break;
        }
        if (rc < 0)
            return rc;
        if (sync_send(fd, SYNC_GO, 0, "go") < 0)
            return abx__error_set(err, ABX_EJAIL, "the container's init is gone");
    }
    return abx__error_set(err, ABX_EJAIL, "the container's init exited during setup");
}

/* After the config's device rules, the devices every container gets and
 * the ones its config lists are allowed (as runc does): a config that
 * denies all still has /dev/null. */
static void allow_own_devices(const abx_oci_spec *spec, abx_cgroup_resources *res)
{
    static const abx_cgroup_device_rule defaults[] = {
        {true, 'c', 1, 3, "rwm"}, {true, 'c', 1, 5, "rwm"}, {true, 'c', 1, 7, "rwm"},
        {true, 'c', 1, 8, "rwm"}, {true, 'c', 1, 9, "rwm"}, {true, 'c', 5, 0, "rwm"},
        {true, 'c', 5, 1, "rwm"}, {true, 'c', 5, 2, "rwm"}, {true, 'c', 136, -1, "rwm"}};
    if (res->n_devices == 0)
        return; /* no rules: the cgroup's own (inherited) */
    for (size_t i = 0;
         i < sizeof defaults / sizeof defaults[0] && res->n_devices < ABX_CGROUP_MAX_DEVICE_RULES; i++)
        res->devices[res->n_devices++] = defaults[i];
    for (size_t i = 0; i < spec->n_devices && res->n_devices < ABX_CGROUP_MAX_DEVICE_RULES; i++) {
        const abx_oci_device *d = &spec->devices[i];
        if (d->type == 'p')
            continue;
        res->devices[res->n_devices++] =
            (abx_cgroup_device_rule){true, d->type == 'b' ? 'b' : 'c', d->major, d->minor, "rwm"};
    }
}

int abx__oci_container_create(const abx_oci_create_params *p, pid_t *pid, abx_cgroup *cg, abx_error **err)
{
    const abx_oci_spec *spec = p->spec;
    char path[256];
    snprintf(path, sizeof path, "%s", spec->cgroups_path ? spec->cgroups_path : "");
    if (!path[0])
        snprintf(path, sizeof path, "/abx-oci/%s", p->id);
    int rc = abx__cgroup_create_path(cg, path, err);
    if (rc < 0)
        return rc;
    abx_cgroup_resources res = spec->resources;
    allow_own_devices(spec, &res);
    if ((rc = abx__cgroup_apply(cg, &res, err)) < 0) {
        abx__cgroup_destroy(cg);
        return rc;
    }
    scmp_filter_ctx filter = spec->seccomp ? abx__oci_seccomp_build(spec->seccomp, err) : NULL;
    int console_fd = -1, fifo_fd = -1, sv[2] = {-1, -1};
    if (spec->seccomp && !filter) {
        rc = -ABX_EINVAL;
        goto fail;
    }
    if (spec->process.terminal && !p->console_socket) {
        rc = abx__error_set(err, ABX_EINVAL, "process.terminal is set but no --console-socket was given");
        goto fail;
    }
    if (p->console_socket && spec->process.terminal &&
        (console_fd = rc = connect_console(p->console_socket, err)) < 0)
        goto fail;
    if ((fifo_fd = open(p->fifo_path, O_RDWR | O_CLOEXEC)) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "opening the exec fifo");
        goto fail;
    }
    pid_t child = fork();
    if (child < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "fork");
        goto fail;
    }
    if (child == 0) {
        close(sv[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* until the exec: no process of the container may open our /proc
         * entries (exe is the runtime's binary: CVE-2019-5736) */
        prctl(PR_SET_DUMPABLE, 0);
        sync_msg m;
        if (sync_recv(sv[1], &m) < 0) /* moved into the cgroup */
            _exit(1);
        container_ctx c = {.p = p, .cg = cg, .sync_fd = sv[1], .tree_fd = -1, .root = spec->root_path};
        if (p->profile.sandbox) {
            c.root = STAGED_ROOT;
            if (!(c.bind_fds = malloc((spec->n_mounts + 1) * sizeof *c.bind_fds)))
                die(sv[1], "out of memory");
            for (size_t i = 0; i <= spec->n_mounts; i++)
                c.bind_fds[i] = -1;
        }
        enter_namespaces(&c);
        pid_t init = fork();
        if (init < 0)
            die(sv[1], "fork: %s", strerror(errno));
        if (init == 0) {
            prctl(PR_SET_PDEATHSIG, 0);
            container_init(&c, fifo_fd, console_fd, filter);
        }
        sync_send(sv[1], SYNC_PID, init, "pid");
        _exit(0);
    }
    close(sv[1]);
    sv[1] = -1;
    if ((rc = abx__cgroup_attach(cg, child, err)) < 0 || sync_send(sv[0], SYNC_GO, 0, "go") < 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        rc = rc < 0 ? rc : abx__error_set(err, ABX_EJAIL, "the container's intermediate process is gone");
        goto fail;
    }
    rc = parent_sync(p, sv[0], child, pid, err);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc < 0 && *pid > 0)
        kill(*pid, SIGKILL);
fail:
    if (filter)
        seccomp_release(filter);
    if (console_fd >= 0)
        close(console_fd);
    if (fifo_fd >= 0)
        close(fifo_fd);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (rc < 0)
        abx__cgroup_destroy(cg);
    return rc < 0 ? rc : 0;
}

/* ---- exec ---- */

/* Joins every namespace of the container's init that differs from ours,
 * the user namespace first. */
static void join_container(pid_t target, int fd)
{
    static const struct {
        const char *name;
        int flag;
    } order[] = {{"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
                 {"net", CLONE_NEWNET},   {"pid", CLONE_NEWPID}, {"cgroup", CLONE_NEWCGROUP},
                 {"mnt", CLONE_NEWNS}};
    enum { N = sizeof order / sizeof order[0] };
    /* every one opened first, while we are still the host's root: once in
     * the container's user namespace, a container init that has not exec'd
     * yet (not dumpable) no longer lets us open its others */
    int fds[N];
    for (size_t i = 0; i < N; i++) {
        char theirs[64], ours[64];
        snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)target, order[i].name);
        snprintf(ours, sizeof ours, "/proc/self/ns/%s", order[i].name);
        struct stat a, b;
        if (stat(theirs, &a) < 0)
            die(fd, "the container's %s namespace: %s", order[i].name, strerror(errno));
        bool same = stat(ours, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
        fds[i] = same ? -1 : open_ns(theirs, fd);
    }
    for (size_t i = 0; i < N; i++) {
        if (fds[i] < 0)
            continue;
        if (setns(fds[i], order[i].flag) < 0)
            die(fd, "joining the container's %s namespace: %s", order[i].name, strerror(errno));
        close(fds[i]);
    }
}

int abx__oci_container_exec(const abx_oci_exec_params *p, pid_t *pid, int *exit_status, abx_error **err)
{
    scmp_filter_ctx filter = p->spec->seccomp ? abx__oci_seccomp_build(p->spec->seccomp, err) : NULL;
    if (p->spec->seccomp && !filter)
        return -ABX_EINVAL;
    int console_fd = -1, sv[2] = {-1, -1}, rc = 0;
    *pid = 0;
    if (p->process->terminal && !p->console_socket) {
        rc = abx__error_set(err, ABX_EINVAL,
                            "a terminal needs --console-socket (abx-oci does not relay one itself)");
        goto out;
    }
    if (p->process->terminal && (console_fd = rc = connect_console(p->console_socket, err)) < 0)
        goto out;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "socketpair");
        goto out;
    }
    if (!p->detach)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t child = fork();
    if (child < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "fork");
        goto out;
    }
    if (child == 0) {
        close(sv[0]);
        prctl(PR_SET_DUMPABLE, 0); /* as at create: until the exec, nothing of ours is readable inside */
        sync_msg m;
        if (sync_recv(sv[1], &m) < 0)
            _exit(1);
        join_container(p->container_pid, sv[1]);
        pid_t proc = fork();
        if (proc < 0)
            die(sv[1], "fork: %s", strerror(errno));
        if (proc == 0) {
            const char *step;
            if (chdir(p->process->cwd) < 0)
                die(sv[1], "chdir to cwd (\"%s\"): %s", p->process->cwd, strerror(errno));
            char program[PATH_MAX];
            if (lookup_program(p->process, program, sizeof program) < 0)
                die(sv[1], "exec: \"%s\": executable file not found in $PATH", p->process->args[0]);
            if (console_fd >= 0 && setup_terminal(console_fd, p->process, &step) < 0)
                die(sv[1], "%s: %s", step, strerror(errno));
            if (!p->process->terminal)
                setsid();
            sync_msg go; /* its rlimits and OOM score set */
            if (sync_recv(sv[1], &go) < 0 || go.kind != SYNC_GO)
                _exit(1);
            sync_send(sv[1], SYNC_READY, 0, "ready");
            become_process(p->process, filter, p->profile.sandbox, p->preserve_fds);
        }
        sync_send(sv[1], SYNC_PID, proc, "pid");
        _exit(0);
    }
    close(sv[1]);
    sv[1] = -1;
    if ((rc = abx__cgroup_attach(p->cg, child, err)) < 0 || sync_send(sv[0], SYNC_GO, 0, "go") < 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        rc = rc < 0 ? rc : abx__error_set(err, ABX_EJAIL, "the exec's intermediate process is gone");
        goto out;
    }
    /* the intermediate's pid and the process's messages share the socket,
     * in either order: the pid first (its rlimits set, then "go"), then
     * the process's ready */
    sync_msg m;
    bool ready = false;
    while (rc == 0 && !ready && sync_recv(sv[0], &m) == 0) {
        if (m.kind == SYNC_ERR)
            rc = abx__error_set(err, ABX_EJAIL, "%s", m.text);
        else if (m.kind == SYNC_READY)
            ready = true;
        else if (m.kind == SYNC_PID && *pid <= 0) {
            *pid = m.value;
            if ((rc = set_rlimits(*pid, p->process, err)) == 0 &&
                (rc = set_oom_score(*pid, p->process, err)) == 0 && sync_send(sv[0], SYNC_GO, 0, "go") < 0)
                rc = abx__error_set(err, ABX_EJAIL, "the exec's process is gone");
        }
    }
    if (rc == 0 && !ready)
        rc = abx__error_set(err, ABX_EJAIL, "the exec's process ended before it started");
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    if (rc == 0 && *pid <= 0)
        rc = abx__error_set(err, ABX_EJAIL, "the exec's process did not start");
    if (rc < 0 || p->detach)
        goto out;
    int status = 0;
    while (waitpid(*pid, &status, 0) < 0 && errno == EINTR)
        ;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
    if (filter)
        seccomp_release(filter);
    if (console_fd >= 0)
        close(console_fd);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (rc < 0 && *pid > 0)
        kill(*pid, SIGKILL);
    return rc < 0 ? rc : 0;
}

/* ---- the in-container agent's init ---- */

/* The host id of uid 0 in target's user namespace (0 without one of its own). */
static uid_t host_root_of(pid_t target)
{
    char path[64], map[128] = "";
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)target);
    unsigned inside = 0, host = 0;
    if (abx__read_small_file(path, map, sizeof map) < 0 || sscanf(map, "%u %u", &inside, &host) != 2 ||
        inside != 0)
        return 0;
    return (uid_t)host;
}

int abx__oci_agent_init(pid_t target, const char *cgroup_path, abx_jail *jail, abx_error **err)
{
    abx__jail_clear(jail);
    abx_cgroup cg;
    abx__cgroup_open_path(&cg, cgroup_path);
    int ctl[2], sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "socketpair");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        close(ctl[0]);
        close(ctl[1]);
        return abx__error_errno(err, ABX_ESYS, errno, "socketpair");
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* the init, once its intermediate exits, is ours */
    pid_t child = fork();
    if (child == 0) {
        close(sv[0]);
        close(ctl[0]);
        prctl(PR_SET_DUMPABLE, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sync_msg m;
        if (sync_recv(sv[1], &m) < 0) /* moved into the cgroup */
            _exit(1);
        join_container(target, sv[1]);
        pid_t init = fork();
        if (init < 0)
            die(sv[1], "fork: %s", strerror(errno));
        if (init == 0) {
            scmp_filter_ctx own = abx__seccomp_policy_new(); /* no_new_privs with it */
            if (!own || seccomp_load(own) < 0)
                die(sv[1], "loading abx's seccomp list");
            seccomp_release(own);
            if (chdir("/") < 0)
                die(sv[1], "chdir /: %s", strerror(errno));
            prctl(PR_SET_NAME, "abx-envd"); /* what ps and podman top show of it inside */
            sync_send(sv[1], SYNC_READY, 0, "ready");
            close(sv[1]);
            abx__init_serve(ctl[1], true, false);
        }
        sync_send(sv[1], SYNC_PID, init, "pid");
        _exit(0);
    }
    close(sv[1]);
    close(ctl[1]);
    int rc = child < 0 ? abx__error_errno(err, ABX_ESYS, errno, "fork") : abx__cgroup_attach(&cg, child, err);
    if (rc == 0 && sync_send(sv[0], SYNC_GO, 0, "go") < 0)
        rc = abx__error_set(err, ABX_EJAIL, "the agent's intermediate process is gone");
    sync_msg m;
    pid_t init = 0;
    bool ready = false; /* the pid (from the intermediate) and ready (from the init) come in either order */
    while (rc == 0 && (init <= 0 || !ready) && sync_recv(sv[0], &m) == 0) {
        if (m.kind == SYNC_ERR)
            rc = abx__error_set(err, ABX_EJAIL, "the agent: %s", m.text);
        else if (m.kind == SYNC_PID)
            init = m.value;
        else if (m.kind == SYNC_READY)
            ready = true;
    }
    if (rc == 0 && !ready)
        rc = abx__error_set(err, ABX_EJAIL, "the agent's init ended before it served");
    if (rc == 0 && init <= 0)
        rc = abx__error_set(err, ABX_EJAIL, "the agent's init did not start");
    close(sv[0]);
    if (child > 0)
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
    if (rc < 0) {
        if (init > 0) {
            kill(init, SIGKILL);
            waitpid(init, NULL, 0);
        }
        close(ctl[0]);
        return rc;
    }
    jail->init_pid = init;
    jail->control_fd = ctl[0];
    jail->host_id_base = host_root_of(target);
    return 0;
}
