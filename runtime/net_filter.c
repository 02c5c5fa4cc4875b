/* net_filter.c: the parts of a sandbox's network (net.h) that outlive
 * its supervisor: the address pool, the veth pair (rtnetlink through
 * libmnl), the packet filter (nftables through libnftables, loaded on
 * first use) and their removal, also by a reaper (no resolver here, so
 * that a reaping abx does not load ldns).
 *
 * The pool: the /30 number N of the pool (10.200.0.0/16 by default, or
 * ABX_NET_POOL) is the sandbox's while NET_DIR/slot-N exists (made with
 * O_EXCL; it names the sandbox and the network namespace of its filter).
 * Host side abxsN holds .1 (the gateway, where the resolver listens), the
 * sandbox's eth0 .2.
 *
 * The filter, table inet abx (made by the first sandbox, removed with the
 * last one of its network namespace):
 *   forward: iifname vmap @out_by_if (abxsN : jump sb_N); anything else from
 *            abxs* dropped; towards abxs* only replies pass.
 *   input:   iifname vmap @in_by_if (abxsN : jump in_N: DNS over UDP from
 *            its own address to its gateway only: the resolver serves no
 *            TCP, and a host service on port 53 is not the sandbox's);
 *            anything else from abxs* dropped.
 *   postrouting: masquerade what leaves the pool for the host's routes.
 *   sb_N:    replies; not IPv4, not from its own address, or DNS (53, 853:
 *            its own resolver is reached through input): refused; then
 *            @never4 (the pool, the metadata addresses, netpolicy.h's never
 *            ranges) refused whatever the policy says; then the
 *            policy (netpolicy.h's order): @a4_N accept, @dn4_N refuse,
 *            @ok4_N accept (the resolver's, allowlist only), @d4_N refuse,
 *            @forbidden4 refuse, then accept (internet) or refuse.
 *            Refused: rejected as administratively prohibited, so a program
 *            fails at once (EHOSTUNREACH) instead of waiting out a timeout;
 *            spoofed and non-IPv4 packets are dropped silently.
 * Turned on once in the namespace and left on: net.ipv4.ip_forward.
 */
#include "net_filter.h"
#include "net.h"
#include "net_denials.h"
#include "buf.h"
#include "error_internal.h"
#include "netpolicy.h"
#include "sysutil.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NET_DIR "/run/abx/net"
#define NFT_SCRIPT_MAX (4u << 20)

/* ---- libnftables, loaded on first use (8 shared libraries of its own) ---- */

struct nft_ctx;
typedef struct nft_api {
    struct nft_ctx *(*ctx_new)(uint32_t flags);
    void (*ctx_free)(struct nft_ctx *ctx);
    int (*run)(struct nft_ctx *ctx, const char *buf);
    int (*buffer_error)(struct nft_ctx *ctx);
    const char *(*error_text)(struct nft_ctx *ctx);
    int (*buffer_output)(struct nft_ctx *ctx);
    const char *(*output_text)(struct nft_ctx *ctx);
} nft_api;

static pthread_once_t nft_once = PTHREAD_ONCE_INIT;
static nft_api nft; /* filled once, read-only afterwards */
static bool nft_ok;

static void load_nft(void)
{
    void *h = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    *(void **)&nft.ctx_new = dlsym(h, "nft_ctx_new");
    *(void **)&nft.ctx_free = dlsym(h, "nft_ctx_free");
    *(void **)&nft.run = dlsym(h, "nft_run_cmd_from_buffer");
    *(void **)&nft.buffer_error = dlsym(h, "nft_ctx_buffer_error");
    *(void **)&nft.error_text = dlsym(h, "nft_ctx_get_error_buffer");
    *(void **)&nft.buffer_output = dlsym(h, "nft_ctx_buffer_output");
    *(void **)&nft.output_text = dlsym(h, "nft_ctx_get_output_buffer");
    nft_ok = nft.ctx_new && nft.ctx_free && nft.run && nft.buffer_error && nft.error_text &&
             nft.buffer_output && nft.output_text;
}

struct nft_ctx *abx__netf_ctx(void)
{
    pthread_once(&nft_once, load_nft);
    struct nft_ctx *c = nft_ok ? nft.ctx_new(0) : NULL;
    if (c) {
        nft.buffer_error(c);
        nft.buffer_output(c);
    }
    return c;
}

/* Runs a script in one transaction: all of it or nothing. */
static int nft_script(struct nft_ctx *c, const char *script, abx_error **err)
{
    if (nft.run(c, script) == 0)
        return 0;
    const char *why = nft.error_text(c);
    char flat[600];
    snprintf(flat, sizeof flat, "%s", why && *why ? why : "(no reason given)");
    for (char *p = flat; *p; p++)
        if (*p == '\n')
            *p = ' ';
    return abx__error_set(err, ABX_EJAIL, "network: the packet filter refused a change: %s", flat);
}

int abx__netf_run(struct nft_ctx *c, const char *script, abx_error **err)
{
    return nft_script(c, script, err);
}

static int appendf(abx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int appendf(abx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *room = n < 0 ? NULL : abx__buf_room(b, (size_t)n + 1);
    if (!room)
        return -ABX_ETOOBIG;
    va_start(ap, fmt);
    vsnprintf(room, (size_t)n + 1, fmt, ap);
    va_end(ap);
    abx__buf_added(b, (size_t)n);
    return 0;
}

/* ---- the pool ---------------------------------------------------------------- */

static int pool_of(char cidr[32], uint32_t *base, unsigned *slots, abx_error **err)
{
    const char *text = getenv("ABX_NET_POOL");
    snprintf(cidr, 32, "%s", text && *text ? text : "10.200.0.0/16");
    abx_net_rule r;
    if (abx__net_rule_parse(cidr, &r, NULL) < 0 || r.kind != ABX_NET_CIDR4 || r.prefix < 8 || r.prefix > 28)
        return abx__error_set(err, ABX_ECONFIG,
                              "ABX_NET_POOL: an IPv4 CIDR from /8 to /28 (default 10.200.0.0/16)");
    uint32_t b;
    memcpy(&b, r.addr, 4);
    *base = ntohl(b);
    *slots = (1u << (32 - r.prefix)) / 4;
    snprintf(cidr, 32, "%u.%u.%u.%u/%u", r.addr[0], r.addr[1], r.addr[2], r.addr[3], r.prefix);
    return 0;
}

const char *abx__netf_pool_cidr(char out[32])
{
    uint32_t base = 0;
    unsigned slots = 0;
    return pool_of(out, &base, &slots, NULL) == 0 ? out : NULL;
}

unsigned abx__netf_pool_slots(void)
{
    char cidr[32];
    uint32_t base = 0;
    unsigned slots = 0;
    return pool_of(cidr, &base, &slots, NULL) == 0 ? slots : 0;
}

static unsigned long netns_inode(void)
{
    struct stat st;
    return stat("/proc/self/ns/net", &st) == 0 ? (unsigned long)st.st_ino : 0;
}

int abx__netf_claim(const char *id, abx_net_slot *n, abx_error **err)
{
    uint32_t base = 0;
    unsigned slots = 0, start;
    int rc = pool_of(n->pool, &base, &slots, err);
    if (rc < 0)
        return rc;
    if (mkdir("/run/abx", 0700) < 0 && errno != EEXIST)
        return abx__error_errno(err, ABX_EPERM, errno, "network: /run/abx (sandbox networking needs root)");
    if (mkdir(NET_DIR, 0700) < 0 && errno != EEXIST)
        return abx__error_errno(err, ABX_EPERM, errno, "network: " NET_DIR);
    if (getrandom(&start, sizeof start, 0) != (ssize_t)sizeof start)
        start = (unsigned)getpid();
    for (unsigned k = 0; k < slots; k++) {
        unsigned i = (start + k) % slots;
        char path[64], text[96];
        snprintf(path, sizeof path, NET_DIR "/slot-%u", i);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return abx__error_errno(err, ABX_EIO, errno, "network: claiming an address");
        snprintf(text, sizeof text, "%s %lu\n", id, netns_inode());
        int wrc = abx__write_all(fd, text, strlen(text));
        close(fd);
        if (wrc < 0) {
            unlink(path);
            return abx__error_errno(err, ABX_EIO, errno, "network: claiming an address");
        }
        n->slot = i;
        n->gateway.s_addr = htonl(base + 4 * i + 1);
        n->address.s_addr = htonl(base + 4 * i + 2);
        snprintf(n->iface, sizeof n->iface, "abxs%u", i);
        return 0;
    }
    return abx__error_set(err, ABX_ELIMIT, "network: every address of the pool %s is in use", n->pool);
}

void abx__netf_release(unsigned slot)
{
    char path[64];
    snprintf(path, sizeof path, NET_DIR "/slot-%u", slot);
    unlink(path);
}

/* How many slots hold a filter in this network namespace (the lock held). */
static unsigned slots_here(void)
{
    char want[32];
    snprintf(want, sizeof want, " %lu\n", netns_inode());
    unsigned count = 0;
    DIR *d = opendir(NET_DIR);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "slot-", 5) != 0)
            continue;
        char path[300], text[96];
        snprintf(path, sizeof path, NET_DIR "/%s", e->d_name);
        if (abx__read_small_file(path, text, sizeof text) == 0 && strstr(text, want))
            count++;
    }
    if (d)
        closedir(d);
    return count;
}

unsigned abx__netf_pool_used(void)
{
    unsigned count = 0;
    DIR *d = opendir(NET_DIR);
    for (struct dirent *e; d && (e = readdir(d));)
        count += strncmp(e->d_name, "slot-", 5) == 0;
    if (d)
        closedir(d);
    return count;
}

/* The host-wide lock over the table's making and removal. -1 without. */
static int table_lock(void)
{
    int fd = open(NET_DIR "/table.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- rtnetlink ---------------------------------------------------------------- */

/* Sends one request and waits for its acknowledgement; -errno. */
static int nl_request(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
    static atomic_uint seq_counter;
    unsigned seq = (unsigned)time(NULL) + atomic_fetch_add(&seq_counter, 1);
    nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = seq;
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    char buf[8192];
    ssize_t got = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (got < 0)
        return -errno;
    return mnl_cb_run(buf, (size_t)got, seq, mnl_socket_get_portid(nl), NULL, NULL) < 0 ? -errno : 0;
}

static struct mnl_socket *nl_open(void)
{
    struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
    if (nl && mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
        mnl_socket_close(nl);
        return NULL;
    }
    return nl;
}

/* host_name here, its peer eth0 made directly in the namespace netns_fd. */
static int veth_create(struct mnl_socket *nl, const char *host_name, int netns_fd)
{
    char buf[1024];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof *ifm);
    ifm->ifi_family = AF_UNSPEC;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, host_name);
    struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
    struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
    struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
    memset(mnl_nlmsg_get_payload_tail(nlh), 0, sizeof(struct ifinfomsg)); /* the peer's own ifinfomsg */
    nlh->nlmsg_len += MNL_ALIGN(sizeof(struct ifinfomsg));
    mnl_attr_put_strz(nlh, IFLA_IFNAME, "eth0");
    mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)netns_fd);
    mnl_attr_nest_end(nlh, peer);
    mnl_attr_nest_end(nlh, data);
    mnl_attr_nest_end(nlh, linkinfo);
    return nl_request(nl, nlh);
}

static int link_del(struct mnl_socket *nl, const char *name)
{
    char buf[512];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_DELLINK;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof *ifm);
    ifm->ifi_family = AF_UNSPEC;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    return nl_request(nl, nlh);
}

static int addr_add(struct mnl_socket *nl, unsigned index, struct in_addr a, unsigned prefix)
{
    char buf[512];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWADDR;
    nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof *ifa);
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = (unsigned char)prefix;
    ifa->ifa_index = index;
    mnl_attr_put(nlh, IFA_LOCAL, sizeof a, &a);
    mnl_attr_put(nlh, IFA_ADDRESS, sizeof a, &a);
    return nl_request(nl, nlh);
}

static int link_up(struct mnl_socket *nl, unsigned index)
{
    char buf[512];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof *ifm);
    ifm->ifi_family = AF_UNSPEC;
    ifm->ifi_index = (int)index;
    ifm->ifi_flags = IFF_UP;
    ifm->ifi_change = IFF_UP;
    return nl_request(nl, nlh);
}

static int route_default(struct mnl_socket *nl, unsigned index, struct in_addr gw)
{
    char buf[512];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
    struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof *rtm);
    rtm->rtm_family = AF_INET;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_BOOT;
    rtm->rtm_scope = RT_SCOPE_UNIVERSE;
    rtm->rtm_type = RTN_UNICAST;
    mnl_attr_put(nlh, RTA_GATEWAY, sizeof gw, &gw);
    mnl_attr_put_u32(nlh, RTA_OIF, index);
    return nl_request(nl, nlh);
}

/* The sandbox's side, from a thread that joins its network namespace. */
typedef struct inside_job {
    int netns_fd;
    struct in_addr address, gateway;
    int err; /* errno of the first failure; 0 */
} inside_job;

static void *inside_main(void *arg)
{
    inside_job *j = arg;
    if (setns(j->netns_fd, CLONE_NEWNET) < 0) {
        j->err = errno;
        return NULL;
    }
    struct mnl_socket *nl = nl_open();
    unsigned index = if_nametoindex("eth0");
    int rc = !nl ? -errno : index == 0 ? -ENODEV : 0;
    if (rc == 0)
        rc = addr_add(nl, index, j->address, 30);
    if (rc == 0)
        rc = link_up(nl, index);
    if (rc == 0)
        rc = route_default(nl, index, j->gateway);
    if (nl)
        mnl_socket_close(nl);
    j->err = -rc;
    return NULL;
}

int abx__netf_links_up(const abx_net_slot *n, pid_t init_pid, abx_error **err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)init_pid);
    int netns_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0)
        return abx__error_errno(err, ABX_EJAIL, errno, "network: the sandbox's network namespace");
    struct mnl_socket *nl = nl_open();
    int rc = nl ? veth_create(nl, n->iface, netns_fd) : -errno;
    const char *step = "network: making the interface pair";
    unsigned index = rc == 0 ? if_nametoindex(n->iface) : 0;
    if (rc == 0 && (step = "network: addressing the host side",
                    rc = index ? addr_add(nl, index, n->gateway, 30) : -ENODEV) == 0)
        rc = (step = "network: raising the host side", link_up(nl, index));
    if (nl)
        mnl_socket_close(nl);
    if (rc == 0) {
        inside_job j = {.netns_fd = netns_fd, .address = n->address, .gateway = n->gateway};
        pthread_t t;
        step = "network: addressing the sandbox side";
        rc = pthread_create(&t, NULL, inside_main, &j) == 0 ? 0 : -EAGAIN;
        if (rc == 0) {
            pthread_join(t, NULL);
            rc = -j.err;
        }
    }
    close(netns_fd);
    if (rc < 0)
        return abx__error_errno(err, -rc == EPERM ? ABX_EPERM : ABX_EJAIL, -rc, step);
    return 0;
}

static void links_down(const char *iface)
{
    struct mnl_socket *nl = nl_open();
    if (nl) {
        link_del(nl, iface); /* its peer goes with it (or already went with the namespace) */
        mnl_socket_close(nl);
    }
}

/* ---- the filter ------------------------------------------------------------ */

/* The set never4 (made if missing) with the pool and netpolicy.h's IPv4
 * never ranges: refused before any policy rule. */
static int never_script(abx_buf *b, const char *pool)
{
    appendf(b,
            "add set inet abx never4 { type ipv4_addr; flags interval; auto-merge; }\n"
            "add element inet abx never4 { %s",
            pool);
    for (size_t i = 0; abx__net_never_range(i); i++)
        if (!strchr(abx__net_never_range(i), ':'))
            appendf(b, ", %s", abx__net_never_range(i));
    return appendf(b, " }\n");
}

static int ensure_table(struct nft_ctx *c, const char *pool, abx_error **err)
{
    abx_buf b;
    abx__buf_init(&b, 64 << 10);
    if (nft.run(c, "list table inet abx") == 0) {
        /* made by a sandbox of another pool (or an older abx): this pool's
         * sandboxes are closed to each other too */
        appendf(&b, "add element inet abx forbidden4 { %s }\n", pool);
        int rc = never_script(&b, pool) < 0 || !b.data
                     ? abx__error_set(err, ABX_ENOMEM, "network: filter script")
                     : nft_script(c, b.data, err);
        abx__buf_free(&b);
        return rc;
    }
    appendf(
        &b,
        "add table inet abx\n"
        "add set inet abx forbidden4 { type ipv4_addr; flags interval; auto-merge; }\n"
        "add map inet abx out_by_if { type ifname : verdict; }\n"
        "add map inet abx in_by_if { type ifname : verdict; }\n"
        "add chain inet abx forward { type filter hook forward priority filter - 1; policy accept; }\n"
        "add chain inet abx input { type filter hook input priority filter - 1; policy accept; }\n"
        "add chain inet abx postrouting { type nat hook postrouting priority srcnat + 1; policy accept; }\n"
        "add rule inet abx forward iifname vmap @out_by_if\n"
        "add rule inet abx forward iifname \"abxs*\" drop\n"
        "add rule inet abx forward oifname \"abxs*\" ct state established,related accept\n"
        "add rule inet abx forward oifname \"abxs*\" drop\n"
        "add rule inet abx input iifname vmap @in_by_if\n"
        "add rule inet abx input iifname \"abxs*\" drop\n");
    appendf(&b, "add rule inet abx postrouting ip saddr %s oifname != \"abxs*\" masquerade\n", pool);
    size_t count;
    const char *const *ranges = abx__net_forbidden_ranges(&count);
    appendf(&b, "add element inet abx forbidden4 { ");
    for (size_t i = 0, first = 1; i < count; i++)
        if (!strchr(ranges[i], ':')) {
            appendf(&b, "%s%s", first ? "" : ", ", ranges[i]);
            first = 0;
        }
    /* the pool: other sandboxes, whatever range it was given */
    appendf(&b, ", %s }\n", pool);
    int rc = never_script(&b, pool);
    rc = rc < 0 || !b.data ? abx__error_set(err, ABX_ENOMEM, "network: filter script")
                           : nft_script(c, b.data, err);
    abx__buf_free(&b);
    if (rc == 0 && abx__write_file_at(AT_FDCWD, "/proc/sys/net/ipv4/ip_forward", "1") < 0)
        rc = abx__error_errno(err, ABX_EJAIL, errno, "network: turning on IPv4 forwarding");
    return rc;
}

/* Appends "add element" for the IPv4 CIDRs of list to set_slot (nothing when none). */
static int add_cidrs(abx_buf *b, json_t *list, const char *set, unsigned slot)
{
    size_t i;
    json_t *v;
    bool any = false;
    json_array_foreach(list, i, v)
    {
        abx_net_rule r;
        if (abx__net_rule_parse(json_string_value(v), &r, NULL) < 0 || r.kind != ABX_NET_CIDR4)
            continue;
        char text[64];
        abx__net_rule_format(&r, text, sizeof text);
        int rc =
            any ? appendf(b, ", %s", text) : appendf(b, "add element inet abx %s_%u { %s", set, slot, text);
        if (rc < 0)
            return rc;
        any = true;
    }
    return any ? appendf(b, " }\n") : 0;
}

#define REJECT "reject with icmpx type admin-prohibited"

/* The policy part of sb_N and its sets: flushed and written again. */
static int policy_script(const abx_net_slot *n, json_t *policy, abx_buf *b)
{
    unsigned s = n->slot;
    const char *mode = abx__net_policy_mode(policy);
    char addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &n->address, addr, sizeof addr);
    int rc = appendf(b,
                     "add counter inet abx refused_%u\n"
                     "flush chain inet abx sb_%u\nflush set inet abx a4_%u\nflush set inet abx d4_%u\n"
                     "flush set inet abx dn4_%u\nflush set inet abx ok4_%u\n",
                     s, s, s, s, s, s);
    rc = rc < 0 ? rc : add_cidrs(b, json_object_get(policy, "allow_out"), "a4", s);
    rc = rc < 0 ? rc : add_cidrs(b, json_object_get(policy, "deny_out"), "d4", s);
    if (rc < 0)
        return rc;
    /* every refusal is counted in refused_N (abx__netf_counters); egress
     * refusals go through deny_N, which also logs them (net_denials.h) */
    char last[96] = "accept";
    if (strcmp(mode, "internet") != 0)
        snprintf(last, sizeof last, "jump deny_%u", s);
    if (strcmp(mode, "none") == 0)
        return appendf(b, "add rule inet abx sb_%u jump deny_%u\n", s, s);
    return appendf(b,
                   "add rule inet abx sb_%u ct state established,related accept\n"
                   "add rule inet abx sb_%u meta nfproto != ipv4 counter name refused_%u drop\n"
                   "add rule inet abx sb_%u ip saddr != %s counter name refused_%u drop\n"
                   "add rule inet abx sb_%u meta l4proto { tcp, udp } th dport { 53, 853 } jump deny_%u\n"
                   "add rule inet abx sb_%u ip daddr @never4 jump deny_%u\n"
                   "add rule inet abx sb_%u ip daddr @a4_%u accept\n"
                   "add rule inet abx sb_%u ip daddr @dn4_%u jump deny_%u\n"
                   "add rule inet abx sb_%u ip daddr @ok4_%u accept\n"
                   "add rule inet abx sb_%u ip daddr @d4_%u jump deny_%u\n"
                   "add rule inet abx sb_%u ip daddr @forbidden4 jump deny_%u\n"
                   "add rule inet abx sb_%u %s\n",
                   s, s, s, s, addr, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, last);
}

/* deny_N: counts a refused packet, logs its first bytes to the slot's
 * nflog group (at most DENIAL_LOG_RATE; without log, not at all: a kernel
 * without nfnetlink_log), and refuses it. */
#define DENIAL_LOG_RATE "limit rate 5/second burst 10 packets"
static int deny_chain(abx_buf *b, unsigned s, bool log)
{
    int rc = appendf(b, "add chain inet abx deny_%u\nadd rule inet abx deny_%u counter name refused_%u\n", s,
                     s, s);
    if (rc == 0 && log)
        rc = appendf(b, "add rule inet abx deny_%u " DENIAL_LOG_RATE " log group %u\n", s,
                     ABX_DENIAL_GROUP_BASE + s);
    return rc < 0 ? rc : appendf(b, "add rule inet abx deny_%u " REJECT "\n", s);
}

static int sandbox_objects_try(struct nft_ctx *c, const abx_net_slot *n, json_t *policy, bool log,
                               abx_error **err);

/* The sandbox's sets and chains, its denials logged where the kernel can
 * (one transaction: a kernel that refuses the log statement gets the
 * same objects without it). */
static int sandbox_objects(struct nft_ctx *c, const abx_net_slot *n, json_t *policy, abx_error **err)
{
    abx_error *with_log = NULL;
    int rc = sandbox_objects_try(c, n, policy, true, &with_log);
    if (rc == -ABX_EJAIL) { /* the filter refused the script: again, without the log statement */
        abx_error_free(with_log);
        return sandbox_objects_try(c, n, policy, false, err);
    }
    if (rc < 0 && err)
        *err = with_log;
    else
        abx_error_free(with_log);
    return rc;
}

static int sandbox_objects_try(struct nft_ctx *c, const abx_net_slot *n, json_t *policy, bool log,
                               abx_error **err)
{
    unsigned s = n->slot;
    char gw[INET_ADDRSTRLEN], addr[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &n->gateway, gw, sizeof gw);
    inet_ntop(AF_INET, &n->address, addr, sizeof addr);
    abx_buf b;
    abx__buf_init(&b, NFT_SCRIPT_MAX);
    int rc = appendf(&b,
                     "add set inet abx a4_%u { type ipv4_addr; flags interval; auto-merge; }\n"
                     "add set inet abx d4_%u { type ipv4_addr; flags interval; auto-merge; }\n"
                     "add set inet abx dn4_%u { type ipv4_addr; flags timeout; size 65536; }\n"
                     "add set inet abx ok4_%u { type ipv4_addr; flags timeout; size 65536; }\n"
                     "add chain inet abx sb_%u\nadd chain inet abx in_%u\n"
                     "add rule inet abx in_%u ip saddr %s ip daddr %s udp dport 53 accept\n"
                     "add rule inet abx in_%u ct state established,related accept\n"
                     "add counter inet abx refused_%u\n"
                     "add rule inet abx in_%u counter name refused_%u " REJECT "\n",
                     s, s, s, s, s, s, s, addr, gw, s, s, s, s);
    if (rc == 0)
        rc = deny_chain(&b, s, log);
    if (rc == 0)
        rc = policy_script(n, policy, &b);
    if (rc == 0)
        rc = appendf(&b,
                     "add element inet abx out_by_if { \"%s\" : jump sb_%u }\nadd element inet abx in_by_if "
                     "{ \"%s\" : jump in_%u }\n",
                     n->iface, s, n->iface, s);
    rc = rc < 0 ? abx__error_set(err, ABX_ETOOBIG, "network: the policy is too large")
                : nft_script(c, b.data, err);
    abx__buf_free(&b);
    return rc;
}

/* Removes slot's objects; the table too when no sandbox of this namespace is left. */
static void remove_objects(struct nft_ctx *c, const char *iface, unsigned slot)
{
    char script[1024];
    snprintf(script, sizeof script,
             "delete element inet abx out_by_if { \"%s\" }\ndelete element inet abx in_by_if { \"%s\" }\n",
             iface, iface);
    nft.run(c, script);
    snprintf(script, sizeof script,
             "delete chain inet abx sb_%u\ndelete chain inet abx in_%u\ndelete chain inet abx deny_%u\n"
             "delete set inet abx a4_%u\ndelete set inet abx d4_%u\ndelete set inet abx dn4_%u\n"
             "delete set inet abx ok4_%u\ndelete counter inet abx refused_%u\n",
             slot, slot, slot, slot, slot, slot, slot, slot);
    nft.run(c, script);
}

void abx__netf_ctx_free(struct nft_ctx *c)
{
    if (c)
        nft.ctx_free(c);
}

int abx__netf_install(struct nft_ctx *c, const abx_net_slot *n, json_t *policy, abx_error **err)
{
    int lock = table_lock();
    int rc = lock < 0 ? abx__error_errno(err, ABX_EIO, errno, "network: the filter lock")
                      : ensure_table(c, n->pool, err);
    if (rc == 0)
        rc = sandbox_objects(c, n, policy, err);
    if (lock >= 0)
        close(lock);
    return rc;
}

int abx__netf_policy(struct nft_ctx *c, const abx_net_slot *n, json_t *policy, abx_error **err)
{
    abx_buf b;
    abx__buf_init(&b, NFT_SCRIPT_MAX);
    int rc = policy_script(n, policy, &b);
    rc = rc < 0 ? abx__error_set(err, ABX_ETOOBIG, "network: the policy is too large")
                : nft_script(c, b.data, err);
    abx__buf_free(&b);
    return rc;
}

void abx__netf_admit(struct nft_ctx *c, unsigned slot, const unsigned char a[4], unsigned ttl, bool denied)
{
    char script[160];
    snprintf(script, sizeof script, "add element inet abx %s_%u { %u.%u.%u.%u timeout %us }\n",
             denied ? "dn4" : "ok4", slot, a[0], a[1], a[2], a[3],
             ttl < 5      ? 5
             : ttl > 3600 ? 3600
                          : ttl);
    nft.run(c, script);
}

int abx__netf_refused(struct nft_ctx *c, unsigned slot, unsigned long long *packets)
{
    *packets = 0;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "list counter inet abx refused_%u", slot);
    if (!c || nft.run(c, cmd) != 0)
        return -1;
    const char *text = nft.output_text(c), *at = text ? strstr(text, "packets ") : NULL;
    if (!at)
        return -1;
    *packets = strtoull(at + 8, NULL, 10);
    return 0;
}

/* IFLA_STATS64 of the link: its attribute callback. */
static int link_stats_attr(const struct nlattr *a, void *data)
{
    if (mnl_attr_get_type(a) == IFLA_STATS64 &&
        mnl_attr_get_payload_len(a) >= sizeof(struct rtnl_link_stats64))
        memcpy(data, mnl_attr_get_payload(a), sizeof(struct rtnl_link_stats64));
    return MNL_CB_OK;
}

static int link_stats_msg(const struct nlmsghdr *nlh, void *data)
{
    return mnl_attr_parse(nlh, sizeof(struct ifinfomsg), link_stats_attr, data);
}

int abx__netf_link_stats(const char *iface, struct rtnl_link_stats64 *out)
{
    memset(out, 0, sizeof *out);
    struct mnl_socket *nl = nl_open();
    if (!nl)
        return -1;
    char buf[8192];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    unsigned seq = (unsigned)time(NULL);
    nlh->nlmsg_seq = seq;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof *ifm);
    ifm->ifi_family = AF_UNSPEC;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, iface);
    int rc = -1;
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) >= 0) {
        ssize_t got = mnl_socket_recvfrom(nl, buf, sizeof buf);
        if (got > 0 && mnl_cb_run(buf, (size_t)got, seq, mnl_socket_get_portid(nl), link_stats_msg, out) >= 0)
            rc = 0;
    }
    mnl_socket_close(nl);
    return rc;
}

void abx__netf_teardown(struct nft_ctx *c, const char *iface, unsigned slot)
{
    int lock = table_lock();
    if (c)
        remove_objects(c, iface, slot);
    abx__netf_release(slot);
    if (c && lock >= 0 && slots_here() == 0)
        nft.run(c, "delete table inet abx");
    if (lock >= 0)
        close(lock);
    links_down(iface);
}

/* Whether NET_DIR/slot-N is still held by sandbox id: a dead sandbox's
 * net.json may outlive its own release of the slot (its shim killed
 * between the two), and the slot be another sandbox's by now. */
static bool slot_held_by(unsigned slot, const char *id)
{
    char path[64], text[160];
    snprintf(path, sizeof path, NET_DIR "/slot-%u", slot);
    size_t n = strlen(id);
    return n > 0 && abx__read_small_file(path, text, sizeof text) == 0 && strncmp(text, id, n) == 0 &&
           text[n] == ' ';
}

void abx__net_reap(const char *state_dir)
{
    char path[600], text[512];
    snprintf(path, sizeof path, "%s/net.json", state_dir);
    if (abx__read_small_file(path, text, sizeof text) < 0)
        return;
    json_t *doc = json_loads(text, 0, NULL);
    json_t *slot = json_object_get(doc, "slot");
    const char *iface = json_string_value(json_object_get(doc, "interface"));
    /* whose it is: the state directory's own name (the reaper's to know),
     * which what net.json records must not contradict */
    const char *base = strrchr(state_dir, '/'), *id = base ? base + 1 : state_dir;
    const char *recorded = json_string_value(json_object_get(doc, "id"));
    if ((!recorded || strcmp(recorded, id) == 0) && json_is_integer(slot) && json_integer_value(slot) >= 0 &&
        json_integer_value(slot) < 65536 && iface && strncmp(iface, "abxs", 4) == 0 &&
        slot_held_by((unsigned)json_integer_value(slot), id)) {
        struct nft_ctx *c = abx__netf_ctx();
        abx__netf_teardown(c, iface, (unsigned)json_integer_value(slot));
        abx__netf_ctx_free(c);
    }
    json_decref(doc);
    unlink(path);
}
