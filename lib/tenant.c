/* tenant.c: tenants and their quotas, in one place for every front end
 * (abx.h "tenants", tenant.h).
 *
 * Owns: what a tenant string is and how front ends derive one (a secret's
 * hash, a host uid), tenant clients (a view of a root client acting for
 * one tenant or a set), the one check of whether a client may reach a
 * sandbox and the one answer when it may not, the keys remote providers
 * keep tenant and notes under in metadata, and the per-tenant quotas:
 * live sandboxes ([limits] sandboxes_per_tenant) and a share of each
 * host-wide pool ([limits] tenant_pool_share), with the creates in flight
 * in this process counted in the root client's book.
 *
 * Does not own where a provider records the tenant (the local provider's
 * state directory, a remote one's metadata): providers do, through
 * abx__remote_meta_put/take or their own files.
 */
#include "tenant.h"
#include "config.h"
#include "error_internal.h"
#include "netpolicy.h"
#include "parse.h"

#include <openssl/crypto.h>
#include "evp_api.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TENANT_SET 1024

/* ---- what a tenant is ---------------------------------------------------------------- */

bool abx_tenant_valid(const char *t)
{
    if (!t || !*t || strlen(t) > ABX_TENANT_MAX)
        return false;
    for (const char *p = t; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '.' || *p == '_' || *p == ':' || *p == '=' || *p == '-';
        if (!ok)
            return false;
    }
    return true;
}

void abx_tenant_from_secret(const char *secret, char out[34])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = 'k';
    if (!secret || EVP_Digest(secret, strlen(secret), md, &n, EVP_sha256(), NULL) != 1 || n < 16) {
        /* libcrypto missing or failing: no tenant can be told from another, and
         * one shared by every key would be worse than stopping */
        fprintf(stderr, "abx: E8006: libcrypto's SHA-256 is not available (apt-get install libssl3); "
                        "tenants cannot be told apart without it\n");
        abort();
    }
    for (unsigned i = 0; i < 16; i++)
        snprintf(out + 1 + 2 * i, 3, "%02x", md[i]);
    OPENSSL_cleanse(md, sizeof md);
}

void abx_tenant_from_uid(unsigned uid, char out[16])
{
    snprintf(out, 16, "uid:%u", uid);
}

/* ---- tenant clients ------------------------------------------------------------------- */

abx_client *abx__client_root(abx_client *c)
{
    return c->root ? c->root : c;
}

/* A tenant's client of c's root, with no tenant yet. */
static int view_new(abx_client *c, abx_client **out, abx_error **err)
{
    abx_client *root = abx__client_root(c);
    abx_client *v = calloc(1, sizeof *v);
    if (!v)
        return abx__error_set(err, ABX_ENOMEM, "client");
    memcpy(v->provider, root->provider, sizeof v->provider);
    v->source = root->source;
    v->ops = root->ops;
    v->state = root->state;
    atomic_init(&v->refs, 1);
    v->root = abx__client_ref(root);
    *out = v;
    return 0;
}

int abx_client_for_tenant(abx_client *c, const char *tenant, abx_client **out, abx_error **err)
{
    *out = NULL;
    if (!c || !abx_tenant_valid(tenant))
        return abx__error_set(err, ABX_EINVAL, "tenant: 1-%u bytes of [A-Za-z0-9._:=-]", ABX_TENANT_MAX);
    int rc = view_new(c, out, err);
    if (rc == 0)
        snprintf((*out)->tenant, sizeof(*out)->tenant, "%s", tenant);
    return rc;
}

int abx_client_for_tenants(abx_client *c, const char *const *tenants, abx_client **out, abx_error **err)
{
    *out = NULL;
    size_t n = 0;
    while (tenants && tenants[n] && n <= MAX_TENANT_SET)
        if (!abx_tenant_valid(tenants[n++]))
            return abx__error_set(err, ABX_EINVAL, "tenants: each 1-%u bytes of [A-Za-z0-9._:=-]",
                                  ABX_TENANT_MAX);
    if (!c || n == 0 || n > MAX_TENANT_SET)
        return abx__error_set(err, ABX_EINVAL, "tenants: from 1 to %d of them", MAX_TENANT_SET);
    char **set = calloc(n + 1, sizeof *set);
    for (size_t i = 0; set && i < n; i++)
        if (!(set[i] = strdup(tenants[i])))
            break;
    int rc = set && set[n - 1] ? view_new(c, out, err) : abx__error_set(err, ABX_ENOMEM, "tenants");
    if (rc < 0) {
        for (size_t i = 0; set && i < n; i++)
            free(set[i]);
        free(set);
        return rc;
    }
    (*out)->tenant_set = set;
    return 0;
}

const char *abx_client_tenant(const abx_client *c)
{
    return c && c->tenant[0] ? c->tenant : NULL;
}

/* ---- the check ------------------------------------------------------------------------ */

/* Equal strings, in time that depends on the lengths only. */
static bool same(const char *a, const char *b)
{
    size_t n = strlen(a);
    return n == strlen(b) && CRYPTO_memcmp(a, b, n) == 0;
}

bool abx__tenant_may_see(const abx_client *c, const char *recorded)
{
    const char *r = recorded ? recorded : "";
    if (c->tenant_set) {
        bool found = false;
        for (size_t i = 0; c->tenant_set[i]; i++)
            found |= *r && same(c->tenant_set[i], r);
        return found;
    }
    if (!c->tenant[0])
        return true; /* the administrator */
    return *r && same(c->tenant, r);
}

int abx__tenant_not_found(abx_error **err)
{
    return abx__error_set(err, ABX_ENOTFOUND, "no such sandbox (it may have ended, or never existed)");
}

int abx__tenant_for_create(const abx_client *c, const char **tenant, abx_error **err)
{
    *tenant = c->tenant;
    if (c->tenant_set)
        return abx__error_set(err, ABX_EINVAL, "a client of several tenants creates no sandboxes");
    return 0;
}

/* ---- what host users may ask for ----------------------------------------------------------- */

static bool host_user(const char *tenant)
{
    return tenant && strncmp(tenant, "uid:", 4) == 0;
}

/* The operator's [service] key into out ("" when unset). */
static void service_key(const char *name, char *out, size_t len)
{
    out[0] = '\0';
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    const char *v = kvs && abx__config_load(kvs, NULL) == 0 ? abx__kvs_get(kvs, name) : NULL;
    snprintf(out, len, "%s", v ? v : "");
    free(kvs);
}

/* Whether word is one of the comma-separated list's entries. */
static bool listed(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        size_t t = n;
        while (t && p[t - 1] == ' ')
            t--;
        if (t == wl && strncmp(p, word, wl) == 0)
            return true;
        p += n;
    }
    return false;
}

int abx__tenant_may_network(const char *tenant, const char *mode, abx_error **err)
{
    char modes[256];
    if (!host_user(tenant))
        return 0;
    service_key("service.network_modes", modes, sizeof modes);
    if (!modes[0] || listed(modes, mode))
        return 0;
    return abx__error_set(err, ABX_ENOTALLOWED,
                          "--network %s: the operator's [service] network_modes allows only %.200s", mode,
                          modes);
}

int abx__tenant_may_build(const char *tenant, abx_error **err)
{
    char v[16];
    if (!host_user(tenant))
        return 0;
    service_key("service.template_builds", v, sizeof v);
    if (strcmp(v, "false") != 0)
        return 0;
    return abx__error_set(err, ABX_ENOTALLOWED,
                          "templates: the operator's [service] template_builds is false: users of the "
                          "service use the templates it has");
}

/* ---- remote providers' metadata ---------------------------------------------------------- */

int abx__remote_meta_put(const abx_client *c, const abx_create_options *o, json_t *metadata, abx_error **err)
{
    if (json_object_get(metadata, ABX_TENANT_META_KEY) || json_object_get(metadata, ABX_NOTES_META_KEY))
        return abx__error_set(err, ABX_EINVAL, "metadata: the keys %s and %s are abx's own",
                              ABX_TENANT_META_KEY, ABX_NOTES_META_KEY);
    if (c->tenant[0])
        json_object_set_new(metadata, ABX_TENANT_META_KEY, json_string(c->tenant));
    if (o && o->notes_json && *o->notes_json)
        json_object_set_new(metadata, ABX_NOTES_META_KEY, json_string(o->notes_json));
    return 0;
}

void abx__remote_meta_take(json_t *metadata, char tenant[ABX_TENANT_MAX + 1], char **notes)
{
    const char *t = json_string_value(json_object_get(metadata, ABX_TENANT_META_KEY));
    snprintf(tenant, ABX_TENANT_MAX + 1, "%s", t && abx_tenant_valid(t) ? t : "");
    const char *n = json_string_value(json_object_get(metadata, ABX_NOTES_META_KEY));
    if (notes) {
        free(*notes);
        *notes = n ? strdup(n) : NULL;
    }
    json_object_del(metadata, ABX_TENANT_META_KEY);
    json_object_del(metadata, ABX_NOTES_META_KEY);
}

/* ---- quotas ---------------------------------------------------------------------------- */

/* A tenant's live sandboxes are counted from the provider's list (a walk
 * of every sandbox on the host) at most every QUOTA_RECOUNT_MS, not at
 * every create: between counts, the count is the last one plus what this
 * client made since (sandboxes that ended meanwhile still count, which
 * can only refuse early), and a create the count would refuse is
 * recounted first, so a refusal always rests on a fresh count. */
#define QUOTA_RECOUNT_MS 2000

typedef struct book_entry {
    char tenant[ABX_TENANT_MAX + 1];
    unsigned sandboxes, networked; /* creates in flight */
    unsigned live, live_net;       /* live sandboxes at the last count, plus those made since */
    long long counted_ms;          /* when that count was (CLOCK_MONOTONIC); 0: never */
} book_entry;

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct abx_quota_book {
    pthread_mutex_t mu; /* the entries, and every count-check-reserve, so that none overtakes another */
    book_entry *entries;
    size_t n, cap;
};

abx_quota_book *abx__quota_book_new(void)
{
    abx_quota_book *b = calloc(1, sizeof *b);
    if (b)
        pthread_mutex_init(&b->mu, NULL);
    return b;
}

void abx__quota_book_free(abx_quota_book *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    free(b->entries);
    free(b);
}

/* The tenant's entry (lock held), made when make; NULL without memory. */
static book_entry *entry_of(abx_quota_book *b, const char *tenant, bool make)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->entries[i].tenant, tenant) == 0)
            return &b->entries[i];
    if (!make)
        return NULL;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        book_entry *grown = realloc(b->entries, cap * sizeof *grown);
        if (!grown)
            return NULL;
        b->entries = grown;
        b->cap = cap;
    }
    book_entry *e = &b->entries[b->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
    return e;
}

typedef struct quota_limits {
    unsigned per_tenant; /* live sandboxes */
    unsigned share_pct;  /* of each host-wide pool */
} quota_limits;

static void limits_read(quota_limits *q)
{
    q->per_tenant = ABX_SANDBOXES_PER_TENANT_DEFAULT;
    q->share_pct = ABX_TENANT_POOL_SHARE_DEFAULT;
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (kvs && abx__config_load(kvs, NULL) == 0) {
        const char *v = abx__kvs_get(kvs, "limits.sandboxes_per_tenant");
        unsigned u = 0;
        if (v && abx__parse_uint(v, 1, 1000000, &u) == 0)
            q->per_tenant = u;
        v = abx__kvs_get(kvs, "limits.tenant_pool_share");
        if (v && abx__parse_uint(v, 1, 100, &u) == 0)
            q->share_pct = u;
    }
    free(kvs);
}

static bool networked_info(const abx_sandbox_info *in)
{
    json_t *net = in->network_json ? json_loads(in->network_json, 0, NULL) : NULL;
    bool on = net && strcmp(abx__net_policy_mode(net), "none") != 0;
    json_decref(net);
    return on;
}

/* The tenant's live sandboxes (and those with a network), by the provider's list. */
static int count_live(abx_client *root, const char *tenant, unsigned *all, unsigned *networked,
                      abx_error **err)
{
    abx__listed *items = NULL;
    size_t n = 0;
    *all = *networked = 0;
    int rc = root->ops->list(root, NULL, &items, &n, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(items[i].tenant, tenant) == 0) {
            (*all)++;
            *networked += networked_info(&items[i].info);
        }
        abx_sandbox_info_clear(&items[i].info);
    }
    free(items);
    return 0;
}

/* A pool's share: share_pct of size, at least one; UINT_MAX without a pool. */
static unsigned share_of(unsigned size, unsigned share_pct)
{
    if (size == 0)
        return ~0u;
    unsigned long long s = (unsigned long long)size * share_pct / 100;
    return s ? (unsigned)s : 1;
}

static int over(abx_error **err, const char *what, unsigned limit, const char *key)
{
    return abx__error_set(err, ABX_EQUOTA, "this tenant holds %s: %u (config.toml %s)", what, limit, key);
}

int abx__quota_reserve(abx_client *c, bool networked, abx_error **err)
{
    if (!c->tenant[0])
        return 0;
    abx_client *root = abx__client_root(c);
    if (!root->quota)
        return abx__error_set(err, ABX_ENOMEM, "quota book");
    quota_limits q;
    limits_read(&q);
    unsigned uid_pool = 0, net_pool = 0;
    if (root->ops->pools)
        root->ops->pools(root, &uid_pool, &net_pool);
    abx_quota_book *b = root->quota;
    pthread_mutex_lock(&b->mu);
    book_entry *e = entry_of(b, c->tenant, true);
    int rc = e ? 0 : abx__error_set(err, ABX_ENOMEM, "quota book");
    bool fresh = e && e->counted_ms && monotonic_ms() - e->counted_ms < QUOTA_RECOUNT_MS;
    for (int pass = 0; rc == 0 && pass < 2; pass++) {
        if (!fresh && (rc = count_live(root, c->tenant, &e->live, &e->live_net, err)) == 0)
            e->counted_ms = monotonic_ms();
        unsigned have = e->live + e->sandboxes, have_net = e->live_net + e->networked;
        if (rc == 0 && have >= q.per_tenant)
            rc = over(err, "the most live sandboxes a tenant may", q.per_tenant,
                      "[limits] sandboxes_per_tenant");
        else if (rc == 0 && have >= share_of(uid_pool, q.share_pct))
            rc = over(err, "its share of the host's uid ranges", share_of(uid_pool, q.share_pct),
                      "[limits] tenant_pool_share");
        else if (rc == 0 && networked && have_net >= share_of(net_pool, q.share_pct))
            rc = over(err, "its share of the host's network addresses", share_of(net_pool, q.share_pct),
                      "[limits] tenant_pool_share");
        if (rc != -ABX_EQUOTA || !fresh)
            break;
        abx_error_free(err ? *err : NULL); /* refused on a kept count: counted again, then decided */
        if (err)
            *err = NULL;
        rc = 0;
        fresh = false;
    }
    if (rc == 0) {
        e->sandboxes++;
        e->networked += networked;
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int abx__quota_volume(const char *tenant, unsigned count, unsigned long long mb, unsigned add_mb,
                      abx_error **err)
{
    if (!tenant || !*tenant)
        return 0;
    unsigned per_tenant = ABX_VOLUMES_PER_TENANT_DEFAULT, mb_per_tenant = ABX_VOLUME_MB_PER_TENANT_DEFAULT;
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (kvs && abx__config_load(kvs, NULL) == 0) {
        const char *v = abx__kvs_get(kvs, "limits.volumes_per_tenant");
        unsigned u = 0;
        if (v && abx__parse_uint(v, 0, 1000000, &u) == 0)
            per_tenant = u;
        v = abx__kvs_get(kvs, "limits.volume_mb_per_tenant");
        if (v && abx__parse_uint(v, 0, 4000000000u, &u) == 0)
            mb_per_tenant = u;
    }
    free(kvs);
    if (count >= per_tenant)
        return over(err, "the most volumes a tenant may", per_tenant, "[limits] volumes_per_tenant");
    if (mb + add_mb > mb_per_tenant)
        return abx__error_set(err, ABX_EQUOTA,
                              "this tenant's volumes would hold %llu MiB, past %u (config.toml [limits] "
                              "volume_mb_per_tenant)",
                              mb + add_mb, mb_per_tenant);
    return 0;
}

void abx__quota_release(abx_client *c, bool networked, bool made)
{
    if (!c->tenant[0])
        return;
    abx_quota_book *b = abx__client_root(c)->quota;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    book_entry *e = entry_of(b, c->tenant, false);
    if (e) {
        e->sandboxes -= e->sandboxes > 0;
        e->networked -= networked && e->networked > 0;
        e->live += made;
        e->live_net += made && networked;
        bool stale = monotonic_ms() - e->counted_ms >= QUOTA_RECOUNT_MS;
        if (!e->sandboxes && !e->networked && stale)
            *e = b->entries[--b->n]; /* the last one takes its place */
    }
    pthread_mutex_unlock(&b->mu);
}
