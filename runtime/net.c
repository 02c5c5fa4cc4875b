/* net.c: a sandbox's network while its supervisor lives (net.h): making
 * it (net_filter.c's pool, links and filter), its policy, its resolver
 * (net_dns.c), and its end.
 */
#include "net.h"
#include "net_filter.h"
#include "net_denials.h"
#include "error_internal.h"
#include "netpolicy.h"
#include "sysutil.h"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct abx_net {
    char state_dir[512];
    abx_net_slot slot;
    json_t *policy;     /* normal form; lock: mu */
    pthread_mutex_t mu; /* the policy and every filter change */
    struct nft_ctx *nft;
    abx_dns *dns;
    int denial_fd; /* net_denials.h: -2 until first asked for, -1 when the kernel would not */
};

/* ---- the resolver's admissions -------------------------------------------- */

static void admit(void *ctx, const unsigned char a[4], unsigned ttl, bool denied)
{
    abx_net *n = ctx;
    pthread_mutex_lock(&n->mu);
    abx__netf_admit(n->nft, n->slot.slot, a, ttl, denied);
    pthread_mutex_unlock(&n->mu);
}

/* ---- the public part --------------------------------------------------------- */

/* net.json: the slot, its interface and whose it is (the reaper checks the
 * slot is still this sandbox's before it tears anything down). */
static int record(const abx_net *n, const char *id)
{
    char path[600], text[256];
    snprintf(path, sizeof path, "%s/net.json", n->state_dir);
    snprintf(text, sizeof text, "{\"slot\":%u,\"interface\":\"%s\",\"id\":\"%s\"}\n", n->slot.slot,
             n->slot.iface, id);
    return abx__create_file(path, text, 0600);
}

int abx__net_up(const char *id, pid_t init_pid, const char *state_dir, json_t *policy, abx_net **out,
                abx_error **err)
{
    *out = NULL;
    if (geteuid() != 0)
        return abx__error_set(err, ABX_EPERM,
                              "network: a sandbox's network needs root (veth, nftables); "
                              "without root, sandboxes have loopback only");
    abx_net *n = calloc(1, sizeof *n);
    if (!n)
        return abx__error_set(err, ABX_ENOMEM, "network");
    pthread_mutex_init(&n->mu, NULL);
    n->denial_fd = -2;
    snprintf(n->state_dir, sizeof n->state_dir, "%s", state_dir ? state_dir : "");
    n->policy = json_incref(policy);
    int rc = (n->nft = abx__netf_ctx())
                 ? 0
                 : abx__error_set(err, ABX_EHOSTSUPPORT,
                                  "network: libnftables could not be loaded (Debian: libnftables1)");
    if (rc == 0)
        rc = abx__netf_claim(id, &n->slot, err);
    if (rc == 0 && n->state_dir[0]) /* abx run has none: its sandbox ends with its process */
        rc = record(n, id) < 0 ? abx__error_errno(err, ABX_EIO, errno, "network: recording it") : 0;
    if (rc == 0)
        rc = abx__netf_install(n->nft, &n->slot, policy, err);
    if (rc == 0)
        rc = abx__netf_links_up(&n->slot, init_pid, err);
    char gw[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &n->slot.gateway, gw, sizeof gw);
    if (rc == 0)
        rc = abx__dns_start(gw, policy, admit, n, &n->dns, err);
    if (rc < 0) {
        abx__net_down(n);
        return rc;
    }
    *out = n;
    return 0;
}

int abx__net_set_policy(abx_net *n, json_t *policy, abx_error **err)
{
    pthread_mutex_lock(&n->mu);
    int rc = abx__netf_policy(n->nft, &n->slot, policy, err);
    if (rc == 0) {
        json_decref(n->policy);
        n->policy = json_incref(policy);
        abx__dns_set_policy(n->dns, policy);
    }
    pthread_mutex_unlock(&n->mu);
    return rc;
}

json_t *abx__net_describe(abx_net *n)
{
    char addr[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &n->slot.address, addr, sizeof addr);
    inet_ntop(AF_INET, &n->slot.gateway, gw, sizeof gw);
    pthread_mutex_lock(&n->mu);
    json_t *doc = json_deep_copy(n->policy);
    pthread_mutex_unlock(&n->mu);
    json_object_set_new(doc, "address", json_string(addr));
    json_object_set_new(doc, "gateway", json_string(gw));
    json_object_set_new(doc, "interface", json_string(n->slot.iface));
    return doc;
}

int abx__net_counters(abx_net *n, abx_net_counters *out)
{
    memset(out, 0, sizeof *out);
    struct rtnl_link_stats64 link;
    int rc = abx__netf_link_stats(n->slot.iface, &link);
    out->out_bytes = link.rx_bytes; /* the host side receives what the sandbox sends */
    out->out_packets = link.rx_packets;
    out->in_bytes = link.tx_bytes;
    out->in_packets = link.tx_packets;
    pthread_mutex_lock(&n->mu);
    if (abx__netf_refused(n->nft, n->slot.slot, &out->refused_packets) < 0)
        rc = -1;
    pthread_mutex_unlock(&n->mu);
    return rc;
}

void abx__net_resolv_conf(const abx_net *n, char *out, size_t len)
{
    char gw[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &n->slot.gateway, gw, sizeof gw);
    snprintf(out, len,
             "# written by abx: the sandbox's own resolver (its network policy applies)\nnameserver %s\n"
             "options timeout:2 attempts:2\n",
             gw);
}

int abx__net_denials_fd(abx_net *n)
{
    if (n->denial_fd == -2)
        n->denial_fd = abx__net_denials_open(n->slot.slot);
    return n->denial_fd;
}

void abx__net_down(abx_net *n)
{
    if (!n)
        return;
    if (n->denial_fd >= 0)
        close(n->denial_fd);
    abx__dns_stop(n->dns);
    if (n->slot.iface[0])
        abx__netf_teardown(n->nft, n->slot.iface, n->slot.slot);
    char path[600];
    snprintf(path, sizeof path, "%s/net.json", n->state_dir);
    if (n->state_dir[0])
        unlink(path);
    abx__netf_ctx_free(n->nft);
    json_decref(n->policy);
    pthread_mutex_destroy(&n->mu);
    free(n);
}
