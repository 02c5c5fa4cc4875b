/* net.h: a sandbox's network, when its policy gives it one.
 *
 * Mode "none" has nothing here: the sandbox keeps loopback only. Any
 * other mode gets a veth pair (host side abxsN, sandbox side eth0) with a
 * /30 from the host-wide pool (10.200.0.0/16, or ABX_NET_POOL), a default
 * route through the host side, NAT out of the host, the packet filter
 * (nftables table inet abx: a chain and sets per sandbox) and the
 * sandbox's own DNS resolver (net_dns.c) on the host side's address.
 * Needs root (CAP_NET_ADMIN on the host).
 */
#ifndef ABX_NET_H
#define ABX_NET_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct abx_net abx_net;

/* Gives sandbox id (whose init is init_pid) its network under policy (a
 * normal policy document, mode not "none"), records what it made in
 * state_dir/net.json for a reaper (state_dir NULL: no record), and starts
 * its resolver. On failure
 * nothing is left. *out is the caller's (abx__net_down). */
int abx__net_up(const char *id, pid_t init_pid, const char *state_dir, json_t *policy, abx_net **out,
                abx_error **err);
/* Replaces the policy (rules, sets, resolver) in one step; connections
 * already made are kept, the next ones follow the new policy. */
int abx__net_set_policy(abx_net *n, json_t *policy, abx_error **err);
/* {mode, allow_out, deny_out, address, gateway, interface}; the caller's. */
json_t *abx__net_describe(abx_net *n);
/* A sandbox's traffic as it sees it: out is what it sent (its host side's
 * receive counters), in what it was sent; refused, the packets the filter
 * refused. */
typedef struct abx_net_counters {
    unsigned long long out_bytes, out_packets, in_bytes, in_packets, refused_packets;
} abx_net_counters;
/* 0, or -1 when the kernel did not say (what was read is kept). */
int abx__net_counters(abx_net *n, abx_net_counters *out);
/* Removes the filter objects, the interfaces and the pool slot; stops the
 * resolver; frees n. NULL is a no-op. */
void abx__net_down(abx_net *n);
/* The socket the packets its policy refused arrive on (net_denials.h),
 * opened on first call; -1 when the kernel has no nflog. Owned by n. */
int abx__net_denials_fd(abx_net *n);
/* After a supervisor died without abx__net_down: removes what
 * state_dir/net.json names (run in the same network namespace). */
void abx__net_reap(const char *state_dir);
/* The text of /etc/resolv.conf inside a sandbox with a network (the
 * resolver on its gateway). */
void abx__net_resolv_conf(const abx_net *n, char *out, size_t len);

/* ---- net_dns.c: the resolver ---- */

typedef struct abx_dns abx_dns;
/* Serves DNS on gateway:53 (UDP) for the sandbox: answers only names the
 * policy allows, forwarded to the upstream servers (ABX_NET_DNS, else the
 * host's /etc/resolv.conf), with addresses in forbidden ranges removed and
 * the others admitted to the packet filter (admit) for their TTL. */
typedef void (*abx_dns_admit_fn)(void *ctx, const unsigned char addr[4], unsigned ttl, bool denied);
int abx__dns_start(const char *gateway, json_t *policy, abx_dns_admit_fn admit, void *ctx, abx_dns **out,
                   abx_error **err);
/* New policy for the next questions. */
void abx__dns_set_policy(abx_dns *d, json_t *policy);
void abx__dns_stop(abx_dns *d);

#endif
