/* template_build.c: `abx template build` (template_build.h).
 *
 * Owns: running a parsed Dockerfile (lib/dockerfile.c) step by step, the
 * build cache, and turning the last step's tree into a template
 * (lib/local/template_store.c installs it). How each step works:
 *   FROM    debian:SUITE[-slim] (mmdebstrap or debootstrap, from the host's
 *           Debian mirror or ABX_DEBIAN_MIRROR), scratch, a template, or a
 *           rootfs archive in the context;
 *   RUN     a sandbox (runtime/jail.c) whose root is the tree itself,
 *           written through an id-mapped mount: root inside is not host
 *           root, and the tree keeps its own ids; a network namespace of
 *           its own with outbound NAT (runtime/net.c, as --network
 *           internet: the host, its LAN and the other sandboxes refused),
 *           as `docker build`'s bridge; the host's network only when the
 *           build asks for it (host_network, root's explicit choice);
 *   COPY/ADD lib/local/template_copy.c: from the context into the tree, by a
 *           child chroot()ed into it; ADD unpacks a local archive first
 *           (libarchive, the import rules);
 *   the rest change the template's config only.
 * A step that changes files works on a copy of the previous tree (work/),
 * which then moves into the cache; the template is a hard-linked copy of
 * the last tree (trees never change once cached).
 */
#include "template_build.h"
#include "parse.h"
#include "archive_extract.h"
#include "config.h"
#include "digest.h"
#include "dockerfile.h"
#include "error_internal.h"
#include "jail.h"
#include "net.h"
#include "netpolicy.h"
#include "sandbox_env.h"
#include "sandbox_id.h"
#include "sysutil.h"
#include "template_copy.h"
#include "template_store.h"
#include "utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define TAIL_MAX 3000 /* the output kept for a failing step's message */
#define COPY_MAX_DEPTH 256
#define COPY_MAX_ENTRIES 1000000u
#define BUILD_MEMORY_MB 4096
#define BUILD_PIDS 4096
#define CACHE_FORMAT "abx-build-v3" /* v2: trees without setuid bits; v3: RUN's HOME and ARGs as docker's */
/* As Debian's container images: apt keeps no downloaded packages (a RUN
 * apt-get install leaves only what it installed in the template). */
#define APT_CLEAN_HOOK                                                                                       \
    "--customize-hook=printf '%s\\n' 'DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb "            \
    "/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };' "                             \
    "'Binary::apt::APT::Keep-Downloaded-Packages \"false\";' > \"$1/etc/apt/apt.conf.d/docker-clean\""

static const char code_interpreter_recipe[] =
    "# code-interpreter-v1: run_code's kernels with rich results on any host\n"
    "FROM debian:bookworm-slim\n"
    "RUN apt-get install -y --no-install-recommends python3 python3-numpy python3-pandas python3-matplotlib "
    "\\\n"
    "    python3-pil python3-pip python3-venv nodejs npm node-typescript fonts-dejavu-core ca-certificates "
    "\\\n"
    "    procps curl && apt-get clean\n"
    "ENV MPLBACKEND=Agg PYTHONUNBUFFERED=1 PIP_BREAK_SYSTEM_PACKAGES=1 NPM_CONFIG_UPDATE_NOTIFIER=false \\\n"
    "    NPM_CONFIG_FUND=false\n";

/* The digest of a built-in recipe's text, as template.json keeps it. */
static int recipe_digest(const char *recipe, char out[ABX_DIGEST_HEX])
{
    abx_digest *d = abx__digest_new();
    if (!d)
        return -1;
    abx__digest_add_str(d, recipe);
    return abx__digest_finish(d, out);
}

const char *abx__template_builtin_recipe(const char *name)
{
    return strcmp(name, ABX_TEMPLATE_CODE_INTERPRETER) == 0 ? code_interpreter_recipe : NULL;
}

#define MAX_STAGES 16 /* FROMs of one Dockerfile */

/* A finished stage of a multi-stage build: what FROM STAGE and COPY
 * --from=STAGE read (its tree is in the cache, immutable). */
typedef struct build_stage {
    char name[64]; /* FROM ... AS NAME; "" without */
    char tree[1024];
    char key[ABX_DIGEST_HEX]; /* its last step's */
    json_t *env, *config;     /* owned */
} build_stage;

typedef struct build {
    const template_build_request *o;
    abx_dockerfile df;
    char cache[512];
    char work[700];    /* cache/work-PID-XXXXXX: rootfs/ is the tree a step changes; "" until made */
    bool work_current; /* work/rootfs holds the current state, */
    bool work_linked;  /* its files hard links to the cached tree's (only COPY and ADD write there) */
    char tree[1024];   /* the current state's tree; "" while it is empty (scratch) */
    char key[ABX_DIGEST_HEX];
    json_t *env;         /* ENV, in order */
    json_t *args;        /* ARG values of this stage (Docker's scope: a stage sees its own) */
    json_t *global_args; /* ARGs before the first FROM: FROM lines see them, a stage's ARG NAME takes
                            its value from them */
    json_t *config;      /* workdir, uid, cmd, entrypoint, entrypoint_shell, healthcheck */
    size_t step;         /* 1-based, for messages */
    unsigned long long made_bytes;  /* the size of the tree this step put in the cache; 0: none */
    char (*chain)[ABX_DIGEST_HEX];  /* the keys of this build's steps so far: never evicted by it */
    int ctxfd;                      /* the context directory */
    abx_ignore *ignore;             /* its .dockerignore (NULL: none); owned */
    build_stage stages[MAX_STAGES]; /* the stages before the current one */
    size_t nstages;
    bool in_stage;       /* a FROM has begun the current stage */
    char stage_name[64]; /* the current stage's */
    char tail[TAIL_MAX + 1];
    size_t tail_len;
} build;

/* An earlier stage by name (case-insensitive, as Docker) or index. */
static const build_stage *find_stage(const build *b, const char *ref)
{
    unsigned index;
    for (size_t i = 0; i < b->nstages; i++)
        if (b->stages[i].name[0] && strcasecmp(b->stages[i].name, ref) == 0)
            return &b->stages[i];
    return abx__parse_uint(ref, 0, MAX_STAGES - 1, &index) == 0 && index < b->nstages ? &b->stages[index]
                                                                                      : NULL;
}

/* ---- events and output --------------------------------------------------- */

static void emit(build *b, json_t *ev)
{
    if (b->o->on_event && ev)
        b->o->on_event(ev, b->o->ud);
    json_decref(ev);
}

static void keep_tail(build *b, const char *data, size_t len)
{
    if (len >= TAIL_MAX) {
        memcpy(b->tail, data + len - TAIL_MAX, TAIL_MAX);
        b->tail_len = TAIL_MAX;
    } else {
        if (b->tail_len + len > TAIL_MAX) {
            size_t drop = b->tail_len + len - TAIL_MAX;
            memmove(b->tail, b->tail + drop, b->tail_len - drop);
            b->tail_len -= drop;
        }
        memcpy(b->tail + b->tail_len, data, len);
        b->tail_len += len;
    }
    b->tail[b->tail_len] = '\0';
}

static void output(build *b, const char *data, size_t len)
{
    keep_tail(b, data, len);
    size_t clean_len = 0; /* a command's bytes as JSON text: invalid UTF-8 becomes U+FFFD, not a lost event */
    char *clean = abx__utf8_clean(data, len, &clean_len);
    if (clean)
        emit(b, json_pack("{s:s, s:i, s:s%}", "event", "output", "step", (int)b->step, "data", clean,
                          clean_len));
    free(clean);
}

/* Forwards fd's bytes as output events until its end (or a signal that
 * asks us to stop: then -1). */
static int pump(build *b, int fd, int sigfd)
{
    char buf[8192];
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        if (poll(p, sigfd >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (sigfd >= 0 && (p[1].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGCHLD)
                return -1;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return 0;
            output(b, buf, (size_t)n);
        }
    }
}

/* The step's failure: ABX_EBUILD with where it was and what it printed last. */
__attribute__((format(printf, 3, 4))) static int step_fail(build *b, abx_error **err, const char *fmt, ...)
{
    char what[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const df_step *s = b->step && b->step <= b->df.n ? &b->df.steps[b->step - 1] : NULL;
    size_t tail_len = 0;
    char *tail = abx__utf8_clean(b->tail, b->tail_len, &tail_len); /* the message may become JSON */
    int rc = abx__error_set(err, ABX_EBUILD, "step %zu/%zu (line %u) %.200s%s: %s%s%s", b->step, b->df.n,
                            s ? s->line : 0, s ? s->text : "", s && strlen(s->text) > 200 ? "..." : "", what,
                            b->tail_len ? "\n--- its last output ---\n" : "", tail ? tail : "");
    free(tail);
    return rc;
}

/* ---- host commands (mmdebstrap, cp) ------------------------------------- */

/* Runs argv on the host with its output forwarded; 0 when it exits 0. */
static int host_command(build *b, const char *const *argv)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (rc != 0) {
        close(pipefd[0]);
        errno = rc;
        return -1;
    }
    pump(b, pipefd[0], -1);
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static bool on_path(const char *prog)
{
    const char *dirs[] = {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dirs[i], prog);
        if (access(path, X_OK) == 0)
            return true;
    }
    return false;
}

static void remove_tree(const char *path)
{
    abx__tree_remove(path);
}

/* Copies tree's contents into the directory dest: hard links when both are
 * on one filesystem and link (trees that never change), else a real copy. */
static int copy_tree(build *b, const char *tree, const char *dest, bool link)
{
    struct stat a, d;
    bool same = stat(tree, &a) == 0 && stat(dest, &d) == 0 && a.st_dev == d.st_dev;
    char src[1100];
    snprintf(src, sizeof src, "%s/.", tree);
    const char *argv[] = {"cp", link && same ? "-al" : "-a", src, dest, NULL};
    return host_command(b, argv);
}

/* ---- the cache ------------------------------------------------------------ */

static int cache_root(char *out, size_t len, abx_error **err)
{
    const char *env = getenv("ABX_BUILD_CACHE");
    char home[512];
    if (env && *env)
        snprintf(out, len, "%s", env);
    else if (geteuid() == 0)
        snprintf(out, len, "/var/cache/abx/build");
    else if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    else if (snprintf(out, len, "%s/build-cache", home) >= (int)len)
        return abx__error_set(err, ABX_ECONFIG, "ABX_HOME is too long");
    char sub[600];
    if (geteuid() == 0 && !(env && *env))
        abx__mkdir_exist_ok("/var/cache/abx", 0700);
    int rc = abx__mkdir_exist_ok(out, 0700);
    snprintf(sub, sizeof sub, "%s/steps", out);
    rc = rc == 0 ? abx__mkdir_exist_ok(sub, 0700) : rc;
    snprintf(sub, sizeof sub, "%s/trees", out);
    rc = rc == 0 ? abx__mkdir_exist_ok(sub, 0700) : rc;
    if (rc < 0)
        return abx__error_set(err, ABX_EIO, "the build cache %s: %s", out, strerror(errno));
    chmod(sub, 0711); /* sandboxes' ids pass through to a tree being built */
    chmod(out, 0711);
    return 0;
}

/* Work directories of builds whose process is gone. */
static void cache_reconcile(const char *cache)
{
    static const char *const top[] = {"work-", NULL}, *const trees[] = {".partial-", NULL};
    char path[700];
    abx__tree_reap_dead(cache, top);
    snprintf(path, sizeof path, "%s/trees", cache);
    abx__tree_reap_dead(path, trees);
}

static void state_save(build *b)
{
    char path[700], tmp[760];
    snprintf(path, sizeof path, "%s/steps/%s.json", b->cache, b->key);
    snprintf(tmp, sizeof tmp, "%s.%ld", path, (long)getpid());
    json_t *doc = json_pack("{s:s, s:O, s:O, s:O, s:I}", "tree", b->tree, "env", b->env, "args", b->args,
                            "config", b->config, "size", (json_int_t)b->made_bytes);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    unlink(tmp);
    if (text && abx__create_file(tmp, text, 0600) == 0 && rename(tmp, path) < 0)
        unlink(tmp);
    free(text);
    json_decref(doc);
}

/* The state after the step keyed b->key, when the cache has it (its tree too). */
static bool state_load(build *b)
{
    char path[700];
    snprintf(path, sizeof path, "%s/steps/%s.json", b->cache, b->key);
    json_t *doc = json_load_file(path, 0, NULL);
    const char *tree = json_string_value(json_object_get(doc, "tree"));
    json_t *env = json_object_get(doc, "env"), *args = json_object_get(doc, "args"),
           *cfg = json_object_get(doc, "config");
    struct stat st;
    bool ok = tree && json_is_object(env) && json_is_object(args) && json_is_object(cfg) &&
              strlen(tree) < sizeof b->tree && (!*tree || (stat(tree, &st) == 0 && S_ISDIR(st.st_mode)));
    if (ok) {
        utimensat(AT_FDCWD, path, NULL, 0); /* used now: the last to be evicted */
        snprintf(b->tree, sizeof b->tree, "%s", tree);
        json_decref(b->env);
        json_decref(b->args);
        json_decref(b->config);
        b->env = json_incref(env);
        b->args = json_incref(args);
        b->config = json_incref(cfg);
        b->work_current = false;
    }
    json_decref(doc);
    return ok;
}

static unsigned long long tree_bytes(const char *tree)
{
    unsigned long long bytes = 0;
    abx__tree_measure(tree, &bytes, NULL);
    return bytes;
}

typedef struct cached_tree {
    char key[ABX_DIGEST_HEX];
    time_t used;
    unsigned long long bytes;
} cached_tree;

static int by_use(const void *a, const void *b)
{
    time_t x = ((const cached_tree *)a)->used, y = ((const cached_tree *)b)->used;
    return x < y ? -1 : x > y;
}

/* Keeps the cache's trees under ABX_BUILD_CACHE_MAX_MB (default 10240):
 * the least recently used go first, never one of this build's steps. */
static void cache_trim(build *b)
{
    const char *env = getenv("ABX_BUILD_CACHE_MAX_MB");
    unsigned long long cap = (env && *env ? strtoull(env, NULL, 10) : 10240ull) << 20;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/steps", b->cache);
    DIR *d = opendir(dir);
    cached_tree *all = NULL;
    size_t n = 0, room = 0;
    unsigned long long total = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len != ABX_DIGEST_HEX - 1 + 5 || strcmp(e->d_name + ABX_DIGEST_HEX - 1, ".json") != 0)
            continue;
        char path[800];
        snprintf(path, sizeof path, "%s/%.70s", dir, e->d_name);
        struct stat st;
        json_t *doc = stat(path, &st) == 0 && st.st_size < (1 << 20) ? json_load_file(path, 0, NULL) : NULL;
        unsigned long long bytes = (unsigned long long)json_integer_value(json_object_get(doc, "size"));
        json_decref(doc);
        if (!bytes)
            continue;
        if (n == room) {
            room = room ? room * 2 : 64;
            cached_tree *grown = realloc(all, room * sizeof *grown);
            if (!grown)
                break;
            all = grown;
        }
        all[n] = (cached_tree){.used = st.st_mtime, .bytes = bytes};
        snprintf(all[n].key, sizeof all[n].key, "%.64s", e->d_name);
        total += bytes;
        n++;
    }
    if (d)
        closedir(d);
    if (total > cap && all)
        qsort(all, n, sizeof *all, by_use);
    for (size_t i = 0; total > cap && all && i < n; i++) {
        bool mine = false;
        for (size_t k = 0; k < b->step && !mine; k++)
            mine = strcmp(b->chain[k], all[i].key) == 0;
        if (mine)
            continue;
        char path[800];
        snprintf(path, sizeof path, "%s/trees/%s", b->cache, all[i].key);
        remove_tree(path);
        snprintf(path, sizeof path, "%s/%s.json", dir, all[i].key);
        unlink(path);
        total -= all[i].bytes;
    }
    free(all);
}

/* Moves the filled directory partial (rootfs/ in it) into the cache as the
 * tree of b->key, replacing an older one (a --no-cache build's result). */
static int publish_tree(build *b, const char *partial, abx_error **err)
{
    char dir[700], old[800], rootfs[760];
    /* no tree keeps a file that runs with more rights than its caller:
     * its files are owned by host ids on disk */
    snprintf(rootfs, sizeof rootfs, "%s/rootfs", partial);
    unsigned long long defanged = 0;
    if (abx__tree_defang(rootfs, &defanged) < 0) {
        int rc = abx__error_errno(err, ABX_EIO, errno, "dropping setuid bits from the step's tree");
        remove_tree(partial);
        return rc;
    }
    if (defanged) {
        char note[160];
        snprintf(note, sizeof note, "dropped setuid/setgid bits and file capabilities of %llu file%s",
                 defanged, defanged == 1 ? "" : "s");
        emit(b, json_pack("{s:s, s:i, s:s}", "event", "note", "step", (int)b->step, "text", note));
    }
    snprintf(dir, sizeof dir, "%s/trees/%s", b->cache, b->key);
    if (access(dir, F_OK) == 0) {
        snprintf(old, sizeof old, "%s/trees/.partial-%ld-old", b->cache, (long)getpid());
        if (rename(dir, old) == 0)
            remove_tree(old);
    }
    if (rename(partial, dir) < 0) {
        int rc = abx__error_errno(err, ABX_EIO, errno, "keeping the tree in the build cache");
        remove_tree(partial);
        return rc;
    }
    snprintf(b->tree, sizeof b->tree, "%s/rootfs", dir);
    b->work_current = false;
    b->made_bytes = tree_bytes(b->tree);
    return 0;
}

/* Moves work/rootfs into the cache as the tree of b->key. */
static int commit_work(build *b, abx_error **err)
{
    char partial[760], src[760], dst[800];
    snprintf(partial, sizeof partial, "%s/trees/.partial-%ld-%.16s", b->cache, (long)getpid(), b->key);
    snprintf(src, sizeof src, "%s/rootfs", b->work);
    snprintf(dst, sizeof dst, "%s/rootfs", partial);
    if (mkdir(partial, 0711) < 0 || rename(src, dst) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "keeping the step's tree in the build cache");
    return publish_tree(b, partial, err);
}

/* Makes work/rootfs a copy of the current tree, unless it is already the current state. */
/* work/rootfs as a copy of the current tree. link: its files hard links
 * to the cached tree's (cp -al: metadata only), for COPY and ADD, which
 * replace a file by unlinking it first and so never write into a cached
 * inode; a RUN step, which may write any file in place, gets real copies. */
static int prepare_work(build *b, bool link, abx_error **err)
{
    if (b->work_current && (link || !b->work_linked))
        return 0;
    char root[760];
    if (!b->work[0]) {
        snprintf(b->work, sizeof b->work, "%s/work-%ld-XXXXXX", b->cache, (long)getpid());
        if (!mkdtemp(b->work)) {
            b->work[0] = '\0';
            return abx__error_errno(err, ABX_EIO, errno, "the build's work directory");
        }
        chmod(b->work, 0711);
    }
    snprintf(root, sizeof root, "%s/rootfs", b->work);
    remove_tree(root);
    if (mkdir(root, 0755) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the build's work directory");
    if (b->tree[0] && copy_tree(b, b->tree, root, link) < 0)
        return step_fail(b, err, "copying the previous step's tree failed");
    b->tail_len = 0;
    b->tail[0] = '\0';
    b->work_current = true;
    b->work_linked = link;
    return 0;
}

/* ---- variables ------------------------------------------------------------ */

/* NULL-terminated "NAME=value" of the build's ARG values, then its ENV
 * (ENV wins); the caller frees it with free_pairs. */
static char **vars_of(build *b)
{
    size_t n = json_object_size(b->args) + json_object_size(b->env), i = 0;
    char **v = calloc(n + 1, sizeof *v);
    const char *k;
    json_t *val;
    json_t *objs[2] = {b->env, b->args}; /* lookups take the first match: ENV first */
    for (int o = 0; v && o < 2; o++)
        json_object_foreach(objs[o], k,
                            val) if (asprintf(&v[i], "%s=%s", k, json_string_value(val) ?: "") >= 0) i++;
    return v;
}

static void free_pairs(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static char *expand(build *b, const char *in)
{
    char **pairs = vars_of(b);
    df_vars vars = {.pairs = (const char *const *)pairs};
    char *out = abx__dockerfile_expand(in, &vars);
    free_pairs(pairs);
    return out;
}

static int ensure_workdir(build *b, const char *tree, abx_error **err)
{
    const char *wd = json_string_value(json_object_get(b->config, "workdir"));
    if (!wd || strcmp(wd, "/") == 0)
        return 0;
    char why[512];
    return abx__tree_mkdir_p(tree, wd, why, sizeof why) < 0 ? step_fail(b, err, "%s", why) : 0;
}

static int absolute_in_workdir(build *b, const char *path, char *out, size_t len)
{
    const char *wd = json_string_value(json_object_get(b->config, "workdir"));
    int n = path[0] == '/' ? snprintf(out, len, "%s", path)
                           : snprintf(out, len, "%s/%s", wd && strcmp(wd, "/") != 0 ? wd : "", path);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* COPY and ADD: the sources' digest goes into the key (key_extra), then,
 * unless cached, they are copied. */
/* Where COPY --from=REF reads: an earlier stage's tree, else a template's
 * (a host user's own first, as FROM); a directory fd, or -1 with the error set. */
static int copy_from_root(build *b, const char *ref, abx_error **err)
{
    const build_stage *st = find_stage(b, ref);
    char stored[160], root[1024] = "";
    if (st) {
        snprintf(root, sizeof root, "%s", st->tree);
    } else {
        abx__template_resolve(b->o->tenant, ref, stored, sizeof stored);
        if (abx__template_root(stored, root, sizeof root) < 0)
            return step_fail(b, err, "COPY --from=%.64s: no earlier stage and no template of that name", ref);
    }
    int fd = root[0] ? open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd < 0)
        return step_fail(b, err, "COPY --from=%.64s: %s", ref,
                         root[0] ? strerror(errno) : "that stage is empty");
    return fd;
}

static int open_copy(build *b, const df_step *s, abx_copy_src **srcs, size_t *n, char *dest, size_t destlen,
                     abx_error **err)
{
    int from = s->from ? copy_from_root(b, s->from, err) : b->ctxfd;
    if (from < 0)
        return from;
    for (size_t i = 0; i + 1 < s->nargs; i++) {
        char *src = expand(b, s->args[i]), why[600] = "";
        int rc = !src ? step_fail(b, err, "a malformed ${...}")
                 : abx__copy_open_sources(from, src, s->from ? NULL : b->ignore, srcs, n, why, sizeof why) < 0
                     ? step_fail(b, err, "%s", why)
                     : 0;
        free(src);
        if (rc < 0) {
            if (s->from)
                close(from);
            return rc;
        }
    }
    if (s->from)
        close(from);
    char *d = expand(b, s->args[s->nargs - 1]);
    int rc = d && absolute_in_workdir(b, d, dest, destlen) == 0 ? 0 : step_fail(b, err, "a bad destination");
    free(d);
    return rc;
}

#define PASSWD_MAX (1u << 20) /* the tree's /etc/passwd that USER reads */

/* Field want (0-based) of the first line of the tree's table (etc/passwd
 * or etc/group) whose field key is value, into out; opened inside the
 * tree: a link there cannot lead out. -1 when there is none. */
static int tree_field(const char *tree, const char *table, int key, const char *value, int want, char *out,
                      size_t len)
{
    int root = open(tree[0] ? tree : "/nonexistent", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = root < 0 ? -1 : abx__copy_open_in_context(root, table, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (root >= 0)
        close(root);
    if (fd < 0)
        return -1;
    char *text = calloc(1, PASSWD_MAX + 1);
    ssize_t n = text ? abx__read_full(fd, text, PASSWD_MAX) : -1;
    close(fd);
    int rc = -1;
    for (char *line = n > 0 ? text : NULL, *next; line && rc < 0; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *field[7] = {line};
        int nf = 1;
        for (char *c = line; *c && nf < 7; c++)
            if (*c == ':') {
                *c = '\0';
                field[nf++] = c + 1;
            }
        if (key < nf && want < nf && strcmp(field[key], value) == 0 &&
            snprintf(out, len, "%s", field[want]) < (int)len)
            rc = 0;
    }
    free(text);
    return rc;
}

/* The id of name in the tree's etc/passwd or etc/group (table: both keep
 * it in the third field); -1 when it has none. */
static long tree_id(const char *tree, const char *table, const char *name)
{
    char num[16];
    unsigned id;
    return tree_field(tree, table, 0, name, 2, num, sizeof num) == 0 &&
                   abx__parse_uint(num, 0, 4294967294u, &id) == 0
               ? (long)id
               : -1;
}

/* One part of --chown=U[:G]: a number, or a name the tree at this step
 * knows (table: etc/passwd or etc/group), or root / user (0 / 1000) in a
 * tree without one. -1 when it is none of them. */
static long owner_part(build *b, const char *table, const char *part)
{
    unsigned numeric;
    if (abx__parse_uint(part, 0, 65535, &numeric) == 0)
        return (long)numeric;
    long id = part[0] ? tree_id(b->tree, table, part) : -1;
    if (id < 0 && (strcmp(part, "root") == 0 || strcmp(part, "user") == 0))
        id = part[0] == 'r' ? 0 : 1000;
    return id >= 0 && id <= 65535 ? id : -1;
}

/* --chown=U[:G] as Docker reads it: names from the tree's /etc/passwd and
 * /etc/group at this step; a user alone (or a uid alone) gives the same
 * number as the gid. */
static int chown_ids(build *b, const char *spec, uid_t *uid, gid_t *gid, abx_error **err)
{
    char u[64], g[64];
    const char *colon = strchr(spec, ':');
    snprintf(u, sizeof u, "%.*s", colon ? (int)(colon - spec) : (int)strlen(spec), spec);
    snprintf(g, sizeof g, "%s", colon ? colon + 1 : "");
    long uid_v = owner_part(b, "etc/passwd", u);
    long gid_v = colon ? owner_part(b, "etc/group", g) : uid_v;
    if (uid_v < 0)
        return step_fail(b, err, "--chown=%.64s: no user '%.64s' in the tree's /etc/passwd at this step",
                         spec, u);
    if (gid_v < 0)
        return step_fail(b, err, "--chown=%.64s: no group '%.64s' in the tree's /etc/group at this step",
                         spec, g);
    *uid = (uid_t)uid_v;
    *gid = (gid_t)gid_v;
    return 0;
}

static int run_copy(build *b, const df_step *s, abx_copy_src *srcs, size_t n, const char *dest,
                    abx_error **err)
{
    abx_copy_spec c = {.srcs = srcs,
                       .n = n,
                       .dest = dest,
                       .uid = 0,
                       .gid = 0,
                       .mode = -1,
                       .ignore = s->from ? NULL : b->ignore};
    size_t dl = strlen(dest);
    c.dest_is_dir = n > 1 || (dl && dest[dl - 1] == '/');
    if (s->chown) {
        char *spec = expand(b, s->chown);
        int rc = !spec ? step_fail(b, err, "a malformed ${...}") : chown_ids(b, spec, &c.uid, &c.gid, err);
        free(spec);
        if (rc < 0)
            return rc;
    }
    if (s->chmod) { /* octal, as Docker's classic builder takes it */
        char *end = NULL;
        long m = strtol(s->chmod, &end, 8);
        if (!s->chmod[0] || *end || m < 0 || m > 07777)
            return step_fail(b, err, "--chmod=%.16s: an octal mode such as 0755", s->chmod);
        c.mode = (int)m;
    }
    int rc = prepare_work(b, true, err);
    char root[760], why[512] = "";
    snprintf(root, sizeof root, "%s/rootfs", b->work);
    if (rc == 0)
        rc = ensure_workdir(b, root, err);
    /* ADD unpacks local archives first (on the host, by the rootfs rules),
     * then copies what they hold, owners kept */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (s->kind != DF_ADD || srcs[i].is_dir || !abx__copy_archive_name(srcs[i].name))
            continue;
        char unpacked[800], from[64];
        snprintf(unpacked, sizeof unpacked, "%s/add-%zu", b->work, i);
        snprintf(from, sizeof from, "/proc/self/fd/%d", srcs[i].fd);
        remove_tree(unpacked);
        if (mkdir(unpacked, 0755) < 0 || abx__archive_extract_rootfs(from, unpacked, why, sizeof why) < 0) {
            rc = step_fail(b, err, "unpacking %s: %s", srcs[i].name, why);
            break;
        }
        int ufd = open(unpacked, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ufd < 0) {
            rc = step_fail(b, err, "unpacking %s: %s", srcs[i].name, strerror(errno));
            break;
        }
        abx_copy_spec one = c;
        abx_copy_src dir = {.fd = ufd, .is_dir = true};
        one.srcs = &dir;
        one.n = 1;
        one.keep_owner = true;
        one.dest_is_dir = true;
        if (abx__copy_into_tree(root, &one, why, sizeof why) < 0)
            rc = step_fail(b, err, "%s", why);
        close(ufd);
        remove_tree(unpacked);
        close(srcs[i].fd);
        srcs[i].fd = -1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (srcs[i].fd >= 0)
            srcs[kept++] = srcs[i];
    c.n = kept;
    if (rc == 0 && kept && abx__copy_into_tree(root, &c, why, sizeof why) < 0)
        rc = step_fail(b, err, "%s", why);
    return rc;
}

/* ---- RUN -------------------------------------------------------------------- */

/* The shell of shell-form RUN, CMD, ENTRYPOINT and HEALTHCHECK: SHELL's
 * array (the build's config; borrowed), or NULL for /bin/sh -c. */
static json_t *shell_of(build *b)
{
    json_t *shell = json_object_get(b->config, "shell");
    return json_is_array(shell) && json_array_size(shell) > 0 ? shell : NULL;
}

static char **run_argv(build *b, const df_step *s)
{
    json_t *shell = s->exec_form ? NULL : shell_of(b);
    char **argv = calloc(s->nargs + json_array_size(shell) + 4, sizeof *argv);
    if (!argv)
        return NULL;
    size_t i = 0, k;
    json_t *w;
    json_array_foreach(shell, k, w) argv[i++] = (char *)json_string_value(w);
    if (!s->exec_form && !shell) {
        argv[i++] = "/bin/sh";
        argv[i++] = "-c";
    }
    for (k = 0; k < s->nargs; k++)
        argv[i++] = s->args[k];
    return argv;
}

/* A RUN step's network (unless the build asked for the host's): made
 * before the command starts, as --network internet has it (outbound NAT;
 * the host, its loopback, its LAN and the other sandboxes refused), its
 * resolv.conf naming the step's own resolver. */
typedef struct step_network {
    const char *id;
    json_t *policy;
    abx_net *net;
} step_network;

static int step_network_up(void *ctx, pid_t init_pid, char *resolv, size_t len, abx_error **err)
{
    step_network *n = ctx;
    int rc = abx__net_up(n->id, init_pid, NULL, n->policy, &n->net, err);
    if (rc == 0)
        abx__net_resolv_conf(n->net, resolv, len);
    return rc;
}

static int run_step(build *b, const df_step *s, abx_error **err)
{
    int rc = prepare_work(b, false, err);
    char root[760];
    snprintf(root, sizeof root, "%s/rootfs", b->work);
    if (rc == 0)
        rc = ensure_workdir(b, root, err);
    if (rc < 0)
        return rc;
    char id[ABX_SANDBOX_ID_LEN + 1];
    if (abx__sandbox_id_new(id) < 0)
        return abx__error_set(err, ABX_ESYS, "no randomness for the sandbox id");
    json_t *uid = json_object_get(b->config, "uid"); /* steps run as root unless USER says otherwise */
    bool as_root = !uid || json_integer_value(uid) == 0;
    /* what docker build gives a RUN step: PATH, HOSTNAME, HOME (the user's
     * in the tree's /etc/passwd, else /), then the ENV and ARG values */
    abx_sandbox_env env = {.n = 0};
    char uidtext[16], home[512], fixed_pair[600];
    snprintf(uidtext, sizeof uidtext, "%lld", uid ? (long long)json_integer_value(uid) : 0LL);
    if (tree_field(b->tree, "etc/passwd", 2, uidtext, 5, home, sizeof home) < 0 || home[0] != '/')
        snprintf(home, sizeof home, "/");
    const char *fixed[][2] = {{"PATH", ABX_SANDBOX_PATH}, {"HOSTNAME", id}, {"HOME", home}};
    for (size_t i = 0; rc == 0 && i < sizeof fixed / sizeof fixed[0]; i++) {
        snprintf(fixed_pair, sizeof fixed_pair, "%s=%s", fixed[i][0], fixed[i][1]);
        rc = abx__sandbox_env_put(&env, fixed_pair, err);
    }
    if (rc < 0) {
        abx__sandbox_env_free(&env);
        return rc;
    }
    char **pairs = vars_of(b); /* ARG values reach RUN as variables, as in docker build */
    for (int o = 1; o >= 0 && pairs; o--) {
        const char *k;
        json_t *v;
        json_object_foreach(o ? b->args : b->env, k, v)
        {
            char pair[8192];
            snprintf(pair, sizeof pair, "%s=%s", k, json_string_value(v) ?: "");
            abx__sandbox_env_put(&env, pair, NULL);
        }
    }
    free_pairs(pairs);
    char **argv = run_argv(b, s);
    const char *wd = json_string_value(json_object_get(b->config, "workdir"));
    abx_limits limits;
    abx_limits_default(&limits);
    abx_limit_maxima max;
    abx_limit_maxima_get(&max);
    limits.memory_mb = max.memory_mb < BUILD_MEMORY_MB ? max.memory_mb : BUILD_MEMORY_MB;
    limits.pids = max.pids < BUILD_PIDS ? max.pids : BUILD_PIDS;
    limits.cpu_count = max.cpu_count;
    int out[2] = {-1, -1};
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!argv || devnull < 0 || pipe2(out, O_CLOEXEC) < 0) {
        free(argv);
        if (devnull >= 0)
            close(devnull);
        abx__sandbox_env_free(&env);
        return abx__error_errno(err, ABX_ESYS, errno, "starting the step");
    }
    int stdio[3] = {devnull, out[1], out[1]};
    step_network network = {.id = id};
    bool host_network = b->o->host_network;
    if (!host_network &&
        abx__net_policy_build("internet", NULL, NULL, "internet", &network.policy, err) < 0) {
        free(argv);
        close(devnull);
        close(out[0]);
        close(out[1]);
        abx__sandbox_env_free(&env);
        return -ABX_ENOMEM;
    }
    abx_jail_config cfg = {.id = id,
                           .limits = limits,
                           .argv = (const char *const *)argv,
                           .envp = env.vars,
                           .cwd = wd ? wd : "/",
                           .as_root = as_root,
                           .template_root = root,
                           .template_writable = true,
                           .host_network = host_network,
                           .before_go = host_network ? NULL : step_network_up,
                           .before_go_ctx = &network,
                           .root_caps = true,
                           .stdio = stdio};
    sigset_t mask, old;
    sigemptyset(&mask);
    int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&mask, sigs[i]);
    sigprocmask(SIG_BLOCK, &mask, &old);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    abx_jail jail;
    b->tail_len = 0;
    b->tail[0] = '\0';
    rc = abx__jail_start(&cfg, &jail, err);
    close(out[1]);
    close(devnull);
    int status = 125;
    if (rc == 0 && (rc = abx__jail_wait_started(&jail, &status, err)) < 0)
        rc = step_fail(b, err, "the command did not start: %s", abx_error_message(*err));
    if (rc == 0 && pump(b, out[0], sigfd) < 0)
        rc = step_fail(b, err, "interrupted");
    if (jail.init_pid > 0 && rc == 0) {
        int ws = 0;
        while (waitpid(jail.init_pid, &ws, 0) < 0 && errno == EINTR)
            ;
        jail.reaped = true;
        jail.init_status = ws;
        status = abx__jail_exit_code(ws);
        if (status != 0)
            rc = step_fail(b, err, "exited with status %d%s", status,
                           abx__cgroup_oom_killed(&jail.cgroup) ? " (out of memory)" : "");
    }
    if (jail.init_pid > 0)
        abx__jail_destroy(&jail);
    abx__net_down(network.net);
    json_decref(network.policy);
    close(out[0]);
    if (sigfd >= 0)
        close(sigfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    abx__sandbox_env_free(&env);
    free(argv);
    return rc;
}

/* ---- FROM ------------------------------------------------------------------- */

/* The host's Debian mirror: ABX_DEBIAN_MIRROR, else the first Debian URI
 * of apt's sources (not the security archive). */
static void debian_mirror(char *out, size_t len)
{
    const char *env = getenv("ABX_DEBIAN_MIRROR");
    snprintf(out, len, "%s", env && *env ? env : "http://deb.debian.org/debian");
    if (env && *env)
        return;
    const char *files[] = {"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "re");
        char line[1024];
        while (f && fgets(line, sizeof line, f)) {
            char uri[512] = "";
            if (sscanf(line, "URIs: %511s", uri) == 1 || sscanf(line, "deb %511s", uri) == 1 ||
                sscanf(line, "deb [%*[^]]] %511s", uri) == 1) {
                if (strstr(uri, "security") || strncmp(uri, "http", 4) != 0)
                    continue;
                snprintf(out, len, "%s", uri);
                fclose(f);
                return;
            }
        }
        if (f)
            fclose(f);
    }
}

/* debian[:TAG]: the suite and whether it is -slim; -1 for a tag abx does not build. */
static int debian_suite(const char *image, char *suite, size_t len, bool *slim)
{
    const char *tag = strncmp(image, "debian:", 7) == 0 ? image + 7
                      : strcmp(image, "debian") == 0    ? "latest"
                                                        : NULL;
    if (!tag)
        return -1;
    static const char *const map[][2] = {
        {"bookworm", "bookworm"}, {"12", "bookworm"}, {"stable", "bookworm"},   {"latest", "bookworm"},
        {"trixie", "trixie"},     {"13", "trixie"},   {"bullseye", "bullseye"}, {"11", "bullseye"}};
    char base[64];
    snprintf(base, sizeof base, "%.63s", tag);
    size_t n = strlen(base);
    *slim = n > 5 && strcmp(base + n - 5, "-slim") == 0;
    if (*slim)
        base[n - 5] = '\0';
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(base, map[i][0]) == 0) {
            snprintf(suite, len, "%s", map[i][1]);
            return 0;
        }
    return -1;
}

static int from_debian(build *b, const char *suite, bool slim, const char *mirror, abx_error **err)
{
    char partial[760], tree[800];
    snprintf(partial, sizeof partial, "%s/trees/.partial-%ld-debian", b->cache, (long)getpid());
    snprintf(tree, sizeof tree, "%s/rootfs", partial);
    remove_tree(partial);
    if (mkdir(partial, 0711) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the build cache");
    int rc;
    emit(b, json_pack("{s:s, s:i, s:s}", "event", "note", "step", (int)b->step, "text",
                      on_path("mmdebstrap") ? "making a minimal Debian with mmdebstrap"
                                            : "making a minimal Debian with debootstrap"));
    /* both mount /proc and /dev in the tree while they work: in a mount
     * namespace of their own, nothing of it shows on the host or outlives them */
    if (on_path("mmdebstrap")) {
        const char *argv[] = {"unshare",
                              "--mount",
                              "--propagation",
                              "private",
                              "--",
                              "mmdebstrap",
                              "--variant=minbase",
                              "--mode=root",
                              "--format=directory",
                              "--skip=cleanup/apt/lists",
                              "--include=ca-certificates",
                              APT_CLEAN_HOOK,
                              slim ? "--dpkgopt=path-exclude=/usr/share/man/*" : "--quiet",
                              slim ? "--dpkgopt=path-exclude=/usr/share/doc/*" : "--quiet",
                              slim ? "--dpkgopt=path-include=/usr/share/doc/*/copyright" : "--quiet",
                              suite,
                              tree,
                              mirror,
                              NULL};
        rc = host_command(b, argv);
    } else if (on_path("debootstrap")) {
        const char *argv[] = {"unshare",
                              "--mount",
                              "--propagation",
                              "private",
                              "--",
                              "debootstrap",
                              "--variant=minbase",
                              "--include=ca-certificates",
                              suite,
                              tree,
                              mirror,
                              NULL};
        rc = host_command(b, argv);
    } else {
        remove_tree(partial);
        return abx__error_set(err, ABX_EHOSTSUPPORT,
                              "FROM debian: needs mmdebstrap or debootstrap on the host "
                              "(apt-get install mmdebstrap)");
    }
    if (rc < 0) {
        remove_tree(partial);
        return step_fail(b, err, "making Debian %s from %s failed", suite, mirror);
    }
    return publish_tree(b, partial, err);
}

static int from_archive(build *b, int fd, abx_error **err)
{
    char partial[760], tree[800], from[64], why[400] = "";
    snprintf(partial, sizeof partial, "%s/trees/.partial-%ld-archive", b->cache, (long)getpid());
    snprintf(tree, sizeof tree, "%s/rootfs", partial);
    snprintf(from, sizeof from, "/proc/self/fd/%d", fd);
    remove_tree(partial);
    if (mkdir(partial, 0711) < 0 || mkdir(tree, 0755) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the build cache");
    if (abx__archive_extract_rootfs(from, tree, why, sizeof why) < 0) {
        remove_tree(partial);
        return step_fail(b, err, "%s", why);
    }
    return publish_tree(b, partial, err);
}

/* ---- the steps ---------------------------------------------------------------- */

/* The key of the step: the previous key, the instruction, the variables in
 * force, and extra (what it reads from outside: files, a base image). */
static void next_key(build *b, const df_step *s, const char *extra)
{
    abx_digest *d = abx__digest_new();
    abx__digest_add_str(d, b->key);
    /* a FROM is keyed by what it resolved to (extra), not by how it is
     * written: FROM ${BASE} AS deps and FROM debian:bookworm-slim share */
    abx__digest_add_str(d, s->kind == DF_FROM ? "FROM" : s->text);
    char *args = json_dumps(b->args, JSON_COMPACT | JSON_SORT_KEYS);
    char *env = json_dumps(b->env, JSON_COMPACT);
    abx__digest_add_str(d, args ? args : "");
    abx__digest_add_str(d, env ? env : "");
    abx__digest_add_str(d, extra);
    free(args);
    free(env);
    abx__digest_finish(d, b->key);
}

static json_t *command_array(build *b, const df_step *s)
{
    json_t *shell = s->exec_form ? NULL : shell_of(b);
    json_t *a = shell          ? json_deep_copy(shell)
                : s->exec_form ? json_array()
                               : json_pack("[s, s]", "/bin/sh", "-c");
    for (size_t i = 0; i < s->nargs; i++)
        json_array_append_new(a, json_string(s->args[i]));
    return a;
}

/* USER NAME[:GROUP] or UID[:GID]: a name as the tree at this step knows it
 * (a user an earlier RUN useradd made too); abx runs a template's commands
 * as root (0) or uid 1000, so any other fails here, before later steps. */
static int user_step(build *b, const df_step *s, abx_error **err)
{
    char *v = expand(b, s->args[0]);
    if (!v)
        return step_fail(b, err, "a malformed ${...}");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(v, ":"), v);
    unsigned numeric;
    long uid = abx__parse_uint(name, 0, 4294967294u, &numeric) == 0 ? (long)numeric
                                                                    : tree_id(b->tree, "etc/passwd", name);
    if (uid < 0 && (strcmp(name, "root") == 0 || strcmp(name, "user") == 0))
        uid = name[0] == 'r' ? 0 : 1000; /* a tree without /etc/passwd (FROM scratch) */
    int rc = 0;
    if (uid < 0)
        rc = step_fail(
            b, err, "USER %s: no such user in the tree's /etc/passwd at this step (make it with RUN useradd)",
            name);
    else if (uid != 0 && uid != 1000)
        rc = step_fail(
            b, err,
            "USER %s is uid %ld; abx runs a template's commands as root (0) or uid 1000: make the user "
            "with uid 1000 (RUN useradd -o -u 1000 %s)",
            name, uid, name);
    else
        json_object_set_new(b->config, "uid", json_integer(uid));
    free(v);
    return rc;
}

/* EXPOSE's "PORT" or "PORT/tcp|udp". */
static bool port_spec_ok(const char *v)
{
    unsigned port;
    char num[8];
    size_t n = strcspn(v, "/");
    if (n == 0 || n >= sizeof num)
        return false;
    snprintf(num, sizeof num, "%.*s", (int)n, v);
    return abx__parse_uint(num, 1, 65535, &port) == 0 &&
           (!v[n] || strcmp(v + n, "/tcp") == 0 || strcmp(v + n, "/udp") == 0);
}

/* STOPSIGNAL's SIGNAME or number. */
static bool signal_ok(const char *v)
{
    unsigned n;
    if (abx__parse_uint(v, 1, 64, &n) == 0)
        return true;
    static const char *const names[] = {"SIGTERM", "SIGINT",  "SIGQUIT",  "SIGKILL", "SIGHUP",
                                        "SIGUSR1", "SIGUSR2", "SIGWINCH", "SIGSTOP", "SIGPWR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i]) == 0 || strcasecmp(v, names[i] + 3) == 0)
            return true;
    return false;
}

static void note(build *b, const char *text)
{
    emit(b, json_pack("{s:s, s:i, s:s}", "event", "note", "step", (int)b->step, "text", text));
}

/* The config's array or object named key, made when absent (borrowed). */
static json_t *config_member(build *b, const char *key, bool array)
{
    json_t *v = json_object_get(b->config, key);
    if (array ? json_is_array(v) : json_is_object(v))
        return v;
    v = array ? json_array() : json_object();
    json_object_set_new(b->config, key, v);
    return v;
}

/* EXPOSE, LABEL, MAINTAINER, STOPSIGNAL, VOLUME: recorded in the config
 * (template inspect shows them; docs/templates.md says what abx does with
 * each); SHELL: the shell of later shell-form steps. */
static int recorded_step(build *b, const df_step *s, abx_error **err)
{
    for (size_t i = 0; s->kind != DF_SHELL && i < s->nargs; i++) {
        char *v = expand(b, s->args[i]);
        if (!v)
            return step_fail(b, err, "a malformed ${...}");
        bool bad = (s->kind == DF_EXPOSE && !port_spec_ok(v)) ||
                   (s->kind == DF_STOPSIGNAL && !signal_ok(v)) || (s->kind == DF_VOLUME && v[0] != '/');
        if (bad) {
            step_fail(b, err, "'%.64s' is not %s", v,
                      s->kind == DF_EXPOSE       ? "a port (PORT or PORT/tcp or PORT/udp, 1-65535)"
                      : s->kind == DF_STOPSIGNAL ? "a signal (a name such as SIGTERM, or 1-64)"
                                                 : "an absolute path");
            free(v);
            return -ABX_EINVAL;
        }
        json_t *list = NULL;
        if (s->kind == DF_EXPOSE || s->kind == DF_VOLUME)
            list = config_member(b, s->kind == DF_EXPOSE ? "expose" : "volumes", true);
        size_t k;
        json_t *x;
        bool seen = false;
        json_array_foreach(list, k, x) seen |= strcmp(json_string_value(x), v) == 0;
        if (list && !seen)
            json_array_append_new(list, json_string(v));
        else if (s->kind == DF_STOPSIGNAL)
            json_object_set_new(b->config, "stop_signal", json_string(v));
        else if (s->kind == DF_MAINTAINER)
            json_object_set_new(config_member(b, "labels", false), "maintainer", json_string(v));
        else if (s->kind == DF_LABEL && i % 2 == 1)
            json_object_set_new(config_member(b, "labels", false), s->args[i - 1], json_string(v));
        free(v);
    }
    if (s->kind == DF_SHELL) {
        json_t *shell = json_array();
        for (size_t i = 0; i < s->nargs; i++)
            json_array_append_new(shell, json_string(s->args[i]));
        json_object_set_new(b->config, "shell", shell);
    }
    if (s->kind == DF_EXPOSE)
        note(b, "recorded: every port of a sandbox is reachable through abx serve and abx expose");
    if (s->kind == DF_VOLUME)
        note(b, "recorded: abx mounts nothing there; the path is the sandbox's own directory");
    if (s->kind == DF_STOPSIGNAL)
        note(b, "recorded: abx stops a sandbox's processes together, with SIGKILL");
    return 0;
}

/* ENV, ARG, WORKDIR, USER, CMD, ENTRYPOINT, HEALTHCHECK: the config only. */
static int config_step(build *b, const df_step *s, abx_error **err)
{
    switch (s->kind) {
    case DF_EXPOSE:
    case DF_LABEL:
    case DF_MAINTAINER:
    case DF_STOPSIGNAL:
    case DF_SHELL:
    case DF_VOLUME:
        return recorded_step(b, s, err);
    case DF_ENV: {
        /* every value of one ENV line sees the variables from before it, as
         * Docker has it (ENV A=2 B=$A gives B the earlier A) */
        json_t *set = json_object();
        for (size_t i = 0; i + 1 < s->nargs; i += 2) {
            char *v = expand(b, s->args[i + 1]);
            if (!v) {
                json_decref(set);
                return step_fail(b, err, "a malformed ${...} in %s", s->args[i]);
            }
            json_object_set_new(set, s->args[i], json_string(v));
            free(v);
        }
        for (size_t i = 0; i + 1 < s->nargs; i += 2)
            json_object_set(b->env, s->args[i], json_object_get(set, s->args[i]));
        json_decref(set);
        return 0;
    }
    case DF_ARG: {
        const char *given = NULL;
        size_t nlen = strlen(s->args[0]);
        for (size_t i = 0; b->o->build_args && b->o->build_args[i]; i++)
            if (strncmp(b->o->build_args[i], s->args[0], nlen) == 0 && b->o->build_args[i][nlen] == '=')
                given = b->o->build_args[i] + nlen + 1;
        /* Docker's order: --build-arg, the default here, a global ARG's value; else unset */
        const char *global =
            b->in_stage ? json_string_value(json_object_get(b->global_args, s->args[0])) : NULL;
        char *v = given            ? strdup(given)
                  : s->has_default ? expand(b, s->args[1])
                  : global         ? strdup(global)
                                   : NULL;
        if (!v && (given || s->has_default || global))
            return step_fail(b, err, "a malformed ${...}");
        if (v)
            json_object_set_new(b->args, s->args[0], json_string(v));
        free(v);
        return 0;
    }
    case DF_WORKDIR: {
        char *v = expand(b, s->args[0]), path[1024];
        int bad = !v || absolute_in_workdir(b, v, path, sizeof path) < 0 || strstr(path, "/../");
        free(v);
        if (bad)
            return step_fail(b, err, "a bad path");
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
            path[--n] = '\0';
        json_object_set_new(b->config, "workdir", json_string(path));
        return 0;
    }
    case DF_USER:
        return user_step(b, s, err);
    case DF_CMD:
        json_object_set_new(b->config, "cmd", command_array(b, s));
        return 0;
    case DF_ENTRYPOINT:
        json_object_set_new(b->config, "entrypoint", command_array(b, s));
        json_object_set_new(b->config, "entrypoint_shell", json_boolean(!s->exec_form));
        json_object_del(b->config, "cmd"); /* as docker: a new ENTRYPOINT drops the CMD before it */
        return 0;
    case DF_HEALTHCHECK:
        if (s->healthcheck_none)
            json_object_del(b->config, "healthcheck");
        else
            json_object_set_new(b->config, "healthcheck",
                                json_pack("{s:o, s:i, s:i}", "cmd", command_array(b, s), "interval_ms",
                                          (int)s->interval_ms, "timeout_ms", (int)s->timeout_ms));
        return 0;
    case DF_FROM:
    case DF_RUN:
    case DF_COPY:
    case DF_ADD:
        break;
    }
    return step_fail(b, err, "not a config step");
}

#define DEBIAN_IMAGE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

typedef enum from_kind { FROM_SCRATCH, FROM_DEBIAN, FROM_TEMPLATE, FROM_ARCHIVE, FROM_STAGE } from_kind;

typedef struct from_plan {
    from_kind kind;
    char image[256];
    char suite[32];
    bool slim;
    char mirror[512];
    char root[1024];          /* FROM_TEMPLATE: its tree */
    int fd;                   /* FROM_ARCHIVE: the archive, opened in the context */
    const build_stage *stage; /* FROM_STAGE */
} from_plan;

/* At a FROM: the stage that ends goes into b->stages, and one begins. */
static int stage_begin(build *b, const df_step *s, abx_error **err)
{
    if (b->in_stage) {
        if (b->nstages >= MAX_STAGES)
            return step_fail(b, err, "more than %d stages", MAX_STAGES);
        build_stage *st = &b->stages[b->nstages++];
        snprintf(st->name, sizeof st->name, "%s", b->stage_name);
        snprintf(st->tree, sizeof st->tree, "%s", b->tree);
        snprintf(st->key, sizeof st->key, "%s", b->key);
        st->env = json_deep_copy(b->env);
        st->config = json_deep_copy(b->config);
    }
    if (!b->in_stage) /* the ARGs so far are the global ones */
        json_object_update(b->global_args, b->args);
    b->in_stage = true;
    snprintf(b->stage_name, sizeof b->stage_name, "%s", s->stage ? s->stage : "");
    return 0;
}

/* What FROM names; extra gets what identifies it for the cache key. */
static int from_resolve(build *b, const df_step *s, from_plan *f, char *extra, size_t len, abx_error **err)
{
    char *image = expand(b, s->args[0]);
    if (!image)
        return step_fail(b, err, "a malformed ${...}");
    snprintf(f->image, sizeof f->image, "%s", image);
    free(image);
    f->fd = -1;
    if ((f->stage = find_stage(b, f->image))) { /* an earlier stage of this Dockerfile */
        f->kind = FROM_STAGE;
        snprintf(extra, len, "stage %s", f->stage->key);
        return 0;
    }
    char stored[160]; /* a host user's own template of that name first, else the shared one */
    abx__template_resolve(b->o->tenant, f->image, stored, sizeof stored);
    if (strcmp(f->image, "scratch") == 0) {
        f->kind = FROM_SCRATCH;
        snprintf(extra, len, "scratch");
    } else if (debian_suite(f->image, f->suite, sizeof f->suite, &f->slim) == 0) {
        f->kind = FROM_DEBIAN;
        debian_mirror(f->mirror, sizeof f->mirror);
        snprintf(extra, len, "debian %s %s %s apt-clean env PATH", f->suite, f->slim ? "slim" : "full",
                 f->mirror);
    } else if (abx__template_root(stored, f->root, sizeof f->root) == 0) {
        f->kind = FROM_TEMPLATE;
        /* keyed by what it is, not by its name or age: its tree (paths,
         * modes, owners, bytes, link targets) and its config */
        const abx_tree_digest_rules whole = {.max_entries = 4000000, .max_depth = 512, .owners = true};
        char tree[ABX_DIGEST_HEX], conf[ABX_DIGEST_HEX];
        json_t *info = NULL;
        abx__template_inspect(stored, &info, NULL);
        char *config = json_dumps(json_object_get(info, "config"), JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(info);
        abx_digest *d = abx__digest_new();
        abx__digest_add_str(d, config ? config : "null");
        free(config);
        if (abx__digest_finish(d, conf) < 0 || abx__digest_tree(f->root, &whole, tree) < 0)
            return step_fail(b, err, "reading the template %s: %s", f->image, strerror(errno));
        snprintf(extra, len, "template tree %s config %s", tree, conf);
    } else if (abx__copy_archive_name(f->image) &&
               (f->fd = abx__copy_open_in_context(b->ctxfd, f->image[0] == '/' ? f->image + 1 : f->image,
                                                  O_RDONLY | O_NONBLOCK)) >= 0) {
        f->kind = FROM_ARCHIVE;
        abx_digest *d = abx__digest_new();
        char hex[ABX_DIGEST_HEX];
        abx_copy_src whole = {.fd = f->fd};
        if (abx__copy_digest(d, &whole, NULL) < 0 || abx__digest_finish(d, hex) < 0)
            return step_fail(b, err, "reading %s", f->image);
        snprintf(extra, len, "archive %s", hex);
    } else {
        return step_fail(b, err,
                         "FROM %.100s: abx builds FROM debian:bookworm[-slim] (or trixie, bullseye), "
                         "scratch, a template ('abx template list') or a rootfs archive in the context; "
                         "import other images with 'abx template import' (an OCI layout: skopeo copy "
                         "docker://IMAGE oci:DIR)",
                         f->image);
    }
    return 0;
}

static int from_run(build *b, from_plan *f, abx_error **err)
{
    b->tree[0] = '\0';
    json_decref(b->env);
    json_decref(b->config);
    b->env = json_object();
    b->config = json_object();
    switch (f->kind) {
    case FROM_SCRATCH:
        return 0;
    case FROM_DEBIAN: /* Docker's debian images carry this PATH: ENV PATH=/x:$PATH builds on it */
        json_object_set_new(b->env, "PATH", json_string(DEBIAN_IMAGE_PATH));
        return from_debian(b, f->suite, f->slim, f->mirror, err);
    case FROM_ARCHIVE:
        return from_archive(b, f->fd, err);
    case FROM_STAGE:
        snprintf(b->tree, sizeof b->tree, "%s", f->stage->tree);
        json_object_update(b->env, f->stage->env);
        json_object_update(b->config, f->stage->config);
        return 0;
    case FROM_TEMPLATE: {
        snprintf(b->tree, sizeof b->tree, "%s", f->root);
        json_t *cfg = abx__template_config(f->image);
        if (cfg) {
            json_t *env = json_object_get(cfg, "env");
            if (json_is_object(env))
                json_object_update(b->env, env);
            json_object_update(b->config, cfg);
            json_object_del(b->config, "env");
            json_decref(cfg);
        }
        return 0;
    }
    }
    return 0;
}

/* ---- the build ------------------------------------------------------------------ */

static void close_sources(abx_copy_src *srcs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (srcs[i].fd >= 0)
            close(srcs[i].fd);
    free(srcs);
}

static int one_step(build *b, const df_step *s, abx_error **err)
{
    char extra[1200] = "";
    from_plan from = {.fd = -1};
    abx_copy_src *srcs = NULL;
    size_t nsrcs = 0;
    char dest[4096] = "";
    int rc = 0;
    if (s->kind == DF_FROM)
        rc = stage_begin(b, s, err);
    if (s->kind == DF_FROM && rc == 0) { /* a stage starts afresh: its key, and the ARGs its FROM line sees */
        json_decref(b->args);
        b->args = json_deep_copy(b->global_args);
        rc = from_resolve(b, s, &from, extra, sizeof extra, err);
        json_object_clear(b->args);
        json_object_clear(b->env);
        snprintf(b->key, sizeof b->key, CACHE_FORMAT);
    }
    if (s->kind == DF_ARG) { /* a --build-arg given for it, or a global ARG's value: part of the key */
        const char *global =
            b->in_stage ? json_string_value(json_object_get(b->global_args, s->args[0])) : NULL;
        if (global)
            snprintf(extra, sizeof extra, "global %.1000s", global);
        for (size_t i = 0; b->o->build_args && b->o->build_args[i]; i++)
            if (strncmp(b->o->build_args[i], s->args[0], strlen(s->args[0])) == 0 &&
                b->o->build_args[i][strlen(s->args[0])] == '=')
                snprintf(extra, sizeof extra, "given %s", b->o->build_args[i]);
    }
    if (s->kind == DF_COPY || s->kind == DF_ADD) {
        rc = open_copy(b, s, &srcs, &nsrcs, dest, sizeof dest, err);
        abx_digest *d = abx__digest_new();
        for (size_t i = 0; rc == 0 && i < nsrcs; i++) {
            abx__digest_add_str(d, srcs[i].name);
            if (abx__copy_digest(d, &srcs[i], s->from ? NULL : b->ignore) < 0)
                rc = step_fail(b, err, "reading %s in the context", srcs[i].name);
        }
        if (abx__digest_finish(d, extra) < 0 && rc == 0)
            rc = abx__error_set(err, ABX_ESYS, "hashing the sources");
    }
    if (rc == 0) {
        next_key(b, s, extra);
        b->made_bytes = 0;
        snprintf(b->chain[b->step - 1], sizeof b->chain[0], "%s", b->key);
        bool cached = !b->o->no_cache && state_load(b);
        emit(b, json_pack("{s:s, s:i, s:i, s:s, s:i, s:b}", "event", "step", "step", (int)b->step, "steps",
                          (int)b->df.n, "instruction", s->text, "line", (int)s->line, "cached", cached));
        if (!cached) {
            if (s->kind == DF_FROM)
                rc = from_run(b, &from, err);
            else if (s->kind == DF_RUN)
                rc = run_step(b, s, err);
            else if (s->kind == DF_COPY || s->kind == DF_ADD)
                rc = run_copy(b, s, srcs, nsrcs, dest, err);
            else
                rc = config_step(b, s, err);
            if (rc == 0 && (s->kind == DF_RUN || s->kind == DF_COPY || s->kind == DF_ADD))
                rc = commit_work(b, err);
            if (rc == 0)
                state_save(b);
        }
    }
    if (from.fd >= 0)
        close(from.fd);
    close_sources(srcs, nsrcs);
    return rc;
}

/* The last tree as template o->name (hard links into the cache's tree). */
static int finish(build *b, json_t **info, abx_error **err)
{
    char staging[800], root[900];
    int rc = abx__template_stage(b->o->name, staging, sizeof staging, err);
    if (rc < 0)
        return rc;
    snprintf(root, sizeof root, "%s/rootfs", staging);
    b->step = b->df.n;
    if (b->tree[0] && copy_tree(b, b->tree, root, true) < 0)
        rc = step_fail(b, err, "making the template from the last step's tree failed");
    if (rc == 0)
        rc = ensure_workdir(b, root, err);
    if (rc < 0) {
        abx__template_discard(staging);
        return rc;
    }
    json_t *config = json_deep_copy(b->config);
    json_object_set(config, "env", b->env);
    char shown[256];
    snprintf(shown, sizeof shown, "%s",
             b->o->dockerfile_text ? "a built-in recipe"
             : b->o->source_label  ? b->o->source_label
             : b->o->dockerfile    ? b->o->dockerfile
                                   : "Dockerfile");
    json_t *doc = json_pack("{s:s, s:s, s:o, s:{s:s, s:i}}", "source", shown, "kind", "build", "config",
                            config, "build", "key", b->key, "steps", (int)b->df.n);
    char recipe[ABX_DIGEST_HEX];
    if (b->o->dockerfile_text && recipe_digest(b->o->dockerfile_text, recipe) == 0)
        json_object_set_new(json_object_get(doc, "build"), "recipe", json_string(recipe));
    return abx__template_install(b->o->name, staging, doc, true, info, err);
}

static int read_dockerfile(const template_build_request *o, char **text, size_t *len, abx_error **err)
{
    if (o->dockerfile_text) {
        *text = strdup(o->dockerfile_text);
        *len = strlen(o->dockerfile_text);
        return *text ? 0 : abx__error_set(err, ABX_ENOMEM, "out of memory");
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", o->dockerfile ? o->dockerfile : "");
    if (!o->dockerfile)
        snprintf(path, sizeof path, "%s/Dockerfile", o->context ? o->context : ".");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0)
            close(fd);
        return abx__error_set(err, ABX_EINVAL, "the Dockerfile %.300s: %s", path, strerror(e));
    }
    if (st.st_size > (off_t)ABX_DOCKERFILE_MAX_BYTES) {
        close(fd);
        return abx__error_set(err, ABX_EINVAL, "the Dockerfile is over %u bytes", ABX_DOCKERFILE_MAX_BYTES);
    }
    *text = malloc((size_t)st.st_size + 1);
    ssize_t n = *text ? abx__read_full(fd, *text, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        free(*text);
        *text = NULL;
        return abx__error_errno(err, ABX_EIO, errno, "reading the Dockerfile");
    }
    (*text)[n] = '\0';
    *len = (size_t)n;
    return 0;
}

/* The context's .dockerignore into b->ignore (none: NULL), opened inside
 * the context; a malformed one fails the build before any step. */
static int read_dockerignore(build *b, abx_error **err)
{
    int fd = abx__copy_open_in_context(b->ctxfd, ".dockerignore", O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : abx__error_errno(err, ABX_EINVAL, errno, "the context's .dockerignore");
    char why[300];
    int rc = abx__ignore_read_fd(fd, &b->ignore, why, sizeof why) < 0
                 ? abx__error_set(err, ABX_EINVAL, "%s", why)
                 : 0;
    close(fd);
    return rc;
}

static int build_template(const template_build_request *o, json_t **info, abx_error **err)
{
    if (info)
        *info = NULL;
    bool builtin = strcmp(o->name, ABX_TEMPLATE_CODE_INTERPRETER) == 0 && o->dockerfile_text;
    if (!builtin && (!abx__template_storable(o->name) || abx__template_builtin(o->name)))
        return abx__error_set(err, ABX_EINVAL,
                              "template name '%.64s': lower-case letters, digits, '.', '_', '-' "
                              "(at most 63), not base or code-interpreter-v1 (build that one with "
                              "--builtin)",
                              o->name);
    if (geteuid() != 0)
        return abx__error_set(err, ABX_EPERM,
                              "building a template needs root (its steps run in id-mapped sandboxes)");
    build b = {.o = o, .ctxfd = -1};
    char *text = NULL;
    size_t len = 0;
    int rc = read_dockerfile(o, &text, &len, err);
    if (rc < 0)
        return rc;
    char why[512];
    if (abx__dockerfile_parse(text, len, &b.df, why, sizeof why) < 0) {
        free(text);
        return abx__error_set(err, ABX_EINVAL, "Dockerfile %s", why);
    }
    free(text);
    b.ctxfd = open(o->context ? o->context : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b.ctxfd < 0) {
        abx__dockerfile_free(&b.df);
        return abx__error_set(err, ABX_EINVAL, "the build context %.300s: %s", o->context ? o->context : ".",
                              strerror(errno));
    }
    if ((rc = read_dockerignore(&b, err)) < 0 || (rc = cache_root(b.cache, sizeof b.cache, err)) < 0) {
        abx__ignore_free(b.ignore);
        close(b.ctxfd);
        abx__dockerfile_free(&b.df);
        return rc;
    }
    cache_reconcile(b.cache);
    abx__cgroup_sweep_stale(10);
    if (o->host_network)
        emit(&b, json_pack("{s:s, s:i, s:s}", "event", "note", "step", 0, "text",
                           "warning: RUN steps use the host's network (--network host): they reach its "
                           "loopback services, its LAN and the other sandboxes"));
    snprintf(b.key, sizeof b.key, CACHE_FORMAT);
    b.env = json_object();
    b.args = json_object();
    b.global_args = json_object();
    b.config = json_object();
    b.chain = calloc(b.df.n, sizeof *b.chain);
    if (!b.chain)
        rc = abx__error_set(err, ABX_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < b.df.n; i++) {
        b.step = i + 1;
        rc = one_step(&b, &b.df.steps[i], err);
    }
    if (rc == 0)
        rc = finish(&b, info, err);
    if (b.chain)
        cache_trim(&b);
    free(b.chain);
    if (b.work[0])
        remove_tree(b.work);
    close(b.ctxfd);
    abx__ignore_free(b.ignore);
    json_decref(b.env);
    json_decref(b.args);
    json_decref(b.global_args);
    json_decref(b.config);
    for (size_t i = 0; i < b.nstages; i++) {
        json_decref(b.stages[i].env);
        json_decref(b.stages[i].config);
    }
    abx__dockerfile_free(&b.df);
    return rc;
}

/* The build of a built-in template is one at a time on this machine: a
 * lock file in the cache; *fd gets it (close it to let go). */
static int lock_builtin(const char *name, int *fd, abx_error **err)
{
    char cache[512], lock[600];
    int rc = cache_root(cache, sizeof cache, err);
    if (rc < 0)
        return rc;
    snprintf(lock, sizeof lock, "%s/build-%s.lock", cache, name);
    *fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0 || flock(*fd, LOCK_EX) < 0) {
        rc = abx__error_set(err, ABX_EIO, "locking the build of %s: %s", name, strerror(errno));
        if (*fd >= 0)
            close(*fd);
        return rc;
    }
    return 0;
}

int abx__template_build(const template_build_request *o, json_t **info, abx_error **err)
{
    int lock = -1, rc = 0;
    bool builtin = abx__template_builtin_recipe(o->name) && o->dockerfile_text;
    if (builtin && geteuid() == 0 && (rc = lock_builtin(o->name, &lock, err)) < 0)
        return rc;
    rc = build_template(o, info, err);
    if (lock >= 0)
        close(lock);
    return rc;
}

/* Whether the built-in template name was built from recipe as it is now
 * (template.json's build.recipe): an older abx's template lacks what this
 * one's recipe adds (npm, TypeScript), so it is built again. */
static bool builtin_current(const char *name, const char *recipe)
{
    char root[1024], want[ABX_DIGEST_HEX];
    if (abx__template_root(name, root, sizeof root) < 0 || recipe_digest(recipe, want) < 0)
        return false;
    json_t *doc = abx__template_document(name);
    const char *have = json_string_value(json_object_get(json_object_get(doc, "build"), "recipe"));
    bool same = have && strcmp(have, want) == 0;
    json_decref(doc);
    return same;
}

int abx__template_ensure_builtin(const char *name, abx_error **err)
{
    char root[1024];
    const char *recipe = abx__template_builtin_recipe(name);
    if (!recipe || builtin_current(name, recipe))
        return 0;
    bool stale = abx__template_root(name, root, sizeof root) == 0;
    const char *host = getenv("ABX_CODE_INTERPRETER");
    if (host && strcmp(host, "host") == 0)
        return 0; /* the host's /usr with its kernels, as before templates */
    if (geteuid() != 0)
        return 0; /* unprivileged abx cannot build or use it: the host view */
    int lock = -1;
    int rc = lock_builtin(name, &lock, err); /* another build of it: wait, then use what it made */
    if (rc < 0)
        return rc;
    if (builtin_current(name, recipe)) {
        close(lock);
        return 0;
    }
    fprintf(stderr,
            "abx: building the %s template (%s: a minimal Debian with python3, pip, numpy, pandas, "
            "matplotlib, node, npm and TypeScript; a minute or two, once per machine)...\n",
            name, stale ? "its recipe changed since it was built" : "first use");
    template_build_request o = {.name = name, .dockerfile_text = recipe, .context = "/"};
    rc = build_template(&o, NULL, err);
    if (rc == 0)
        fprintf(stderr, "abx: the %s template is built\n", name);
    close(lock);
    return rc;
}

int abx__template_prune_cache(unsigned long long *freed, abx_error **err)
{
    char cache[512];
    int rc = cache_root(cache, sizeof cache, err);
    if (rc < 0)
        return rc;
    unsigned long long bytes = 0;
    char sub[600];
    const char *parts[] = {"steps", "trees"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(sub, sizeof sub, "%s/%s", cache, parts[i]);
        abx__tree_remove_counted(sub, &bytes);
    }
    *freed = bytes;
    return 0;
}
