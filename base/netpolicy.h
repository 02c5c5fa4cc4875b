/* netpolicy.h: a sandbox's network policy: its mode and its allow/deny
 * lists of CIDRs and domains, as data (no system calls).
 *
 * Modes: "none" (loopback only), "internet" (public addresses, less the
 * deny list), "allowlist" (only what the allow list names). Whatever the
 * lists say, the ranges abx__net_addr_forbidden() names stay unreachable
 * unless an allow-list CIDR names them (and such a CIDR passes the walls
 * below only where the operator allows it). Order of the rules, first match
 * wins: an allowed CIDR; a denied name's address; an address the resolver
 * returned for an allowed name; a denied CIDR; a forbidden range; the mode.
 *
 * The policy travels as JSON: {"mode": M, "allow_out": [...], "deny_out": [...]}.
 */
#ifndef ABX_NETPOLICY_H
#define ABX_NETPOLICY_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_NET_MAX_RULES 4096 /* per list */
#define ABX_NET_NAME_MAX 253

typedef enum abx_net_rule_kind {
    ABX_NET_CIDR4,
    ABX_NET_CIDR6,
    ABX_NET_NAME,     /* example.com: that name only */
    ABX_NET_WILDCARD, /* *.example.com: every name under it, not example.com itself */
} abx_net_rule_kind;

typedef struct abx_net_rule {
    abx_net_rule_kind kind;
    unsigned char addr[16];          /* CIDR: network bytes (4 or 16 used), host bits cleared */
    unsigned prefix;                 /* CIDR: 0-32 or 0-128 */
    char name[ABX_NET_NAME_MAX + 1]; /* NAME, WILDCARD: lower case, no trailing dot, without "*." */
} abx_net_rule;

/* Parses one entry: "203.0.113.7", "10.1.0.0/16", "2001:db8::/32",
 * "example.com", "*.example.com" (case-insensitive, a trailing dot
 * accepted). E8001 naming the entry otherwise. */
int abx__net_rule_parse(const char *text, abx_net_rule *out, abx_error **err);
/* The rule written back in its normal form (out of at least 300 bytes). */
void abx__net_rule_format(const abx_net_rule *r, char *out, size_t len);
/* Whether a name rule covers qname (lower case, no trailing dot). */
bool abx__net_name_matches(const abx_net_rule *r, const char *qname);
/* Whether addr (family AF_INET: 4 bytes, AF_INET6: 16) lies in r. */
bool abx__net_cidr_contains(const abx_net_rule *r, int family, const unsigned char *addr);
/* Whether an address is one a sandbox never reaches unless an allowed CIDR
 * names it: private and shared ranges, loopback, link-local, multicast,
 * broadcast and reserved, unspecified; IPv6 unique-local, link-local,
 * multicast, loopback, unspecified, and IPv4-mapped forms of the IPv4 ones.
 * Documentation and benchmarking ranges count as public. */
bool abx__net_addr_forbidden(int family, const unsigned char *addr);
/* Those ranges as CIDR text (IPv4 first), for the packet filter; static. */
const char *const *abx__net_forbidden_ranges(size_t *count);

/* The walls. Whatever a request says, a sandbox never reaches the never
 * ranges (abx__net_never_range(0...) until NULL: this host, loopback, the
 * cloud metadata addresses) nor the sandbox pool; the other forbidden
 * ranges only when the operator's [network] client_may_allow contains the
 * whole entry. abx__net_policy_walls checks the allow list of a normal
 * policy against them: E8031 naming the entry, the range and the rule.
 * may: the operator's CIDRs (nmay of them); pool: the pool's CIDR or NULL. */
int abx__net_policy_walls(json_t *policy, const abx_net_rule *may, size_t nmay, const char *pool,
                          abx_error **err);
const char *abx__net_never_range(size_t i);
bool abx__net_addr_never(int family, const unsigned char *addr);
/* Whether two CIDRs of one family share an address; whether inner lies in outer. */
bool abx__net_cidrs_overlap(const abx_net_rule *a, const abx_net_rule *b);
bool abx__net_cidr_within(const abx_net_rule *inner, const abx_net_rule *outer);

/* Builds the normal policy document from a mode ("none", "internet",
 * "allowlist"; NULL: decided by the lists, else default_mode) and the two
 * lists (NULL-terminated, may be NULL). Without a mode: an allow list
 * makes "allowlist", a deny list alone "internet". "none" with a list is
 * E8001. *out is the caller's. */
int abx__net_policy_build(const char *mode, const char *const *allow, const char *const *deny,
                          const char *default_mode, json_t **out, abx_error **err);
/* Checks a policy document from elsewhere (a request) and returns its
 * normal form in *out (the caller's): the same rules as _build. */
int abx__net_policy_normalize(json_t *doc, json_t **out, abx_error **err);
/* E2B's allow_internet_access (-1: absent, 0, 1) and its lists, as a
 * policy: true is "internet"; false is "allowlist" when allow_out names
 * something, else "none" (the lists then mean nothing and are dropped);
 * absent leaves the mode to the lists, then to default_mode. allow and
 * deny are JSON arrays of strings or NULL. *out is the caller's. */
int abx__net_policy_from_e2b(int allow_internet_access, json_t *allow, json_t *deny, const char *default_mode,
                             json_t **out, abx_error **err);
/* The same as create options: mode (NULL when neither access nor a list
 * decided it: the server's default then applies), NULL-terminated lists
 * whose strings belong to policy. abx__net_egress_free releases it. */
typedef struct abx_net_egress {
    const char *mode;
    char **allow, **deny;
    json_t *policy;
} abx_net_egress;
/* access: a JSON boolean or NULL; allow, deny: JSON arrays or NULL. */
int abx__net_egress_from_e2b(json_t *access, json_t *allow, json_t *deny, abx_net_egress *out,
                             abx_error **err);
void abx__net_egress_free(abx_net_egress *e);
/* The mode of a normal policy document ("none" when doc is NULL). */
const char *abx__net_policy_mode(json_t *doc);

#endif
