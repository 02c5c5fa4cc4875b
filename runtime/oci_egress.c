/* oci_egress.c: an OCI container's egress policy under abx's sandbox
 * profile (annotations run.abx.network.allow_out / deny_out, the syntax of
 * abx's --allow-out and --deny-out: addresses, CIDRs and names, comma or
 * space separated).
 *
 * Owns the filter's rules: an nftables table in the container's own
 * network namespace (the engine's network stays the engine's), output
 * hook, loaded by the runtime before the container's process exists, in a
 * namespace whose owner the container cannot act for (its capabilities
 * lose CAP_NET_ADMIN: lib/oci.c). What passes: the loopback, replies on
 * connections made to the container, the allowed addresses (every
 * destination when the allow list is empty and a deny list is given); what
 * never passes: the denied ones, and abx's walls (this host, the cloud
 * metadata addresses: abx__net_never_range) unless... never. A name is
 * resolved here, once, by the host's resolver; its addresses in the ranges
 * abx never gives a name (private, link-local: abx__net_addr_forbidden)
 * are dropped from an allow list. Wildcards ("*.example.com") need abx's
 * own resolver and are refused.
 */
#include "oci_container.h"
#include "buf.h"
#include "error_internal.h"
#include "net_filter.h"
#include "netpolicy.h"
#include "sysutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define EGRESS_SCRIPT_MAX (1u << 20)

static int appendf(abx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int appendf(abx_buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= sizeof line ? -ABX_ETOOBIG : abx__buf_append_str(b, line);
}

typedef struct egress_sets {
    abx_buf v4, v6; /* comma-separated elements */
} egress_sets;

static int add_addr(egress_sets *s, int family, const unsigned char *addr, unsigned prefix)
{
    char text[INET6_ADDRSTRLEN];
    inet_ntop(family, addr, text, sizeof text);
    abx_buf *b = family == AF_INET ? &s->v4 : &s->v6;
    return appendf(b, "%s%s/%u", b->len ? ", " : "", text, prefix);
}

/* One list's entries into sets; names resolved (allow: without the forbidden ranges). */
static int fill(const char *list, bool allow, egress_sets *s, bool *any_name, abx_error **err)
{
    char copy[8192];
    if (strlen(list) >= sizeof copy)
        return abx__error_set(err, ABX_ETOOBIG, "run.abx.network lists are at most %zu characters",
                              sizeof copy - 1);
    snprintf(copy, sizeof copy, "%s", list);
    char *save = NULL;
    size_t count = 0;
    for (char *e = strtok_r(copy, ", \t\n", &save); e; e = strtok_r(NULL, ", \t\n", &save)) {
        if (++count > ABX_NET_MAX_RULES)
            return abx__error_set(err, ABX_ETOOBIG, "run.abx.network lists have at most %d entries",
                                  ABX_NET_MAX_RULES);
        abx_net_rule r;
        int rc = abx__net_rule_parse(e, &r, err);
        if (rc < 0)
            return rc;
        if (r.kind == ABX_NET_CIDR4 || r.kind == ABX_NET_CIDR6) {
            if ((rc = add_addr(s, r.kind == ABX_NET_CIDR4 ? AF_INET : AF_INET6, r.addr, r.prefix)) < 0)
                return abx__error_set(err, ABX_ETOOBIG, "run.abx.network: the lists are too long");
            continue;
        }
        if (r.kind == ABX_NET_WILDCARD)
            return abx__error_set(
                err, ABX_EINVAL,
                "run.abx.network: \"%s\": a wildcard needs abx's own resolver, which containers do not "
                "have; name the hosts or their addresses",
                e);
        *any_name = true;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        if (getaddrinfo(r.name, NULL, &hints, &res) != 0)
            return abx__error_set(err, ABX_EINVAL, "run.abx.network: \"%s\" does not resolve on this host",
                                  r.name);
        for (struct addrinfo *a = res; a; a = a->ai_next) {
            const unsigned char *addr =
                a->ai_family == AF_INET
                    ? (const unsigned char *)&((struct sockaddr_in *)a->ai_addr)->sin_addr
                    : (const unsigned char *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
            if (allow && abx__net_addr_forbidden(a->ai_family, addr))
                continue;
            if (add_addr(s, a->ai_family, addr, a->ai_family == AF_INET ? 32 : 128) < 0) {
                freeaddrinfo(res);
                return abx__error_set(err, ABX_ETOOBIG, "run.abx.network: the lists are too long");
            }
        }
        freeaddrinfo(res);
    }
    return 0;
}

static void sets_free(egress_sets *s)
{
    abx__buf_free(&s->v4);
    abx__buf_free(&s->v6);
}

int abx__oci_egress_script(const char *table, const char *allow_list, const char *deny_list, char **script,
                           abx_error **err)
{
    *script = NULL;
    egress_sets allow, deny;
    abx__buf_init(&allow.v4, EGRESS_SCRIPT_MAX);
    abx__buf_init(&allow.v6, EGRESS_SCRIPT_MAX);
    abx__buf_init(&deny.v4, EGRESS_SCRIPT_MAX);
    abx__buf_init(&deny.v6, EGRESS_SCRIPT_MAX);
    bool names = false;
    int rc = fill(allow_list ? allow_list : "", true, &allow, &names, err);
    if (rc == 0)
        rc = fill(deny_list ? deny_list : "", false, &deny, &names, err);
    for (size_t i = 0; rc == 0 && abx__net_never_range(i); i++) { /* the walls */
        abx_net_rule r;
        if (abx__net_rule_parse(abx__net_never_range(i), &r, NULL) == 0 &&
            !(r.addr[0] == 127 && r.kind == ABX_NET_CIDR4) &&
            !(r.kind == ABX_NET_CIDR6 && r.prefix == 128 && r.addr[15] == 1))
            rc = add_addr(&deny, r.kind == ABX_NET_CIDR4 ? AF_INET : AF_INET6, r.addr, r.prefix);
    }
    if (strspn(table, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(table) || strlen(table) > 60)
        rc = abx__error_set(err, ABX_EINVAL, "the egress table's name");
    bool allowlist = allow_list && strspn(allow_list, ", \t\n") != strlen(allow_list);
    abx_buf out;
    abx__buf_init(&out, EGRESS_SCRIPT_MAX);
    if (rc == 0) {
        rc = appendf(&out, "table inet %s\ndelete table inet %s\ntable inet %s {\n", table, table, table);
        const struct {
            const char *name, *type;
            abx_buf *elements;
        } sets[] = {{"allow4", "ipv4_addr", &allow.v4},
                    {"allow6", "ipv6_addr", &allow.v6},
                    {"deny4", "ipv4_addr", &deny.v4},
                    {"deny6", "ipv6_addr", &deny.v6}};
        for (size_t i = 0; rc == 0 && i < 4; i++) {
            rc = appendf(&out, "  set %s { type %s; flags interval; auto-merge;%s", sets[i].name,
                         sets[i].type, sets[i].elements->len ? " elements = { " : "");
            if (rc == 0 && sets[i].elements->len)
                rc = abx__buf_append(&out, sets[i].elements->data, sets[i].elements->len) < 0 ||
                             appendf(&out, " }") < 0
                         ? -ABX_ETOOBIG
                         : 0;
            if (rc == 0)
                rc = appendf(&out, " }\n");
        }
        if (rc == 0)
            rc = appendf(&out,
                         "  chain out {\n    type filter hook output priority 0; policy %s;\n"
                         "    oif \"lo\" accept\n    ct state established,related accept\n"
                         "    ip daddr @deny4 drop\n    ip6 daddr @deny6 drop\n"
                         "%s    ip daddr @allow4 accept\n    ip6 daddr @allow6 accept\n  }\n}\n",
                         allowlist ? "drop" : "accept",
                         allowlist && names ? "    meta l4proto { tcp, udp } th dport 53 accept\n" : "");
    }
    sets_free(&allow);
    sets_free(&deny);
    if (rc == 0 && abx__buf_append(&out, "", 1) < 0)
        rc = -ABX_ETOOBIG;
    if (rc < 0) {
        abx__buf_free(&out);
        return err && *err ? rc : abx__error_set(err, ABX_ETOOBIG, "run.abx.network: the lists are too long");
    }
    *script = abx__buf_take(&out, NULL);
    return 0;
}

/* Runs fn in a child that entered pid's network namespace (this
 * process stays in its own); fn writes why it failed into why. */
static int in_netns(const char *path, void (*fn)(const void *arg, char *why, size_t len), const void *arg,
                    const char *what, abx_error **err)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "pipe");
    pid_t child = fork();
    if (child < 0) {
        close(report[0]);
        close(report[1]);
        return abx__error_errno(err, ABX_ESYS, errno, "fork");
    }
    if (child == 0) {
        close(report[0]);
        char why[600] = "";
        int ns = open(path, O_RDONLY | O_CLOEXEC);
        if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
            snprintf(why, sizeof why, "entering the container's network namespace: %s", strerror(errno));
        else
            fn(arg, why, sizeof why);
        if (why[0])
            (void)!write(report[1], why, strlen(why));
        _exit(why[0] ? 1 : 0);
    }
    close(report[1]);
    char why[600] = "";
    ssize_t n = read(report[0], why, sizeof why - 1);
    close(report[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (n > 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        why[n > 0 ? n : 0] = '\0';
        return abx__error_set(err, ABX_EJAIL, "%s: %s", what, why[0] ? why : "failed");
    }
    return 0;
}

static void load_script(const void *arg, char *why, size_t len)
{
    abx_error *e = NULL;
    struct nft_ctx *c = abx__netf_ctx();
    if (!c)
        snprintf(why, len, "libnftables is missing (apt-get install libnftables1)");
    else if (abx__netf_run(c, (const char *)arg, &e) < 0)
        snprintf(why, len, "%s", abx_error_message(e));
    abx_error_free(e);
}

int abx__oci_egress_apply(pid_t pid, const char *script, abx_error **err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
    return in_netns(path, load_script, script, "the container's egress filter", err);
}

typedef struct sysctl_list {
    char *const *keys, *const *values;
    size_t n;
} sysctl_list;

static void write_net_sysctls(const void *arg, char *why, size_t len)
{
    const sysctl_list *l = arg;
    for (size_t i = 0; i < l->n; i++) {
        if (strncmp(l->keys[i], "net.", 4) != 0)
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "/proc/sys/%s", l->keys[i]);
        for (char *p = path + 10; *p; p++)
            if (*p == '.')
                *p = '/';
        if (abx__write_file_at(AT_FDCWD, path, l->values[i]) < 0) {
            snprintf(why, len, "sysctl %s: %s", l->keys[i], strerror(errno));
            return;
        }
    }
}

int abx__oci_net_sysctls(pid_t pid, char *const *keys, char *const *values, size_t n, abx_error **err)
{
    sysctl_list l = {keys, values, n};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
    return in_netns(path, write_net_sysctls, &l, "the container's network sysctls", err);
}

int abx__oci_egress_remove(const char *netns_path, const char *table, abx_error **err)
{
    char script[160];
    snprintf(script, sizeof script, "table inet %s\ndelete table inet %s\n", table, table);
    return in_netns(netns_path, load_script, script, "removing the container's egress filter", err);
}
