/* fuzz-dns.c: a sandbox's resolver (runtime/net_dns.c), running for real
 * on a loopback address, between a client and an upstream server that
 * both speak the fuzz input. Needs root (port 53); skipped (77) otherwise.
 *
 * An input: a flags byte, a 16-bit length N, N bytes of query, then the
 * upstream's answer (its id set to the question's). Flags: bit 0 the
 * policy (allowlist or internet); bit 1 the query as raw bytes (the
 * resolver's query parsing) rather than a question abx builds for one of
 * four names and the type in the next byte. After each input the client
 * asks a name the policy refuses and waits for that answer (at most 5 s):
 * the resolver is still there and answers one question at a time.
 * Properties, for every reply to a built question: no authority or
 * additional records, no AAAA, and every A either public, or in the
 * allowed private CIDR (10.99.0.0/16), never a never-range address; every
 * address admitted to the filter the same.
 */
#include "net.h"
#include "netpolicy.h"

#include <arpa/inet.h>
#include <ldns/ldns.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static abx_dns *dns;
static int client = -1, upstream = -1;
static json_t *policies[2];
static int current = -1;
static pthread_mutex_t answer_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t answer[4096];
static size_t answer_len;
static pthread_t upstream_thread;
static unsigned long relayed, admitted_count; /* replies that carried records, addresses admitted */

static bool allowed_address(const unsigned char a[4])
{
    if (abx__net_addr_never(AF_INET, a))
        return false;
    return !abx__net_addr_forbidden(AF_INET, a) || (a[0] == 10 && a[1] == 99);
}

static void admitted(void *ctx, const unsigned char addr[4], unsigned ttl, bool denied)
{
    (void)ctx;
    (void)ttl;
    if (!denied && !allowed_address(addr))
        abort();
    admitted_count++;
}

/* The upstream: every question gets the current answer, with its id. */
static void *upstream_main(void *arg)
{
    (void)arg;
    uint8_t q[4096], out[4096];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(upstream, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return NULL;
        pthread_mutex_lock(&answer_mu);
        size_t len = answer_len;
        memcpy(out, answer, len);
        pthread_mutex_unlock(&answer_mu);
        if (len >= 2 && n >= 2)
            memcpy(out, q, 2);
        (void)sendto(upstream, out, len, 0, (struct sockaddr *)&from, fl);
    }
}

static int udp_bound(const char *addr, unsigned port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, addr, &sa.sin_addr);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        return -1;
    return fd;
}

static void stop(void)
{
    fprintf(stderr, "fuzz-dns: %lu replies with records checked, %lu addresses admitted\n", relayed,
            admitted_count);
    abx__dns_stop(dns);
    json_decref(policies[0]);
    json_decref(policies[1]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (geteuid() != 0) {
        fprintf(stderr, "fuzz-dns: needs root (the resolver binds port 53): skipped\n");
        exit(77);
    }
    char gw[32], up[32];
    unsigned x = (unsigned)getpid() % 250 + 1;
    snprintf(gw, sizeof gw, "127.53.%u.1", x);
    snprintf(up, sizeof up, "127.53.%u.2", x);
    setenv("ABX_NET_DNS", up, 1);
    upstream = udp_bound(up, 53);
    client = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const char *allow[] = {"a.test", "*.w.test", "198.51.100.0/24", "10.99.0.0/16", NULL};
    const char *deny[] = {"denied.test", NULL},
               *deny_all[] = {"ping.test", "denied.test", "203.0.113.0/24", NULL};
    const char *open[] = {"10.99.0.0/16", NULL};
    if (upstream < 0 || client < 0 ||
        abx__net_policy_build("allowlist", allow, deny, "none", &policies[0], NULL) < 0 ||
        abx__net_policy_build("internet", open, deny_all, "none", &policies[1], NULL) < 0 ||
        abx__dns_start(gw, policies[0], admitted, NULL, &dns, NULL) < 0 ||
        pthread_create(&upstream_thread, NULL, upstream_main, NULL) != 0)
        abort();
    current = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, gw, &sa.sin_addr);
    if (connect(client, (struct sockaddr *)&sa, sizeof sa) < 0)
        abort();
    atexit(stop);
    return 0;
}

/* A question abx builds: (1 byte) name and type. */
static size_t build_question(uint8_t sel, uint8_t type, uint16_t id, uint8_t *out, size_t cap)
{
    static const char *const names[] = {"a.test", "x.w.test", "other.test", "denied.test"};
    static const ldns_rr_type types[] = {LDNS_RR_TYPE_A,   LDNS_RR_TYPE_AAAA, LDNS_RR_TYPE_CNAME,
                                         LDNS_RR_TYPE_ANY, LDNS_RR_TYPE_TXT,  LDNS_RR_TYPE_NS};
    ldns_pkt *q = NULL;
    uint8_t *wire = NULL;
    size_t size = 0;
    if (ldns_pkt_query_new_frm_str(&q, names[sel % 4], types[type % 6], LDNS_RR_CLASS_IN, LDNS_RD) !=
        LDNS_STATUS_OK)
        abort();
    ldns_pkt_set_id(q, id);
    if (ldns_pkt2wire(&wire, q, &size) != LDNS_STATUS_OK || size > cap)
        abort();
    memcpy(out, wire, size);
    free(wire);
    ldns_pkt_free(q);
    return size;
}

static void check_reply(const uint8_t *m, size_t n)
{
    ldns_pkt *r = NULL;
    if (ldns_wire2pkt(&r, m, n) != LDNS_STATUS_OK)
        abort(); /* the resolver writes its replies with ldns */
    if (ldns_pkt_nscount(r) || ldns_pkt_arcount(r))
        abort();
    ldns_rr_list *an = ldns_pkt_answer(r);
    relayed += ldns_rr_list_rr_count(an) > 0;
    for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
        ldns_rr *rr = ldns_rr_list_rr(an, i);
        if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_AAAA)
            abort();
        ldns_rdf *rd = ldns_rr_rdf(rr, 0);
        if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_A && rd && ldns_rdf_size(rd) == 4 &&
            !allowed_address(ldns_rdf_data(rd)))
            abort();
    }
    ldns_pkt_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    uint8_t flags = data[0];
    size_t qlen = (size_t)data[1] << 8 | data[2];
    const uint8_t *rest = data + 3;
    size_t left = size - 3;
    if (qlen > left)
        qlen = left;
    int want = flags & 1;
    if (want != current) {
        abx__dns_set_policy(dns, policies[want]);
        current = want;
    }
    pthread_mutex_lock(&answer_mu);
    answer_len = left - qlen < sizeof answer ? left - qlen : sizeof answer;
    memcpy(answer, rest + qlen, answer_len);
    pthread_mutex_unlock(&answer_mu);
    uint8_t q[4096];
    size_t n;
    bool built = !(flags & 2);
    static uint16_t next_id = 1;
    uint16_t id = next_id++;
    if (built) {
        n = build_question(qlen ? rest[0] : 0, qlen > 1 ? rest[1] : 0, id, q, sizeof q);
    } else {
        n = qlen < sizeof q ? qlen : sizeof q;
        memcpy(q, rest, n);
        if (n >= 2)
            id = (uint16_t)(q[0] << 8 | q[1]);
    }
    uint8_t ping[512];
    uint16_t ping_id = (uint16_t)(id + 1) == 0 ? 2 : (uint16_t)(id + 1);
    size_t plen = 0;
    {
        ldns_pkt *p = NULL;
        uint8_t *wire = NULL;
        if (ldns_pkt_query_new_frm_str(&p, "ping.test", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, LDNS_RD) !=
                LDNS_STATUS_OK ||
            (ldns_pkt_set_id(p, ping_id), ldns_pkt2wire(&wire, p, &plen)) != LDNS_STATUS_OK)
            abort();
        memcpy(ping, wire, plen);
        free(wire);
        ldns_pkt_free(p);
    }
    if (send(client, q, n, 0) < 0 || send(client, ping, plen, 0) < 0)
        abort();
    for (;;) {
        struct pollfd p = {.fd = client, .events = POLLIN};
        if (poll(&p, 1, 5000) != 1)
            abort(); /* the resolver no longer answers */
        uint8_t m[8192];
        ssize_t got = recv(client, m, sizeof m, 0);
        if (got < 12)
            continue;
        if (got > 4096)
            abort();
        uint16_t rid = (uint16_t)(m[0] << 8 | m[1]);
        if (built && rid == id)
            check_reply(m, (size_t)got);
        if (rid == ping_id && got >= (ssize_t)plen)
            break;
    }
    return 0;
}
