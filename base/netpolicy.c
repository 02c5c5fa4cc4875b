/* netpolicy.c: network policies as data (netpolicy.h): parsing entries,
 * matching names and addresses, the forbidden ranges, the normal JSON form.
 * Pure logic: no system calls but inet_pton/inet_ntop.
 */
#include "netpolicy.h"
#include "error_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static bool label_ok(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

/* A host name of labels separated by dots, lower-cased into out. Its last
 * label is not all digits (RFC 3696): "10.0.0.5." is no name, or its normal
 * form "10.0.0.5" would read back as an address. */
static bool name_ok(const char *text, char out[ABX_NET_NAME_MAX + 1])
{
    size_t n = strlen(text);
    if (n && text[n - 1] == '.')
        n--;
    if (n == 0 || n > ABX_NET_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)text[i]);
    out[n] = '\0';
    const char *label = out;
    for (;;) {
        const char *dot = strchr(label, '.');
        size_t len = dot ? (size_t)(dot - label) : strlen(label);
        if (!label_ok(label, len))
            return false;
        if (!dot)
            return strspn(label, "0123456789") != len;
        label = dot + 1;
    }
}

static void clear_host_bits(unsigned char *addr, unsigned bytes, unsigned prefix)
{
    for (unsigned i = 0; i < bytes; i++) {
        unsigned keep = prefix >= 8 * (i + 1) ? 8 : prefix > 8 * i ? prefix - 8 * i : 0;
        addr[i] &= (unsigned char)(keep ? 0xff << (8 - keep) : 0);
    }
}

static bool cidr_parse(const char *text, abx_net_rule *out)
{
    char host[64];
    const char *slash = strchr(text, '/');
    size_t hl = slash ? (size_t)(slash - text) : strlen(text);
    if (hl == 0 || hl >= sizeof host)
        return false;
    memcpy(host, text, hl);
    host[hl] = '\0';
    unsigned max;
    if (inet_pton(AF_INET, host, out->addr) == 1) {
        out->kind = ABX_NET_CIDR4;
        max = 32;
    } else if (inet_pton(AF_INET6, host, out->addr) == 1) {
        out->kind = ABX_NET_CIDR6;
        max = 128;
    } else {
        return false;
    }
    out->prefix = max;
    if (slash) {
        const char *p = slash + 1;
        unsigned v = 0;
        if (!*p || strlen(p) > 3)
            return false;
        for (; *p; p++) {
            if (!isdigit((unsigned char)*p))
                return false;
            v = v * 10 + (unsigned)(*p - '0');
        }
        if (v > max)
            return false;
        out->prefix = v;
    }
    clear_host_bits(out->addr, max / 8, out->prefix);
    return true;
}

int abx__net_rule_parse(const char *text, abx_net_rule *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text || strlen(text) > ABX_NET_NAME_MAX + 2)
        return abx__error_set(err, ABX_EINVAL, "network rule: empty or longer than %d characters",
                              ABX_NET_NAME_MAX);
    if (cidr_parse(text, out))
        return 0;
    bool wildcard = strncmp(text, "*.", 2) == 0;
    if (name_ok(text + (wildcard ? 2 : 0), out->name) && !strchr(text, '/')) {
        out->kind = wildcard ? ABX_NET_WILDCARD : ABX_NET_NAME;
        return 0;
    }
    return abx__error_set(err, ABX_EINVAL,
                          "network rule '%.80s': expected an address, a CIDR (10.0.0.0/8, 2001:db8::/32), a "
                          "domain (example.com) or a wildcard (*.example.com)",
                          text);
}

void abx__net_rule_format(const abx_net_rule *r, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "";
    switch (r->kind) {
    case ABX_NET_CIDR4:
    case ABX_NET_CIDR6:
        inet_ntop(r->kind == ABX_NET_CIDR4 ? AF_INET : AF_INET6, r->addr, host, sizeof host);
        snprintf(out, len, "%s/%u", host, r->prefix);
        return;
    case ABX_NET_NAME:
        snprintf(out, len, "%s", r->name);
        return;
    case ABX_NET_WILDCARD:
        snprintf(out, len, "*.%s", r->name);
        return;
    }
}

bool abx__net_name_matches(const abx_net_rule *r, const char *qname)
{
    if (r->kind == ABX_NET_NAME)
        return strcmp(r->name, qname) == 0;
    if (r->kind != ABX_NET_WILDCARD)
        return false;
    size_t q = strlen(qname), n = strlen(r->name);
    return q > n + 1 && qname[q - n - 1] == '.' && strcmp(qname + q - n, r->name) == 0;
}

bool abx__net_cidr_contains(const abx_net_rule *r, int family, const unsigned char *addr)
{
    if ((r->kind == ABX_NET_CIDR4 && family != AF_INET) || (r->kind == ABX_NET_CIDR6 && family != AF_INET6) ||
        (r->kind != ABX_NET_CIDR4 && r->kind != ABX_NET_CIDR6))
        return false;
    unsigned char masked[16];
    unsigned bytes = family == AF_INET ? 4 : 16;
    memcpy(masked, addr, bytes);
    clear_host_bits(masked, bytes, r->prefix);
    return memcmp(masked, r->addr, bytes) == 0;
}

/* The ranges no sandbox reaches unless allowed by CIDR. */
static const char *const forbidden_ranges[] = {
    "0.0.0.0/8",    "10.0.0.0/8",     "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "224.0.0.0/4",   "240.0.0.0/4", "::/128",         "::1/128",
    "fc00::/7",     "fe80::/10",      "ff00::/8",      "100::/64",
};

bool abx__net_addr_forbidden(int family, const unsigned char *addr)
{
    /* an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) address is its IPv4 address */
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (family == AF_INET6 && (memcmp(addr, mapped, 12) == 0 || memcmp(addr, nat64, 12) == 0))
        return abx__net_addr_forbidden(AF_INET, addr + 12);
    for (size_t i = 0; i < sizeof forbidden_ranges / sizeof forbidden_ranges[0]; i++) {
        abx_net_rule r;
        if (cidr_parse(forbidden_ranges[i], &r) && abx__net_cidr_contains(&r, family, addr))
            return true;
    }
    return false;
}

/* The forbidden ranges as text (for the packet filter). */
const char *const *abx__net_forbidden_ranges(size_t *count)
{
    *count = sizeof forbidden_ranges / sizeof forbidden_ranges[0];
    return forbidden_ranges;
}

/* ---- the walls: what a request's allow list may open ------------------------ */

/* Never reachable, whatever a request or the operator says (the pool is
 * added by the caller: it is the runtime's). */
static const char *const never_ranges[][2] = {
    {"0.0.0.0/8", "this host"},
    {"127.0.0.0/8", "the host's loopback"},
    {"169.254.169.254/32", "the cloud metadata service"},
    {"169.254.170.2/32", "the container metadata service"},
    {"100.100.100.200/32", "the cloud metadata service"},
    {"168.63.129.16/32", "the cloud host's wire server"},
    {"::/128", "this host"},
    {"::1/128", "the host's loopback"},
    {"fd00:ec2::254/128", "the cloud metadata service"},
};
#define NEVER_COUNT (sizeof never_ranges / sizeof never_ranges[0])

/* What each forbidden range is, for a refusal. */
static const char *forbidden_what(const char *cidr)
{
    static const char *const what[][2] = {
        {"10.0.0.0/8", "private network"},
        {"100.64.0.0/10", "shared address space"},
        {"169.254.0.0/16", "link-local"},
        {"172.16.0.0/12", "private network"},
        {"192.0.0.0/24", "IETF protocol assignments"},
        {"192.168.0.0/16", "private network"},
        {"224.0.0.0/4", "multicast"},
        {"240.0.0.0/4", "reserved"},
        {"fc00::/7", "unique-local"},
        {"fe80::/10", "link-local"},
        {"ff00::/8", "multicast"},
        {"100::/64", "discard-only"},
    };
    for (size_t i = 0; i < sizeof what / sizeof what[0]; i++)
        if (strcmp(what[i][0], cidr) == 0)
            return what[i][1];
    return "special-purpose";
}

const char *abx__net_never_range(size_t i)
{
    return i < NEVER_COUNT ? never_ranges[i][0] : NULL;
}

bool abx__net_addr_never(int family, const unsigned char *addr)
{
    for (size_t i = 0; i < NEVER_COUNT; i++) {
        abx_net_rule r;
        if (cidr_parse(never_ranges[i][0], &r) && abx__net_cidr_contains(&r, family, addr))
            return true;
    }
    return false;
}

bool abx__net_cidrs_overlap(const abx_net_rule *a, const abx_net_rule *b)
{
    if ((a->kind != ABX_NET_CIDR4 && a->kind != ABX_NET_CIDR6) || a->kind != b->kind)
        return false;
    const abx_net_rule *wider = a->prefix <= b->prefix ? a : b, *narrower = wider == a ? b : a;
    return abx__net_cidr_contains(wider, a->kind == ABX_NET_CIDR4 ? AF_INET : AF_INET6, narrower->addr);
}

bool abx__net_cidr_within(const abx_net_rule *inner, const abx_net_rule *outer)
{
    return abx__net_cidrs_overlap(inner, outer) && inner->prefix >= outer->prefix;
}

/* One allow-list CIDR against the walls. */
static int wall_check(const abx_net_rule *r, const char *text, const abx_net_rule *may, size_t nmay,
                      const char *pool, abx_error **err)
{
    abx_net_rule wall;
    if (pool && cidr_parse(pool, &wall) && abx__net_cidrs_overlap(r, &wall))
        return abx__error_set(err, ABX_ENETPOLICY,
                              "allow_out '%s' reaches %s (the sandboxes' own addresses), which no sandbox "
                              "may reach whatever its policy says",
                              text, pool);
    for (size_t i = 0; i < NEVER_COUNT; i++)
        if (cidr_parse(never_ranges[i][0], &wall) && abx__net_cidrs_overlap(r, &wall))
            return abx__error_set(err, ABX_ENETPOLICY,
                                  "allow_out '%s' reaches %s (%s), which no sandbox may reach whatever its "
                                  "policy says",
                                  text, never_ranges[i][0], never_ranges[i][1]);
    for (size_t i = 0; i < sizeof forbidden_ranges / sizeof forbidden_ranges[0]; i++) {
        if (!cidr_parse(forbidden_ranges[i], &wall) || !abx__net_cidrs_overlap(r, &wall))
            continue;
        bool opened = false;
        for (size_t k = 0; k < nmay && !opened; k++)
            opened = abx__net_cidr_within(r, &may[k]);
        if (!opened)
            return abx__error_set(err, ABX_ENETPOLICY,
                                  "allow_out '%s' opens %s (%s), which only the operator may open: list "
                                  "it under [network] client_may_allow in config.toml",
                                  text, forbidden_ranges[i], forbidden_what(forbidden_ranges[i]));
    }
    return 0;
}

int abx__net_policy_walls(json_t *policy, const abx_net_rule *may, size_t nmay, const char *pool,
                          abx_error **err)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(policy, "allow_out"), i, v)
    {
        abx_net_rule r;
        const char *text = json_string_value(v);
        if (!text || abx__net_rule_parse(text, &r, NULL) < 0)
            return abx__error_set(err, ABX_EINVAL, "allow_out: a list of network rules");
        if (r.kind != ABX_NET_CIDR4 && r.kind != ABX_NET_CIDR6)
            continue; /* a name's addresses pass the resolver's guard */
        int rc = wall_check(&r, text, may, nmay, pool, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Appends the normal forms of a list to arr; E8001 at the first bad entry. */
static int add_list(json_t *arr, const char *const *items, json_t *jitems, const char *which, abx_error **err)
{
    size_t n = 0;
    for (size_t i = 0;; i++) {
        const char *text = NULL;
        if (items) {
            text = items[i];
        } else if (jitems) {
            json_t *v = json_array_get(jitems, i);
            if (!v)
                break;
            if (!json_is_string(v))
                return abx__error_set(err, ABX_EINVAL, "%s: a list of strings", which);
            text = json_string_value(v);
        }
        if (!text)
            break;
        if (++n > ABX_NET_MAX_RULES)
            return abx__error_set(err, ABX_EINVAL, "%s: at most %d entries", which, ABX_NET_MAX_RULES);
        abx_net_rule r;
        int rc = abx__net_rule_parse(text, &r, err);
        if (rc < 0)
            return abx__error_wrap(err, rc, "%s", which);
        char norm[300];
        abx__net_rule_format(&r, norm, sizeof norm);
        json_array_append_new(arr, json_string(norm));
    }
    return 0;
}

static bool mode_known(const char *m)
{
    return m && (strcmp(m, "none") == 0 || strcmp(m, "internet") == 0 || strcmp(m, "allowlist") == 0);
}

static int build(const char *mode, const char *const *allow, json_t *jallow, const char *const *deny,
                 json_t *jdeny, const char *default_mode, json_t **out, abx_error **err)
{
    *out = NULL;
    if (mode && !mode_known(mode))
        return abx__error_set(err, ABX_EINVAL, "network mode '%.40s': expected none, internet or allowlist",
                              mode);
    json_t *a = json_array(), *d = json_array();
    int rc = add_list(a, allow, jallow, "allow_out", err);
    if (rc == 0)
        rc = add_list(d, deny, jdeny, "deny_out", err);
    if (rc == 0 && !mode)
        mode = json_array_size(a)         ? "allowlist"
               : json_array_size(d)       ? "internet"
               : mode_known(default_mode) ? default_mode
                                          : "none";
    if (rc == 0 && strcmp(mode, "none") == 0 && (json_array_size(a) || json_array_size(d)))
        rc = abx__error_set(err, ABX_EINVAL,
                            "network: mode none reaches nothing, so allow/deny lists mean nothing there; "
                            "choose internet or allowlist");
    if (rc < 0) {
        json_decref(a);
        json_decref(d);
        return rc;
    }
    *out = json_pack("{s:s, s:o, s:o}", "mode", mode, "allow_out", a, "deny_out", d);
    return *out ? 0 : abx__error_set(err, ABX_ENOMEM, "network policy");
}

int abx__net_policy_build(const char *mode, const char *const *allow, const char *const *deny,
                          const char *default_mode, json_t **out, abx_error **err)
{
    return build(mode, allow, NULL, deny, NULL, default_mode, out, err);
}

int abx__net_policy_normalize(json_t *doc, json_t **out, abx_error **err)
{
    *out = NULL;
    json_t *m = json_object_get(doc, "mode"), *a = json_object_get(doc, "allow_out"),
           *d = json_object_get(doc, "deny_out");
    if (!json_is_object(doc) || (m && !json_is_string(m)) || (a && !json_is_array(a)) ||
        (d && !json_is_array(d)))
        return abx__error_set(err, ABX_EINVAL,
                              "network: {mode: string, allow_out: [strings], deny_out: [strings]}");
    return build(m ? json_string_value(m) : NULL, NULL, a, NULL, d, "none", out, err);
}

int abx__net_policy_from_e2b(int allow_internet_access, json_t *allow, json_t *deny, const char *default_mode,
                             json_t **out, abx_error **err)
{
    *out = NULL;
    if ((allow && !json_is_array(allow)) || (deny && !json_is_array(deny)))
        return abx__error_set(err, ABX_EINVAL, "network: allow_out and deny_out are lists of strings");
    const char *mode = NULL;
    if (allow_internet_access == 1)
        mode = "internet";
    else if (allow_internet_access == 0)
        mode = json_array_size(allow) ? "allowlist" : "none";
    bool none = mode && strcmp(mode, "none") == 0;
    return build(mode, NULL, none ? NULL : allow, NULL, none ? NULL : deny, default_mode, out, err);
}

static char **strings_of(json_t *arr)
{
    char **out = calloc(json_array_size(arr) + 1, sizeof *out);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (out) out[i] = (char *)json_string_value(v);
    return out;
}

void abx__net_egress_free(abx_net_egress *e)
{
    free(e->allow);
    free(e->deny);
    json_decref(e->policy);
    memset(e, 0, sizeof *e);
}

int abx__net_egress_from_e2b(json_t *access, json_t *allow, json_t *deny, abx_net_egress *out,
                             abx_error **err)
{
    memset(out, 0, sizeof *out);
    if (access && !json_is_boolean(access))
        return abx__error_set(err, ABX_EINVAL, "allow_internet_access: true or false");
    int rc =
        abx__net_policy_from_e2b(access ? json_is_true(access) : -1, allow, deny, NULL, &out->policy, err);
    if (rc < 0)
        return rc;
    bool decided = access || json_array_size(allow) || json_array_size(deny);
    out->mode = decided ? abx__net_policy_mode(out->policy) : NULL;
    out->allow = strings_of(json_object_get(out->policy, "allow_out"));
    out->deny = strings_of(json_object_get(out->policy, "deny_out"));
    if (!out->allow || !out->deny) {
        abx__net_egress_free(out);
        return abx__error_set(err, ABX_ENOMEM, "network");
    }
    return 0;
}

const char *abx__net_policy_mode(json_t *doc)
{
    const char *m = json_string_value(json_object_get(doc, "mode"));
    return m ? m : "none";
}
