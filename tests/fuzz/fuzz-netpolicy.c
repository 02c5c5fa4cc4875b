/* fuzz-netpolicy.c: base/netpolicy.c's parsers on any bytes. Each input is
 * read three ways:
 *   - each line as one rule: a rule parses or fails with E8001; a parsed
 *     one formats to a normal form that parses back to the same rule, and a
 *     CIDR holds its own network address;
 *   - the whole input as a policy document (JSON) and as E2B's network
 *     fields: normalizing succeeds or fails with a code, and a normal form
 *     normalizes to itself;
 *   - every normal policy against the walls: one that passes never has an
 *     allow-list CIDR that touches the pool (10.200.0.0/16) or a never
 *     range, nor one in a forbidden range outside what client_may_allow
 *     (10.99.0.0/16 here) opens.
 */
#include "netpolicy.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_rule(const char *line)
{
    abx_net_rule r, again;
    abx_error *err = NULL;
    int rc = abx__net_rule_parse(line, &r, &err);
    if (rc < 0) {
        if (rc != -ABX_EINVAL || !err)
            abort();
        abx_error_free(err);
        return;
    }
    char text[300];
    abx__net_rule_format(&r, text, sizeof text);
    if (abx__net_rule_parse(text, &again, NULL) < 0 || again.kind != r.kind || again.prefix != r.prefix ||
        memcmp(again.addr, r.addr, sizeof r.addr) != 0 || strcmp(again.name, r.name) != 0)
        abort();
    if ((r.kind == ABX_NET_CIDR4 || r.kind == ABX_NET_CIDR6) &&
        !abx__net_cidr_contains(&r, r.kind == ABX_NET_CIDR4 ? AF_INET : AF_INET6, r.addr))
        abort();
}

/* What the walls let pass: checked here from the rules, not from the walls' code. */
static void check_walls(json_t *policy)
{
    abx_net_rule may;
    if (abx__net_rule_parse("10.99.0.0/16", &may, NULL) < 0)
        abort();
    abx_error *err = NULL;
    int rc = abx__net_policy_walls(policy, &may, 1, "10.200.0.0/16", &err);
    abx_error_free(err);
    if (rc < 0) {
        if (rc != -ABX_ENETPOLICY && rc != -ABX_EINVAL)
            abort();
        return;
    }
    abx_net_rule pool;
    abx__net_rule_parse("10.200.0.0/16", &pool, NULL);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(policy, "allow_out"), i, v)
    {
        abx_net_rule r;
        if (abx__net_rule_parse(json_string_value(v), &r, NULL) < 0)
            abort(); /* a normal policy holds only rules */
        if (r.kind != ABX_NET_CIDR4 && r.kind != ABX_NET_CIDR6)
            continue;
        if (abx__net_cidrs_overlap(&r, &pool))
            abort();
        for (size_t k = 0; abx__net_never_range(k); k++) {
            abx_net_rule never;
            abx__net_rule_parse(abx__net_never_range(k), &never, NULL);
            if (abx__net_cidrs_overlap(&r, &never))
                abort();
        }
        size_t n;
        const char *const *forbidden = abx__net_forbidden_ranges(&n);
        for (size_t k = 0; k < n; k++) {
            abx_net_rule f;
            abx__net_rule_parse(forbidden[k], &f, NULL);
            if (abx__net_cidrs_overlap(&r, &f) && !abx__net_cidr_within(&r, &may))
                abort();
        }
    }
}

static void check_policy(json_t *doc)
{
    json_t *out = NULL, *again = NULL;
    abx_error *err = NULL;
    if (abx__net_policy_normalize(doc, &out, &err) < 0) {
        if (out || !err)
            abort();
        abx_error_free(err);
        return;
    }
    if (abx__net_policy_normalize(out, &again, NULL) < 0 || !json_equal(out, again))
        abort();
    check_walls(out);
    json_decref(again);
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        check_rule(line);
    memcpy(text, data, size);
    json_t *doc = json_loadb((const char *)data, size, 0, NULL);
    if (doc) {
        check_policy(doc);
        json_t *e2b = NULL;
        abx_error *err = NULL;
        json_t *access = json_object_get(doc, "allow_internet_access");
        int a = json_is_boolean(access) ? json_is_true(access) : -1;
        if (abx__net_policy_from_e2b(a, json_object_get(doc, "allowOut"), json_object_get(doc, "denyOut"),
                                     "none", &e2b, &err) == 0) {
            check_policy(e2b);
            json_decref(e2b);
        }
        abx_error_free(err);
        json_decref(doc);
    }
    free(text);
    return 0;
}
