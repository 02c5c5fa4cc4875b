/* net_denials.c: reading the packets a sandbox's policy refused from the
 * kernel's nflog group of its slot (net_denials.h), over a netfilter
 * netlink socket with libmnl.
 *
 * Owns: binding the group (NFULNL_CFG_CMD_BIND, copying the first
 * ABX_DENIAL_COPY_BYTES of each packet), reading the NFULNL_MSG_PACKET
 * messages, and taking each packet's destination out of its IPv4 header
 * (bounded: a header whose length or protocol says otherwise is dropped).
 * Rate: the filter's `limit` before its `log` keeps it to a few a second.
 */
#include "net_denials.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One NFULNL_MSG_CONFIG request with attr (type, len bytes of data), acked. */
static int config(struct mnl_socket *nl, unsigned group, unsigned short type, const void *data, size_t len)
{
    char buf[256];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    struct nfgenmsg *g = mnl_nlmsg_put_extra_header(nlh, sizeof *g);
    g->nfgen_family = AF_UNSPEC;
    g->version = NFNETLINK_V0;
    g->res_id = htons((unsigned short)group);
    mnl_attr_put(nlh, type, len, data);
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
        return -1;
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    return n > 0 && mnl_cb_run(buf, (size_t)n, 0, 0, NULL, NULL) >= 0 ? 0 : -1;
}

int abx__net_denials_open(unsigned slot)
{
    unsigned group = ABX_DENIAL_GROUP_BASE + slot;
    if (group > 65535)
        return -1;
    struct mnl_socket *nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
    if (!nl)
        return -1;
    struct nfulnl_msg_config_cmd bind_cmd = {.command = NFULNL_CFG_CMD_BIND};
    struct nfulnl_msg_config_mode mode = {.copy_range = htonl(ABX_DENIAL_COPY_BYTES),
                                          .copy_mode = NFULNL_COPY_PACKET};
    int rc = mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID);
    if (rc == 0)
        rc = config(nl, group, NFULA_CFG_CMD, &bind_cmd, sizeof bind_cmd);
    if (rc == 0)
        rc = config(nl, group, NFULA_CFG_MODE, &mode, sizeof mode);
    /* the socket outlives the libmnl handle: its descriptor is kept, the handle's memory freed */
    int fd = rc == 0 ? dup(mnl_socket_get_fd(nl)) : -1;
    mnl_socket_close(nl);
    if (fd >= 0) {
        int on = 1;
        setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &on, sizeof on); /* a full buffer drops, not fails */
    }
    return fd;
}

bool abx__net_denial_parse(const unsigned char *ip, unsigned len, abx_net_denial *out)
{
    memset(out, 0, sizeof *out);
    if (len < 20 || (ip[0] >> 4) != 4)
        return false;
    unsigned ihl = (ip[0] & 0x0f) * 4u;
    if (ihl < 20 || ihl > len)
        return false;
    snprintf(out->destination, sizeof out->destination, "%u.%u.%u.%u", ip[16], ip[17], ip[18], ip[19]);
    unsigned proto = ip[9];
    bool ports = proto == IPPROTO_TCP || proto == IPPROTO_UDP;
    snprintf(out->protocol, sizeof out->protocol, "%s",
             proto == IPPROTO_TCP    ? "tcp"
             : proto == IPPROTO_UDP  ? "udp"
             : proto == IPPROTO_ICMP ? "icmp"
                                     : "");
    if (!out->protocol[0])
        snprintf(out->protocol, sizeof out->protocol, "%u", proto);
    bool first_fragment = ((ip[6] & 0x1f) | ip[7]) == 0;
    if (ports && first_fragment && len >= ihl + 4)
        out->port = (unsigned)ip[ihl + 2] << 8 | ip[ihl + 3];
    return true;
}

typedef struct collect {
    abx_net_denial *out;
    int max, n;
} collect;

static int packet_attr(const struct nlattr *a, void *data)
{
    const struct nlattr **tb = data;
    if (mnl_attr_type_valid(a, NFULA_MAX) > 0)
        tb[mnl_attr_get_type(a)] = a;
    return MNL_CB_OK;
}

static int packet_msg(const struct nlmsghdr *nlh, void *data)
{
    collect *k = data;
    if ((nlh->nlmsg_type & 0xff) != NFULNL_MSG_PACKET || k->n >= k->max)
        return MNL_CB_OK;
    const struct nlattr *tb[NFULA_MAX + 1] = {NULL};
    if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), packet_attr, tb) < 0 || !tb[NFULA_PAYLOAD])
        return MNL_CB_OK;
    if (abx__net_denial_parse(mnl_attr_get_payload(tb[NFULA_PAYLOAD]),
                              mnl_attr_get_payload_len(tb[NFULA_PAYLOAD]), &k->out[k->n]))
        k->n++;
    return MNL_CB_OK;
}

int abx__net_denials_read(int fd, abx_net_denial *out, int max)
{
    collect k = {out, max, 0};
    char buf[8192];
    for (int reads = 0; reads < 16 && k.n < max; reads++) { /* what is waiting now, no more */
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? k.n : (k.n ? k.n : -1);
        if (n == 0)
            break;
        mnl_cb_run(buf, (size_t)n, 0, 0, packet_msg, &k);
    }
    return k.n;
}
