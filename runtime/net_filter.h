/* net_filter.h: net_filter.c's part of a sandbox's network (see net.h):
 * the pool slot, the links, the packet filter, their removal. */
#ifndef ABX_NET_FILTER_H
#define ABX_NET_FILTER_H

#include "abx/abx.h"

#include <jansson.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/types.h>

struct nft_ctx;

typedef struct abx_net_slot {
    unsigned slot;
    char iface[IFNAMSIZ];            /* abxsN, the host side */
    struct in_addr gateway, address; /* .1 (host side), .2 (eth0 inside) */
    char pool[32];                   /* the pool's CIDR */
} abx_net_slot;

struct rtnl_link_stats64;

/* A libnftables context, or NULL when the library is missing. */
struct nft_ctx *abx__netf_ctx(void);
void abx__netf_ctx_free(struct nft_ctx *c);
/* The pool's CIDR in out, or NULL when ABX_NET_POOL is wrong. */
const char *abx__netf_pool_cidr(char out[32]);
/* How many sandboxes the pool has addresses for (0: ABX_NET_POOL is wrong). */
unsigned abx__netf_pool_slots(void);
/* How many of them are taken now (host-wide). */
unsigned abx__netf_pool_used(void);
/* Takes a free /30 of the pool for sandbox id. */
int abx__netf_claim(const char *id, abx_net_slot *s, abx_error **err);
void abx__netf_release(unsigned slot);
/* The table (made if missing), the slot's chains and sets under policy. */
int abx__netf_install(struct nft_ctx *c, const abx_net_slot *s, json_t *policy, abx_error **err);
/* Replaces the slot's policy rules and sets in one transaction. */
int abx__netf_policy(struct nft_ctx *c, const abx_net_slot *s, json_t *policy, abx_error **err);
/* An address the resolver returned: allowed (ok4) or denied (dn4) for ttl seconds. */
void abx__netf_admit(struct nft_ctx *c, unsigned slot, const unsigned char a[4], unsigned ttl, bool denied);
/* The veth pair, addresses and the default route inside init_pid's namespace. */
int abx__netf_links_up(const abx_net_slot *s, pid_t init_pid, abx_error **err);
/* Runs an nft script in one transaction (all of it or nothing). */
int abx__netf_run(struct nft_ctx *c, const char *script, abx_error **err);
/* Removes the slot's filter objects (the table with the namespace's last),
 * the slot and the links. c may be NULL (then only the slot and links). */
void abx__netf_teardown(struct nft_ctx *c, const char *iface, unsigned slot);

/* The packets slot's filter refused (its counter refused_N); -1 when it cannot be read. */
int abx__netf_refused(struct nft_ctx *c, unsigned slot, unsigned long long *packets);
/* The counters of link iface in this network namespace (rtnetlink); -1 when it cannot be read. */
int abx__netf_link_stats(const char *iface, struct rtnl_link_stats64 *out);

#endif
