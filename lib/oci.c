/* oci.c: abx-oci's verbs over a state directory (abx.h, "abx-oci").
 *
 * Owns a container's state on the host: root/<id>/state.json (its pid,
 * the pid's start time, bundle, cgroup, created time), config.json (the
 * bundle's config as it was at create) and exec.fifo (present from create
 * until start: the container's first process blocks on it). A status is
 * never stored: it is read from the process (gone or a zombie: stopped),
 * the freezer (paused) and the fifo (created), so a container that died
 * is never reported running, and a pid reused by another process is
 * recognised by its start time. Does not own how a container is made
 * (runtime/oci_container.c).
 */
#include "abx/abx.h"
#include "error_internal.h"
#include "config.h"
#include "oci_container.h"
#include "sandbox_id.h"
#include "state.h"

#include "sysutil.h"
#include "uid_pool.h"

#include <dirent.h>
#include <linux/capability.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OCI_SPEC_VERSION "1.2.0"
#define CONFIG_MAX (16u << 20) /* a config.json past 16 MiB is refused */
#define ID_MAX 200
#define MAX_PIDS 65536
#define START_WAIT_S 60 /* for the startContainer hooks and the exec, at most */

const char *abx_oci_spec_version(void)
{
    return OCI_SPEC_VERSION;
}

int abx_oci_signal_parse(const char *text)
{
    return abx__oci_signal_parse(text);
}

/* ---- the state directory ---- */

static int root_dir(const abx_oci_runtime *rt, char *out, size_t len)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (rt && rt->root && *rt->root)
        snprintf(out, len, "%s", rt->root);
    else if (geteuid() != 0 && xdg && *xdg)
        snprintf(out, len, "%s/abx-oci", xdg);
    else
        snprintf(out, len, "/run/abx-oci");
    return 0;
}

static int check_id(const char *id, abx_error **err)
{
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > ID_MAX ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+-.") != n ||
        strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return abx__error_set(err, ABX_EINVAL,
                              "invalid container id: use 1 to %d letters, digits and _ + - . (not . or ..)",
                              ID_MAX);
    return 0;
}

/* root/<id>/<file> into out. */
static int state_path(const abx_oci_runtime *rt, const char *id, const char *file, char *out, size_t len)
{
    char root[PATH_MAX];
    root_dir(rt, root, sizeof root);
    if (strlen(root) + strlen(id) + (file ? strlen(file) + 1 : 0) + 2 > len)
        return -1;
    char *end = stpcpy(stpcpy(stpcpy(out, root), "/"), id);
    if (file)
        stpcpy(stpcpy(end, "/"), file);
    return 0;
}

/* Writes path's content through a temporary file and a rename: a reader
 * sees the old file or the whole new one. */
static int write_atomic(const char *path, const char *content, mode_t mode, abx_error **err)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    unlink(tmp);
    if (abx__create_file(tmp, content, mode) < 0 || rename(tmp, path) < 0) {
        int saved = errno;
        unlink(tmp);
        return abx__error_errno(err, ABX_EIO, saved, path);
    }
    return 0;
}

static json_t *load_json(const char *path, abx_error **err)
{
    struct stat st;
    if (stat(path, &st) == 0 && (unsigned long long)st.st_size > CONFIG_MAX) {
        abx__error_set(err, ABX_ETOOBIG, "%s is larger than %u MiB", path, CONFIG_MAX >> 20);
        return NULL;
    }
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!j)
        abx__error_set(err, errno == ENOENT || access(path, F_OK) < 0 ? ABX_EIO : ABX_EINVAL,
                       "%s: %s (line %d)", path, jerr.text, jerr.line);
    return j;
}

typedef struct container {
    char id[ID_MAX + 1];
    json_t *state; /* state.json */
    pid_t pid;
    const char *status;
    abx_cgroup cg;
} container;

static const char *status_of(const abx_oci_runtime *rt, container *c)
{
    bool zombie;
    unsigned long long start = abx__oci_proc_start_time(c->pid, &zombie);
    json_t *saved = json_object_get(c->state, "start_time");
    if (start == 0 || zombie || !json_is_integer(saved) ||
        (unsigned long long)json_integer_value(saved) != start)
        return "stopped";
    if (abx__cgroup_frozen(&c->cg))
        return "paused";
    char fifo[PATH_MAX];
    state_path(rt, c->id, "exec.fifo", fifo, sizeof fifo);
    return access(fifo, F_OK) == 0 ? "created" : "running";
}

/* Loads container id's state: E8002 "container does not exist" when it has none. */
static int container_load(const abx_oci_runtime *rt, const char *id, container *c, abx_error **err)
{
    memset(c, 0, sizeof *c);
    int rc = check_id(id, err);
    if (rc < 0)
        return rc;
    snprintf(c->id, sizeof c->id, "%s", id);
    char path[PATH_MAX];
    state_path(rt, id, "state.json", path, sizeof path);
    if (access(path, F_OK) < 0)
        return abx__error_set(err, ABX_ENOTFOUND, "container does not exist: %s", id);
    if (!(c->state = load_json(path, err)))
        return -ABX_EIO;
    c->pid = (pid_t)json_integer_value(json_object_get(c->state, "pid"));
    const char *cgroup = json_string_value(json_object_get(c->state, "cgroup_path"));
    abx__cgroup_open_path(&c->cg, cgroup ? cgroup : "/nonexistent");
    c->cg.keep_dirs = !json_is_true(json_object_get(c->state, "cgroup_owned"));
    c->status = status_of(rt, c);
    return 0;
}

static bool is_sandbox(const container *c)
{
    const char *profile = json_string_value(json_object_get(c->state, "profile"));
    return profile && strcmp(profile, "sandbox") == 0;
}

static void container_free(container *c)
{
    json_decref(c->state);
    c->state = NULL;
}

static json_t *state_object(const container *c)
{
    json_t *annotations = json_object_get(c->state, "annotations");
    bool stopped = strcmp(c->status, "stopped") == 0;
    return json_pack("{s:s, s:s, s:s, s:i, s:O, s:O, s:O, s:O}", "ociVersion", OCI_SPEC_VERSION, "id", c->id,
                     "status", c->status, "pid", stopped ? 0 : (int)c->pid, "bundle",
                     json_object_get(c->state, "bundle"), "rootfs", json_object_get(c->state, "rootfs"),
                     "created", json_object_get(c->state, "created"), "annotations",
                     annotations ? annotations : json_object());
}

static char *dumps(json_t *j)
{
    char *text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
    json_decref(j);
    return text;
}

int abx_oci_state(const abx_oci_runtime *rt, const char *id, char **json, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc == 0 && !(*json = dumps(state_object(&c))))
        rc = abx__error_set(err, ABX_ENOMEM, "state: out of memory");
    container_free(&c);
    return rc;
}

int abx_oci_list(const abx_oci_runtime *rt, char **json, abx_error **err)
{
    char root[PATH_MAX];
    root_dir(rt, root, sizeof root);
    json_t *arr = json_array();
    DIR *d = opendir(root);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        container c;
        if (e->d_name[0] == '.' || container_load(rt, e->d_name, &c, NULL) < 0)
            continue;
        json_array_append_new(arr, state_object(&c));
        container_free(&c);
    }
    if (d)
        closedir(d);
    if (!(*json = dumps(arr)))
        return abx__error_set(err, ABX_ENOMEM, "list: out of memory");
    return 0;
}

/* ---- create ---- */

static void now_rfc3339(char *out, size_t len)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%09ldZ", base, ts.tv_nsec);
}

/* systemd's "slice:prefix:name" as the path its driver would make:
 * "a-b.slice" is /a.slice/a-b.slice, the unit is prefix-name.scope. */
static int systemd_path(const char *spec, char *out, size_t len, abx_error **err)
{
    const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1 || !c2)
        return abx__error_set(err, ABX_EINVAL,
                              "--systemd-cgroup: linux.cgroupsPath must be \"slice:prefix:name\", not \"%s\"",
                              spec);
    char slice[128];
    snprintf(slice, sizeof slice, "%.*s", (int)(c1 - spec), spec);
    if (!slice[0])
        snprintf(slice, sizeof slice, "system.slice");
    size_t used = 0;
    out[0] = '\0';
    if (strcmp(slice, "-.slice") != 0) {
        const char *end = strstr(slice, ".slice");
        size_t stem = end ? (size_t)(end - slice) : strlen(slice);
        for (size_t i = 0; i <= stem; i++)
            if (i == stem || slice[i] == '-')
                used += (size_t)snprintf(out + used, len - used, "/%.*s.slice", (int)i, slice);
    }
    int n = snprintf(out + used, len - used, "/%.*s-%s.scope", (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
    if (c2 - c1 - 1 == 0)
        n = snprintf(out + used, len - used, "/%s", c2 + 1);
    return n > 0 && (size_t)n < len - used ? 0
                                           : abx__error_set(err, ABX_EINVAL, "linux.cgroupsPath is too long");
}

static int cgroup_path_of(const abx_oci_runtime *rt, const abx_oci_spec *spec, const char *id, char *out,
                          size_t len, abx_error **err)
{
    if (spec->cgroups_path && rt && rt->systemd_cgroup)
        return systemd_path(spec->cgroups_path, out, len, err);
    if (spec->cgroups_path)
        snprintf(out, len, "%s%s", spec->cgroups_path[0] == '/' ? "" : "/", spec->cgroups_path);
    else
        snprintf(out, len, "/abx-oci/%s", id);
    return 0;
}

static void remove_state(const abx_oci_runtime *rt, const char *id)
{
    char dir[PATH_MAX];
    if (state_path(rt, id, NULL, dir, sizeof dir) == 0)
        abx__tree_remove(dir);
}

/* Relative bind sources are the bundle's. */
static int absolute_sources(abx_oci_spec *spec, const char *bundle, abx_error **err)
{
    for (size_t i = 0; i < spec->n_mounts; i++) {
        abx_oci_mount *m = &spec->mounts[i];
        if (!m->bind || m->source[0] == '/' || !m->source[0])
            continue;
        char *abs = NULL;
        if (asprintf(&abs, "%s/%s", bundle, m->source) < 0)
            return abx__error_set(err, ABX_ENOMEM, "out of memory");
        free(m->source);
        m->source = abs;
    }
    return 0;
}

static int write_state(const abx_oci_runtime *rt, const char *id, const abx_oci_spec *spec,
                       const char *bundle, const char *cgroup_path, const abx_cgroup *cg, pid_t pid,
                       bool sandbox, uid_t uid_base, abx_error **err)
{
    bool zombie;
    char created[64], path[PATH_MAX];
    now_rfc3339(created, sizeof created);
    json_t *st = json_pack("{s:s, s:i, s:I, s:s, s:s, s:s, s:s, s:b, s:O, s:s, s:I}", "id", id, "pid",
                           (int)pid, "start_time", (json_int_t)abx__oci_proc_start_time(pid, &zombie),
                           "bundle", bundle, "rootfs", spec->root_path, "created", created, "cgroup_path",
                           cgroup_path, "cgroup_owned", !cg->keep_dirs, "annotations", spec->annotations,
                           "profile", sandbox ? "sandbox" : "none", "uid_base", (json_int_t)uid_base);
    char *text = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    if (!text)
        return abx__error_set(err, ABX_ENOMEM, "state: out of memory");
    state_path(rt, id, "state.json", path, sizeof path);
    int rc = write_atomic(path, text, 0600, err); /* its annotations may hold the agent's token */
    free(text);
    return rc;
}

static int write_pid_file(const char *path, pid_t pid, abx_error **err)
{
    if (!path || !*path)
        return 0;
    char text[32];
    snprintf(text, sizeof text, "%d", (int)pid);
    return write_atomic(path, text, 0644, err);
}

static void without_cap(abx_oci_process *proc, int cap);

/* cgroup v2 has no device files: its device rules are an eBPF program,
 * which abx-oci does not load. So that a config's rules still hold there,
 * its processes cannot make device nodes (CAP_MKNOD is taken out of every
 * set): the devices a container can open are the ones its config lists. */
static void devices_without_rules(const abx_oci_spec *spec, abx_oci_process *proc)
{
    if (spec->resources.n_devices > 0 && abx__cgroup_detect(NULL) == 2)
        without_cap(proc, CAP_MKNOD);
}

/* The sandbox profile's egress policy: an nft script (*script, the
 * caller frees it; NULL when the annotations ask for none). */
/* The container's own table in its network namespace: a pod's containers
 * share one namespace, and each removes only its own. */
static void egress_table(const char *id, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "abx_egress_");
    for (const char *p = id; *p && n + 1 < len && n < 40; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
            out[n++] = *p;
        else if (*p >= 'A' && *p <= 'Z')
            out[n++] = (char)(*p - 'A' + 'a');
    out[n] = '\0';
}

static int egress_wanted(const char *id, const abx_oci_spec *spec, bool sandbox, char **script,
                         abx_error **err)
{
    *script = NULL;
    const char *allow = json_string_value(json_object_get(spec->annotations, "run.abx.network.allow_out"));
    const char *deny = json_string_value(json_object_get(spec->annotations, "run.abx.network.deny_out"));
    if (!allow && !deny)
        return 0;
    if (!sandbox)
        return abx__error_set(
            err, ABX_EINVAL,
            "run.abx.network.allow_out and deny_out need run.abx.profile=sandbox (the container "
            "must not be able to undo its filter)");
    char table[64];
    egress_table(id, table, sizeof table);
    return abx__oci_egress_script(table, allow, deny, script, err);
}

/* Takes capability cap out of every set of proc (all of them first when
 * the config names none: runc leaves a process every capability then). */
static void without_cap(abx_oci_process *proc, int cap)
{
    if (!proc->has_caps) {
        proc->has_caps = true;
        for (int set = 0; set < 4; set++)
            proc->caps[set] = (1ull << (CAP_LAST_CAP + 1)) - 1;
    }
    for (int set = 0; set < 5; set++)
        proc->caps[set] &= ~(1ull << cap);
}

/* ---- abx's sandbox profile ---- */

#define OCI_CONFIG_DEFAULT "/etc/abx/oci.toml"

/* The operator's default profile: [oci] profile in /etc/abx/oci.toml
 * ($ABX_OCI_CONFIG), "" when it names none. */
static int operator_profile(char *out, size_t len, abx_error **err)
{
    const char *path = getenv("ABX_OCI_CONFIG");
    if (!path || !*path)
        path = OCI_CONFIG_DEFAULT;
    out[0] = '\0';
    char text[16384];
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return errno == ENOENT ? 0 : abx__error_errno(err, ABX_ECONFIG, errno, path);
    json_t *doc = NULL;
    int bad_line = 0;
    if (abx__toml_parse_json(text, &doc, &bad_line) < 0)
        return abx__error_set(err, ABX_ECONFIG, "%s: line %d is not TOML abx reads", path, bad_line);
    const char *profile = json_string_value(json_object_get(json_object_get(doc, "oci"), "profile"));
    snprintf(out, len, "%s", profile ? profile : "");
    json_decref(doc);
    return 0;
}

/* Whether the container runs under abx's sandbox profile: its annotation
 * run.abx.profile, else the operator's default. */
static int wants_sandbox(const abx_oci_spec *spec, bool *sandbox, abx_error **err)
{
    char profile[64];
    const char *asked = json_string_value(json_object_get(spec->annotations, "run.abx.profile"));
    int rc = 0;
    if (asked)
        snprintf(profile, sizeof profile, "%s", asked);
    else if ((rc = operator_profile(profile, sizeof profile, err)) < 0)
        return rc;
    if (profile[0] && strcmp(profile, "sandbox") != 0 && strcmp(profile, "none") != 0)
        return abx__error_set(err, ABX_EINVAL,
                              "run.abx.profile must be \"sandbox\" or \"none\", not \"%.32s\"", profile);
    *sandbox = strcmp(profile, "sandbox") == 0;
    const abx_oci_namespace *user = abx__oci_spec_namespace(spec, CLONE_NEWUSER);
    if (*sandbox && user && user->path)
        return abx__error_set(err, ABX_EINVAL,
                              "run.abx.profile=sandbox gives the container a user namespace of its own: the "
                              "config's user namespace (%s) cannot be joined",
                              user->path);
    if (*sandbox && geteuid() != 0)
        return abx__error_set(err, ABX_EPERM,
                              "run.abx.profile=sandbox needs root (a host uid range of abx's pool)");
    return 0;
}

/* Holds the container's uid range (the pool's lock) until its init is gone:
 * a process of its own, outside the container, with nothing else open. */
static void hold_range(int lock_fd, pid_t init)
{
    pid_t holder = fork();
    if (holder != 0)
        return; /* the caller (a failed fork: the range goes back when the caller exits) */
    int pidfd = (int)syscall(SYS_pidfd_open, init, 0);
    int keep = lock_fd > pidfd ? lock_fd : pidfd;
    for (int fd = 0; fd <= keep; fd++)
        if (fd != lock_fd && fd != pidfd)
            close(fd);
    syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0);
    setsid();
    prctl(PR_SET_NAME, "abx-oci-uids");
    struct pollfd p = {pidfd, POLLIN, 0};
    while (pidfd >= 0 && poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    _exit(0);
}

/* ---- the in-container agent (run.abx.envd=true) ---- */

#define AGENT_LISTEN_DEFAULT "127.0.0.1:49983"
#define AGENT_TOKEN_MIN 32
#define AGENT_TOKEN_MAX 79

typedef struct agent_request {
    bool on;
    const char *token;
    char listen[64];
} agent_request;

/* The annotations that ask for the agent, checked before anything is made. */
static int agent_wanted(const abx_oci_spec *spec, agent_request *a, abx_error **err)
{
    memset(a, 0, sizeof *a);
    const char *on = json_string_value(json_object_get(spec->annotations, "run.abx.envd"));
    if (!on || strcmp(on, "false") == 0)
        return 0;
    if (strcmp(on, "true") != 0)
        return abx__error_set(err, ABX_EINVAL, "run.abx.envd must be \"true\" or \"false\"");
    a->on = true;
    a->token = json_string_value(json_object_get(spec->annotations, "run.abx.envd.token"));
    size_t n = a->token ? strlen(a->token) : 0;
    if (n < AGENT_TOKEN_MIN || n > AGENT_TOKEN_MAX ||
        strspn(a->token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~+/=") != n)
        return abx__error_set(
            err, ABX_EINVAL,
            "run.abx.envd=true needs run.abx.envd.token: %d to %d letters, digits or -_.~+/= "
            "(every request must carry it as X-Access-Token)",
            AGENT_TOKEN_MIN, AGENT_TOKEN_MAX);
    const char *listen = json_string_value(json_object_get(spec->annotations, "run.abx.envd.listen"));
    snprintf(a->listen, sizeof a->listen, "%s", listen ? listen : AGENT_LISTEN_DEFAULT);
    unsigned b[4], port;
    char end;
    if (sscanf(a->listen, "%u.%u.%u.%u:%u%c", &b[0], &b[1], &b[2], &b[3], &port, &end) != 5 || b[0] > 255 ||
        b[1] > 255 || b[2] > 255 || b[3] > 255 || port == 0 || port > 65535)
        return abx__error_set(err, ABX_EINVAL, "run.abx.envd.listen must be IPv4:PORT (e.g. 0.0.0.0:49983)");
    return 0;
}

/* The process's environment as the agent's default envs ({K: V}). */
static json_t *env_map(const abx_oci_process *proc)
{
    json_t *map = json_object();
    for (size_t i = 0; proc->env && proc->env[i]; i++) {
        const char *eq = strchr(proc->env[i], '=');
        if (!eq || eq == proc->env[i])
            continue;
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - proc->env[i]), proc->env[i]);
        json_object_set_new(map, key, json_string(eq + 1));
    }
    return map;
}

static int write_private(const char *path, const char *text, abx_error **err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || abx__write_all(fd, text, strlen(text)) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return abx__error_errno(err, ABX_EIO, e, path);
    }
    close(fd);
    return 0;
}

/* Where the agent's commands and cells start: the process's cwd, but not
 * "/" when the image has a /tmp (the code interpreter lists what a cell
 * made under its cwd: never the whole root). */
static const char *agent_workdir(const abx_oci_spec *spec)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s/tmp", spec->root_path);
    struct stat st;
    if (strcmp(spec->process.cwd, "/") == 0 && lstat(tmp, &st) == 0 && S_ISDIR(st.st_mode))
        return "/tmp";
    return spec->process.cwd;
}

/* Starts the agent (abx-shim attached to the container) in root/<id>/agent. */
static int start_agent(const abx_oci_runtime *rt, const char *id, const abx_oci_spec *spec,
                       const agent_request *a, pid_t pid, const char *cgroup_path, abx_error **err)
{
    char dir[PATH_MAX], path[PATH_MAX + 16], sid[ABX_SANDBOX_ID_LEN + 1];
    if (state_path(rt, id, "agent", dir, sizeof dir) < 0 || mkdir(dir, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the agent's state directory");
    if (abx__sandbox_id_new(sid) < 0)
        return abx__error_set(err, ABX_ESYS, "no randomness for the agent");
    json_t *cfg = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:s, s:s, s:o, s:{s:i, s:s}, s:{s:s}}", "sandbox_id", sid,
        "timeout", ABX_TIMEOUT_MAX_S, "cpu_count", 1, "memory_mb", 1, "disk_size_mb", 1, "pids", 1,
        "template", "oci", "attach_pid", (int)pid, "attach_cgroup", cgroup_path, "listen", a->listen, "envs",
        env_map(&spec->process), "template_config", "uid", (int)spec->process.uid == 0 ? 0 : 1000, "workdir",
        agent_workdir(spec), "metadata", "oci_container", id);
    char *text = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    json_decref(cfg);
    if (!text)
        return abx__error_set(err, ABX_ENOMEM, "the agent: out of memory");
    snprintf(path, sizeof path, "%s/config.json", dir);
    int rc = write_private(path, text, err);
    free(text);
    snprintf(path, sizeof path, "%s/token", dir);
    if (rc == 0)
        rc = write_private(path, a->token, err);
    return rc < 0 ? rc : abx__shim_start_detached(dir, err);
}

/* After the container is gone: waits (up to 3 s) for its agent to notice
 * and end, so that nothing of it outlives the delete. */
static void wait_agent_gone(const abx_oci_runtime *rt, const char *id)
{
    char dir[PATH_MAX];
    if (state_path(rt, id, "agent", dir, sizeof dir) < 0 || access(dir, F_OK) < 0)
        return;
    for (int i = 0; i < 3000 && abx__state_shim_alive(dir); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The bundle's config.json, read and kept in the state directory. */
static int load_bundle(const abx_oci_runtime *rt, const char *id, const char *bundle, abx_oci_spec *spec,
                       abx_error **err)
{
    char path[PATH_MAX + 16], copy[PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", bundle);
    json_t *config = load_json(path, err);
    if (!config)
        return -ABX_EINVAL;
    int rc = abx__oci_spec_parse(config, bundle, spec, err);
    if (rc == 0)
        rc = absolute_sources(spec, bundle, err);
    state_path(rt, id, "config.json", copy, sizeof copy);
    char *text = rc == 0 ? json_dumps(config, JSON_COMPACT) : NULL;
    if (rc == 0 && (!text || write_atomic(copy, text, 0600, NULL) < 0))
        rc = abx__error_errno(err, ABX_EIO, errno, "saving the config in the state directory");
    free(text);
    json_decref(config);
    return rc;
}

static int make_state_dir(const abx_oci_runtime *rt, const char *id, abx_error **err)
{
    char root[PATH_MAX], dir[PATH_MAX];
    root_dir(rt, root, sizeof root);
    for (char *p = root + 1; *p; p++) { /* its parents too, as runc does */
        if (*p != '/')
            continue;
        *p = '\0';
        int made = abx__mkdir_exist_ok(root, 0711);
        *p = '/';
        if (made < 0)
            return abx__error_errno(err, ABX_EIO, errno, root);
    }
    if (abx__mkdir_exist_ok(root, 0711) < 0)
        return abx__error_errno(err, ABX_EIO, errno, root);
    state_path(rt, id, NULL, dir, sizeof dir);
    if (mkdir(dir, 0700) < 0) /* root's alone: a config's annotations may hold secrets */
        return errno == EEXIST ? abx__error_set(err, ABX_EINVAL, "container with id exists: %s", id)
                               : abx__error_errno(err, ABX_EIO, errno, dir);
    return 0;
}

int abx_oci_create(const abx_oci_runtime *rt, const char *id, const abx_oci_create_options *opts,
                   abx_error **err)
{
    int rc = check_id(id, err);
    if (rc < 0)
        return rc;
    char bundle[PATH_MAX], fifo[PATH_MAX], cgroup_path[256];
    if (!realpath(opts && opts->bundle ? opts->bundle : ".", bundle))
        return abx__error_errno(err, ABX_EINVAL, errno, "the bundle directory");
    if ((rc = make_state_dir(rt, id, err)) < 0)
        return rc;
    abx_oci_spec spec;
    abx_cgroup cg;
    memset(&cg, 0, sizeof cg);
    pid_t pid = 0;
    int lock_fd = -1;
    char *egress = NULL;
    if ((rc = load_bundle(rt, id, bundle, &spec, err)) < 0 ||
        (rc = cgroup_path_of(rt, &spec, id, cgroup_path, sizeof cgroup_path, err)) < 0)
        goto fail;
    bool sandbox = false;
    agent_request agent;
    if ((rc = wants_sandbox(&spec, &sandbox, err)) < 0 || (rc = agent_wanted(&spec, &agent, err)) < 0 ||
        (rc = egress_wanted(id, &spec, sandbox, &egress, err)) < 0)
        goto fail;
    if (egress) /* the filter lives in the container's network namespace: it may not change it */
        without_cap(&spec.process, CAP_NET_ADMIN);
    uid_t uid_base = 0;
    if (sandbox && (rc = abx__uid_range_take(&uid_base, &lock_fd, err)) < 0)
        goto fail;
    free(spec.cgroups_path);
    spec.cgroups_path = strdup(cgroup_path);
    devices_without_rules(&spec, &spec.process);
    state_path(rt, id, "exec.fifo", fifo, sizeof fifo);
    if (mkfifo(fifo, 0622) < 0) {
        rc = abx__error_errno(err, ABX_EIO, errno, "making the exec fifo");
        goto fail;
    }
    abx_oci_create_params params = {.spec = &spec,
                                    .id = id,
                                    .bundle = bundle,
                                    .fifo_path = fifo,
                                    .console_socket = opts ? opts->console_socket : NULL,
                                    .no_pivot = opts && opts->no_pivot,
                                    .preserve_fds = opts ? opts->preserve_fds : 0,
                                    .profile = {.sandbox = sandbox, .host_id_base = uid_base},
                                    .egress_script = egress};
    if ((rc = abx__oci_container_create(&params, &pid, &cg, err)) < 0)
        goto fail;
    if ((rc = write_state(rt, id, &spec, bundle, cgroup_path, &cg, pid, sandbox, uid_base, err)) < 0 ||
        (rc = write_pid_file(opts ? opts->pid_file : NULL, pid, err)) < 0) {
        kill(pid, SIGKILL);
        abx__cgroup_destroy(&cg);
        goto fail;
    }
    if (agent.on && (rc = start_agent(rt, id, &spec, &agent, pid, cgroup_path, err)) < 0) {
        kill(pid, SIGKILL);
        abx__cgroup_destroy(&cg);
        goto fail;
    }
    if (lock_fd >= 0) {
        hold_range(lock_fd, pid);
        close(lock_fd);
    }
    abx__oci_spec_free(&spec);
    free(egress);
    return 0;
fail:
    free(egress);
    if (lock_fd >= 0)
        close(lock_fd);
    abx__oci_spec_free(&spec);
    remove_state(rt, id);
    return rc;
}

/* The saved config of a container. */
static int saved_spec(const abx_oci_runtime *rt, const container *c, abx_oci_spec *spec, abx_error **err)
{
    char path[PATH_MAX];
    state_path(rt, c->id, "config.json", path, sizeof path);
    json_t *config = load_json(path, err);
    if (!config) {
        memset(spec, 0, sizeof *spec);
        return -ABX_EIO;
    }
    const char *bundle = json_string_value(json_object_get(c->state, "bundle"));
    int rc = abx__oci_spec_parse(config, bundle ? bundle : "/", spec, err);
    json_decref(config);
    return rc;
}

static char *state_text(const container *c)
{
    json_t *st = state_object(c);
    char *text = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    return text;
}

/* Runs the hooks of kind with the state at status; their failures are
 * the engine's to read in its log, not the verb's (as runc: poststart and
 * poststop only warn). */
static void run_hooks_as(container *c, const abx_oci_spec *spec, int kind, const char *status)
{
    c->status = status;
    char *state = state_text(c);
    abx__oci_hooks_run(spec->hooks[kind], spec->n_hooks[kind], state ? state : "{}", NULL);
    free(state);
}

int abx_oci_start(const abx_oci_runtime *rt, const char *id, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    if (strcmp(c.status, "created") != 0) {
        rc = abx__error_set(err, ABX_ENOTRUNNING, "cannot start a container that has %s",
                            strcmp(c.status, "stopped") == 0 ? "stopped" : "already started");
        goto out;
    }
    char fifo[PATH_MAX];
    state_path(rt, id, "exec.fifo", fifo, sizeof fifo);
    int fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || abx__write_all_nosigpipe(fd, "0", 1) < 0) {
        rc = abx__error_errno(err, ABX_ENOTRUNNING, errno, "the container's process is not waiting to start");
        if (fd >= 0)
            close(fd);
        goto out;
    }
    /* the container's init holds the fifo's only reader until it execs
     * the process (close-on-exec) or fails: then POLLERR here. The
     * poststart hooks run after that, as the OCI spec orders them. */
    struct pollfd gone = {fd, 0, 0};
    for (int waited = 0; waited < START_WAIT_S * 10; waited++) {
        int n = poll(&gone, 1, 100);
        if (n > 0 && (gone.revents & (POLLERR | POLLHUP)))
            break;
    }
    close(fd);
    unlink(fifo);
    abx_oci_spec spec;
    if (saved_spec(rt, &c, &spec, NULL) == 0)
        run_hooks_as(&c, &spec, ABX_OCI_HOOK_POSTSTART, "running");
    abx__oci_spec_free(&spec);
out:
    container_free(&c);
    return rc;
}

int abx_oci_kill(const abx_oci_runtime *rt, const char *id, int sig, bool all, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    if (sig <= 0 || sig > 64)
        rc = abx__error_set(err, ABX_EINVAL, "invalid signal");
    else if (strcmp(c.status, "stopped") == 0 && !all)
        rc = abx__error_set(err, ABX_ENOTRUNNING, "container not running");
    else {
        if (all)
            abx__cgroup_signal_all(&c.cg, sig);
        if (strcmp(c.status, "stopped") != 0 && kill(c.pid, sig) < 0 && errno != ESRCH)
            rc = abx__error_errno(err, ABX_ESYS, errno, "kill");
        if (strcmp(c.status, "paused") == 0 && sig == SIGKILL)
            abx__cgroup_thaw_now(&c.cg);
    }
    container_free(&c);
    return rc;
}

/* Waits (up to about 10 s) for the container's process to be gone or a zombie. */
static void wait_stopped(const abx_oci_runtime *rt, container *c)
{
    for (int i = 0; i < 10000 && strcmp(status_of(rt, c), "stopped") != 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

int abx_oci_delete(const abx_oci_runtime *rt, const char *id, bool force, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return force && rc == -ABX_ENOTFOUND
                   ? (abx_error_free(err ? *err : NULL), err ? *err = NULL : NULL, 0)
                   : rc;
    bool created = strcmp(c.status, "created") == 0;
    if (strcmp(c.status, "stopped") != 0 && !created && !force) {
        rc = abx__error_set(err, ABX_EINVAL, "cannot delete container %s that is not stopped: %s", id,
                            c.status);
        container_free(&c);
        return rc;
    }
    if (strcmp(c.status, "stopped") != 0) {
        abx__cgroup_signal_all(&c.cg, SIGKILL);
        kill(c.pid, SIGKILL);
        abx__cgroup_thaw_now(&c.cg);
        wait_stopped(rt, &c);
    }
    wait_agent_gone(rt, id);
    abx__cgroup_destroy(&c.cg);
    abx_oci_spec spec;
    if (saved_spec(rt, &c, &spec, NULL) == 0) {
        const abx_oci_namespace *net = abx__oci_spec_namespace(&spec, CLONE_NEWNET);
        if (net && net->path &&
            (json_object_get(spec.annotations, "run.abx.network.allow_out") ||
             json_object_get(spec.annotations, "run.abx.network.deny_out"))) {
            char table[64];
            egress_table(id, table, sizeof table);
            abx__oci_egress_remove(net->path, table, NULL); /* the namespace outlives the container */
        }
        run_hooks_as(&c, &spec, ABX_OCI_HOOK_POSTSTOP, "stopped");
    }
    abx__oci_spec_free(&spec);
    remove_state(rt, id);
    container_free(&c);
    return 0;
}

int abx_oci_pause(const abx_oci_runtime *rt, const char *id, bool pause, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    if (strcmp(c.status, pause ? "running" : "paused") != 0)
        rc = abx__error_set(err, ABX_ENOTRUNNING, "container %s is %s, not %s", id, c.status,
                            pause ? "running" : "paused");
    else
        rc = abx__cgroup_freeze(&c.cg, pause, err);
    container_free(&c);
    return rc;
}

int abx_oci_ps(const abx_oci_runtime *rt, const char *id, int **pids, size_t *count, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    pid_t *list = calloc(MAX_PIDS, sizeof *list);
    if (!list) {
        container_free(&c);
        return abx__error_set(err, ABX_ENOMEM, "ps: out of memory");
    }
    *count = abx__cgroup_members(&c.cg, list, MAX_PIDS);
    *pids = (int *)list;
    container_free(&c);
    return 0;
}

int abx_oci_update(const abx_oci_runtime *rt, const char *id, const char *resources_json, abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    json_error_t jerr;
    json_t *j = json_loads(resources_json ? resources_json : "", 0, &jerr);
    abx_cgroup_resources res;
    if (!j)
        rc = abx__error_set(err, ABX_EINVAL, "--resources: %s", jerr.text);
    else if ((rc = abx__oci_resources_parse(j, &res, err)) == 0)
        rc = abx__cgroup_apply(&c.cg, &res, err);
    json_decref(j);
    container_free(&c);
    return rc;
}

/* ---- exec ---- */

/* The process to exec: the --process file, or the container's own
 * process with the options' args, env, cwd, user and tty over it. */
static json_t *exec_process(const abx_oci_runtime *rt, const container *c, const abx_oci_exec_options *o,
                            abx_error **err)
{
    if (o->process_path)
        return load_json(o->process_path, err);
    char path[PATH_MAX];
    state_path(rt, c->id, "config.json", path, sizeof path);
    json_t *config = load_json(path, err);
    json_t *proc = config ? json_deep_copy(json_object_get(config, "process")) : NULL;
    json_decref(config);
    if (!proc)
        return NULL;
    json_t *args = json_array(), *env = json_object_get(proc, "env");
    for (size_t i = 0; o->args && o->args[i]; i++)
        json_array_append_new(args, json_string(o->args[i]));
    json_object_set_new(proc, "args", args);
    for (size_t i = 0; env && o->env && o->env[i]; i++)
        json_array_append_new(env, json_string(o->env[i]));
    if (o->cwd)
        json_object_set_new(proc, "cwd", json_string(o->cwd));
    json_object_set_new(proc, "terminal", json_boolean(o->tty));
    if (o->user) {
        unsigned uid = 0, gid = 0;
        int n = sscanf(o->user, "%u:%u", &uid, &gid);
        if (n < 1) {
            json_decref(proc);
            abx__error_set(err, ABX_EINVAL, "--user must be UID[:GID]");
            return NULL;
        }
        json_object_set_new(
            proc, "user",
            json_pack("{s:I, s:I}", "uid", (json_int_t)uid, "gid", (json_int_t)(n > 1 ? gid : 0)));
    }
    return proc;
}

int abx_oci_exec(const abx_oci_runtime *rt, const char *id, const abx_oci_exec_options *o, int *exit_status,
                 abx_error **err)
{
    container c;
    int rc = container_load(rt, id, &c, err);
    if (rc < 0)
        return rc;
    abx_oci_spec spec;
    abx_oci_process proc;
    memset(&proc, 0, sizeof proc);
    memset(&spec, 0, sizeof spec);
    json_t *pj = NULL;
    if (strcmp(c.status, "stopped") == 0 || strcmp(c.status, "paused") == 0) {
        rc = abx__error_set(err, ABX_ENOTRUNNING, "cannot exec in a %s container", c.status);
        goto out;
    }
    if ((rc = saved_spec(rt, &c, &spec, err)) < 0)
        goto out;
    if (!(pj = exec_process(rt, &c, o, err))) {
        rc = -ABX_EINVAL;
        goto out;
    }
    if ((rc = abx__oci_process_parse(pj, &proc, err)) < 0)
        goto out;
    devices_without_rules(&spec, &proc);
    if (json_object_get(spec.annotations, "run.abx.network.allow_out") ||
        json_object_get(spec.annotations, "run.abx.network.deny_out"))
        without_cap(&proc, CAP_NET_ADMIN); /* as the container's own process */
    abx_oci_exec_params params = {.spec = &spec,
                                  .process = &proc,
                                  .container_pid = c.pid,
                                  .cg = &c.cg,
                                  .console_socket = o->console_socket,
                                  .preserve_fds = o->preserve_fds,
                                  .detach = o->detach,
                                  .profile = {.sandbox = is_sandbox(&c)}};
    pid_t pid = 0;
    int status = 0;
    rc = abx__oci_container_exec(&params, &pid, &status, err);
    if (rc == 0 && o->detach)
        rc = write_pid_file(o->pid_file, pid, err);
    if (exit_status)
        *exit_status = status;
out:
    json_decref(pj);
    abx__oci_process_free(&proc);
    abx__oci_spec_free(&spec);
    container_free(&c);
    return rc;
}

int abx_oci_run(const abx_oci_runtime *rt, const char *id, const abx_oci_create_options *opts, bool detach,
                int *exit_status, abx_error **err)
{
    /* the container's process comes back to us when its parent exits: we wait for it */
    if (!detach)
        prctl(PR_SET_CHILD_SUBREAPER, 1);
    int rc = abx_oci_create(rt, id, opts, err);
    if (rc < 0)
        return rc;
    if ((rc = abx_oci_start(rt, id, err)) < 0 || detach) {
        if (rc < 0)
            abx_oci_delete(rt, id, true, NULL);
        return rc;
    }
    container c;
    if ((rc = container_load(rt, id, &c, err)) < 0)
        return rc;
    int status = 0;
    while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR)
        ;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    container_free(&c);
    return abx_oci_delete(rt, id, true, err);
}

/* ---- documents ---- */

char *abx_oci_default_spec(void)
{
    static const char spec[] =
        "{\"ociVersion\":\"" OCI_SPEC_VERSION "\","
        "\"process\":{\"terminal\":true,\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],"
        "\"env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\"TERM=xterm\"],"
        "\"cwd\":\"/\",\"capabilities\":{"
        "\"bounding\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
        "\"effective\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
        "\"permitted\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"],"
        "\"ambient\":[\"CAP_AUDIT_WRITE\",\"CAP_KILL\",\"CAP_NET_BIND_SERVICE\"]},"
        "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1024,\"soft\":1024}],\"noNewPrivileges\":true},"
        "\"root\":{\"path\":\"rootfs\",\"readonly\":true},\"hostname\":\"abx\","
        "\"mounts\":["
        "{\"destination\":\"/proc\",\"type\":\"proc\",\"source\":\"proc\"},"
        "{\"destination\":\"/"
        "dev\",\"type\":\"tmpfs\",\"source\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\","
        "\"size=65536k\"]},"
        "{\"destination\":\"/dev/"
        "pts\",\"type\":\"devpts\",\"source\":\"devpts\",\"options\":[\"nosuid\",\"noexec\",\"newinstance\","
        "\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
        "{\"destination\":\"/dev/"
        "shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"mode="
        "1777\",\"size=65536k\"]},"
        "{\"destination\":\"/dev/"
        "mqueue\",\"type\":\"mqueue\",\"source\":\"mqueue\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
        "{\"destination\":\"/"
        "sys\",\"type\":\"sysfs\",\"source\":\"sysfs\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},"
        "{\"destination\":\"/sys/fs/"
        "cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\",\"options\":[\"nosuid\",\"noexec\",\"nodev\","
        "\"relatime\",\"ro\"]}],"
        "\"linux\":{\"resources\":{\"devices\":[{\"allow\":false,\"access\":\"rwm\"}]},"
        "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{"
        "\"type\":\"mount\"},{\"type\":\"cgroup\"}],"
        "\"maskedPaths\":[\"/proc/acpi\",\"/proc/asound\",\"/proc/kcore\",\"/proc/keys\",\"/proc/"
        "latency_stats\",\"/proc/timer_list\","
        "\"/proc/timer_stats\",\"/proc/sched_debug\",\"/sys/firmware\",\"/proc/scsi\"],"
        "\"readonlyPaths\":[\"/proc/bus\",\"/proc/fs\",\"/proc/irq\",\"/proc/sys\",\"/proc/"
        "sysrq-trigger\"]}}";
    json_t *j = json_loads(spec, 0, NULL);
    return dumps(j);
}

char *abx_oci_features(void)
{
    static const char features[] =
        "{\"ociVersionMin\":\"1.0.0\",\"ociVersionMax\":\"" OCI_SPEC_VERSION "\","
        "\"hooks\":[\"prestart\",\"createRuntime\",\"createContainer\",\"startContainer\",\"poststart\","
        "\"poststop\"],"
        "\"mountOptions\":[\"async\",\"atime\",\"bind\",\"dev\",\"diratime\",\"dirsync\",\"exec\",\"mand\","
        "\"noatime\","
        "\"nodev\",\"nodiratime\",\"noexec\",\"nomand\",\"norelatime\",\"nostrictatime\",\"nosuid\","
        "\"private\",\"rbind\","
        "\"relatime\",\"remount\",\"ro\",\"rprivate\",\"rshared\",\"rslave\",\"runbindable\",\"rw\","
        "\"shared\",\"slave\","
        "\"strictatime\",\"suid\",\"sync\",\"unbindable\"],"
        "\"linux\":{\"namespaces\":[\"cgroup\",\"ipc\",\"mount\",\"network\",\"pid\",\"user\",\"uts\","
        "\"time\"],"
        "\"capabilities\":[\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_DAC_READ_SEARCH\",\"CAP_FOWNER\",\"CAP_"
        "FSETID\","
        "\"CAP_KILL\",\"CAP_SETGID\",\"CAP_SETUID\",\"CAP_SETPCAP\",\"CAP_LINUX_IMMUTABLE\",\"CAP_NET_BIND_"
        "SERVICE\","
        "\"CAP_NET_BROADCAST\",\"CAP_NET_ADMIN\",\"CAP_NET_RAW\",\"CAP_IPC_LOCK\",\"CAP_IPC_OWNER\",\"CAP_"
        "SYS_MODULE\","
        "\"CAP_SYS_RAWIO\",\"CAP_SYS_CHROOT\",\"CAP_SYS_PTRACE\",\"CAP_SYS_PACCT\",\"CAP_SYS_ADMIN\",\"CAP_"
        "SYS_BOOT\","
        "\"CAP_SYS_NICE\",\"CAP_SYS_RESOURCE\",\"CAP_SYS_TIME\",\"CAP_SYS_TTY_CONFIG\",\"CAP_MKNOD\",\"CAP_"
        "LEASE\","
        "\"CAP_AUDIT_WRITE\",\"CAP_AUDIT_CONTROL\",\"CAP_SETFCAP\",\"CAP_MAC_OVERRIDE\",\"CAP_MAC_ADMIN\","
        "\"CAP_SYSLOG\","
        "\"CAP_WAKE_ALARM\",\"CAP_BLOCK_SUSPEND\",\"CAP_AUDIT_READ\",\"CAP_PERFMON\",\"CAP_BPF\",\"CAP_"
        "CHECKPOINT_RESTORE\"],"
        "\"cgroup\":{\"v1\":true,\"v2\":true,\"systemd\":false,\"systemdUser\":false},"
        "\"seccomp\":{\"enabled\":true,\"actions\":[\"SCMP_ACT_ALLOW\",\"SCMP_ACT_ERRNO\",\"SCMP_ACT_KILL\","
        "\"SCMP_ACT_KILL_PROCESS\",\"SCMP_ACT_KILL_THREAD\",\"SCMP_ACT_LOG\",\"SCMP_ACT_TRACE\",\"SCMP_ACT_"
        "TRAP\"],"
        "\"operators\":[\"SCMP_CMP_EQ\",\"SCMP_CMP_GE\",\"SCMP_CMP_GT\",\"SCMP_CMP_LE\",\"SCMP_CMP_LT\","
        "\"SCMP_CMP_MASKED_EQ\","
        "\"SCMP_CMP_NE\"],\"archs\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_X86\",\"SCMP_ARCH_X32\",\"SCMP_ARCH_"
        "AARCH64\","
        "\"SCMP_ARCH_ARM\"]},"
        "\"apparmor\":{\"enabled\":true},\"selinux\":{\"enabled\":false}},"
        "\"annotations\":{\"run.abx.profile\":\"sandbox | none\",\"run.abx.network.allow_out\":\"addresses, "
        "CIDRs, "
        "names (sandbox profile)\",\"run.abx.network.deny_out\":\"addresses, CIDRs, names (sandbox "
        "profile)\","
        "\"run.abx.envd\":\"true | false\",\"run.abx.envd.token\":\"32-79 "
        "characters\",\"run.abx.envd.listen\":"
        "\"IPv4:PORT\"}}";
    json_t *j = json_loads(features, 0, NULL);
    return dumps(j);
}
