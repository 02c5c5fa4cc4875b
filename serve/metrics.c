/* metrics.c: GET /metrics of abx serve and the service, in Prometheus'
 * text exposition format (docs/metrics.md lists every series).
 *
 * Owns: the server's own counters (creates, kills, errors by abx code,
 * request latencies as histograms: atomics, added to when a request
 * completes, never a lock on the hot path), the metrics token (kept only
 * as its hash, compared in constant time), and the series written for a
 * scrape: every sandbox the caller's client reaches (abx_list, then each
 * one's abx_sandbox_get_stats, read by its shim from its cgroup, its
 * writable layer and the packet filter's counters), and, for the
 * administrator's client only, the host's (abx_host_pools_get and the
 * counters above). Who the caller is, serve.c decides; what a client
 * reaches, libabx does.
 */
#include "serve.h"
#include "buf.h"
#include "netlibs.h"
#include "prom.h"

#include <openssl/crypto.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SCRAPE_MAX (64u << 20) /* 8192 sandboxes' series and then some */
#define CODES 64               /* E8000..E8063 */
#define CODE_BASE 8000

static const double LATENCY_BUCKETS[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,  0.5,    1,     2.5,  5,     10};
#define NBUCKETS (sizeof LATENCY_BUCKETS / sizeof LATENCY_BUCKETS[0])

typedef struct latency {
    atomic_ullong count, sum_ns;
    atomic_ullong in_bucket[NBUCKETS]; /* at most that bound and over the one before (summed when written) */
} latency;

struct serve_metrics {
    bool has_token;
    char token_hash[34]; /* abx_tenant_from_secret of the token */
    atomic_ullong creates, kills;
    atomic_ullong errors[CODES];
    latency planes[2]; /* control, data */
};

serve_metrics *serve_metrics_new(const char *token)
{
    serve_metrics *m = calloc(1, sizeof *m);
    if (m && token && *token) {
        m->has_token = true;
        abx_tenant_from_secret(token, m->token_hash);
    }
    return m;
}

void serve_metrics_free(serve_metrics *m)
{
    if (m)
        explicit_bzero(m->token_hash, sizeof m->token_hash);
    free(m);
}

bool serve_metrics_token_is(const serve_metrics *m, const char *text)
{
    if (!m || !m->has_token || !text || strlen(text) > 1024)
        return false;
    char h[34];
    abx_tenant_from_secret(text, h);
    return CRYPTO_memcmp(h, m->token_hash, sizeof h) == 0;
}

bool serve_metrics_bearer_ok(const serve_metrics *m, struct MHD_Connection *c)
{
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!m || !m->has_token || !auth || strncasecmp(auth, "Bearer ", 7) != 0 || strlen(auth) > 1024)
        return false;
    char h[34];
    abx_tenant_from_secret(auth + 7, h);
    return CRYPTO_memcmp(h, m->token_hash, sizeof h) == 0;
}

void serve_metrics_request(serve_metrics *m, bool data_plane, double seconds, int error_code,
                           serve_event event)
{
    if (!m)
        return;
    latency *l = &m->planes[data_plane ? 1 : 0];
    atomic_fetch_add(&l->count, 1);
    atomic_fetch_add(&l->sum_ns, (unsigned long long)(seconds * 1e9));
    for (size_t i = 0; i < NBUCKETS; i++)
        if (seconds <= LATENCY_BUCKETS[i]) {
            atomic_fetch_add(&l->in_bucket[i], 1);
            break;
        }
    int code = error_code < 0 ? -error_code : error_code;
    if (code > CODE_BASE && code < CODE_BASE + CODES)
        atomic_fetch_add(&m->errors[code - CODE_BASE], 1);
    if (event == SERVE_EVENT_CREATE)
        atomic_fetch_add(&m->creates, 1);
    else if (event == SERVE_EVENT_KILL)
        atomic_fetch_add(&m->kills, 1);
}

/* ---- the series --------------------------------------------------------------------- */

typedef struct family {
    const char *name, *type, *help;
} family;

/* The per-sandbox families, in the order sandbox_series writes them. */
enum {
    F_STATE,
    F_CPU,
    F_MEM,
    F_MEM_PEAK,
    F_MEM_LIMIT,
    F_PIDS,
    F_PIDS_LIMIT,
    F_OOM,
    F_DISK,
    F_DISK_LIMIT,
    F_TX_BYTES,
    F_TX_PACKETS,
    F_RX_BYTES,
    F_RX_PACKETS,
    F_REFUSED,
    F_SANDBOX_COUNT
};

static const family SANDBOX_FAMILIES[F_SANDBOX_COUNT] = {
    {"abx_sandbox_state", "gauge", "1 for the sandbox's state (running, paused)"},
    {"abx_sandbox_cpu_seconds_total", "counter", "CPU time of the sandbox's processes"},
    {"abx_sandbox_memory_bytes", "gauge", "memory the sandbox's cgroup uses now"},
    {"abx_sandbox_memory_peak_bytes", "gauge", "the most memory the sandbox's cgroup has used"},
    {"abx_sandbox_memory_limit_bytes", "gauge", "the sandbox's memory limit"},
    {"abx_sandbox_pids", "gauge", "processes and threads in the sandbox"},
    {"abx_sandbox_pids_limit", "gauge", "the sandbox's limit on processes and threads"},
    {"abx_sandbox_oom_kills_total", "counter", "processes its memory limit's OOM killer killed"},
    {"abx_sandbox_disk_used_bytes", "gauge", "bytes used in the sandbox's writable layer"},
    {"abx_sandbox_disk_limit_bytes", "gauge", "the sandbox's writable layer's size"},
    {"abx_sandbox_network_transmit_bytes_total", "counter", "bytes the sandbox sent"},
    {"abx_sandbox_network_transmit_packets_total", "counter", "packets the sandbox sent"},
    {"abx_sandbox_network_receive_bytes_total", "counter", "bytes the sandbox received"},
    {"abx_sandbox_network_receive_packets_total", "counter", "packets the sandbox received"},
    {"abx_sandbox_egress_refused_packets_total", "counter",
     "packets the sandbox's network policy refused (out to a denied address, in to a closed port)"},
};

/* One sandbox's samples of family f, appended to out[f]. */
typedef struct scrape {
    abx_buf family[F_SANDBOX_COUNT];
    int rc;
} scrape;

static void put_u(scrape *sc, int f, const char *const *labels, unsigned long long v)
{
    if (sc->rc == 0)
        sc->rc = abx__prom_sample_u(&sc->family[f], SANDBOX_FAMILIES[f].name, labels, v);
}

static void put_f(scrape *sc, int f, const char *const *labels, double v)
{
    if (sc->rc == 0)
        sc->rc = abx__prom_sample_f(&sc->family[f], SANDBOX_FAMILIES[f].name, labels, v);
}

/* The series of one listed sandbox; a sandbox that went away meanwhile, or
 * whose supervisor does not answer, has its state and nothing else. */
static void sandbox_series(scrape *sc, abx_client *who, const abx_sandbox_info *in)
{
    abx_sandbox *sb = NULL;
    abx_sandbox_stats st;
    bool have = false;
    char tenant[ABX_TENANT_MAX + 1] = "";
    if (abx_sandbox_connect(who, in->sandbox_id, &sb, NULL) == 0) {
        snprintf(tenant, sizeof tenant, "%s", abx_sandbox_tenant(sb) ? abx_sandbox_tenant(sb) : "");
        have = abx_sandbox_get_stats(sb, &st, NULL) == 0;
        abx_sandbox_free(sb);
    }
    const char *id = strchr(in->sandbox_id, ':') ? strchr(in->sandbox_id, ':') + 1 : in->sandbox_id;
    const char *labels[] = {"sandbox_id", id, "template", in->template_id, "tenant", tenant, NULL};
    const char *state_labels[] = {"sandbox_id", id,         "template", in->template_id, "tenant", tenant,
                                  "state",      in->status, NULL};
    put_u(sc, F_STATE, state_labels, 1);
    if (!have)
        return;
    put_f(sc, F_CPU, labels, (double)st.cpu_usec / 1e6);
    put_u(sc, F_MEM, labels, st.mem_bytes);
    put_u(sc, F_MEM_PEAK, labels, st.mem_peak_bytes);
    if (st.mem_limit_bytes)
        put_u(sc, F_MEM_LIMIT, labels, st.mem_limit_bytes);
    put_u(sc, F_PIDS, labels, st.pids);
    if (st.pids_limit)
        put_u(sc, F_PIDS_LIMIT, labels, st.pids_limit);
    put_u(sc, F_OOM, labels, st.oom_kills);
    put_u(sc, F_DISK, labels, st.disk_used_bytes);
    if (st.disk_limit_bytes)
        put_u(sc, F_DISK_LIMIT, labels, st.disk_limit_bytes);
    if (!st.has_network)
        return;
    put_u(sc, F_TX_BYTES, labels, st.net_out_bytes);
    put_u(sc, F_TX_PACKETS, labels, st.net_out_packets);
    put_u(sc, F_RX_BYTES, labels, st.net_in_bytes);
    put_u(sc, F_RX_PACKETS, labels, st.net_in_packets);
    put_u(sc, F_REFUSED, labels, st.net_refused_packets);
}

/* Every sandbox who reaches, a page of abx_list at a time, each family's
 * samples together (the format asks a family's lines to be one group). */
static int sandboxes_write(abx_client *who, abx_buf *out)
{
    scrape sc = {.rc = 0};
    for (int f = 0; f < F_SANDBOX_COUNT; f++)
        abx__buf_init(&sc.family[f], SCRAPE_MAX);
    for (unsigned offset = 0; sc.rc == 0; offset += ABX_LIST_LIMIT_MAX) {
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        if (abx_list(who, NULL, ABX_LIST_LIMIT_MAX, offset, &items, &n, NULL) < 0)
            break;
        for (size_t i = 0; i < n; i++)
            sandbox_series(&sc, who, &items[i]);
        abx_sandbox_info_list_free(items, n);
        if (n < ABX_LIST_LIMIT_MAX)
            break;
    }
    for (int f = 0; f < F_SANDBOX_COUNT; f++) {
        if (sc.rc == 0 && sc.family[f].len) {
            sc.rc = abx__prom_family(out, SANDBOX_FAMILIES[f].name, SANDBOX_FAMILIES[f].type,
                                     SANDBOX_FAMILIES[f].help);
            if (sc.rc == 0)
                sc.rc = abx__buf_append(out, sc.family[f].data, sc.family[f].len);
        }
        abx__buf_free(&sc.family[f]);
    }
    return sc.rc;
}

/* A family of one unlabelled sample. */
static int one_u(abx_buf *out, const char *name, const char *type, const char *help, unsigned long long v)
{
    int rc = abx__prom_family(out, name, type, help);
    return rc == 0 ? abx__prom_sample_u(out, name, NULL, v) : rc;
}

static int pools_write(abx_client *host, abx_buf *out)
{
    abx_host_pools p;
    if (abx_host_pools_get(host, &p, NULL) < 0)
        return 0; /* a provider without a runtime here: no pools to show */
    struct {
        const char *name, *help;
        unsigned v;
    } g[] = {
        {"abx_pool_uid_ranges_used", "host uid ranges held by sandboxes", p.uid_ranges_used},
        {"abx_pool_uid_ranges_free", "host uid ranges free for new sandboxes",
         p.uid_ranges_total -
             (p.uid_ranges_used < p.uid_ranges_total ? p.uid_ranges_used : p.uid_ranges_total)},
        {"abx_pool_net_addresses_used", "sandbox network addresses in use", p.net_slots_used},
        {"abx_pool_net_addresses_free", "sandbox network addresses free",
         p.net_slots_total - (p.net_slots_used < p.net_slots_total ? p.net_slots_used : p.net_slots_total)},
        {"abx_pool_warm_ready", "sandboxes started ahead and ready to be claimed", p.warm_ready},
        {"abx_pool_warm_target", "sandboxes the warm pool keeps started ahead", p.warm_target},
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof g / sizeof g[0]; i++)
        rc = one_u(out, g[i].name, "gauge", g[i].help, g[i].v);
    return rc;
}

static int latency_write(const serve_metrics *m, abx_buf *out)
{
    const char *name = "abx_http_request_duration_seconds";
    int rc = abx__prom_family(out, name, "histogram", "time from a request's headers to its answer's end");
    for (int plane = 0; rc == 0 && plane < 2; plane++) {
        const latency *l = &m->planes[plane];
        const char *pl = plane ? "data" : "control";
        unsigned long long cumulative = 0;
        char le[32];
        for (size_t i = 0; rc == 0 && i < NBUCKETS; i++) {
            cumulative += atomic_load(&l->in_bucket[i]);
            snprintf(le, sizeof le, "%g", LATENCY_BUCKETS[i]);
            const char *labels[] = {"plane", pl, "le", le, NULL};
            rc = abx__prom_sample_u(out, "abx_http_request_duration_seconds_bucket", labels, cumulative);
        }
        unsigned long long count = atomic_load(&l->count);
        const char *inf[] = {"plane", pl, "le", "+Inf", NULL}, *plain[] = {"plane", pl, NULL};
        if (rc == 0)
            rc = abx__prom_sample_u(out, "abx_http_request_duration_seconds_bucket", inf, count);
        if (rc == 0)
            rc = abx__prom_sample_f(out, "abx_http_request_duration_seconds_sum", plain,
                                    (double)atomic_load(&l->sum_ns) / 1e9);
        if (rc == 0)
            rc = abx__prom_sample_u(out, "abx_http_request_duration_seconds_count", plain, count);
    }
    return rc;
}

static int host_write(const serve_metrics *m, abx_client *host, abx_buf *out)
{
    int rc = pools_write(host, out);
    if (rc == 0)
        rc = one_u(out, "abx_creates_total", "counter", "sandboxes this server created",
                   atomic_load(&m->creates));
    if (rc == 0)
        rc = one_u(out, "abx_kills_total", "counter", "sandboxes this server killed", atomic_load(&m->kills));
    if (rc == 0)
        rc = abx__prom_family(out, "abx_errors_total", "counter",
                              "requests answered with an abx error, by code");
    for (int i = 1; rc == 0 && i < CODES; i++) {
        unsigned long long n = atomic_load(&m->errors[i]);
        const char *labels[] = {"code", abx_err_name(CODE_BASE + i), NULL};
        if (n)
            rc = abx__prom_sample_u(out, "abx_errors_total", labels, n);
    }
    return rc == 0 ? latency_write(m, out) : rc;
}

int serve_metrics_answer(const serve_metrics *m, struct MHD_Connection *c, abx_client *who, abx_client *host)
{
    abx_buf out;
    abx__buf_init(&out, SCRAPE_MAX);
    int rc = sandboxes_write(who, &out);
    if (rc == 0 && host)
        rc = host_write(m, host, &out);
    if (rc < 0) {
        abx__buf_free(&out);
        char why[120];
        snprintf(why, sizeof why, "%s: the metrics are over the scrape's bound", abx_err_name(ABX_ETOOBIG));
        return serve_send_error(c, 500, why);
    }
    size_t len = 0;
    char *text = abx__buf_take(&out, &len);
    struct MHD_Response *r = text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(text);
        return -1;
    }
    MHD_add_response_header(r, "Content-Type", ABX_PROM_CONTENT_TYPE);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}
