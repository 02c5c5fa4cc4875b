/* test-volume.c: volume names and mount specs (lib/volume.c): what a
 * "NAME:/path[:ro]" may be, and what a set of them may not (one volume
 * twice, paths inside each other, more than ABX_VOLUME_MOUNTS_MAX). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "volume.h"
#include "volume_spec.h"

#include <stdio.h>
#include <string.h>

static void test_names(void **state)
{
    (void)state;
    const char *good[] = {"a", "data", "my-vol_2.x", "0day",
                          "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(abx_volume_name_valid(good[i]));
    const char *bad[] = {
        "",    "-a",  ".a",  "_a", "A",
        "a/b", "a b", "a:b", "..", "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01",
        NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(abx_volume_name_valid(bad[i]));
}

static void expect_ok(const char *spec, const char *name, const char *path, bool ro)
{
    abx_volume_mount m;
    abx_error *err = NULL;
    if (abx__volume_mount_parse(spec, &m, &err) != 0)
        fail_msg("%s: %s", spec, abx_error_message(err));
    assert_string_equal(m.name, name);
    assert_string_equal(m.path, path);
    assert_int_equal(m.read_only, ro);
}

static void expect_bad(const char *spec, const char *why)
{
    abx_volume_mount m;
    abx_error *err = NULL;
    assert_int_equal(abx__volume_mount_parse(spec, &m, &err), -ABX_EINVAL);
    if (!strstr(abx_error_message(err), why))
        fail_msg("%s: '%s' does not say '%s'", spec, abx_error_message(err), why);
    abx_error_free(err);
}

static void test_specs(void **state)
{
    (void)state;
    expect_ok("data:/data", "data", "/data", false);
    expect_ok("data:/home/user/work:ro", "data", "/home/user/work", true);
    expect_ok("data:/mnt/x:rw", "data", "/mnt/x", false);
    expect_ok("d:/proceeds", "d", "/proceeds", false); /* /proc only as a whole component */
    expect_bad(NULL, "NAME:/path");
    expect_bad("data", "NAME:/path");
    expect_bad(":/data", "NAME:/path");
    expect_bad("Data:/data", "no volume name");
    expect_bad("data:", "a path of");
    expect_bad("data:relative", "plain absolute");
    expect_bad("data:/", "plain absolute");
    expect_bad("data:/a/", "plain absolute");
    expect_bad("data://a", "plain absolute");
    expect_bad("data:/a/./b", "plain absolute");
    expect_bad("data:/a/../b", "plain absolute");
    expect_bad("data:/..", "plain absolute");
    expect_bad("data:/proc", "sandbox's own");
    expect_bad("data:/dev/shm/x", "sandbox's own");
    expect_bad("data:/sys", "sandbox's own");
    expect_bad("data:/etc/x", "sandbox's own");
    expect_bad("data:/x:ro:ro", "ro or rw");
    expect_bad("data:/x:RO", "ro or rw");
    char longpath[400] = "data:/";
    memset(longpath + 6, 'a', 300);
    longpath[306] = '\0';
    expect_bad(longpath, "a path of");
    char longname[200];
    memset(longname, 'a', 100);
    snprintf(longname + 100, sizeof longname - 100, ":/x");
    expect_bad(longname, "NAME:/path");
}

static void test_sets(void **state)
{
    (void)state;
    abx_volume_mount m[ABX_VOLUME_MOUNTS_MAX];
    abx_error *err = NULL;
    const char *two[] = {"a:/x", "b:/y", NULL};
    size_t n = 2;
    assert_int_equal(abx__volume_mounts_parse(two, m, &n, &err), 0);
    const char *dup[] = {"a:/x", "a:/y", NULL};
    assert_int_equal(abx__volume_mounts_parse(dup, m, &n, &err), -ABX_EINVAL);
    assert_non_null(strstr(abx_error_message(err), "twice"));
    abx_error_free(err);
    err = NULL;
    const char *nested[] = {"a:/x/y", "b:/x", NULL};
    assert_int_equal(abx__volume_mounts_parse(nested, m, &n, &err), -ABX_EINVAL);
    assert_non_null(strstr(abx_error_message(err), "overlap"));
    abx_error_free(err);
    err = NULL;
    const char *same[] = {"a:/x", "b:/x", NULL};
    assert_int_equal(abx__volume_mounts_parse(same, m, &n, &err), -ABX_EINVAL);
    abx_error_free(err);
    err = NULL;
    const char *siblings[] = {"a:/x", "b:/xy", NULL};
    assert_int_equal(abx__volume_mounts_parse(siblings, m, &n, &err), 0);
    size_t many = ABX_VOLUME_MOUNTS_MAX + 1;
    assert_int_equal(abx__volume_mounts_parse(two, m, &many, &err), -ABX_EINVAL);
    abx_error_free(err);
}

/* JSON mounts (MCP's read_only, E2B's readOnly) as specs: bounded, typed. */
static void test_specs_from_json(void **state)
{
    (void)state;
    abx_volume_specs v;
    json_t *j = json_loads("[{\"name\":\"data\",\"path\":\"/data\"},"
                           "{\"name\":\"ro\",\"path\":\"/r\",\"readOnly\":true}]",
                           0, NULL);
    assert_true(abx__volume_specs_from_json(j, "readOnly", &v));
    assert_string_equal(v.list[0], "data:/data");
    assert_string_equal(v.list[1], "ro:/r:ro");
    assert_null(v.list[2]);
    /* another key for read-only is not read as this one */
    assert_true(abx__volume_specs_from_json(j, "read_only", &v));
    assert_string_equal(v.list[1], "ro:/r");
    json_decref(j);
    assert_true(abx__volume_specs_from_json(NULL, "readOnly", &v));
    assert_null(abx__volume_specs_list(&v));
    const char *bad[] = {"{}",
                         "[1]",
                         "[{\"name\":\"a\"}]",
                         "[{\"name\":1,\"path\":\"/a\"}]",
                         "[{\"name\":\"a\",\"path\":\"/a\",\"readOnly\":\"yes\"}]",
                         "[{},{},{},{},{},{},{},{},{}]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        assert_false(abx__volume_specs_from_json(j, "readOnly", &v));
        json_decref(j);
    }
    /* a name or path past its bound is refused, never cut */
    char name[80];
    memset(name, 'a', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    j = json_pack("[{s:s, s:s}]", "name", name, "path", "/a");
    assert_false(abx__volume_specs_from_json(j, "readOnly", &v));
    json_decref(j);
    char path[300] = "/";
    memset(path + 1, 'p', sizeof path - 2);
    path[sizeof path - 1] = '\0';
    j = json_pack("[{s:s, s:s}]", "name", "a", "path", path);
    assert_false(abx__volume_specs_from_json(j, "readOnly", &v));
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_sets),
        cmocka_unit_test(test_specs_from_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
