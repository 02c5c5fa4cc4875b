/* state.c: $ABX_HOME/sandboxes/<id>/, the local provider's state.
 *
 * Owns: where state lives, how abx tells a live sandbox from a dead one
 * (its shim holds an exclusive flock on shim.lock for its whole life), and
 * reconciliation: any abx that finds a sandbox whose shim is gone removes
 * its cgroups and directory before answering (its processes died with the
 * shim: the sandbox's init has PDEATHSIG=SIGKILL and takes the pid
 * namespace with it). A directory is only reaped when its lock can be
 * taken and either meta.json exists (the shim had started) or it is older
 * than STARTING_GRACE_S (a create that never finished), so a sandbox being
 * created right now is never touched.
 *
 * Files in a state directory (0700): config.json (the create request),
 * token (0600), shim.lock, envd.sock (0600), meta.json (atomic); a durable
 * sandbox's `durable` marker, layer.ext4 (its writable layer) and boots.
 * A durable sandbox whose shim is gone is at rest, never reaped: only a
 * kill removes it (docs/durable.md).
 */
#include "state.h"
#include "net.h"
#include "cgroup.h"
#include "config.h"
#include "error_internal.h"
#include "sandbox_id.h"
#include "sysutil.h"
#include "event_log.h"

#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STARTING_GRACE_S 30
#define DYING_WAIT_MS 2000

int abx__state_root(char *out, size_t len, bool create, abx_error **err)
{
    char home[512];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    int n = snprintf(out, len, "%s/sandboxes", home);
    if (n < 0 || (size_t)n >= len)
        return abx__error_set(err, ABX_ECONFIG, "ABX_HOME is too long");
    if (create) {
        if (mkdir(home, 0700) < 0 && errno != EEXIST)
            return abx__error_errno(err, ABX_EIO, errno, "creating ABX_HOME");
        if (mkdir(out, 0700) < 0 && errno != EEXIST)
            return abx__error_errno(err, ABX_EIO, errno, "creating the sandboxes directory");
    }
    int rc = abx__home_check(home, err);
    if (rc == 0 && access(out, F_OK) == 0)
        rc = abx__home_check(out, err);
    return rc;
}

int abx__state_dir(const char *id, char *out, size_t len, abx_error **err)
{
    char root[560];
    int rc = abx__state_root(root, sizeof root, false, err);
    if (rc < 0)
        return rc;
    int n = snprintf(out, len, "%s/%s", root, id);
    if (n < 0 || (size_t)n >= len)
        return abx__error_set(err, ABX_ECONFIG, "ABX_HOME is too long");
    return 0;
}

#define LOCK_ABSENT (-2)

/* Takes the lock if nobody holds it: returns the fd (caller closes), -1 if
 * held, LOCK_ABSENT if there is no lock file (the shim removed its state). */
static int try_lock(const char *dir)
{
    char path[960];
    snprintf(path, sizeof path, "%s/shim.lock", dir);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ENOENT ? LOCK_ABSENT : -1;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* True if PID is gone, a zombie, or has SIGKILL pending: a shim that was
 * just killed still holds its lock for a moment while the kernel tears it
 * down (and its init, by PDEATHSIG, after it). */
static bool process_ending(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    bool ending = false;
    while (!ending && fgets(line, sizeof line, f)) {
        unsigned long long mask;
        if (strncmp(line, "State:", 6) == 0)
            ending = strchr(line, 'Z') || strchr(line, 'X');
        else if ((sscanf(line, "SigPnd: %llx", &mask) == 1 || sscanf(line, "ShdPnd: %llx", &mask) == 1))
            ending = mask & (1ull << (SIGKILL - 1));
    }
    fclose(f);
    return ending;
}

static pid_t recorded_shim_pid(const char *dir)
{
    char path[960];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    json_t *meta = json_load_file(path, 0, NULL);
    json_int_t pid = json_integer_value(json_object_get(meta, "shim_pid"));
    json_decref(meta);
    return pid > 0 && pid < INT32_MAX ? (pid_t)pid : 0;
}

/* try_lock, but when the lock is held by a shim that is going away, waits
 * (up to DYING_WAIT_MS) for the kernel to release it, so that "kill -9
 * the shim, then abx list" reports the sandbox gone. */
static int lock_unless_alive(const char *dir)
{
    int fd = try_lock(dir);
    if (fd >= 0 || fd == LOCK_ABSENT)
        return fd;
    pid_t pid = recorded_shim_pid(dir);
    if (pid <= 0 || !process_ending(pid))
        return -1;
    for (int waited = 0; fd == -1 && waited < DYING_WAIT_MS; waited += 5) {
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
        fd = try_lock(dir);
    }
    return fd;
}

bool abx__state_shim_alive(const char *dir)
{
    char path[960];
    snprintf(path, sizeof path, "%s/shim.lock", dir);
    if (access(path, F_OK) < 0)
        return false;
    int fd = lock_unless_alive(dir);
    if (fd == LOCK_ABSENT)
        return false;
    if (fd < 0)
        return true;
    close(fd);
    return false;
}

bool abx__state_end_standby(const char *dir)
{
    char marker[960];
    snprintf(marker, sizeof marker, "%s/standby", dir);
    if (access(marker, F_OK) < 0 || !abx__state_shim_alive(dir))
        return false;
    pid_t pid = recorded_shim_pid(dir); /* written by the shim that holds the lock */
    if (pid <= 0 || kill(pid, SIGTERM) < 0)
        return false;
    for (int waited = 0; waited < 3000 && abx__state_shim_alive(dir); waited += 10)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    return true;
}

/* Removes the state directory `name` of root_fd: its files, then itself.
 * Never follows a symlink: the directory is opened O_NOFOLLOW relative to
 * its parent, must be a real directory owned by us, and its entries are
 * unlinked relative to it (a planted symlink is removed, not followed). */
static void remove_state_dir(int root_fd, const char *name)
{
    int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
        if (fd >= 0)
            close(fd);
        unlinkat(root_fd, name, 0); /* a symlink or file where a directory should be: only the entry goes */
        return;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno == EISDIR)
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR); /* only if empty: never a walk into it */
    }
    closedir(d);
    unlinkat(root_fd, name, AT_REMOVEDIR);
}

/* The sandbox's name on the host (its cgroups'): config.json's host_name,
 * else (a sandbox from before names were kept) its id. */
static void host_name_of(const char *dir, const char *id, char *out, size_t len)
{
    char path[760];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    const char *name = json_string_value(json_object_get(cfg, "host_name"));
    bool ok = name && *name && strlen(name) < len &&
              strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(name);
    snprintf(out, len, "%s", ok ? name : id);
    json_decref(cfg);
}

bool abx__state_durable(const char *dir)
{
    char path[960];
    snprintf(path, sizeof path, "%s/durable", dir);
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void abx__state_rest(const char *id)
{
    char root[560];
    if (!abx__sandbox_id_valid(id) || abx__state_root(root, sizeof root, false, NULL) < 0)
        return;
    char dir[700], host_name[32];
    snprintf(dir, sizeof dir, "%s/%s", root, id);
    host_name_of(dir, id, host_name, sizeof host_name);
    abx__cgroup_reap_name(host_name);
    abx__net_reap(dir);
}

void abx__state_reap(const char *id)
{
    char root[560];
    if (!abx__sandbox_id_valid(id) || abx__state_root(root, sizeof root, false, NULL) < 0)
        return;
    char dir[700], host_name[32];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s", root, id);
    host_name_of(dir, id, host_name, sizeof host_name);
    abx__cgroup_reap_name(host_name);
    if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        abx__net_reap(dir); /* its filter objects and address (its links went with its namespace) */
    int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root_fd < 0)
        return;
    remove_state_dir(root_fd, id);
    close(root_fd);
}

static bool dead_and_reapable(const char *dir)
{
    char meta[960];
    snprintf(meta, sizeof meta, "%s/meta.json", dir);
    struct stat st;
    if (lstat(dir, &st) < 0)
        return false;
    if (S_ISLNK(st.st_mode))
        return true; /* a planted symlink: reaping removes the entry, never what it points to */
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return false; /* not ours: left alone */
    bool started = access(meta, F_OK) == 0;
    bool old = stat(dir, &st) == 0 && time(NULL) - st.st_mtime > STARTING_GRACE_S;
    if (!started && !old)
        return false; /* being created right now */
    int fd = lock_unless_alive(dir);
    char lockp[960];
    snprintf(lockp, sizeof lockp, "%s/shim.lock", dir);
    if (fd < 0 && access(lockp, F_OK) == 0)
        return false; /* held: alive */
    if (fd >= 0)
        close(fd);
    return true;
}

/* The event of a sandbox whose supervisor died (a shim that ends its
 * sandbox removes its directory first): its tenant from the directory. A
 * durable sandbox's shim may end on purpose and leave it at rest, so only
 * the others are told. */
static void supervisor_died(const char *dir)
{
    char path[960];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    struct stat st;
    if (lstat(path, &st) == 0) /* else it never started: nobody saw it run */
        abx__event_log_sandbox(
            dir, "supervisor_died",
            json_pack("{s:s}", "outcome", "reaped: its processes, cgroups and network removed"));
}

void abx__state_reconcile(void)
{
    char root[560];
    if (abx__state_root(root, sizeof root, false, NULL) < 0)
        return;
    DIR *d = opendir(root);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!abx__sandbox_id_valid(e->d_name))
            continue;
        char dir[900];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        if (!dead_and_reapable(dir))
            continue;
        if (abx__state_durable(dir)) {
            abx__state_rest(e->d_name); /* at rest: paused, its files kept (as its shim may leave it) */
            continue;
        }
        supervisor_died(dir);
        abx__state_reap(e->d_name);
    }
    closedir(d);
    abx__cgroup_sweep_stale(STARTING_GRACE_S);
}

void abx__state_reconcile_due(void)
{
    char home[512], stamp[600];
    struct stat st;
    if (abx__home(home, sizeof home) < 0 || stat(home, &st) < 0 || abx__home_check(home, NULL) < 0)
        return; /* no state here yet (nothing to reconcile, nothing made for it), or not ours */
    snprintf(stamp, sizeof stamp, "%s/.reconciled", home);
    bool have = stat(stamp, &st) == 0;
    if (have && time(NULL) - st.st_mtime < ABX_RECONCILE_DUE_S && st.st_mtime <= time(NULL))
        return;
    if (!have) {
        int fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return;
        close(fd);
    } else if (utimensat(AT_FDCWD, stamp, NULL, AT_SYMLINK_NOFOLLOW) < 0) {
        return;
    }
    abx__state_reconcile();
}

/* The sandbox's network namespace (O_CLOEXEC fd), from its init's pid in
 * meta.json, checked to be the child of the shim that holds the sandbox;
 * -1 when that cannot be told. */
int abx__state_netns(const char *dir)
{
    char path[760], text[4096];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return -1;
    json_t *meta = json_loads(text, 0, NULL);
    int init = (int)json_integer_value(json_object_get(meta, "init_pid"));
    int shim = (int)json_integer_value(json_object_get(meta, "shim_pid"));
    json_decref(meta);
    if (init <= 1 || shim <= 1)
        return -1;
    char status[2048];
    snprintf(path, sizeof path, "/proc/%d/status", init);
    if (abx__read_small_file(path, status, sizeof status) < 0)
        return -1;
    const char *pp = strstr(status, "\nPPid:");
    if (!pp || (int)strtol(pp + 7, NULL, 10) != shim)
        return -1; /* not that sandbox's init (gone, and its pid reused) */
    snprintf(path, sizeof path, "/proc/%d/ns/net", init);
    return open(path, O_RDONLY | O_CLOEXEC);
}
