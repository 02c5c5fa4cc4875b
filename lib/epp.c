/* epp.c: the host side of EPP, the exec-plugin protocol
 * (../shared/epp.md): one plugin process per client, JSON-RPC 2.0 lines
 * on its stdin and stdout.
 *
 * Owns: starting a plugin (the digest checked first: a mismatch is E8011
 * and nothing starts; cwd = its directory; a trimmed environment: PATH,
 * LANG and LC_*, ABX_PROVIDER_DATA_DIR and the variables its manifest
 * names; its stderr appended to $ABX_HOME/logs/provider-<id>.log), the
 * initialize handshake (config = providers.<id>.* from config.toml) and
 * its declared features, calls (several in flight from any threads: one
 * reader thread matches answers to waiting calls by id and hands exec
 * events to epp_exec.c) with a per-call timeout (providers.<id>.
 * request_timeout, 30 s), and shutdown (then SIGTERM, then SIGKILL). A
 * line over 16 MiB, garbage, a crash, a broken exec stream or a plugin
 * silent for a whole timeout ends the connection with a clear error; the
 * provider starts the plugin again at its next call. The plugin's own
 * message texts (and its log notifications) go to its log, never to a
 * caller.
 */
#include "epp.h"
#include "buf.h"
#include "epp_exec.h"
#include "config.h"
#include "error_internal.h"
#include "manifest.h"
#include "plugin_store.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EPP_LINE_MAX (16u << 20)
#define EPP_INIT_TIMEOUT_MS 10000
#define EPP_REQUEST_TIMEOUT_MS 30000
#define EPP_SHUTDOWN_GRACE_MS 2000

extern char **environ;

typedef struct epp_pending {
    long long id;
    json_t *reply; /* set by the reader */
    struct epp_pending *next;
} epp_pending;

struct abx_epp {
    char id[64];
    pid_t pid;
    int to_fd, from_fd, log_fd;
    int wake[2]; /* stop -> the reader */
    atomic_int refs;
    pthread_t reader;
    bool reader_running;
    pthread_mutex_t write_mu; /* one message at a time on the plugin's stdin */
    pthread_mutex_t mu;       /* what follows */
    pthread_cond_t answered;  /* an answer came, or the plugin is gone */
    long long next_id;
    epp_pending *pending; /* calls waiting (on their callers' stacks) */
    bool dead;
    char why[200];
    uint64_t heard_ms; /* when the plugin last wrote a line */
    unsigned request_timeout_ms;
    json_t *features;
    abx_epp_execs *execs;
    char run_dir[640]; /* where it runs: its verified copy (run_copied), or a --link install's directory */
    bool run_copied;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the plugin's environment --------------------------------------------------- */

static void env_add(char **env, size_t *n, size_t cap, const char *name, const char *value)
{
    if (!value || *n + 1 >= cap)
        return;
    size_t len = strlen(name) + strlen(value) + 2;
    char *kv = malloc(len);
    if (!kv)
        return;
    snprintf(kv, len, "%s=%s", name, value);
    env[(*n)++] = kv;
}

/* PATH, LANG and LC_*, the data directory and what the manifest names:
 * nothing else of abx's environment (a secret in it stays there). */
static char **trimmed_env(const abx_manifest *m, const char *data_dir)
{
    size_t cap = 64 + json_array_size(m->env), n = 0;
    char **env = calloc(cap, sizeof *env);
    if (!env)
        return NULL;
    env_add(env, &n, cap, "PATH", getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "LANG=", 5) == 0 || strncmp(*e, "LC_", 3) == 0)
            if (n + 1 < cap)
                env[n++] = strdup(*e);
    env_add(env, &n, cap, "ABX_PROVIDER_DATA_DIR", data_dir);
    size_t i;
    json_t *v;
    json_array_foreach(m->env, i, v)
        env_add(env, &n, cap, json_string_value(v), getenv(json_string_value(v)));
    return env;
}

static void free_env(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* providers.<id>.* from config.toml, as {key: value}. */
static json_t *plugin_config(const char *id)
{
    json_t *cfg = json_object();
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (kvs && abx__config_load(kvs, NULL) == 0) {
        char prefix[96];
        int n = snprintf(prefix, sizeof prefix, "providers.%s.", id);
        for (size_t i = 0; i < kvs->n; i++)
            if (strncmp(kvs->items[i].key, prefix, (size_t)n) == 0 && !strchr(kvs->items[i].key + n, '.'))
                json_object_set_new(cfg, kvs->items[i].key + n, json_string(kvs->items[i].value));
        explicit_bzero(kvs, sizeof *kvs);
    }
    free(kvs);
    return cfg;
}

/* providers.<id>.request_timeout (seconds, 1..3600), else 30 s. */
static unsigned request_timeout_ms(const char *id)
{
    json_t *cfg = plugin_config(id);
    const char *v = json_string_value(json_object_get(cfg, "request_timeout"));
    char *end = NULL;
    long s = v ? strtol(v, &end, 10) : 0;
    bool valid = v && *v && !*end && s >= 1 && s <= 3600; /* v lives in cfg: read before it goes */
    json_decref(cfg);
    return valid ? (unsigned)s * 1000u : EPP_REQUEST_TIMEOUT_MS;
}

/* ---- the reader: one thread per plugin reads every line it writes ---------------- */

/* The plugin is gone or broke the protocol: every call waiting and every
 * exec not yet ended fails with why; no call is sent to it again. */
static void gone(abx_epp *e, const char *why)
{
    pthread_mutex_lock(&e->mu);
    if (!e->dead) {
        e->dead = true;
        snprintf(e->why, sizeof e->why, "%s", why);
    }
    pthread_cond_broadcast(&e->answered);
    pthread_mutex_unlock(&e->mu);
    abx__epp_execs_lost(e->execs, why);
}

static void log_line(abx_epp *e, json_t *params)
{
    if (e->log_fd < 0)
        return;
    char *text = NULL;
    int n = asprintf(&text, "[log %.16s] %.4000s\n",
                     json_string_value(json_object_get(params, "level")) ?: "info",
                     json_string_value(json_object_get(params, "message")) ?: "");
    if (n > 0 && abx__write_all(e->log_fd, text, (size_t)n) < 0)
        n = -1;
    free(text);
}

/* One line from the plugin: an answer to a waiting call, or a notification.
 * Returns -1 (why filled) when the line breaks the protocol. */
static int dispatch(abx_epp *e, const char *line, size_t n, char *why, size_t why_len)
{
    json_t *msg = json_loadb(line, n, 0, NULL);
    if (!json_is_object(msg)) {
        json_decref(msg);
        snprintf(why, why_len, "wrote a line that is not a JSON object");
        return -1;
    }
    int rc = 0;
    json_t *rid = json_object_get(msg, "id");
    const char *method = json_string_value(json_object_get(msg, "method"));
    if (rid && !json_is_null(rid)) {
        /* abx numbers its calls 1, 2, ...: an answer to another id answers
         * nothing abx asked, a second answer to a waiting call contradicts
         * the first; an answer nobody waits for any more (a call that timed
         * out) is dropped */
        json_int_t id = json_is_integer(rid) ? json_integer_value(rid) : 0;
        pthread_mutex_lock(&e->mu);
        if (id < 1 || id > e->next_id) {
            snprintf(why, why_len, "answered a call abx never made");
            rc = -1;
        }
        for (epp_pending *p = e->pending; rc == 0 && p; p = p->next) {
            if (id != p->id)
                continue;
            if (p->reply) {
                snprintf(why, why_len, "answered call %lld twice", (long long)id);
                rc = -1;
            } else {
                p->reply = json_incref(msg);
            }
        }
        pthread_cond_broadcast(&e->answered);
        pthread_mutex_unlock(&e->mu);
    } else if (method && strcmp(method, "log") == 0) {
        log_line(e, json_object_get(msg, "params"));
    } else if (method && (strcmp(method, "exec.output") == 0 || strcmp(method, "exec.exit") == 0)) {
        rc = abx__epp_execs_notify(e->execs, method, json_object_get(msg, "params"), why, why_len);
    }
    json_decref(msg);
    return rc;
}

static void *reader_main(void *arg)
{
    abx_epp *e = arg;
    abx_buf in;
    abx__buf_init(&in, EPP_LINE_MAX + 65536);
    char why[200] = "exited";
    for (;;) {
        char *nl;
        while ((nl = in.len ? memchr(in.data, '\n', in.len) : NULL) != NULL) { /* every whole line first */
            size_t n = (size_t)(nl - in.data);
            pthread_mutex_lock(&e->mu);
            e->heard_ms = now_ms();
            pthread_mutex_unlock(&e->mu);
            int bad = n ? dispatch(e, in.data, n, why, sizeof why) : 0;
            abx__buf_consume(&in, n + 1);
            if (bad < 0)
                goto out;
        }
        if (in.len >= EPP_LINE_MAX) {
            snprintf(why, sizeof why, "wrote a line longer than 16 MiB");
            goto out;
        }
        struct pollfd p[2] = {{.fd = e->from_fd, .events = POLLIN}, {.fd = e->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, sizeof why, "could not be read");
            goto out;
        }
        if (p[1].revents) {
            snprintf(why, sizeof why, "was stopped");
            goto out;
        }
        char *room = abx__buf_room(&in, 65536);
        if (!room) {
            snprintf(why, sizeof why, "wrote more than abx could hold");
            goto out;
        }
        ssize_t got = read(e->from_fd, room, 65536);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            goto out;
        abx__buf_added(&in, (size_t)got);
    }
out:
    abx__buf_free(&in);
    gone(e, why);
    return NULL;
}

static int write_msg(abx_epp *e, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return -ABX_ENOMEM;
    size_t n = strlen(text);
    text[n] = '\n';
    pthread_mutex_lock(&e->write_mu);
    int rc = abx__write_all_nosigpipe(e->to_fd, text, n + 1) < 0 ? -ABX_EPROVIDER : 0;
    pthread_mutex_unlock(&e->write_mu);
    free(text);
    return rc;
}

/* ---- calls ------------------------------------------------------------------------ */

/* The error a plugin's JSON-RPC error becomes: its data.abx_code when it
 * names one, -32601 as E8004, else E8015; never the plugin's message. */
static int plugin_error(const abx_epp *e, const char *method, json_t *error, abx_error **err)
{
    json_int_t code = json_integer_value(json_object_get(error, "code"));
    const char *named = json_string_value(json_object_get(json_object_get(error, "data"), "abx_code"));
    if (code == -32601)
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' does not implement %s", e->id, method);
    if (named && strlen(named) == 5 && named[0] == 'E') {
        int n = (int)strtol(named + 1, NULL, 10);
        if (n == ABX_ENOTFOUND) /* exactly as any unknown id answers */
            return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox");
        if (n > 8000 && abx_err_name(n) && strcmp(abx_err_name(n), named) == 0)
            return abx__error_set(err, n, "provider '%s': %s failed", e->id, method);
    }
    return abx__error_set(err, ABX_EPROVIDER, "provider '%s': %s failed (the plugin's own log says why)",
                          e->id, method);
}

static void unlink_pending(abx_epp *e, epp_pending *p)
{
    for (epp_pending **at = &e->pending; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            break;
        }
}

/* The answer to call p within timeout_ms (locked on entry and exit): 0 and
 * p->reply, or -ABX_ETIMEOUT / -ABX_EPROVIDER. A plugin that said nothing
 * at all for a whole timeout is taken as hung: it is not asked again. */
static int await_answer(abx_epp *e, epp_pending *p, unsigned timeout_ms)
{
    struct timespec until;
    abx__deadline_after(&until, timeout_ms);
    uint64_t asked = now_ms();
    while (!p->reply && !e->dead)
        if (pthread_cond_timedwait(&e->answered, &e->mu, &until) != 0)
            break;
    if (p->reply)
        return 0;
    if (e->dead)
        return -ABX_EPROVIDER;
    if (e->heard_ms <= asked) {
        e->dead = true;
        snprintf(e->why, sizeof e->why, "did not answer for %u s", timeout_ms / 1000);
    }
    return -ABX_ETIMEOUT;
}

int abx__epp_call(abx_epp *e, const char *method, json_t *params, unsigned timeout_ms, json_t **result,
                  abx_error **err)
{
    *result = NULL;
    epp_pending p = {0};
    pthread_mutex_lock(&e->mu);
    p.id = ++e->next_id;
    bool dead = e->dead;
    if (!dead) {
        p.next = e->pending;
        e->pending = &p;
    }
    pthread_mutex_unlock(&e->mu);
    int rc = dead ? -ABX_EPROVIDER : 0;
    json_t *msg = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)p.id, "method",
                            method, "params", params ? json_incref(params) : json_object());
    if (rc == 0)
        rc = write_msg(e, msg);
    json_decref(msg);
    pthread_mutex_lock(&e->mu);
    if (rc == 0)
        rc = await_answer(e, &p, timeout_ms ? timeout_ms : e->request_timeout_ms);
    unlink_pending(e, &p);
    char why[sizeof e->why];
    snprintf(why, sizeof why, "%s", e->why);
    pthread_mutex_unlock(&e->mu);
    if (rc == 0) {
        json_t *error = json_object_get(p.reply, "error");
        if (error)
            rc = plugin_error(e, method, error, err);
        else if (!json_object_get(p.reply, "result"))
            rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered %s with neither result nor error",
                                e->id, method);
        else
            *result = json_incref(json_object_get(p.reply, "result"));
        json_decref(p.reply);
        return rc;
    }
    if (rc == -ABX_ETIMEOUT)
        return abx__error_set(err, ABX_ETIMEOUT, "provider '%s' did not answer %s in time (%u s)", e->id,
                              method, (timeout_ms ? timeout_ms : e->request_timeout_ms) / 1000);
    if (rc == -ABX_EPROVIDER)
        return abx__error_set(err, ABX_EPROVIDER, "provider '%s' broke the protocol during %s: it %s", e->id,
                              method, why[0] ? why : "exited");
    return abx__error_set(err, -rc, "provider '%s': %s", e->id, method);
}

bool abx__epp_dead(abx_epp *e)
{
    pthread_mutex_lock(&e->mu);
    bool dead = e->dead;
    pthread_mutex_unlock(&e->mu);
    return dead;
}

abx_epp_execs *abx__epp_execs(abx_epp *e)
{
    return e->execs;
}

bool abx__epp_has(const abx_epp *e, const char *capability)
{
    size_t i;
    json_t *f;
    json_array_foreach(e->features, i,
                       f) if (json_is_string(f) && strcmp(json_string_value(f), capability) == 0) return true;
    return false;
}

json_t *abx__epp_features(const abx_epp *e)
{
    return e->features;
}

const char *abx__epp_id(const abx_epp *e)
{
    return e->id;
}

/* ---- start and stop ------------------------------------------------------------------ */

static int spawn(abx_epp *e, const abx_manifest *m, const char *dir, const char *data_dir, abx_error **err)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "pipe");
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return abx__error_errno(err, ABX_ESYS, errno, "pipe");
    }
    char logs[640], log_path[720];
    abx__plugin_path("logs", NULL, logs, sizeof logs, NULL);
    abx__mkdir_exist_ok(logs, 0700);
    snprintf(log_path, sizeof log_path, "%s/provider-%s.log", logs, e->id);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    char **env = trimmed_env(m, data_dir);
    size_t argc = json_array_size(m->command);
    const char **argv = calloc(argc + 1, sizeof *argv);
    for (size_t i = 0; argv && i < argc; i++)
        argv[i] = json_string_value(json_array_get(m->command, i));
    pid_t pid = env && argv ? fork() : -1;
    if (pid == 0) {
        /* the plugin starts with no signal blocked or ignored (an MCP server
         * blocks some for its own threads): its commands must be killable */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
            if (sig != SIGKILL && sig != SIGSTOP)
                signal(sig, SIG_DFL);
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || (log_fd >= 0 && dup2(log_fd, 2) < 0) ||
            chdir(dir) < 0)
            _exit(127);
        execvpe(argv[0], (char *const *)argv, env);
        _exit(127);
    }
    int e_no = errno;
    close(in[0]);
    close(out[1]);
    e->log_fd = log_fd; /* the plugin's log notifications go there too */
    free(argv);
    free_env(env);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return abx__error_errno(err, ABX_ESYS, e_no, "starting the provider");
    }
    e->pid = pid;
    e->to_fd = in[1];
    e->from_fd = out[0];
    return 0;
}

int abx__epp_start(const char *id, abx_epp **out, abx_error **err)
{
    *out = NULL;
    abx_manifest m;
    char dir[640], data_dir[640], parent[640];
    bool copied = false;
    /* the digest first, computed over the copy that runs: a changed plugin is never started */
    int rc = abx__plugin_stage(id, &m, dir, sizeof dir, &copied, err);
    if (rc < 0)
        return rc;
    abx__plugin_path("provider-data", id, data_dir, sizeof data_dir, NULL);
    abx__plugin_path("provider-data", NULL, parent, sizeof parent, NULL);
    abx__mkdir_exist_ok(parent, 0700);
    abx__mkdir_exist_ok(data_dir, 0700);
    if (strcmp(m.kind, "exec") != 0) {
        abx__manifest_clear(&m);
        abx__plugin_unstage(dir, copied);
        return abx__error_set(err, ABX_EPROVIDER,
                              "provider '%s' is a rest plugin: it has no process to start", id);
    }
    abx_epp *e = calloc(1, sizeof *e);
    if (!e) {
        abx__manifest_clear(&m);
        abx__plugin_unstage(dir, copied);
        return abx__error_set(err, ABX_ENOMEM, "provider");
    }
    snprintf(e->id, sizeof e->id, "%s", id);
    snprintf(e->run_dir, sizeof e->run_dir, "%s", dir);
    e->run_copied = copied;
    atomic_init(&e->refs, 1);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->write_mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&e->answered, &attr);
    pthread_condattr_destroy(&attr);
    e->to_fd = e->from_fd = e->log_fd = e->wake[0] = e->wake[1] = -1;
    e->request_timeout_ms = request_timeout_ms(id);
    e->execs = abx__epp_execs_new();
    rc = e->execs ? 0 : abx__error_set(err, ABX_ENOMEM, "provider");
    if (rc == 0 && pipe2(e->wake, O_CLOEXEC) < 0)
        rc = abx__error_errno(err, ABX_ESYS, errno, "pipe");
    if (rc == 0)
        rc = spawn(e, &m, dir, data_dir, err);
    abx__manifest_clear(&m);
    if (rc == 0 && pthread_create(&e->reader, NULL, reader_main, e) != 0)
        rc = abx__error_set(err, ABX_ESYS, "starting the provider's reader");
    e->reader_running = rc == 0;
    if (rc == 0) {
        json_t *params =
            json_pack("{s:s, s:{s:s, s:s}, s:o, s:s}", "protocol_version", "1", "host", "name", "abx",
                      "version", abx_version(), "config", plugin_config(id), "data_dir", data_dir);
        json_t *result = NULL;
        rc = abx__epp_call(e, "initialize", params, EPP_INIT_TIMEOUT_MS, &result, err);
        json_decref(params);
        json_t *features = json_object_get(result, "features");
        if (rc == 0 && !json_is_array(features))
            rc =
                abx__error_set(err, ABX_EPROVIDER, "provider '%s': initialize answered without features", id);
        if (rc == 0)
            e->features = json_incref(features);
        json_decref(result);
    }
    if (rc < 0) {
        abx__epp_stop(e);
        return rc;
    }
    *out = e;
    return 0;
}

abx_epp *abx__epp_ref(abx_epp *e)
{
    atomic_fetch_add(&e->refs, 1);
    return e;
}

/* The plugin process: asked to shut down, then its stdin closed; still
 * there after the grace, SIGTERM, then SIGKILL. */
static void end_process(abx_epp *e)
{
    if (!abx__epp_dead(e)) {
        json_t *r = NULL;
        abx__epp_call(e, "shutdown", NULL, EPP_SHUTDOWN_GRACE_MS, &r, NULL);
        json_decref(r);
    }
    if (e->to_fd >= 0)
        close(e->to_fd);
    e->to_fd = -1;
    uint64_t deadline = now_ms() + EPP_SHUTDOWN_GRACE_MS;
    int status;
    bool reaped = false;
    while (!reaped && now_ms() < deadline) {
        reaped = waitpid(e->pid, &status, WNOHANG) == e->pid;
        if (!reaped) {
            struct timespec ts = {0, 20 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    if (!reaped) {
        kill(e->pid, SIGTERM);
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
        if (waitpid(e->pid, &status, WNOHANG) != e->pid) {
            kill(e->pid, SIGKILL);
            waitpid(e->pid, &status, 0);
        }
    }
}

void abx__epp_stop(abx_epp *e)
{
    if (!e || atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (e->pid > 0)
        end_process(e);
    if (e->reader_running) { /* the reader may still wait on a pipe a child of the plugin holds open */
        if (abx__write_all(e->wake[1], "x", 1) < 0)
            pthread_cancel(e->reader);
        pthread_join(e->reader, NULL);
    }
    int fds[] = {e->to_fd, e->from_fd, e->log_fd, e->wake[0], e->wake[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    abx__plugin_unstage(e->run_dir, e->run_copied); /* the plugin has ended: its copy goes */
    json_decref(e->features);
    abx__epp_execs_free(e->execs);
    pthread_cond_destroy(&e->answered);
    pthread_mutex_destroy(&e->write_mu);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
