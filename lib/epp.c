/* epp.c: the host side of EPP, the exec-plugin protocol
 * (../shared/epp.md): one plugin process per client, JSON-RPC 2.0 lines
 * on its stdin and stdout.
 *
 * Owns: starting a plugin (the digest checked first: a mismatch is E8011
 * and nothing starts; cwd = its directory; a trimmed environment: PATH,
 * LANG and LC_*, ABX_PROVIDER_DATA_DIR and the variables its manifest
 * names; its stderr appended to $ABX_HOME/logs/provider-<id>.log), the
 * initialize handshake (config = providers.<id>.* from config.toml) and
 * its declared features, calls with a per-call timeout (one at a time:
 * the connection's mutex), and shutdown (then SIGTERM, then SIGKILL). A
 * line over 16 MiB, garbage, a crash or a hang ends the connection with a
 * clear error; the next call starts the plugin again. The plugin's own
 * message texts go to its log, never to a caller.
 */
#include "epp.h"
#include "config.h"
#include "error_internal.h"
#include "manifest.h"
#include "plugin_store.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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
#define EPP_SHUTDOWN_GRACE_MS 2000

extern char **environ;

struct abx_epp {
    char id[64];
    pid_t pid;
    int to_fd, from_fd;
    pthread_mutex_t mu;
    long long next_id;
    char *buf;
    size_t len, cap;
    json_t *features;
    bool dead;
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
    json_array_foreach(m->env, i, v) env_add(env, &n, cap, json_string_value(v), getenv(json_string_value(v)));
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

/* ---- lines ---------------------------------------------------------------------- */

static void mark_dead(abx_epp *e)
{
    e->dead = true;
}

/* The next line from the plugin within the deadline, NUL-terminated in
 * e->buf (length *n); -ABX_ETIMEOUT, or -ABX_EPROVIDER (gone, over-long). */
static int read_line(abx_epp *e, uint64_t deadline, size_t *n)
{
    for (;;) {
        char *nl = e->len ? memchr(e->buf, '\n', e->len) : NULL;
        if (nl) {
            *n = (size_t)(nl - e->buf);
            *nl = '\0';
            return 0;
        }
        if (e->len >= EPP_LINE_MAX)
            return -ABX_EPROVIDER;
        uint64_t now = now_ms();
        if (now >= deadline)
            return -ABX_ETIMEOUT;
        struct pollfd p = {.fd = e->from_fd, .events = POLLIN};
        int ready = poll(&p, 1, (int)(deadline - now));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue;
        if (e->cap - e->len < 65536) {
            size_t cap = e->cap ? e->cap * 2 : 131072;
            if (cap > EPP_LINE_MAX + 65536)
                cap = EPP_LINE_MAX + 65536;
            char *grown = cap > e->cap ? realloc(e->buf, cap) : NULL;
            if (!grown)
                return -ABX_EPROVIDER;
            e->buf = grown;
            e->cap = cap;
        }
        ssize_t got = read(e->from_fd, e->buf + e->len, e->cap - e->len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -ABX_EPROVIDER;
        e->len += (size_t)got;
    }
}

static void consume_line(abx_epp *e, size_t n)
{
    memmove(e->buf, e->buf + n + 1, e->len - n - 1);
    e->len -= n + 1;
}

static int write_msg(abx_epp *e, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    if (!text)
        return -ABX_ENOMEM;
    size_t n = strlen(text);
    text[n] = '\n';
    int rc = abx__write_all(e->to_fd, text, n + 1) < 0 ? -ABX_EPROVIDER : 0;
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
    return abx__error_set(err, ABX_EPROVIDER, "provider '%s': %s failed (the plugin's own log says why)", e->id,
                          method);
}

int abx__epp_call(abx_epp *e, const char *method, json_t *params, unsigned timeout_ms, json_t **result,
                  abx_error **err)
{
    *result = NULL;
    pthread_mutex_lock(&e->mu);
    long long id = ++e->next_id;
    int rc = e->dead ? -ABX_EPROVIDER : 0;
    json_t *msg = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)id, "method", method,
                            "params", params ? json_incref(params) : json_object());
    if (rc == 0)
        rc = write_msg(e, msg);
    json_decref(msg);
    uint64_t deadline = now_ms() + (timeout_ms ? timeout_ms : 60000);
    while (rc == 0) {
        size_t n = 0;
        rc = read_line(e, deadline, &n);
        if (rc < 0)
            break;
        json_t *reply = json_loadb(e->buf, n, 0, NULL);
        consume_line(e, n);
        if (!json_is_object(reply)) {
            json_decref(reply);
            rc = -ABX_EPROVIDER; /* garbage on the protocol channel */
            break;
        }
        json_t *rid = json_object_get(reply, "id");
        if (!rid || json_is_null(rid)) { /* a notification (log, a stray exec event): not for this call */
            json_decref(reply);
            continue;
        }
        if (!json_is_integer(rid) || json_integer_value(rid) != id) {
            json_decref(reply);
            continue; /* an answer to a call that timed out earlier */
        }
        json_t *error = json_object_get(reply, "error");
        if (error) {
            rc = plugin_error(e, method, error, err);
        } else if (!json_object_get(reply, "result")) {
            rc = -ABX_EPROVIDER;
        } else {
            *result = json_incref(json_object_get(reply, "result"));
        }
        json_decref(reply);
        if (error) {
            pthread_mutex_unlock(&e->mu);
            return rc;
        }
        break;
    }
    if (rc == -ABX_ETIMEOUT || rc == -ABX_EPROVIDER) {
        mark_dead(e); /* a hung or broken plugin is not asked again: the next client starts it anew */
        rc = rc == -ABX_ETIMEOUT
                 ? abx__error_set(err, ABX_ETIMEOUT, "provider '%s' did not answer %s in time", e->id, method)
                 : abx__error_set(err, ABX_EPROVIDER,
                                  "provider '%s' broke the protocol during %s (it exited, or wrote something that is "
                                  "not one JSON-RPC message per line of at most 16 MiB)",
                                  e->id, method);
    } else if (rc < 0) {
        rc = abx__error_set(err, -rc, "provider '%s': %s", e->id, method);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

bool abx__epp_has(const abx_epp *e, const char *capability)
{
    size_t i;
    json_t *f;
    json_array_foreach(e->features, i, f) if (json_is_string(f) && strcmp(json_string_value(f), capability) == 0) return true;
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
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || (log_fd >= 0 && dup2(log_fd, 2) < 0) || chdir(dir) < 0)
            _exit(127);
        execvpe(argv[0], (char *const *)argv, env);
        _exit(127);
    }
    int e_no = errno;
    close(in[0]);
    close(out[1]);
    if (log_fd >= 0)
        close(log_fd);
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
    json_t *index = NULL;
    int rc = abx__plugin_index_load(&index, err);
    if (rc < 0)
        return rc;
    json_t *entry = json_object_get(index, id);
    char state[16], dir[640], data_dir[640];
    if (!abx__provider_id_valid(id) || !entry) {
        json_decref(index);
        return abx__error_set(err, ABX_EPROVIDER, "no provider '%.64s' is installed (abx provider list)", id);
    }
    /* the digest first: a changed plugin is never started */
    rc = abx__plugin_check(id, entry, state, sizeof state, err);
    bool linked = json_is_true(json_object_get(entry, "linked"));
    json_decref(index);
    if (rc < 0)
        return rc;
    if (linked)
        fprintf(stderr, "abx: warning: provider %s is a --link install (development): its files are not checked\n", id);
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    abx__plugin_path("provider-data", id, data_dir, sizeof data_dir, NULL);
    char parent[640];
    abx__plugin_path("provider-data", NULL, parent, sizeof parent, NULL);
    abx__mkdir_exist_ok(parent, 0700);
    abx__mkdir_exist_ok(data_dir, 0700);
    char path[700], *text = calloc(1, 65537);
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    FILE *f = text ? fopen(path, "re") : NULL;
    if (f) {
        size_t got = fread(text, 1, 65536, f);
        (void)got;
        fclose(f);
    }
    abx_manifest m;
    rc = f ? abx__manifest_parse(text, &m, err) : abx__error_set(err, ABX_EPROVIDER, "provider '%s': no manifest", id);
    free(text);
    if (rc < 0)
        return rc;
    if (strcmp(m.kind, "exec") != 0) {
        abx__manifest_clear(&m);
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' is a rest plugin: not supported yet", id);
    }
    abx_epp *e = calloc(1, sizeof *e);
    if (!e) {
        abx__manifest_clear(&m);
        return abx__error_set(err, ABX_ENOMEM, "provider");
    }
    snprintf(e->id, sizeof e->id, "%s", id);
    pthread_mutex_init(&e->mu, NULL);
    e->to_fd = e->from_fd = -1;
    rc = spawn(e, &m, dir, data_dir, err);
    abx__manifest_clear(&m);
    if (rc == 0) {
        json_t *params = json_pack("{s:s, s:{s:s, s:s}, s:o, s:s}", "protocol_version", "1", "host", "name", "abx",
                                   "version", abx_version(), "config", plugin_config(id), "data_dir", data_dir);
        json_t *result = NULL;
        rc = abx__epp_call(e, "initialize", params, EPP_INIT_TIMEOUT_MS, &result, err);
        json_decref(params);
        json_t *features = json_object_get(result, "features");
        if (rc == 0 && !json_is_array(features))
            rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s': initialize answered without features", id);
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

void abx__epp_stop(abx_epp *e)
{
    if (!e)
        return;
    if (e->pid > 0) {
        if (!e->dead) {
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
    if (e->to_fd >= 0)
        close(e->to_fd);
    if (e->from_fd >= 0)
        close(e->from_fd);
    json_decref(e->features);
    free(e->buf);
    pthread_mutex_destroy(&e->mu);
    free(e);
}
