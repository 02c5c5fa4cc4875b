/* shim.c: a persistent sandbox's supervisor: start-up, event loop, teardown.
 *
 * Owns: reading the creator's request ($state_dir/config.json and
 * $state_dir/token), starting the jail with a serving init, the data-plane
 * socket, the metadata file (written atomically), the lifetime (a timerfd
 * at end_at; set_timeout re-arms it), and teardown: on timeout, kill,
 * SIGTERM, or init's death, everything of the sandbox goes (processes with
 * the pid namespace, cgroups, state directory), then the shim exits.
 *
 * The shim holds an exclusive flock on $state_dir/shim.lock for its whole
 * life: another abx that can take that lock knows the shim is gone and
 * reaps what it left (lib/local/state.c, "reconcile").
 *
 * States: STARTING (jail, socket, server) -> RUNNING (event loop) ->
 * ENDING (sh->ending set: HTTP waiters give up) -> gone (_exit). A sandbox
 * started ahead for a warm pool (config "standby") runs as STANDBY until
 * its pool claims it (/abx/claim); it ends with the pool's process.
 */
#include "shim.h"
#include "error_internal.h"
#include "init_proto.h"
#include "net.h"
#include "netlibs.h"
#include "oci_container.h"
#include "netpolicy.h"
#include "shim_files.h"
#include "parse.h"
#include "snapshot_tree.h"
#include "event_log.h"
#include "net_denials.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_FD 3

uint64_t abx__shim_now_ms(void)
{
    return abx__now_ns() / 1000000ull;
}

json_t *abx__shim_info_locked(shim *sh)
{
    char started[32], end[32];
    abx__rfc3339((long long)sh->started_at, started, sizeof started);
    abx__rfc3339((long long)sh->end_at, end, sizeof end);
    json_t *names = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(sh->envs, k, v) json_array_append_new(names, json_string(k));
    json_t *network = sh->net ? abx__net_describe(sh->net) : json_deep_copy(sh->net_policy);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:O, s:o, s:i, s:s, s:i, s:i, s:b}",
                            "sandbox_id", sh->id, "template", sh->template_name, "status",
                            sh->ending   ? "ending"
                            : sh->paused ? "paused"
                                         : "running",
                            "started_at", started, "end_at", end, "cpu_count", (int)sh->limits.cpu_count,
                            "memory_mb", (int)sh->limits.memory_mb, "disk_size_mb", (int)sh->limits.disk_mb,
                            "metadata", sh->metadata, "env_names", names, "timeout", (int)sh->timeout_s,
                            "envd_version", ABX_ENVD_VERSION, "shim_pid", (int)getpid(), "init_pid",
                            (int)sh->jail.init_pid, "standby", sh->standby);
    if (doc)
        json_object_set_new(doc, "network", network ? network : json_pack("{s:s}", "mode", "none"));
    else
        json_decref(network);
    if (doc && sh->durable)
        json_object_set_new(doc, "durable",
                            json_pack("{s:i, s:s, s:b}", "boots", (int)sh->boots, "resumed_from",
                                      sh->resumed_from ? sh->resumed_from : "", "pause_keeps_memory",
                                      sh->pause_keeps_memory));
    json_t *mounts = json_array(), *m;
    size_t i;
    json_array_foreach(sh->volumes, i, m)
    {
        json_array_append_new(mounts, json_pack("{s:O, s:O, s:b}", "name", json_object_get(m, "name"), "path",
                                                json_object_get(m, "path"), "read_only",
                                                json_is_true(json_object_get(m, "read_only"))));
    }
    if (doc)
        json_object_set_new(doc, "volumes", mounts);
    else
        json_decref(mounts);
    return doc;
}

/* meta.json: written to a temporary name, then renamed over the old one. */
static int write_meta_locked(shim *sh)
{
    json_t *doc = abx__shim_info_locked(sh);
    char tmp[600], final[600];
    snprintf(tmp, sizeof tmp, "%s/meta.json.tmp", sh->state_dir);
    snprintf(final, sizeof final, "%s/meta.json", sh->state_dir);
    int rc = json_dump_file(doc, tmp, JSON_COMPACT);
    json_decref(doc);
    if (rc == 0)
        rc = rename(tmp, final);
    return rc;
}

static void arm_timer_locked(shim *sh)
{
    time_t now = time(NULL);
    struct itimerspec its = {.it_value = {.tv_sec = sh->end_at > now ? sh->end_at - now : 0, .tv_nsec = 1}};
    timerfd_settime(sh->timerfd, 0, &its, NULL);
}

int abx__shim_set_timeout(shim *sh, unsigned seconds)
{
    pthread_mutex_lock(&sh->mu);
    sh->timeout_s = seconds;
    sh->end_at = time(NULL) + (time_t)seconds;
    arm_timer_locked(sh);
    int rc = write_meta_locked(sh);
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

#define PAUSED_KEPT_S (24 * 3600) /* a paused sandbox is kept a day at most (a durable one then rests) */

/* Writes what the sandbox's filesystems hold to disk, then freezes its
 * processes, then writes again what was in flight: what a pause leaves is
 * on disk, as after E2B envd's /freeze. The root (its writable layer) and
 * each volume. Lock: mu. */
static int sync_then_freeze(shim *sh, abx_error **err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/root", (int)sh->jail.init_pid);
    int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int fds[1 + ABX_VOLUME_MOUNTS_MAX], n = 0;
    if (root >= 0)
        fds[n++] = root;
    json_t *m;
    size_t i;
    json_array_foreach(sh->volumes, i, m)
    {
        const char *at = json_string_value(json_object_get(m, "path"));
        struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        int fd = root >= 0 && at && n < (int)(sizeof fds / sizeof fds[0])
                     ? (int)syscall(SYS_openat2, root, at + 1, &how, sizeof how)
                     : -1;
        if (fd >= 0)
            fds[n++] = fd;
    }
    for (int k = 0; k < n; k++)
        syncfs(fds[k]);
    int rc = abx__cgroup_freeze(&sh->jail.cgroup, true, err);
    for (int k = 0; k < n; k++) {
        if (rc == 0)
            syncfs(fds[k]);
        close(fds[k]);
    }
    return rc;
}

int abx__shim_pause(shim *sh, bool pause, unsigned timeout, bool *rest_when_answered, abx_error **err)
{
    pthread_mutex_lock(&sh->mu);
    int rc = 0;
    if (sh->ending)
        rc = abx__error_set(err, ABX_ENOTRUNNING, "the sandbox is ending");
    else if (sh->paused == pause)
        rc = abx__error_set(err, ABX_EINVAL,
                            pause ? "the sandbox is already paused" : "the sandbox is not paused");
    else if (pause)
        rc = sync_then_freeze(sh, err);
    else
        rc = abx__cgroup_freeze(&sh->jail.cgroup, false, err);
    if (rc == 0 && pause && sh->durable && !sh->pause_keeps_memory) {
        sh->paused = true;
        write_meta_locked(sh);
        pthread_cond_broadcast(&sh->cv);
        pthread_mutex_unlock(&sh->mu);
        /* at rest: the event loop ends the processes and keeps the files;
         * asked over HTTP, once the answer has gone (ended first, the shim
         * could take the answer with it, and the caller would see a
         * sandbox that vanished mid-pause) */
        if (rest_when_answered)
            *rest_when_answered = true;
        else
            abx__shim_request_rest(sh);
        return 0;
    }
    if (rc == 0) {
        if (!pause && sh->paused && sh->durable)
            sh->resumed_from = "memory";
        sh->paused = pause;
        if (!pause && timeout)
            sh->timeout_s = timeout;
        sh->end_at = time(NULL) + (time_t)(pause ? PAUSED_KEPT_S : sh->timeout_s);
        arm_timer_locked(sh);
        write_meta_locked(sh);
        pthread_cond_broadcast(&sh->cv);
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

/* Whether dest is a template store's staging directory of this machine
 * ($ABX_HOME/templates/.partial-*, beside this sandbox's state), with an
 * empty rootfs/ in it: the only place a snapshot is written. */
static bool snapshot_dest_ok(const shim *sh, const char *dest)
{
    char home[512], want[600], real[PATH_MAX], parent[PATH_MAX];
    snprintf(home, sizeof home, "%s", sh->state_dir);
    for (int up = 0; up < 2; up++) { /* $ABX_HOME/sandboxes/ID */
        char *slash = strrchr(home, '/');
        if (!slash || slash == home)
            return false;
        *slash = '\0';
    }
    snprintf(want, sizeof want, "%s/templates", home);
    const char *base = strrchr(dest, '/');
    if (!base || strncmp(base + 1, ".partial-", 9) != 0 || strlen(dest) >= sizeof parent ||
        !realpath(want, real))
        return false;
    snprintf(parent, sizeof parent, "%.*s", (int)(base - dest), dest);
    char real_parent[PATH_MAX];
    if (!realpath(parent, real_parent) || strcmp(real, real_parent) != 0)
        return false;
    char tree[PATH_MAX + 16];
    snprintf(tree, sizeof tree, "%s/rootfs", dest);
    struct stat st;
    return lstat(tree, &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink == 2 && st.st_uid == 0;
}

typedef struct snapshot_thaw {
    shim *sh;
    bool froze, locked;
    uint64_t t0, paused_ms;
} snapshot_thaw;

/* The walk has recorded what the sandbox wrote: it goes on, and the lock
 * goes (the links left to make touch only the template's files). */
static int thaw_after_walk(void *ctx)
{
    snapshot_thaw *th = ctx;
    int rc = th->froze ? abx__cgroup_freeze(&th->sh->jail.cgroup, false, NULL) : 0;
    if (th->froze)
        th->paused_ms = abx__shim_now_ms() - th->t0;
    th->froze = false;
    if (th->locked)
        pthread_mutex_unlock(&th->sh->mu);
    th->locked = false;
    return rc;
}

int abx__shim_snapshot(shim *sh, const char *dest, json_t **out, abx_error **err)
{
    *out = NULL;
    if (!dest || !snapshot_dest_ok(sh, dest))
        return abx__error_set(err, ABX_EINVAL, "snapshot: not a template staging directory of this machine");
    char tree[PATH_MAX + 16];
    snprintf(tree, sizeof tree, "%s/rootfs", dest);
    pthread_mutex_lock(&sh->mu);
    int rc = sh->ending ? abx__error_set(err, ABX_ENOTRUNNING, "the sandbox is ending") : 0;
    bool froze = rc == 0 && !sh->paused;
    uint64_t t0 = abx__shim_now_ms();
    if (froze)
        rc = sync_then_freeze(sh, err);
    abx_snapshot_stats st;
    snapshot_thaw th = {.sh = sh, .froze = froze, .locked = true, .t0 = t0};
    if (rc == 0)
        rc = abx__snapshot_tree(sh->jail.upper_fd, sh->rootfd, tree,
                                sh->jail.upper_fd >= 0 ? sh->template_root : NULL, sh->jail.host_id_base,
                                thaw_after_walk, &th, &st, err);
    if (th.locked)
        thaw_after_walk(&th); /* the walk did not start, or did not reach its thaw */
    uint64_t paused_ms = th.paused_ms;
    if (rc == 0)
        *out = json_pack("{s:I, s:I, s:I, s:I, s:I}", "paused_ms", (json_int_t)paused_ms, "linked",
                         (json_int_t)st.linked, "copied", (json_int_t)st.copied, "copied_bytes",
                         (json_int_t)st.copied_bytes, "entries", (json_int_t)st.entries);
    return rc;
}

/* A standby sandbox starts in the background (STANDBY_NICE for the shim,
 * whose threads and init inherit it; the smallest CPU weight for its
 * cgroup), so that starting it does not slow the sandboxes in use; its
 * claim puts everything back. Only as root: lowering a nice value needs
 * CAP_SYS_NICE. */
#define STANDBY_NICE 19

static bool runs_in_background(const shim *sh)
{
    return sh->standby && geteuid() == 0;
}

static void *weight_main(void *arg)
{
    shim *sh = arg;
    abx__cgroup_set_background(&sh->jail.cgroup, false, NULL);
    return NULL;
}

static void to_foreground(shim *sh)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (tid > 0 && *end == '\0')
            setpriority(PRIO_PROCESS, (id_t)tid, 0);
    }
    if (d)
        closedir(d);
    setpriority(PRIO_PROCESS, (id_t)sh->jail.init_pid, 0);
    /* the weight by a thread of its own: a cgroup write waits for the
     * kernel's cgroup lock, which another sandbox's start may hold for a
     * grace period (5-25 ms), and the claim answers now */
    pthread_t t;
    if (pthread_create(&t, NULL, weight_main, sh) == 0)
        pthread_detach(t);
    else
        abx__cgroup_set_background(&sh->jail.cgroup, false, NULL);
}

int abx__shim_claim(shim *sh, unsigned timeout, bool pause_on_timeout, json_t *envs, json_t *metadata,
                    const char *token, abx_error **err)
{
    pthread_mutex_lock(&sh->mu);
    bool waiting = sh->standby && !sh->ending, spawned = sh->spawned;
    pthread_mutex_unlock(&sh->mu);
    if (!waiting)
        return abx__error_set(err, ABX_EINVAL, "the sandbox is not waiting to be claimed");
    /* whatever was started in it while it stood by goes: its first user
     * gets a fresh process tree and a token nobody held before (init
     * started nothing unless asked: no round trip to it then) */
    int rc = spawned ? abx__shim_kill_all(sh, err) : 0;
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&sh->mu);
    if (!sh->standby || sh->ending)
        rc = abx__error_set(err, ABX_EINVAL, "the sandbox is not waiting to be claimed");
    if (rc == 0) {
        explicit_bzero(sh->token, sizeof sh->token);
        snprintf(sh->token, sizeof sh->token, "%s", token);
        json_decref(sh->envs);
        json_decref(sh->metadata);
        sh->envs = json_incref(envs);
        sh->metadata = json_incref(metadata);
        if (runs_in_background(sh))
            to_foreground(sh);
        sh->standby = false;
        sh->timeout_s = timeout;
        sh->pause_on_timeout = pause_on_timeout;
        sh->started_at = time(NULL);
        sh->end_at = sh->started_at + (time_t)timeout;
        arm_timer_locked(sh);
        if (write_meta_locked(sh) < 0)
            rc = abx__error_errno(err, ABX_EIO, errno, "writing the sandbox metadata");
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

/* The sandbox's /etc/resolv.conf names its own resolver. */
static int point_resolver(shim *sh, abx_error **err)
{
    char text[256];
    abx__net_resolv_conf(sh->net, text, sizeof text);
    int fd = -1;
    int rc = abx__fs_open_file(sh, 0, "/etc/resolv.conf", O_WRONLY | O_CREAT | O_TRUNC, &fd, err);
    if (rc == 0 && abx__write_all(fd, text, strlen(text)) < 0)
        rc = abx__error_errno(err, ABX_EIO, errno, "network: writing the sandbox's resolv.conf");
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Lock held. */
static int set_network_locked(shim *sh, json_t *policy, abx_error **err)
{
    int rc = 0;
    bool wants = strcmp(abx__net_policy_mode(policy), "none") != 0;
    if (sh->net)
        rc = abx__net_set_policy(sh->net, policy, err);
    else if (wants &&
             (rc = abx__net_up(sh->id, sh->jail.init_pid, sh->state_dir, policy, &sh->net, err)) == 0 &&
             (rc = point_resolver(sh, err)) < 0) {
        abx__net_down(sh->net);
        sh->net = NULL;
    }
    if (rc == 0) {
        json_decref(sh->net_policy);
        sh->net_policy = json_incref(policy);
    }
    return rc;
}

int abx__shim_set_network(shim *sh, json_t *policy, abx_error **err)
{
    pthread_mutex_lock(&sh->mu);
    int rc = sh->ending ? abx__error_set(err, ABX_ENOTRUNNING, "the sandbox is ending")
                        : set_network_locked(sh, policy, err);
    if (rc == 0)
        write_meta_locked(sh);
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

void abx__shim_wake(shim *sh)
{
    uint64_t one = 1;
    (void)write(sh->wakefd, &one, sizeof one);
}

void abx__shim_request_rest(shim *sh)
{
    uint64_t one = 1;
    pthread_mutex_lock(&sh->mu);
    sh->ending = true; /* not killed: a durable sandbox's files are kept */
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    (void)write(sh->wakefd, &one, sizeof one);
}

void abx__shim_request_end(shim *sh)
{
    uint64_t one = 1;
    pthread_mutex_lock(&sh->mu);
    sh->ending = true;
    sh->killed = true;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    (void)write(sh->wakefd, &one, sizeof one);
}

/* Removes the state directory's files (its own and what others keep beside
 * them, such as abx serve's tenant) and the directory; never a walk into a
 * subdirectory. */
static void remove_state(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
            continue;
        unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* A durable sandbox at rest: its processes gone, its files kept (the
 * layer, the request, the token), recorded as paused; libabx starts it
 * again from them (a resume, a connect). */
static void rest(shim *sh)
{
    pthread_mutex_lock(&sh->mu);
    sh->paused = true;
    sh->ending = false;
    write_meta_locked(sh);
    pthread_mutex_unlock(&sh->mu);
    char path[600];
    snprintf(path, sizeof path, "%s/envd.sock", sh->state_dir);
    unlink(path);
}

__attribute__((noreturn)) static void teardown(shim *sh, int status)
{
    pthread_mutex_lock(&sh->mu);
    sh->ending = true;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    abx__net_down(sh->net);       /* the resolver, the filter's objects, the links, the address */
    abx__jail_destroy(&sh->jail); /* SIGKILL init: the pid namespace dies with it */
    if (sh->durable && !sh->killed)
        rest(sh);
    else
        remove_state(sh->state_dir);
    _exit(status);
}

static void tell_creator(int code, const char *message)
{
    char line[700];
    if (code == 0)
        snprintf(line, sizeof line, "ok\n");
    else
        snprintf(line, sizeof line, "E%d %s\n", code, message);
    (void)abx__write_all(READY_FD, line, strlen(line));
    close(READY_FD);
}

/* ---- start-up ----------------------------------------------------------- */

static int read_config(shim *sh, abx_error **err)
{
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", sh->state_dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    if (!cfg)
        return abx__error_set(err, ABX_ECONFIG, "the sandbox request is unreadable");
    const char *id = json_string_value(json_object_get(cfg, "sandbox_id"));
    const char *tmpl = json_string_value(json_object_get(cfg, "template"));
    snprintf(sh->id, sizeof sh->id, "%s", id ? id : "");
    const char *host_name = json_string_value(json_object_get(cfg, "host_name"));
    snprintf(sh->host_name, sizeof sh->host_name, "%s",
             host_name && strlen(host_name) < sizeof sh->host_name &&
                     strspn(host_name, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(host_name) &&
                     *host_name
                 ? host_name
                 : sh->id);
    snprintf(sh->template_name, sizeof sh->template_name, "%s", tmpl ? tmpl : "base");
    const char *troot = json_string_value(json_object_get(cfg, "template_root"));
    snprintf(sh->template_root, sizeof sh->template_root, "%s", troot ? troot : "");
    sh->timeout_s = (unsigned)json_integer_value(json_object_get(cfg, "timeout"));
    sh->durable = json_is_true(json_object_get(cfg, "persistent"));
    sh->pause_keeps_memory = !json_is_false(json_object_get(cfg, "pause_keeps_memory"));
    /* a durable sandbox's timeout pauses it: it ends only when killed */
    sh->pause_on_timeout = json_is_true(json_object_get(cfg, "pause_on_timeout")) || sh->durable;
    sh->limits.cpu_count = (unsigned)json_integer_value(json_object_get(cfg, "cpu_count"));
    sh->limits.memory_mb = (unsigned)json_integer_value(json_object_get(cfg, "memory_mb"));
    sh->limits.disk_mb = (unsigned)json_integer_value(json_object_get(cfg, "disk_size_mb"));
    sh->limits.pids = (unsigned)json_integer_value(json_object_get(cfg, "pids"));
    sh->metadata = json_incref(json_object_get(cfg, "metadata"));
    sh->envs = json_incref(json_object_get(cfg, "envs"));
    json_t *tc = json_object_get(cfg, "template_config");
    sh->template_env = json_incref(json_object_get(tc, "env"));
    sh->template_host_view = json_is_true(json_object_get(tc, "host_view"));
    const char *wd = json_string_value(json_object_get(tc, "workdir"));
    snprintf(sh->template_workdir, sizeof sh->template_workdir, "%s", wd && wd[0] == '/' ? wd : "");
    sh->default_uid =
        json_integer_value(json_object_get(tc, "uid")) == 0 && json_object_get(tc, "uid") ? 0 : 1000;
    sh->standby = json_is_true(json_object_get(cfg, "standby"));
    json_t *network = json_object_get(cfg, "network");
    int nrc = network ? abx__net_policy_normalize(network, &sh->net_policy, err) : 0;
    if (nrc == 0 && !sh->net_policy)
        sh->net_policy = json_pack("{s:s, s:[], s:[]}", "mode", "none", "allow_out", "deny_out");
    if (nrc < 0) {
        json_decref(cfg);
        return nrc;
    }
    sh->attach_pid = (pid_t)json_integer_value(json_object_get(cfg, "attach_pid"));
    const char *acg = json_string_value(json_object_get(cfg, "attach_cgroup"));
    const char *listen = json_string_value(json_object_get(cfg, "listen"));
    snprintf(sh->attach_cgroup, sizeof sh->attach_cgroup, "%s", acg ? acg : "");
    snprintf(sh->listen_addr, sizeof sh->listen_addr, "%s", listen ? listen : "");
    json_int_t owner = json_integer_value(json_object_get(cfg, "owner_pid"));
    json_t *volumes = json_object_get(cfg, "volumes");
    sh->volumes = json_is_array(volumes) && json_array_size(volumes) <= ABX_VOLUME_MOUNTS_MAX
                      ? json_incref(volumes)
                      : NULL;
    bool volumes_bad = volumes && !sh->volumes;
    json_decref(cfg);
    if (volumes_bad)
        return abx__error_set(err, ABX_ECONFIG, "the sandbox request's volumes are malformed");
    /* opened while the owner waits for this shim's ready line: the pid is its */
    if (sh->standby && (owner <= 0 || (sh->owner_pidfd = (int)syscall(SYS_pidfd_open, (pid_t)owner, 0)) < 0))
        return abx__error_set(err, ABX_ECONFIG, "a standby sandbox needs its pool's process");
    if (!sh->metadata)
        sh->metadata = json_object();
    if (!sh->envs)
        sh->envs = json_object();
    snprintf(path, sizeof path, "%s/token", sh->state_dir);
    if (abx__read_small_file(path, sh->token, sizeof sh->token) < 0 || strlen(sh->token) < 32)
        return abx__error_set(err, ABX_ECONFIG, "the sandbox token is unreadable");
    if (!*sh->id || sh->timeout_s < ABX_TIMEOUT_MIN_S || sh->timeout_s > ABX_TIMEOUT_MAX_S ||
        !sh->limits.cpu_count || !sh->limits.memory_mb || !sh->limits.disk_mb || !sh->limits.pids)
        return abx__error_set(err, ABX_ECONFIG, "the sandbox request is incomplete");
    return 0;
}

/* The data plane's socket, $state_dir/envd.sock, bound through a
 * descriptor of the directory: the name the kernel keeps for it (and shows
 * every host user in /proc/net/unix) is "/proc/self/fd/N/envd.sock",
 * which names no sandbox. */
static int listen_socket(shim *sh, abx_error **err)
{
    int dirfd = open(sh->state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dirfd < 0)
        return abx__error_errno(err, ABX_EIO, errno, "opening the state directory");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/envd.sock", dirfd);
    unlinkat(dirfd, "envd.sock", 0); /* a durable sandbox's last shim's (this one holds the lock) */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        close(dirfd);
        return abx__error_errno(err, ABX_ESYS, e, "socket");
    }
    mode_t old = umask(077);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    int e = errno;
    close(dirfd);
    if (rc < 0 || listen(fd, 128) < 0) {
        e = rc < 0 ? e : errno;
        close(fd);
        return abx__error_errno(err, ABX_EIO, e, "binding the data-plane socket");
    }
    sh->listen_fd = fd;
    return 0;
}

/* The agent's socket: TCP on listen_addr in the container's network
 * namespace (entered for the socket call only; this process stays in its
 * own). */
static int listen_in_container(shim *sh, unsigned port_override, int *out, abx_error **err)
{
    char host[48];
    unsigned port = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (sscanf(sh->listen_addr, "%47[0-9.]:%u", host, &port) != 2 || port == 0 || port > 65535 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return abx__error_set(err, ABX_ECONFIG, "the agent's address is not IP:PORT");
    sa.sin_port = htons((uint16_t)(port_override ? port_override : port));
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)sh->attach_pid);
    int theirs = open(path, O_RDONLY | O_CLOEXEC), ours = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (theirs < 0 || ours < 0 || setns(theirs, CLONE_NEWNET) < 0) {
        int e = errno;
        if (theirs >= 0)
            close(theirs);
        if (ours >= 0)
            close(ours);
        return abx__error_errno(err, ABX_EJAIL, e, "entering the container's network namespace");
    }
    /* an engine's "no network" leaves the loopback down: the agent on
     * 127.0.0.1 needs it up (nothing else of the namespace changes) */
    if ((ntohl(sa.sin_addr.s_addr) >> 24) == 127) {
        int ctl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        if (ctl >= 0 && ioctl(ctl, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
            ifr.ifr_flags |= IFF_UP;
            ioctl(ctl, SIOCSIFFLAGS, &ifr);
        }
        if (ctl >= 0)
            close(ctl);
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, e = 0;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0)
        e = errno;
    int back = setns(ours, CLONE_NEWNET);
    close(theirs);
    close(ours);
    if (back < 0) /* never serve from the container's network with our own half gone */
        _exit(1);
    if (e) {
        if (fd >= 0)
            close(fd);
        return abx__error_errno(err, ABX_EIO, e, "listening on the agent's address");
    }
    *out = fd;
    return 0;
}

#define ABX_OCI_CODE_PORT 49999 /* E2B's code interpreter */

/* The agent: its init joins the container, its lifetime is the container's. */
static int start_attached(shim *sh, abx_error **err)
{
    int rc = abx__oci_agent_init(sh->attach_pid, sh->attach_cgroup, &sh->jail, err);
    if (rc < 0)
        return rc;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/root", (int)sh->jail.init_pid);
    sh->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sh->rootfd < 0)
        return abx__error_errno(err, ABX_EJAIL, errno, "opening the container's root");
    if ((rc = listen_in_container(sh, 0, &sh->listen_fd, err)) < 0)
        return rc;
    /* the code interpreter, on E2B's port beside envd's, when the image has Python to run it */
    static const char *const pythons[] = {"usr/bin/python3", "usr/local/bin/python3", "bin/python3"};
    for (size_t i = 0; i < sizeof pythons / sizeof pythons[0]; i++)
        if (faccessat(sh->rootfd, pythons[i], X_OK, 0) == 0)
            return listen_in_container(sh, ABX_OCI_CODE_PORT, &sh->code_listen_fd, err);
    return 0;
}

#define LAYER_IMAGE "layer.ext4"

/* A durable sandbox's writable layer: layer.ext4 in the state directory
 * (made at its first start, disk_size_mb), mounted detached; counts the
 * start in boots. Its fd, or -ABX_E*. */
static int take_layer(shim *sh, abx_error **err)
{
    char path[600], text[32] = "";
    snprintf(path, sizeof path, "%s/boots", sh->state_dir);
    if (abx__read_small_file(path, text, sizeof text) == 0)
        sh->boots = (unsigned)strtoul(text, NULL, 10);
    snprintf(path, sizeof path, "%s/" LAYER_IMAGE, sh->state_dir);
    bool exists = access(path, F_OK) == 0;
    int rc = exists ? 0 : abx__image_make(path, sh->limits.disk_mb, 0, err);
    if (rc < 0)
        return rc;
    sh->keep_state_on_fail = exists;
    sh->resumed_from = exists ? "files" : "";
    int dir = open(sh->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the state directory");
    int layer = abx__image_mount(dir, LAYER_IMAGE, err);
    close(dir);
    if (layer < 0)
        return layer;
    snprintf(text, sizeof text, "%u", ++sh->boots);
    char tmp[620];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    snprintf(path, sizeof path, "%s/boots", sh->state_dir);
    snprintf(tmp, sizeof tmp, "%s/boots.new", sh->state_dir);
    unlink(tmp);
    if (abx__create_file(tmp, text, 0600) < 0 || rename(tmp, path) < 0) {
        close(layer);
        return abx__error_errno(err, ABX_EIO, errno, "recording the sandbox's start");
    }
    return layer;
}

/* Takes every volume of the request (held for this shim's life) and fills
 * jv[] with their trees for the jail. */
static int take_volumes(shim *sh, abx_jail_volume *jv, abx_error **err)
{
    json_t *m;
    size_t i;
    json_array_foreach(sh->volumes, i, m)
    {
        const char *dir = json_string_value(json_object_get(m, "dir"));
        const char *path = json_string_value(json_object_get(m, "path"));
        if (!dir || !path || path[0] != '/' || strlen(path) > 255)
            return abx__error_set(err, ABX_ECONFIG, "the sandbox request's volumes are malformed");
        abx_volume_hold *h = &sh->holds[sh->n_holds];
        int rc = abx__volume_take(dir, json_is_true(json_object_get(m, "image")), h, err);
        if (rc < 0)
            return abx__error_wrap(err, rc, "volume %s", json_string_value(json_object_get(m, "name")) ?: "");
        sh->n_holds++;
        jv[i] = (abx_jail_volume){
            .tree_fd = h->tree_fd, .path = path, .read_only = json_is_true(json_object_get(m, "read_only"))};
        h->tree_fd = -1; /* the jail's now */
    }
    return 0;
}

static int start(shim *sh, abx_error **err)
{
    int rc = read_config(sh, err);
    if (rc < 0)
        return rc;
    char path[600];
    snprintf(path, sizeof path, "%s/shim.lock", sh->state_dir);
    sh->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    /* blocking: a reconciling abx holds it only for a moment */
    if (sh->lockfd < 0 || flock(sh->lockfd, LOCK_EX) < 0)
        return abx__error_set(err, ABX_ESYS, "another shim owns this sandbox");
    abx_jail_config cfg = {.id = sh->id,
                           .host_name = sh->host_name,
                           .limits = sh->limits,
                           .argv = NULL,
                           .envp = NULL,
                           .cwd = "/",
                           .as_root = true,
                           .template_root = sh->template_root[0] ? sh->template_root : NULL,
                           .template_host_view = sh->template_host_view,
                           .root_caps = sh->template_root[0] != '\0'};
    if (runs_in_background(sh))
        setpriority(PRIO_PROCESS, 0, STANDBY_NICE); /* before init and the threads: they inherit it */
    if (sh->attach_pid > 0) {
        if ((rc = start_attached(sh, err)) < 0)
            return rc;
        goto serve;
    }
    int layer = -1;
    if (sh->durable && (layer = take_layer(sh, err)) < 0)
        return layer;
    cfg.durable = sh->durable;
    cfg.layer_fd = layer;
    abx_jail_volume jv[ABX_VOLUME_MOUNTS_MAX];
    if ((rc = take_volumes(sh, jv, err)) < 0) {
        if (layer >= 0)
            close(layer);
        for (size_t i = 0; i < sh->n_holds; i++)
            if (jv[i].tree_fd >= 0)
                close(jv[i].tree_fd);
        return rc;
    }
    cfg.volumes = jv;
    cfg.n_volumes = sh->n_holds;
    rc = abx__jail_start(&cfg, &sh->jail, err);
    if (layer >= 0)
        close(layer);
    for (size_t i = 0; i < sh->n_holds; i++)
        if (jv[i].tree_fd >= 0)
            close(jv[i].tree_fd);
    if (rc < 0)
        return rc;
    if (runs_in_background(sh))
        abx__cgroup_set_background(&sh->jail.cgroup, true, NULL);
    /* libmicrohttpd (and the GnuTLS chain it maps: ten libraries, some 3 ms)
     * loads while init builds the sandbox's root, not after it */
    (void)abx__mhd();
    int ignored;
    if ((rc = abx__jail_wait_started(&sh->jail, &ignored, err)) < 0)
        return rc;
    /* init keeps the default OOM score (0), as does everything it starts:
     * an adjustment would be inherited by every sandbox process, and init
     * is the smallest process inside, never the OOM killer's choice */
    snprintf(path, sizeof path, "/proc/%d/root", (int)sh->jail.init_pid);
    sh->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sh->rootfd < 0)
        return abx__error_errno(err, ABX_EJAIL, errno, "opening the sandbox root");
    if (strcmp(abx__net_policy_mode(sh->net_policy), "none") != 0) {
        json_t *policy = json_incref(sh->net_policy);
        pthread_mutex_lock(&sh->mu);
        rc = set_network_locked(sh, policy, err);
        pthread_mutex_unlock(&sh->mu);
        json_decref(policy);
        if (rc < 0)
            return rc;
    }
    if ((rc = listen_socket(sh, err)) < 0)
        return rc;
serve:
    sh->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    sh->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sh->timerfd < 0 || sh->wakefd < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "timerfd");
    if ((rc = abx__shim_http_start(sh, err)) < 0)
        return rc;
    pthread_mutex_lock(&sh->mu);
    sh->started_at = time(NULL);
    sh->end_at = sh->started_at + (time_t)sh->timeout_s;
    arm_timer_locked(sh);
    rc = write_meta_locked(sh);
    pthread_mutex_unlock(&sh->mu);
    if (rc < 0)
        return abx__error_errno(err, ABX_EIO, errno, "writing the sandbox metadata");
    return 0;
}

/* ---- the event loop ----------------------------------------------------- */

static void on_control(shim *sh)
{
    char *buf = sh->control_buf;
    ssize_t n;
    do
        n = recv(sh->jail.control_fd, buf, ABX_INIT_MSG_MAX, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        teardown(sh, 0); /* init is gone */
    if (n < 0)
        return;
    buf[n] = '\0';
    json_t *msg = json_loads(buf, 0, NULL);
    if (msg)
        abx__shim_on_init_message(sh, msg);
    json_decref(msg);
}

static bool on_signal(shim *sh)
{
    struct signalfd_siginfo si;
    if (read(sh->sigfd, &si, sizeof si) != (ssize_t)sizeof si)
        return false;
    if (si.ssi_signo == SIGCHLD) {
        int st;
        if (waitpid(sh->jail.init_pid, &st, WNOHANG) == sh->jail.init_pid) {
            sh->jail.reaped = true;
            sh->jail.init_status = st;
            return true;
        }
        return false;
    }
    return true; /* SIGTERM, SIGINT, SIGHUP, SIGQUIT: end the sandbox */
}

void abx__shim_event(shim *sh, const char *type, json_t *detail)
{
    abx__event_log_sandbox(sh->state_dir, type, detail);
}

#define OOM_SETTLE_TRIES 10 /* of 2 ms */

/* The sandbox's memory cgroup ran out of memory: an oom event for the
 * kills since the last one (none when the kernel reclaimed enough). */
static void on_oom(shim *sh)
{
    abx__cgroup_oom_watch_ack(&sh->jail.cgroup, sh->oom_fd);
    /* the kernel tells before its OOM killer picks a process: its count
     * moves a moment later (or never, when reclaim sufficed) */
    unsigned long n = abx__cgroup_oom_kills(&sh->jail.cgroup);
    for (int tries = 0; tries < OOM_SETTLE_TRIES && n <= sh->oom_kills_seen; tries++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        n = abx__cgroup_oom_kills(&sh->jail.cgroup);
    }
    pthread_mutex_lock(&sh->mu);
    unsigned long seen = sh->oom_kills_seen;
    sh->oom_kills_seen = n > seen ? n : seen;
    pthread_mutex_unlock(&sh->mu);
    if (n > seen)
        abx__shim_event(sh, "oom",
                        json_pack("{s:I, s:I, s:I}", "killed", (json_int_t)(n - seen), "oom_kills",
                                  (json_int_t)n, "memory_limit_bytes",
                                  (json_int_t)sh->limits.memory_mb << 20));
}

/* Packets the policy refused: a denied event for each destination, the
 * same one again only after DENIAL_REPEAT_S (the filter already keeps it
 * to a few a second). */
#define DENIAL_REPEAT_S 10
static void on_denials(shim *sh, int fd)
{
    abx_net_denial d[16];
    int n = abx__net_denials_read(fd, d, 16);
    time_t now = time(NULL);
    for (int i = 0; i < n; i++) {
        bool same = strcmp(d[i].destination, sh->last_denial.destination) == 0 &&
                    d[i].port == sh->last_denial.port && strcmp(d[i].protocol, sh->last_denial.protocol) == 0;
        if (same && now - sh->last_denial_at < DENIAL_REPEAT_S)
            continue;
        sh->last_denial = d[i];
        sh->last_denial_at = now;
        json_t *detail = json_pack("{s:s, s:s}", "destination", d[i].destination, "protocol", d[i].protocol);
        if (detail && d[i].port)
            json_object_set_new(detail, "port", json_integer(d[i].port));
        abx__shim_event(sh, "denied", detail);
    }
}

/* One sample of the sandbox's use into its hour-long ring, when one is due. */
static void sample_history(shim *sh)
{
    time_t now = time(NULL);
    if (now < sh->history_next)
        return;
    sh->history_next = now + SHIM_HISTORY_EVERY_S;
    abx_cgroup_stats cs;
    if (abx__cgroup_stats(&sh->jail.cgroup, &cs) < 0)
        return;
    pthread_mutex_lock(&sh->mu);
    shim_sample *slot = &sh->history[(sh->history_head + sh->history_n) % SHIM_HISTORY];
    if (sh->history_n == SHIM_HISTORY)
        sh->history_head = (sh->history_head + 1) % SHIM_HISTORY;
    else
        sh->history_n++;
    *slot = (shim_sample){.t = (long long)now, .cpu_us = cs.cpu_us, .mem_bytes = cs.mem_bytes};
    pthread_mutex_unlock(&sh->mu);
}

#define FIXED_POLL 7
#define MAX_POLL (FIXED_POLL + 2 * ABX_SHIM_MAX_PROCS)

__attribute__((noreturn)) static void event_loop(shim *sh)
{
    struct pollfd *pfd = calloc(MAX_POLL, sizeof *pfd);
    sh->control_buf = malloc(ABX_INIT_MSG_MAX + 1);
    if (!pfd || !sh->control_buf)
        teardown(sh, 1);
    for (;;) {
        int n = 0;
        pfd[n++] = (struct pollfd){.fd = sh->sigfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = sh->timerfd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = sh->wakefd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = sh->jail.control_fd, .events = POLLIN};
        pthread_mutex_lock(&sh->mu);
        /* negative: poll skips it */
        pfd[n++] = (struct pollfd){.fd = sh->standby ? sh->owner_pidfd : -1, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = sh->oom_fd, .events = sh->oom_events};
        pfd[n++] = (struct pollfd){.fd = sh->net ? abx__net_denials_fd(sh->net) : -1, .events = POLLIN};
        bool ending = sh->ending;
        for (int i = 0; i < sh->nprocs && n + 2 <= MAX_POLL; i++) {
            shim_proc *p = sh->procs[i];
            bool read_out = p->out_fd >= 0 && abx__shim_proc_read_room_locked(p, false) > 0;
            bool read_err = p->err_fd >= 0 && abx__shim_proc_read_room_locked(p, true) > 0;
            p->paused = (p->out_fd >= 0 && !read_out) || (p->err_fd >= 0 && !read_err);
            if (read_out)
                pfd[n++] = (struct pollfd){.fd = p->out_fd, .events = POLLIN};
            if (read_err)
                pfd[n++] = (struct pollfd){.fd = p->err_fd, .events = POLLIN};
        }
        pthread_mutex_unlock(&sh->mu);
        if (ending)
            teardown(sh, 0);
        int ready = poll(pfd, (nfds_t)n, 1000);
        if (!sh->standby)
            sample_history(sh);
        if (ready < 0)
            continue;
        if ((pfd[0].revents & POLLIN) && on_signal(sh))
            teardown(sh, 0);
        if (pfd[1].revents & POLLIN) {
            pthread_mutex_lock(&sh->mu);
            bool due = time(NULL) >= sh->end_at;
            if (due && sh->attach_pid > 0) { /* the agent lives as long as its container */
                sh->end_at = time(NULL) + (time_t)sh->timeout_s;
                due = false;
            }
            bool pause = due && sh->pause_on_timeout && !sh->paused; /* E2B's onTimeout "pause" */
            if (!due)
                arm_timer_locked(sh);
            pthread_mutex_unlock(&sh->mu);
            uint64_t ticks;
            (void)read(sh->timerfd, &ticks, sizeof ticks);
            if (pause && abx__shim_pause(sh, true, 0, NULL, NULL) == 0) {
                due = false; /* kept paused (PAUSED_KEPT_S), its timer re-armed for that */
                abx__shim_event(sh, "timeout", json_pack("{s:s}", "action", "pause"));
            }
            if (due) {
                abx__shim_event(sh, "timeout", json_pack("{s:s}", "action", "kill"));
                teardown(sh, 0);
            }
        }
        if (pfd[2].revents & POLLIN) {
            uint64_t v;
            (void)read(sh->wakefd, &v, sizeof v);
        }
        if (pfd[3].revents & (POLLIN | POLLHUP | POLLERR))
            on_control(sh);
        if (pfd[4].revents & POLLIN) { /* the pool's process ended */
            pthread_mutex_lock(&sh->mu);
            bool unclaimed = sh->standby;
            pthread_mutex_unlock(&sh->mu);
            if (unclaimed)
                teardown(sh, 0);
        }
        if (pfd[5].revents & (POLLIN | POLLPRI | POLLERR))
            on_oom(sh);
        if (pfd[6].revents & POLLIN)
            on_denials(sh, pfd[6].fd);
        for (int i = FIXED_POLL; i < n; i++)
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                abx__shim_on_output(sh, pfd[i].fd);
    }
}

int abx__shim_main(int argc, char **argv)
{
    (void)argv;
    const char *state_dir = getenv("ABX_SHIM_STATE_DIR");
    if (argc != 1 || !state_dir || !*state_dir || strlen(state_dir) >= sizeof((shim *)0)->state_dir ||
        fcntl(READY_FD, F_GETFD) < 0) {
        fprintf(stderr, "abx-shim: started by abx only (ABX_SHIM_STATE_DIR set, ready pipe on fd 3)\n");
        return 2;
    }
    if (getenv("ABX_SHIM_BACKGROUND")) /* a standby sandbox: from the start (see runs_in_background) */
        setpriority(PRIO_PROCESS, 0, STANDBY_NICE);
    /* detached: libabx started this process (posix_spawn, a session of its
     * own) and reaps it now; the shim is its child, reparented, never a
     * session leader */
    pid_t detached = fork();
    if (detached < 0) {
        tell_creator(ABX_ESYS, "the shim could not detach (fork)");
        return 1;
    }
    if (detached > 0)
        _exit(0);
    static shim sh; /* the one shim of this process; its threads share it */
    memset(&sh, 0, sizeof sh);
    abx__jail_clear(&sh.jail);
    sh.rootfd = sh.lockfd = sh.listen_fd = sh.timerfd = sh.wakefd = sh.sigfd = sh.owner_pidfd = -1;
    sh.code_listen_fd = sh.oom_fd = -1;
    snprintf(sh.state_dir, sizeof sh.state_dir, "%s", state_dir);
    sh.ring_pool = ABX_BOUND_SHIM_RINGS;
    pthread_mutex_init(&sh.mu, NULL);
    pthread_mutex_init(&sh.code_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&sh.cv, &ca);
    signal(SIGPIPE, SIG_IGN);
    static const int handled[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT, 0};
    sh.sigfd = abx__signalfd_block(handled, SFD_NONBLOCK);
    abx_error *err = NULL;
    int rc = sh.sigfd < 0 ? abx__error_errno(&err, ABX_ESYS, errno, "signalfd") : start(&sh, &err);
    if (rc < 0) {
        tell_creator((int)abx_error_code(err), abx_error_message(err));
        abx_error_free(err);
        abx__net_down(sh.net);
        abx__jail_destroy(&sh.jail);
        if (sh.keep_state_on_fail)
            rest(&sh); /* a durable sandbox that will not start again keeps its files */
        else
            remove_state(sh.state_dir);
        return 1;
    }
    tell_creator(0, NULL);
    /* after the creator has its answer: an OOM watch is nothing a create waits for */
    sh.oom_fd = abx__cgroup_oom_watch(&sh.jail.cgroup, &sh.oom_events);
    event_loop(&sh);
}
