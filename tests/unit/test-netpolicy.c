/* test-netpolicy.c: network policies as data (base/netpolicy.c): entries
 * parsed and normalised, names and CIDRs matched, the forbidden ranges,
 * how the mode follows the lists, and what is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "netpolicy.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

static void assert_normal(const char *in, const char *want)
{
    abx_net_rule r;
    assert_int_equal(abx__net_rule_parse(in, &r, NULL), 0);
    char out[300];
    abx__net_rule_format(&r, out, sizeof out);
    assert_string_equal(out, want);
}

static void test_entries_normalise(void **state)
{
    (void)state;
    assert_normal("203.0.113.7", "203.0.113.7/32");
    assert_normal("10.1.2.3/8", "10.0.0.0/8");
    assert_normal("2001:DB8::1/32", "2001:db8::/32");
    assert_normal("Example.COM.", "example.com");
    assert_normal("*.pypi.org", "*.pypi.org");
    const char *bad[] = {"",          "a..b",       "-a.com",       "1.2.3.4/33",
                         "::/129",    "*.",         "exa mple.com", "a/b",
                         "*.*.x",     "1.2.3.4/",   "http://x.com", "169.254.169.254.",
                         "10.0.0.5.", "*.10.0.0.5", "123",          NULL};
    for (size_t i = 0; bad[i]; i++) {
        abx_net_rule r;
        abx_error *err = NULL;
        assert_int_equal(abx__net_rule_parse(bad[i], &r, &err), -ABX_EINVAL);
        abx_error_free(err);
    }
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    abx_net_rule r;
    assert_int_equal(abx__net_rule_parse(longname, &r, NULL), -ABX_EINVAL);
}

static void test_names_match(void **state)
{
    (void)state;
    abx_net_rule exact, wild;
    abx__net_rule_parse("example.com", &exact, NULL);
    abx__net_rule_parse("*.example.com", &wild, NULL);
    assert_true(abx__net_name_matches(&exact, "example.com"));
    assert_false(abx__net_name_matches(&exact, "a.example.com"));
    assert_true(abx__net_name_matches(&wild, "a.example.com"));
    assert_true(abx__net_name_matches(&wild, "a.b.example.com"));
    assert_false(abx__net_name_matches(&wild, "example.com"));
    assert_false(abx__net_name_matches(&wild, "badexample.com"));
}

static bool forbidden(const char *text)
{
    unsigned char a[16];
    if (inet_pton(AF_INET, text, a) == 1)
        return abx__net_addr_forbidden(AF_INET, a);
    assert_int_equal(inet_pton(AF_INET6, text, a), 1);
    return abx__net_addr_forbidden(AF_INET6, a);
}

static void test_forbidden_ranges(void **state)
{
    (void)state;
    const char *no[] = {"10.1.2.3",  "172.16.0.1", "192.168.1.1", "100.64.0.1",      "169.254.169.254",
                        "127.0.0.1", "0.0.0.0",    "224.0.0.1",   "255.255.255.255", "::1",
                        "fe80::1",   "fd00::1",    "ff02::1",     "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe",
                        NULL};
    for (size_t i = 0; no[i]; i++)
        assert_true(forbidden(no[i]));
    const char *yes[] = {"198.51.100.10", "203.0.113.1", "192.0.2.5",      "198.18.0.1",
                         "8.8.8.8",       "2001:db8::1", "::ffff:8.8.8.8", NULL};
    for (size_t i = 0; yes[i]; i++)
        assert_false(forbidden(yes[i]));
    abx_net_rule lan;
    abx__net_rule_parse("10.99.0.0/16", &lan, NULL);
    unsigned char a[4];
    inet_pton(AF_INET, "10.99.3.4", a);
    assert_true(abx__net_cidr_contains(&lan, AF_INET, a));
    inet_pton(AF_INET, "10.98.3.4", a);
    assert_false(abx__net_cidr_contains(&lan, AF_INET, a));
}

/* Every forbidden range, written out here (not read from the code): its
 * first and last address refused, the addresses just outside it open
 * (unless they begin or end another range). */
static void test_forbidden_range_edges(void **state)
{
    (void)state;
    static const char *const edges[][4] = {
        /* first, last, just below, just above ("" when it is another range's) */
        {"0.0.0.0", "0.255.255.255", "", "1.0.0.0"},
        {"10.0.0.0", "10.255.255.255", "9.255.255.255", "11.0.0.0"},
        {"100.64.0.0", "100.127.255.255", "100.63.255.255", "100.128.0.0"},
        {"127.0.0.0", "127.255.255.255", "126.255.255.255", "128.0.0.0"},
        {"169.254.0.0", "169.254.255.255", "169.253.255.255", "169.255.0.0"},
        {"172.16.0.0", "172.31.255.255", "172.15.255.255", "172.32.0.0"},
        {"192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0"},
        {"192.168.0.0", "192.168.255.255", "192.167.255.255", "192.169.0.0"},
        {"224.0.0.0", "239.255.255.255", "223.255.255.255", ""},
        {"240.0.0.0", "255.255.255.255", "", ""},
        {"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "fe00::"},
        {"fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "fec0::"},
        {"ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
        {"100::", "100::ffff:ffff:ffff:ffff", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "100:0:0:1::"},
    };
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        assert_true(forbidden(edges[i][0]));
        assert_true(forbidden(edges[i][1]));
        if (*edges[i][2])
            assert_false(forbidden(edges[i][2]));
        if (*edges[i][3])
            assert_false(forbidden(edges[i][3]));
    }
}

/* allow_out against the walls: the pool and the never ranges whatever the
 * operator says; the other forbidden ranges only within client_may_allow. */
static int walls(const char *entry, const char *const *may_text, abx_error **err)
{
    abx_net_rule may[8];
    size_t n = 0;
    for (; may_text && may_text[n]; n++)
        assert_int_equal(abx__net_rule_parse(may_text[n], &may[n], NULL), 0);
    const char *allow[] = {entry, NULL};
    json_t *p = NULL;
    assert_int_equal(abx__net_policy_build(NULL, allow, NULL, "none", &p, NULL), 0);
    int rc = abx__net_policy_walls(p, may, n, "10.200.0.0/16", err);
    json_decref(p);
    return rc;
}

static void test_walls(void **state)
{
    (void)state;
    const char *none[] = {NULL}, *lan[] = {"10.99.0.0/16", NULL},
               *wide[] = {"10.0.0.0/8", "169.254.0.0/16", NULL};
    const char *open[] = {"203.0.113.0/24", "8.8.8.8", "example.com", "*.example.com", "2001:db8::/32", NULL};
    for (size_t i = 0; open[i]; i++)
        assert_int_equal(walls(open[i], none, NULL), 0);
    abx_error *err = NULL;
    assert_int_equal(walls("10.99.0.0/16", none, &err), -ABX_ENETPOLICY);
    assert_non_null(strstr(abx_error_message(err), "10.99.0.0/16"));
    assert_non_null(strstr(abx_error_message(err), "client_may_allow"));
    abx_error_free(err);
    assert_int_equal(walls("10.99.0.0/16", lan, NULL), 0);
    assert_int_equal(walls("10.99.7.0/24", lan, NULL), 0);
    assert_int_equal(walls("10.0.0.0/8", lan, NULL),
                     -ABX_ENETPOLICY); /* wider than what the operator opened */
    assert_int_equal(walls("10.98.0.1", lan, NULL), -ABX_ENETPOLICY);
    assert_int_equal(walls("10.0.0.0/8", wide, NULL), -ABX_ENETPOLICY); /* holds the pool */
    const char *never[] = {"10.200.0.0/16",  "10.200.3.4", "10.200.0.0/24", "169.254.169.254",
                           "169.254.0.0/16", "0.0.0.0/0",  "127.0.0.1",     "fd00:ec2::254",
                           "::/0",           NULL};
    for (size_t i = 0; never[i]; i++) {
        err = NULL;
        assert_int_equal(walls(never[i], wide, &err), -ABX_ENETPOLICY);
        assert_non_null(strstr(abx_error_message(err), "no sandbox may reach"));
        abx_error_free(err);
    }
    assert_int_equal(walls("172.31.255.255", none, NULL), -ABX_ENETPOLICY);
    assert_int_equal(walls("172.32.0.0", none, NULL), 0);
    unsigned char a[4];
    inet_pton(AF_INET, "169.254.169.254", a);
    assert_true(abx__net_addr_never(AF_INET, a));
    inet_pton(AF_INET, "169.254.1.1", a);
    assert_false(abx__net_addr_never(AF_INET, a));
}

static void test_mode_follows_lists(void **state)
{
    (void)state;
    json_t *p = NULL;
    const char *allow[] = {"example.com", NULL}, *deny[] = {"10.0.0.0/8", NULL};
    assert_int_equal(abx__net_policy_build(NULL, allow, NULL, "none", &p, NULL), 0);
    assert_string_equal(abx__net_policy_mode(p), "allowlist");
    json_decref(p);
    assert_int_equal(abx__net_policy_build(NULL, NULL, deny, "none", &p, NULL), 0);
    assert_string_equal(abx__net_policy_mode(p), "internet");
    json_decref(p);
    assert_int_equal(abx__net_policy_build(NULL, NULL, NULL, "internet", &p, NULL), 0);
    assert_string_equal(abx__net_policy_mode(p), "internet");
    json_decref(p);
    assert_int_equal(abx__net_policy_build(NULL, NULL, NULL, "bogus", &p, NULL), 0);
    assert_string_equal(abx__net_policy_mode(p), "none");
    json_decref(p);
    abx_error *err = NULL;
    assert_int_equal(abx__net_policy_build("none", allow, NULL, "none", &p, &err), -ABX_EINVAL);
    assert_null(p);
    abx_error_free(err);
    assert_int_equal(abx__net_policy_build("open", NULL, NULL, "none", &p, NULL), -ABX_EINVAL);
}

static void test_requests_checked_and_bounded(void **state)
{
    (void)state;
    json_t *out = NULL;
    json_t *doc = json_loads("{\"mode\":\"internet\",\"deny_out\":[\"EVIL.test\",\"10.0.0.1/8\"]}", 0, NULL);
    assert_int_equal(abx__net_policy_normalize(doc, &out, NULL), 0);
    char *text = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(
        text, "{\"allow_out\":[],\"deny_out\":[\"evil.test\",\"10.0.0.0/8\"],\"mode\":\"internet\"}");
    free(text);
    json_decref(out);
    json_decref(doc);
    const char *bad[] = {"[]", "{\"mode\":3}", "{\"allow_out\":\"x.com\"}", "{\"allow_out\":[1]}", NULL};
    for (size_t i = 0; bad[i]; i++) {
        doc = json_loads(bad[i], 0, NULL);
        assert_int_equal(abx__net_policy_normalize(doc, &out, NULL), -ABX_EINVAL);
        json_decref(doc);
    }
    /* a flood of entries: refused past the bound, nothing kept */
    doc = json_pack("{s:[]}", "allow_out");
    for (int i = 0; i <= ABX_NET_MAX_RULES; i++)
        json_array_append_new(json_object_get(doc, "allow_out"), json_string("198.51.100.1"));
    abx_error *err = NULL;
    assert_int_equal(abx__net_policy_normalize(doc, &out, &err), -ABX_EINVAL);
    assert_null(out);
    assert_non_null(strstr(abx_error_message(err), "at most"));
    abx_error_free(err);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_normalise),
        cmocka_unit_test(test_names_match),
        cmocka_unit_test(test_forbidden_ranges),
        cmocka_unit_test(test_forbidden_range_edges),
        cmocka_unit_test(test_walls),
        cmocka_unit_test(test_mode_follows_lists),
        cmocka_unit_test(test_requests_checked_and_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
