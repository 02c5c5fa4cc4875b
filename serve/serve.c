/* serve.c: `abx serve`, this machine as an E2B-protocol sandbox host
 * (../shared/e2b-protocol.md §1) in front of any provider: E2B's SDKs,
 * unmodified, create and drive its sandboxes through it.
 *
 * Owns: the keys and their tenants (each API key is a tenant of libabx,
 * abx_tenant_from_secret: a key's client sees and touches only the
 * sandboxes it created, and another key's id answers exactly as an
 * unknown one, because libabx answers so), routing (a request with
 * E2b-Sandbox-Id / E2b-Sandbox-Port headers, or a Host "PORT-ID.DOMAIN",
 * is data plane: proxy.c, reaching only the sandboxes of this server's
 * keys), the REST control plane (create v1 and v2, connect, list with
 * filters and paging, info, timeout, pause, resume, network, metrics,
 * kill, templates, health), E2B's create options kept as the sandbox's
 * notes (abx_create_options.notes_json), and errors as E2B's body {code,
 * message} with the status of abx's error table. Built on abx.h and the
 * base layer: it never reads a provider's state.
 */
#include "serve.h"
#include "buf.h"
#include "error_internal.h"
#include "http_listener.h"
#include "netlibs.h"
#include "netpolicy.h"
#include "volume_spec.h"
#include "parse.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONTROL_BODY (1u << 20)
#define MAX_KEYS 256
#define MAX_PEERS 4096   /* host users the service has seen */
#define PEER_RECHECK_S 5 /* a user's admission is decided again after this */
#define ENVD_VERSION "0.6.4"
#define CLIENT_ID "6532622b"
/* A create whose body names no timeout: E2B's cloud gives 300 s (its API's
 * spec says 15, which no SDK user expects); --default-timeout changes it. */
#define DEFAULT_CREATE_TIMEOUT_S 300

typedef struct serve_key {
    char tenant[34];
    abx_client *client; /* acting for that tenant (a service's root: the root client, borrowed) */
    unsigned inflight;  /* data-plane requests in flight for its sandboxes (serve_ctx.mu) */
    /* the service's callers (peers.c): the host uid, whether it administers, when that was decided */
    unsigned uid;
    bool admin;
    time_t checked;
} serve_key;

typedef struct serve_ctx {
    abx_client *root; /* the provider's client (its warm pool) */
    abx_client *data; /* acting for every key's tenant: the keyless data plane */
    char domain[128];
    /* the domain in answers: a sandbox's host is PORT-ID.THIS, so it is the
     * domain and, past 80 and 443, the listener's port (so that the host
     * works as a URL's authority); published once the port is known */
    char domain_port[160];
    _Atomic(const char *) answer_domain;
    unsigned default_timeout_s;
    serve_key keys[MAX_KEYS];
    size_t nkeys;
    serve_key *peers;                /* the service's: MAX_PEERS, the first npeers in use (mu) */
    atomic_bool stopping;            /* tunnels end (peers' TCP relays) */
    atomic_llong signed_walk_second; /* the second signed_target's walks are counted in, */
    atomic_int signed_walks;         /* and how many it made then (at most SIGNED_WALKS_PER_S) */
    size_t npeers;
    serve_metrics *metrics; /* GET /metrics: the counters, the token's hash */
    serve_console *console; /* --console: its sessions; NULL when off */
    serve_key admin;        /* the console's administrator (the metrics token): the root client */
    pthread_mutex_t mu;
} serve_ctx;

/* REQ_REFUSED: answered (401) once its body is read, so that a client still
 * sending it reads the answer. */
typedef enum req_kind { REQ_CONTROL, REQ_DATA, REQ_ENVD, REQ_UPLOAD, REQ_REFUSED, REQ_ANSWERED } req_kind;

#define UPLOAD_BUILD_MAX (300ull << 20) /* a packed build context: 256 MiB of files and their headers */
#define UPLOAD_IMPORT_MAX (64ull << 30) /* a root filesystem archive (the importer's own bound) */

typedef struct serve_req {
    req_kind kind;
    serve_key *key;  /* the control plane's caller; the data plane's budget */
    abx_client *who; /* whose sandboxes the request reaches: the key's, or an administrator's all */
    abx_buf body;
    bool too_big;
    serve_proxy *proxy;
    envd_front *envd; /* a sandbox whose envd serve answers itself */
    int upload_fd;    /* REQ_UPLOAD: the body, in a file of the service's own (-1: none) */
    unsigned long long upload_len, upload_max;
    /* for /metrics, counted when it completes: */
    struct timespec started;
    bool data_plane;
    int error_code;    /* the abx error it was answered with; 0: none */
    serve_event event; /* a create or a kill it made */
    bool login;        /* POST /console/api/session: its body is a key */
} serve_req;

/* ---- answers ------------------------------------------------------------------------ */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *type,
                                 const char *text, const char *next_token)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        text ? strlen(text) : 0, (void *)(text ? text : ""), MHD_RESPMEM_MUST_COPY);
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
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *json,
                                 const char *next_token)
{
    char *text = json ? json_dumps(json, JSON_COMPACT) : NULL;
    json_decref(json);
    enum MHD_Result ok = send_text(c, status, "application/json", text ? text : "{}", next_token);
    free(text);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *message)
{
    return send_json(c, status, json_pack("{s:i, s:s}", "code", (int)status, "message", message), NULL);
}

int serve_send_error(struct MHD_Connection *c, unsigned status, const char *message)
{
    return send_error(c, status, message) == MHD_YES ? 0 : -1;
}

/* An abx error (counted in rq for /metrics) as E2B's status (abx's table) and body: a request's own
 * mistake says which (our validation's words, a policy refusal's rule); anything else only its
 * code and the table's text: no path, no errno, no upstream message. */
static enum MHD_Result send_abx_error(struct MHD_Connection *c, serve_req *rq, int rc, abx_error *err)
{
    int code = rc < 0 ? -rc : rc;
    rq->error_code = code;
    unsigned status = (unsigned)abx_err_http_status(code);
    bool own_words = status == 400 || status == 429 || code == ABX_ENETPOLICY || code == ABX_ENOTALLOWED ||
                     code == ABX_EBUSY ||
                     code == ABX_EBUILD; /* a build's failing step: the caller's own Dockerfile's output */
    const char *detail = code == ABX_ENOTFOUND                 ? "sandbox not found"
                         : own_words && abx_error_message(err) ? abx_error_message(err)
                                                               : abx_strerror(code);
    char message[600];
    snprintf(message, sizeof message, "%s: %s", abx_err_name(code), detail);
    abx_error_free(err);
    return send_error(c, status < 400 || status > 599 ? 500 : status, message);
}

/* ---- keys and tenants --------------------------------------------------------------- */

/* The key of the request's X-API-Key (or, from the console, of its
 * X-Abx-Session), or NULL. Every key is compared (in constant time), so
 * the answer's time says nothing of which matched. */
static serve_key *key_of(serve_ctx *s, struct MHD_Connection *c)
{
    const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key");
    if (!key && s->console) /* the console's calls: its session stands for the key it logged in with */
        return serve_console_session(s->console, c);
    if (!key || strlen(key) > 200)
        return NULL;
    char t[34];
    abx_tenant_from_secret(key, t);
    serve_key *found = NULL;
    for (size_t i = 0; i < s->nkeys; i++)
        if (CRYPTO_memcmp(t, s->keys[i].tenant, sizeof t) == 0)
            found = &s->keys[i];
    return found;
}

/* The key whose tenant tenant is (the data plane's budget), or NULL. */
static serve_key *key_of_tenant(serve_ctx *s, const char *tenant)
{
    for (size_t i = 0; tenant && i < s->nkeys; i++)
        if (strcmp(s->keys[i].tenant, tenant) == 0)
            return &s->keys[i];
    return NULL;
}

/* The service's caller on c (peers.c) as its key, the tenant of its host
 * uid, admitted anew every PEER_RECHECK_S; NULL with the answer's status
 * and words. */
static serve_key *peer_of(serve_ctx *s, struct MHD_Connection *c, bool *admin, unsigned *status, char *why,
                          size_t len)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    unsigned uid = 0;
    *status = 403;
    if (!ci || serve_peer_uid(ci->connect_fd, &uid) < 0) {
        snprintf(why, len, "%s: the kernel does not name the caller", abx_err_name(ABX_ENOTALLOWED));
        return NULL;
    }
    time_t now = time(NULL);
    serve_key *k = NULL;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->npeers && !k; i++)
        k = s->peers[i].uid == uid ? &s->peers[i] : NULL;
    bool fresh = k && now - k->checked < PEER_RECHECK_S;
    *admin = k && k->admin;
    pthread_mutex_unlock(&s->mu);
    if (fresh)
        return k;
    char words[400];
    if (serve_peer_admit(uid, admin, words, sizeof words) < 0) {
        snprintf(why, len, "%s: %s", abx_err_name(ABX_ENOTALLOWED), words);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->npeers && !k;
         i++) /* another request of this uid's may have added it meanwhile */
        k = s->peers[i].uid == uid ? &s->peers[i] : NULL;
    if (!k && s->npeers < MAX_PEERS) {
        serve_key *n = &s->peers[s->npeers];
        memset(n, 0, sizeof *n);
        n->uid = uid;
        if (uid == 0)
            n->client = s->root; /* root is the machine's administrator: no tenant */
        else
            abx_tenant_from_uid(uid, n->tenant);
        if (uid == 0 || abx_client_for_tenant(s->root, n->tenant, &n->client, NULL) == 0)
            k = &s->peers[s->npeers++];
    }
    if (k) {
        k->admin = *admin;
        k->checked = now;
    }
    pthread_mutex_unlock(&s->mu);
    if (!k) {
        *status = 503;
        snprintf(why, len, "%s: the service serves no more host users", abx_err_name(ABX_ELIMIT));
    }
    return k;
}

/* ---- the control plane ----------------------------------------------------------------- */

static const char *bare(const char *qualified)
{
    const char *colon = strchr(qualified, ':');
    return colon ? colon + 1 : qualified;
}

/* The sandbox's notes (E2B's create options), or an empty object. */
static json_t *notes_of(abx_sandbox *sb)
{
    char *text = NULL;
    json_t *notes = abx_sandbox_notes(sb, &text, NULL) == 0 ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    return json_is_object(notes) ? notes : (json_decref(notes), json_object());
}

/* E2B's network object: what the create asked (its notes), with the
 * allowOut and denyOut lists in force now (abx's, so that updateNetwork
 * shows); NULL when there is nothing to show. */
/* Whether the list asked (E2B's strings) is the list abx keeps (live:
 * bare addresses with their /32 or /128). */
static bool same_rules(json_t *asked, json_t *live)
{
    if (json_array_size(asked) != json_array_size(live))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(asked, i, v)
    {
        const char *a = json_string_value(v), *l = json_string_value(json_array_get(live, i));
        if (!a || !l)
            return false;
        size_t n = strlen(a);
        bool bare = !strchr(a, '/') && strspn(a, "0123456789.:abcdefABCDEF") == n;
        const char *suffix = bare ? (strchr(a, ':') ? "/128" : "/32") : "";
        if (strncmp(a, l, n) != 0 || strcmp(l + n, suffix) != 0)
            return false;
    }
    return true;
}

static json_t *e2b_network(json_t *asked, const char *live_json)
{
    json_t *live = live_json ? json_loads(live_json, 0, NULL) : NULL;
    json_t *allow = json_object_get(live, "allow_out"), *deny = json_object_get(live, "deny_out");
    json_t *net = json_is_object(asked) ? json_deep_copy(asked) : NULL;
    json_t *asked_allow = json_object_get(asked, "allowOut"), *asked_deny = json_object_get(asked, "denyOut");
    bool unchanged = json_is_array(allow) && json_is_array(deny) && same_rules(asked_allow, allow) &&
                     same_rules(asked_deny, deny);
    if (!unchanged && live && (json_array_size(allow) || json_array_size(deny) || net)) {
        if (!net)
            net = json_object();
        json_object_del(net, "allowOut");
        json_object_del(net, "denyOut");
        if (json_array_size(allow))
            json_object_set(net, "allowOut", allow);
        if (json_array_size(deny))
            json_object_set(net, "denyOut", deny);
    }
    json_decref(live);
    return net;
}

/* The token E2B's SDK sends envd: the sandbox's own (its endpoint's), or
 * the one serve keeps in its notes for an envd it answers itself
 * (envd_front.c); points into ep or notes. */
static const char *envd_token(abx_sandbox *sb, json_t *notes, abx_endpoint *ep)
{
    if (abx_sandbox_endpoint(sb, ABX_PORT_ENVD, ep, NULL) == 0)
        return ep->token;
    return json_string_value(json_object_get(notes, "envd_token")) ?: "";
}

/* Sandbox (create / connect answer): ids, versions, the data plane's tokens. */
static json_t *sandbox_json(serve_ctx *s, abx_sandbox *sb, const char *template_id)
{
    json_t *notes = notes_of(sb);
    abx_endpoint ep;
    const char *token = envd_token(sb, notes, &ep);
    json_t *answer = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "sandboxID", bare(abx_sandbox_id(sb)),
                               "templateID", template_id, "clientID", CLIENT_ID, "envdVersion", ENVD_VERSION,
                               "envdAccessToken", token, "domain", atomic_load(&s->answer_domain));
    explicit_bzero(&ep, sizeof ep);
    json_t *traffic = json_object_get(notes, "traffic_token");
    if (answer && json_is_string(traffic))
        json_object_set(answer, "trafficAccessToken", traffic);
    json_decref(notes);
    return answer;
}

/* ListedSandbox; with a handle (detail) also the token, the domain and
 * E2B's options as the create gave them. */
static json_t *listed_json(serve_ctx *s, const abx_sandbox_info *in, abx_sandbox *detail_of)
{
    char started[40], end[40];
    abx__rfc3339(in->started_at, started, sizeof started);
    abx__rfc3339(in->end_at, end, sizeof end);
    json_t *meta = json_loads(in->metadata_json ? in->metadata_json : "{}", 0, NULL);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:s}", "templateID", in->template_id, "sandboxID",
        bare(in->sandbox_id), "clientID", CLIENT_ID, "startedAt", started, "endAt", end, "state", in->status,
        "cpuCount", (int)in->cpu_count, "memoryMB", (int)in->memory_mb, "diskSizeMB", (int)in->disk_size_mb,
        "metadata", meta ? meta : json_object(), "envdVersion", ENVD_VERSION);
    if (o && s->peers) { /* abx's clients: the network and env names as abx keeps them */
        json_t *net = in->network_json ? json_loads(in->network_json, 0, NULL) : NULL;
        json_t *names = in->env_names_json ? json_loads(in->env_names_json, 0, NULL) : NULL;
        json_t *vols = in->volumes_json ? json_loads(in->volumes_json, 0, NULL) : NULL;
        json_object_set_new(o, "abx",
                            json_pack("{s:o, s:o, s:o}", "network", net ? net : json_null(), "env_names",
                                      names ? names : json_array(), "volumes", vols ? vols : json_array()));
        if (in->persistent)
            json_object_set_new(
                json_object_get(o, "abx"), "durable",
                json_pack("{s:i, s:s}", "boots", (int)in->boots, "resumed_from", in->resumed_from));
    }
    if (!o || !detail_of)
        return o;
    json_t *notes = notes_of(detail_of);
    abx_endpoint ep;
    json_object_set_new(o, "envdAccessToken", json_string(envd_token(detail_of, notes, &ep)));
    explicit_bzero(&ep, sizeof ep);
    json_object_set_new(o, "domain", json_string(atomic_load(&s->answer_domain)));
    json_t *allow = json_object_get(notes, "allow_internet_access");
    json_object_set_new(o, "allowInternetAccess", json_is_boolean(allow) ? json_incref(allow) : json_false());
    json_t *net = e2b_network(json_object_get(notes, "network"), in->network_json);
    if (net)
        json_object_set_new(o, "network", net);
    json_object_set_new(o, "lifecycle",
                        json_pack("{s:b, s:s}", "autoResume",
                                  json_is_true(json_object_get(notes, "autoResume")), "onTimeout",
                                  json_is_true(json_object_get(notes, "autoPause")) ? "pause" : "kill"));
    json_decref(notes);
    json_t *vols = in->volumes_json ? json_loads(in->volumes_json, 0, NULL) : NULL, *v;
    json_t *mounts = json_array();
    size_t i;
    json_array_foreach(vols, i, v)
    {
        json_array_append_new(mounts, json_pack("{s:O, s:O}", "name", json_object_get(v, "name"), "path",
                                                json_object_get(v, "path")));
    }
    json_decref(vols);
    json_object_set_new(o, "volumeMounts", mounts);
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
    json_object_foreach(obj, k, v)
    {
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

/* timeout in the body: absent (def), or an integer in abx's range; -1 when wrong. */
static long body_timeout(json_t *body, long def)
{
    json_t *t = json_object_get(body, "timeout");
    if (!t)
        return def;
    return json_is_integer(t) && json_integer_value(t) >= ABX_TIMEOUT_MIN_S &&
                   json_integer_value(t) <= ABX_TIMEOUT_MAX_S
               ? (long)json_integer_value(t)
               : -1;
}

static enum MHD_Result bad_timeout(struct MHD_Connection *c)
{
    char message[120];
    snprintf(message, sizeof message, "invalid body: timeout must be an integer from %u to %u",
             ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S);
    return send_error(c, 400, message);
}

/* n random bytes as hex into out (2n + 1 bytes); false without randomness. */
static bool random_hex(char *out, size_t n)
{
    unsigned char raw[32];
    if (n > sizeof raw || getrandom(raw, n, 0) != (ssize_t)n)
        return false;
    for (size_t i = 0; i < n; i++)
        snprintf(out + i * 2, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    return true;
}

/* E2B's create options abx serve answers for later (notes): the traffic
 * token (network.allowPublicTraffic false: every port but envd's needs it,
 * proxy.c), the network as given, autoPause, autoResume. NULL without
 * memory. */
static char *notes_for(json_t *body)
{
    json_t *keep = json_object();
    char traffic[33] = "", envd[65] = "";
    if (json_is_false(json_object_get(json_object_get(body, "network"), "allowPublicTraffic")) &&
        random_hex(traffic, 16))
        json_object_set_new(keep, "traffic_token", json_string(traffic));
    if (random_hex(envd, 32)) /* for a provider without envd of its own, whose envd serve answers */
        json_object_set_new(keep, "envd_token", json_string(envd));
    explicit_bzero(envd, sizeof envd);
    static const char *const keys[] = {"allow_internet_access", "network", "autoPause", "autoResume"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(body, keys[i]);
        if (v)
            json_object_set(keep, keys[i], v);
    }
    char *text = json_dumps(keep, JSON_COMPACT);
    json_decref(keep);
    explicit_bzero(traffic, sizeof traffic);
    if (text &&
        strlen(text) > ABX_NOTES_MAX) { /* a network object too big to keep: its lists are the policy's */
        free(text);
        text = strdup("{}");
    }
    return text;
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

/* abx's own create options beyond E2B's (a body's "abx" object: what
 * abx's clients send, the service's among them). */
typedef struct create_extras {
    unsigned cpu_count, memory_mb; /* 0: the defaults */
    const char *network;           /* NULL: decided by the lists */
    char **allow, **deny;          /* NULL-terminated (free_pairs) */
} create_extras;

#define EXTRAS_LIST_MAX 4096

/* A JSON array of at most EXTRAS_LIST_MAX strings as a NULL-terminated
 * copy, or NULL with *bad set. */
static char **strings_of_json(json_t *a, bool *bad)
{
    if (!a)
        return calloc(1, sizeof(char *));
    if (!json_is_array(a) || json_array_size(a) > EXTRAS_LIST_MAX) {
        *bad = true;
        return NULL;
    }
    char **out = calloc(json_array_size(a) + 1, sizeof *out);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!out || !json_is_string(v) || !(out[i] = strdup(json_string_value(v)))) {
            *bad = true;
            return out;
        }
    }
    return out;
}

static void extras_free(create_extras *x)
{
    free_pairs(x->allow);
    free_pairs(x->deny);
    memset(x, 0, sizeof *x);
}

static bool extras_of(json_t *own, create_extras *x, char *why, size_t len)
{
    memset(x, 0, sizeof *x);
    if (!own)
        return true;
    json_t *cpu = json_object_get(own, "cpuCount"), *mem = json_object_get(own, "memoryMB"),
           *net = json_object_get(own, "network");
    bool bad = !json_is_object(own) || (cpu && !json_is_integer(cpu)) || (mem && !json_is_integer(mem)) ||
               (net && !json_is_string(net)) || json_integer_value(cpu) < 0 ||
               json_integer_value(cpu) > 1024 || json_integer_value(mem) < 0 ||
               json_integer_value(mem) > 1048576;
    x->cpu_count = (unsigned)json_integer_value(cpu);
    x->memory_mb = (unsigned)json_integer_value(mem);
    x->network = json_string_value(net);
    if (!bad)
        x->allow = strings_of_json(json_object_get(own, "allowOut"), &bad);
    if (!bad)
        x->deny = strings_of_json(json_object_get(own, "denyOut"), &bad);
    if (bad) {
        extras_free(x);
        snprintf(why, len,
                 "invalid body: abx is an object of cpuCount (0-1024), memoryMB (0-1048576), network (a "
                 "string) and allowOut, denyOut (at most %d strings each)",
                 EXTRAS_LIST_MAX);
    }
    return !bad;
}

/* ---- snapshots: E2B's POST /sandboxes/{id}/snapshots, GET /snapshots, DELETE /templates/{id} ---- */

static abx_sandbox *own_sandbox(serve_req *rq, const char *id, struct MHD_Connection *c,
                                enum MHD_Result *sent);

/* E2B's SnapshotInfo of a libabx snapshot info: {snapshotID, names}, abx's own under "abx". */
static json_t *snapshot_json(json_t *in)
{
    json_t *id = json_object_get(in, "snapshot_id");
    return json_pack("{s:O?, s:[O?], s:O}", "snapshotID", id, "names", json_object_get(in, "name"), "abx",
                     in);
}

static enum MHD_Result snapshot_one(struct MHD_Connection *c, serve_req *rq, const char *id, json_t *body)
{
    json_t *name = json_object_get(body, "name");
    if (body && (!json_is_object(body) || (name && !json_is_string(name))))
        return send_error(c, 400, "invalid body: name must be a string");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    char *text = NULL;
    int rc = abx_sandbox_snapshot(sb, json_string_value(name), &text, &err);
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *in = json_loads(text, 0, NULL);
    abx_free(text);
    json_t *out = snapshot_json(in);
    json_decref(in);
    return send_json(c, 201, out, NULL);
}

static json_t *sandbox_json(serve_ctx *s, abx_sandbox *sb, const char *template_id);

/* E2B's POST /sandboxes/{id}/fork {timeout, count}: [{sandbox}] */
static enum MHD_Result fork_one(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                json_t *body)
{
    json_t *count = json_object_get(body, "count");
    long timeout = body_timeout(body, (long)s->default_timeout_s);
    if (timeout < 0 || (count && (!json_is_integer(count) || json_integer_value(count) < 1 ||
                                  json_integer_value(count) > ABX_FORK_MAX)))
        return send_error(c, 400,
                          "invalid body: count 1-" ABX_STRINGIFY(ABX_FORK_MAX) ", timeout in seconds");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    abx_error *err = NULL;
    abx_sandbox **kids = NULL;
    unsigned n = count ? (unsigned)json_integer_value(count) : 1;
    int rc = abx_sandbox_get_info(sb, &in, &err);
    char tmpl[64] = "";
    if (rc == 0) {
        abx_create_options o = {
            .cpu_count = in.cpu_count, .memory_mb = in.memory_mb, .timeout_s = (unsigned)timeout};
        snprintf(tmpl, sizeof tmpl, "%s", in.template_id);
        abx_sandbox_info_clear(&in);
        rc = abx_sandbox_fork(rq->key->client, sb, n, &o, &kids, &err);
    }
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *out = json_array();
    for (unsigned i = 0; i < n; i++) {
        json_array_append_new(out, json_pack("{s:o}", "sandbox", sandbox_json(s, kids[i], tmpl)));
        abx_sandbox_free(kids[i]);
    }
    abx_free(kids);
    return send_json(c, 201, out, NULL);
}

static enum MHD_Result snapshots_list(struct MHD_Connection *c, serve_req *rq)
{
    const char *of = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sandboxID");
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    abx_error *err = NULL;
    char *text = NULL;
    int rc = abx_snapshot_list(rq->key->client, of && *of ? of : NULL, &text, &err);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *all = json_loads(text, 0, NULL), *v, *out = json_array();
    abx_free(text);
    size_t i;
    json_array_foreach(all, i, v)
    {
        const char *n = json_string_value(json_object_get(v, "name"));
        if (!name || !*name || (n && strcmp(n, name) == 0))
            json_array_append_new(out, snapshot_json(v));
    }
    json_decref(all);
    return send_json(c, 200, out, NULL);
}

static enum MHD_Result template_delete(struct MHD_Connection *c, serve_req *rq, const char *id)
{
    abx_error *err = NULL;
    int rc = abx_snapshot_remove(rq->key->client, id, &err);
    if (rc == -ABX_ENOTFOUND) {
        abx_error_free(err);
        return send_error(c, 404, "template not found");
    }
    return rc < 0 ? send_abx_error(c, rq, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

static enum MHD_Result create(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, json_t *body)
{
    (void)s;
    json_t *tmpl = json_object_get(body, "templateID");
    long timeout = body_timeout(body, (long)s->default_timeout_s);
    bool bad = !json_is_object(body) || (tmpl && !json_is_string(tmpl)) || timeout < 0;
    char **meta = bad ? NULL : pairs_of(json_object_get(body, "metadata"), &bad);
    char **envs = bad ? NULL : pairs_of(json_object_get(body, "envVars"), &bad);
    abx_volume_specs mounts; /* E2B's volumeMounts [{name, path}], and abx's readOnly */
    bad = bad || !abx__volume_specs_from_json(json_object_get(body, "volumeMounts"), "readOnly", &mounts);
    if (bad) {
        free_pairs(meta);
        free_pairs(envs);
        char message[240];
        snprintf(message, sizeof message,
                 "invalid body: templateID must be a string, timeout an integer from %u to "
                 "%u, metadata and envVars objects of strings, volumeMounts at most 8 {name, path}",
                 ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S);
        return send_error(c, 400, message);
    }
    const char *template_id = tmpl ? json_string_value(tmpl) : "base";
    abx_error *err = NULL;
    int rc = abx_template_exists(rq->key->client, template_id, &err); /* the provider's, not this machine's */
    if (rc == -ABX_ENOTFOUND) {
        abx_error_free(err);
        free_pairs(meta);
        free_pairs(envs);
        char message[120]; /* E2B's API: 404 and these words */
        snprintf(message, sizeof message, "template '%.64s' not found", template_id);
        return send_error(c, 404, message);
    }
    abx_error_free(err);
    err = NULL;
    json_t *net = json_object_get(body, "network"), *own = json_object_get(body, "abx");
    abx_net_egress e;
    create_extras x;
    char why[300];
    if (!extras_of(own, &x, why, sizeof why) ||
        (!own && !egress_of(json_object_get(body, "allow_internet_access"), json_object_get(net, "allowOut"),
                            json_object_get(net, "denyOut"), &e, why, sizeof why))) {
        free_pairs(meta);
        free_pairs(envs);
        extras_free(&x);
        return send_error(c, 400, why);
    }
    if (own) { /* abx's own options say the network */
        memset(&e, 0, sizeof e);
        e.mode = x.network;
        e.allow = x.allow;
        e.deny = x.deny;
    }
    char *notes = notes_for(body);
    abx_create_options o = {.template_id = template_id,
                            .volumes = abx__volume_specs_list(&mounts),
                            .timeout_s = (unsigned)timeout,
                            .metadata = (const char *const *)meta,
                            .envs = (const char *const *)envs,
                            .network = e.mode,
                            .allow_out = (const char *const *)e.allow,
                            .deny_out = (const char *const *)e.deny,
                            .cpu_count = x.cpu_count,
                            .memory_mb = x.memory_mb,
                            .notes_json = notes,
                            /* E2B's lifecycle.onTimeout "pause", as its SDKs send it: a durable
                               sandbox, whose pause keeps its memory unless autoPauseMemory is false */
                            .pause_on_timeout = json_is_true(json_object_get(body, "autoPause")),
                            .persistent = json_is_true(json_object_get(body, "autoPause")),
                            .pause_drops_memory = json_is_false(json_object_get(body, "autoPauseMemory"))};
    abx_sandbox *sb = NULL;
    rc = notes ? abx_sandbox_create(rq->key->client, &o, &sb, &err) : -ABX_ENOMEM;
    free_pairs(meta);
    free_pairs(envs);
    if (!own)
        abx__net_egress_free(&e);
    extras_free(&x);
    if (notes)
        explicit_bzero(notes, strlen(notes));
    free(notes);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    rq->event = SERVE_EVENT_CREATE;
    json_t *answer = sandbox_json(s, sb, template_id);
    abx_sandbox_free(sb);
    return send_json(c, 201, answer, NULL);
}

/* The caller's sandbox id (bare) as a handle, or an answer sent (another
 * key's id answers as an unknown one: libabx says so). */
static abx_sandbox *own_sandbox(serve_req *rq, const char *id, struct MHD_Connection *c,
                                enum MHD_Result *sent)
{
    abx_sandbox *sb = NULL;
    if (abx_sandbox_connect(rq->who, id, &sb, NULL) < 0) {
        rq->error_code = ABX_ENOTFOUND;
        *sent = send_error(c, 404, "sandbox not found");
        return NULL;
    }
    return sb;
}

static enum MHD_Result info(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    abx_error *err = NULL;
    int rc = abx_sandbox_get_info(sb, &in, &err);
    if (rc < 0) {
        abx_sandbox_free(sb);
        return send_abx_error(c, rq, rc, err);
    }
    json_t *answer = listed_json(s, &in, sb);
    abx_sandbox_info_clear(&in);
    abx_sandbox_free(sb);
    return send_json(c, 200, answer, NULL);
}

/* metrics: [SandboxMetric], one sample: now. */
/* One of E2B's SandboxMetric objects. */
static json_t *metric_json(long long t, unsigned cpu_count, double cpu_pct, unsigned long long mem_used,
                           unsigned long long mem_total, unsigned long long disk_used,
                           unsigned long long disk_total)
{
    char when[40];
    abx__rfc3339(t, when, sizeof when);
    return json_pack("{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I, s:I}", "timestamp", when, "timestampUnix",
                     (json_int_t)t, "cpuCount", (int)cpu_count, "cpuUsedPct", cpu_pct, "memUsed",
                     (json_int_t)mem_used, "memTotal", (json_int_t)mem_total, "memCache", (json_int_t)0,
                     "diskUsed", (json_int_t)disk_used, "diskTotal", (json_int_t)disk_total);
}

/* ?start=&end= (unix seconds, as E2B's SDKs send them): bounds of a series. */
static bool time_bounds(struct MHD_Connection *c, long long *start, long long *end, bool *series)
{
    const char *a = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "start");
    const char *b = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "end");
    *series = a || b;
    *start = 0;
    *end = (long long)time(NULL) + 1;
    char *stop = NULL;
    if (a && (*start = strtoll(a, &stop, 10), !*a || *stop || *start < 0))
        return false;
    if (b && (*end = strtoll(b, &stop, 10), !*b || *stop || *end < 0))
        return false;
    return true;
}

/* E2B's GET /sandboxes/ID/metrics: the use now, or with ?start/?end its
 * samples over the last hour in that span (abx_sandbox_get_history; the
 * CPU as the share of its CPUs between two samples). */
static enum MHD_Result metrics(struct MHD_Connection *c, serve_req *rq, const char *id)
{
    long long from, to;
    bool series;
    if (!time_bounds(c, &from, &to, &series))
        return send_error(c, 400, "start and end: unix seconds");
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_metrics m;
    abx_error *err = NULL;
    char *history = NULL;
    int rc = abx_sandbox_get_metrics(sb, &m, &err);
    if (rc == 0 && series && abx_sandbox_get_history(sb, &history, NULL) < 0)
        history = NULL; /* a provider without history: the sample now */
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *out = json_array(), *samples = history ? json_loads(history, 0, NULL) : NULL, *h;
    abx_free(history);
    size_t i;
    long long last_t = 0;
    unsigned long long last_cpu = 0;
    json_array_foreach(samples, i, h)
    {
        long long t = json_integer_value(json_object_get(h, "t"));
        unsigned long long cpu = (unsigned long long)json_integer_value(json_object_get(h, "cpu_usec"));
        double pct = i && t > last_t && cpu >= last_cpu && m.cpu_count
                         ? (double)(cpu - last_cpu) / 1e4 / (double)(t - last_t) / m.cpu_count
                         : 0;
        if (i && t >= from && t <= to)
            json_array_append_new(
                out, metric_json(t, m.cpu_count, pct,
                                 (unsigned long long)json_integer_value(json_object_get(h, "memory_bytes")),
                                 m.mem_total, m.disk_used, m.disk_total));
        last_t = t;
        last_cpu = cpu;
    }
    json_decref(samples);
    if (json_array_size(out) == 0)
        json_array_append_new(out, metric_json((long long)time(NULL), m.cpu_count, m.cpu_used_pct, m.mem_used,
                                               m.mem_total, m.disk_used, m.disk_total));
    return send_json(c, 200, out, NULL);
}

/* abx's GET /sandboxes/ID/stats: what it has used since it started
 * (abx_sandbox_get_stats; the shape abx's e2b provider reads). */
static enum MHD_Result stats_one(struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_stats st;
    abx_error *err = NULL;
    int rc = abx_sandbox_get_stats(sb, &st, &err);
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "cpu_us", (json_int_t)st.cpu_usec,
                          "mem_bytes", (json_int_t)st.mem_bytes, "mem_peak_bytes",
                          (json_int_t)st.mem_peak_bytes, "mem_limit_bytes", (json_int_t)st.mem_limit_bytes,
                          "pids", (json_int_t)st.pids, "pids_limit", (json_int_t)st.pids_limit, "oom_kills",
                          (json_int_t)st.oom_kills, "disk_used_bytes", (json_int_t)st.disk_used_bytes,
                          "disk_limit_bytes", (json_int_t)st.disk_limit_bytes);
    if (o && st.has_network)
        json_object_set_new(
            o, "network",
            json_pack("{s:I, s:I, s:I, s:I, s:I}", "out_bytes", (json_int_t)st.net_out_bytes, "out_packets",
                      (json_int_t)st.net_out_packets, "in_bytes", (json_int_t)st.net_in_bytes, "in_packets",
                      (json_int_t)st.net_in_packets, "refused_packets", (json_int_t)st.net_refused_packets));
    return send_json(c, 200, o, NULL);
}

/* pause: 204; 409 when it already is. */
static enum MHD_Result pause_one(struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_pause(sb, &err);
    abx_sandbox_free(sb);
    if (rc == -ABX_EINVAL) {
        abx_error_free(err);
        return send_error(c, 409, "sandbox is already paused");
    }
    return rc < 0 ? send_abx_error(c, rq, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

/* resume (the old endpoint) and connect to a paused sandbox: 201. */
static enum MHD_Result resume_one(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                  json_t *body)
{
    long timeout = body_timeout(body, 0);
    if (timeout < 0)
        return bad_timeout(c);
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_sandbox_info in;
    memset(&in, 0, sizeof in);
    abx_error *err = NULL;
    int rc = abx_sandbox_get_info(sb, &in, &err);
    if (rc == 0 && strcmp(in.status, "paused") != 0)
        rc = -ABX_EINVAL;
    if (rc == 0)
        rc = abx_sandbox_resume(sb, (unsigned)timeout, &err);
    json_t *answer = rc == 0 ? sandbox_json(s, sb, in.template_id) : NULL;
    abx_sandbox_info_clear(&in);
    abx_sandbox_free(sb);
    if (rc == -ABX_EINVAL) {
        abx_error_free(err);
        return send_error(c, 409, "sandbox is not paused");
    }
    return answer ? send_json(c, 201, answer, NULL) : send_abx_error(c, rq, rc, err);
}

/* connect: the TTL is only ever extended. */
static enum MHD_Result connect_to(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, const char *id,
                                  json_t *body)
{
    long timeout = body_timeout(body, 0);
    if (timeout < 0 || (body && !json_is_object(body)))
        return bad_timeout(c);
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
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

static enum MHD_Result set_timeout(struct MHD_Connection *c, serve_req *rq, const char *id, json_t *body)
{
    long timeout = body_timeout(body, -1);
    if (timeout < 0)
        return bad_timeout(c);
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_set_timeout(sb, (unsigned)timeout, &err);
    abx_sandbox_free(sb);
    return rc < 0 ? send_abx_error(c, rq, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

/* PUT /sandboxes/ID/network {allowOut, denyOut, allow_internet_access}:
 * replaces the policy (what is omitted is cleared, as on E2B); 204. */
static enum MHD_Result update_network(struct MHD_Connection *c, serve_req *rq, const char *id, json_t *body)
{
    abx_net_egress e;
    create_extras x;
    char why[300];
    json_t *own = json_object_get(body, "abx"); /* abx's clients say the mode and lists as abx has them */
    if (body && !json_is_object(body))
        return send_error(c, 400, "invalid body: an object {allowOut, denyOut, allow_internet_access}");
    if (!extras_of(own, &x, why, sizeof why))
        return send_error(c, 400, why);
    if (!own && !egress_of(json_object_get(body, "allow_internet_access"), json_object_get(body, "allowOut"),
                           json_object_get(body, "denyOut"), &e, why, sizeof why))
        return send_error(c, 400, why);
    if (own) {
        memset(&e, 0, sizeof e);
        e.mode = x.network;
        e.allow = x.allow;
        e.deny = x.deny;
    }
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb) {
        if (own)
            extras_free(&x);
        else
            abx__net_egress_free(&e);
        return sent;
    }
    abx_error *err = NULL;
    int rc =
        abx_sandbox_set_network(sb, e.mode, (const char *const *)e.allow, (const char *const *)e.deny, &err);
    abx_sandbox_free(sb);
    if (own)
        extras_free(&x);
    else
        abx__net_egress_free(&e);
    return rc < 0 ? send_abx_error(c, rq, rc, err) : send_text(c, 204, NULL, NULL, NULL);
}

static enum MHD_Result kill_one(struct MHD_Connection *c, serve_req *rq, const char *id)
{
    enum MHD_Result sent = MHD_NO;
    abx_sandbox *sb = own_sandbox(rq, id, c, &sent);
    if (!sb)
        return sent;
    abx_error *err = NULL;
    int rc = abx_sandbox_kill(sb, &err);
    abx_sandbox_free(sb);
    if (rc == 0)
        rq->event = SERVE_EVENT_KILL;
    return rc < 0 ? send_abx_error(c, rq, rc, err) : send_text(c, 204, NULL, NULL, NULL);
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

/* A state filter names running, paused or both (E2B's enum),
 * comma-separated; *only is the one named, or NULL for both. */
static bool state_filter(const char *filter, const char **only)
{
    *only = NULL;
    if (!filter || !*filter)
        return true;
    if (strlen(filter) >= 64)
        return false;
    bool running = false, paused = false;
    char copy[64];
    snprintf(copy, sizeof copy, "%s", filter);
    char *save = NULL;
    for (char *one = strtok_r(copy, ",", &save); one; one = strtok_r(NULL, ",", &save)) {
        if (strcmp(one, "running") == 0)
            running = true;
        else if (strcmp(one, "paused") == 0)
            paused = true;
        else
            return false;
    }
    *only = running && !paused ? "running" : paused && !running ? "paused" : NULL;
    return true;
}

#define LIST_PAGES_MAX 10000

/* GET /v2/sandboxes (and v1): the key's own sandboxes (its client lists
 * no others), filtered by state and metadata, paged by nextToken. */
static enum MHD_Result list(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
    const char *meta = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "metadata");
    const char *limit_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *next = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "nextToken");
    unsigned limit = ABX_LIST_LIMIT_MAX, skip = 0;
    const char *only = NULL;
    if ((limit_s && abx__parse_uint(limit_s, 1, ABX_LIST_LIMIT_MAX, &limit) < 0) ||
        (next && *next && abx__parse_uint(next, 0, 1000000, &skip) < 0))
        return send_error(c, 400, "invalid query: limit is 1 to 100, nextToken one this server gave");
    if (!state_filter(state, &only))
        return send_error(c, 400, "invalid query: state is running, paused or both (comma-separated)");
    json_t *out = json_array();
    size_t matched = 0;
    bool more = false;
    for (unsigned page = 0; !more && page < LIST_PAGES_MAX; page++) {
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        abx_error *err = NULL;
        int rc = abx_list(rq->who, only, ABX_LIST_LIMIT_MAX, page * ABX_LIST_LIMIT_MAX, &items, &n, &err);
        if (rc < 0) {
            json_decref(out);
            return send_abx_error(c, rq, rc, err);
        }
        for (size_t i = 0; i < n && !more; i++) {
            if (!metadata_matches(meta, items[i].metadata_json) || matched++ < skip)
                continue;
            if (json_array_size(out) == limit)
                more = true;
            else
                json_array_append_new(out, listed_json(s, &items[i], NULL));
        }
        abx_sandbox_info_list_free(items, n);
        if (n < ABX_LIST_LIMIT_MAX)
            break;
    }
    char token[24];
    snprintf(token, sizeof token, "%u", skip + limit);
    return send_json(c, 200, out, more ? token : NULL);
}

/* GET /templates: the provider's templates, as E2B's Template list. */
static enum MHD_Result templates(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    char *text = NULL;
    abx_error *err = NULL;
    int rc = abx_templates(rq->key->client, &text, &err);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *all = json_loads(text, 0, NULL), *out = json_array();
    abx_free(text);
    size_t i;
    json_t *t;
    json_array_foreach(all, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        json_t *one = name ? json_pack("{s:s, s:s, s:[s], s:b, s:s}", "templateID", name, "buildID", name,
                                       "aliases", name, "public", 1, "buildStatus", "ready")
                           : NULL;
        if (one && s->peers)
            json_object_set(one, "abx", t); /* the service's callers: what abx template list shows */
        if (one)
            json_array_append_new(out, one);
    }
    json_decref(all);
    return send_json(c, 200, out, NULL);
}

/* ---- TCP to a sandbox's port (the service's callers only: abx expose) ---------------------- */

typedef struct tunnel {
    serve_ctx *s;
    int inside; /* the sandbox's port, connected */
} tunnel;

typedef struct tunnel_run {
    tunnel *t;
    int outside; /* the upgraded connection */
    struct MHD_UpgradeResponseHandle *urh;
} tunnel_run;

/* Copies what one side has to the other; false when that side is done. */
static bool pass(int from, int to)
{
    char buf[65536];
    ssize_t n = read(from, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    return n > 0 && abx__write_all_nosigpipe(to, buf, (size_t)n) == 0;
}

static void *tunnel_main(void *arg)
{
    tunnel_run *r = arg;
    struct pollfd p[2] = {{.fd = r->outside, .events = POLLIN}, {.fd = r->t->inside, .events = POLLIN}};
    bool open = true;
    while (open && !atomic_load(&r->t->s->stopping)) {
        int n = poll(p, 2, 1000);
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            open = pass(r->outside, r->t->inside);
        if (open && n > 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
            open = pass(r->t->inside, r->outside);
    }
    close(r->t->inside);
    MHD_upgrade_action(r->urh, MHD_UPGRADE_ACTION_CLOSE);
    free(r->t);
    free(r);
    return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
    (void)c;
    (void)con_cls;
    tunnel *t = cls;
    tunnel_run *r = calloc(1, sizeof *r);
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    bool ok = r && (extra_in_size == 0 || abx__write_all_nosigpipe(t->inside, extra_in, extra_in_size) == 0);
    if (ok) {
        r->t = t;
        r->outside = sock;
        r->urh = urh;
        ok = pthread_create(&th, &attr, tunnel_main, r) == 0;
    }
    pthread_attr_destroy(&attr);
    if (!ok) {
        close(t->inside);
        free(t);
        free(r);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
    }
}

/* GET /abx/tunnel?sandbox=ID&port=N with Upgrade: a TCP connection to the
 * caller's own sandbox's port, made here (root's to make), relayed both
 * ways until either side ends. */
static enum MHD_Result begin_tunnel(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    const char *id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sandbox");
    const char *port_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "port");
    unsigned port = 0;
    if (!port_s || abx__parse_uint(port_s, 1, 65535, &port) < 0)
        return send_error(c, 400, "E8001: port: a TCP port from 1 to 65535");
    abx_sandbox *sb = NULL;
    if (!id || abx_sandbox_connect(rq->who, id, &sb, NULL) < 0)
        return send_error(c, 404, "E8002: sandbox not found");
    abx_error *err = NULL;
    int fd = -1;
    int rc = abx_sandbox_connect_port(sb, port, &fd, &err);
    abx_sandbox_free(sb);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    tunnel *t = calloc(1, sizeof *t);
    struct MHD_Response *r = t ? MHD_create_response_for_upgrade(on_upgrade, t) : NULL;
    if (!r) {
        close(fd);
        free(t);
        return send_error(c, 500, "E8003: out of memory");
    }
    t->s = s;
    t->inside = fd;
    MHD_add_response_header(r, "Upgrade", "abx-tcp");
    MHD_add_response_header(r, "Connection", "Upgrade");
    enum MHD_Result q = MHD_queue_response(c, 101, r);
    MHD_destroy_response(r);
    return q;
}

/* ---- a host user's own templates (the service's callers only) ---------------------------- */

/* A build's or import's body goes to a file of the service's own (never a
 * path a client names), unlinked from the start. */
static enum MHD_Result begin_upload(struct MHD_Connection *c, serve_req *rq, bool build)
{
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
    rq->upload_fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    rq->upload_max = build ? UPLOAD_BUILD_MAX : UPLOAD_IMPORT_MAX;
    if (rq->upload_fd < 0) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 500, "E8012: the service cannot keep the upload");
    }
    rq->kind = REQ_UPLOAD;
    return MHD_YES;
}

#define BUILD_EVENTS_MAX 4096            /* kept for the answer */
#define BUILD_EVENT_BYTES_MAX (4u << 20) /* of them in all: a build's output past it is left out */

typedef struct kept_events {
    json_t *events;
    size_t bytes;
    bool cut; /* output was left out: said once, at the end */
} kept_events;

static void keep_event(const char *event_json, void *ud)
{
    kept_events *k = ud;
    size_t n = strlen(event_json);
    bool room = json_array_size(k->events) < BUILD_EVENTS_MAX - 1 && k->bytes + n <= BUILD_EVENT_BYTES_MAX;
    if (!room) {
        k->cut = true;
        return;
    }
    k->bytes += n;
    json_array_append_new(k->events, json_loads(event_json, 0, NULL) ?: json_null());
}

/* X-Abx-Build-Args: a JSON array of "K=V" strings, as a NULL-terminated copy (free_pairs). */
static char **build_args_of(struct MHD_Connection *c, bool *bad)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Abx-Build-Args");
    json_t *a = h ? json_loads(h, 0, NULL) : json_array();
    char **out = a && json_array_size(a) <= 256 ? strings_of_json(a, bad) : NULL;
    *bad |= !out;
    json_decref(a);
    return out;
}

/* POST /abx/templates/build?name=N[&no_cache=1][&network=M] and
 * /abx/templates/import?name=N: the caller's own template, from the body. */
static enum MHD_Result template_upload(struct MHD_Connection *c, serve_req *rq, const char *url)
{
    const char *name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
    const char *no_cache = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "no_cache");
    const char *network = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "network");
    char archive[64];
    snprintf(archive, sizeof archive, "/proc/self/fd/%d", rq->upload_fd);
    if (!name || lseek(rq->upload_fd, 0, SEEK_SET) < 0)
        return send_error(c, 400, "E8001: name: the template's name");
    abx_error *err = NULL;
    char *info = NULL;
    kept_events kept = {.events = json_array()};
    json_t *events = kept.events;
    int rc;
    if (strcmp(url, "/abx/templates/build") == 0) {
        bool bad = false;
        char **args = build_args_of(c, &bad);
        abx_template_build_options bo = {.name = name,
                                         .build_args = (const char *const *)args,
                                         .no_cache = no_cache && strcmp(no_cache, "1") == 0,
                                         .network = network,
                                         .on_event = keep_event,
                                         .userdata = &kept,
                                         .context_archive = archive};
        rc = bad ? abx__error_set(&err, ABX_EINVAL, "X-Abx-Build-Args: a JSON array of at most 256 strings")
                 : abx_template_build(rq->key->client, &bo, &info, &err);
        free_pairs(args);
    } else {
        rc = abx_template_import(rq->key->client, name, archive, &info, &err);
    }
    if (rc < 0) {
        json_decref(events);
        return send_abx_error(c, rq, rc, err);
    }
    if (kept.cut)
        json_array_append_new(events, json_pack("{s:s, s:s}", "event", "note", "message",
                                                "the build's output past 4 MiB was left out of this answer"));
    json_t *made = info ? json_loads(info, 0, NULL) : NULL;
    abx_free(info);
    return send_json(c, 200, json_pack("{s:o, s:o}", "info", made ? made : json_object(), "events", events),
                     NULL);
}

/* GET /abx/templates/NAME (inspect) and DELETE (remove, ?force=1): the caller's own, or a shared one to read.
 */
static enum MHD_Result template_one(struct MHD_Connection *c, serve_req *rq, const char *name, bool get)
{
    abx_error *err = NULL;
    char *text = NULL;
    const char *force = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "force");
    int rc = get ? abx_template_inspect(rq->key->client, name, &text, &err)
                 : abx_template_remove(rq->key->client, name, force && strcmp(force, "1") == 0, &err);
    if (rc < 0)
        return send_abx_error(c, rq, rc, err);
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    return get ? send_json(c, 200, doc ? doc : json_object(), NULL) : send_text(c, 204, NULL, NULL, NULL);
}

/* ---- volumes: E2B's /volumes (its content API, with the volume's token, is not served) ---- */

/* E2B's Volume[AndToken] of a libabx volume info, abx's own details under "abx". */
static json_t *volume_json(const char *info_text, bool with_token)
{
    json_t *in = info_text ? json_loads(info_text, 0, NULL) : NULL;
    json_t *o =
        json_pack("{s:O?, s:O?, s:{s:O?, s:O?, s:O?}}", "volumeID", json_object_get(in, "volume_id"), "name",
                  json_object_get(in, "name"), "abx", "size_mb", json_object_get(in, "size_mb"), "created_at",
                  json_object_get(in, "created_at"), "in_use", json_object_get(in, "in_use"));
    if (o && with_token)
        json_object_set_new(o, "token", json_string(""));
    json_decref(in);
    return o;
}

static enum MHD_Result volume_error(struct MHD_Connection *c, serve_req *rq, int rc, abx_error *err)
{
    if (rc == -ABX_ENOTFOUND) {
        abx_error_free(err);
        return send_error(c, 404, "volume not found");
    }
    return send_abx_error(c, rq, rc, err);
}

/* GET and POST /volumes, GET and DELETE /volumes/{name or id}. */
static enum MHD_Result volumes_route(struct MHD_Connection *c, serve_req *rq, const char *url,
                                     const char *method, json_t *body)
{
    abx_client *who = rq->key->client;
    bool get = strcmp(method, "GET") == 0;
    abx_error *err = NULL;
    char *text = NULL;
    int rc;
    if (strcmp(url, "/volumes") == 0 && strcmp(method, "POST") == 0) {
        json_t *size = json_object_get(json_object_get(body, "abx"), "size_mb");
        const char *name = json_string_value(json_object_get(body, "name"));
        if (!name || (size && (!json_is_integer(size) || json_integer_value(size) < 0 ||
                               json_integer_value(size) > ABX_VOLUME_MB_MAX)))
            return send_error(c, 400, "invalid body: name must be a string (abx.size_mb an integer of MiB)");
        rc = abx_volume_create(who, name, (unsigned)json_integer_value(size), &text, &err);
        if (rc < 0)
            return volume_error(c, rq, rc, err);
        json_t *o = volume_json(text, true);
        abx_free(text);
        return send_json(c, 201, o, NULL);
    }
    if (strcmp(url, "/volumes") == 0 && get) {
        if ((rc = abx_volume_list(who, &text, &err)) < 0)
            return volume_error(c, rq, rc, err);
        json_t *all = json_loads(text, 0, NULL), *v, *out = json_array();
        abx_free(text);
        size_t i;
        json_array_foreach(all, i, v)
        {
            char *one = json_dumps(v, JSON_COMPACT);
            json_array_append_new(out, volume_json(one, false));
            free(one);
        }
        json_decref(all);
        return send_json(c, 200, out, NULL);
    }
    const char *id = url + strlen("/volumes/");
    if (strncmp(url, "/volumes/", 9) != 0 || !*id || strchr(id, '/'))
        return send_error(c, 404, "no such endpoint");
    if (get) {
        if ((rc = abx_volume_inspect(who, id, &text, &err)) < 0)
            return volume_error(c, rq, rc, err);
        json_t *o = volume_json(text, true);
        abx_free(text);
        return send_json(c, 200, o, NULL);
    }
    if (strcmp(method, "DELETE") != 0)
        return send_error(c, 404, "no such endpoint");
    if ((rc = abx_volume_remove(who, id, &err)) < 0)
        return volume_error(c, rq, rc, err);
    return send_text(c, 204, NULL, NULL, NULL);
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
    bool post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
    /* a body means something on POST and PUT only: on GET or DELETE it was read and is dropped */
    bool takes_body = post || strcmp(method, "PUT") == 0;
    json_t *body = takes_body && rq->body.len ? json_loadb(rq->body.data, rq->body.len, 0, NULL) : NULL;
    if (takes_body && rq->body.len && !body)
        return send_error(c, 400, "invalid body: not JSON");
    char id[64], verb[32];
    enum MHD_Result r;
    if (post && (strcmp(url, "/sandboxes") == 0 || strcmp(url, "/v2/sandboxes") == 0))
        r = create(s, c, rq, body);
    else if (get && (strcmp(url, "/sandboxes") == 0 || strcmp(url, "/v2/sandboxes") == 0))
        r = list(s, c, rq);
    else if (get && strcmp(url, "/templates") == 0)
        r = templates(s, c, rq);
    else if (strcmp(url, "/volumes") == 0 || strncmp(url, "/volumes/", 9) == 0)
        r = volumes_route(c, rq, url, method, body);
    else if (get && strcmp(url, "/snapshots") == 0)
        r = snapshots_list(c, rq);
    else if (strcmp(method, "DELETE") == 0 && strncmp(url, "/templates/", 11) == 0 && url[11] &&
             !strchr(url + 11, '/'))
        r = template_delete(c, rq, url + 11);
    else if (s->peers && strncmp(url, "/abx/templates/", 15) == 0 && (get || strcmp(method, "DELETE") == 0))
        r = template_one(c, rq, url + 15, get);
    else if (!split_path(url, id, sizeof id, verb, sizeof verb))
        r = send_error(c, 404, "no such endpoint");
    else if (get && !*verb)
        r = info(s, c, rq, id);
    else if (strcmp(method, "DELETE") == 0 && !*verb)
        r = kill_one(c, rq, id);
    else if (post && strcmp(verb, "timeout") == 0)
        r = set_timeout(c, rq, id, body);
    else if (post && strcmp(verb, "connect") == 0)
        r = connect_to(s, c, rq, id, body);
    else if (get && strcmp(verb, "metrics") == 0)
        r = metrics(c, rq, id);
    else if (get && strcmp(verb, "stats") == 0)
        r = stats_one(c, rq, id);
    else if (post && strcmp(verb, "pause") == 0)
        r = pause_one(c, rq, id);
    else if (post && strcmp(verb, "snapshots") == 0)
        r = snapshot_one(c, rq, id, body);
    else if (post && strcmp(verb, "fork") == 0)
        r = fork_one(s, c, rq, id, body);
    else if (post && strcmp(verb, "resume") == 0)
        r = resume_one(s, c, rq, id, body);
    else if (strcmp(method, "PUT") == 0 && strcmp(verb, "network") == 0)
        r = update_network(c, rq, id, body);
    else
        r = send_error(c, 404, "no such endpoint");
    json_decref(body);
    return r;
}

/* ---- routing ---------------------------------------------------------------------------- */

typedef enum target_kind { TARGET_NONE, TARGET_BAD, TARGET_SANDBOX } target_kind;

/* Whether a path (already unescaped by libmicrohttpd: "%2e" is ".") has a
 * "." or ".." segment, which a relay's client would resolve away and so
 * reach a route the checks never saw; a backslash too. */
static bool dot_segment(const char *url)
{
    if (strchr(url, '\\'))
        return true;
    for (const char *p = url; (p = strchr(p, '/')); p++) {
        size_t n = strcspn(p + 1, "/?#");
        if ((n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
            return true;
    }
    return false;
}

/* An id as E2B makes them (and as a remote provider may): 1-63 of
 * [A-Za-z0-9_-]. */
static bool id_shaped(const char *id, size_t n)
{
    if (n == 0 || n >= 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return false;
    }
    return true;
}

/* A data-plane request: the sandbox and port from E2b-Sandbox-Id /
 * E2b-Sandbox-Port, or from a Host "PORT-ID.DOMAIN[:listener port]".
 * TARGET_BAD: it names one, malformed (400). */
static target_kind data_plane_target(serve_ctx *s, struct MHD_Connection *c, char id[64], unsigned *port)
{
    const char *hid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id");
    const char *hport = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port");
    if (hid) {
        if (!id_shaped(hid, strlen(hid)) || !hport || abx__parse_uint(hport, 1, 65535, port) < 0)
            return TARGET_BAD;
        snprintf(id, 64, "%s", hid);
        return TARGET_SANDBOX;
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host)
        return TARGET_NONE;
    size_t hl = strcspn(host, ":"), dl = strlen(s->domain);
    if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, s->domain, dl) != 0)
        return TARGET_NONE; /* not a sandbox's name: the control plane */
    const char *label = host, *dash = memchr(label, '-', hl - dl - 1);
    size_t label_len = hl - dl - 1;
    char port_s[8];
    if (!dash || (size_t)(dash - label) >= sizeof port_s)
        return TARGET_BAD;
    snprintf(port_s, sizeof port_s, "%.*s", (int)(dash - label), label);
    size_t id_len = label_len - (size_t)(dash - label) - 1;
    if (abx__parse_uint(port_s, 1, 65535, port) < 0 || !id_shaped(dash + 1, id_len))
        return TARGET_BAD;
    snprintf(id, 64, "%.*s", (int)id_len, dash + 1);
    return TARGET_SANDBOX;
}

/* What each port is for: envd's API on 49983, the code interpreter's on
 * 49999, anything on a user port; abx's own control routes (/abx/...)
 * never, on any port. */
static bool route_allowed(unsigned port, const char *url, const char *method, bool peer)
{
    if (peer && port == ABX_PORT_ENVD && strcmp(url, "/abx/output") == 0 && strcmp(method, "GET") == 0)
        return true; /* the service's callers: a task's output, kept by the sandbox for a later reader */
    if (strncmp(url, "/abx/", 5) == 0 || strcmp(url, "/abx") == 0)
        return false;
    if (port == ABX_PORT_CODE)
        return strcmp(url, "/execute") == 0 || strcmp(url, "/contexts") == 0 ||
               strncmp(url, "/contexts/", 10) == 0 || strcmp(url, "/health") == 0;
    if (port == ABX_PORT_ENVD) {
        static const char *const exact[] = {"/health", "/files", "/envs", "/metrics"};
        for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
            if (strcmp(url, exact[i]) == 0)
                return true;
        return strncmp(url, "/process.Process/", 17) == 0 || strncmp(url, "/filesystem.Filesystem/", 23) == 0;
    }
    return true;
}

/* E2B's proxy's answer for a sandbox it does not have (gone, never there,
 * another tenant's: all alike). */
static enum MHD_Result send_gone(struct MHD_Connection *c)
{
    return send_error(c, 502, "The sandbox was not found");
}

/* Counts a data-plane request against its tenant's budget; false: full. */
static bool inflight_take(serve_ctx *s, serve_key *k)
{
    pthread_mutex_lock(&s->mu);
    bool ok = k->inflight < SERVE_INFLIGHT_PER_TENANT;
    k->inflight += ok;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void inflight_put(serve_ctx *s, serve_key *k)
{
    pthread_mutex_lock(&s->mu);
    k->inflight -= k->inflight > 0;
    pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result begin_data(serve_ctx *s, struct MHD_Connection *c, const char *url, const char *method,
                                  serve_req *rq, const char *id, unsigned port)
{
    rq->kind = REQ_ANSWERED;
    rq->data_plane = true;
    /* a request with a key reaches that key's sandboxes only; without one,
     * those of any key of this server (E2B's SDKs send none here); the
     * service's caller, its own (or, an administrator's, every one) */
    bool keyed = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-Key") != NULL ||
                 (s->console && MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Abx-Session"));
    serve_key *key = keyed ? key_of(s, c) : NULL;
    abx_client *who = s->peers ? rq->who : keyed ? (key ? key->client : NULL) : s->data;
    abx_sandbox *sb = NULL;
    if (!who || abx_sandbox_connect(who, id, &sb, NULL) < 0)
        return send_gone(c);
    if (!route_allowed(port, url, method, s->peers != NULL)) {
        abx_sandbox_free(sb);
        return send_error(c, 404, "no such endpoint on this port");
    }
    serve_key *budget = s->peers ? rq->key : key_of_tenant(s, abx_sandbox_tenant(sb));
    if (!budget && key == &s->admin) /* the administrator's console reaches nobody's sandboxes too */
        budget = &s->admin;
    if (!budget || !inflight_take(s, budget)) {
        abx_sandbox_free(sb);
        return budget ? send_error(c, 429, "too many requests in flight for this tenant's sandboxes")
                      : send_gone(c);
    }
    unsigned status = 502;
    char *text = NULL;
    abx_endpoint ep;
    bool own_envd = abx_sandbox_endpoint(sb, port, &ep, NULL) == -ABX_ENOTSUP && port == ABX_PORT_ENVD;
    explicit_bzero(&ep, sizeof ep);
    if (own_envd) { /* nothing to relay: serve speaks envd for it */
        rq->envd = serve_envd_begin(c, sb, url, method, &status, &text);
        if (rq->envd) {
            rq->key = budget;
            rq->kind = REQ_ENVD;
            return MHD_YES;
        }
    } else {
        rq->proxy = serve_proxy_begin(c, sb, port, url, method, &status, &text);
    }
    if (!rq->proxy) {
        inflight_put(s, budget);
        enum MHD_Result r = status == 502 ? send_gone(c) : send_error(c, status, text ? text : "bad request");
        free(text);
        return r;
    }
    rq->key = budget;
    rq->kind = REQ_DATA;
    return MHD_YES;
}

/* A signed /files URL that names no sandbox (E2B's SDK makes them so when
 * E2B_SANDBOX_URL is set): the live sandbox whose envd token verifies the
 * signature, looked for among every sandbox this server fronts; its id
 * into id. The signature is the capability: nothing else is asked. Only a
 * signature of the right form and unexpired is looked for, at most
 * SIGNED_WALKS_PER_S times a second (past that, refused as unverified). */
#define SIGNED_WALKS_PER_S 200 /* walks a second over every sandbox: what a caller without a key can cost */

/* Whether a signature could verify at all (E2B's v1 form: "v1_" and 43
 * base64 characters; unexpired) and the walk is within this second's
 * budget: what is refused here never costs a walk. */
static bool signed_walk_allowed(serve_ctx *s, struct MHD_Connection *c, const char *method)
{
    const char *sig = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature");
    long long now = (long long)time(NULL);
    if (!sig || strncmp(sig, "v1_", 3) != 0 || strlen(sig) != 3 + 43 ||
        (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) || !serve_signed_url_unexpired(c))
        return false;
    long long second = atomic_load(&s->signed_walk_second);
    if (second != now && atomic_compare_exchange_strong(&s->signed_walk_second, &second, now))
        atomic_store(&s->signed_walks, 0);
    return atomic_fetch_add(&s->signed_walks, 1) < SIGNED_WALKS_PER_S;
}

static bool signed_target(serve_ctx *s, struct MHD_Connection *c, const char *url, const char *method,
                          char id[64])
{
    if (strcmp(url, "/files") != 0 || !MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature") ||
        !s->data || !signed_walk_allowed(s, c, method))
        return false;
    bool found = false;
    for (unsigned offset = 0; !found && offset < 100000; offset += 100) {
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        if (abx_list(s->data, "running", 100, offset, &items, &n, NULL) < 0)
            break;
        for (size_t i = 0; i < n && !found; i++) {
            abx_sandbox *sb = NULL;
            abx_endpoint ep;
            if (abx_sandbox_connect(s->data, items[i].sandbox_id, &sb, NULL) < 0)
                continue;
            if (abx_sandbox_endpoint(sb, ABX_PORT_ENVD, &ep, NULL) == 0 &&
                serve_signed_url_ok(c, method, ep.token)) {
                snprintf(id, 64, "%.63s", bare(items[i].sandbox_id));
                found = true;
            }
            explicit_bzero(&ep, sizeof ep);
            abx_sandbox_free(sb);
        }
        abx_sandbox_info_list_free(items, n);
        if (n < 100)
            break;
    }
    return found;
}

/* GET /metrics: the metrics token's bearer sees every sandbox and the
 * host; an API key (or the service's caller) its own sandboxes, the
 * service's administrator with X-Abx-All-Tenants everyone's and the host. */
/* Whom a request for the host's view (GET /metrics, GET /events) acts
 * for: the metrics token's bearer the administrator (*host too); an API
 * key its tenant; the service's caller its own (its administrator with
 * X-Abx-All-Tenants: everyone, *host too). NULL: nobody. */
static abx_client *observer_of(serve_ctx *s, struct MHD_Connection *c, serve_req *rq, abx_client **host)
{
    *host = NULL;
    if (serve_metrics_bearer_ok(s->metrics, c))
        return *host = s->root;
    if (s->peers) {
        *host = rq->who == s->root ? s->root : NULL;
        return rq->who;
    }
    rq->key = key_of(s, c);
    if (rq->key == &s->admin)
        *host = s->root;
    return rq->key ? rq->key->client : NULL;
}

#define OBSERVER_REFUSED "missing or invalid X-API-Key or metrics token (Authorization: Bearer)"

static enum MHD_Result scrape(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    abx_client *host = NULL, *who = observer_of(s, c, rq, &host);
    if (!who)
        return send_error(c, 401, OBSERVER_REFUSED);
    return serve_metrics_answer(s->metrics, c, who, host) == 0 ? MHD_YES : MHD_NO;
}

static enum MHD_Result events(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    abx_client *host = NULL, *who = observer_of(s, c, rq, &host);
    if (!who)
        return send_error(c, 401, OBSERVER_REFUSED);
    return serve_events_answer(c, who, &s->stopping) == 0 ? MHD_YES : MHD_NO;
}

/* /console/...: its pages (GET), a login (POST /console/api/session,
 * answered when its body is read: rq->login) and a logout (DELETE). */
static enum MHD_Result console_route(serve_ctx *s, struct MHD_Connection *c, const char *url,
                                     const char *method, serve_req *rq)
{
    rq->kind = REQ_ANSWERED;
    if (!s->console)
        return send_error(c, 404, "the console is off (abx serve --console)");
    bool api = strcmp(url, "/console/api/session") == 0;
    if (api && strcmp(method, "POST") == 0) {
        rq->kind = REQ_CONTROL;
        rq->login = true;
        return MHD_YES;
    }
    if (api && strcmp(method, "DELETE") == 0)
        return serve_console_logout(s->console, c) ? send_text(c, 204, NULL, NULL, NULL)
                                                   : send_error(c, 401, "no such session");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return send_error(c, 405, "the console's pages are read with GET");
    return serve_console_asset(c, url) == 0 ? MHD_YES : MHD_NO;
}

/* {"key": K}: K an API key (that key's session) or the metrics token (the
 * administrator's): 201 {session, expires_in, scope}; anything else 401. */
static enum MHD_Result console_login(serve_ctx *s, struct MHD_Connection *c, serve_req *rq)
{
    json_t *body = rq->body.len ? json_loadb(rq->body.data, rq->body.len, 0, NULL) : NULL;
    const char *key = json_string_value(json_object_get(body, "key"));
    serve_key *who = NULL;
    if (key && strlen(key) <= 1024) {
        char t[34];
        abx_tenant_from_secret(key, t);
        for (size_t i = 0; i < s->nkeys; i++)
            if (CRYPTO_memcmp(t, s->keys[i].tenant, sizeof t) == 0)
                who = &s->keys[i];
        if (serve_metrics_token_is(s->metrics, key))
            who = &s->admin;
        explicit_bzero(t, sizeof t);
    }
    if (rq->body.data)
        explicit_bzero(rq->body.data, rq->body.len);
    json_decref(body);
    if (!who || !who->client)
        return send_error(c, 401, "not an API key of this server (nor its metrics token)");
    char token[65];
    if (serve_console_login(s->console, who, token) < 0)
        return send_error(c, 503, "too many console sessions: try again later");
    json_t *answer = json_pack("{s:s, s:i, s:s, s:s}", "session", token, "expires_in",
                               (int)serve_console_idle_s(s->console), "scope",
                               who == &s->admin ? "admin" : "tenant", "tenant", who->tenant);
    explicit_bzero(token, sizeof token);
    return send_json(c, 201, answer, NULL);
}

static enum MHD_Result begin(serve_ctx *s, struct MHD_Connection *c, const char *url, const char *method,
                             serve_req *rq)
{
    if (url[0] != '/') { /* absolute-form, authority-form, "@host...": never a relay */
        rq->kind = REQ_ANSWERED;
        return send_error(c, 400, "the request target must be a path (origin-form)");
    }
    if (dot_segment(url)) { /* "/contexts/../abx/kill" would reach what the port is not for */
        rq->kind = REQ_ANSWERED;
        return send_error(c, 400, "the request target must not hold . or .. segments");
    }
    if (s->peers) { /* the service: the kernel names the caller */
        bool admin = false,
             all = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Abx-All-Tenants") != NULL;
        unsigned status = 403;
        char why[500];
        rq->key = peer_of(s, c, &admin, &status, why, sizeof why);
        if (rq->key && all && !admin)
            snprintf(why, sizeof why,
                     "%s: every user's sandboxes are root's to see and those of the groups in [service] "
                     "admin_groups",
                     abx_err_name(ABX_ENOTALLOWED));
        if (!rq->key || (all && !admin)) {
            rq->kind = REQ_ANSWERED;
            return send_error(c, status, why);
        }
        rq->who = all ? s->root : rq->key->client;
        if (strcmp(method, "POST") == 0 &&
            (strcmp(url, "/abx/templates/build") == 0 || strcmp(url, "/abx/templates/import") == 0))
            return begin_upload(c, rq, strcmp(url, "/abx/templates/build") == 0);
        if (strcmp(method, "GET") == 0 && strcmp(url, "/abx/tunnel") == 0) {
            rq->kind = REQ_ANSWERED;
            return begin_tunnel(s, c, rq);
        }
    }
    char id[64];
    unsigned port = 0;
    target_kind t = data_plane_target(s, c, id, &port);
    if (t == TARGET_BAD) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 400,
                          "E2b-Sandbox-Id and E2b-Sandbox-Port (or a Host PORT-ID.DOMAIN): expected a "
                          "sandbox id and a port from 1 to 65535");
    }
    bool signed_url = t == TARGET_NONE && strcmp(url, "/files") == 0 &&
                      MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature");
    if (signed_url && signed_target(s, c, url, method, id)) /* names no sandbox: the signature does */
        return begin_data(s, c, url, method, rq, id, ABX_PORT_ENVD);
    if (signed_url) { /* no live sandbox's token signs it, for this path and method, unexpired */
        rq->kind = REQ_REFUSED;
        return MHD_YES;
    }
    if (t == TARGET_SANDBOX)
        return begin_data(s, c, url, method, rq, id, port);
    if (strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0) {
        rq->kind = REQ_ANSWERED;
        return send_text(c, 204, NULL, NULL, NULL);
    }
    if (strcmp(url, "/console") == 0 || strncmp(url, "/console/", 9) == 0) {
        enum MHD_Result r = console_route(s, c, url, method, rq);
        if (r != MHD_YES || rq->kind != REQ_CONTROL)
            return r;
        return MHD_YES; /* the login: answered once its body is read */
    }
    if (strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0) {
        rq->kind = REQ_ANSWERED;
        return scrape(s, c, rq);
    }
    if (strcmp(url, "/events") == 0 && strcmp(method, "GET") == 0) {
        rq->kind = REQ_ANSWERED;
        return events(s, c, rq);
    }
    if (!s->peers && !(rq->key = key_of(s, c))) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 401, "missing or invalid X-API-Key");
    }
    if (!s->peers)
        rq->who = rq->key->client;
    rq->kind = REQ_CONTROL;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    serve_ctx *s = cls;
    serve_req *rq = *con_cls;
    if (!rq) {
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        rq->upload_fd = -1;
        clock_gettime(CLOCK_MONOTONIC, &rq->started);
        abx__buf_init(&rq->body, MAX_CONTROL_BODY);
        *con_cls = rq;
        return begin(s, c, url, method, rq);
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (rq->kind == REQ_DATA)
            return serve_proxy_upload(rq->proxy, upload, n) ? MHD_YES : MHD_NO;
        if (rq->kind == REQ_ENVD)
            return serve_envd_upload(rq->envd, upload, n) ? MHD_YES : MHD_NO;
        if (rq->kind == REQ_CONTROL && abx__buf_append(&rq->body, upload, n) < 0)
            rq->too_big = true;
        if (rq->kind == REQ_UPLOAD && !rq->too_big) {
            rq->upload_len += n;
            rq->too_big = rq->upload_len > rq->upload_max || abx__write_all(rq->upload_fd, upload, n) < 0;
        }
        return MHD_YES; /* an answered request's body: read and dropped */
    }
    if (rq->kind == REQ_DATA) {
        rq->kind = REQ_ANSWERED;
        return serve_proxy_finish(rq->proxy, c) == 0 ? MHD_YES : MHD_NO;
    }
    if (rq->kind == REQ_ENVD) {
        rq->kind = REQ_ANSWERED;
        return serve_envd_finish(rq->envd, c) == 0 ? MHD_YES : MHD_NO;
    }
    if (rq->kind == REQ_UPLOAD) {
        rq->kind = REQ_ANSWERED;
        return rq->too_big
                   ? send_error(c, 413, "E8018: the upload is over the service's bound, or could not be kept")
                   : template_upload(c, rq, url);
    }
    if (rq->kind == REQ_REFUSED) {
        rq->kind = REQ_ANSWERED;
        return send_error(c, 401, "invalid signature: not this file's and operation's, or expired");
    }
    if (rq->kind != REQ_CONTROL)
        return MHD_YES;
    rq->kind = REQ_ANSWERED;
    if (rq->too_big)
        return send_error(c, 413, "request body over 1 MiB");
    if (rq->login)
        return console_login(s, c, rq);
    return control(s, c, rq, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode t)
{
    (void)c;
    (void)t;
    serve_ctx *s = cls;
    serve_req *rq = *con_cls;
    if (!rq)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    serve_metrics_request(s->metrics, rq->data_plane,
                          (double)(now.tv_sec - rq->started.tv_sec) +
                              (now.tv_nsec - rq->started.tv_nsec) / 1e9,
                          rq->error_code, rq->event);
    if (rq->proxy || rq->envd) {
        serve_proxy_release(rq->proxy);
        serve_envd_release(rq->envd);
        inflight_put(s, rq->key);
    }
    if (rq->upload_fd >= 0)
        close(rq->upload_fd);
    abx__buf_free(&rq->body);
    free(rq);
    *con_cls = NULL;
}

/* ---- start and stop ------------------------------------------------------------------------- */

static void ctx_free(serve_ctx *s)
{
    for (size_t i = 0; i < s->nkeys; i++)
        abx_client_free(s->keys[i].client);
    for (size_t i = 0; s->peers && i < s->npeers; i++)
        if (s->peers[i].client != s->root)
            abx_client_free(s->peers[i].client);
    free(s->peers);
    serve_metrics_free(s->metrics);
    serve_console_free(s->console);
    abx_client_free(s->data);
    abx_client_free(s->root);
    pthread_mutex_destroy(&s->mu);
    explicit_bzero(s, sizeof *s);
    free(s);
}

/* The provider's client, one per key's tenant, and the data plane's (all
 * keys' tenants). */
static int clients_new(serve_ctx *s, const serve_config *cfg, abx_error **err)
{
    abx_client_options co = {.cli_provider = cfg->provider};
    int rc = abx_client_new(&co, &s->root, err);
    if (rc == 0 && cfg->warm && strcmp(abx_client_provider(s->root), "local") == 0)
        rc = abx_client_keep_warm(s->root, cfg->warm, err);
    const char *tenants[MAX_KEYS + 1] = {NULL};
    for (size_t i = 0; rc == 0 && i < s->nkeys; i++) {
        rc = abx_client_for_tenant(s->root, s->keys[i].tenant, &s->keys[i].client, err);
        tenants[i] = s->keys[i].tenant;
    }
    if (rc == 0 && s->nkeys)
        rc = abx_client_for_tenants(s->root, tenants, &s->data, err);
    if (rc == 0 && cfg->metrics_token && *cfg->metrics_token) {
        s->admin.client = s->root; /* borrowed */
        s->admin.admin = true;
    }
    return rc;
}

int serve_run(const serve_config *cfg, abx_error **err)
{
    serve_ctx *s = calloc(1, sizeof *s);
    if (!s)
        return abx__error_set(err, ABX_ENOMEM, "serve");
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->domain, sizeof s->domain, "%s", cfg->domain && *cfg->domain ? cfg->domain : "localhost");
    atomic_store(&s->answer_domain, s->domain);
    s->default_timeout_s = cfg->default_timeout_s ? cfg->default_timeout_s : DEFAULT_CREATE_TIMEOUT_S;
    for (size_t i = 0; cfg->api_keys && cfg->api_keys[i] && s->nkeys < MAX_KEYS; i++)
        abx_tenant_from_secret(cfg->api_keys[i], s->keys[s->nkeys++].tenant);
    unsigned idle = 0; /* ABX_SERVE_CONSOLE_IDLE: a console session's idle seconds (tests make it short) */
    const char *idle_text = getenv("ABX_SERVE_CONSOLE_IDLE");
    if (idle_text && abx__parse_uint(idle_text, 1, 86400, &idle) < 0)
        idle = 0;
    if (cfg->console && !cfg->socket_path && !(s->console = serve_console_new(idle))) {
        ctx_free(s);
        return abx__error_set(err, ABX_ENOMEM, "serve");
    }
    if (!(s->metrics = serve_metrics_new(cfg->metrics_token))) {
        ctx_free(s);
        return abx__error_set(err, ABX_ENOMEM, "serve");
    }
    int sigfd = abx__stop_signals_block();
    abx_http_service svc = {.listen = cfg->listen ? cfg->listen : "127.0.0.1:3000",
                            .handler = on_request,
                            .handler_cls = s,
                            .completed = on_completed,
                            .env_prefix = "ABX_SERVE",
                            .idle_s = 600,
                            .header_deadline_s = 10,
                            .per_client = 256,
                            .max_connections = 2048};
    abx_http_listener *listener = NULL;
    bool activated = false; /* the socket is systemd's: left in place at the end */
    int rc = sigfd < 0 ? abx__error_errno(err, ABX_ESYS, errno, "signalfd") : clients_new(s, cfg, err);
    if (rc == 0 && cfg->socket_path) { /* the service: the kernel names each caller */
        s->peers = calloc(MAX_PEERS, sizeof *s->peers);
        rc = s->peers ? serve_socket_open(cfg->socket_path, &svc.listen_fd, &activated, err)
                      : abx__error_set(err, ABX_ENOMEM, "serve");
        svc.listen = NULL;
        svc.per_user = true; /* ABX_SERVE_CLIENT_CONNECTIONS per host user */
    }
    if (rc == 0)
        rc = abx__http_start(&svc, &listener, err);
    if (rc == 0 && !s->peers && !abx__http_loopback(listener) && s->nkeys == 0)
        rc = abx__error_set(err, ABX_EAUTH,
                            "refusing to serve a non-loopback address without API keys "
                            "(--api-key-file or ABX_SERVE_API_KEYS)");
    if (rc < 0) {
        abx__http_stop(listener);
        if (sigfd >= 0)
            close(sigfd);
        ctx_free(s);
        return rc;
    }
    int port = abx__http_port(listener);
    if (!s->peers && port != 80 && port != 443) {
        snprintf(s->domain_port, sizeof s->domain_port, "%s:%d", s->domain, port);
        atomic_store(&s->answer_domain, s->domain_port);
    }
    if (s->peers)
        fprintf(stderr, "abx serve: the abx service listening on %s (provider %s; each host user a tenant)\n",
                cfg->socket_path, abx_client_provider(s->root));
    else if (s->nkeys == 0)
        fprintf(stderr,
                "abx serve: warning: no API keys (--api-key-file, ABX_SERVE_API_KEYS): every request that "
                "needs one is refused\n");
    if (!s->peers)
        fprintf(
            stderr, "abx serve: listening on http://%s:%d (provider %s; sandbox domain %s; %zu API key%s)\n",
            abx__http_loopback(listener) ? "127.0.0.1" : abx__http_host(listener), abx__http_port(listener),
            abx_client_provider(s->root), s->domain, s->nkeys, s->nkeys == 1 ? "" : "s");
    if (s->console)
        fprintf(stderr, "abx serve: the console at http://%s:%d/console/\n",
                abx__http_loopback(listener) ? "127.0.0.1" : abx__http_host(listener),
                abx__http_port(listener));
    abx__stop_signal_wait(sigfd);
    fprintf(stderr, "abx serve: stopping\n");
    atomic_store(&s->stopping, true);
    abx__http_stop(listener);
    if (s->peers && !activated)
        unlink(cfg->socket_path); /* one made here: clients now find no service (systemd keeps its own) */
    ctx_free(s);
    return 0;
}
