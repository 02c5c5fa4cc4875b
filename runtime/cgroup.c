/* cgroup.c: per-sandbox cgroups, v1 and v2.
 *
 * Owns: detecting the host's cgroup layout, creating one leaf per sandbox
 * (v1: one leaf in each of the memory, pids and cpu hierarchies under
 * "<controller>/abx/<id>"; v2: "<parent>/<id>" with memory, pids and cpu
 * enabled), writing limits, moving the sandbox's init into it, and removing
 * it. Does not own killing the sandbox: the pid namespace does that when its
 * init dies; destroy() only SIGKILLs stragglers as a last line: on v2
 * through cgroup.kill; on v1 each listed pid is pinned with a pidfd and
 * checked to still be a member before it is signalled, and a persistent
 * sandbox's cgroup is frozen first (freeze, kill, thaw), so pid reuse
 * cannot redirect a kill. One-shot `abx run` sandboxes skip the freezer
 * leaf (it costs their start time; their pid namespace is gone by then).
 *
 * v2 parent: $ABX_CGROUP_PARENT if set (a delegated subtree); for a user
 * who is not root, abx.slice in the subtree systemd delegates to them
 * (user@UID.service: `systemctl --user` sessions have one); else
 * /sys/fs/cgroup/abx when abx runs as root.
 */
#include "cgroup.h"
#include "error_internal.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define CGROUP_FS "/sys/fs/cgroup"
#define CPU_PERIOD_US 100000u

/* memory, pids and cpu are required; freezer is used where the host has it */
static const char *const v1_controllers[ABX_CGROUP_MAX_DIRS] = {"memory", "pids", "cpu", "freezer"};
#define V1_REQUIRED 3
#define FREEZE_WAIT_MS 1000

static bool is_fs(const char *path, long magic)
{
    struct statfs sf;
    return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

int abx__cgroup_detect(abx_error **err)
{
    if (is_fs(CGROUP_FS, CGROUP2_SUPER_MAGIC))
        return 2;
    for (int i = 0; i < V1_REQUIRED; i++) {
        char p[128];
        snprintf(p, sizeof p, CGROUP_FS "/%s", v1_controllers[i]);
        if (!is_fs(p, CGROUP_SUPER_MAGIC))
            return abx__error_set(err, ABX_ECGROUP,
                                  "no cgroup v2 at " CGROUP_FS " and no cgroup v1 '%s' controller",
                                  v1_controllers[i]);
    }
    return 1;
}

static int write_knob(const char *dir, const char *knob, const char *value, abx_error **err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, knob);
    if (abx__write_file_at(AT_FDCWD, path, value) < 0)
        return abx__error_set(err, ABX_ECGROUP, "cgroup: writing %s: %s", knob, strerror(errno));
    return 0;
}

static int make_leaf(abx_cgroup *cg, const char *parent, const char *id, abx_error **err)
{
    if (abx__mkdir_exist_ok(parent, 0755) < 0)
        return abx__error_set(err,
                              errno == EACCES || errno == EPERM || errno == EROFS ? ABX_ECGROUP : ABX_ECGROUP,
                              "cgroup: cannot create the abx parent cgroup: %s", strerror(errno));
    char *dir = cg->dirs[cg->ndirs];
    int n = snprintf(dir, sizeof cg->dirs[0], "%s/%s", parent, id);
    if (n < 0 || (size_t)n >= sizeof cg->dirs[0])
        return abx__error_set(err, ABX_ECGROUP, "cgroup: parent path too long");
    if (mkdir(dir, 0755) < 0)
        return abx__error_set(err, ABX_ECGROUP, "cgroup: cannot create the sandbox cgroup: %s",
                              strerror(errno));
    cg->ndirs++;
    return 0;
}

static int create_v1(abx_cgroup *cg, const char *id, const abx_limits *lim, bool freezer, abx_error **err)
{
    char value[64];
    for (int i = 0; i < ABX_CGROUP_MAX_DIRS; i++) {
        char parent[128];
        snprintf(parent, sizeof parent, CGROUP_FS "/%s", v1_controllers[i]);
        if (i >= V1_REQUIRED && (!freezer || !is_fs(parent, CGROUP_SUPER_MAGIC)))
            break;
        snprintf(parent, sizeof parent, CGROUP_FS "/%s/abx", v1_controllers[i]);
        int rc = make_leaf(cg, parent, id, err);
        if (rc < 0)
            return rc;
        cg->freezer = i == 3;
    }
    const char *mem = cg->dirs[0], *pids = cg->dirs[1], *cpu = cg->dirs[2];
    snprintf(value, sizeof value, "%llu", (unsigned long long)lim->memory_mb << 20);
    int rc = write_knob(mem, "memory.limit_in_bytes", value, err);
    if (rc < 0)
        return rc;
    char memsw[512];
    snprintf(memsw, sizeof memsw, "%s/memory.memsw.limit_in_bytes", mem);
    if (access(memsw, F_OK) == 0 && (rc = write_knob(mem, "memory.memsw.limit_in_bytes", value, err)) < 0)
        return rc;
    snprintf(value, sizeof value, "%u", lim->pids);
    if ((rc = write_knob(pids, "pids.max", value, err)) < 0)
        return rc;
    snprintf(value, sizeof value, "%u", CPU_PERIOD_US);
    if ((rc = write_knob(cpu, "cpu.cfs_period_us", value, err)) < 0)
        return rc;
    snprintf(value, sizeof value, "%llu", (unsigned long long)lim->cpu_count * CPU_PERIOD_US);
    return write_knob(cpu, "cpu.cfs_quota_us", value, err);
}

/* Enables memory, pids and cpu for the children of dir. */
static int enable_v2_controllers(const char *dir, abx_error **err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cgroup.subtree_control", dir);
    if (abx__write_file_at(AT_FDCWD, path, "+memory +pids +cpu") < 0)
        return abx__error_set(err, ABX_ECGROUP,
                              "cgroup v2: cannot enable memory, pids and cpu for sandboxes: %s",
                              strerror(errno));
    return 0;
}

int abx__cgroup_user_parent(const char *self_cgroup, unsigned uid, char *out, size_t len)
{
    const char *line = self_cgroup;
    while (line && strncmp(line, "0::", 3) != 0) { /* the v2 line: "0::/path" */
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    if (!line)
        return -1;
    char service[48];
    snprintf(service, sizeof service, "/user@%u.service", uid);
    const char *at = strstr(line + 3, service);
    size_t end = at ? (size_t)(at - (line + 3)) + strlen(service) : 0;
    if (!at || (at[strlen(service)] != '/' && at[strlen(service)] != '\n' && at[strlen(service)] != '\0'))
        return -1;
    int n = snprintf(out, len, CGROUP_FS "%.*s/abx.slice", (int)end, line + 3);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The parent of sandbox cgroups on v2: $ABX_CGROUP_PARENT; as root,
 * /sys/fs/cgroup/abx; otherwise abx.slice in the subtree systemd delegates
 * to this user (user@UID.service), when there is one. */
static int v2_parent(char *out, size_t len)
{
    const char *env = getenv("ABX_CGROUP_PARENT");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    if (geteuid() == 0) {
        snprintf(out, len, CGROUP_FS "/abx");
        return 0;
    }
    char self[2048] = "";
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, self, sizeof self - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    self[n] = '\0';
    return abx__cgroup_user_parent(self, (unsigned)geteuid(), out, len);
}

static int create_v2(abx_cgroup *cg, const char *id, const abx_limits *lim, abx_error **err)
{
    char parent[200];
    int rc;
    const char *env = getenv("ABX_CGROUP_PARENT");
    if (v2_parent(parent, sizeof parent) < 0)
        return abx__error_set(err, ABX_ECGROUP,
                              "cgroup v2: not root, no systemd-delegated subtree for this user, and "
                              "ABX_CGROUP_PARENT names no delegated cgroup");
    if (!env || !*env) { /* abx's own parent: made here, under a root (or this user's delegated subtree) */
        char *slash = strrchr(parent, '/');
        *slash = '\0';
        rc = enable_v2_controllers(parent, err);
        *slash = '/';
        if (rc < 0)
            return rc;
        if (abx__mkdir_exist_ok(parent, 0755) < 0)
            return abx__error_set(err, ABX_ECGROUP, "cgroup v2: cannot create %s: %s", parent,
                                  strerror(errno));
    }
    if ((rc = enable_v2_controllers(parent, err)) < 0)
        return rc;
    if ((rc = make_leaf(cg, parent, id, err)) < 0)
        return rc;
    const char *dir = cg->dirs[0];
    char value[64];
    snprintf(value, sizeof value, "%llu", (unsigned long long)lim->memory_mb << 20);
    if ((rc = write_knob(dir, "memory.max", value, err)) < 0)
        return rc;
    char swap[512];
    snprintf(swap, sizeof swap, "%s/memory.swap.max", dir);
    if (access(swap, F_OK) == 0 && (rc = write_knob(dir, "memory.swap.max", "0", err)) < 0)
        return rc;
    snprintf(value, sizeof value, "%u", lim->pids);
    if ((rc = write_knob(dir, "pids.max", value, err)) < 0)
        return rc;
    snprintf(value, sizeof value, "%llu %u", (unsigned long long)lim->cpu_count * CPU_PERIOD_US,
             CPU_PERIOD_US);
    return write_knob(dir, "cpu.max", value, err);
}

int abx__cgroup_create(abx_cgroup *cg, const char *id, const abx_limits *lim, bool freezer, abx_error **err)
{
    memset(cg, 0, sizeof *cg);
    int version = abx__cgroup_detect(err);
    if (version < 0)
        return version;
    cg->version = version;
    int rc = version == 2 ? create_v2(cg, id, lim, err) : create_v1(cg, id, lim, freezer, err);
    if (rc < 0)
        abx__cgroup_destroy(cg);
    return rc;
}

int abx__cgroup_attach(const abx_cgroup *cg, pid_t pid, abx_error **err)
{
    char value[32];
    snprintf(value, sizeof value, "%d", (int)pid);
    for (int i = 0; i < cg->ndirs; i++) {
        int rc = write_knob(cg->dirs[i], "cgroup.procs", value, err);
        if (rc < 0)
            return rc;
    }
    for (int i = 0; i < cg->nextra; i++) {
        int rc = write_knob(cg->extra[i], "cgroup.procs", value, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Whether the process pidfd refers to is (still) in the cgroup dir of
 * its v1 hierarchy (the last component of dir is the sandbox id). */
static bool member_of(int pid, const char *dir)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    const char *leaf = strrchr(dir, '/');
    bool found = false;
    while (!found && leaf && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *cg = strrchr(line, ':');
        size_t n = cg ? strlen(cg) : 0;
        found = cg && n >= strlen(leaf) && strcmp(cg + n - strlen(leaf), leaf) == 0;
    }
    fclose(f);
    return found;
}

/* SIGKILLs every pid listed in dir/cgroup.procs; returns how many were
 * listed. Each is pinned with a pidfd first and checked to be a member
 * still, so a pid that exited and was reused by another process after the
 * list was read is never signalled. */
static int signal_members(const char *dir, int sig)
{
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (abx__read_small_file(path, buf, sizeof buf) < 0)
        return 0;
    int count = 0;
    for (char *p = buf; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 0 && pid < INT32_MAX) {
            int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
            if (pidfd >= 0 && member_of((int)pid, dir))
                syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
            if (pidfd >= 0)
                close(pidfd);
            count++;
        }
        p = end;
        while (*p == '\n')
            p++;
    }
    return count;
}

static int kill_members(const char *dir)
{
    return signal_members(dir, SIGKILL);
}

static bool freezer_is(const char *dir, const char *state)
{
    char path[512], now[32];
    snprintf(path, sizeof path, "%s/freezer.state", dir);
    return abx__read_small_file(path, now, sizeof now) >= 0 && strncmp(now, state, strlen(state)) == 0;
}

/* v1: freezes the cgroup, SIGKILLs every member while none can run (so no
 * listed pid exits and is reused before its kill), then thaws it so the
 * kills are delivered. */
static void kill_frozen(const char *dir)
{
    char path[512], procs[16];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    if (abx__read_small_file(path, procs, sizeof procs) >= 0 && procs[0] == '\0')
        return; /* nobody left (the usual case: init took them all with it) */
    snprintf(path, sizeof path, "%s/freezer.state", dir);
    if (abx__write_file_at(AT_FDCWD, path, "FROZEN") < 0)
        return;
    for (int waited = 0; waited < FREEZE_WAIT_MS && !freezer_is(dir, "FROZEN"); waited++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    kill_members(dir);
    abx__write_file_at(AT_FDCWD, path, "THAWED");
}

unsigned long abx__cgroup_oom_kills(const abx_cgroup *cg)
{
    if (cg->ndirs == 0)
        return 0;
    char path[512], text[512];
    snprintf(path, sizeof path, "%s/%s", cg->dirs[0],
             cg->version == 2 ? "memory.events" : "memory.oom_control");
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return 0;
    const char *at = strstr(text, "oom_kill ");
    return at ? strtoul(at + 9, NULL, 10) : 0;
}

int abx__cgroup_oom_watch(const abx_cgroup *cg, short *events)
{
    if (cg->ndirs == 0)
        return -1;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", cg->dirs[0],
             cg->version == 2 ? "memory.events" : "memory.oom_control");
    int watched = open(path, O_RDONLY | O_CLOEXEC);
    if (watched < 0 || cg->version == 2) {
        *events = POLLPRI;
        return watched; /* kernfs flags POLLPRI when the file changes */
    }
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    char line[64];
    snprintf(line, sizeof line, "%d %d", efd, watched);
    snprintf(path, sizeof path, "%s/cgroup.event_control", cg->dirs[0]);
    bool ok = efd >= 0 && abx__write_file_at(AT_FDCWD, path, line) == 0;
    close(watched); /* the registration holds what it needs */
    if (!ok && efd >= 0) {
        close(efd);
        efd = -1;
    }
    *events = POLLIN;
    return efd;
}

void abx__cgroup_oom_watch_ack(const abx_cgroup *cg, int fd)
{
    char buf[512];
    if (cg->version == 2) {
        (void)!pread(fd, buf, sizeof buf, 0); /* read again: armed for the next change */
        return;
    }
    uint64_t n;
    (void)!read(fd, &n, sizeof n);
}

bool abx__cgroup_oom_killed(const abx_cgroup *cg)
{
    return abx__cgroup_oom_kills(cg) > 0;
}

void abx__cgroup_destroy(abx_cgroup *cg)
{
    if (cg->keep_dirs) { /* joined: another owner's directories */
        cg->ndirs = cg->nextra = 0;
        return;
    }
    for (int i = cg->nextra - 1; i >= 0; i--)
        for (int attempt = 0; attempt < 1000 && rmdir(cg->extra[i]) < 0 && errno == EBUSY; attempt++) {
            kill_members(cg->extra[i]);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    cg->nextra = 0;
    if (cg->version == 1 && cg->freezer && cg->ndirs == ABX_CGROUP_MAX_DIRS)
        kill_frozen(cg->dirs[3]);
    for (int i = cg->ndirs - 1; i >= 0; i--) {
        const char *dir = cg->dirs[i];
        if (cg->version == 2) {
            char kill_path[512];
            snprintf(kill_path, sizeof kill_path, "%s/cgroup.kill", dir);
            if (abx__write_file_at(AT_FDCWD, kill_path, "1") < 0)
                kill_members(dir);
        }
        /* Tasks leave a cgroup asynchronously after they are reaped: retry
         * for up to about a second before giving up. */
        for (int attempt = 0; attempt < 1000; attempt++) {
            if (rmdir(dir) == 0 || errno == ENOENT)
                break;
            if (errno != EBUSY)
                break;
            if (cg->version == 1 && cg->freezer && cg->ndirs == ABX_CGROUP_MAX_DIRS)
                kill_frozen(cg->dirs[3]);
            else if (cg->version == 1)
                kill_members(dir);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    cg->ndirs = 0;
}

/* Removes one stale leaf: empty and older than the grace period (a younger
 * one may belong to a sandbox that is starting right now). rmdir itself
 * refuses a cgroup that still has tasks. */
static void sweep_dir(const char *parent, unsigned grace_s)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(d))) {
        if (e->d_name[0] != 'i' || e->d_type != DT_DIR)
            continue;
        char path[512];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
        if (stat(path, &st) == 0 && now - st.st_ctime >= (time_t)grace_s)
            rmdir(path);
    }
    closedir(d);
}

void abx__cgroup_sweep_stale(unsigned grace_s)
{
    int version = abx__cgroup_detect(NULL);
    if (version == 1) {
        for (int i = 0; i < ABX_CGROUP_MAX_DIRS; i++) {
            char parent[128];
            snprintf(parent, sizeof parent, CGROUP_FS "/%s/abx", v1_controllers[i]);
            sweep_dir(parent, grace_s);
        }
    } else if (version == 2) {
        char parent[200];
        if (v2_parent(parent, sizeof parent) == 0)
            sweep_dir(parent, grace_s);
    }
}

void abx__cgroup_reap_name(const char *id)
{
    abx_cgroup cg;
    memset(&cg, 0, sizeof cg);
    int version = abx__cgroup_detect(NULL);
    if (version < 0)
        return;
    cg.version = version;
    if (version == 1) {
        for (int i = 0; i < ABX_CGROUP_MAX_DIRS; i++)
            snprintf(cg.dirs[cg.ndirs++], sizeof cg.dirs[0], CGROUP_FS "/%s/abx/%s", v1_controllers[i], id);
        cg.freezer = access(cg.dirs[3], F_OK) == 0;
        if (!cg.freezer)
            cg.ndirs = V1_REQUIRED;
    } else {
        char parent[200];
        if (v2_parent(parent, sizeof parent) < 0)
            return;
        snprintf(cg.dirs[cg.ndirs++], sizeof cg.dirs[0], "%s/%s", parent, id);
    }
    abx__cgroup_destroy(&cg);
}

/* Whether the cgroup reached the frozen (or thawed) state. */
static bool freeze_done(const abx_cgroup *cg, bool freeze)
{
    char path[512], text[512];
    if (cg->version == 2) {
        snprintf(path, sizeof path, "%s/cgroup.events", cg->dirs[0]);
        if (abx__read_small_file(path, text, sizeof text) < 0)
            return false;
        const char *at = strstr(text, "frozen ");
        return at && at[7] == (freeze ? '1' : '0');
    }
    return freezer_is(cg->dirs[3], freeze ? "FROZEN" : "THAWED");
}

/* The file that freezes the cgroup, and what to write there; false without a freezer. */
static bool freeze_knob(const abx_cgroup *cg, bool freeze, char *path, size_t len, const char **value)
{
    if (cg->version == 2 && cg->ndirs > 0)
        snprintf(path, len, "%s/cgroup.freeze", cg->dirs[0]);
    else if (cg->version == 1 && cg->freezer && cg->ndirs > 3)
        snprintf(path, len, "%s/freezer.state", cg->dirs[3]);
    else
        return false;
    *value = cg->version == 2 ? (freeze ? "1" : "0") : (freeze ? "FROZEN" : "THAWED");
    return true;
}

int abx__cgroup_freeze(const abx_cgroup *cg, bool freeze, abx_error **err)
{
    char path[512];
    const char *value;
    if (!freeze_knob(cg, freeze, path, sizeof path, &value))
        return abx__error_set(err, ABX_ENOTSUP,
                              "pausing a sandbox needs the cgroup freezer, which this host lacks");
    if (abx__write_file_at(AT_FDCWD, path, value) < 0)
        return abx__error_errno(err, ABX_ECGROUP, errno,
                                freeze ? "freezing the sandbox" : "thawing the sandbox");
    for (int waited = 0; waited < 2000; waited++) {
        if (freeze_done(cg, freeze))
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return abx__error_set(err, ABX_ETIMEOUT, "the sandbox's processes did not %s within 2 s",
                          freeze ? "stop" : "start again");
}

void abx__cgroup_thaw_now(const abx_cgroup *cg)
{
    char path[512];
    const char *value;
    if (freeze_knob(cg, false, path, sizeof path, &value))
        abx__write_file_at(AT_FDCWD, path, value);
}

int abx__cgroup_set_background(const abx_cgroup *cg, bool background, abx_error **err)
{
    if (cg->version == 2 && cg->ndirs > 0)
        return write_knob(cg->dirs[0], "cpu.weight", background ? "1" : "100", err);
    if (cg->version == 1 && cg->ndirs > 2)
        return write_knob(cg->dirs[2], "cpu.shares", background ? "2" : "1024", err);
    return 0;
}

/* utime + stime of pid and of its children it waited for (those that ended
 * and were reaped, down to init's), in microseconds (0 when it cannot be
 * read). */
static unsigned long long proc_cpu_us(long pid)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return 0;
    const char *p = strrchr(text, ')'); /* after the command name, which may hold spaces */
    unsigned long long ut = 0, st = 0, cut = 0, cst = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ut, &st, &cut,
                     &cst) != 4)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return (ut + st + cut + cst) * 1000000ull / (unsigned long long)(hz > 0 ? hz : 100);
}

int abx__cgroup_usage(const abx_cgroup *cg, unsigned long long *cpu_us, unsigned long long *mem_bytes)
{
    *cpu_us = *mem_bytes = 0;
    if (cg->ndirs == 0)
        return -1;
    char path[512], text[4096];
    snprintf(path, sizeof path, "%s/%s", cg->dirs[0],
             cg->version == 2 ? "memory.current" : "memory.usage_in_bytes");
    if (abx__read_small_file(path, text, sizeof text) >= 0)
        *mem_bytes = strtoull(text, NULL, 10);
    if (cg->version == 2) {
        snprintf(path, sizeof path, "%s/cpu.stat", cg->dirs[0]);
        const char *at =
            abx__read_small_file(path, text, sizeof text) >= 0 ? strstr(text, "usage_usec ") : NULL;
        *cpu_us = at ? strtoull(at + 11, NULL, 10) : 0;
        return 0;
    }
    /* v1 without cpuacct: the members' own times (those still there) */
    snprintf(path, sizeof path, "%s/cgroup.procs", cg->dirs[0]);
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return 0;
    for (char *p = text; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        *cpu_us += pid > 0 ? proc_cpu_us(pid) : 0;
        p = end;
        while (*p == '\n')
            p++;
    }
    return 0;
}

/* One number from a knob (0 when it cannot be read). */
static unsigned long long knob_number(const char *dir, const char *knob)
{
    char path[512], text[64];
    snprintf(path, sizeof path, "%s/%s", dir, knob);
    return abx__read_small_file(path, text, sizeof text) >= 0 ? strtoull(text, NULL, 10) : 0;
}

int abx__cgroup_stats(const abx_cgroup *cg, abx_cgroup_stats *out)
{
    memset(out, 0, sizeof *out);
    if (abx__cgroup_usage(cg, &out->cpu_us, &out->mem_bytes) < 0)
        return -1;
    bool v2 = cg->version == 2;
    out->mem_peak_bytes = knob_number(cg->dirs[0], v2 ? "memory.peak" : "memory.max_usage_in_bytes");
    if (out->mem_peak_bytes < out->mem_bytes)
        out->mem_peak_bytes = out->mem_bytes;
    if (v2 || cg->ndirs > 1)
        out->pids = knob_number(cg->dirs[v2 ? 0 : 1], "pids.current");
    out->oom_kills = abx__cgroup_oom_kills(cg);
    return 0;
}

/* ---- cgroups at a path: OCI containers (abx-oci) ---- */

static const char *const v1_extra_controllers[ABX_CGROUP_MAX_EXTRA] = {"cpuset", "devices", "cpuacct",
                                                                       "blkio",  "systemd", "net_cls"};

/* A v1 cpuset leaf starts with no cpus and no mems: no task may join it
 * until they are copied from its parent. */
static void cpuset_inherit(const char *dir)
{
    static const char *const knobs[] = {"cpuset.cpus", "cpuset.mems"};
    for (size_t i = 0; i < 2; i++) {
        char path[600], parent[600], value[256];
        snprintf(path, sizeof path, "%s/%s", dir, knobs[i]);
        if (abx__read_small_file(path, value, sizeof value) >= 0 && value[0] != '\n' && value[0])
            continue;
        snprintf(parent, sizeof parent, "%s", dir);
        char *slash = strrchr(parent, '/');
        if (!slash)
            continue;
        snprintf(slash, sizeof parent - (size_t)(slash - parent), "/%s", knobs[i]);
        if (abx__read_small_file(parent, value, sizeof value) >= 0)
            abx__write_file_at(AT_FDCWD, path, value);
    }
}

/* mkdir -p of root + path, one level at a time: *made says whether the
 * leaf itself was made here. v1 cpuset levels inherit as they are made;
 * v2 levels enable the controllers for their children. */
static int mkdir_levels(const char *root, const char *path, bool cpuset, bool v2, bool *made)
{
    char dir[256];
    int n = snprintf(dir, sizeof dir, "%s", root);
    *made = false;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t len = strcspn(p, "/");
        if (len == 0)
            break;
        if (len == 2 && strncmp(p, "..", 2) == 0) {
            errno = EINVAL;
            return -1;
        }
        if (v2) {
            char ctl[300];
            snprintf(ctl, sizeof ctl, "%s/cgroup.subtree_control", dir);
            if (abx__write_file_at(AT_FDCWD, ctl, "+memory +pids +cpu") < 0)
                abx__write_file_at(AT_FDCWD, ctl, "+memory +pids");
            abx__write_file_at(AT_FDCWD, ctl, "+cpuset");
        }
        int w = snprintf(dir + n, sizeof dir - (size_t)n, "/%.*s", (int)len, p);
        if (w < 0 || (size_t)w >= sizeof dir - (size_t)n) {
            errno = ENAMETOOLONG;
            return -1;
        }
        n += w;
        if (mkdir(dir, 0755) == 0)
            *made = true;
        else if (errno != EEXIST)
            return -1;
        else
            *made = false;
        if (cpuset)
            cpuset_inherit(dir);
        p += len;
    }
    return 0;
}

static void fill_path(abx_cgroup *cg, const char *path, bool create_check)
{
    (void)create_check;
    memset(cg, 0, sizeof *cg);
    cg->version = abx__cgroup_detect(NULL);
    if (cg->version == 2) {
        snprintf(cg->dirs[cg->ndirs++], sizeof cg->dirs[0], CGROUP_FS "%s%s", path[0] == '/' ? "" : "/",
                 path);
        return;
    }
    if (cg->version != 1)
        return;
    for (int i = 0; i < ABX_CGROUP_MAX_DIRS; i++) {
        char root[128];
        snprintf(root, sizeof root, CGROUP_FS "/%s", v1_controllers[i]);
        if (i >= V1_REQUIRED && !is_fs(root, CGROUP_SUPER_MAGIC))
            break;
        snprintf(cg->dirs[cg->ndirs++], sizeof cg->dirs[0], "%s%s%s", root, path[0] == '/' ? "" : "/", path);
        cg->freezer = i == 3;
    }
    for (int i = 0; i < ABX_CGROUP_MAX_EXTRA; i++) {
        char root[128];
        snprintf(root, sizeof root, CGROUP_FS "/%s", v1_extra_controllers[i]);
        if (is_fs(root, CGROUP_SUPER_MAGIC))
            snprintf(cg->extra[cg->nextra++], sizeof cg->extra[0], "%s%s%s", root, path[0] == '/' ? "" : "/",
                     path);
    }
}

void abx__cgroup_open_path(abx_cgroup *cg, const char *path)
{
    fill_path(cg, path, false);
}

int abx__cgroup_create_path(abx_cgroup *cg, const char *path, abx_error **err)
{
    int version = abx__cgroup_detect(err);
    if (version < 0)
        return version;
    if (strlen(path) > 180)
        return abx__error_set(err, ABX_EINVAL, "linux.cgroupsPath is longer than 180 characters");
    fill_path(cg, path, true);
    bool made_any = false, joined = false;
    for (int i = 0; i < cg->ndirs + cg->nextra; i++) {
        bool extra = i >= cg->ndirs;
        const char *ctl = version == 2 ? "" : extra ? v1_extra_controllers[i - cg->ndirs] : v1_controllers[i];
        char root[128];
        snprintf(root, sizeof root, CGROUP_FS "%s%s", version == 2 ? "" : "/", ctl);
        bool made;
        if (mkdir_levels(root, path, strcmp(ctl, "cpuset") == 0, version == 2, &made) < 0) {
            int saved = errno;
            cg->keep_dirs = !made_any;
            abx__cgroup_destroy(cg);
            return abx__error_set(err, ABX_ECGROUP, "cgroup: cannot create %s under %s: %s", path, root,
                                  strerror(saved));
        }
        made_any |= made;
        joined |= !made;
    }
    cg->keep_dirs = joined && !made_any;
    return 0;
}

void abx__cgroup_resources_init(abx_cgroup_resources *res)
{
    memset(res, 0, sizeof *res);
    res->memory_limit = res->memory_swap = res->memory_reservation = ABX_CGROUP_UNSET;
    res->cpu_shares = res->cpu_quota = res->cpu_period = ABX_CGROUP_UNSET;
    res->pids_limit = ABX_CGROUP_UNSET;
}

static int write_i64(const char *dir, const char *knob, int64_t v, const char *unlimited, abx_error **err)
{
    char value[32];
    if (v < 0)
        snprintf(value, sizeof value, "%s", unlimited);
    else
        snprintf(value, sizeof value, "%lld", (long long)v);
    return write_knob(dir, knob, value, err);
}

static bool has_knob(const char *dir, const char *knob)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, knob);
    return access(path, F_OK) == 0;
}

static const char *extra_dir(const abx_cgroup *cg, const char *controller)
{
    for (int i = 0; i < cg->nextra; i++) {
        char want[64];
        snprintf(want, sizeof want, CGROUP_FS "/%s/", controller);
        if (strncmp(cg->extra[i], want, strlen(want)) == 0)
            return cg->extra[i];
    }
    return NULL;
}

static int apply_devices_v1(const char *dir, const abx_cgroup_resources *res, abx_error **err)
{
    for (int i = 0; i < res->n_devices; i++) {
        const abx_cgroup_device_rule *d = &res->devices[i];
        char rule[96], major[24], minor[24];
        snprintf(major, sizeof major, d->major < 0 ? "*" : "%lld", (long long)d->major);
        snprintf(minor, sizeof minor, d->minor < 0 ? "*" : "%lld", (long long)d->minor);
        if (d->type == 'a')
            snprintf(rule, sizeof rule, "a");
        else
            snprintf(rule, sizeof rule, "%c %s:%s %s", d->type, major, minor,
                     d->access[0] ? d->access : "rwm");
        int rc = write_knob(dir, d->allow ? "devices.allow" : "devices.deny", rule, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int apply_v1(const abx_cgroup *cg, const abx_cgroup_resources *r, abx_error **err)
{
    const char *mem = cg->dirs[0], *pids = cg->dirs[1], *cpu = cg->dirs[2];
    int rc = 0;
    /* memory+swap must never be below memory: raise the pair in the order that keeps it so */
    if (r->memory_limit != ABX_CGROUP_UNSET &&
        (rc = write_i64(mem, "memory.limit_in_bytes", r->memory_limit, "-1", err)) < 0 &&
        r->memory_swap == ABX_CGROUP_UNSET)
        return rc;
    if (r->memory_swap != ABX_CGROUP_UNSET && has_knob(mem, "memory.memsw.limit_in_bytes")) {
        if ((rc = write_i64(mem, "memory.memsw.limit_in_bytes", r->memory_swap, "-1", err)) < 0)
            return rc;
        if (r->memory_limit != ABX_CGROUP_UNSET &&
            (rc = write_i64(mem, "memory.limit_in_bytes", r->memory_limit, "-1", err)) < 0)
            return rc;
    } else if (rc < 0)
        return rc;
    if (r->memory_reservation != ABX_CGROUP_UNSET &&
        (rc = write_i64(mem, "memory.soft_limit_in_bytes", r->memory_reservation, "-1", err)) < 0)
        return rc;
    if (r->pids_limit != ABX_CGROUP_UNSET &&
        (rc = write_i64(pids, "pids.max", r->pids_limit <= 0 ? -1 : r->pids_limit, "max", err)) < 0)
        return rc;
    if (r->cpu_shares != ABX_CGROUP_UNSET &&
        (rc = write_i64(cpu, "cpu.shares", r->cpu_shares, "1024", err)) < 0)
        return rc;
    if (r->cpu_period != ABX_CGROUP_UNSET &&
        (rc = write_i64(cpu, "cpu.cfs_period_us", r->cpu_period, "100000", err)) < 0)
        return rc;
    if (r->cpu_quota != ABX_CGROUP_UNSET &&
        (rc = write_i64(cpu, "cpu.cfs_quota_us", r->cpu_quota, "-1", err)) < 0)
        return rc;
    const char *cpuset = extra_dir(cg, "cpuset");
    if (r->cpuset_cpus[0] && (!cpuset || (rc = write_knob(cpuset, "cpuset.cpus", r->cpuset_cpus, err)) < 0))
        return cpuset ? rc : abx__error_set(err, ABX_ECGROUP, "cgroup: this host has no cpuset controller");
    if (r->cpuset_mems[0] && (!cpuset || (rc = write_knob(cpuset, "cpuset.mems", r->cpuset_mems, err)) < 0))
        return cpuset ? rc : abx__error_set(err, ABX_ECGROUP, "cgroup: this host has no cpuset controller");
    const char *devices = extra_dir(cg, "devices");
    if (r->n_devices > 0 && devices && !cg->keep_dirs)
        return apply_devices_v1(devices, r, err);
    return 0;
}

static int apply_v2(const abx_cgroup *cg, const abx_cgroup_resources *r, abx_error **err)
{
    const char *dir = cg->dirs[0];
    int rc;
    if (r->memory_limit != ABX_CGROUP_UNSET &&
        (rc = write_i64(dir, "memory.max", r->memory_limit, "max", err)) < 0)
        return rc;
    if (r->memory_swap != ABX_CGROUP_UNSET && has_knob(dir, "memory.swap.max")) {
        /* OCI's swap is memory+swap; v2's swap.max is the swap alone */
        int64_t swap = r->memory_swap < 0 || r->memory_limit < 0 ? -1 : r->memory_swap - r->memory_limit;
        if ((rc = write_i64(dir, "memory.swap.max", swap < 0 && r->memory_swap >= 0 ? 0 : swap, "max", err)) <
            0)
            return rc;
    }
    if (r->memory_reservation != ABX_CGROUP_UNSET &&
        (rc = write_i64(dir, "memory.low", r->memory_reservation, "0", err)) < 0)
        return rc;
    if (r->pids_limit != ABX_CGROUP_UNSET &&
        (rc = write_i64(dir, "pids.max", r->pids_limit <= 0 ? -1 : r->pids_limit, "max", err)) < 0)
        return rc;
    if (r->cpu_shares != ABX_CGROUP_UNSET && r->cpu_shares > 0) {
        /* runc's mapping of v1 shares [2, 262144] to v2 weight [1, 10000] */
        int64_t weight = 1 + ((r->cpu_shares - 2) * 9999) / 262142;
        if ((rc = write_i64(dir, "cpu.weight", weight, "100", err)) < 0)
            return rc;
    }
    if (r->cpu_quota != ABX_CGROUP_UNSET || r->cpu_period != ABX_CGROUP_UNSET) {
        char value[64], quota[24];
        int64_t period = r->cpu_period > 0 ? r->cpu_period : CPU_PERIOD_US;
        snprintf(quota, sizeof quota, r->cpu_quota > 0 ? "%lld" : "max", (long long)r->cpu_quota);
        snprintf(value, sizeof value, "%s %lld", quota, (long long)period);
        if ((rc = write_knob(dir, "cpu.max", value, err)) < 0)
            return rc;
    }
    if (r->cpuset_cpus[0] && (rc = write_knob(dir, "cpuset.cpus", r->cpuset_cpus, err)) < 0)
        return rc;
    if (r->cpuset_mems[0] && (rc = write_knob(dir, "cpuset.mems", r->cpuset_mems, err)) < 0)
        return rc;
    return 0;
}

int abx__cgroup_apply(const abx_cgroup *cg, const abx_cgroup_resources *res, abx_error **err)
{
    if (cg->ndirs == 0)
        return abx__error_set(err, ABX_ECGROUP, "cgroup: the container has no cgroup");
    return cg->version == 2 ? apply_v2(cg, res, err) : apply_v1(cg, res, err);
}

size_t abx__cgroup_members(const abx_cgroup *cg, pid_t *out, size_t cap)
{
    if (cg->ndirs == 0)
        return 0;
    char path[600];
    snprintf(path, sizeof path, "%s/cgroup.procs", cg->dirs[0]);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = 0;
    long pid;
    while (n < cap && fscanf(f, "%ld", &pid) == 1)
        if (pid > 0 && pid < INT32_MAX)
            out[n++] = (pid_t)pid;
    fclose(f);
    return n;
}

void abx__cgroup_signal_all(const abx_cgroup *cg, int sig)
{
    if (cg->ndirs > 0)
        signal_members(cg->dirs[0], sig);
}

bool abx__cgroup_frozen(const abx_cgroup *cg)
{
    if (cg->version == 2 && cg->ndirs > 0)
        return freeze_done(cg, true);
    return cg->version == 1 && cg->freezer && cg->ndirs > 3 && freezer_is(cg->dirs[3], "FROZEN");
}
