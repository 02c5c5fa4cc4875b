/* rootfs.c: the sandbox's root filesystem, planned as data, built in one place.
 *
 * Owns: the layout a sandboxed process sees. It is planned first as a list
 * of operations (plan_*), then executed by one linear function (run_ops)
 * that checks every system call, then entered with pivot_root. The layout:
 *
 *   /            tmpfs of disk_mb (the writable layer: all writes land here,
 *                bounded in size), nosuid, nodev
 *   /usr         host /usr, read-only, nosuid, nodev (the read-only base)
 *   /bin /sbin /lib* the host's merged-usr symlinks (or read-only binds)
 *   /etc         generated passwd, group, hosts, hostname; a curated list
 *                of host files bound read-only (certificates, loader cache,
 *                alternatives, resolver, locale and shell profiles,
 *                matplotlib's and fontconfig's settings)
 *   /app         working directory, owned by user (uid 1000)
 *   /home/user   user's home; /root root's home; /tmp and /var/tmp 1777
 *   /proc        a fresh procfs of the sandbox's pid namespace, with
 *                /proc/sys, sysrq-trigger, irq, bus, fs read-only and the
 *                kernel-memory files masked
 *   /dev         tmpfs with null zero full random urandom tty (host nodes
 *                bound), a new devpts instance, ptmx, shm (64 MiB tmpfs)
 *
 * From an imported template (docs/templates.md) the root is instead an
 * overlay: the template's tree (an id-mapped mount the supervisor hands
 * over) below, the sandbox's tmpfs of disk_mb above; /etc keeps the
 * template's files but hostname, hosts and resolv.conf; the rest as above.
 * A template build's step (lib/local/template_build.c) writes the tree
 * itself: it is the root, with /dev and /proc mounted on it and the three
 * /etc files bound over the tree's (a step's changes are the build's).
 *
 * Nothing else of the host exists inside: no home directories, no /run, no
 * sockets, no /sys. The staging mount point is /tmp of the new mount
 * namespace, hidden by the pivot. Does not own namespaces, users or seccomp
 * (jail.c, privs.c, seccomp_policy.c).
 */
#include "rootfs.h"
#include "abx/abx.h"
#include "privs.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/tmp"
#define TEMPLATE_ROOT "/tmp/root" /* the overlay; its layers beside it in the /tmp tmpfs */
#define MAX_OPS 128
#define POOL_SIZE 16384
#define SHM_SIZE "size=64m,mode=1777"
#define NO_OWNER ((uid_t)-1)
#define ABX_SANDBOX_PATH_FOR_PROFILE "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef enum op_kind {
    OP_TMPFS,       /* mount a tmpfs at dst with options data */
    OP_DIR,         /* mkdir dst with mode, chown to owner */
    OP_FILE,        /* create dst with content data and mode */
    OP_COPY,        /* copy the small host file src to dst (cheaper than a bind) */
    OP_SYMLINK,     /* symlink dst -> data */
    OP_RO_BIND,     /* bind host src at dst, read-only, nosuid, nodev */
    OP_DEV_BIND,    /* bind host device src at dst, nosuid, noexec */
    OP_DEVPTS,      /* new devpts instance at dst with options data */
    OP_PROC,        /* fresh procfs at dst */
    OP_RO_SELF,     /* remount dst (inside the new tree) read-only */
    OP_MASK,        /* bind the tree's /dev/null over dst */
    OP_BIND_FILE,   /* bind the staged file src over dst (made an empty file first if it is not one) */
    OP_ENSURE_LINE, /* append the line data to dst unless a line there starts with src (made if missing) */
} op_kind;

typedef struct mount_op {
    op_kind kind;
    const char *src;  /* host path (binds) */
    const char *dst;  /* absolute path inside the sandbox */
    const char *data; /* options, content or link target */
    mode_t mode;
    uid_t owner;
    bool optional;   /* a missing src or dst is skipped, not an error */
    bool replace;    /* OP_FILE: over what a template has there (else a new file) */
    bool if_missing; /* OP_FILE: only where a template has nothing */
} mount_op;

typedef struct op_plan {
    const char *root; /* where the tree is built: NEWROOT, or TEMPLATE_ROOT over a template */
    mount_op ops[MAX_OPS];
    int n;
    char pool[POOL_SIZE];
    size_t used;
    bool overflow;
    bool durable; /* the root or its upper layer is a durable layer: what a start made may be there */
} op_plan;

/* Copies a formatted string into the plan's pool; NULL (and overflow) when full. */
__attribute__((format(printf, 2, 3))) static const char *pool_fmt(op_plan *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->pool + p->used, POOL_SIZE - p->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= POOL_SIZE - p->used) {
        p->overflow = true;
        return NULL;
    }
    const char *s = p->pool + p->used;
    p->used += (size_t)n + 1;
    return s;
}

static void add(op_plan *p, mount_op op)
{
    if (p->n >= MAX_OPS || (op.dst == NULL)) {
        p->overflow = true;
        return;
    }
    p->ops[p->n++] = op;
}

static void add_dir(op_plan *p, const char *dst, mode_t mode, uid_t owner)
{
    add(p, (mount_op){.kind = OP_DIR, .dst = dst, .mode = mode, .owner = owner});
}

/* A host path that is a symlink becomes the same symlink when it points
 * into /usr (which exists inside). Otherwise a small regular file is copied
 * into the writable layer (root-owned, so only root inside could change its
 * own copy) and a directory is bound read-only. */
#define COPY_MAX_BYTES (256u << 10)

static void host_path_target(op_plan *p, const char *src, const char *dst, bool optional)
{
    struct stat st;
    bool small_file = stat(src, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (off_t)COPY_MAX_BYTES;
    add(p, (mount_op){.kind = small_file ? OP_COPY : OP_RO_BIND,
                      .src = src,
                      .dst = dst,
                      .mode = 0644,
                      .optional = optional});
}

static void add_host_entry(op_plan *p, const char *host_path, bool optional)
{
    struct stat st;
    if (lstat(host_path, &st) < 0) {
        if (!optional)
            add(p, (mount_op){.kind = OP_RO_BIND, .src = host_path, .dst = host_path});
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        char target[PATH_MAX], resolved[PATH_MAX];
        ssize_t n = readlink(host_path, target, sizeof target - 1);
        if (n < 0 || !realpath(host_path, resolved))
            return; /* dangling: nothing to show */
        target[n] = '\0';
        if (strncmp(resolved, "/usr/", 5) == 0) {
            add(p, (mount_op){.kind = OP_SYMLINK, .dst = host_path, .data = pool_fmt(p, "%s", target)});
            return;
        }
        host_path_target(p, pool_fmt(p, "%s", resolved), host_path, optional);
        return;
    }
    host_path_target(p, host_path, host_path, optional);
}

static void plan_base(op_plan *p, const abx_rootfs_spec *spec)
{
    if (spec->layer_fd < 0 && spec->template_fd < 0) /* a durable layer or a snapshot's overlay is the root */
        add(p, (mount_op){
                   .kind = OP_TMPFS, .dst = "/", .data = pool_fmt(p, "size=%um,mode=0755", spec->disk_mb)});
    add_dir(p, "/usr", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_RO_BIND, .src = "/usr", .dst = "/usr"});
    static const char *const top_links[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < sizeof top_links / sizeof top_links[0]; i++)
        add_host_entry(p, top_links[i], true);
}

static void plan_etc(op_plan *p, const abx_rootfs_spec *spec)
{
    const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
    add_dir(p, "/etc", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/passwd",
                      .mode = 0644,
                      .data = pool_fmt(p,
                                       "root:x:0:0:root:/root:%s\n"
                                       "user:x:1000:1000:user:/home/user:%s\n"
                                       "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                                       shell, shell)});
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/group",
                      .mode = 0644,
                      .data = "root:x:0:\ntty:x:5:\nusers:x:100:user\nuser:x:1000:\nnogroup:x:65534:\n"});
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/hostname",
                      .mode = 0644,
                      .data = pool_fmt(p, "%s\n", spec->hostname)});
    /* Our own login profile: `bash -l -c` runs it before every command, so
     * it forks nothing (Debian's runs id(1)); /etc/profile.d is the
     * sandbox's own, empty, for root inside to fill. */
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/profile",
                      .mode = 0644,
                      .data = "# /etc/profile: written by abx for this sandbox; it starts no processes.\n"
                              "PATH=" ABX_SANDBOX_PATH_FOR_PROFILE "\n"
                              "export PATH\n"
                              "if [ \"${PS1-}\" ] && [ \"${BASH-}\" ] && [ \"$BASH\" != /bin/sh ] && [ -f "
                              "/etc/bash.bashrc ]; then\n"
                              "  . /etc/bash.bashrc\n"
                              "fi\n"
                              "for i in /etc/profile.d/*.sh; do\n"
                              "  [ -r \"$i\" ] && . \"$i\"\n"
                              "done\n"
                              "unset i\n"});
    add_dir(p, "/etc/profile.d", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/hosts",
                      .mode = 0644,
                      .data = pool_fmt(p,
                                       "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                                       "127.0.1.1\t%s\n",
                                       spec->hostname)});
    static const char *const curated[] = {
        "/etc/alternatives",
        "/etc/ssl",
        "/etc/ca-certificates",
        "/etc/ca-certificates.conf",
        "/etc/pki",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/nsswitch.conf",
        "/etc/host.conf",
        "/etc/gai.conf",
        "/etc/protocols",
        "/etc/services",
        "/etc/mime.types",
        "/etc/localtime",
        "/etc/timezone",
        "/etc/locale.alias",
        "/etc/locale.gen",
        "/etc/default/locale",
        "/etc/bash.bashrc",
        "/etc/inputrc",
        "/etc/environment",
        "/etc/login.defs",
        "/etc/os-release",
        "/etc/debian_version",
        "/etc/terminfo",
        "/etc/magic",
        "/etc/python3",
        "/etc/python3.11",
        "/etc/perl",
        "/etc/papersize",
        "/etc/skel",
        "/etc/matplotlibrc",
        "/etc/fonts",
    };
    /* a copy, not a bind: a sandbox given a network later gets its own resolver here (runtime/net.c) */
    if (spec->resolv_conf)
        add(p,
            (mount_op){.kind = OP_FILE, .dst = "/etc/resolv.conf", .mode = 0644, .data = spec->resolv_conf});
    else if (access("/etc/resolv.conf", R_OK) == 0)
        add(p,
            (mount_op){.kind = OP_COPY, .src = "/etc/resolv.conf", .dst = "/etc/resolv.conf", .mode = 0644});
    bool has_default = false;
    for (size_t i = 0; i < sizeof curated / sizeof curated[0]; i++) {
        if (strncmp(curated[i], "/etc/default/", 13) == 0 && !has_default) {
            if (access(curated[i], F_OK) != 0)
                continue;
            add_dir(p, "/etc/default", 0755, NO_OWNER);
            has_default = true;
        }
        add_host_entry(p, curated[i], true);
    }
}

static void plan_dirs(op_plan *p, const abx_rootfs_spec *spec)
{
    uid_t user = spec->full_id_range ? ABX_SANDBOX_USER_UID : NO_OWNER;
    add_dir(p, "/app", 0755, user);
    add_dir(p, "/home", 0755, NO_OWNER);
    add_dir(p, "/home/user", 0755, user);
    add_dir(p, "/root", 0700, NO_OWNER);
    add_dir(p, "/tmp", 01777, NO_OWNER);
    add_dir(p, "/var", 0755, NO_OWNER);
    add_dir(p, "/var/tmp", 01777, NO_OWNER);
    add_dir(p, "/run", 0755, NO_OWNER);
    add_dir(p, "/opt", 0755, NO_OWNER);
    add_dir(p, "/mnt", 0755, NO_OWNER);
}

static void plan_dev(op_plan *p, const abx_rootfs_spec *spec)
{
    add_dir(p, "/dev", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_TMPFS, .dst = "/dev", .data = "size=256k,mode=0755"});
    static const char *const nodes[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                        "/dev/random", "/dev/urandom", "/dev/tty"};
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
        add(p, (mount_op){.kind = OP_DEV_BIND, .src = nodes[i], .dst = nodes[i]});
    add_dir(p, "/dev/pts", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_DEVPTS,
                      .dst = "/dev/pts",
                      .data = spec->full_id_range ? "newinstance,ptmxmode=0666,mode=620,gid=5"
                                                  : "newinstance,ptmxmode=0666,mode=620"});
    add(p, (mount_op){.kind = OP_SYMLINK, .dst = "/dev/ptmx", .data = "pts/ptmx"});
    add_dir(p, "/dev/shm", 01777, NO_OWNER);
    add(p, (mount_op){.kind = OP_TMPFS, .dst = "/dev/shm", .data = SHM_SIZE});
    add(p, (mount_op){.kind = OP_SYMLINK, .dst = "/dev/fd", .data = "/proc/self/fd"});
    add(p, (mount_op){.kind = OP_SYMLINK, .dst = "/dev/stdin", .data = "/proc/self/fd/0"});
    add(p, (mount_op){.kind = OP_SYMLINK, .dst = "/dev/stdout", .data = "/proc/self/fd/1"});
    add(p, (mount_op){.kind = OP_SYMLINK, .dst = "/dev/stderr", .data = "/proc/self/fd/2"});
}

static void plan_proc(op_plan *p)
{
    add_dir(p, "/proc", 0555, NO_OWNER);
    add(p, (mount_op){.kind = OP_PROC, .dst = "/proc"});
    static const char *const read_only[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus",
                                            "/proc/fs"};
    for (size_t i = 0; i < sizeof read_only / sizeof read_only[0]; i++)
        add(p, (mount_op){.kind = OP_RO_SELF, .dst = read_only[i], .optional = true});
    /* what Docker masks, the host's kernel command line and configuration;
     * files readable by host root only (slabinfo, vmallocinfo, ...) need no
     * mask: root inside is not host root */
    static const char *const masked[] = {
        "/proc/kcore",    "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats",
        "/proc/kallsyms", "/proc/kmsg", "/proc/cmdline",    "/proc/timer_stats", "/proc/acpi",
        "/proc/asound",   "/proc/scsi", "/proc/config.gz"};
    for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++)
        add(p, (mount_op){.kind = OP_MASK, .dst = masked[i], .optional = true});
}

/* ---- execution --------------------------------------------------------- */

unsigned long abx__rootfs_locked_flags(const char *path)
{
    struct statvfs sv;
    if (statvfs(path, &sv) < 0)
        return 0;
    unsigned long f = 0;
    if (sv.f_flag & ST_NOSUID)
        f |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV)
        f |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC)
        f |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME)
        f |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME)
        f |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME)
        f |= MS_RELATIME;
    if (sv.f_flag & ST_RDONLY)
        f |= MS_RDONLY;
    return f;
}

static int bind_at(const char *src, const char *target, unsigned long extra)
{
    struct stat st;
    if (stat(src, &st) < 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        if (abx__mkdir_exist_ok(target, 0755) < 0)
            return -1;
    } else if (access(target, F_OK) != 0 && abx__create_file(target, NULL, 0444) < 0) {
        return -1;
    }
    if (mount(src, target, NULL, MS_BIND | MS_SILENT, NULL) < 0)
        return -1;
    return mount(NULL, target, NULL,
                 MS_REMOUNT | MS_BIND | MS_SILENT | extra | abx__rootfs_locked_flags(target), NULL);
}

/* Copies a small host file into the new tree (never following a symlink
 * at the target, which we created moments ago in an empty tmpfs). */
static int copy_file(const char *src, const char *target, mode_t mode)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (out < 0) {
        int saved = errno;
        close(in);
        errno = saved;
        return -1;
    }
    char buf[16384];
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = abx__read_full(in, buf, sizeof buf)) > 0)
        rc = abx__write_all(out, buf, (size_t)n);
    if (n < 0)
        rc = -1;
    int saved = errno;
    close(in);
    close(out);
    errno = saved;
    return rc;
}

/* A template build's /etc/hosts and the like: the tree's own file (or a
 * link, which could point anywhere before the pivot) becomes an empty
 * regular file, and the staged one is bound over it, read-only. */
static int bind_file_over(const char *src, const char *target)
{
    struct stat st;
    if (lstat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return -1;
        }
        if (unlink(target) < 0)
            return -1;
    }
    int fd = open(target, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    if (mount(src, target, NULL, MS_BIND | MS_SILENT, NULL) < 0)
        return -1;
    return mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_SILENT,
                 NULL);
}

/* A template's /etc/passwd or /etc/group without abx's user: the entry is
 * appended (in the sandbox's writable layer; the template is untouched).
 * Reads at most 1 MiB of the file: a longer one is left as it is. */
static int ensure_line(const char *target, const char *prefix, const char *line)
{
    int fd = open(target, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    const size_t cap = 1u << 20;
    char *buf = malloc(cap);
    ssize_t n = buf ? abx__read_full(fd, buf, cap - 1) : -1;
    int rc = n < 0 ? -1 : 0;
    bool found = false;
    if (n >= 0 && (size_t)n < cap - 1) {
        buf[n] = '\0';
        size_t plen = strlen(prefix);
        for (const char *c = buf; c && *c; c = strchr(c, '\n') ? strchr(c, '\n') + 1 : NULL)
            found = found || strncmp(c, prefix, plen) == 0;
        if (!found && n > 0 && buf[n - 1] != '\n')
            rc = abx__write_all(fd, "\n", 1);
        if (!found && rc == 0)
            rc = abx__write_all(fd, line, strlen(line));
    }
    int saved = errno;
    free(buf);
    close(fd);
    errno = saved;
    return rc;
}

/* A durable layer keeps what the last start made: a file or link the plan
 * makes replaces the one there (a directory there is an error). */
static int clear_for(const char *target, bool durable)
{
    return durable && unlink(target) < 0 && errno != ENOENT ? -1 : 0;
}

static int run_op(const mount_op *op, const char *target, const char *null_dev, bool durable)
{
    switch (op->kind) {
    case OP_TMPFS:
        return mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, op->data);
    case OP_DIR:
        if (mkdir(target, op->mode) < 0 && errno != EEXIST)
            return -1;
        if (chmod(target, op->mode) < 0)
            return -1;
        return op->owner == NO_OWNER ? 0 : chown(target, op->owner, op->owner);
    case OP_FILE:
        if (op->if_missing && access(target, F_OK) == 0)
            return 0;
        if ((op->replace || durable) && unlink(target) < 0 && errno != ENOENT)
            return -1;
        return abx__create_file(target, op->data, op->mode);
    case OP_COPY:
        return clear_for(target, durable) < 0 ? -1 : copy_file(op->src, target, op->mode);
    case OP_SYMLINK:
        return clear_for(target, durable) < 0 ? -1 : symlink(op->data, target);
    case OP_RO_BIND:
        return bind_at(op->src, target, MS_RDONLY | MS_NOSUID | MS_NODEV);
    case OP_DEV_BIND:
        return bind_at(op->src, target, MS_NOSUID | MS_NOEXEC);
    case OP_DEVPTS:
        return mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC | MS_SILENT, op->data);
    case OP_PROC:
        return mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SILENT, NULL);
    case OP_RO_SELF:
        return bind_at(target, target, MS_RDONLY | MS_NOSUID | MS_NODEV);
    case OP_MASK: { /* a file: /dev/null over it; a directory: an empty read-only tmpfs */
        struct stat st;
        if (stat(target, &st) == 0 && S_ISDIR(st.st_mode))
            return mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_SILENT,
                         "size=4k,mode=0555");
        return mount(null_dev, target, NULL, MS_BIND | MS_SILENT, NULL);
    }
    case OP_BIND_FILE:
        return bind_file_over(op->src, target);
    case OP_ENSURE_LINE:
        return ensure_line(target, op->src, op->data);
    }
    errno = EINVAL;
    return -1;
}

static const char *op_name(op_kind k)
{
    switch (k) {
    case OP_TMPFS:
        return "mounting tmpfs";
    case OP_DIR:
        return "creating directory";
    case OP_FILE:
        return "writing file";
    case OP_COPY:
        return "copying file";
    case OP_SYMLINK:
        return "creating symlink";
    case OP_RO_BIND:
        return "binding read-only";
    case OP_DEV_BIND:
        return "binding device";
    case OP_DEVPTS:
        return "mounting devpts";
    case OP_PROC:
        return "mounting proc";
    case OP_RO_SELF:
        return "making read-only";
    case OP_MASK:
        return "masking";
    case OP_BIND_FILE:
        return "binding over";
    case OP_ENSURE_LINE:
        return "adding an entry to";
    }
    return "?";
}

static int run_ops(const op_plan *p, char *errbuf, size_t errlen)
{
    for (int i = 0; i < p->n; i++) {
        const mount_op *op = &p->ops[i];
        char target[PATH_MAX];
        snprintf(target, sizeof target, "%s%s", p->root, op->dst);
        if (op->optional) {
            bool missing = (op->src && access(op->src, F_OK) != 0) ||
                           ((op->kind == OP_RO_SELF || op->kind == OP_MASK) && access(target, F_OK) != 0);
            if (missing)
                continue;
        }
        char null_dev[64];
        snprintf(null_dev, sizeof null_dev, "%s/dev/null", p->root);
        if (run_op(op, target, null_dev, p->durable) < 0) {
            snprintf(errbuf, errlen, "%s %s: %s", op_name(op->kind), op->dst, strerror(errno));
            return -ABX_EJAIL;
        }
    }
    return 0;
}

/* pivot_root(".", ".") stacks the old root under the new one; detaching it
 * leaves the new tree alone (the technique runc, LXC and bubblewrap use). */
static int enter_root(const char *root, char *errbuf, size_t errlen)
{
    const char *step = "entering the new root";
    if (chdir(root) < 0)
        goto fail;
    step = "pivot_root";
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        goto fail;
    step = "detaching the host root";
    if (umount2(".", MNT_DETACH) < 0)
        goto fail;
    step = "chdir /";
    if (chdir("/") < 0)
        goto fail;
    return 0;
fail:
    snprintf(errbuf, errlen, "%s: %s", step, strerror(errno));
    return -ABX_EJAIL;
}

/* A template's /etc: what the sandbox needs of its own (hostname, hosts,
 * resolv.conf) over the template's; passwd, group and profile only where
 * the template has none. */
static void plan_etc_template(op_plan *p, const abx_rootfs_spec *spec)
{
    add_dir(p, "/etc", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/passwd",
                      .mode = 0644,
                      .if_missing = true,
                      .data = "root:x:0:0:root:/root:/bin/sh\n"});
    add(p,
        (mount_op){
            .kind = OP_FILE, .dst = "/etc/group", .mode = 0644, .if_missing = true, .data = "root:x:0:\n"});
    add(p, (mount_op){.kind = OP_ENSURE_LINE,
                      .dst = "/etc/passwd",
                      .src = "user:",
                      .data = "user:x:1000:1000:user:/home/user:/bin/sh\n"});
    add(p, (mount_op){.kind = OP_ENSURE_LINE, .dst = "/etc/group", .src = "user:", .data = "user:x:1000:\n"});
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/hostname",
                      .mode = 0644,
                      .replace = true,
                      .data = pool_fmt(p, "%s\n", spec->hostname)});
    add(p,
        (mount_op){.kind = OP_FILE,
                   .dst = "/etc/hosts",
                   .mode = 0644,
                   .replace = true,
                   .data = pool_fmt(
                       p, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n",
                       spec->hostname)});
    add(p, (mount_op){.kind = OP_FILE,
                      .dst = "/etc/resolv.conf",
                      .mode = 0644,
                      .replace = true,
                      .data = spec->resolv_conf ? spec->resolv_conf : "# no network\n"});
}

/* A durable sandbox from the host view: its layer (an id-mapped ext4
 * mount from the supervisor) is the root itself. */
static int stage_layer(const abx_rootfs_spec *spec, char *errbuf, size_t errlen)
{
    if (move_mount(spec->layer_fd, "", AT_FDCWD, NEWROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
        chmod(NEWROOT, 0755) < 0) {
        snprintf(errbuf, errlen, "the durable layer: %s", strerror(errno));
        return -ABX_EJAIL;
    }
    return 0;
}

/* The template's tree (an idmapped mount from the supervisor) as the lower
 * layer of an overlay whose upper layer lies on a tmpfs of disk_mb, or on
 * the durable layer (upper/ and work/ in it, kept from start to start). */
static int stage_template(const abx_rootfs_spec *spec, char *errbuf, size_t errlen)
{
    char opts[64];
    bool durable = spec->layer_fd >= 0;
    snprintf(opts, sizeof opts, "size=%um,mode=0755", durable ? 1 : spec->disk_mb);
    const char *step = "the writable layer";
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, opts) < 0)
        goto fail;
    step = "the overlay's directories";
    static const char *const dirs[] = {NEWROOT "/lower", NEWROOT "/layer", TEMPLATE_ROOT};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdir(dirs[i], 0755) < 0)
            goto fail;
    step = "attaching the durable layer";
    if (durable && move_mount(spec->layer_fd, "", AT_FDCWD, NEWROOT "/layer", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        goto fail;
    step = "the overlay's directories";
    static const char *const kept[] = {NEWROOT "/layer/upper", NEWROOT "/layer/work"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (mkdir(kept[i], 0755) < 0 && !(durable && errno == EEXIST))
            goto fail;
    step = "attaching the template";
    if (move_mount(spec->template_fd, "", AT_FDCWD, NEWROOT "/lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        goto fail;
    step = "the overlay";
    /* userxattr: overlay's own xattrs in user.overlay.*, which a user
     * namespace may set on the tmpfs (6.6+): without them a directory
     * rename fails with EXDEV (dpkg does those); an older kernel gets the
     * overlay without it */
    if (mount("overlay", TEMPLATE_ROOT, "overlay", MS_NOSUID | MS_NODEV | MS_SILENT,
              "lowerdir=" NEWROOT "/lower,upperdir=" NEWROOT "/layer/upper,workdir=" NEWROOT
              "/layer/work,userxattr") < 0 &&
        mount("overlay", TEMPLATE_ROOT, "overlay", MS_NOSUID | MS_NODEV | MS_SILENT,
              "lowerdir=" NEWROOT "/lower,upperdir=" NEWROOT "/layer/upper,workdir=" NEWROOT
              "/layer/work") < 0)
        goto fail;
    step = "opening the writable layer for the supervisor";
    if (spec->upper_out && (*spec->upper_out = open(NEWROOT "/layer/upper",
                                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        goto fail;
    return 0;
fail:
    snprintf(errbuf, errlen, "template: %s: %s", step, strerror(errno));
    return -ABX_EJAIL;
}

/* A template build's step: the tree (an idmapped mount, writable) is the
 * root; hostname, hosts and resolv.conf are staged on a small tmpfs beside
 * it and bound over the tree's. */
static int stage_template_rw(op_plan *p, const abx_rootfs_spec *spec, char *errbuf, size_t errlen)
{
    const char *step = "the staging area";
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV | MS_SILENT, "size=1m,mode=0755") < 0 ||
        mkdir(TEMPLATE_ROOT, 0755) < 0)
        goto fail;
    step = "attaching the template";
    if (move_mount(spec->template_fd, "", AT_FDCWD, TEMPLATE_ROOT, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        goto fail;
    step = "staging /etc";
    char hosts[512];
    snprintf(hosts, sizeof hosts,
             "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n",
             spec->hostname);
    char hostname[300];
    snprintf(hostname, sizeof hostname, "%s\n", spec->hostname);
    if (abx__create_file(NEWROOT "/.hostname", hostname, 0644) < 0 ||
        abx__create_file(NEWROOT "/.hosts", hosts, 0644) < 0)
        goto fail;
    if (spec->resolv_conf ? abx__create_file(NEWROOT "/.resolv", spec->resolv_conf, 0644) < 0
                          : copy_file("/etc/resolv.conf", NEWROOT "/.resolv", 0644) < 0)
        goto fail;
    add_dir(p, "/etc", 0755, NO_OWNER);
    add(p, (mount_op){.kind = OP_BIND_FILE, .src = NEWROOT "/.hostname", .dst = "/etc/hostname"});
    add(p, (mount_op){.kind = OP_BIND_FILE, .src = NEWROOT "/.hosts", .dst = "/etc/hosts"});
    add(p, (mount_op){.kind = OP_BIND_FILE, .src = NEWROOT "/.resolv", .dst = "/etc/resolv.conf"});
    return 0;
fail:
    snprintf(errbuf, errlen, "template: %s: %s", step, strerror(errno));
    return -ABX_EJAIL;
}

static int rootfs_build_tree(const abx_rootfs_spec *spec, char *errbuf, size_t errlen);

/* Mounts the volume's tree at path inside root: each component made a
 * directory where missing and opened without following a link, so that
 * nothing in a template's tree can send the mount outside it. */
static int attach_volume(const char *root, const abx_rootfs_volume *v, char *errbuf, size_t errlen)
{
    char rest[PATH_MAX];
    snprintf(rest, sizeof rest, "%s", v->path + 1);
    int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const char *step = "the root";
    for (char *comp = rest, *next; dir >= 0 && comp && *comp; comp = next) {
        next = strchr(comp, '/');
        if (next)
            *next++ = '\0';
        step = "making its directory";
        if (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST)
            goto fail;
        step = "a component that is not a directory";
        int sub = openat(dir, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dir);
        dir = sub;
    }
    if (dir < 0)
        goto fail;
    step = "attaching it";
    if (move_mount(v->fd, "", dir, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        goto fail;
    close(dir);
    return 0;
fail:
    snprintf(errbuf, errlen, "volume at %s: %s: %s", v->path, step, strerror(errno));
    if (dir >= 0)
        close(dir);
    return -ABX_EJAIL;
}

static void close_volumes(const abx_rootfs_spec *spec)
{
    if (spec->layer_fd >= 0)
        close(spec->layer_fd);
    for (size_t i = 0; i < spec->n_volumes; i++)
        if (spec->volumes[i].fd >= 0)
            close(spec->volumes[i].fd);
}

int abx__rootfs_build(const abx_rootfs_spec *spec, char *errbuf, size_t errlen)
{
    int rc = rootfs_build_tree(spec, errbuf, errlen);
    close_volumes(spec);
    return rc;
}

static int rootfs_build_tree(const abx_rootfs_spec *spec, char *errbuf, size_t errlen)
{
    op_plan plan; /* about 22 KiB: on the init's stack, which is the process stack */
    memset(&plan, 0, sizeof plan);
    plan.root = NEWROOT;
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
        snprintf(errbuf, errlen, "making mounts private: %s", strerror(errno));
        return -ABX_EJAIL;
    }
    if (spec->template_fd >= 0 && spec->template_writable) {
        int rc = stage_template_rw(&plan, spec, errbuf, errlen);
        close(spec->template_fd);
        if (rc < 0)
            return rc;
        plan.root = TEMPLATE_ROOT;
    } else if (spec->template_fd >= 0) {
        int rc = stage_template(spec, errbuf, errlen);
        close(spec->template_fd);
        if (rc < 0)
            return rc;
        plan.root = TEMPLATE_ROOT;
        if (spec->host_view) { /* a snapshot of a host-view sandbox: the host's /usr under its tree */
            plan_base(&plan, spec);
            plan_etc(&plan, spec);
        } else {
            plan_etc_template(&plan, spec);
        }
    } else {
        if (spec->layer_fd >= 0) {
            int rc = stage_layer(spec, errbuf, errlen);
            if (rc < 0)
                return rc;
        }
        plan_base(&plan, spec);
        plan_etc(&plan, spec);
    }
    plan.durable = spec->layer_fd >= 0 || spec->host_view; /* what the plan makes may be there already */
    if (!spec->template_writable)
        plan_dirs(&plan, spec);
    plan_dev(&plan, spec);
    plan_proc(&plan);
    if (plan.overflow) {
        snprintf(errbuf, errlen, "rootfs plan too large");
        return -ABX_EJAIL;
    }
    mode_t old_umask = umask(0);
    int rc = run_ops(&plan, errbuf, errlen);
    for (size_t i = 0; rc == 0 && i < spec->n_volumes; i++)
        rc = attach_volume(plan.root, &spec->volumes[i], errbuf, errlen);
    umask(old_umask);
    if (rc < 0)
        return rc;
    return enter_root(plan.root, errbuf, errlen);
}
