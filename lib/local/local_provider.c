/* local_provider.c: the local provider's control plane (provider.h): a
 * sandbox is a detached abx-shim (runtime/) with its state directory under
 * $ABX_HOME/sandboxes/<id>/ (state.c), reached over the shim's Unix socket.
 *
 * Owns: create (the request file, the token, starting the shim and waiting
 * until it serves), connect, info, list (the state directories), timeout
 * and kill through the shim's own endpoints (/abx/...), the shim's output
 * rings (read_output), and which templates this provider has; a
 * long-lived client's warm pool (warm_pool.c): standby sandboxes, marked
 * by a `standby` file in their directory (connect and list pass them by),
 * claimed by whoever removes that file. The data plane is envd's
 * (lib/sandbox_envd.c).
 */
#include "provider.h"
#include "tenant.h"
#include "b64.h"
#include "config.h"
#include "error_internal.h"
#include "sandbox_id.h"
#include "state.h"
#include "sysutil.h"
#include "parse.h"
#include "warm_pool.h"
#include "template_build.h"
#include "template_store.h"
#include "netpolicy.h"
#include "net_filter.h"
#include "uid_pool.h"
#include "volume_store.h"
#include "snapshot.h"
#include "event_log.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef ABX_LIBEXECDIR
#define ABX_LIBEXECDIR "/usr/local/libexec"
#endif
#define READY_TIMEOUT_MS 15000
#define KILL_WAIT_MS 5000

/* A local handle's own state (abx_sandbox.impl). */
typedef struct local_sandbox {
    char id[ABX_SANDBOX_ID_LEN + 1];
    char dir[700];
    int dirfd; /* O_PATH of dir once an endpoint named it (local_endpoint); else -1 */
} local_sandbox;

static local_sandbox *local_of(abx_sandbox *s)
{
    return s->impl;
}

/* A template sandbox's shell: bash when its tree has one (looked up inside
 * the tree, links resolved there), else sh; "" for the host view. */
static void shell_of(const char *dir, char *shell, size_t len)
{
    char path[760];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    const char *tree = json_string_value(json_object_get(cfg, "template_root"));
    int rootfd = tree ? open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    json_decref(cfg);
    shell[0] = '\0';
    if (rootfd < 0)
        return;
    struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, rootfd, "bin/bash", &how, sizeof how);
    snprintf(shell, len, "%s", fd >= 0 ? "/bin/bash" : "/bin/sh");
    if (fd >= 0)
        close(fd);
    close(rootfd);
}

static abx_sandbox *handle_new(const char *id, const char *dir, const char *token, const char *tenant)
{
    char qualified[96];
    snprintf(qualified, sizeof qualified, "local:%s", id);
    abx_sandbox *s = abx__sandbox_new(&abx__provider_local, qualified);
    local_sandbox *l = s ? calloc(1, sizeof *l) : NULL;
    if (!l) {
        free(s);
        return NULL;
    }
    snprintf(l->id, sizeof l->id, "%s", id);
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    l->dirfd = -1;
    s->impl = l;
    char sock[760];
    snprintf(sock, sizeof sock, "%s/envd.sock", dir);
    abx__envd_init(&s->envd, "http://localhost", sock, token);
    s->data = &abx__data_shim; /* envd, and the shim's own rings for background output */
    shell_of(dir, s->shell, sizeof s->shell);
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant ? tenant : "");
    return s;
}

/* ---- whose a sandbox is: the `tenant` file of its state directory --------------------- */

/* The tenant recorded in dir ("" when none or unreadable: nobody's but
 * the administrator's). */
static void tenant_read(const char *dir, char out[ABX_TENANT_MAX + 1])
{
    char path[760], text[ABX_TENANT_MAX + 2] = "";
    snprintf(path, sizeof path, "%s/tenant", dir);
    out[0] = '\0';
    if (abx__read_small_file(path, text, sizeof text) >= 0 &&
        abx_tenant_valid(text)) /* at most ABX_TENANT_MAX */
        memcpy(out, text, strlen(text) + 1);
}

/* Writes path (0600, replacing it) through a temporary name. */
static int replace_private(const char *dir, const char *name, const char *text)
{
    char tmp[760], path[760];
    snprintf(tmp, sizeof tmp, "%s/.%s.new", dir, name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(tmp);
    int rc = abx__create_file(tmp, text, 0600);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* Records whose the sandbox in dir is and the front end's notes (before
 * anyone can reach it: its create, or its claim from a warm pool). */
static int owner_write(const char *dir, const char *tenant, const char *notes, abx_error **err)
{
    if (tenant && *tenant && replace_private(dir, "tenant", tenant) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "recording the sandbox's tenant");
    if (notes && *notes && replace_private(dir, "notes.json", notes) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "recording the sandbox's notes");
    return 0;
}

static void local_free_impl(void *impl)
{
    local_sandbox *l = impl;
    if (l && l->dirfd >= 0)
        close(l->dirfd);
    free(impl);
}

/* ---- the client's state: when it last reconciled ------------------------------------ */

#define RECONCILE_EVERY_NS 1000000000ull

typedef struct local_client {
    atomic_ullong reconciled_ns; /* abx__now_ns() of the last reconcile; 0: never */
    abx_warm_pool *pool;         /* keep_warm's; NULL: none */
} local_client;

static int local_attach(abx_client *c, abx_error **err)
{
    local_client *lc = calloc(1, sizeof *lc);
    if (!lc)
        return abx__error_set(err, ABX_ENOMEM, "client");
    atomic_init(&lc->reconciled_ns, 0);
    c->state = lc;
    return 0;
}

static void local_free_state(void *state)
{
    local_client *lc = state;
    if (lc)
        abx__warm_pool_free(lc->pool);
    free(state);
}

/* Reaps dead sandboxes, at most once a second per client: a long-lived
 * client (abx serve, an MCP server) creating many sandboxes would scan
 * them all at every create. Lists check each shim anyway. */
static void reconcile_now_and_then(abx_client *c)
{
    local_client *lc = c->state;
    unsigned long long now = abx__now_ns(), last = lc ? atomic_load(&lc->reconciled_ns) : 0;
    if (lc && last && now - last < RECONCILE_EVERY_NS)
        return;
    if (lc && !atomic_compare_exchange_strong(&lc->reconciled_ns, &last, now))
        return; /* another thread does it */
    abx__state_reconcile();
    abx__local_forks_reap();
}

/* Every way an id fails here (malformed, unknown, ended, a standby,
 * another tenant's) is the same E8002, after the same few file probes. */
static int local_connect(abx_client *c, const char *plain, abx_sandbox **out, abx_error **err)
{
    char dir[700], path[760], token[128], tenant[ABX_TENANT_MAX + 1];
    if (!abx__sandbox_id_valid(plain) || abx__state_dir(plain, dir, sizeof dir, NULL) < 0)
        return abx__tenant_not_found(err);
    tenant_read(dir, tenant);
    snprintf(path, sizeof path, "%s/standby", dir);
    bool standby = access(path, F_OK) == 0; /* a warm pool's, nobody's yet */
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (standby || !abx__tenant_may_see(c, tenant) || access(path, F_OK) < 0 ||
        (!abx__state_shim_alive(dir) && !abx__state_durable(dir))) { /* a durable one at rest is there */
        reconcile_now_and_then(c);
        return abx__tenant_not_found(err);
    }
    snprintf(path, sizeof path, "%s/token", dir);
    if (abx__read_small_file(path, token, sizeof token) < 0)
        return abx__error_set(err, ABX_EPERM, "cannot read the sandbox's access token");
    *out = handle_new(plain, dir, token, tenant);
    explicit_bzero(token, sizeof token);
    if (*out && !abx__state_shim_alive(dir)) /* durable, at rest: said so, not "does not answer" */
        snprintf((*out)->envd.down_reason, sizeof(*out)->envd.down_reason,
                 "sandbox local:%s is paused at rest (its files kept, its processes ended): resume it "
                 "first ('abx resume local:%s')",
                 plain, plain);
    return *out ? 0 : abx__error_set(err, ABX_ENOMEM, "sandbox handle");
}

/* ---- create ------------------------------------------------------------- */

static int find_shim(char *out, size_t len)
{
    const char *env = getenv("ABX_SHIM");
    if (env && *env && access(env, X_OK) == 0) {
        snprintf(out, len, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        snprintf(out, len, "%s/abx-shim", dirname(self));
        if (access(out, X_OK) == 0)
            return 0;
    }
    Dl_info lib; /* beside libabx itself: a program of another language using it (the Python SDK) */
    if (dladdr((void *)find_shim, &lib) && lib.dli_fname && strlen(lib.dli_fname) < sizeof self) {
        snprintf(self, sizeof self, "%s", lib.dli_fname);
        snprintf(out, len, "%s/abx-shim", dirname(self));
        if (access(out, X_OK) == 0)
            return 0;
    }
    snprintf(out, len, "%s/abx/abx-shim", ABX_LIBEXECDIR);
    return access(out, X_OK) == 0 ? 0 : -1;
}

static int write_private(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc = abx__write_all(fd, text, strlen(text));
    if (close(fd) < 0)
        rc = -1;
    return rc;
}

static int random_token(char out[65])
{
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    return 0;
}

/* Starts abx-shim with posix_spawn (a vfork underneath: the caller, often
 * a big threaded server, is not copied for it): in a session of its own,
 * no signal blocked or handled, fd 3 the ready pipe's end, 0 and 1
 * /dev/null, 2 the log, nothing else open, in /. The shim detaches itself:
 * its first act is to fork and let this child exit, which the caller reaps.
 * Returns 0 or an errno value; *child is the pid to reap. */
static int spawn_shim(const char *shim_path, char *const argv[], char *const envp[], const char *log_path,
                      int ready_w, pid_t *child)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return rc;
    if ((rc = posix_spawnattr_init(&attr)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    rc = posix_spawn_file_actions_adddup2(&fa, ready_w, 3); /* first: the pipe may be one of 0-2 */
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0);
    if (rc == 0)
        rc = posix_spawn_file_actions_adddup2(&fa, 0, 1);
    if (rc == 0)
        rc = posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW,
                                              0600);
    if (rc == 0)
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    if (rc == 0)
        rc = posix_spawn_file_actions_addchdir_np(&fa, "/");
    if (rc == 0)
        rc = posix_spawnattr_setflags(&attr,
                                      POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (rc == 0)
        rc = posix_spawnattr_setsigmask(&attr, &none);
    if (rc == 0)
        rc = posix_spawnattr_setsigdefault(&attr, &all);
    if (rc == 0)
        rc = posix_spawn(child, shim_path, &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Starts abx-shim detached (it forks itself away; a new session) with the
 * ready pipe on fd 3 and a minimal environment (background: at nice 19, for
 * a warm pool); waits for its first line. */
static int start_shim(const char *shim_path, const char *dir, bool background, abx_error **err)
{
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "pipe");
    char log_path[760];
    snprintf(log_path, sizeof log_path, "%s/shim.log", dir);
    /* the shim's whole environment: where its sandbox's state is (not in
     * its argv, which every host user can read in /proc), and the
     * settings of the runtime's host-wide pools (runtime/net.h, uid_pool.h) */
    char *const argv[] = {(char *)"abx-shim", NULL};
    static const char *const passed[] = {"ABX_CGROUP_PARENT", "ABX_NET_DNS", "ABX_NET_POOL",
                                         "ABX_UID_POOL_BASE", "ABX_UID_POOL_SLOTS"};
    enum { NPASSED = sizeof passed / sizeof passed[0] };
    char vars[NPASSED + 1][720];
    char *envp[NPASSED + 5] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LANG=C.UTF-8"};
    size_t ne = 2, nv = 0;
    snprintf(vars[nv], sizeof vars[nv], "ABX_SHIM_STATE_DIR=%s", dir);
    envp[ne++] = vars[nv++];
    for (size_t i = 0; i < NPASSED; i++) {
        const char *v = getenv(passed[i]);
        if (v && snprintf(vars[nv], sizeof vars[nv], "%s=%s", passed[i], v) < (int)sizeof vars[nv])
            envp[ne++] = vars[nv++];
    }
    if (background && geteuid() == 0) /* a standby sandbox starts at nice 19 (runtime/shim.c) */
        envp[ne++] = (char *)"ABX_SHIM_BACKGROUND=1";
    pid_t child = -1;
    int src = spawn_shim(shim_path, argv, envp, log_path, ready[1], &child);
    if (src != 0) {
        close(ready[0]);
        close(ready[1]);
        return abx__error_errno(err, src == EAGAIN ? ABX_ELIMIT : ABX_ESYS, src, "starting abx-shim");
    }
    close(ready[1]);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
    char line[700];
    size_t got = 0;
    uint64_t deadline = abx__now_ns() / 1000000 + READY_TIMEOUT_MS;
    while (got < sizeof line - 1) {
        int64_t left = (int64_t)(deadline - abx__now_ns() / 1000000);
        struct pollfd p = {.fd = ready[0], .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        ssize_t n = read(ready[0], line + got, sizeof line - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(line, '\n', got))
            break;
    }
    close(ready[0]);
    line[got] = '\0';
    if (strncmp(line, "ok\n", 3) == 0)
        return 0;
    int code = 0;
    char message[600] = "";
    if (sscanf(line, "E%d %599[^\n]", &code, message) >= 1 && code > 8000 && code < 9000)
        return abx__error_set(err, code, "%s", message);
    return abx__error_set(err, ABX_EJAIL, "the sandbox supervisor did not start");
}

int abx__shim_start_detached(const char *dir, abx_error **err)
{
    char shim_path[PATH_MAX];
    if (find_shim(shim_path, sizeof shim_path) < 0)
        return abx__error_set(err, ABX_ECONFIG, "abx-shim not found beside abx (set ABX_SHIM to its path)");
    return start_shim(shim_path, dir, false, err);
}

#define STANDBY_TIMEOUT_S 900 /* the pool replaces them after 600 */

/* What a create of these options starts: template, cpu and memory with defaults applied. */
static void shape_of(const abx_create_options *o, abx_warm_shape *shape)
{
    snprintf(shape->template_id, sizeof shape->template_id, "%s",
             o && o->template_id ? o->template_id : "base");
    shape->cpu_count = o && o->cpu_count ? o->cpu_count : ABX_DEFAULT_CPU_COUNT;
    shape->memory_mb = o && o->memory_mb ? o->memory_mb : ABX_DEFAULT_MEMORY_MB;
}

/* Starts a sandbox of that shape, or a standby one for a warm pool (owned by
 * this process, its envs and metadata given when it is claimed). */
static int start_sandbox(const abx_warm_shape *shape, unsigned timeout_s, bool pause_on_timeout, json_t *envs,
                         json_t *meta, json_t *network, json_t *volumes, const abx_create_options *durable,
                         const char *tenant, const char *notes, bool standby, abx_sandbox **out,
                         abx_error **err)
{
    char shim_path[PATH_MAX];
    if (find_shim(shim_path, sizeof shim_path) < 0)
        return abx__error_set(err, ABX_ECONFIG, "abx-shim not found beside abx (set ABX_SHIM to its path)");
    int rc = 0;
    char id[ABX_SANDBOX_ID_LEN + 1], root[560], dir[700], path[760], token[65], host_name[65];
    json_t *cfg = NULL;
    if (abx__sandbox_id_new(id) < 0 || random_token(token) < 0 || random_token(host_name) < 0) {
        rc = abx__error_set(err, ABX_ESYS, "no randomness for the sandbox id");
        goto out;
    }
    if ((rc = abx__state_root(root, sizeof root, true, err)) < 0)
        goto out;
    snprintf(dir, sizeof dir, "%s/%s", root, id);
    if (mkdir(dir, 0700) < 0) {
        rc = abx__error_errno(err, ABX_EIO, errno, "creating the sandbox state directory");
        goto out;
    }
    unsigned memory = shape->memory_mb;
    cfg = json_pack("{s:s, s:s, s:i, s:O, s:O, s:i, s:i, s:i, s:i, s:b, s:i}", "sandbox_id", id, "template",
                    shape->template_id, "timeout", (int)timeout_s, "envs", envs, "metadata", meta,
                    "cpu_count", (int)shape->cpu_count, "memory_mb", (int)memory, "disk_size_mb",
                    (int)(memory / 2 > 16 ? memory / 2 : 16), "pids", (int)ABX_DEFAULT_PIDS, "standby",
                    standby, "owner_pid", (int)getpid());
    host_name[0] = 's'; /* its cgroups' name: random, unrelated to the id (runtime/jail.h) */
    host_name[21] = '\0';
    if (cfg)
        json_object_set_new(cfg, "host_name", json_string(host_name));
    if (cfg && pause_on_timeout)
        json_object_set_new(cfg, "pause_on_timeout", json_true());
    if (cfg && network)
        json_object_set(cfg, "network", network);
    if (cfg && volumes)
        json_object_set(cfg, "volumes", volumes);
    if (cfg && durable && durable->persistent) {
        json_object_set_new(cfg, "persistent", json_true());
        json_object_set_new(cfg, "pause_keeps_memory", json_boolean(!durable->pause_drops_memory));
    }
    char tree[PATH_MAX];
    if (cfg && strcmp(shape->template_id, "base") != 0 &&
        abx__template_root(shape->template_id, tree, sizeof tree) == 0) {
        json_object_set_new(cfg, "template_root", json_string(tree));
        json_t *tc = abx__template_config(shape->template_id);
        if (tc)
            json_object_set_new(cfg, "template_config", tc);
    }
    char *text = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    snprintf(path, sizeof path, "%s/config.json", dir);
    int wrc = text ? write_private(path, text) : -1;
    free(text);
    snprintf(path, sizeof path, "%s/token", dir);
    if (wrc == 0)
        wrc = write_private(path, token);
    snprintf(path, sizeof path, "%s/standby", dir);
    if (wrc == 0 && standby)
        wrc = write_private(path, "");
    snprintf(path, sizeof path, "%s/durable", dir);
    if (wrc == 0 && durable && durable->persistent)
        wrc = write_private(path, "");
    if (wrc < 0) {
        rc = abx__error_errno(err, ABX_EIO, errno, "writing the sandbox request");
        abx__state_reap(id);
        goto out;
    }
    if ((rc = owner_write(dir, tenant, notes, err)) < 0) {
        abx__state_reap(id);
        goto out;
    }
    if ((rc = start_shim(shim_path, dir, standby, err)) < 0) {
        rc = abx__error_wrap(err, rc, "starting sandbox %s", id);
        abx__state_reap(id);
        goto out;
    }
    *out = handle_new(id, dir, token, tenant);
    if (!*out)
        rc = abx__error_set(err, ABX_ENOMEM, "sandbox handle");
out:
    explicit_bzero(token, sizeof token);
    json_decref(cfg);
    return rc;
}

/* ---- the warm pool's two ends ---------------------------------------------- */

static void kill_standby(abx_sandbox *s);

static int make_standby(const abx_warm_shape *shape, abx_sandbox **out)
{
    char tree[PATH_MAX];
    bool stored = abx__template_root(shape->template_id, tree, sizeof tree) == 0;
    json_t *none = json_object();
    int rc = none ? start_sandbox(shape, STANDBY_TIMEOUT_S, false, none, none, NULL, NULL, NULL, NULL, NULL,
                                  true, out, NULL)
                  : -ABX_ENOMEM;
    json_decref(none);
    if (rc == 0 && stored && abx__template_root(shape->template_id, tree, sizeof tree) < 0) {
        kill_standby(*out); /* its template was removed while it started (abx__template_remove) */
        *out = NULL;
        return -ABX_EINVAL;
    }
    if (rc == 0) {
        /* a sandbox's first process costs about a millisecond more than the
         * next ones: spent here, in the background, not by its first user */
        const char *const argv[] = {"/bin/true", NULL};
        abx_exec_result r;
        if (abx_sandbox_exec_argv(*out, argv, NULL, &r, NULL) == 0)
            abx_exec_result_clear(&r);
    }
    return rc;
}

static int local_kill(abx_sandbox *s, abx_error **err);

static void kill_standby(abx_sandbox *s)
{
    local_kill(s, NULL);
    abx_sandbox_free(s);
}

static int local_keep_warm(abx_client *c, unsigned count, abx_error **err)
{
    local_client *lc = c->state;
    if (count > ABX_WARM_POOL_MAX)
        return abx__error_set(err, ABX_EINVAL, "warm pool: at most %d sandboxes", ABX_WARM_POOL_MAX);
    abx__warm_pool_free(lc->pool);
    lc->pool = NULL;
    abx_warm_shape defaults;
    shape_of(NULL, &defaults);
    if (count && !(lc->pool = abx__warm_pool_new(count, &defaults, make_standby, kill_standby)))
        return abx__error_set(err, ABX_ESYS, "warm pool: no thread");
    return 0;
}

/* A standby sandbox of this create's shape, claimed for it; NULL when the
 * pool has none (or the one it had could not be claimed: ended, say).
 * Claiming records its tenant and notes first, then makes it a
 * sandbox (no standby marker: connect and list see it), then has its shim
 * kill whatever ran in it and take a new token, which nobody held before. */
static abx_sandbox *claim_warm(local_client *lc, const abx_warm_shape *shape, unsigned timeout_s,
                               bool pause_on_timeout, json_t *envs, json_t *meta, const char *tenant,
                               const char *notes)
{
    abx_sandbox *s = lc && lc->pool ? abx__warm_pool_take(lc->pool, shape) : NULL;
    if (!s)
        return NULL;
    const char *dir = local_of(s)->dir;
    char marker[760], token[65];
    snprintf(marker, sizeof marker, "%s/standby", dir);
    json_t *body = NULL, *resp = NULL;
    int rc = random_token(token) == 0 && owner_write(dir, tenant, notes, NULL) == 0 &&
                     replace_private(dir, "token", token) == 0 && unlink(marker) == 0
                 ? 0
                 : -1;
    if (rc == 0 &&
        !(body = json_pack("{s:i, s:b, s:O, s:O, s:s}", "timeout", (int)timeout_s, "pause_on_timeout",
                           pause_on_timeout, "envs", envs, "metadata", meta, "token", token)))
        rc = -1;
    if (rc == 0)
        rc = abx__envd_json(&s->envd, "POST", "/abx/claim", body, &resp, NULL);
    json_decref(body);
    json_decref(resp);
    if (rc == 0) {
        snprintf(s->envd.token, sizeof s->envd.token, "%s", token);
        snprintf(s->tenant, sizeof s->tenant, "%s", tenant ? tenant : "");
    }
    explicit_bzero(token, sizeof token);
    if (rc < 0) {
        kill_standby(s);
        return NULL;
    }
    return s;
}

/* E8001 naming the templates there are. */
static int unknown_template(const abx_client *c, const char *name, abx_error **err)
{
    json_t *all = NULL;
    char names[600] = "";
    size_t i;
    json_t *t;
    abx__template_list_for(c->tenant, &all, NULL); /* what this tenant may see, no one else's */
    json_array_foreach(all, i, t)
    {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                 json_string_value(json_object_get(t, "name")));
    }
    json_decref(all);
    return abx__error_set(err, ABX_EINVAL, "template %.64s: unknown (there are: %s; 'abx template list')",
                          name, names);
}

static int local_create(abx_client *c, const abx_create_options *o, abx_sandbox **out, abx_error **err)
{
    int rc = 0;
    char tree[PATH_MAX], stored[160];
    abx_create_options resolved;
    if (o && o->template_id) { /* a host user's own template of that name first, else the shared one */
        abx__template_resolve(c->tenant, o->template_id, stored, sizeof stored);
        resolved = *o;
        resolved.template_id = stored;
        o = &resolved;
    }
    if (o && o->template_id && !abx__template_builtin(o->template_id) &&
        abx__template_root(o->template_id, tree, sizeof tree) < 0)
        return unknown_template(c, abx__template_shown(o->template_id), err);
    if (o && o->template_id && (rc = abx__template_ensure_builtin(o->template_id, err)) < 0)
        return rc;
    if (o && o->options && o->options[0])
        return abx__error_set(err, ABX_EINVAL, "--opt: the local provider takes no provider options");
    json_t *envs = json_object(), *meta = json_object();
    if ((rc = abx__pairs_to_object(o ? o->envs : NULL, envs, "envs", true, err)) < 0 ||
        (rc = abx__pairs_to_object(o ? o->metadata : NULL, meta, "metadata", false, err)) < 0) {
        json_decref(envs);
        json_decref(meta);
        return rc;
    }
    json_t *network = NULL, *volumes = NULL;
    char default_mode[32], pool[32];
    if ((rc = abx__volume_mounts(c->tenant, o ? o->volumes : NULL, &volumes, err)) < 0 ||
        (rc = abx__config_network_default(default_mode, sizeof default_mode, err)) < 0 ||
        (rc = abx__net_policy_build(o ? o->network : NULL, o ? o->allow_out : NULL, o ? o->deny_out : NULL,
                                    default_mode, &network, err)) < 0 ||
        (rc = abx__config_net_walls(network, abx__netf_pool_cidr(pool), err)) < 0) {
        json_decref(network);
        json_decref(volumes);
        json_decref(envs);
        json_decref(meta);
        return rc;
    }
    abx_warm_shape shape;
    shape_of(o, &shape);
    unsigned timeout_s = o && o->timeout_s ? o->timeout_s : ABX_DEFAULT_TIMEOUT_S;
    abx__state_reconcile_due(); /* not a scan of every sandbox per create */
    bool networked = strcmp(abx__net_policy_mode(network), "none") != 0; /* standby sandboxes have none */
    const char *notes = o ? o->notes_json : NULL;
    bool pause = o && o->pause_on_timeout;
    /* standby sandboxes have no network, no volumes and no durable layer */
    bool durable = o && o->persistent;
    if (durable && geteuid() != 0)
        rc = abx__error_set(err, ABX_EPERM,
                            "--persistent: durable sandboxes need abx to run as root, or the "
                            "machine's abx service");
    /* nor is a fork's template worth keeping sandboxes of: each is used once */
    bool fork = strncmp(abx__template_shown(shape.template_id), "fork-", 5) == 0;
    *out = rc < 0 || networked || volumes || durable || fork
               ? NULL
               : claim_warm(c->state, &shape, timeout_s, pause, envs, meta, c->tenant, notes);
    if (!*out && rc == 0)
        rc = start_sandbox(&shape, timeout_s, pause || durable, envs, meta, network, volumes, o, c->tenant,
                           notes, false, out, err);
    json_decref(network);
    json_decref(volumes);
    json_decref(envs);
    json_decref(meta);
    json_t *config =
        rc == 0 && strcmp(shape.template_id, "base") != 0 ? abx__template_config(shape.template_id) : NULL;
    if (config && (rc = abx__template_start(*out, config, err)) < 0) {
        abx_sandbox_kill(*out, NULL);
        abx_sandbox_free(*out);
        *out = NULL;
    }
    json_decref(config);
    return rc;
}

/* ---- info, list, timeout, kill ------------------------------------------ */

#define REST_WAIT_MS 3000 /* how long an info waits for a shim that is putting its sandbox at rest */

static void info_from_json(json_t *doc, abx_sandbox_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->sandbox_id, sizeof out->sandbox_id, "local:%s",
             json_string_value(json_object_get(doc, "sandbox_id")) ?: "");
    snprintf(out->template_id, sizeof out->template_id, "%s", /* a user's own by the name they gave it */
             abx__template_shown(json_string_value(json_object_get(doc, "template")) ?: ""));
    snprintf(out->status, sizeof out->status, "%s", json_string_value(json_object_get(doc, "status")) ?: "");
    out->started_at = abx__parse_rfc3339(json_string_value(json_object_get(doc, "started_at")));
    out->end_at = abx__parse_rfc3339(json_string_value(json_object_get(doc, "end_at")));
    out->cpu_count = (unsigned)json_integer_value(json_object_get(doc, "cpu_count"));
    out->memory_mb = (unsigned)json_integer_value(json_object_get(doc, "memory_mb"));
    out->disk_size_mb = (unsigned)json_integer_value(json_object_get(doc, "disk_size_mb"));
    json_t *m = json_object_get(doc, "metadata");
    json_t *e = json_object_get(doc, "env_names");
    out->metadata_json = m ? json_dumps(m, JSON_COMPACT) : strdup("{}");
    out->env_names_json = e ? json_dumps(e, JSON_COMPACT) : strdup("[]");
    json_t *net = json_object_get(doc, "network");
    out->network_json = json_is_object(net) ? json_dumps(net, JSON_COMPACT) : NULL;
    json_t *vols = json_object_get(doc, "volumes");
    out->volumes_json = json_is_array(vols) ? json_dumps(vols, JSON_COMPACT) : NULL;
    json_t *durable = json_object_get(doc, "durable");
    out->persistent = json_is_object(durable);
    out->boots = (unsigned)json_integer_value(json_object_get(durable, "boots"));
    snprintf(out->resumed_from, sizeof out->resumed_from, "%s",
             json_string_value(json_object_get(durable, "resumed_from")) ?: "");
}

/* A durable sandbox at rest (its shim gone, its files kept): true, and its
 * last info (status paused) in *doc when doc is not NULL. */
static bool at_rest(const char *dir, json_t **doc)
{
    if (!abx__state_durable(dir) || abx__state_shim_alive(dir))
        return false;
    if (doc) {
        char path[760];
        snprintf(path, sizeof path, "%s/meta.json", dir);
        *doc = json_load_file(path, 0, NULL);
        if (!json_is_object(*doc)) {
            json_decref(*doc);
            *doc = NULL;
            return false;
        }
        json_object_set_new(*doc, "status", json_string("paused"));
    }
    return true;
}

/* A durable sandbox whose shim is putting it at rest (a files-only pause
 * just answered): true once the shim is gone and its last info is in *doc. */
static bool came_to_rest(const char *dir, json_t **doc)
{
    for (int waited = 0; waited < REST_WAIT_MS && abx__state_durable(dir); waited += 10) {
        if (at_rest(dir, doc))
            return true;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static int local_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err)
{
    json_t *doc = NULL;
    const char *dir = local_of(s)->dir;
    abx_error *e = NULL;
    int rc = at_rest(dir, &doc) ? 0 : abx__envd_json(&s->envd, "GET", "/abx/info", NULL, &doc, &e);
    if (rc == -ABX_ENOTRUNNING && came_to_rest(dir, &doc))
        rc = 0;
    if (rc < 0 && err)
        *err = e;
    else
        abx_error_free(e);
    if (rc < 0)
        return rc == -ABX_ENOTRUNNING ? abx__error_set(err, ABX_ENOTFOUND, "no such sandbox (it has ended)")
                                      : rc;
    info_from_json(doc, out);
    json_decref(doc);
    return 0;
}

/* Every live sandbox (status_filter applied) with its tenant; sandbox.c
 * filters, sorts and pages. */
static int local_list(abx_client *c, const char *status_filter, abx__listed **items, size_t *count,
                      abx_error **err)
{
    *items = NULL;
    *count = 0;
    reconcile_now_and_then(c);
    char root[560];
    if (abx__state_root(root, sizeof root, false, err) < 0)
        return 0;
    DIR *d = opendir(root);
    if (!d)
        return 0;
    size_t cap = 16, n = 0;
    abx__listed *all = calloc(cap, sizeof *all);
    struct dirent *e;
    while (all && (e = readdir(d))) {
        if (!abx__sandbox_id_valid(e->d_name))
            continue;
        char dir[900], meta[960];
        snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
        snprintf(meta, sizeof meta, "%s/standby", dir);
        if (access(meta, F_OK) == 0) /* a warm pool's */
            continue;
        snprintf(meta, sizeof meta, "%s/meta.json", dir);
        json_t *doc = NULL;
        if (!at_rest(dir, &doc))
            doc = abx__state_shim_alive(dir) ? json_load_file(meta, 0, NULL) : NULL;
        if (!doc)
            continue;
        if (n == cap) {
            abx__listed *grown = realloc(all, 2 * cap * sizeof *all);
            if (!grown) {
                json_decref(doc);
                break;
            }
            all = grown;
            cap *= 2;
        }
        info_from_json(doc, &all[n].info);
        tenant_read(dir, all[n].tenant);
        json_decref(doc);
        if (status_filter && strcmp(all[n].info.status, status_filter) != 0)
            abx_sandbox_info_clear(&all[n].info);
        else
            n++;
    }
    closedir(d);
    if (!all)
        return abx__error_set(err, ABX_ENOMEM, "list");
    *items = all;
    *count = n;
    return 0;
}

static int local_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err)
{
    json_t *body = json_pack("{s:i}", "timeout", (int)seconds), *resp = NULL;
    int rc = abx__envd_json(&s->envd, "POST", "/abx/timeout", body, &resp, err);
    json_decref(body);
    json_decref(resp);
    if (rc == -ABX_ENOTRUNNING)
        return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox (it has ended)");
    return rc;
}

static int local_metrics(abx_sandbox *s, abx_sandbox_metrics *out, abx_error **err)
{
    json_t *doc = NULL;
    int rc = abx__envd_json(&s->envd, "GET", "/abx/metrics", NULL, &doc, err);
    if (rc < 0)
        return rc;
    out->cpu_count = (unsigned)json_integer_value(json_object_get(doc, "cpu_count"));
    out->cpu_used_pct = json_number_value(json_object_get(doc, "cpu_used_pct"));
    out->mem_used = (unsigned long long)json_integer_value(json_object_get(doc, "mem_used"));
    out->mem_total = (unsigned long long)json_integer_value(json_object_get(doc, "mem_total"));
    out->disk_used = (unsigned long long)json_integer_value(json_object_get(doc, "disk_used"));
    out->disk_total = (unsigned long long)json_integer_value(json_object_get(doc, "disk_total"));
    json_decref(doc);
    return 0;
}

/* The shim's /abx/history, [{t, cpu_us, mem_bytes}], as the API's [{t, cpu_usec, memory_bytes}]. */
static int local_history(abx_sandbox *s, json_t **out, abx_error **err)
{
    json_t *doc = NULL, *h;
    int rc = abx__envd_json(&s->envd, "GET", "/abx/history", NULL, &doc, err);
    *out = rc == 0 ? json_array() : NULL;
    size_t i;
    json_array_foreach(*out ? doc : NULL, i, h)
    {
        json_t *t = json_object_get(h, "t"), *cpu = json_object_get(h, "cpu_us"),
               *mem = json_object_get(h, "mem_bytes");
        if (json_is_integer(t) && json_is_integer(cpu) && json_is_integer(mem))
            json_array_append_new(*out,
                                  json_pack("{s:O, s:O, s:O}", "t", t, "cpu_usec", cpu, "memory_bytes", mem));
    }
    json_decref(doc);
    return rc;
}

/* The shim's /abx/stats answer: the shape abx__stats_from_json reads. */
static int local_stats(abx_sandbox *s, abx_sandbox_stats *out, abx_error **err)
{
    json_t *doc = NULL;
    int rc = abx__envd_json(&s->envd, "GET", "/abx/stats", NULL, &doc, err);
    if (rc == 0)
        abx__stats_from_json(doc, out);
    json_decref(doc);
    return rc;
}

static int local_pool_usage(abx_client *c, abx_host_pools *out, abx_error **err)
{
    (void)err;
    out->uid_ranges_total = abx__uid_pool_slots();
    out->uid_ranges_used = abx__uid_pool_used();
    out->net_slots_total = abx__netf_pool_slots();
    out->net_slots_used = abx__netf_pool_used();
    local_client *lc = c->root ? c->root->state : c->state;
    if (lc && lc->pool)
        abx__warm_pool_counts(lc->pool, &out->warm_ready, &out->warm_target);
    return 0;
}

/* A TCP connection to port on the sandbox's own loopback: a thread joins
 * its network namespace (setns needs CAP_SYS_ADMIN over it: root), makes
 * the socket there, and ends; the socket stays in that namespace. */
typedef struct port_dial {
    int netns;
    unsigned port; /* 0: the socket only, not connected */
    int fd, err;
} port_dial;

static void *dial_main(void *arg)
{
    port_dial *d = arg;
    d->fd = -1;
    if (setns(d->netns, CLONE_NEWNET) < 0) {
        d->err = errno;
        return NULL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)d->port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || (d->port && connect(fd, (struct sockaddr *)&to, sizeof to) < 0)) {
        d->err = errno;
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    d->fd = fd;
    return NULL;
}

static int local_connect_port(abx_sandbox *s, unsigned port, int *fd, abx_error **err);

static int local_socket(abx_sandbox *s, int *fd, abx_error **err)
{
    return local_connect_port(s, 0, fd, err);
}

/* port 0: the socket only (local_socket). */
static int local_connect_port(abx_sandbox *s, unsigned port, int *fd, abx_error **err)
{
    *fd = -1;
    port_dial d = {.netns = abx__state_netns(local_of(s)->dir), .port = port, .fd = -1};
    if (d.netns < 0)
        return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox (it has ended)");
    pthread_t t;
    int rc = pthread_create(&t, NULL, dial_main, &d) == 0 ? 0 : abx__error_set(err, ABX_ESYS, "thread");
    if (rc == 0)
        pthread_join(t, NULL);
    close(d.netns);
    if (rc == 0 && d.fd < 0)
        rc = d.err == EPERM
                 ? abx__error_set(err, ABX_EPERM, "reaching a sandbox's ports needs root (CAP_SYS_ADMIN)")
                 : abx__error_errno(err, ABX_ENOTRUNNING, d.err,
                                    "nothing answers on that port in the sandbox");
    *fd = d.fd;
    return rc;
}

static int local_set_network(abx_sandbox *s, json_t *policy, abx_error **err)
{
    json_t *resp = NULL;
    char pool[32];
    int rc = abx__config_net_walls(policy, abx__netf_pool_cidr(pool), err);
    if (rc < 0)
        return rc;
    rc = abx__envd_json(&s->envd, "POST", "/abx/network", policy, &resp, err);
    json_decref(resp);
    return rc == -ABX_ENOTRUNNING ? abx__error_set(err, ABX_ENOTFOUND, "no such sandbox (it has ended)") : rc;
}

/* Freezes or thaws the sandbox's cgroup (the shim's /abx/pause, /abx/resume). */
/* Starts a durable sandbox at rest again from its files: a new shim on its
 * state directory (lifetime timeout_s, or the last one), then the
 * template's start command. */
static int wake(abx_sandbox *s, unsigned timeout_s, abx_error **err)
{
    local_sandbox *l = local_of(s);
    char path[760], shim_path[PATH_MAX];
    if (find_shim(shim_path, sizeof shim_path) < 0)
        return abx__error_set(err, ABX_ECONFIG, "abx-shim not found beside abx (set ABX_SHIM to its path)");
    abx__state_rest(l->id); /* what its last shim left in the kernel: cgroups, network */
    snprintf(path, sizeof path, "%s/config.json", l->dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    if (!cfg)
        return abx__error_set(err, ABX_EIO, "the durable sandbox's request is unreadable");
    if (timeout_s)
        json_object_set_new(cfg, "timeout", json_integer(timeout_s));
    char *text = json_dumps(cfg, JSON_COMPACT);
    const char *tmpl = json_string_value(json_object_get(cfg, "template"));
    json_t *config = tmpl && strcmp(tmpl, "base") != 0 ? abx__template_config(tmpl) : NULL;
    json_decref(cfg);
    int rc = text && replace_private(l->dir, "config.json", text) == 0
                 ? 0
                 : abx__error_set(err, ABX_EIO, "writing the durable sandbox's request");
    free(text);
    if (rc == 0 && (rc = start_shim(shim_path, l->dir, false, err)) < 0)
        rc = abx__error_wrap(err, rc, "starting durable sandbox %s from its files", l->id);
    if (rc == 0)
        s->envd.down_reason[0] = '\0'; /* its data plane is back */
    if (rc == 0 && config)
        rc = abx__template_start(s, config, err);
    json_decref(config);
    return rc;
}

static int local_pause(abx_sandbox *s, bool pause, unsigned timeout, abx_error **err)
{
    if (at_rest(local_of(s)->dir, NULL))
        return pause ? abx__error_set(err, ABX_EINVAL,
                                      "the sandbox is already paused (at rest, its files kept)")
                     : wake(s, timeout, err);
    json_t *body = timeout ? json_pack("{s:i}", "timeout", (int)timeout) : json_object(), *resp = NULL;
    int rc = abx__envd_json(&s->envd, "POST", pause ? "/abx/pause" : "/abx/resume", body, &resp, err);
    json_decref(body);
    json_decref(resp);
    return rc;
}

static int local_kill(abx_sandbox *s, abx_error **err)
{
    local_sandbox *l = local_of(s);
    if (at_rest(l->dir, NULL)) {
        abx__state_reap(l->id);
        return 0;
    }
    json_t *resp = NULL, *body = json_object();
    int rc = abx__envd_json(&s->envd, "POST", "/abx/kill", body, &resp, NULL);
    json_decref(body);
    json_decref(resp);
    (void)rc;
    /* done when the shim has removed the state directory (or died) */
    uint64_t deadline = abx__now_ns() / 1000000 + KILL_WAIT_MS;
    while (access(l->dir, F_OK) == 0 && abx__state_shim_alive(l->dir) && abx__now_ns() / 1000000 < deadline) {
        struct timespec ts = {0, 200000}; /* teardown takes about a millisecond */
        nanosleep(&ts, NULL);
    }
    if (access(l->dir, F_OK) == 0) {
        if (abx__state_shim_alive(l->dir))
            return abx__error_set(err, ABX_ETIMEOUT, "the sandbox did not end in time");
        abx__state_reap(l->id);
    }
    return 0;
}

/* ---- what a front end relays: notes, endpoints, connections ------------------------------ */

static int local_notes(abx_sandbox *s, char **json, abx_error **err)
{
    char path[760], text[ABX_NOTES_MAX + 2];
    snprintf(path, sizeof path, "%s/notes.json", local_of(s)->dir);
    int n = abx__read_small_file(path, text, sizeof text);
    if (!(*json = strdup(n >= 0 ? text : "{}")))
        return abx__error_set(err, ABX_ENOMEM, "notes");
    return 0;
}

/* envd and the code interpreter: the shim's socket, named through a
 * descriptor of the state directory that the handle holds (the name says
 * nothing of where state lives, and fits a socket address whatever
 * ABX_HOME is); any other port: sockets made inside the sandbox's network
 * namespace (local_socket). */
static int local_endpoint(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err)
{
    local_sandbox *l = local_of(s);
    snprintf(out->token, sizeof out->token, "%s", s->envd.token);
    if (port != ABX_PORT_ENVD && port != ABX_PORT_CODE) {
        out->sandbox_socket = true;
        snprintf(out->url, sizeof out->url, "http://127.0.0.1:%u", port);
        return 0;
    }
    if (l->dirfd < 0 && (l->dirfd = open(l->dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return abx__tenant_not_found(err); /* it has ended */
    snprintf(out->unix_socket, sizeof out->unix_socket, "/proc/self/fd/%d/envd.sock", l->dirfd);
    snprintf(out->url, sizeof out->url, "http://localhost");
    return 0;
}

static void local_pools(abx_client *c, unsigned *uid_ranges, unsigned *net_addresses)
{
    (void)c;
    *uid_ranges = geteuid() == 0 ? abx__uid_pool_slots() : 0; /* without root: no ranges taken */
    *net_addresses = abx__netf_pool_slots();
}

static int local_template_exists(abx_client *c, const char *name, abx_error **err)
{
    char tree[PATH_MAX], stored[160];
    abx__template_resolve(c->tenant, name, stored, sizeof stored);
    if (abx__template_builtin(name) || abx__template_root(stored, tree, sizeof tree) == 0)
        return 0;
    return abx__error_set(err, ABX_ENOTFOUND, "template '%.64s' not found", name);
}

static int local_template_list(abx_client *c, json_t **json, abx_error **err)
{
    return abx__template_list_for(c->tenant, json, err);
}

static int local_volume(abx_client *c, const char *verb, const char *name, unsigned size_mb, json_t **out,
                        abx_error **err)
{
    *out = NULL;
    if (strcmp(verb, "create") == 0)
        return abx__volume_create(c->tenant, name, size_mb, out, err);
    if (strcmp(verb, "list") == 0)
        return abx__volume_list(c->tenant, out, err);
    if (strcmp(verb, "inspect") == 0)
        return abx__volume_inspect(c->tenant, name, out, err);
    return abx__volume_remove(c->tenant, name, err);
}

static int local_snapshot(abx_sandbox *s, const char *name, bool fork, json_t **info, abx_error **err)
{
    local_sandbox *l = local_of(s);
    return abx__local_snapshot(s, l->dir, l->id, s->tenant, name, fork, info, err);
}

static int local_snapshots(abx_client *c, const char *verb, const char *name, const char *sandbox_id,
                           json_t **out, abx_error **err)
{
    *out = NULL;
    if (strcmp(verb, "list") == 0)
        return abx__local_snapshot_list(c->tenant, sandbox_id, out, err);
    return abx__local_snapshot_remove(c->tenant, name, err);
}

static int local_features(abx_client *c, json_t **json, abx_error **err)
{
    (void)c;
    (void)err;
    *json = json_pack("[s, s, s, s, s, s, s]", "sandbox.lifecycle", "sandbox.timeout", "sandbox.pause",
                      "exec.run", "exec.stream", "process.manage", "files.rw");
    return 0;
}

/* ---- the host's event log: $ABX_HOME/events (runtime/event_log.c) ---------------------- */

/* ABX_HOME when it exists and is ours (abx__home_check); false otherwise. */
static bool event_home(char *home, size_t len)
{
    struct stat st;
    return abx__home(home, len) == 0 && stat(home, &st) == 0 && abx__home_check(home, NULL) == 0;
}

static void local_event_append(json_t *event)
{
    char home[512];
    if (event_home(home, sizeof home))
        abx__event_log_append(home, event);
    else
        json_decref(event);
}

static int local_events_read(abx_client *c, unsigned long long after, abx__event_fn each, void *ud,
                             unsigned long long *last, abx_error **err)
{
    (void)c;
    (void)err;
    char home[512];
    *last = after;
    if (event_home(home, sizeof home))
        abx__event_log_read(home, after, each, ud, last); /* no log yet: no events */
    return 0;
}

const abx_provider abx__provider_local = {
    .features = local_features,
    .name = "local",
    .connect = local_connect,
    .create = local_create,
    .get_info = local_get_info,
    .list = local_list,
    .set_timeout = local_set_timeout,
    .kill = local_kill,
    .pause = local_pause,
    .connect_port = local_connect_port,
    .attach = local_attach,
    .free_state = local_free_state,
    .keep_warm = local_keep_warm,
    .set_network = local_set_network,
    .metrics = local_metrics,
    .stats = local_stats,
    .history = local_history,
    .pool_usage = local_pool_usage,
    .event_append = local_event_append,
    .events_read = local_events_read,
    .free_impl = local_free_impl,
    .notes = local_notes,
    .endpoint = local_endpoint,
    .socket = local_socket,
    .pools = local_pools,
    .template_exists = local_template_exists,
    .template_list = local_template_list,
    .volume = local_volume,
    .snapshot = local_snapshot,
    .snapshots = local_snapshots,
};
