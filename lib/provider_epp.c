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
#include "epp.h"
#include "error_internal.h"
#include "plugin_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct epp_client {
    char id[64];
    abx_epp *epp; /* NULL until the first call */
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
        return abx__error_set(err, ABX_EPROVIDER,
                              "provider '%.32s' (from %s) is neither built in nor installed (abx provider list)", id,
                              c->source);
    epp_client *ec = calloc(1, sizeof *ec);
    if (!ec)
        return abx__error_set(err, ABX_ENOMEM, "provider");
    snprintf(ec->id, sizeof ec->id, "%s", id);
    c->ops = &abx__provider_epp;
    c->state = ec;
    return 0;
}

static void epp_free_state(void *state)
{
    epp_client *ec = state;
    if (ec)
        abx__epp_stop(ec->epp);
    free(ec);
}

/* The client's plugin, started now if it is not running (again after a
 * crash), and the capability the call needs. */
static int plugin(abx_client *c, const char *capability, abx_epp **out, abx_error **err)
{
    epp_client *ec = c->state;
    if (!ec->epp) {
        int rc = abx__epp_start(ec->id, &ec->epp, err);
        if (rc < 0)
            return rc;
    }
    if (capability && !abx__epp_has(ec->epp, capability))
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' did not declare %s", ec->id, capability);
    *out = ec->epp;
    return 0;
}

/* A call; a plugin that broke down is dropped, so the next call starts it again. */
static int call(abx_client *c, const char *capability, const char *method, json_t *params, json_t **result,
                abx_error **err)
{
    abx_epp *e = NULL;
    int rc = plugin(c, capability, &e, err);
    if (rc == 0)
        rc = abx__epp_call(e, method, params, 0, result, err);
    if (rc == -ABX_ETIMEOUT || rc == -ABX_EPROVIDER) {
        epp_client *ec = c->state;
        abx__epp_stop(ec->epp);
        ec->epp = NULL;
    }
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
static int handle_from(abx_client *c, json_t *record, abx_sandbox **out, abx_error **err)
{
    const char *sid = json_string_value(json_object_get(record, "sandbox_id"));
    epp_client *ec = c->state;
    if (!sid || !*sid || strlen(sid) >= sizeof((epp_sandbox *)0)->sandbox_id || strchr(sid, '/'))
        return abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered without a usable sandbox_id", ec->id);
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
    const char *url = json_string_value(json_object_get(record, "envd_url"));
    bool envd = url && (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0);
    abx__envd_init(&s->envd, envd ? url : "", NULL,
                   envd ? json_string_value(json_object_get(record, "envd_access_token")) : NULL);
    *out = s;
    return 0;
}

static int epp_connect(abx_client *c, const char *id, abx_sandbox **out, abx_error **err)
{
    json_t *record = NULL;
    abx_error *first = NULL;
    int rc = call(c, "sandbox.lifecycle", "sandbox.connect", json_pack("{s:s}", "sandbox_id", id), &record, &first);
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
        rc = handle_from(c, record, out, err);
    json_decref(record);
    return rc;
}

static json_t *null_or_int(unsigned v)
{
    return v ? json_integer(v) : json_null();
}

static json_t *pairs_or_null(const char *const *pairs, const char *field, bool env_names, abx_error **err, int *rc)
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
    if (rc < 0) {
        json_decref(envs);
        json_decref(meta);
        return rc;
    }
    json_t *params = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:n, s:n, s:n}", "template",
                               o && o->template_id ? json_string(o->template_id) : json_null(), "timeout",
                               null_or_int(o ? o->timeout_s : 0), "metadata", meta, "envs", envs, "cpu",
                               null_or_int(o ? o->cpu_count : 0), "memory", null_or_int(o ? o->memory_mb : 0), "disk",
                               "gpu", "request_timeout");
    if (o && o->options && o->options[0]) { /* options only when the caller set them */
        json_t *opts = json_object();
        rc = abx__pairs_to_object(o->options, opts, "--opt", false, err);
        const char *k;
        json_t *v;
        json_object_foreach(opts, k, v) {
            if (rc == 0 && abx__plugin_config_secret(((epp_client *)c->state)->id, k))
                rc = abx__error_set(err, ABX_EINVAL,
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
        rc = handle_from(c, record, out, err);
    json_decref(record);
    return rc;
}

static long long parse_time(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
        return 0;
    return (long long)timegm(&tm);
}

static void info_from_record(const char *plugin_id, json_t *r, abx_sandbox_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->sandbox_id, sizeof out->sandbox_id, "%s:%s", plugin_id,
             json_string_value(json_object_get(r, "sandbox_id")) ?: "");
    snprintf(out->template_id, sizeof out->template_id, "%s", json_string_value(json_object_get(r, "template")) ?: "");
    snprintf(out->status, sizeof out->status, "%s", json_string_value(json_object_get(r, "status")) ?: "running");
    out->started_at = parse_time(json_string_value(json_object_get(r, "created_at")));
    out->end_at = parse_time(json_string_value(json_object_get(r, "expires_at")));
    json_t *m = json_object_get(r, "metadata");
    out->metadata_json = json_is_object(m) ? json_dumps(m, JSON_COMPACT) : strdup("{}");
    out->env_names_json = strdup("[]");
}

static int epp_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *record = NULL;
    int rc = call(es->client, "sandbox.lifecycle", "sandbox.get", json_pack("{s:s}", "sandbox_id", es->sandbox_id),
                  &record, err);
    if (rc == 0)
        info_from_record(((epp_client *)es->client->state)->id, record, out);
    json_decref(record);
    return rc;
}

static int epp_list(abx_client *c, const char *status_filter, abx_sandbox_info **items, size_t *count, abx_error **err)
{
    json_t *result = NULL;
    json_t *params = json_object();
    if (status_filter)
        json_object_set_new(params, "state", json_string(status_filter));
    int rc = call(c, "sandbox.lifecycle", "sandbox.list", params, &result, err);
    json_t *list = json_object_get(result, "sandboxes");
    size_t n = json_array_size(list);
    abx_sandbox_info *all = rc == 0 ? calloc(n ? n : 1, sizeof *all) : NULL;
    if (rc == 0 && !all)
        rc = abx__error_set(err, ABX_ENOMEM, "list");
    size_t i, kept = 0;
    json_t *r;
    json_array_foreach(list, i, r) {
        if (!all || !json_is_object(r))
            continue;
        info_from_record(((epp_client *)c->state)->id, r, &all[kept]);
        if (status_filter && strcmp(all[kept].status, status_filter) != 0)
            abx_sandbox_info_clear(&all[kept]);
        else
            kept++;
    }
    json_decref(result);
    *items = all;
    *count = kept;
    return rc;
}

static int epp_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *result = NULL;
    int rc = call(es->client, "sandbox.timeout", "sandbox.set_timeout",
                  json_pack("{s:s, s:i}", "sandbox_id", es->sandbox_id, "timeout", (int)seconds), &result, err);
    json_decref(result);
    return rc;
}

static int epp_kill(abx_sandbox *s, abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_t *result = NULL;
    int rc = call(es->client, "sandbox.lifecycle", "sandbox.kill", json_pack("{s:s}", "sandbox_id", es->sandbox_id),
                  &result, err);
    if (rc == 0 && !json_is_true(json_object_get(result, "killed")))
        rc = abx__error_set(err, ABX_ENOTFOUND, "no such sandbox");
    json_decref(result);
    return rc;
}

/* exec.run: the command line, and the result's streams as the exec result. */
static int epp_exec(abx_sandbox *s, const char *command, const abx_exec_options *o, abx_exec_result *out,
                    abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    int rc = 0;
    json_t *envs = pairs_or_null(o ? o->envs : NULL, "envs", true, err, &rc);
    if (rc < 0) {
        json_decref(envs);
        return rc;
    }
    json_t *params = json_pack("{s:s, s:s, s:o}", "sandbox_id", es->sandbox_id, "cmd", command, "envs", envs);
    if (o && o->cwd)
        json_object_set_new(params, "cwd", json_string(o->cwd));
    if (o && o->user)
        json_object_set_new(params, "user", json_string(o->user));
    if (o && o->timeout_s)
        json_object_set_new(params, "timeout", json_integer(o->timeout_s));
    json_t *result = NULL;
    rc = call(es->client, "exec.run", "exec.run", params, &result, err);
    if (rc < 0)
        return rc;
    const char *so = json_string_value(json_object_get(result, "stdout")) ?: "";
    const char *se = json_string_value(json_object_get(result, "stderr")) ?: "";
    out->exit_code = (int)json_integer_value(json_object_get(result, "exit_code"));
    if (o && o->on_stdout && *so)
        o->on_stdout(so, strlen(so), o->userdata);
    if (o && o->on_stderr && *se)
        o->on_stderr(se, strlen(se), o->userdata);
    if (o && o->keep_output) {
        out->stdout_data = strdup(so);
        out->stderr_data = strdup(se);
        out->stdout_len = out->stdout_total = out->stdout_cut = strlen(so);
        out->stderr_len = out->stderr_total = out->stderr_cut = strlen(se);
    }
    json_decref(result);
    return 0;
}

static int epp_data_call(abx_sandbox *s, const char *capability, const char *method, json_t *params, json_t **result,
                         abx_error **err)
{
    epp_sandbox *es = epp_of(s);
    json_object_set_new(params, "sandbox_id", json_string(es->sandbox_id));
    return call(es->client, capability, method, params, result, err);
}

const abx_provider abx__provider_epp = {
    .name = "plugin",
    .connect = epp_connect,
    .create = epp_create,
    .get_info = epp_get_info,
    .list = epp_list,
    .set_timeout = epp_set_timeout,
    .kill = epp_kill,
    .read_output = NULL,
    .free_impl = epp_free_impl,
    .exec = epp_exec,
    .free_state = epp_free_state,
    .data_call = epp_data_call,
};
