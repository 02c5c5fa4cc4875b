/* sandbox.c: the provider-neutral control plane of abx.h: clients (which
 * provider, from where), handles, and create / connect / info / list /
 * timeout / kill routed to the provider (provider.h) by the id's
 * "<provider>:" prefix, with the checks every provider shares (ranges,
 * limits, list order and paging).
 *
 * Ids: users see "<provider>:<id>"; every function also accepts the bare
 * id of the client's provider. An id of another provider is E8015; an
 * empty id E8001; an unknown one E8002 (from the provider).
 */
#include "provider.h"
#include "tenant.h"
#include "service_client.h"
#include "config.h"
#include "error_internal.h"
#include "parse.h"
#include "epp_exec.h"
#include "netpolicy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const abx_provider *const providers[] = {&abx__provider_local};

static const abx_provider *provider_named(const char *name)
{
    for (size_t i = 0; i < sizeof providers / sizeof providers[0]; i++)
        if (strcmp(providers[i]->name, name) == 0)
            return providers[i];
    return NULL;
}

/* ---- errors across the provider boundary ------------------------------------- */

/* A provider's fault (the host, the runtime, I/O, the provider itself, an
 * internal error) gains the operation and the sandbox as context on its
 * way up (crun's error wrap); a caller's own mistake (validation, not
 * found, a limit, a capability) keeps the words it has, which front ends
 * show as they are. Returns rc. */
static int at_provider(abx_error **err, int rc, const char *what, const char *id)
{
    if (rc >= 0 || !err || !*err)
        return rc;
    const char *cat = abx_err_category(abx_error_code(*err));
    bool fault = strcmp(cat, "internal") == 0 || strcmp(cat, "host") == 0 || strcmp(cat, "runtime") == 0 ||
                 strcmp(cat, "io") == 0 || strcmp(cat, "provider") == 0;
    return fault ? abx__error_wrap(err, rc, "%s %s", what, id) : rc;
}

/* ---- clients and handles --------------------------------------------------- */

int abx_client_new(const abx_client_options *opts, abx_client **out, abx_error **err)
{
    *out = NULL;
    abx_client *c = calloc(1, sizeof *c);
    if (!c)
        return abx__error_set(err, ABX_ENOMEM, "client");
    atomic_init(&c->refs, 1);
    if (opts && opts->tenant && !abx_tenant_valid(opts->tenant)) {
        free(c);
        return abx__error_set(err, ABX_EINVAL, "tenant: 1-%u bytes of [A-Za-z0-9._:=-]", ABX_TENANT_MAX);
    }
    snprintf(c->tenant, sizeof c->tenant, "%s", opts && opts->tenant ? opts->tenant : "");
    c->quota = abx__quota_book_new();
    int rc = c->quota ? 0 : abx__error_set(err, ABX_ENOMEM, "client");
    if (rc == 0)
        rc = abx__resolve_provider(opts ? opts->provider : NULL, opts ? opts->cli_provider : NULL,
                                   c->provider, sizeof c->provider, &c->source, err);
    char service[108];
    if (rc == 0 && strcmp(c->provider, "local") == 0 && abx_service_socket(service, sizeof service))
        rc = abx__provider_service_attach(c, service, opts && opts->all_tenants,
                                          err); /* a user without root */
    else if (rc == 0 && (strcmp(c->provider, "e2b") == 0 || strcmp(c->provider, "alicloud-express") == 0))
        rc = abx__provider_e2b_attach(c, c->provider, err);      /* E2B's protocol, built in */
    else if (rc == 0 && !(c->ops = provider_named(c->provider))) /* an installed plugin, or nothing */
        rc = abx__provider_epp_attach(c, c->provider, err);
    else if (rc == 0 && c->ops->attach)
        rc = c->ops->attach(c, err);
    if (rc < 0) {
        abx_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

abx_client *abx__client_ref(abx_client *c)
{
    atomic_fetch_add(&c->refs, 1);
    return c;
}

void abx_client_free(abx_client *c)
{
    if (!c || atomic_fetch_sub(&c->refs, 1) > 1)
        return;
    if (c->root) { /* a tenant's client: the state is the root's */
        abx_client_free(c->root);
    } else if (c->ops && c->ops->free_state) {
        c->ops->free_state(c->state);
    }
    for (size_t i = 0; c->tenant_set && c->tenant_set[i]; i++)
        free(c->tenant_set[i]);
    free(c->tenant_set);
    abx__quota_book_free(c->quota);
    free(c);
}
int abx_client_keep_warm(abx_client *c, unsigned count, abx_error **err)
{
    if (!c->ops || !c->ops->keep_warm)
        return abx__error_set(err, ABX_ENOTSUP, "provider %s: only the local provider keeps sandboxes warm",
                              c->provider);
    return c->ops->keep_warm(c, count, err);
}
int abx_sandbox_set_network(abx_sandbox *s, const char *mode, const char *const *allow_out,
                            const char *const *deny_out, abx_error **err)
{
    if (!s->ops || !s->ops->set_network)
        return abx__error_set(err, ABX_ENOTSUP, "this provider cannot change a sandbox's network");
    json_t *policy = NULL;
    int rc = abx__net_policy_build(mode, allow_out, deny_out, "none", &policy, err);
    if (rc == 0)
        rc = abx__tenant_may_network(s->tenant, abx__net_policy_mode(policy), err);
    if (rc == 0)
        rc = at_provider(err, s->ops->set_network(s, policy, err), "network of", s->qualified);
    if (rc == 0)
        abx__event(s->ops, "network", s->qualified, s->tenant,
                   json_pack("{s:s, s:O?, s:O?}", "mode", abx__net_policy_mode(policy), "allow_out",
                             json_object_get(policy, "allow_out"), "deny_out",
                             json_object_get(policy, "deny_out")));
    json_decref(policy);
    return rc;
}
const char *abx_client_service(const abx_client *c)
{
    return abx__provider_service_socket(abx__client_root((abx_client *)c));
}
const char *abx_client_provider(const abx_client *c)
{
    return c->provider;
}
const char *abx_client_provider_source(const abx_client *c)
{
    return c->source;
}
const char *abx_sandbox_id(const abx_sandbox *s)
{
    return s->qualified;
}
const char *abx_sandbox_tenant(const abx_sandbox *s)
{
    return s->tenant[0] ? s->tenant : NULL;
}

abx_sandbox *abx__sandbox_new(const abx_provider *ops, const char *qualified)
{
    abx_sandbox *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->ops = ops;
    s->data = &abx__data_envd; /* a provider that speaks otherwise says so when it fills the handle */
    snprintf(s->qualified, sizeof s->qualified, "%s", qualified);
    return s;
}

void abx_sandbox_free(abx_sandbox *s)
{
    if (!s)
        return;
    abx__envd_cleanup(&s->envd);
    explicit_bzero(s->envd.token, sizeof s->envd.token);
    if (s->ops && s->ops->free_impl)
        s->ops->free_impl(s->impl);
    free(s->notes);
    free(s);
}

int abx__pairs_to_object(const char *const *pairs, json_t *obj, const char *field, bool env_names,
                         abx_error **err)
{
    for (size_t i = 0; pairs && pairs[i]; i++) {
        const char *eq = strchr(pairs[i], '=');
        size_t klen = eq ? (size_t)(eq - pairs[i]) : 0;
        bool ok = eq && klen > 0 && klen < 256 && (!env_names || abx__env_name_valid(pairs[i], klen));
        if (!ok)
            return abx__error_set(err, ABX_EINVAL, "%s: expected KEY=VALUE%s", field,
                                  env_names ? " with KEY of [A-Za-z_][A-Za-z0-9_]*" : "");
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)klen, pairs[i]);
        json_object_set_new(obj, key, json_string(eq + 1));
    }
    return 0;
}

/* The provider an id names ("<provider>:<id>", or a bare id of the
 * client's), and the id without its prefix. */
static int route(abx_client *c, const char *id, const char **plain, abx_error **err)
{
    if (!id || !*id)
        return abx__error_set(err, ABX_EINVAL, "sandbox_id: must not be empty");
    const char *colon = strchr(id, ':');
    *plain = id;
    if (colon) {
        size_t n = strlen(c->provider);
        if ((size_t)(colon - id) != n || strncmp(id, c->provider, n) != 0)
            return abx__error_set(err, ABX_EPROVIDER, "sandbox_id: belongs to another provider than '%s'",
                                  c->provider);
        *plain = colon + 1;
    }
    return 0;
}

/* Every id c may not reach, and every one that does not exist, answers
 * with abx__tenant_not_found: the same code and message (providers check
 * the tenant as early as they can, this is the last word). */
int abx_sandbox_connect(abx_client *c, const char *id, abx_sandbox **out, abx_error **err)
{
    *out = NULL;
    const char *plain = NULL;
    int rc = route(c, id, &plain, err);
    if (rc < 0)
        return rc;
    abx_error *why = NULL;
    rc = c->ops->connect(c, plain, out, &why);
    if (rc == -ABX_ENOTFOUND) {
        abx_error_free(why);
        return abx__tenant_not_found(err);
    }
    if (rc < 0) {
        if (err)
            *err = why;
        else
            abx_error_free(why);
        return rc;
    }
    abx_error_free(why);
    if (!abx__tenant_may_see(c, (*out)->tenant)) {
        abx_sandbox_free(*out);
        *out = NULL;
        return abx__tenant_not_found(err);
    }
    return 0;
}

/* ---- create ------------------------------------------------------------------ */

/* The network mode a create of o asks for (the lists, else the mode,
 * else config.toml's default) into mode; "none" when it is malformed
 * (the provider refuses it). */
static void network_mode(const abx_create_options *o, char mode[16])
{
    char def[32];
    json_t *policy = NULL;
    snprintf(mode, 16, "none");
    if (abx__config_network_default(def, sizeof def, NULL) < 0 ||
        abx__net_policy_build(o ? o->network : NULL, o ? o->allow_out : NULL, o ? o->deny_out : NULL, def,
                              &policy, NULL) < 0)
        return;
    snprintf(mode, 16, "%s", abx__net_policy_mode(policy));
    json_decref(policy);
}

static int check_notes(const char *notes, abx_error **err)
{
    if (!notes)
        return 0;
    json_t *doc = strlen(notes) <= ABX_NOTES_MAX ? json_loads(notes, 0, NULL) : NULL;
    bool ok = json_is_object(doc);
    json_decref(doc);
    return ok ? 0
              : abx__error_set(err, ABX_EINVAL, "notes: a JSON object of at most %u bytes", ABX_NOTES_MAX);
}

int abx_sandbox_create(abx_client *c, const abx_create_options *o, abx_sandbox **out, abx_error **err)
{
    *out = NULL;
    const char *tenant = NULL;
    if (o && o->timeout_s > ABX_TIMEOUT_MAX_S)
        return abx__error_set(err, ABX_EINVAL, "timeout: must be from %u to %u seconds", ABX_TIMEOUT_MIN_S,
                              ABX_TIMEOUT_MAX_S);
    abx_limits l = {.memory_mb = o ? o->memory_mb : 0, .cpu_count = o ? o->cpu_count : 0};
    int rc = abx_limits_check(&l, err);
    if (rc == 0)
        rc = abx__tenant_for_create(c, &tenant, err);
    if (rc == 0)
        rc = check_notes(o ? o->notes_json : NULL, err);
    char mode[16];
    network_mode(o, mode);
    bool networked = rc == 0 && strcmp(mode, "none") != 0;
    if (rc == 0)
        rc = abx__tenant_may_network(c->tenant, mode, err);
    if (rc == 0)
        rc = abx__quota_reserve(c, networked, err);
    if (rc == -ABX_EQUOTA)
        abx__event(c->ops, "quota_refused", NULL, c->tenant,
                   json_pack("{s:s?}", "reason", err && *err ? abx_error_message(*err) : NULL));
    if (rc < 0)
        return rc;
    rc = at_provider(err, c->ops->create(c, o, out, err), "create on provider", c->provider);
    if (c->ops == &abx__provider_local)
        rc = abx__service_hint(rc, err);
    if (rc == 0)
        snprintf((*out)->tenant, sizeof(*out)->tenant, "%s", tenant);
    if (rc == 0)
        abx__event(c->ops, "create", (*out)->qualified, tenant,
                   json_pack("{s:s, s:s, s:b}", "template", o && o->template_id ? o->template_id : "base",
                             "network", mode, "persistent", o && o->persistent));
    abx__quota_release(c, networked, rc == 0);
    return rc;
}

int abx_sandbox_notes(abx_sandbox *s, char **json, abx_error **err)
{
    *json = NULL;
    if (s->ops->notes)
        return s->ops->notes(s, json, err);
    if (!(*json = strdup(s->notes ? s->notes : "{}")))
        return abx__error_set(err, ABX_ENOMEM, "notes");
    return 0;
}

/* ---- info, list, timeout, kill ------------------------------------------------ */

void abx_sandbox_info_clear(abx_sandbox_info *info)
{
    if (!info)
        return;
    free(info->metadata_json);
    free(info->env_names_json);
    free(info->network_json);
    free(info->volumes_json);
    memset(info, 0, sizeof *info);
}

int abx_sandbox_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    return s->ops->get_info(s, out, err);
}

int abx_get_info_by_id(abx_client *c, const char *id, abx_sandbox_info *out, abx_error **err)
{
    abx_sandbox *s = NULL;
    int rc = abx_sandbox_connect(c, id, &s, err);
    if (rc == 0)
        rc = abx_sandbox_get_info(s, out, err);
    abx_sandbox_free(s);
    return rc;
}

static int cmp_started(const void *a, const void *b)
{
    const abx_sandbox_info *x = a, *y = b;
    if (x->started_at != y->started_at)
        return x->started_at < y->started_at ? -1 : 1;
    return strcmp(x->sandbox_id, y->sandbox_id);
}

void abx_sandbox_info_list_free(abx_sandbox_info *items, size_t count)
{
    for (size_t i = 0; items && i < count; i++)
        abx_sandbox_info_clear(&items[i]);
    free(items);
}

int abx_list(abx_client *c, const char *status_filter, unsigned limit, unsigned offset,
             abx_sandbox_info **items, size_t *count, abx_error **err)
{
    *items = NULL;
    *count = 0;
    if (limit < 1 || limit > 100)
        return abx__error_set(err, ABX_EINVAL, "limit: must be from 1 to 100");
    if (status_filter && strcmp(status_filter, "running") != 0 && strcmp(status_filter, "paused") != 0)
        return abx__error_set(err, ABX_EINVAL, "status: must be running or paused");
    abx__listed *listed = NULL;
    size_t got = 0, n = 0;
    int rc = c->ops->list(c, status_filter, &listed, &got, err);
    if (rc < 0) {
        free(listed); /* a provider that left something behind */
        return rc;
    }
    abx_sandbox_info *all = got ? calloc(got, sizeof *all) : NULL;
    for (size_t i = 0; i < got; i++) {
        if (all && abx__tenant_may_see(c, listed[i].tenant))
            all[n++] = listed[i].info;
        else
            abx_sandbox_info_clear(&listed[i].info);
    }
    free(listed);
    if (got && !all)
        return abx__error_set(err, ABX_ENOMEM, "list");
    if (n)
        qsort(all, n, sizeof *all, cmp_started);
    size_t first = offset < n ? offset : n;
    size_t take = n - first < limit ? n - first : limit;
    for (size_t i = 0; i < first; i++)
        abx_sandbox_info_clear(&all[i]);
    for (size_t i = first + take; i < n; i++)
        abx_sandbox_info_clear(&all[i]);
    if (all)
        memmove(all, all + first, take * sizeof *all);
    *items = all;
    *count = take;
    return 0;
}

static int timeout_range(unsigned seconds, abx_error **err)
{
    if (seconds >= ABX_TIMEOUT_MIN_S && seconds <= ABX_TIMEOUT_MAX_S)
        return 0;
    return abx__error_set(err, ABX_EINVAL, "timeout: must be from %u to %u seconds", ABX_TIMEOUT_MIN_S,
                          ABX_TIMEOUT_MAX_S);
}

int abx_sandbox_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err)
{
    int rc = timeout_range(seconds, err);
    return rc < 0 ? rc : at_provider(err, s->ops->set_timeout(s, seconds, err), "timeout of", s->qualified);
}

int abx_set_timeout_by_id(abx_client *c, const char *id, unsigned seconds, abx_error **err)
{
    if (timeout_range(seconds, err) < 0)
        return -ABX_EINVAL;
    abx_sandbox *s = NULL;
    int rc = abx_sandbox_connect(c, id, &s, err);
    if (rc == 0)
        rc = abx_sandbox_set_timeout(s, seconds, err);
    abx_sandbox_free(s);
    return rc;
}

int abx_sandbox_kill(abx_sandbox *s, abx_error **err)
{
    int rc = at_provider(err, s->ops->kill(s, err), "kill", s->qualified);
    if (rc == 0)
        abx__event(s->ops, "kill", s->qualified, s->tenant, NULL);
    return rc;
}

int abx_kill_by_id(abx_client *c, const char *id, abx_error **err)
{
    abx_sandbox *s = NULL;
    int rc = abx_sandbox_connect(c, id, &s, err);
    if (rc == 0)
        rc = abx_sandbox_kill(s, err);
    abx_sandbox_free(s);
    return rc;
}

int abx_sandbox_port_url(abx_sandbox *s, unsigned port, char **url, abx_error **err)
{
    *url = NULL;
    if (port < 1 || port > 65535)
        return abx__error_set(err, ABX_EINVAL, "port: expected 1-65535");
    json_t *result = NULL;
    int rc = abx__sandbox_provider_call(s, "ports.url", "ports.url", json_pack("{s:i}", "port", (int)port),
                                        &result, err);
    const char *u = json_string_value(json_object_get(result, "url"));
    if (rc == 0 && (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)))
        rc = abx__error_set(err, ABX_EPROVIDER, "the provider answered ports.url without an http(s) url");
    if (rc == 0 && !(*url = strdup(u)))
        rc = abx__error_set(err, ABX_ENOMEM, "url");
    json_decref(result);
    return rc;
}

int abx__sandbox_provider_call(abx_sandbox *s, const char *capability, const char *method, json_t *params,
                               json_t **result, abx_error **err)
{
    *result = NULL;
    if (!s->ops->data_call) {
        json_decref(params);
        return abx__error_set(err, ABX_ENOTSUP, "%s: provider '%s' has no such operation", method,
                              s->ops->name);
    }
    return s->ops->data_call(s, capability, method, params, result, err);
}

int abx_sandbox_pause(abx_sandbox *s, abx_error **err)
{
    if (!s->ops->pause)
        return abx__error_set(err, ABX_ENOTSUP, "pausing: provider '%s' cannot", s->ops->name);
    int rc = at_provider(err, s->ops->pause(s, true, 0, err), "pause", s->qualified);
    if (rc == 0)
        abx__event(s->ops, "pause", s->qualified, s->tenant, NULL);
    return rc;
}

int abx_sandbox_resume(abx_sandbox *s, unsigned timeout_s, abx_error **err)
{
    if (timeout_s > ABX_TIMEOUT_MAX_S)
        return abx__error_set(err, ABX_EINVAL, "timeout: at most %u seconds", ABX_TIMEOUT_MAX_S);
    if (!s->ops->pause)
        return abx__error_set(err, ABX_ENOTSUP, "resuming: provider '%s' cannot", s->ops->name);
    int rc = at_provider(err, s->ops->pause(s, false, timeout_s, err), "resume", s->qualified);
    if (rc == 0)
        abx__event(s->ops, "resume", s->qualified, s->tenant, NULL);
    return rc;
}

int abx_sandbox_get_metrics(abx_sandbox *s, abx_sandbox_metrics *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!s->ops->metrics)
        return abx__error_set(err, ABX_ENOTSUP, "metrics: provider '%s' has none", s->ops->name);
    return at_provider(err, s->ops->metrics(s, out, err), "metrics of", s->qualified);
}

int abx_sandbox_get_stats(abx_sandbox *s, abx_sandbox_stats *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!s->ops->stats)
        return abx__error_set(err, ABX_ENOTSUP, "stats: provider '%s' has none", s->ops->name);
    return at_provider(err, s->ops->stats(s, out, err), "stats of", s->qualified);
}

static unsigned long long json_count(json_t *doc, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(doc, key));
    return v > 0 ? (unsigned long long)v : 0;
}

void abx__stats_from_json(json_t *doc, abx_sandbox_stats *out)
{
    memset(out, 0, sizeof *out);
    out->cpu_usec = json_count(doc, "cpu_us");
    out->mem_bytes = json_count(doc, "mem_bytes");
    out->mem_peak_bytes = json_count(doc, "mem_peak_bytes");
    out->mem_limit_bytes = json_count(doc, "mem_limit_bytes");
    out->pids = json_count(doc, "pids");
    out->pids_limit = json_count(doc, "pids_limit");
    out->oom_kills = json_count(doc, "oom_kills");
    out->disk_used_bytes = json_count(doc, "disk_used_bytes");
    out->disk_limit_bytes = json_count(doc, "disk_limit_bytes");
    json_t *net = json_object_get(doc, "network");
    out->has_network = json_is_object(net);
    out->net_out_bytes = json_count(net, "out_bytes");
    out->net_out_packets = json_count(net, "out_packets");
    out->net_in_bytes = json_count(net, "in_bytes");
    out->net_in_packets = json_count(net, "in_packets");
    out->net_refused_packets = json_count(net, "refused_packets");
}

int abx_sandbox_get_history(abx_sandbox *s, char **json, abx_error **err)
{
    *json = NULL;
    if (!s->ops->history)
        return abx__error_set(err, ABX_ENOTSUP, "history: provider '%s' keeps none", s->ops->name);
    json_t *samples = NULL;
    int rc = at_provider(err, s->ops->history(s, &samples, err), "history of", s->qualified);
    if (rc == 0 && !(*json = json_dumps(samples, JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "history");
    json_decref(samples);
    return rc;
}

int abx_host_pools_get(abx_client *c, abx_host_pools *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (c->tenant[0] || c->tenant_set)
        return abx__error_set(err, ABX_ENOTALLOWED, "the host's pools are its administrator's to see");
    if (!c->ops->pool_usage)
        return abx__error_set(err, ABX_ENOTSUP, "pools: provider '%s' has none on this host", c->ops->name);
    return c->ops->pool_usage(c, out, err);
}

int abx_sandbox_connect_port(abx_sandbox *s, unsigned port, int *fd, abx_error **err)
{
    *fd = -1;
    if (port < 1 || port > 65535)
        return abx__error_set(err, ABX_EINVAL, "port: expected 1-65535");
    if (!s->ops->connect_port)
        return abx__error_set(err, ABX_ENOTSUP, "ports: provider '%s' cannot reach them", s->ops->name);
    return s->ops->connect_port(s, port, fd, err);
}

/* ---- the data plane's endpoints ------------------------------------------------------- */

/* From the envd data plane: its base URL and routing (an E2B host reached
 * by headers), or the code interpreter's own URL. */
static int envd_endpoint(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err)
{
    const abx_envd *e = &s->envd;
    if (!e->base_url[0] || e->unix_socket[0])
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' has no data plane to relay", s->ops->name);
    if (e->route_id[0]) {
        snprintf(out->url, sizeof out->url, "%s", e->base_url);
        snprintf(out->headers[0], sizeof out->headers[0], "E2b-Sandbox-Id: %s", e->route_id);
        snprintf(out->headers[1], sizeof out->headers[1], "E2b-Sandbox-Port: %u", port);
    } else if (port == ABX_PORT_ENVD) {
        snprintf(out->url, sizeof out->url, "%s", e->base_url);
    } else if (port == ABX_PORT_CODE && e->code_url[0]) {
        snprintf(out->url, sizeof out->url, "%s", e->code_url);
    } else {
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s': port %u cannot be relayed", s->ops->name,
                              port);
    }
    snprintf(out->token, sizeof out->token, "%s", e->token);
    return 0;
}

int abx_sandbox_endpoint(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (port < 1 || port > 65535)
        return abx__error_set(err, ABX_EINVAL, "port: expected 1-65535");
    return s->ops->endpoint ? s->ops->endpoint(s, port, out, err) : envd_endpoint(s, port, out, err);
}

int abx_sandbox_socket(abx_sandbox *s, int *fd, abx_error **err)
{
    *fd = -1;
    if (!s->ops->socket)
        return abx__error_set(err, ABX_ENOTSUP,
                              "provider '%s' makes no sockets in its sandboxes: use its endpoint URL",
                              s->ops->name);
    return s->ops->socket(s, fd, err);
}

/* ---- templates ---------------------------------------------------------------------------- */

int abx_template_exists(abx_client *c, const char *name, abx_error **err)
{
    if (!name || !*name || strlen(name) > 64)
        return abx__error_set(err, ABX_EINVAL, "template: a name of 1-64 characters");
    if (c->ops->template_exists)
        return c->ops->template_exists(c, name, err);
    if (strcmp(name, "base") == 0)
        return 0;
    return abx__error_set(err, ABX_ENOTFOUND, "template '%.64s' not found", name);
}

int abx_templates(abx_client *c, char **json, abx_error **err)
{
    *json = NULL;
    json_t *list = NULL;
    int rc = c->ops->template_list ? c->ops->template_list(c, &list, err) : 0;
    if (rc == 0 && !list)
        list = json_pack("[{s:s}]", "name", "base");
    if (rc == 0 && !(*json = json_dumps(list, JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "templates");
    json_decref(list);
    return rc;
}

int abx_client_features(abx_client *c, char **json, abx_error **err)
{
    *json = NULL;
    json_t *list = NULL;
    int rc = c->ops->features ? c->ops->features(c, &list, err) : 0;
    if (rc == 0 && !list)
        list = json_array();
    if (rc == 0 && !(*json = json_dumps(list, JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "features");
    json_decref(list);
    return rc;
}
