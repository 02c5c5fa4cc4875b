/* net_dns.c: a sandbox's own DNS resolver (net.h), one thread per sandbox.
 *
 * Listens on the sandbox's gateway, port 53 (UDP): the sandbox's
 * resolv.conf names it, and the packet filter lets DNS reach nothing else.
 * For each question (one per message; DNS messages are parsed and written
 * by ldns):
 *   - a name the policy does not allow is answered REFUSED (in internet
 *     mode, a denied name is still looked up, and its addresses go to the
 *     filter's deny set, so a raw connection to them fails too);
 *   - an allowed name is forwarded to the upstream servers (ABX_NET_DNS,
 *     comma-separated, else the nameservers of the host's /etc/resolv.conf);
 *     from the answer, IPv4 addresses in forbidden ranges (unless an allowed
 *     CIDR names them: the rebinding guard) and every IPv6 address (the
 *     sandbox has no IPv6 route) are removed, the rest admitted to the
 *     filter for their TTL, and the answer relayed.
 * Bounds: messages of at most 4096 bytes, 2 s per upstream, one question at
 * a time (a sandbox cannot make the resolver hold more).
 */
#include "net.h"
#include "error_internal.h"
#include "ldns_api.h"
#include "netpolicy.h"
#include "sysutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define DNS_MSG_MAX 4096
#define UPSTREAM_MAX 3
#define UPSTREAM_WAIT_MS 2000

typedef struct compiled_policy {
    char mode[16];
    abx_net_rule *allow, *deny;
    size_t nallow, ndeny;
} compiled_policy;

struct abx_dns {
    int fd, stop_fd;
    pthread_t thread;
    pthread_mutex_t mu;
    compiled_policy policy; /* lock: mu */
    bool relearn;           /* the deny list changed: look its names up again (lock: mu) */
    int wake_fd;            /* an eventfd: a new policy */
    struct sockaddr_storage upstream[UPSTREAM_MAX];
    socklen_t upstream_len[UPSTREAM_MAX];
    int nupstream;
    abx_dns_admit_fn admit;
    void *ctx;
};

/* ---- the policy, parsed once per change --------------------------------------- */

static abx_net_rule *compile_list(json_t *list, size_t *n)
{
    size_t count = json_array_size(list), i;
    abx_net_rule *rules = calloc(count ? count : 1, sizeof *rules);
    json_t *v;
    *n = 0;
    json_array_foreach(list, i, v) if (rules && abx__net_rule_parse(json_string_value(v), &rules[*n], NULL) ==
                                                    0)(*n)++;
    return rules;
}

static void policy_clear(compiled_policy *p)
{
    free(p->allow);
    free(p->deny);
    memset(p, 0, sizeof *p);
}

static void policy_compile(compiled_policy *p, json_t *doc)
{
    policy_clear(p);
    snprintf(p->mode, sizeof p->mode, "%s", abx__net_policy_mode(doc));
    p->allow = compile_list(json_object_get(doc, "allow_out"), &p->nallow);
    p->deny = compile_list(json_object_get(doc, "deny_out"), &p->ndeny);
}

static bool name_listed(const abx_net_rule *rules, size_t n, const char *qname)
{
    for (size_t i = 0; i < n; i++)
        if (abx__net_name_matches(&rules[i], qname))
            return true;
    return false;
}

static bool cidr_listed(const abx_net_rule *rules, size_t n, const unsigned char a[4])
{
    for (size_t i = 0; i < n; i++)
        if (abx__net_cidr_contains(&rules[i], AF_INET, a))
            return true;
    return false;
}

typedef enum { ANSWER, REFUSE, REFUSE_AND_LEARN } verdict;

static verdict decide(const compiled_policy *p, const char *qname)
{
    if (strcmp(p->mode, "none") == 0)
        return REFUSE;
    if (name_listed(p->deny, p->ndeny, qname))
        return strcmp(p->mode, "internet") == 0 ? REFUSE_AND_LEARN : REFUSE;
    if (strcmp(p->mode, "internet") == 0 || name_listed(p->allow, p->nallow, qname))
        return ANSWER;
    return REFUSE;
}

/* ---- upstream ------------------------------------------------------------- */

static void add_upstream(abx_dns *d, const char *text)
{
    if (d->nupstream >= UPSTREAM_MAX)
        return;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&d->upstream[d->nupstream];
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&d->upstream[d->nupstream];
    memset(&d->upstream[d->nupstream], 0, sizeof d->upstream[0]);
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(53);
        d->upstream_len[d->nupstream++] = sizeof *v4;
    } else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(53);
        d->upstream_len[d->nupstream++] = sizeof *v6;
    }
}

static void find_upstreams(abx_dns *d)
{
    const char *env = getenv("ABX_NET_DNS");
    char text[8192];
    if (env && *env) {
        snprintf(text, sizeof text, "%s", env);
        for (char *save = NULL, *t = strtok_r(text, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
            add_upstream(d, t);
        return;
    }
    if (abx__read_small_file("/etc/resolv.conf", text, sizeof text) < 0)
        return;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char addr[64];
        if (sscanf(line, " nameserver %63s", addr) == 1)
            add_upstream(d, addr);
    }
}

/* Asks the upstream servers in turn; the answer's length, or -1. */
static ssize_t ask_upstream(const abx_dns *d, const uint8_t *q, size_t qlen, uint8_t *answer)
{
    for (int i = 0; i < d->nupstream; i++) {
        int fd = socket(d->upstream[i].ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        ssize_t got = -1;
        if (connect(fd, (const struct sockaddr *)&d->upstream[i], d->upstream_len[i]) == 0 &&
            send(fd, q, qlen, 0) == (ssize_t)qlen) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, UPSTREAM_WAIT_MS) == 1)
                got = recv(fd, answer, DNS_MSG_MAX, 0);
        }
        close(fd);
        /* the same id as the question, or it is not the answer */
        if (got >= 12 && answer[0] == q[0] && answer[1] == q[1])
            return got;
    }
    return -1;
}

/* ---- one question ---------------------------------------------------------- */

/* The question's name, lower case, without the final dot; false if unusable. */
static bool question_name(ldns_pkt *q, char out[ABX_NET_NAME_MAX + 2])
{
    if (ldns_pkt_qr(q) || ldns_pkt_qdcount(q) != 1)
        return false;
    ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_question(q), 0);
    char *text = rr ? ldns_rdf2str(ldns_rr_owner(rr)) : NULL;
    if (!text)
        return false;
    size_t n = strlen(text);
    if (n && text[n - 1] == '.')
        n--;
    bool ok = n <= ABX_NET_NAME_MAX;
    for (size_t i = 0; ok && i < n; i++)
        out[i] = (char)tolower((unsigned char)text[i]);
    if (ok)
        out[n] = '\0';
    free(text);
    return ok;
}

/* Keeps what the sandbox may have of the answer; admits the addresses. */
static void filter_answer(abx_dns *d, ldns_pkt *r, bool denied)
{
    ldns_rr_list *old = ldns_pkt_answer(r), *kept = ldns_rr_list_new();
    for (size_t i = 0; kept && i < ldns_rr_list_rr_count(old); i++) {
        ldns_rr *rr = ldns_rr_list_rr(old, i);
        ldns_rr_type t = ldns_rr_get_type(rr);
        if (t == LDNS_RR_TYPE_AAAA)
            continue;
        if (t == LDNS_RR_TYPE_A) {
            ldns_rdf *rd = ldns_rr_rdf(rr, 0);
            if (!rd || ldns_rdf_size(rd) != 4)
                continue;
            const unsigned char *a = ldns_rdf_data(rd);
            if (denied) {
                d->admit(d->ctx, a, ldns_rr_ttl(rr), true);
                continue;
            }
            pthread_mutex_lock(&d->mu);
            bool opened = cidr_listed(d->policy.allow, d->policy.nallow, a);
            bool listing = strcmp(d->policy.mode, "allowlist") == 0;
            pthread_mutex_unlock(&d->mu);
            if ((abx__net_addr_forbidden(AF_INET, a) && !opened) || abx__net_addr_never(AF_INET, a))
                continue; /* the rebinding guard */
            if (listing)  /* internet mode admits nothing: its deny list holds for every name */
                d->admit(d->ctx, a, ldns_rr_ttl(rr), false);
        }
        ldns_rr *copy = ldns_rr_clone(rr);
        if (copy && !ldns_rr_list_push_rr(kept, copy))
            ldns_rr_free(copy);
    }
    if (!kept)
        kept = ldns_rr_list_new();
    ldns_pkt_set_answer(r, kept);
    ldns_pkt_set_ancount(r, (uint16_t)ldns_rr_list_rr_count(kept));
    ldns_rr_list_deep_free(old);
    /* glue in the other sections could carry addresses too: none is relayed */
    ldns_rr_list_deep_free(ldns_pkt_authority(r));
    ldns_rr_list_deep_free(ldns_pkt_additional(r));
    ldns_pkt_set_authority(r, ldns_rr_list_new());
    ldns_pkt_set_additional(r, ldns_rr_list_new());
    ldns_pkt_set_nscount(r, 0);
    ldns_pkt_set_arcount(r, 0);
}

static void send_pkt(int fd, ldns_pkt *p, const struct sockaddr_storage *to, socklen_t tolen)
{
    uint8_t *wire = NULL;
    size_t size = 0;
    if (ldns_pkt2wire(&wire, p, &size) == LDNS_STATUS_OK && size <= DNS_MSG_MAX)
        (void)sendto(fd, wire, size, 0, (const struct sockaddr *)to, tolen);
    free(wire);
}

static void answer_one(abx_dns *d, const uint8_t *msg, size_t len, const struct sockaddr_storage *from,
                       socklen_t fromlen)
{
    ldns_pkt *q = NULL;
    char qname[ABX_NET_NAME_MAX + 2];
    if (ldns_wire2pkt(&q, msg, len) != LDNS_STATUS_OK)
        return;
    if (!question_name(q, qname)) {
        ldns_pkt_free(q);
        return;
    }
    pthread_mutex_lock(&d->mu);
    verdict v = decide(&d->policy, qname);
    pthread_mutex_unlock(&d->mu);
    uint8_t answer[DNS_MSG_MAX];
    ssize_t alen = v == REFUSE ? -1 : ask_upstream(d, msg, len, answer);
    ldns_pkt *r = NULL;
    if (alen > 0 && ldns_wire2pkt(&r, answer, (size_t)alen) == LDNS_STATUS_OK) {
        filter_answer(d, r, v == REFUSE_AND_LEARN);
        if (v == ANSWER)
            send_pkt(d->fd, r, from, fromlen);
        ldns_pkt_free(r);
        if (v == ANSWER) {
            ldns_pkt_free(q);
            return;
        }
    }
    /* refused, or no upstream answered */
    ldns_pkt_set_qr(q, true);
    ldns_pkt_set_ra(q, true);
    ldns_pkt_set_rcode(q, v == ANSWER ? LDNS_RCODE_SERVFAIL : LDNS_RCODE_REFUSED);
    send_pkt(d->fd, q, from, fromlen);
    ldns_pkt_free(q);
}

/* A question for name's A records, as a sandbox would ask it. */
static size_t make_question(const char *name, uint8_t *out, size_t cap)
{
    ldns_pkt *q = NULL;
    uint8_t *wire = NULL;
    size_t size = 0;
    if (ldns_pkt_query_new_frm_str(&q, name, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, LDNS_RD) != LDNS_STATUS_OK)
        return 0;
    /* the id from the kernel: ldns's random ids would have libcrypto keep
     * state for this thread that its end does not free */
    uint16_t id = 0;
    if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
        ldns_pkt_free(q);
        return 0;
    }
    ldns_pkt_set_id(q, id);
    if (ldns_pkt2wire(&wire, q, &size) != LDNS_STATUS_OK || size > cap)
        size = 0;
    else
        memcpy(out, wire, size);
    free(wire);
    ldns_pkt_free(q);
    return size;
}

/* In internet mode, the addresses of the names the deny list names go to
 * the filter's deny set at once, so that a connection made without asking
 * the resolver fails too (a wildcard's names cannot be listed: those are
 * learned when asked). */
static void learn_denied(abx_dns *d)
{
    char names[64][ABX_NET_NAME_MAX + 1];
    size_t n = 0;
    pthread_mutex_lock(&d->mu);
    if (strcmp(d->policy.mode, "internet") == 0)
        for (size_t i = 0; i < d->policy.ndeny && n < 64; i++)
            if (d->policy.deny[i].kind == ABX_NET_NAME)
                snprintf(names[n++], sizeof names[0], "%s", d->policy.deny[i].name);
    d->relearn = false;
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < n; i++) {
        uint8_t q[512], answer[DNS_MSG_MAX];
        size_t qlen = make_question(names[i], q, sizeof q);
        ssize_t alen = qlen ? ask_upstream(d, q, qlen, answer) : -1;
        ldns_pkt *r = NULL;
        if (alen > 0 && ldns_wire2pkt(&r, answer, (size_t)alen) == LDNS_STATUS_OK)
            filter_answer(d, r, true);
        ldns_pkt_free(r);
    }
}

static void *dns_main(void *arg)
{
    abx_dns *d = arg;
    uint8_t msg[DNS_MSG_MAX];
    for (;;) {
        pthread_mutex_lock(&d->mu);
        bool relearn = d->relearn;
        pthread_mutex_unlock(&d->mu);
        if (relearn)
            learn_denied(d);
        struct pollfd p[3] = {{.fd = d->fd, .events = POLLIN},
                              {.fd = d->stop_fd, .events = POLLIN},
                              {.fd = d->wake_fd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0)
            continue;
        if (p[1].revents)
            return NULL;
        if (p[2].revents) {
            uint64_t v;
            (void)read(d->wake_fd, &v, sizeof v);
        }
        struct sockaddr_storage from;
        socklen_t fromlen = sizeof from;
        ssize_t n = recvfrom(d->fd, msg, sizeof msg, MSG_DONTWAIT, (struct sockaddr *)&from, &fromlen);
        if (n >= 12)
            answer_one(d, msg, (size_t)n, &from, fromlen);
    }
}

/* ---- the public part --------------------------------------------------------- */

int abx__dns_start(const char *gateway, json_t *policy, abx_dns_admit_fn admit, void *ctx, abx_dns **out,
                   abx_error **err)
{
    *out = NULL;
    if (!abx__ldns())
        return abx__error_set(err, ABX_EHOSTSUPPORT,
                              "network: the sandbox's resolver needs libldns (libldns3), which could not be "
                              "loaded");
    abx_dns *d = calloc(1, sizeof *d);
    if (!d)
        return abx__error_set(err, ABX_ENOMEM, "resolver");
    d->admit = admit;
    d->ctx = ctx;
    pthread_mutex_init(&d->mu, NULL);
    policy_compile(&d->policy, policy);
    find_upstreams(d);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
    inet_pton(AF_INET, gateway, &sa.sin_addr);
    d->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    d->stop_fd = eventfd(0, EFD_CLOEXEC);
    d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    d->relearn = true;
    int rc = 0;
    if (d->fd < 0 || d->stop_fd < 0 || d->wake_fd < 0 || bind(d->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        rc = abx__error_errno(err, ABX_EJAIL, errno, "network: the resolver on the gateway, port 53");
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (rc == 0 && pthread_create(&d->thread, NULL, dns_main, d) != 0)
        rc = abx__error_set(err, ABX_ESYS, "network: the resolver's thread");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc < 0) {
        if (d->fd >= 0)
            close(d->fd);
        if (d->stop_fd >= 0)
            close(d->stop_fd);
        if (d->wake_fd >= 0)
            close(d->wake_fd);
        policy_clear(&d->policy);
        pthread_mutex_destroy(&d->mu);
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

void abx__dns_set_policy(abx_dns *d, json_t *policy)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    policy_compile(&d->policy, policy);
    d->relearn = true;
    pthread_mutex_unlock(&d->mu);
    uint64_t one = 1;
    (void)write(d->wake_fd, &one, sizeof one);
}

void abx__dns_stop(abx_dns *d)
{
    if (!d)
        return;
    uint64_t one = 1;
    (void)write(d->stop_fd, &one, sizeof one);
    pthread_join(d->thread, NULL);
    close(d->fd);
    close(d->stop_fd);
    close(d->wake_fd);
    policy_clear(&d->policy);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
