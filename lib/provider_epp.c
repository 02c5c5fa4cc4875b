/* provider_epp.c: the provider behind every installed exec plugin
 * (provider.h on top of epp.c). One plugin process per client, started at
 * the first call that needs it.
 *
 * Owns: mapping abx's operations onto EPP methods, gated by the features
 * the plugin declared (an undeclared one is E8004 answered here: the
 * method is never sent): sandbox.create / connect (sandbox.get when
 * connect is not implemented) / get / list / set_timeout / kill, and
 * exec.run for a sandbox without a data plane. A SandboxRecord with an
 * http(s) envd_url hands that sandbox's files and processes to abx's envd
 * client (with envd_access_token): the plugin sees no more of them.
 * Sandbox ids are "<plugin id>:<the plugin's sandbox_id>".
 */
#include "provider.h"
#include "tenant.h"
#include "parse.h"
#include "b64.h"
#include "capbuf.h"
#include "bounds.h"
#include "epp.h"
#include "epp_exec.h"
#include "error_internal.h"
#include "plugin_store.h"
#include "manifest.h"
#include "sysutil.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct epp_client {
    char id[64];
    pthread_mutex_t mu; /* epp: calls come from any thread (an MCP server's) */
    abx_epp *epp;       /* NULL until the first call; replaced when it dies */
} epp_client;

typedef struct epp_sandbox {
    abx_client *client; /* a reference (abx__client_ref): the plugin's process lives in it */
    char sandbox_id[128];
} epp_sandbox;

int abx__provider_epp_attach(abx_client *c, const char *id, abx_error **err)
{
    json_t *index = NULL;
    int rc = abx__plugin_index_load(&index, err);
    if (rc < 0)
        return rc;
    bool installed = json_object_get(index, id) != NULL;
    json_decref(index);
    if (!installed)
        return abx__error_set(
            err, ABX_EPROVIDER,
            "provider '%.32s' (from %s) is neither built in nor installed (abx provider list)", id,
            c->source);
    abx_manifest m;
    rc = abx__plugin_manifest_verified(id, &m, err);
    if (rc < 0)
        return rc;
    bool rest = strcmp(m.kind, "rest") == 0;
    if (rest) /* an E2B-protocol service: no process of its own */
        rc = abx__provider_rest_attach(c, &m, err);
    abx__manifest_clear(&m);
    if (rest)
        return rc;
    epp_client *ec = calloc(1, sizeof *ec);
    if (!ec)
        return abx__error_set(err, ABX_ENOMEM, "provider");
    snprintf(ec->id, sizeof ec->id, "%s", id);
    pthread_mutex_init(&ec->mu, NULL);
    c->ops = &abx__provider_epp;
    c->state = ec;
    return 0;
}

static void epp_free_state(void *state)
{
    epp_client *ec = state;
    if (!ec)
        return;
    abx__epp_stop(ec->epp);
    pthread_mutex_destroy(&ec->mu);
    free(ec);
}

/* The client's plugin (a reference: abx__epp_stop), started now if it is
 * not running or went away, and the capability the call needs. */
static int plugin(abx_client *c, const char *capability, abx_epp **out, abx_error **err)
{
    epp_client *ec = c->state;
    abx_epp *old = NULL;
    int rc = 0;
    pthread_mutex_lock(&ec->mu);
    if (ec->epp && abx__epp_dead(ec->epp)) {
        old = ec->epp;
        ec->epp = NULL;
    }
    if (!ec->epp)
        rc = abx__epp_start(ec->id, &ec->epp, err);
    abx_epp *e = rc == 0 ? abx__epp_ref(ec->epp) : NULL;
    pthread_mutex_unlock(&ec->mu);
    abx__epp_stop(old);
    if (rc == 0 && capability && !abx__epp_has(e, capability)) {
        abx__epp_stop(e);
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' did not declare %s", ec->id, capability);
    }
    *out = e;
    return rc;
}

/* A call (params taken). A plugin that broke down is replaced at the next. */
static int call(abx_client *c, const char *capability, const char *method, json_t *params, json_t **result,
                abx_error **err)
{
    abx_epp *e = NULL;
    int rc = plugin(c, capability, &e, err);
    if (rc == 0)
        rc = abx__epp_call(e, method, params, 0, result, err);
    abx__epp_stop(e);
    json_decref(params);
    return rc;
}

static epp_sandbox *epp_of(abx_sandbox *s)
{
    return s->impl;
}

static void epp_free_impl(void *impl)
{
    epp_sandbox *es = impl;
    if (es)
        abx_client_free(es->client);
    free(es);
}

/* A handle from a SandboxRecord: envd when the record hands one over. */
/* The sandbox_id of a plugin's record, when it is one abx can use: not
 * empty, short, printable, without '/' or spaces, and (when asked is not
 * NULL) the one asked for. NULL otherwise. */
static const char *record_id(json_t *record, const char *asked)
{
    const char *sid = json_string_value(json_object_get(record, "sandbox_id"));
    if (!sid || !*sid || strlen(sid) >= sizeof((epp_sandbox *)0)->sandbox_id)
        return NULL;
    for (const char *p = sid; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f || *p == '/')
            return NULL;
    return asked && strcmp(sid, asked) != 0 ? NULL : sid;
}

static int unusable_id(abx_client *c, abx_error **err)
{
    return abx__error_set(err, ABX_EPROVIDER,
                          "provider '%s' answered without a usable sandbox_id (empty, malformed, or "
                          "not the one asked for)",
                          ((epp_client *)c->state)->id);
}

/* A handle for the sandbox record describes (asked: the id asked for, or
 * NULL at create). */
static int handle_from(abx_client *c, json_t *record, const char *asked, abx_sandbox **out, abx_error **err)
{
    const char *sid = record_id(record, asked);
    epp_client *ec = c->state;
    if (!sid)
        return unusable_id(c, err);
    char qualified[200];
    snprintf(qualified, sizeof qualified, "%s:%s", ec->id, sid);
    abx_sandbox *s = abx__sandbox_new(&abx__provider_epp, qualified);
    epp_sandbox *es = s ? calloc(1, sizeof *es) : NULL;
    if (!es) {
        free(s);
        return abx__error_set(err, ABX_ENOMEM, "sandbox handle");
    }
    es->client = abx__client_ref(c);
    snprintf(es->sandbox_id, sizeof es->sandbox_id, "%s", sid);
    s->impl = es;
    json_t *meta = json_object_get(record, "metadata"); /* whose it is, its notes */
    if (json_is_object(meta))
        abx__remote_meta_take(meta, s->tenant, &s->notes);
    const char *url = json_string_value(json_object_get(record, "envd_url"));
    bool envd = url && (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0);
    abx__envd_init(&s->envd, envd ? url : "", NULL,
                   envd ? json_string_value(json_object_get(record, "envd_access_token")) : NULL);
    s->data = envd ? &abx__data_envd : &abx__data_plugin; /* no envd: the plugin's own methods */
    *out = s;
    return 0;
}

static int epp_connect(abx_client *c, const char *id, abx_sandbox **out, abx_error **err)
{
    json_t *record = NULL;
    abx_error *first = NULL;
    int rc = call(c, "sandbox.lifecycle", "sandbox.connect", json_pack("{s:s}", "sandbox_id", id), &record,
                  &first);
    if (rc == -ABX_ENOTSUP && abx_error_code(first) == ABX_ENOTSUP) { /* connect is optional: get */
        abx_error_free(first);
        first = NULL;
        rc = call(c, "sandbox.lifecycle", "sandbox.get", json_pack("{s:s}", "sandbox_id", id), &record, err);
    } else if (err) {
        *err = first;
    } else {
        abx_error_free(first);
    }
    if (rc == 0)
        rc = handle_from(c, record, id, out, err);
    json_decref(record);
    return rc;
}

static json_t *null_or_int(unsigned v)
{
    return v ? json_integer(v) : json_null();
}

static json_t *pairs_or_null(const char *const *pairs, const char *field, bool env_names, abx_error **err,
                             int *rc)
{
    if (!pairs)
        return json_null();
    json_t *o = json_object();
    *rc = abx__pairs_to_object(pairs, o, field, env_names, err);
    return o;
}

static int epp_create(abx_client *c, const abx_create_options *o, abx_sandbox **out, abx_error **err)
{
    int rc = 0;
    json_t *envs = pairs_or_null(o ? o->envs : NULL, "envs", true, err, &rc);
    json_t *meta = rc == 0 ? pairs_or_null(o ? o->metadata : NULL, "metadata", false, err, &rc) : json_null();
    bool tagged = c->tenant[0] || (o && o->notes_json);
    if (rc == 0 && tagged && json_is_null(meta)) {
        json_decref(meta);
        meta = json_object();
    }
    if (rc == 0 && json_is_object(meta))
        rc = abx__remote_meta_put(c, o, meta, err);
    if (rc < 0) {
        json_decref(envs);
        json_decref(meta);
        return rc;
    }
    json_t *params = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:n, s:n, s:n}", "template",
                               o && o->template_id ? json_string(o->template_id) : json_null(), "timeout",
                               null_or_int(o ? o->timeout_s : 0), "metadata", meta, "envs", envs, "cpu",
                               null_or_int(o ? o->cpu_count : 0), "memory", null_or_int(o ? o->memory_mb : 0),
                               "disk", "gpu", "request_timeout");
    if (o && o->options && o->options[0]) { /* options only when the caller set them */
        json_t *opts = json_object();
        rc = abx__pairs_to_object(o->options, opts, "--opt", false, err);
        const char *k;
        json_t *v;
        json_object_foreach(opts, k, v)
        {
            if (rc == 0 && abx__plugin_config_secret(((epp_client *)c->state)->id, k))
                rc = abx__error_set(
                    err, ABX_EINVAL,
                    "--opt %s: a secret of this provider; set it with 'abx config set providers.%s.%s' "
                    "(read from stdin), never on the command line",
                    k, ((epp_client *)c->state)->id, k);
        }
        json_object_set_new(params, "options", opts);
        if (rc < 0) {
            json_decref(params);
            return rc;
        }
    }
    json_t *record = NULL;
    rc = call(c, "sandbox.lifecycle", "sandbox.create", params, &record, err);
    if (rc == 0)
        rc = handle_from(c, record, NULL, out, err);
    json_decref(record);
    if (rc == 0 && o && o->notes_json) {
        free((*out)->notes);
        if (!((*out)->notes = strdup(o->notes_json))) {
            abx_sandbox_free(*out);
            *out = NULL;
            rc = abx__error_set(err, ABX_ENOMEM, "notes");
        }
    }
    return rc;
}

static void info_from_record(const char *plugin_id, json_t *r, abx_sandbox_info *out,
                             char tenant[ABX_TENANT_MAX + 1])
{
    memset(out, 0, sizeof *out);
    snprintf(out->sandbox_id, sizeof out->sandbox_id, "%s:%s", plugin_id,
             json_string_value(json_object_get(r, "sandbox_id")) ?: "");
    snprintf(out->template_id, sizeof out->template_id, "%s",
             json_string_value(json_object_get(r, "template")) ?: "");
    snprintf(out->status, sizeof out->status, "%s",
             json_string_value(json_object_get(r, "status")) ?: "running");
    out->started_at = abx__parse_rfc3339(json_string_value(json_object_get(r, "created_at")));
    out->end_at = abx__parse_rfc3339(json_string_value(json_object_get(r, "expires_at")));
    json_t *m = json_object_get(r, "metadata");
    char scratch[ABX_TENANT_MAX + 1];
    if (json_is_object(m))
        abx__remote_meta_take(m, tenant ? tenant : scratch, NULL);
    out->metadata_json = json_is_object(m) ? json_dumps(m, JSON_COMPACT) : strdup("{}");
    out->env_names_json = strdup("[]");
}

static int epp_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *record = NULL;
    int rc = call(es->client, "sandbox.lifecycle", "sandbox.get",
                  json_pack("{s:s}", "sandbox_id", es->sandbox_id), &record, err);
    if (rc == 0 && !record_id(record, es->sandbox_id))
        rc = unusable_id(es->client, err);
    if (rc == 0)
        info_from_record(((epp_client *)es->client->state)->id, record, out, NULL);
    json_decref(record);
    return rc;
}

#define LIST_PAGES_MAX 100
#define LIST_ITEMS_MAX 10000

/* sandbox.list, page after page while the plugin gives a next_token (at
 * most LIST_PAGES_MAX pages, LIST_ITEMS_MAX sandboxes). */
static int epp_list(abx_client *c, const char *status_filter, abx__listed **items, size_t *count,
                    abx_error **err)
{
    abx__listed *all = NULL;
    size_t kept = 0, cap = 0;
    char token[256] = "";
    int rc = 0;
    for (int page = 0; rc == 0 && page < LIST_PAGES_MAX; page++) {
        json_t *params = json_object(), *result = NULL;
        if (status_filter)
            json_object_set_new(params, "state", json_string(status_filter));
        if (token[0])
            json_object_set_new(params, "next_token", json_string(token));
        rc = call(c, "sandbox.lifecycle", "sandbox.list", params, &result, err);
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(result, "sandboxes"), i, r)
        {
            if (!json_is_object(r) || kept >= LIST_ITEMS_MAX || !record_id(r, NULL))
                continue; /* a record abx cannot name is not listed */
            if (kept == cap) {
                abx__listed *grown = realloc(all, (cap = cap ? cap * 2 : 32) * sizeof *all);
                if (!grown) {
                    rc = abx__error_set(err, ABX_ENOMEM, "list");
                    break;
                }
                all = grown;
            }
            info_from_record(((epp_client *)c->state)->id, r, &all[kept].info, all[kept].tenant);
            if (status_filter && strcmp(all[kept].info.status, status_filter) != 0)
                abx_sandbox_info_clear(&all[kept].info);
            else
                kept++;
        }
        const char *next = json_string_value(json_object_get(result, "next_token"));
        bool more = next && *next && strlen(next) < sizeof token && strcmp(next, token) != 0;
        if (more)
            snprintf(token, sizeof token, "%s", next);
        json_decref(result);
        if (!more)
            break;
    }
    if (rc < 0) {
        for (size_t i = 0; i < kept; i++)
            abx_sandbox_info_clear(&all[i].info);
        free(all);
        all = NULL;
        kept = 0;
    }
    *items = rc == 0 ? (all ? all : calloc(1, sizeof *all)) : NULL; /* nothing to free after a failure */
    *count = kept;
    return rc;
}

static int epp_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *result = NULL;
    int rc =
        call(es->client, "sandbox.timeout", "sandbox.set_timeout",
             json_pack("{s:s, s:i}", "sandbox_id", es->sandbox_id, "timeout", (int)seconds), &result, err);
    json_decref(result);
    return rc;
}

static int epp_kill(abx_sandbox *s, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *result = NULL;
    int rc = call(es->client, "sandbox.lifecycle", "sandbox.kill",
                  json_pack("{s:s}", "sandbox_id", es->sandbox_id), &result, err);
    if (rc == 0 && !json_is_true(json_object_get(result, "killed")))
        rc = abx__error_set(err, ABX_ENOTFOUND, "no such sandbox");
    json_decref(result);
    return rc;
}

/* ---- processes: exec.run, exec.start and its events, process.* ---------------------- */

/* exec.run's and exec.start's params (NULL with *rc and err set). */
static json_t *exec_params(epp_sandbox *es, const char *command, const abx_exec_options *o, abx_error **err,
                           int *rc)
{
    json_t *envs = pairs_or_null(o ? o->envs : NULL, "envs", true, err, rc);
    if (*rc < 0) {
        json_decref(envs);
        return NULL;
    }
    json_t *params = json_pack("{s:s, s:s, s:o}", "sandbox_id", es->sandbox_id, "cmd", command, "envs", envs);
    if (o && (o->cwd || o->default_cwd)) /* a plugin's sandboxes have no template WORKDIR */
        json_object_set_new(params, "cwd", json_string(o->cwd ? o->cwd : o->default_cwd));
    if (o && o->user)
        json_object_set_new(params, "user", json_string(o->user));
    if (o && o->timeout_s)
        json_object_set_new(params, "timeout", json_integer(o->timeout_s));
    return params;
}

static void keep_text(const abx_exec_options *o, const char *text, size_t len, bool is_out, abx_capbuf *keep)
{
    abx_output_fn fn = o ? (is_out ? o->on_stdout : o->on_stderr) : NULL;
    if (fn && len)
        fn(text, len, o->userdata);
    abx__capbuf_append(keep, text, len);
}

static void keep_result(const abx_exec_options *o, abx_capbuf *out, abx_capbuf *err, abx_exec_result *r)
{
    if (o && o->keep_output) {
        r->stdout_total = out->total;
        r->stderr_total = err->total;
        r->stdout_data = abx__capbuf_take(out, &r->stdout_len, &r->stdout_cut);
        r->stderr_data = abx__capbuf_take(err, &r->stderr_len, &r->stderr_cut);
    }
    abx__capbuf_free(out);
    abx__capbuf_free(err);
}

/* A plugin that kills a command at its timeout reports 124, as abx does
 * (its timer may fire a little before ours would: 100 ms of slack). */
static bool timed_out_by_plugin(const abx_exec_options *o, int exit_code, unsigned long long started_ns)
{
    return o && o->timeout_s && exit_code == 124 &&
           abx__now_ns() - started_ns + 100000000ull >= o->timeout_s * 1000000000ull;
}

/* exec.run: the whole result in one answer; the call may take the
 * command's own timeout on top of the request timeout. */
static int exec_run(epp_sandbox *es, abx_epp *e, const char *command, const abx_exec_options *o,
                    abx_exec_result *out, abx_error **err)
{
    int rc = 0;
    json_t *params = exec_params(es, command, o, err, &rc);
    if (!params)
        return rc;
    json_t *result = NULL;
    unsigned wait_ms = o && o->timeout_s ? (o->timeout_s + 30u) * 1000u : 0;
    unsigned long long started = abx__now_ns();
    rc = abx__epp_call(e, "exec.run", params, wait_ms, &result, err);
    json_decref(params);
    if (rc < 0)
        return rc;
    const char *so = json_string_value(json_object_get(result, "stdout")) ?: "";
    const char *se = json_string_value(json_object_get(result, "stderr")) ?: "";
    out->exit_code = (int)json_integer_value(json_object_get(result, "exit_code"));
    out->timed_out = timed_out_by_plugin(o, out->exit_code, started);
    abx_capbuf keep_out, keep_err;
    abx__capbuf_init(&keep_out, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    abx__capbuf_init(&keep_err, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    keep_text(o, so, strlen(so), true, &keep_out);
    keep_text(o, se, strlen(se), false, &keep_err);
    keep_result(o, &keep_out, &keep_err, out);
    json_decref(result);
    return 0;
}

/* exec.start: *exec_id (caller's buffer) and *pid (0 when the plugin gave
 * none) of a command now running, its record claimed. */
static int exec_start(epp_sandbox *es, abx_epp *e, const char *command, const abx_exec_options *o,
                      bool keep_stdin, char *exec_id, size_t id_len, int *pid, abx_error **err)
{
    int rc = 0;
    json_t *params = exec_params(es, command, o, err, &rc);
    if (!params)
        return rc;
    json_object_set_new(params, "stdin", json_boolean(keep_stdin));
    json_t *result = NULL;
    rc = abx__epp_call(e, "exec.start", params, 0, &result, err);
    json_decref(params);
    if (rc < 0)
        return rc;
    const char *id = json_string_value(json_object_get(result, "exec_id"));
    json_int_t p = json_integer_value(json_object_get(result, "pid"));
    *pid = p > 0 && p < 4194305 ? (int)p : 0;
    snprintf(exec_id, id_len, "%s", id ? id : "");
    rc = id && *id && strlen(id) < id_len
             ? abx__epp_execs_claim(abx__epp_execs(e), id, *pid, o ? o->tag : NULL)
             : -ABX_EPROVIDER;
    json_decref(result);
    if (rc == -ABX_ELIMIT)
        return abx__error_set(err, ABX_ELIMIT, "too many commands running through provider '%s' at once",
                              abx__epp_id(e));
    if (rc < 0)
        return abx__error_set(err, ABX_EPROVIDER,
                              "provider '%s' answered exec.start without a usable exec_id", abx__epp_id(e));
    return 0;
}

static int process_call(epp_sandbox *es, const char *method, json_t *params, abx_error **err)
{
    json_t *result = NULL;
    json_object_set_new(params, "sandbox_id", json_string(es->sandbox_id));
    int rc = call(es->client, "process.manage", method, params, &result, err);
    json_decref(result);
    return rc;
}

static int send_input(epp_sandbox *es, int pid, const void *data, size_t len, bool eof, abx_error **err)
{
    char *enc = abx__b64_encode(data, len);
    if (!enc)
        return abx__error_set(err, ABX_ENOMEM, "input");
    json_t *params = json_pack("{s:i, s:s}", "pid", pid, "data_b64", enc);
    free(enc);
    if (eof)
        json_object_set_new(params, "eof", json_true());
    return process_call(es, "process.stdin", params, err);
}

/* The caller's stdin to the command (process.stdin), then its end. */
typedef struct stdin_pump {
    epp_sandbox *es;
    int pid, fd;
    atomic_bool stop;
    pthread_t thread;
} stdin_pump;

static void *pump_main(void *arg)
{
    stdin_pump *p = arg;
    char buf[65536];
    while (!atomic_load(&p->stop)) {
        struct pollfd pf = {.fd = p->fd, .events = POLLIN};
        int ready = poll(&pf, 1, 100);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready <= 0)
            continue;
        ssize_t n = read(p->fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0 || send_input(p->es, p->pid, buf, (size_t)n, false, NULL) < 0)
            break;
    }
    send_input(p->es, p->pid, "", 0, true, NULL);
    return NULL;
}

static int kill_process(epp_sandbox *es, int pid)
{
    return pid > 0 ? process_call(es, "process.kill", json_pack("{s:i}", "pid", pid), NULL) : -1;
}

/* Waits for exec_id's events, giving its output to the caller as it comes,
 * until exec.exit; the command's timeout, a cancel and the plugin going
 * away end the wait too. */
static int stream_until_exit(epp_sandbox *es, abx_epp *e, const char *exec_id, int pid,
                             const abx_exec_options *o, abx_exec_result *out, abx_error **err)
{
    abx_capbuf keep_out, keep_err;
    abx__capbuf_init(&keep_out, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    abx__capbuf_init(&keep_err, ABX_BOUND_KEEP_HEAD, ABX_BOUND_KEEP_TAIL);
    unsigned long long so = 0, se = 0, started = abx__now_ns();
    int rc = 0;
    for (;;) {
        abx_process_output po;
        char why[200] = "";
        rc = abx__epp_execs_read(abx__epp_execs(e), exec_id, 0, so, se, 500, &po, why, sizeof why);
        if (rc == 0 || rc == -ABX_EPROVIDER) {
            /* a ring that wrapped before it was read: the bytes lost sit at the cut */
            abx__capbuf_skip(&keep_out, po.stdout_offset - po.stdout_len - so);
            abx__capbuf_skip(&keep_err, po.stderr_offset - po.stderr_len - se);
            keep_text(o, po.stdout_data, po.stdout_len, true, &keep_out);
            keep_text(o, po.stderr_data, po.stderr_len, false, &keep_err);
            so = po.stdout_offset;
            se = po.stderr_offset;
        }
        bool running = po.running;
        int code = po.exit_code;
        abx_process_output_clear(&po);
        if (rc == -ABX_EPROVIDER) {
            rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' went away during the command: it %s",
                                abx__epp_id(e), why);
            break;
        }
        if (rc < 0) {
            rc = abx__error_set(err, -rc, "provider '%s': the command's output", abx__epp_id(e));
            break;
        }
        if (!running) {
            out->exit_code = code;
            out->timed_out = timed_out_by_plugin(o, code, started);
            break;
        }
        if (o && o->should_cancel && o->should_cancel(o->userdata)) {
            kill_process(es, pid);
            rc = abx__error_set(err, ABX_ECANCELLED, "cancelled");
            break;
        }
        unsigned long long ms = (abx__now_ns() - started) / 1000000ull;
        if (o && o->timeout_s && ms > o->timeout_s * 1000ull + 2000ull) { /* the plugin had its chance */
            kill_process(es, pid);
            out->timed_out = true;
            out->exit_code = 124;
            break;
        }
    }
    if (rc == 0)
        keep_result(o, &keep_out, &keep_err, out);
    abx__capbuf_free(&keep_out);
    abx__capbuf_free(&keep_err);
    return rc;
}

static int exec_stream(epp_sandbox *es, abx_epp *e, const char *command, const abx_exec_options *o,
                       abx_exec_result *out, abx_error **err)
{
    bool feed = o && o->with_stdin && abx__epp_has(e, "process.manage");
    char exec_id[128];
    int pid = 0;
    int rc = exec_start(es, e, command, o, feed, exec_id, sizeof exec_id, &pid, err);
    if (rc < 0)
        return rc;
    stdin_pump pump = {.es = es, .pid = pid, .fd = o ? o->stdin_fd : -1};
    atomic_init(&pump.stop, false);
    bool pumping = feed && pid > 0 && pthread_create(&pump.thread, NULL, pump_main, &pump) == 0;
    rc = stream_until_exit(es, e, exec_id, pid, o, out, err);
    if (pumping) {
        atomic_store(&pump.stop, true);
        pthread_join(pump.thread, NULL);
    }
    abx__epp_execs_release(abx__epp_execs(e), exec_id);
    return rc;
}

/* A command to completion: exec.run, or exec.start and its events when the
 * caller follows the output, feeds stdin or may cancel (or when the
 * plugin has only exec.stream). A terminal needs envd. */
static int epp_exec(abx_sandbox *s, const char *command, const abx_exec_options *o, abx_exec_result *out,
                    abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    if (o && o->pty)
        return abx__error_set(err, ABX_ENOTSUP,
                              "a terminal needs a sandbox with an envd data plane; provider '%s' "
                              "serves commands without one",
                              ((epp_client *)es->client->state)->id);
    abx_epp *e = NULL;
    int rc = plugin(es->client, NULL, &e, err);
    if (rc < 0)
        return rc;
    bool can_run = abx__epp_has(e, "exec.run"), can_stream = abx__epp_has(e, "exec.stream");
    bool wants_stream = o && (o->on_stdout || o->on_stderr || o->with_stdin || o->should_cancel);
    if (can_stream && (!can_run || wants_stream))
        rc = exec_stream(es, e, command, o, out, err);
    else if (can_run)
        rc = exec_run(es, e, command, o, out, err);
    else
        rc = abx__error_set(err, ABX_ENOTSUP, "provider '%s' did not declare exec.run or exec.stream",
                            abx__epp_id(e));
    abx__epp_stop(e);
    return rc;
}

/* A background task: exec.start; its output is kept by this client (the
 * plugin process's event table) for read_output. */
static int epp_start(abx_sandbox *s, const char *command, const abx_exec_options *o, int *pid,
                     abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    abx_epp *e = NULL;
    int rc = plugin(es->client, "exec.stream", &e, err);
    if (rc == 0 && !abx__epp_has(e, "process.manage"))
        rc = abx__error_set(err, ABX_ENOTSUP,
                            "provider '%s' did not declare process.manage (background tasks need "
                            "exec.stream and process.manage)",
                            abx__epp_id(e));
    char exec_id[128];
    if (rc == 0)
        rc = exec_start(es, e, command, o, false, exec_id, sizeof exec_id, pid, err);
    if (rc == 0 && *pid <= 0) {
        abx__epp_execs_release(abx__epp_execs(e), exec_id);
        rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' started the task without a pid",
                            abx__epp_id(e));
    }
    abx__epp_stop(e);
    return rc;
}

static int epp_read_output(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                           unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                           abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    abx_epp *e = NULL;
    memset(out, 0, sizeof *out);
    int rc = plugin(es->client, "exec.stream", &e, err);
    if (rc < 0)
        return rc;
    char why[200] = "";
    rc = abx__epp_execs_read(abx__epp_execs(e), NULL, pid, stdout_offset, stderr_offset,
                             wait_ms > 600000 ? 600000 : wait_ms, out, why, sizeof why);
    if (rc == -ABX_EPROVIDER) { /* what it wrote stays readable; it ended without an exit */
        out->running = false;
        out->exit_code = -1;
        rc = 0;
    } else if (rc == -ABX_ENOTASK) {
        rc = abx__error_set(
            err, ABX_ENOTASK,
            "no task %d here: a plugin's task output is kept by the abx process that started it "
            "(one MCP session), for as long as its plugin runs",
            pid);
    } else if (rc < 0) {
        rc = abx__error_set(err, -rc, "task output");
    }
    abx__epp_stop(e);
    return rc;
}

static int epp_signal(abx_sandbox *s, int pid, int sig, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    if (sig == SIGKILL)
        return process_call(es, "process.kill", json_pack("{s:i}", "pid", pid), err);
    char name[16];
    snprintf(name, sizeof name, "SIG%s", sigabbrev_np(sig) ? sigabbrev_np(sig) : "TERM");
    return process_call(es, "process.signal", json_pack("{s:i, s:s}", "pid", pid, "signal", name), err);
}

static int epp_send_input(abx_sandbox *s, int pid, const void *data, size_t len, bool eof, abx_error **err)
{
    return send_input(epp_of(s), pid, data, len, eof, err);
}

/* process.list as abx lists processes: [{pid, tag?, config{cmd, args}}]. */
static int epp_list_processes(abx_sandbox *s, char **json, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *result = NULL;
    int rc = call(es->client, "process.manage", "process.list",
                  json_pack("{s:s}", "sandbox_id", es->sandbox_id), &result, err);
    if (rc < 0)
        return rc;
    abx_epp *e = NULL;
    plugin(es->client, NULL, &e, NULL);
    json_t *list = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(result, "processes"), i, p)
    {
        json_int_t pid = json_integer_value(json_object_get(p, "pid"));
        const char *cmd = json_string_value(json_object_get(p, "cmd"));
        if (pid <= 0 || !cmd || json_array_size(list) >= 4096)
            continue;
        json_t *item = json_pack("{s:I, s:{s:s, s:[]}}", "pid", pid, "config", "cmd", cmd, "args");
        char tag[64] = "";
        if (e)
            abx__epp_execs_tag(abx__epp_execs(e), (int)pid, tag, sizeof tag);
        if (*tag)
            json_object_set_new(item, "tag", json_string(tag));
        json_array_append_new(list, item);
    }
    abx__epp_stop(e);
    json_decref(result);
    *json = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    return *json ? 0 : abx__error_set(err, ABX_ENOMEM, "processes");
}

static int epp_data_call(abx_sandbox *s, const char *capability, const char *method, json_t *params,
                         json_t **result, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_object_set_new(params, "sandbox_id", json_string(es->sandbox_id));
    return call(es->client, capability, method, params, result, err);
}

/* ---- files through the plugin's files.* ---------------------------------------------- */

#define PLUGIN_CHUNK (4u << 20) /* bytes a files.read or files.write carries */

static int provider_call(abx_sandbox *s, const char *method, const char *user, json_t *params,
                         json_t **result, abx_error **err)
{
    if (user) /* "root" or "user", checked by the caller */
        json_object_set_new(params, "user", json_string(user));
    return epp_data_call(s, "files.rw", method, params, result, err);
}

/* Uploads what fn gives in files.write chunks (the first one truncates). */
static int plugin_upload(abx_sandbox *s, const char *path, const char *user, abx_envd_read_fn fn, void *ud,
                         long long size, abx_error **err)
{
    (void)size;
    char *buf = malloc(PLUGIN_CHUNK);
    if (!buf)
        return abx__error_set(err, ABX_ENOMEM, "upload");
    unsigned long long offset = 0;
    int rc = 0;
    for (bool first = true; rc == 0; first = false) {
        size_t n = 0, got;
        while (n < PLUGIN_CHUNK && (got = fn(buf + n, PLUGIN_CHUNK - n, ud)) > 0)
            n += got;
        if (n == 0 && !first)
            break;
        char *b64 = abx__b64_encode(buf, n);
        json_t *result = NULL;
        rc = b64 ? provider_call(s, "files.write", user,
                                 json_pack("{s:s, s:s, s:I, s:b}", "path", path, "content_b64", b64, "offset",
                                           (json_int_t)offset, "truncate", first),
                                 &result, err)
                 : abx__error_set(err, ABX_ENOMEM, "upload");
        free(b64);
        json_decref(result);
        offset += n;
        if (n < PLUGIN_CHUNK)
            break;
    }
    free(buf);
    return rc;
}

/* Downloads (a range of) a file in files.read chunks into fn. */
static int plugin_download(abx_sandbox *s, const char *path, const char *user, abx_envd_range *range,
                           abx_envd_write_fn fn, void *ud, abx_error **err)
{
    unsigned long long offset = range ? range->offset : 0, left = range ? range->length : ~0ull;
    int rc = 0;
    while (rc == 0 && left > 0) {
        json_t *result = NULL;
        unsigned long long want = left < PLUGIN_CHUNK ? left : PLUGIN_CHUNK;
        rc = provider_call(s, "files.read", user,
                           json_pack("{s:s, s:I, s:I}", "path", path, "offset", (json_int_t)offset, "length",
                                     (json_int_t)want),
                           &result, err);
        if (rc < 0)
            break;
        char *data = NULL;
        long n = abx__b64_decode(json_string_value(json_object_get(result, "content_b64")) ?: "", &data);
        if (range)
            range->file_size = json_integer_value(json_object_get(result, "size"));
        bool eof = json_is_true(json_object_get(result, "eof"));
        if (n < 0 || (unsigned long long)n > want)
            rc = abx__error_set(err, ABX_EPROVIDER, "the provider answered files.read with bad content");
        else if (n > 0 && fn(data, (size_t)n, ud) != (size_t)n)
            rc = abx__error_set(err, ABX_EIO, "writing the read bytes failed");
        free(data);
        json_decref(result);
        offset += n > 0 ? (unsigned long long)n : 0;
        left -= n > 0 ? (unsigned long long)n : 0;
        if (eof || n <= 0)
            break;
    }
    return rc;
}

/* An EPP Entry ({name, type: file|dir|symlink, path, size, mode, mtime};
 * "modified_time" is read too, as abx's first plugins wrote it) as envd's
 * EntryInfo, which the listing code reads. */
static json_t *envd_entry_from_plugin(json_t *e)
{
    const char *type = json_string_value(json_object_get(e, "type"));
    char size[32], perms[11];
    snprintf(size, sizeof size, "%lld", (long long)json_integer_value(json_object_get(e, "size")));
    unsigned mode = (unsigned)json_integer_value(json_object_get(e, "mode"));
    perms[0] = !type ? '-' : strcmp(type, "dir") == 0 ? 'd' : strcmp(type, "symlink") == 0 ? 'l' : '-';
    for (int i = 0; i < 9; i++)
        perms[i + 1] = (mode & (1u << (8 - i))) ? "rwxrwxrwx"[i] : '-';
    perms[10] = '\0';
    json_t *out = json_pack(
        "{s:O?, s:s, s:O?, s:s, s:O?, s:s, s:O?}", "name", json_object_get(e, "name"), "type",
        type && strcmp(type, "dir") == 0 ? "FILE_TYPE_DIRECTORY" : "FILE_TYPE_FILE", "path",
        json_object_get(e, "path"), "size", size, "mode", json_object_get(e, "mode"), "permissions", perms,
        "modifiedTime", json_object_get(e, json_object_get(e, "mtime") ? "mtime" : "modified_time"));
    if (out && type && strcmp(type, "symlink") == 0)
        json_object_set_new(out, "symlinkTarget", json_string(""));
    return out;
}

/* envd's filesystem calls, served by the provider's files.* instead. */
static int plugin_fs(abx_sandbox *s, const char *method, const char *user, json_t *req, json_t **resp,
                     abx_error **err)
{
    const char *path = json_string_value(json_object_get(req, "path"));
    json_t *result = NULL;
    int rc;
    if (strcmp(method, "/filesystem.Filesystem/Stat") == 0) {
        rc = provider_call(s, "files.stat", user, json_pack("{s:s}", "path", path), &result, err);
        if (rc == 0)
            *resp = json_pack("{s:o}", "entry", envd_entry_from_plugin(result));
    } else if (strcmp(method, "/filesystem.Filesystem/ListDir") == 0) {
        rc = provider_call(s, "files.list", user,
                           json_pack("{s:s, s:O}", "path", path, "depth", json_object_get(req, "depth")),
                           &result, err);
        json_t *entries = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(result, "entries"), i, e)
            json_array_append_new(entries, envd_entry_from_plugin(e));
        if (rc == 0)
            *resp = json_pack("{s:o}", "entries", entries);
        else
            json_decref(entries);
    } else if (strcmp(method, "/filesystem.Filesystem/MakeDir") == 0) {
        rc = provider_call(s, "files.mkdir", user, json_pack("{s:s, s:b}", "path", path, "parents", 1),
                           &result, err);
        if (rc == 0)
            *resp = json_object();
    } else if (strcmp(method, "/filesystem.Filesystem/Remove") == 0) {
        rc = provider_call(s, "files.remove", user, json_pack("{s:s, s:b}", "path", path, "recursive", 1),
                           &result, err);
        if (rc == 0)
            *resp = json_object();
    } else if (strcmp(method, "/filesystem.Filesystem/Move") == 0) {
        rc = provider_call(s, "files.move", user,
                           json_pack("{s:O, s:O}", "from", json_object_get(req, "source"), "to",
                                     json_object_get(req, "destination")),
                           &result, err);
        if (rc == 0)
            *resp = json_object();
    } else {
        rc = abx__error_set(err, ABX_ENOTSUP, "this provider has no %s", method);
    }
    json_decref(result);
    json_decref(req);
    return rc;
}

/* ---- the plugin's data plane (data_plane.h) ------------------------------------------ */

/* A command as one shell command line: the plugin runs it its own way. */
static int plugin_exec(abx_sandbox *s, const char *const *argv, const char *command,
                       const abx_exec_options *o, abx_exec_result *out, abx_error **err)
{
    char *quoted = argv ? abx__quoted_command(argv) : NULL;
    int rc = argv && !quoted ? abx__error_set(err, ABX_ENOMEM, "command")
                             : epp_exec(s, quoted ? quoted : command, o, out, err);
    free(quoted);
    return rc;
}

static int plugin_start(abx_sandbox *s, const char *const *argv, const char *command,
                        const abx_exec_options *o, int *pid, abx_error **err)
{
    char *quoted = argv ? abx__quoted_command(argv) : NULL;
    int rc = argv && !quoted ? abx__error_set(err, ABX_ENOMEM, "command")
                             : epp_start(s, quoted ? quoted : command, o, pid, err);
    free(quoted);
    return rc;
}

const abx_data_plane abx__data_plugin = {
    .name = "plugin",
    .code_interpreter = false,
    .tasks_outlive_client = false, /* they live in the plugin process of this client */
    .exec = plugin_exec,
    .start = plugin_start,
    .read_output = epp_read_output,
    .signal = epp_signal,
    .send_input = epp_send_input,
    .list_processes = epp_list_processes,
    .upload = plugin_upload,
    .download = plugin_download,
    .fs = plugin_fs,
};

/* sandbox.pause / sandbox.resume (the plugin declared sandbox.pause). */
static int epp_pause(abx_sandbox *s, bool pause, unsigned timeout, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *params = json_pack("{s:s}", "sandbox_id", es->sandbox_id), *record = NULL;
    if (!pause && timeout)
        json_object_set_new(params, "timeout", json_integer(timeout));
    int rc =
        call(es->client, "sandbox.pause", pause ? "sandbox.pause" : "sandbox.resume", params, &record, err);
    json_decref(record);
    return rc;
}

/* The plugin's initialize answer (it starts if it has not). */
static int epp_features(abx_client *c, json_t **json, abx_error **err)
{
    abx_epp *e = NULL;
    int rc = plugin(c, NULL, &e, err);
    if (rc == 0)
        *json = json_copy(abx__epp_features(e));
    abx__epp_stop(e);
    return rc;
}

const abx_provider abx__provider_epp = {
    .features = epp_features,
    .name = "plugin",
    .connect = epp_connect,
    .create = epp_create,
    .get_info = epp_get_info,
    .list = epp_list,
    .set_timeout = epp_set_timeout,
    .kill = epp_kill,
    .pause = epp_pause,
    .free_impl = epp_free_impl,
    .free_state = epp_free_state,
    .data_call = epp_data_call,
};
