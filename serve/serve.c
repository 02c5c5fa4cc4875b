/* serve.c: `abx serve`, this machine as an E2B-protocol sandbox host
 * (../shared/e2b-protocol.md §1): E2B's SDKs, unmodified, create and drive
 * local sandboxes through it.
 *
 * Owns: the listener (libmicrohttpd, a thread per connection), the API
 * keys and their tenants (a key sees and touches only the sandboxes it
 * created: another key's id answers 404 exactly as an unknown one; the
 * tenant is kept in the sandbox's state directory, never shown), routing
 * (a request with E2b-Sandbox-Id / E2b-Sandbox-Port headers, or a Host
 * "PORT-ID.DOMAIN", is data plane: proxy.c), and the REST control plane:
 * create (v1 and v2), connect, list (v2 and v1, filters, paging), info,
 * timeout, kill, health. Errors are E2B's body {code, message}.
 */
#include "serve.h"
#include "netpolicy.h"
#include "buf.h"
#include "error_internal.h"
#include "netlibs.h"
#include "parse.h"
#include "provider.h"
#include "state.h"
#include "sysutil.h"
#include "template_store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONTROL_BODY (1u << 20)
#define MAX_KEYS 256
#define TENANT_LEN 32
#define ENVD_VERSION "0.6.4"
#define CLIENT_ID "6532622b"

typedef struct serve_ctx {
    abx_client *local;
    char domain[128];
    char tenants[MAX_KEYS][TENANT_LEN + 1];
    char keys_hash_of[MAX_KEYS][TENANT_LEN + 1];
    size_t nkeys;
} serve_ctx;

typedef enum req_kind { REQ_CONTROL, REQ_DATA, REQ_ANSWERED } req_kind;

typedef struct serve_req {
    req_kind kind;
    char tenant[TENANT_LEN + 1];
    abx_buf body;
    bool too_big;
    serve_proxy *proxy;
} serve_req;

/* ---- answers ------------------------------------------------------------------------ */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                                 const char *next_token)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(text ? strlen(text) : 0, (void *)(text ? text : ""), MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, "Content-Type", type);
    if (next_token)
        MHD_add_response_header(r, "X-Next-Token", next_token);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* json (taken) as the body. */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *json, const char *next_token)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    enum MHD_Result ok = send_text(c, status, "application/json", text ? text : "{}", next_token);
    free(text);
    return ok;
}

/* E2B's error body. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *message)
{
    return send_json(c, status, json_pack("{s:i, s:s}", "code", (int)status, "message", message), NULL);
}

/* An abx error as E2B's status and body: the message says what, never a path or a key. */
static enum MHD_Result send_abx_error(struct MHD_Connection *c, int rc, abx_error *err)
{
    int code = -rc;
    unsigned status = code == ABX_ENOTFOUND ? 404 : code == ABX_EINVAL ? 400 : code == ABX_ELIMIT ? 429
                      : code == ABX_EAUTH ? 401 : code == ABX_ETIMEOUT ? 504 : 500;
    /* a request's own mistake says which (our validation's words); a fault
     * of this host only its code and the generic text: no path, no errno */
    const char *detail = status == 404 ? "sandbox not found"
                         : status == 400 && abx_error_message(err) ? abx_error_message(err)
                                                                   : abx_strerror(code);
    char message[300];
    snprintf(message, sizeof message, "%s: %s", abx_err_name(code) ? abx_err_name(code) : "E8000", detail);
    abx_error_free(err);
    return send_error(c, status, message);
}

/* ---- keys and tenants --------------------------------------------------------------- */

static void sha256_hex(const char *text, char *out, size_t hex_len)
{
    unsigned char md[32];
    unsigned int n = 0;
    EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL);
    for (size_t i = 0; i < hex_len / 2 && i < n; i++)
        snprintf(out + i * 2, 3, "%02x", md[i]); /* out holds hex_len + 1 */
    out[hex_len] = '\0';
}

/* The tenant of the request's X-API-Key, or false. Keys are compared by
 * their hashes (no early exit on a prefix of a stored key). */
static bool tenant_of(serve_ctx *s, struct MHD_Connection *c, char tenant[TENANT_LEN + 1])
{
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
    if (!key || strlen(key) > 200)
        return false;
    char h[TENANT_LEN + 1];
    sha256_hex(key, h, TENANT_LEN);
    bool found = false;
    for (size_t i = 0; i < s->nkeys; i++)
        found |= CRYPTO_memcmp(h, s->keys_hash_of[i], TENANT_LEN) == 0;
    if (found)
        memcpy(tenant, h, TENANT_LEN + 1);
    return found;
}

static bool id_valid(const char *id)
{
    if (!id || strlen(id) != 21 || id[0] != 'i')
        return false;
    for (size_t i = 1; i < 21; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9')))
            return false;
    return true;
}

static bool tenant_file(const char *id, char *path, size_t len)
{
    char dir[700];
    if (!id_valid(id) || abx__state_dir(id, dir, sizeof dir, NULL) < 0)
        return false;
    return snprintf(path, len, "%s/serve-tenant", dir) < (int)len;
}

/* Whether sandbox id (bare) belongs to tenant: created through this
 * listener with that key. */
static bool owned_by(const char *id, const char *tenant)
{
    char path[760], stored[TENANT_LEN + 8] = "";
    if (!tenant_file(id, path, sizeof path) || abx__read_small_file(path, stored, sizeof stored) < 0)
        return false;
    return strlen(stored) == TENANT_LEN && CRYPTO_memcmp(stored, tenant, TENANT_LEN) == 0;
}

/* ---- the control plane ----------------------------------------------------------------- */

static void rfc3339(long long t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *bare(const char *qualified)
{
    const char *colon = strchr(qualified, ':');
    return colon ? colon + 1 : qualified;
}

/* Sandbox (create / connect answer): ids, versions, the data plane's token. */
static void add_traffic_token(const char *id, json_t *answer);

static json_t *sandbox_json(serve_ctx *s, abx_sandbox *sb, const char *template_id)
{
    json_t *answer = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", bare(abx_sandbox_id(sb)), "templateID",
                     template_id, "clientID", CLIENT_ID, "envdVersion", ENVD_VERSION, "envdAccessToken",
                     sb->envd.token, "domain", s->domain);
    add_traffic_token(bare(abx_sandbox_id(sb)), answer);
    return answer;
}

/* ListedSandbox; detail adds the token and the domain. */
static json_t *listed_json(serve_ctx *s, const abx_sandbox_info *in, const char *token)
{
    char started[40], end[40];
    rfc3339(in->started_at, started, sizeof started);
    rfc3339(in->end_at, end, sizeof end);
    json_t *meta = json_loads(in->metadata_json ? in->metadata_json : "{}", 0, NULL);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:s}", "templateID", in->template_id,
                          "sandboxID", bare(in->sandbox_id), "clientID", CLIENT_ID, "startedAt", started, "endAt", end,
                          "state", in->status, "cpuCount", (int)in->cpu_count, "memoryMB", (int)in->memory_mb,
                          "diskSizeMB", (int)in->disk_size_mb, "metadata", meta ? meta : json_object(), "envdVersion",
                          ENVD_VERSION);
    if (token) {
        json_object_set_new(o, "envdAccessToken", json_string(token));
        json_object_set_new(o, "domain", json_string(s->domain));
    }
    return o;
}

/* An object of strings as "K=V" pairs (NULL-terminated; free_pairs), or
 * NULL with *bad set when it is not one. */
static char **pairs_of(json_t *obj, bool *bad)
{
    if (!obj || json_is_null(obj))
        return NULL;
    if (!json_is_object(obj) || json_object_size(obj) > 256) {
        *bad = true;
        return NULL;
    }
    char **out = calloc(json_object_size(obj) + 1, sizeof *out);
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        if (!out || !json_is_string(v) || asprintf(&out[n++], "%s=%s", k, json_string_value(v)) < 0) {
            *bad = true;
            break;
        }
    }
    return out;
}

static void free_pairs(char **p)
{
    for (size_t i = 0; p && p[i]; i++)
        free(p[i]);
    free(p);
}

/* timeout in the body: absent (def), or an integer 1..86400; -1 when wrong. */
static long body_timeout(json_t *body, long def)
{
    json_t *t = json_object_get(body, "timeout");
    if (!t)
        return def;
    return json_is_integer(t) && json_integer_value(t) >= 1 && json_integer_value(t) <= 86400
               ? (long)json_integer_value(t)
               : -1;
}

/* What create accepted but abx does not act on yet (issue 12's network,
 * autoPause), kept beside the sandbox and shown by its detail. */
/* network.allowPublicTraffic false: the sandbox's ports need the
 * e2b-traffic-access-token header (proxy.c); *traffic (33 bytes) gets a
 * new token, "" otherwise. */
static void save_options(const char *id, json_t *body, char *traffic)
{
    char path[760];
    traffic[0] = '\0';
    if (!tenant_file(id, path, sizeof path))
        return;
    snprintf(strrchr(path, '/') + 1, sizeof path - (size_t)(strrchr(path, '/') + 1 - path), "serve-options.json");
    json_t *keep = json_object();
    unsigned char raw[16];
    if (json_is_false(json_object_get(json_object_get(body, "network"), "allowPublicTraffic")) &&
        getrandom(raw, sizeof raw, 0) == (ssize_t)sizeof raw) {
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(traffic + i * 2, 3, "%02x", raw[i]);
        json_object_set_new(keep, "traffic_token", json_string(traffic));
    }
    static const char *const keys[] = {"allow_internet_access", "network", "autoPause", "autoResume"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(body, keys[i]);
        if (v)
            json_object_set(keep, keys[i], v);
    }
    char *text = json_dumps(keep, JSON_COMPACT);
    if (text && strlen(text) < 16384)
        abx__create_file(path, text, 0600);
    free(text);
    json_decref(keep);
}

/* trafficAccessToken, for a sandbox created with allowPublicTraffic false. */
static void add_traffic_token(const char *id, json_t *answer)
{
    char path[760], text[16384];
    if (!answer || !tenant_file(id, path, sizeof path))
        return;
    snprintf(strrchr(path, '/') + 1, sizeof path - (size_t)(strrchr(path, '/') + 1 - path), "serve-options.json");
    json_t *opts = abx__read_small_file(path, text, sizeof text) >= 0 ? json_loads(text, 0, NULL) : NULL;
    json_t *t = json_object_get(opts, "traffic_token");
    if (json_is_string(t))
        json_object_set(answer, "trafficAccessToken", t);
    json_decref(opts);
}

static void add_options(const char *id, json_t *detail)
{
    char path[760], text[16384];
    if (!tenant_file(id, path, sizeof path))
        return;
    snprintf(strrchr(path, '/') + 1, sizeof path - (size_t)(strrchr(path, '/') + 1 - path), "serve-options.json");
    json_t *opts = abx__read_small_file(path, text, sizeof text) >= 0 ? json_loads(text, 0, NULL) : NULL;
    json_t *net = json_object_get(opts, "network");
    json_t *allow = json_object_get(opts, "allow_internet_access");
    json_object_set_new(detail, "allowInternetAccess", json_is_boolean(allow) ? json_incref(allow) : json_false());
    if (json_is_object(net))
        json_object_set(detail, "network", net);
    json_object_set_new(detail, "lifecycle", json_pack("{s:b, s:s}", "autoResume",
                                                      json_is_true(json_object_get(opts, "autoResume")), "onTimeout",
                                                      json_is_true(json_object_get(opts, "autoPause")) ? "pause" : "kill"));
    json_decref(opts);
}

/* E2B's egress fields as create options; false with why (E2B's 400 text). */
static bool egress_of(json_t *access, json_t *allow, json_t *deny, abx_net_egress *e, char *why, size_t len)
{
    abx_error *err = NULL;
    if (abx__net_egress_from_e2b(access, allow, deny, e, &err) == 0)
        return true;
    snprintf(why, len, "invalid body: %s", abx_error_message(err));
    abx_error_free(err);
    return false;
}

static enum MHD_Result create(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, json_t *body)
{
    json_t *tmpl = json_object_get(body, "templateID");
    long timeout = body_timeout(body, 15);
    bool bad = !json_is_object(body) || (tmpl && !json_is_string(tmpl)) || timeout < 0;
    char **meta = bad ? NULL : pairs_of(json_object_get(body, "metadata"), &bad);
    char **envs = bad ? NULL : pairs_of(json_object_get(body, "envVars"), &bad);
    if (bad) {
        free_pairs(meta);
        free_pairs(envs);
        return send_error(c, 400, "invalid body: templateID must be a string, timeout an integer from 1 to 86400, "
                                  "metadata and envVars objects of strings");
    }
    const char *template_id = tmpl ? json_string_value(tmpl) : "base";
    char tree[PATH_MAX];
    if (!abx__template_builtin(template_id) && abx__template_root(template_id, tree, sizeof tree) < 0) {
        free_pairs(meta);
        free_pairs(envs);
        char message[120]; /* E2B's API: 404 and these words */
        snprintf(message, sizeof message, "template '%.64s' not found", template_id);
        return send_error(c, 404, message);
    }
    json_t *net = json_object_get(body, "network");
    abx_net_egress e;
    char why[300];
    if (!egress_of(json_object_get(body, "allow_internet_access"), json_object_get(net, "allowOut"),
                   json_object_get(net, "denyOut"), &e, why, sizeof why)) {
        free_pairs(meta);
        free_pairs(envs);
        return send_error(c, 400, why);
    }
    abx_create_options o = {.template_id = template_id, .timeout_s = (unsigned)timeout,
                            .metadata = (const char *const *)meta, .envs = (const char *const *)envs,
                            .network = e.mode, .allow_out = (const char *const *)e.allow,
                            .deny_out = (const char *const *)e.deny};
    abx_sandbox *sb = NULL;
    abx_error *err = NULL;
    int rc = abx_sandbox_create(s->local, &o, &sb, &err);
    free_pairs(meta);
    free_pairs(envs);
    abx__net_egress_free(&e);
    if (rc < 0)
        return send_abx_error(c, rc, err);
    char path[760];
    if (!tenant_file(bare(abx_sandbox_id(sb)), path, sizeof path) || abx__create_file(path, rq->tenant, 0600) < 0) {
        abx_kill_by_id(s->local, abx_sandbox_id(sb), NULL); /* a sandbox nobody could reach */
        abx_sandbox_free(sb);
        return send_error(c, 500, "the sandbox could not be recorded");
    }
    char traffic[33];
    save_options(bare(abx_sandbox_id(sb)), body, traffic);
    explicit_bzero(traffic, sizeof traffic);
    json_t *answer = sandbox_json(s, sb, template_id);
    abx_sandbox_free(sb);
    return send_json(c, 201, answer, NULL);
}

/* The caller's sandbox id (bare) as a local handle, or an answer sent. */
static abx_sandbox *own_sandbox(serve_ctx *s, serve_req *rq, const char *id, struct MHD_Connection *c,
                                enum MHD_Result *sent)
{
    abx_sandbox *sb = NULL;
    char qualified[64];
    snprintf(qualified, sizeof qualified, "local:%.40s", id);
    if (!owned_by(id, rq->tenant) || abx_sandbox_connect(s->local, qualified, &sb, NULL) < 0) {
        *sent = send_error(c, 404, "sandbox not found");
        return NULL;
    }
    return sb;
}

static enum MHD_Result info(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    abx_error *err = NULL;
    int rc = abx_sandbox_get_info(sb, &in, &err);
    if (rc < 0) {
        abx_sandbox_free(sb);
        return send_abx_error(c, rc, err);
    }
    json_t *answer = listed_json(s, &in, sb->envd.token);
    add_options(id, answer);
    abx_sandbox_info_clear(&in);
    abx_sandbox_free(sb);
    return send_json(c, 200, answer, NULL);
}

/* metrics: [SandboxMetric], one sample: now. */
static enum MHD_Result metrics(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_metrics m;
    abx_error *err = NULL;
    int rc = abx_sandbox_get_metrics(sb, &m, &err);
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rc, err);
    char now[40];
    long long t = (long long)time(NULL);
    rfc3339(t, now, sizeof now);
    return send_json(c, 200,
                     json_pack("[{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I, s:I}]", "timestamp", now, "timestampUnix",
                               (json_int_t)t, "cpuCount", (int)m.cpu_count, "cpuUsedPct", m.cpu_used_pct, "memUsed",
                               (json_int_t)m.mem_used, "memTotal", (json_int_t)m.mem_total, "memCache", (json_int_t)0,
                               "diskUsed", (json_int_t)m.disk_used, "diskTotal", (json_int_t)m.disk_total),
                     NULL);
}

/* pause: 204; 409 when it already is. */
static enum MHD_Result pause_one(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_pause(sb, &err);
    abx_sandbox_free(sb);
    if (rc == -ABX_EINVAL) {
        abx_error_free(err);
        return send_error(c, 409, "sandbox is already paused");
    }
    return rc < 0 ? send_abx_error(c, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

/* resume (the old endpoint) and connect to a paused sandbox: 201. */
static enum MHD_Result resume_one(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                  json_t *body)
{
    long timeout = body_timeout(body, 0);
    if (timeout < 0)
        return send_error(c, 400, "invalid body: timeout must be an integer from 1 to 86400");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    memset(&in, 0, sizeof in);
    abx_error *err = NULL;
    int rc = abx_sandbox_get_info(sb, &in, &err);
    if (rc == 0 && strcmp(in.status, "paused") != 0)
        rc = abx__error_set(&err, ABX_EINVAL, "not paused");
    if (rc == 0)
        rc = abx_sandbox_resume(sb, (unsigned)timeout, &err);
    json_t *answer = rc == 0 ? sandbox_json(s, sb, in.template_id) : NULL;
    abx_sandbox_info_clear(&in);
    abx_sandbox_free(sb);
    if (rc == -ABX_EINVAL) {
        abx_error_free(err);
        return send_error(c, 409, "sandbox is not paused");
    }
    return answer ? send_json(c, 201, answer, NULL) : send_abx_error(c, rc, err);
}

/* connect: the TTL is only ever extended. */
static enum MHD_Result connect_to(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id, json_t *body)
{
    long timeout = body_timeout(body, 0);
    if (timeout < 0 || (body && !json_is_object(body)))
        return send_error(c, 400, "invalid body: timeout must be an integer from 1 to 86400");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    memset(&in, 0, sizeof in);
    int rc = abx_sandbox_get_info(sb, &in, NULL);
    if (rc == 0 && strcmp(in.status, "paused") == 0) { /* connecting resumes it */
        abx_sandbox_info_clear(&in);
        abx_sandbox_free(sb);
        return resume_one(s, c, rq, id, body);
    }
    if (rc == 0 && timeout > 0 && in.end_at < (long long)time(NULL) + timeout)
        rc = abx_sandbox_set_timeout(sb, (unsigned)timeout, NULL);
    json_t *answer = rc == 0 ? sandbox_json(s, sb, in.template_id) : NULL;
    abx_sandbox_info_clear(&in);
    abx_sandbox_free(sb);
    return answer ? send_json(c, 200, answer, NULL) : send_error(c, 404, "sandbox not found");
}

static enum MHD_Result set_timeout(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                   json_t *body)
{
    long timeout = body_timeout(body, -1);
    if (timeout < 0)
        return send_error(c, 400, "invalid body: timeout must be an integer from 1 to 86400");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_set_timeout(sb, (unsigned)timeout, &err);
    abx_sandbox_free(sb);
    return rc < 0 ? send_abx_error(c, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

/* PUT /sandboxes/ID/network {allowOut, denyOut, allow_internet_access}:
 * replaces the policy (what is omitted is cleared, as on E2B); 204. */
static enum MHD_Result update_network(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                      json_t *body)
{
    abx_net_egress e;
    char why[300];
    if (body && !json_is_object(body))
        return send_error(c, 400, "invalid body: an object {allowOut, denyOut, allow_internet_access}");
    if (!egress_of(json_object_get(body, "allow_internet_access"), json_object_get(body, "allowOut"),
                   json_object_get(body, "denyOut"), &e, why, sizeof why))
        return send_error(c, 400, why);
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb) {
        abx__net_egress_free(&e);
        return sent;
    }
    abx_error *err = NULL;
    int rc = abx_sandbox_set_network(sb, e.mode, (const char *const *)e.allow, (const char *const *)e.deny, &err);
    abx_sandbox_free(sb);
    abx__net_egress_free(&e);
    return rc < 0 ? send_abx_error(c, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

static enum MHD_Result kill_one(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(s, rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_kill(sb, &err);
    abx_sandbox_free(sb);
    return rc < 0 ? send_abx_error(c, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

/* metadata=k%3Dv%26k2%3Dv2 (already unescaped once by the server: k=v&k2=v2) */
static bool metadata_matches(const char *filter, const char *metadata_json)
{
    if (!filter || !*filter)
        return true;
    json_t *meta = json_loads(metadata_json ? metadata_json : "{}", 0, NULL);
    bool all = true;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", filter);
    char *save = NULL;
    for (char *pair = strtok_r(copy, "&", &save); pair && all; pair = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *v = json_string_value(json_object_get(meta, pair));
        all = v && strcmp(v, eq + 1) == 0;
    }
    json_decref(meta);
    return all;
}

static bool state_matches(const char *filter, const char *status)
{
    if (!filter || !*filter)
        return true;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", filter);
    char *save = NULL;
    for (char *one = strtok_r(copy, ",", &save); one; one = strtok_r(NULL, ",", &save))
        if (strcmp(one, status) == 0)
            return true;
    return false;
}

/* A state filter names running, paused or both (E2B's enum), comma-separated. */
static bool state_filter_valid(const char *filter)
{
    if (!filter || !*filter)
        return true;
    if (strlen(filter) >= 64)
        return false;
    char copy[64];
    snprintf(copy, sizeof copy, "%s", filter);
    char *save = NULL;
    for (char *one = strtok_r(copy, ",", &save); one; one = strtok_r(NULL, ",", &save))
        if (strcmp(one, "running") != 0 && strcmp(one, "paused") != 0)
            return false;
    return true;
}

static enum MHD_Result list(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
    const char *meta = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata");
    const char *limit_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *next = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
    unsigned limit = 100, skip = 0;
    if ((limit_s && abx__parse_uint(limit_s, 1, 100, &limit) < 0) ||
        (next && *next && abx__parse_uint(next, 0, 1000000, &skip) < 0))
        return send_error(c, 400, "invalid query: limit is 1 to 100, nextToken one this server gave");
    if (!state_filter_valid(state))
        return send_error(c, 400, "invalid query: state is running, paused or both (comma-separated)");
    json_t *out = json_array();
    size_t matched = 0;
    bool more = false;
    for (unsigned page = 0; !more && page < 10000; page++) { /* every local sandbox, a page at a time */
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        abx_error *err = NULL;
        int rc = abx_list(s->local, NULL, 100, page * 100, &items, &n, &err);
        if (rc < 0) {
            json_decref(out);
            return send_abx_error(c, rc, err);
        }
        for (size_t i = 0; i < n && !more; i++) {
            if (!owned_by(bare(items[i].sandbox_id), rq->tenant) || !state_matches(state, items[i].status) ||
                !metadata_matches(meta, items[i].metadata_json))
                continue;
            if (matched++ < skip)
                continue;
            if (json_array_size(out) == limit)
                more = true;
            else
                json_array_append_new(out, listed_json(s, &items[i], NULL));
        }
        abx_sandbox_info_list_free(items, n);
        if (n < 100)
            break;
    }
    char token[24];
    snprintf(token, sizeof token, "%u", skip + limit);
    return send_json(c, 200, out, more ? token : NULL);
}

/* /sandboxes/{id}[/verb], /v2/sandboxes/{id}[/verb]: id and verb ("" when none). */
static bool split_path(const char *url, char *id, size_t id_len, char *verb, size_t verb_len)
{
    const char *p = strncmp(url, "/v2", 3) == 0 ? url + 3 : url;
    if (strncmp(p, "/sandboxes/", 11) != 0)
        return false;
    p += 11;
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 0 || n >= id_len)
        return false;
    memcpy(id, p, n);
    id[n] = '\0';
    snprintf(verb, verb_len, "%s", slash ? slash + 1 : "");
    return true;
}

static enum MHD_Result control(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *url,
                               const char *method)
{
    json_t *body = rq->body.len ? json_loadb(rq->body.data, rq->body.len, 0, NULL) : NULL;
    if (rq->body.len && !body)
        return send_error(c, 400, "invalid body: not JSON");
    bool post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
    char id[64], verb[32];
    enum MHD_Result r;
    if (post && (strcmp(url, "/sandboxes") == 0 || strcmp(url, "/v2/sandboxes") == 0))
        r = create(s, c, rq, body);
    else if (get && (strcmp(url, "/sandboxes") == 0 || strcmp(url, "/v2/sandboxes") == 0))
        r = list(s, c, rq);
    else if (!split_path(url, id, sizeof id, verb, sizeof verb))
        r = send_error(c, 404, "no such endpoint");
    else if (get && !*verb)
        r = info(s, c, rq, id);
    else if (strcmp(method, "DELETE") == 0 && !*verb)
        r = kill_one(s, c, rq, id);
    else if (post && strcmp(verb, "timeout") == 0)
        r = set_timeout(s, c, rq, id, body);
    else if (post && strcmp(verb, "connect") == 0)
        r = connect_to(s, c, rq, id, body);
    else if (get && strcmp(verb, "metrics") == 0)
        r = metrics(s, c, rq, id);
    else if (post && strcmp(verb, "pause") == 0)
        r = pause_one(s, c, rq, id);
    else if (post && strcmp(verb, "resume") == 0)
        r = resume_one(s, c, rq, id, body);
    else if (strcmp(method, "PUT") == 0 && strcmp(verb, "network") == 0)
        r = update_network(s, c, rq, id, body);
    else
        r = send_error(c, 404, "no such endpoint");
    json_decref(body);
    return r;
}

/* ---- routing ---------------------------------------------------------------------------- */

/* A data-plane request: the sandbox and port from E2b-Sandbox-Id /
 * E2b-Sandbox-Port, or from a Host "PORT-ID.DOMAIN[:listener port]". */
static bool data_plane_target(serve_ctx *s, struct MHD_Connection *c, char *id, size_t id_len, unsigned *port)
{
    const char *hid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
    const char *hport = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
    if (hid) {
        snprintf(id, id_len, "%s", hid);
        return hport && abx__parse_uint(hport, 1, 65535, port) == 0;
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host)
        return false;
    const char *dash = strchr(host, '-'), *dot = dash ? strchr(dash, '.') : NULL;
    if (!dash || !dot || (size_t)(dot - dash - 1) >= id_len)
        return false;
    size_t dl = strlen(s->domain);
    const char *rest = dot + 1;
    if (strncmp(rest, s->domain, dl) != 0 || (rest[dl] != '\0' && rest[dl] != ':'))
        return false;
    char port_s[8];
    if ((size_t)(dash - host) >= sizeof port_s)
        return false;
    snprintf(port_s, sizeof port_s, "%.*s", (int)(dash - host), host);
    snprintf(id, id_len, "%.*s", (int)(dot - dash - 1), dash + 1);
    return abx__parse_uint(port_s, 1, 65535, port) == 0;
}

static enum MHD_Result begin(serve_ctx *s, struct MHD_Connection *c, const char *url, const char *method,
                             serve_req *rq)
{
    char id[64];
    unsigned port = 0;
    bool routed = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id") != NULL;
    if (routed && !data_plane_target(s, c, id, sizeof id, &port)) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 400, "E2b-Sandbox-Port: expected a port from 1 to 65535 with E2b-Sandbox-Id");
    }
    if (routed || data_plane_target(s, c, id, sizeof id, &port)) {
        unsigned status = 502;
        char *text = NULL;
        rq->proxy = id_valid(id) ? abx__serve_proxy_begin(c, id, port, url, method, &status, &text) : NULL;
        if (rq->proxy) {
            rq->kind = REQ_DATA;
            return MHD_YES;
        }
        rq->kind = REQ_ANSWERED;
        enum MHD_Result r = send_error(c, status, text ? text : "sandbox not found or not running");
        free(text);
        return r;
    }
    if (strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0) {
        rq->kind = REQ_ANSWERED;
        return send_text(c, 204, NULL, NULL, NULL);
    }
    if (!tenant_of(s, c, rq->tenant)) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 401, "missing or invalid X-API-Key");
    }
    rq->kind = REQ_CONTROL;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    serve_ctx *s = cls;
    serve_req *rq = *con_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        abx__buf_init(&rq->body, MAX_CONTROL_BODY);
        *con_cls = rq;
        return begin(s, c, url, method, rq);
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->kind == REQ_DATA)
            return abx__serve_proxy_upload(rq->proxy, upload, n) ? MHD_YES : MHD_NO;
        if (rq->kind == REQ_CONTROL && abx__buf_append(&rq->body, upload, n) < 0)
            rq->too_big = true;
        return MHD_YES;
    }
    if (rq->kind == REQ_DATA) {
        rq->kind = REQ_ANSWERED;
        return abx__serve_proxy_finish(rq->proxy, c) == 0 ? MHD_YES : MHD_NO;
    }
    if (rq->kind != REQ_CONTROL)
        return MHD_YES;
    rq->kind = REQ_ANSWERED;
    if (rq->too_big)
        return send_error(c, 413, "request body over 1 MiB");
    return control(s, c, rq, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    (void)cls;
    (void)c;
    (void)t;
    serve_req *rq = *con_cls;
    if (!rq)
        return;
    abx__serve_proxy_release(rq->proxy);
    abx__buf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
}

/* ---- the listener ------------------------------------------------------------------------- */

static int listen_on(const char *addr, int *fd_out, bool *loopback, int *port, abx_error **err)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof host)
        return abx__error_set(err, ABX_EINVAL, "--listen: expected ADDR:PORT");
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    unsigned p = 0;
    if (abx__parse_uint(colon + 1, 0, 65535, &p) < 0)
        return abx__error_set(err, ABX_EINVAL, "--listen: the port must be 0 to 65535");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
        return abx__error_set(err, ABX_EINVAL, "--listen: '%s' is not a numeric address", host);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    int rc = fd < 0 ? -1 : setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (rc == 0)
        rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc == 0)
        rc = listen(fd, 512);
    if (rc < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return abx__error_errno(err, ABX_ESYS, e, "--listen");
    }
    *loopback = strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0 || strncmp(host, "127.", 4) == 0;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

int abx_serve_run(const abx_serve_config *cfg, abx_error **err)
{
    serve_ctx *s = calloc(1, sizeof *s);
    if (!s)
        return abx__error_set(err, ABX_ENOMEM, "serve");
    snprintf(s->domain, sizeof s->domain, "%s", cfg->domain && *cfg->domain ? cfg->domain : "localhost");
    for (size_t i = 0; cfg->api_keys && cfg->api_keys[i] && s->nkeys < MAX_KEYS; i++)
        sha256_hex(cfg->api_keys[i], s->keys_hash_of[s->nkeys++], TENANT_LEN);
    int fd = -1, port = 0;
    bool loopback = false;
    int rc = listen_on(cfg->listen ? cfg->listen : "127.0.0.1:3000", &fd, &loopback, &port, err);
    if (rc == 0 && !loopback && s->nkeys == 0)
        rc = abx__error_set(err, ABX_EAUTH, "refusing to serve a non-loopback address without API keys "
                                            "(--api-key-file or ABX_SERVE_API_KEYS)");
    abx_client_options co = {.provider = "local"};
    if (rc == 0)
        rc = abx_client_new(&co, &s->local, err);
    if (rc == 0 && cfg->warm)
        rc = abx_client_keep_warm(s->local, cfg->warm, err);
    if (rc == 0 && !abx__mhd())
        rc = abx__error_set(err, ABX_EHOSTSUPPORT, "libmicrohttpd could not be loaded");
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        abx_client_free(s->local);
        free(s);
        return rc;
    }
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is a write error, not a death */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, s,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)600, MHD_OPTION_CONNECTION_LIMIT, (unsigned)2048, MHD_OPTION_THREAD_STACK_SIZE,
        (size_t)(256 * 1024), MHD_OPTION_END);
    if (!d || sigfd < 0) {
        close(fd);
        abx_client_free(s->local);
        free(s);
        return abx__error_set(err, ABX_ESYS, "starting the HTTP server");
    }
    fprintf(stderr, "abx serve: listening on http://%s:%d (sandbox domain %s; %zu API key%s)\n",
            loopback ? "127.0.0.1" : "0.0.0.0", port, s->domain, s->nkeys, s->nkeys == 1 ? "" : "s");
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof si) < 0 && errno == EINTR) {
    }
    fprintf(stderr, "abx serve: stopping\n");
    MHD_stop_daemon(d);
    close(sigfd);
    abx_client_free(s->local);
    free(s);
    return 0;
}
