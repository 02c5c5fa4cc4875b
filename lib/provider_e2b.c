/* provider_e2b.c: the client of E2B-protocol clouds (../shared/
 * e2b-protocol.md §1): the built-in providers `e2b` and `alicloud-express`
 * (the spec's name for the same protocol), every installed `rest` plugin,
 * and another machine's `abx serve`.
 *
 * Owns: configuration (ABX_SANDBOX_API_KEY, ABX_SANDBOX_BASE_URL,
 * ABX_SANDBOX_DOMAIN, else providers.<id>.api_key / base_url / domain; a
 * rest plugin's base_url and domain from its verified manifest unless
 * providers.<id>.base_url / domain say otherwise), the REST
 * control plane over libcurl (create, connect, info, list with paging,
 * timeout, kill), HTTP statuses as E-codes (401/403 auth, 404 not found,
 * 429 rate limited, after one retry honouring Retry-After, 5xx provider)
 * whose messages never carry a URL, a key or a body, and each sandbox's
 * data plane: envd at https://49983-ID.DOMAIN when a domain is set, else
 * the base URL with E2b-Sandbox-Id / E2b-Sandbox-Port headers (E2B's
 * E2B_SANDBOX_URL way). The data plane itself is lib/sandbox_envd.c's.
 */
#include "provider.h"
#include "volume.h"
#include "tenant.h"
#include "parse.h"
#include "buf.h"
#include "config.h"
#include "epp_exec.h"
#include "error_internal.h"
#include "manifest.h"
#include "netlibs.h"
#include "plugin_store.h"
#include "service_client.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ANSWER (8u << 20)
#define MAX_LIST_PAGES 100

typedef struct e2b_client {
    char id[64];        /* the provider's name, the ids' prefix */
    char base_url[512]; /* the control plane, no trailing slash */
    char domain[256];   /* "" : route the data plane by headers to base_url */
    char api_key[256];
    char unix_socket[108]; /* "" : TCP; else the abx service's socket (no key: the kernel names the caller) */
    bool all_tenants;      /* ask the service, as its administrator, for every user's sandboxes */
    pthread_mutex_t mu;    /* tasks */
    abx_epp_execs *tasks;  /* background tasks this process follows; made at the first */
} e2b_client;

typedef struct e2b_sandbox {
    abx_client *client; /* a reference: the configuration lives there */
    char id[64];
} e2b_sandbox;

/* ---- configuration ------------------------------------------------------------------- */

static void pick(char *out, size_t len, const char *env, const abx_kvs *kvs, const char *id, const char *key,
                 const char *def)
{
    char name[128];
    snprintf(name, sizeof name, "providers.%s.%s", id, key);
    const char *v = env && getenv(env) && *getenv(env) ? getenv(env) : kvs ? abx__kvs_get(kvs, name) : NULL;
    snprintf(out, len, "%s", v ? v : def ? def : "");
}

static void trim_slash(char *url)
{
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        url[--n] = '\0';
}

static int check_config(e2b_client *ec, abx_error **err)
{
    trim_slash(ec->base_url);
    if (strncmp(ec->base_url, "http://", 7) != 0 && strncmp(ec->base_url, "https://", 8) != 0)
        return abx__error_set(
            err, ABX_ECONFIG,
            "provider '%s' has no API URL: set ABX_SANDBOX_BASE_URL or providers.%s.base_url "
            "(an http(s) URL)",
            ec->id, ec->id);
    if (!ec->api_key[0])
        return abx__error_set(err, ABX_EAUTH,
                              "provider '%s' has no API key: set ABX_SANDBOX_API_KEY or 'abx config set "
                              "providers.%s.api_key' (read from stdin)",
                              ec->id, ec->id);
    return 0;
}

/* A client of the built-in e2b / alicloud-express, or (manifest non-NULL)
 * of rest plugin id. */
static int attach(abx_client *c, const char *id, const abx_manifest *manifest, abx_error **err)
{
    e2b_client *ec = calloc(1, sizeof *ec);
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (!ec || !kvs) {
        free(ec);
        free(kvs);
        return abx__error_set(err, ABX_ENOMEM, "provider");
    }
    if (abx__config_load(kvs, NULL) < 0) {
        free(kvs);
        kvs = NULL;
    }
    snprintf(ec->id, sizeof ec->id, "%s", id);
    bool builtin = !manifest;
    pick(ec->api_key, sizeof ec->api_key, builtin ? "ABX_SANDBOX_API_KEY" : NULL, kvs, id, "api_key", NULL);
    if (builtin) {
        pick(ec->base_url, sizeof ec->base_url, "ABX_SANDBOX_BASE_URL", kvs, id, "base_url",
             strcmp(id, "e2b") == 0 ? "https://api.e2b.app" : NULL);
        pick(ec->domain, sizeof ec->domain, "ABX_SANDBOX_DOMAIN", kvs, id, "domain", NULL);
    } else {
        pick(ec->base_url, sizeof ec->base_url, NULL, kvs, id, "base_url", manifest->base_url);
        pick(ec->domain, sizeof ec->domain, NULL, kvs, id, "domain", manifest->domain);
    }
    if (kvs)
        explicit_bzero(kvs, sizeof *kvs);
    free(kvs);
    int rc = check_config(ec, err);
    if (rc < 0) {
        explicit_bzero(ec, sizeof *ec);
        free(ec);
        return rc;
    }
    pthread_mutex_init(&ec->mu, NULL);
    c->ops = &abx__provider_e2b;
    c->state = ec;
    return 0;
}

int abx__provider_e2b_attach(abx_client *c, const char *name, abx_error **err)
{
    return attach(c, name, NULL, err);
}

int abx__provider_rest_attach(abx_client *c, const abx_manifest *m, abx_error **err)
{
    return attach(c, m->id, m, err);
}

int abx__provider_service_attach(abx_client *c, const char *socket_path, bool all_tenants, abx_error **err)
{
    e2b_client *ec = calloc(1, sizeof *ec);
    if (!ec)
        return abx__error_set(err, ABX_ENOMEM, "provider");
    snprintf(ec->id, sizeof ec->id, "%s", c->provider);
    snprintf(ec->base_url, sizeof ec->base_url, "http://localhost");
    snprintf(ec->unix_socket, sizeof ec->unix_socket, "%s", socket_path);
    ec->all_tenants = all_tenants;
    pthread_mutex_init(&ec->mu, NULL);
    c->ops = &abx__provider_e2b;
    c->state = ec;
    return 0;
}

const char *abx__provider_service_socket(const abx_client *c)
{
    if (c->ops != &abx__provider_e2b || !c->state)
        return NULL;
    const e2b_client *ec = c->state;
    return ec->unix_socket[0] ? ec->unix_socket : NULL;
}

static void e2b_free_state(void *state)
{
    e2b_client *ec = state;
    if (!ec)
        return;
    abx__epp_execs_free(ec->tasks);
    pthread_mutex_destroy(&ec->mu);
    explicit_bzero(ec, sizeof *ec);
    free(ec);
}

static abx_epp_execs *e2b_task_table(abx_sandbox *s, abx_client **ref)
{
    e2b_sandbox *es = s->impl;
    e2b_client *ec = es->client->state;
    pthread_mutex_lock(&ec->mu);
    if (!ec->tasks)
        ec->tasks = abx__epp_execs_new();
    abx_epp_execs *t = ec->tasks;
    pthread_mutex_unlock(&ec->mu);
    *ref = abx__client_ref(es->client);
    return t;
}

/* ---- the REST calls --------------------------------------------------------------------- */

typedef struct answer {
    abx_buf body; /* at most MAX_ANSWER */
    bool too_big;
    long retry_after;
    char next_token[128];
} answer;

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    answer *a = ud;
    int rc = abx__buf_append(&a->body, data, size * n);
    a->too_big |= rc == -ABX_ETOOBIG;
    return rc == 0 ? size * n : 0;
}

/* Retry-After and X-Next-Token, the only headers read. */
static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    answer *a = ud;
    size_t len = size * n;
    if (len > 12 && strncasecmp(line, "Retry-After:", 12) == 0)
        a->retry_after = strtol(line + 12, NULL, 10);
    if (len > 13 && strncasecmp(line, "X-Next-Token:", 13) == 0) {
        const char *v = line + 13;
        while (*v == ' ')
            v++;
        size_t vl = strcspn(v, "\r\n");
        if (vl < sizeof a->next_token)
            snprintf(a->next_token, sizeof a->next_token, "%.*s", (int)vl, v);
    }
    return len;
}

/* The service's own answers carry abx's code ("E8033: ..."): kept, with
 * its words (the service says only what the caller may know). */
static int service_error(const answer *a, abx_error **err)
{
    json_t *doc = json_loadb(a->body.data ? a->body.data : "", a->body.len, 0, NULL);
    const char *m = json_string_value(json_object_get(doc, "message"));
    unsigned code = 0;
    int rc = 0;
    if (m && sscanf(m, "E%4u: ", &code) == 1 && code > 8000 && code < 9000 && strlen(m) > 7)
        rc = abx__error_set(err, (int)code, "%s", m + 7);
    json_decref(doc);
    return rc;
}

static int status_error(const e2b_client *ec, long status, abx_error **err)
{
    if (status == 401 || status == 403)
        return abx__error_set(err, ABX_EAUTH, "provider '%s' refused the API key (%ld)", ec->id, status);
    if (status == 404)
        return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox");
    if (status == 429)
        return abx__error_set(err, ABX_ELIMIT, "provider '%s' is rate limiting (429): try again later",
                              ec->id);
    if (status == 400 || status == 409 || status == 413)
        return abx__error_set(err, ABX_EINVAL, "provider '%s' refused the request (%ld)", ec->id, status);
    return abx__error_set(err, ABX_EPROVIDER, "provider '%s' failed (%ld)", ec->id, status);
}

/* A request's body from a file (the service's uploads): its bytes from its offset. */
typedef struct upload {
    int fd;             /* -1: none */
    const char *header; /* one more header line, or NULL */
    long timeout_s;     /* 0: the default */
} upload;

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
    const upload *u = ud;
    ssize_t got;
    do
        got = read(u->fd, buf, size * n);
    while (got < 0 && errno == EINTR);
    return got < 0 ? CURL_READFUNC_ABORT : (size_t)got;
}

static int api_ex(const e2b_client *ec, const char *method, const char *path, json_t *body, const upload *up,
                  json_t **out, char *next_token, size_t nt_len, abx_error **err);

/* method path (body may be NULL): 2xx with *out the parsed answer (NULL
 * when empty; the caller's), else the status as an error. next_token (may
 * be NULL) receives X-Next-Token. */
static int api(const e2b_client *ec, const char *method, const char *path, json_t *body, json_t **out,
               char *next_token, size_t nt_len, abx_error **err)
{
    return api_ex(ec, method, path, body, NULL, out, next_token, nt_len, err);
}

int abx__provider_service_call(abx_client *c, const char *method, const char *path, int body_fd,
                               const char *header, long timeout_s, json_t **out, abx_error **err)
{
    const e2b_client *ec = abx__client_root(c)->state;
    if (!abx__provider_service_socket(abx__client_root(c)))
        return abx__error_set(err, ABX_ENOTSUP, "not a client of the abx service");
    upload up = {.fd = body_fd, .header = header, .timeout_s = timeout_s};
    return api_ex(ec, method, path, NULL, &up, out, NULL, 0, err);
}

static int api_ex(const e2b_client *ec, const char *method, const char *path, json_t *body, const upload *up,
                  json_t **out, char *next_token, size_t nt_len, abx_error **err)
{
    *out = NULL;
    if (!abx__curl())
        return abx__error_set(err, ABX_EHOSTSUPPORT, "libcurl could not be loaded");
    char url[1200], key[300];
    snprintf(url, sizeof url, "%s%s", ec->base_url, path);
    snprintf(key, sizeof key, "X-API-Key: %s", ec->api_key);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    int rc = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        CURL *c = curl_easy_init();
        struct curl_slist *h = curl_slist_append(NULL, ec->unix_socket[0] ? "X-Abx-Peer: 1" : key);
        if (ec->all_tenants)
            h = curl_slist_append(h, "X-Abx-All-Tenants: 1");
        h = curl_slist_append(h, up && up->fd >= 0 ? "Content-Type: application/x-tar"
                                                   : "Content-Type: application/json");
        if (up && up->header)
            h = curl_slist_append(h, up->header);
        h = curl_slist_append(h, "User-Agent: abx/"
                                 "0.1");
        answer a = {.retry_after = -1};
        abx__buf_init(&a.body, MAX_ANSWER);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, up && up->timeout_s ? up->timeout_s : 120L);
        if (up && up->fd >= 0) {
            struct stat st;
            curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(c, CURLOPT_READDATA, up);
            if (fstat(up->fd, &st) == 0 && S_ISREG(st.st_mode))
                curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
                                 (curl_off_t)(st.st_size - lseek(up->fd, 0, SEEK_CUR)));
        }
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        if (ec->unix_socket[0])
            curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, ec->unix_socket);
        if (text) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
        }
        CURLcode cc = curl_easy_perform(c);
        long status = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        if (cc != CURLE_OK && a.too_big) {
            rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered more than %u MiB", ec->id,
                                MAX_ANSWER >> 20);
        } else if (cc != CURLE_OK && ec->unix_socket[0]) {
            rc =
                abx__error_set(err, ABX_ESERVICE, "the abx service at %s is not reachable (%s)",
                               ec->unix_socket, cc == CURLE_OPERATION_TIMEDOUT ? "timed out" : "not running");
        } else if (cc != CURLE_OK) {
            rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s': its API could not be reached (%s)",
                                ec->id, cc == CURLE_OPERATION_TIMEDOUT ? "timed out" : "connection failed");
        } else if (status == 429 && attempt == 0 && a.retry_after >= 0 && a.retry_after <= 30 &&
                   !(up && up->fd >= 0)) {
            sleep((unsigned)a.retry_after); /* honoured once */
            abx__buf_free(&a.body);
            continue;
        } else if (status < 200 || status > 299) {
            rc = ec->unix_socket[0] ? service_error(&a, err) : 0;
            if (rc == 0)
                rc = status_error(ec, status, err);
        } else if (a.body.len) {
            *out = json_loadb(a.body.data, a.body.len, 0, NULL);
            if (!*out)
                rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered something that is not JSON",
                                    ec->id);
        }
        if (next_token)
            snprintf(next_token, nt_len, "%s", a.next_token);
        abx__buf_free(&a.body);
        break;
    }
    explicit_bzero(key, sizeof key);
    free(text);
    return rc;
}

/* ---- handles ------------------------------------------------------------------------------- */

static bool id_ok(const char *id)
{
    if (!id || !*id || strlen(id) >= 64)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_'))
            return false;
    return true;
}

/* A handle from a Sandbox / SandboxDetail answer. */
static int handle_from(abx_client *c, json_t *doc, abx_sandbox **out, abx_error **err)
{
    e2b_client *ec = c->state;
    const char *sid = json_string_value(json_object_get(doc, "sandboxID"));
    if (!id_ok(sid))
        return abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered without a usable sandboxID",
                              ec->id);
    char qualified[160];
    snprintf(qualified, sizeof qualified, "%s:%s", ec->id, sid);
    abx_sandbox *s = abx__sandbox_new(&abx__provider_e2b, qualified);
    e2b_sandbox *es = s ? calloc(1, sizeof *es) : NULL;
    if (!es) {
        free(s);
        return abx__error_set(err, ABX_ENOMEM, "sandbox handle");
    }
    es->client = abx__client_ref(c);
    snprintf(es->id, sizeof es->id, "%s", sid);
    s->impl = es;
    const char *token = json_string_value(json_object_get(doc, "envdAccessToken"));
    json_t *meta = json_object_get(doc, "metadata"); /* a detail's: whose it is, its notes */
    if (json_is_object(meta))
        abx__remote_meta_take(meta, s->tenant, &s->notes);
    if (ec->domain[0]) {
        const char *scheme = strncmp(ec->base_url, "http://", 7) == 0 ? "http" : "https";
        char envd[400], code[400];
        snprintf(envd, sizeof envd, "%s://49983-%s.%s", scheme, sid, ec->domain);
        snprintf(code, sizeof code, "%s://49999-%s.%s", scheme, sid, ec->domain);
        abx__envd_init(&s->envd, envd, NULL, token);
        abx__envd_route(&s->envd, NULL, code);
    } else {
        abx__envd_init(&s->envd, ec->base_url, ec->unix_socket[0] ? ec->unix_socket : NULL, token);
        abx__envd_route(&s->envd, sid, NULL);
        if (ec->unix_socket[0]) /* the service relays the shim's own rings: tasks outlive this client */
            s->data = &abx__data_shim;
    }
    *out = s;
    return 0;
}

static void e2b_free_impl(void *impl)
{
    e2b_sandbox *es = impl;
    if (es)
        abx_client_free(es->client);
    free(es);
}

static int e2b_connect(abx_client *c, const char *id, abx_sandbox **out, abx_error **err)
{
    if (!id_ok(id))
        return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox");
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s", id);
    json_t *doc = NULL;
    int rc = api(c->state, "GET", path, NULL, &doc, NULL, 0, err);
    if (rc == 0)
        rc = handle_from(c, doc, out, err);
    json_decref(doc);
    return rc;
}

/* "K=V" pairs as an object, or NULL. */
static json_t *pairs(const char *const *p, const char *field, bool env_names, abx_error **err, int *rc)
{
    if (!p || !p[0])
        return NULL;
    json_t *o = json_object();
    *rc = abx__pairs_to_object(p, o, field, env_names, err);
    return o;
}

static json_t *strings(const char *const *list)
{
    json_t *a = json_array();
    for (size_t i = 0; list && list[i]; i++)
        json_array_append_new(a, json_string(list[i]));
    return a;
}

/* What abx's create says beyond E2B's (the service's "abx" object). */
static json_t *service_options(const abx_create_options *o)
{
    json_t *x =
        json_pack("{s:i, s:i, s:o, s:o}", "cpuCount", (int)o->cpu_count, "memoryMB", (int)o->memory_mb,
                  "allowOut", strings(o->allow_out), "denyOut", strings(o->deny_out));
    if (o->network)
        json_object_set_new(x, "network", json_string(o->network));
    return x;
}

/* ---- snapshots: E2B's /sandboxes/{id}/snapshots, /snapshots, DELETE /templates/{id} ------------- */

/* libabx's snapshot info of E2B's SnapshotInfo {snapshotID, names} (the service adds abx's own). */
static json_t *snapshot_info_of(json_t *v, const char *sandbox_id)
{
    json_t *own = json_object_get(v, "abx");
    json_t *info = json_is_object(own) ? json_deep_copy(own) : json_object();
    json_object_set(info, "snapshot_id", json_object_get(v, "snapshotID"));
    if (!json_object_get(info, "name"))
        json_object_set(info, "name",
                        json_array_get(json_object_get(v, "names"), 0) ?: json_object_get(v, "snapshotID"));
    if (sandbox_id && !json_object_get(info, "snapshot"))
        json_object_set_new(info, "snapshot", json_pack("{s:s}", "sandbox_id", sandbox_id));
    return info;
}

static int e2b_snapshot(abx_sandbox *s, const char *name, bool fork, json_t **info, abx_error **err)
{
    (void)fork; /* the host keeps it until it is removed: a fork removes it itself */
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/snapshots", es->id);
    json_t *body = name ? json_pack("{s:s}", "name", name) : json_object(), *doc = NULL;
    int rc = api(es->client->state, "POST", path, body, &doc, NULL, 0, err);
    json_decref(body);
    if (rc == 0 && !(*info = snapshot_info_of(doc, es->id)))
        rc = abx__error_set(err, ABX_ENOMEM, "snapshot");
    json_decref(doc);
    return rc;
}

static int e2b_snapshots(abx_client *c, const char *verb, const char *name, const char *sandbox_id,
                         json_t **out, abx_error **err)
{
    e2b_client *ec = c->state;
    char path[256];
    json_t *doc = NULL;
    if (strcmp(verb, "remove") == 0) {
        if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(name))
            return abx__error_set(err, ABX_ENOTFOUND, "snapshot %.64s: no such snapshot", name);
        snprintf(path, sizeof path, "/templates/%s", name);
        int rc = api(ec, "DELETE", path, NULL, &doc, NULL, 0, err);
        json_decref(doc);
        return rc;
    }
    const char *bare = sandbox_id && strchr(sandbox_id, ':') ? strchr(sandbox_id, ':') + 1 : sandbox_id;
    if (bare && strspn(bare, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(bare))
        return abx__error_set(err, ABX_EINVAL, "--sandbox: a sandbox id");
    snprintf(path, sizeof path, "/snapshots%s%s", bare ? "?sandboxID=" : "", bare ? bare : "");
    int rc = api(ec, "GET", path, NULL, &doc, NULL, 0, err);
    if (rc < 0)
        return rc;
    *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(doc, i, v) json_array_append_new(*out, snapshot_info_of(v, NULL));
    json_decref(doc);
    return 0;
}

/* E2B's volumeMounts of the create's volumes (abx's readOnly for the service only). */
static int volume_mounts(const e2b_client *ec, const abx_create_options *o, json_t *body, abx_error **err)
{
    size_t n = 0;
    while (o && o->volumes && o->volumes[n])
        n++;
    if (!n)
        return 0;
    abx_volume_mount m[ABX_VOLUME_MOUNTS_MAX];
    int rc = abx__volume_mounts_parse(o->volumes, m, &n, err);
    json_t *arr = json_array();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (m[i].read_only && !ec->unix_socket[0])
            rc = abx__error_set(err, ABX_ENOTSUP,
                                "--volume %s:ro: provider '%s' mounts volumes read-write only", m[i].name,
                                ec->id);
        json_t *one = json_pack("{s:s, s:s}", "name", m[i].name, "path", m[i].path);
        if (m[i].read_only)
            json_object_set_new(one, "readOnly", json_true());
        json_array_append_new(arr, one);
    }
    if (rc == 0)
        json_object_set_new(body, "volumeMounts", arr);
    else
        json_decref(arr);
    return rc;
}

static int e2b_create(abx_client *c, const abx_create_options *o, abx_sandbox **out, abx_error **err)
{
    int rc = 0;
    if (o && o->options && o->options[0])
        return abx__error_set(err, ABX_EINVAL, "--opt: provider '%s' takes no options",
                              ((e2b_client *)c->state)->id);
    json_t *body = json_pack("{s:s, s:i}", "templateID", o && o->template_id ? o->template_id : "base",
                             "timeout", o && o->timeout_s ? (int)o->timeout_s : 300);
    json_t *meta = pairs(o ? o->metadata : NULL, "metadata", false, err, &rc);
    if (rc == 0 && !meta)
        meta = json_object();
    if (rc == 0)
        rc = abx__remote_meta_put(c, o, meta, err);
    json_t *envs = rc == 0 ? pairs(o ? o->envs : NULL, "envs", true, err, &rc) : NULL;
    if (meta && json_object_size(meta))
        json_object_set_new(body, "metadata", meta);
    else
        json_decref(meta);
    if (envs)
        json_object_set_new(body, "envVars", envs);
    if (((e2b_client *)c->state)->unix_socket[0] && o) /* the service takes abx's own create options too */
        json_object_set_new(body, "abx", service_options(o));
    if (o && (o->persistent || o->pause_on_timeout)) /* E2B's: an auto-paused sandbox is durable */
        json_object_set_new(body, "autoPause", json_true());
    if (o && o->pause_drops_memory)
        json_object_set_new(body, "autoPauseMemory", json_false());
    json_t *doc = NULL;
    if (rc == 0)
        rc = volume_mounts(c->state, o, body, err);
    if (rc == 0)
        rc = api(c->state, "POST", "/sandboxes", body, &doc, NULL, 0, err);
    if (rc == -ABX_ENOTFOUND) /* E2B's API: 404 for a template it does not have */
        rc = abx__error_set(err, ABX_ENOTFOUND, "provider '%s' has no template '%.64s'",
                            ((e2b_client *)c->state)->id,
                            json_string_value(json_object_get(body, "templateID")));
    json_decref(body);
    if (rc == 0)
        rc = handle_from(c, doc, out, err);
    if (rc == 0 && o && o->notes_json && !((*out)->notes = strdup(o->notes_json))) {
        abx_sandbox_free(*out);
        *out = NULL;
        rc = abx__error_set(err, ABX_ENOMEM, "notes");
    }
    json_decref(doc);
    return rc;
}

/* ---- volumes: E2B's /volumes ---------------------------------------------------------------- */

/* libabx's volume info of E2B's Volume (abx's own details under "abx", from the service). */
static json_t *volume_info_of(json_t *v)
{
    json_t *own = json_object_get(v, "abx");
    json_t *size = json_object_get(own, "size_mb");
    json_t *created = json_object_get(own, "created_at");
    return json_pack("{s:O?, s:O?, s:I, s:O?, s:b}", "name", json_object_get(v, "name"), "volume_id",
                     json_object_get(v, "volumeID"), "size_mb", json_integer_value(size), "created_at",
                     json_is_string(created) ? created : NULL, "in_use",
                     json_is_true(json_object_get(own, "in_use")));
}

/* The volume id of name_or_id: itself when the API knows it as an id, else
 * the id of the volume of that name (E2B's API takes ids only). */
static int volume_id_of(e2b_client *ec, const char *name_or_id, char *id, size_t len, json_t **found,
                        abx_error **err)
{
    char path[160];
    snprintf(path, sizeof path, "/volumes/%s", name_or_id);
    int rc = api(ec, "GET", path, NULL, found, NULL, 0, NULL);
    if (rc == 0) {
        snprintf(id, len, "%s", name_or_id);
        return 0;
    }
    json_t *all = NULL, *v;
    size_t i;
    if ((rc = api(ec, "GET", "/volumes", NULL, &all, NULL, 0, err)) < 0)
        return rc;
    rc = abx__error_set(err, ABX_ENOTFOUND, "volume %.64s: no such volume (abx volume list)", name_or_id);
    json_array_foreach(all, i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *vid = json_string_value(json_object_get(v, "volumeID"));
        if (name && vid && strcmp(name, name_or_id) == 0 && strlen(vid) < len &&
            strspn(vid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == strlen(vid)) {
            snprintf(id, len, "%s", vid);
            *found = json_incref(v);
            rc = 0;
            break;
        }
    }
    json_decref(all);
    return rc;
}

static int e2b_volume(abx_client *c, const char *verb, const char *name, unsigned size_mb, json_t **out,
                      abx_error **err)
{
    e2b_client *ec = c->state;
    bool service = ec->unix_socket[0] != '\0';
    json_t *doc = NULL;
    int rc;
    *out = NULL;
    if (strcmp(verb, "create") == 0) {
        if (size_mb && !service)
            return abx__error_set(err, ABX_ENOTSUP, "--size: provider '%s' sizes its volumes itself", ec->id);
        json_t *body = json_pack("{s:s}", "name", name);
        if (size_mb)
            json_object_set_new(body, "abx", json_pack("{s:i}", "size_mb", (int)size_mb));
        rc = api(ec, "POST", "/volumes", body, &doc, NULL, 0, err);
        json_decref(body);
    } else if (strcmp(verb, "list") == 0) {
        if ((rc = api(ec, "GET", "/volumes", NULL, &doc, NULL, 0, err)) == 0) {
            json_t *list = json_array(), *v;
            size_t i;
            json_array_foreach(doc, i, v) json_array_append_new(list, volume_info_of(v));
            json_decref(doc);
            *out = list;
        }
        return rc;
    } else {
        char id[128], path[160];
        if ((rc = volume_id_of(ec, name, id, sizeof id, &doc, err)) < 0)
            return rc;
        if (strcmp(verb, "remove") == 0) {
            json_decref(doc);
            doc = NULL;
            snprintf(path, sizeof path, "/volumes/%s", id);
            rc = api(ec, "DELETE", path, NULL, &doc, NULL, 0, err);
            json_decref(doc);
            return rc;
        }
    }
    if (rc == 0 && !(*out = volume_info_of(doc)))
        rc = abx__error_set(err, ABX_ENOMEM, "volume");
    json_decref(doc);
    return rc;
}

static void info_from(const e2b_client *ec, json_t *d, abx_sandbox_info *out, char tenant[ABX_TENANT_MAX + 1])
{
    memset(out, 0, sizeof *out);
    snprintf(out->sandbox_id, sizeof out->sandbox_id, "%s:%s", ec->id,
             json_string_value(json_object_get(d, "sandboxID")) ?: "");
    snprintf(out->template_id, sizeof out->template_id, "%s",
             json_string_value(json_object_get(d, "templateID")) ?: "");
    snprintf(out->status, sizeof out->status, "%s",
             json_string_value(json_object_get(d, "state")) ?: "running");
    out->started_at = abx__parse_rfc3339(json_string_value(json_object_get(d, "startedAt")));
    out->end_at = abx__parse_rfc3339(json_string_value(json_object_get(d, "endAt")));
    out->cpu_count = (unsigned)json_integer_value(json_object_get(d, "cpuCount"));
    out->memory_mb = (unsigned)json_integer_value(json_object_get(d, "memoryMB"));
    out->disk_size_mb = (unsigned)json_integer_value(json_object_get(d, "diskSizeMB"));
    json_t *m = json_object_get(d, "metadata");
    char scratch[ABX_TENANT_MAX + 1];
    if (json_is_object(m))
        abx__remote_meta_take(m, tenant ? tenant : scratch, NULL);
    out->metadata_json = json_is_object(m) ? json_dumps(m, JSON_COMPACT) : strdup("{}");
    out->env_names_json = strdup("[]");
    json_t *own = json_object_get(d, "abx"); /* the service's: what abx itself knows */
    if (json_is_object(json_object_get(own, "network")))
        out->network_json = json_dumps(json_object_get(own, "network"), JSON_COMPACT);
    if (json_is_array(json_object_get(own, "env_names"))) {
        free(out->env_names_json);
        out->env_names_json = json_dumps(json_object_get(own, "env_names"), JSON_COMPACT);
    }
    json_t *durable = json_object_get(own, "durable");
    out->persistent = json_is_object(durable);
    out->boots = (unsigned)json_integer_value(json_object_get(durable, "boots"));
    snprintf(out->resumed_from, sizeof out->resumed_from, "%s",
             json_string_value(json_object_get(durable, "resumed_from")) ?: "");
    json_t *vols = json_object_get(own, "volumes");
    if (json_is_array(vols))
        out->volumes_json = json_dumps(vols, JSON_COMPACT);
    else if (json_array_size(json_object_get(d, "volumeMounts")))
        out->volumes_json = json_dumps(json_object_get(d, "volumeMounts"), JSON_COMPACT);
}

static int e2b_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s", es->id);
    json_t *doc = NULL;
    int rc = api(es->client->state, "GET", path, NULL, &doc, NULL, 0, err);
    if (rc == 0)
        info_from(es->client->state, doc, out, NULL);
    json_decref(doc);
    return rc;
}

static int e2b_list(abx_client *c, const char *status_filter, abx__listed **items, size_t *count,
                    abx_error **err)
{
    *items = NULL;
    *count = 0;
    size_t n = 0, cap = 0;
    abx__listed *all = NULL;
    char token[128] = "";
    int rc = 0;
    for (int page = 0; rc == 0 && page < MAX_LIST_PAGES; page++) {
        char path[400];
        snprintf(path, sizeof path, "/v2/sandboxes?limit=100&state=%s%s%s",
                 status_filter ? status_filter : "running,paused", token[0] ? "&nextToken=" : "", token);
        json_t *doc = NULL;
        rc = api(c->state, "GET", path, NULL, &doc, token, sizeof token, err);
        size_t i;
        json_t *d;
        json_array_foreach(doc, i, d)
        {
            if (n == cap) {
                abx__listed *grown = realloc(all, (cap = cap ? cap * 2 : 64) * sizeof *all);
                if (!grown)
                    break;
                all = grown;
            }
            info_from(c->state, d, &all[n].info, all[n].tenant);
            n++;
        }
        json_decref(doc);
        if (!token[0] ||
            strspn(token, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.=") !=
                strlen(token))
            break;
    }
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            abx_sandbox_info_clear(&all[i].info);
        free(all);
        return rc;
    }
    *items = all;
    *count = n;
    return 0;
}

static int e2b_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/timeout", es->id);
    json_t *body = json_pack("{s:i}", "timeout", (int)seconds), *doc = NULL;
    int rc = api(es->client->state, "POST", path, body, &doc, NULL, 0, err);
    json_decref(body);
    json_decref(doc);
    return rc;
}

static int e2b_kill(abx_sandbox *s, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s", es->id);
    json_t *doc = NULL;
    int rc = api(es->client->state, "DELETE", path, NULL, &doc, NULL, 0, err);
    json_decref(doc);
    return rc;
}

/* pause: POST /sandboxes/ID/pause (409: already paused); resume: connect,
 * which resumes a paused sandbox. */
static int e2b_pause(abx_sandbox *s, bool pause, unsigned timeout, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/%s", es->id, pause ? "pause" : "connect");
    json_t *body = pause ? json_object() : json_pack("{s:i}", "timeout", timeout ? (int)timeout : 300),
           *doc = NULL;
    abx_error *first = NULL;
    int rc = api(es->client->state, "POST", path, body, &doc, NULL, 0, &first);
    json_decref(body);
    json_decref(doc);
    if (rc == -ABX_EINVAL && pause) {
        abx_error_free(first);
        return abx__error_set(err, ABX_EINVAL, "the sandbox is already paused");
    }
    if (err)
        *err = first;
    else
        abx_error_free(first);
    return rc;
}

/* Any port: at PORT-ID.DOMAIN when a domain is set, else the base URL
 * with E2B's routing headers. */
static int e2b_endpoint(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err)
{
    (void)err;
    e2b_sandbox *es = s->impl;
    const e2b_client *ec = es->client->state;
    if (ec->domain[0]) {
        const char *scheme = strncmp(ec->base_url, "http://", 7) == 0 ? "http" : "https";
        snprintf(out->url, sizeof out->url, "%s://%u-%s.%s", scheme, port, es->id, ec->domain);
    } else {
        snprintf(out->url, sizeof out->url, "%s", ec->base_url);
        snprintf(out->unix_socket, sizeof out->unix_socket, "%s", ec->unix_socket);
        snprintf(out->headers[0], sizeof out->headers[0], "E2b-Sandbox-Id: %s", es->id);
        snprintf(out->headers[1], sizeof out->headers[1], "E2b-Sandbox-Port: %u", port);
    }
    snprintf(out->token, sizeof out->token, "%s", s->envd.token);
    return 0;
}

/* PUT /sandboxes/ID/network with abx's own policy (the service only). */
static int e2b_set_network(abx_sandbox *s, json_t *policy, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    const e2b_client *ec = es->client->state;
    if (!ec->unix_socket[0])
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' cannot change a sandbox's network", ec->id);
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/network", es->id);
    json_t *own = json_pack("{s:O, s:O}", "allowOut", json_object_get(policy, "allow_out") ?: json_array(),
                            "denyOut", json_object_get(policy, "deny_out") ?: json_array());
    const char *mode = json_string_value(json_object_get(policy, "mode"));
    if (own && mode)
        json_object_set_new(own, "network", json_string(mode));
    json_t *body = json_pack("{s:o}", "abx", own), *doc = NULL;
    int rc = api(ec, "PUT", path, body, &doc, NULL, 0, err);
    json_decref(body);
    json_decref(doc);
    return rc;
}

/* The service's tunnel to a port (abx expose); other E2B hosts reach ports by URL only. */
static int e2b_connect_port(abx_sandbox *s, unsigned port, int *fd, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    const e2b_client *ec = es->client->state;
    if (!ec->unix_socket[0])
        return abx__error_set(err, ABX_ENOTSUP, "ports: provider '%s' cannot reach them", ec->id);
    return abx__service_tunnel(ec->unix_socket, es->id, port, fd, err);
}

/* GET /sandboxes/ID/metrics: E2B's newest sample. */
static int e2b_metrics(abx_sandbox *s, abx_sandbox_metrics *out, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/metrics", es->id);
    json_t *doc = NULL;
    int rc = api(es->client->state, "GET", path, NULL, &doc, NULL, 0, err);
    json_t *m = json_array_get(doc, json_array_size(doc) ? json_array_size(doc) - 1 : 0);
    memset(out, 0, sizeof *out);
    if (rc == 0 && !json_is_object(m))
        rc = abx__error_set(err, ABX_EPROVIDER, "provider '%s' answered no metrics",
                            ((e2b_client *)es->client->state)->id);
    if (rc == 0) {
        out->cpu_count = (unsigned)json_integer_value(json_object_get(m, "cpuCount"));
        out->cpu_used_pct = json_number_value(json_object_get(m, "cpuUsedPct"));
        out->mem_used = (unsigned long long)json_integer_value(json_object_get(m, "memUsed"));
        out->mem_total = (unsigned long long)json_integer_value(json_object_get(m, "memTotal"));
        out->disk_used = (unsigned long long)json_integer_value(json_object_get(m, "diskUsed"));
        out->disk_total = (unsigned long long)json_integer_value(json_object_get(m, "diskTotal"));
    }
    json_decref(doc);
    return rc;
}

/* GET /templates: [{templateID, aliases, ...}] as [{name, ...}]. */
static int e2b_template_list(abx_client *c, json_t **json, abx_error **err)
{
    *json = NULL;
    json_t *doc = NULL;
    int rc = api(c->state, "GET", "/templates", NULL, &doc, NULL, 0, err);
    if (rc < 0)
        return rc;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(doc, i, t)
    {
        const char *id = json_string_value(json_object_get(t, "templateID"));
        json_t *own = json_object_get(t, "abx"); /* the service's: abx's own description */
        if (id && json_is_object(own) && json_is_string(json_object_get(own, "name"))) {
            json_array_append(out, own);
            continue;
        }
        if (!id)
            continue;
        json_t *one = json_pack("{s:s, s:s}", "name", id, "template_id", id);
        json_t *aliases = json_object_get(t, "aliases");
        if (json_is_array(aliases))
            json_object_set(one, "aliases", aliases);
        json_array_append_new(out, one);
    }
    json_decref(doc);
    *json = out;
    return 0;
}

/* A template the host lists by id or alias; "base" always exists there. A
 * host that lists none (no GET /templates) is left to answer the create. */
static int e2b_template_exists(abx_client *c, const char *name, abx_error **err)
{
    json_t *list = NULL;
    if (strcmp(name, "base") == 0 || e2b_template_list(c, &list, NULL) < 0)
        return 0;
    bool found = false;
    size_t i, j;
    json_t *t, *a;
    json_array_foreach(list, i, t)
    {
        found |= strcmp(json_string_value(json_object_get(t, "name")), name) == 0;
        json_array_foreach(json_object_get(t, "aliases"), j, a) found |=
            json_is_string(a) && strcmp(json_string_value(a), name) == 0;
    }
    json_decref(list);
    return found ? 0 : abx__error_set(err, ABX_ENOTFOUND, "template '%.64s' not found", name);
}

/* What abx's E2B client drives on any such host. */
static int e2b_features(abx_client *c, json_t **json, abx_error **err)
{
    (void)c;
    (void)err;
    *json = json_pack("[s, s, s, s, s, s]", "sandbox.lifecycle", "sandbox.timeout", "sandbox.pause",
                      "exec.run", "exec.stream", "files.rw");
    return 0;
}

/* What the sandbox has used, from an abx host (GET /sandboxes/ID/stats,
 * abx's own route: another E2B host answers it 404). */
static int e2b_stats(abx_sandbox *s, abx_sandbox_stats *out, abx_error **err)
{
    e2b_sandbox *es = s->impl;
    char path[128];
    snprintf(path, sizeof path, "/sandboxes/%s/stats", es->id);
    json_t *doc = NULL;
    int rc = api(es->client->state, "GET", path, NULL, &doc, NULL, 0, err);
    if (rc == 0)
        abx__stats_from_json(doc, out);
    json_decref(doc);
    return rc;
}

/* The host's event log of an abx host (abx serve, the abx service): GET
 * /events?format=json, a page at a time, as the host lets this client's
 * key (or host user) see it; another E2B host has none (E8004). */
static int e2b_events_read(abx_client *c, unsigned long long after, abx__event_fn each, void *ud,
                           unsigned long long *last, abx_error **err)
{
    *last = after;
    char path[96];
    snprintf(path, sizeof path, "/events?format=json&max=%u&after=%llu", ABX_EVENTS_READ_MAX, after);
    json_t *doc = NULL;
    int rc = api(c->state, "GET", path, NULL, &doc, NULL, 0, err);
    if (rc == -ABX_ENOTFOUND) {
        abx_error_free(err ? *err : NULL);
        if (err)
            *err = NULL;
        return abx__error_set(err, ABX_ENOTSUP, "events: this E2B host keeps no abx event log");
    }
    json_t *events = json_object_get(doc, "events"), *ev;
    size_t i;
    bool go = true;
    json_array_foreach(rc == 0 ? events : NULL, i, ev)
    {
        json_int_t seq = json_integer_value(json_object_get(ev, "seq"));
        if (go && seq > 0 && (unsigned long long)seq > *last) {
            *last = (unsigned long long)seq;
            go = each(ev, (unsigned long long)seq, ud);
        }
    }
    json_int_t next = json_integer_value(json_object_get(doc, "next"));
    if (rc == 0 && go && next > 0 && (unsigned long long)next > *last)
        *last = (unsigned long long)next; /* past what the host did not show this client */
    json_decref(doc);
    return rc;
}

const abx_provider abx__provider_e2b = {
    .features = e2b_features,
    .name = "e2b",
    .connect = e2b_connect,
    .create = e2b_create,
    .get_info = e2b_get_info,
    .list = e2b_list,
    .set_timeout = e2b_set_timeout,
    .kill = e2b_kill,
    .pause = e2b_pause,
    .free_impl = e2b_free_impl,
    .free_state = e2b_free_state,
    .task_table = e2b_task_table,
    .endpoint = e2b_endpoint,
    .template_exists = e2b_template_exists,
    .template_list = e2b_template_list,
    .volume = e2b_volume,
    .snapshot = e2b_snapshot,
    .snapshots = e2b_snapshots,
    .set_network = e2b_set_network,
    .connect_port = e2b_connect_port,
    .metrics = e2b_metrics,
    .events_read = e2b_events_read,
    .stats = e2b_stats,
};
