/* test-manifest.c: abx-provider.toml read and checked (lib/manifest.c on
 * config.c's TOML subset): a good exec and rest manifest, and each way one
 * is refused, with the key named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "config.h"
#include "manifest.h"

#include <string.h>

static const char exec_manifest[] = "# a plugin\n"
                                    "[provider]\n"
                                    "id = \"local-process\"\n"
                                    "name = 'Local process'\n"
                                    "version = \"0.1.0\"\n"
                                    "kind = \"exec\"\n"
                                    "description = \"no isolation\"\n"
                                    "license = \"MIT\"\n"
                                    "\n"
                                    "[runtime]\n"
                                    "command = [\"python3\", 'provider.py',]\n"
                                    "env = [\"HOME\", \"MY_TOKEN\"]\n"
                                    "\n"
                                    "[config.api_key]\n"
                                    "secret = true\n"
                                    "description = \"the API key\"\n"
                                    "[config.region]\n"
                                    "description = \"where\"\n";

static void test_exec_manifest(void **state)
{
    (void)state;
    abx_manifest m;
    abx_error *err = NULL;
    assert_int_equal(abx__manifest_parse(exec_manifest, &m, &err), 0);
    assert_string_equal(m.id, "local-process");
    assert_string_equal(m.kind, "exec");
    assert_string_equal(m.name, "Local process");
    assert_int_equal(json_array_size(m.command), 2);
    assert_string_equal(json_string_value(json_array_get(m.command, 1)), "provider.py");
    assert_int_equal(json_array_size(m.env), 2);
    assert_true(json_is_true(json_object_get(json_object_get(m.config, "api_key"), "secret")));
    assert_false(json_is_true(json_object_get(json_object_get(m.config, "region"), "secret")));
    abx__manifest_clear(&m);
}

static void test_rest_manifest(void **state)
{
    (void)state;
    abx_manifest m;
    abx_error *err = NULL;
    assert_int_equal(abx__manifest_parse("[provider]\nid = \"my-cloud\"\nkind = \"rest\"\n[rest]\n"
                                         "base_url = \"https://api.example.com\"\n",
                                         &m, &err),
                     0);
    assert_string_equal(m.base_url, "https://api.example.com");
    assert_null(m.command);
    abx__manifest_clear(&m);
}

static void refused(const char *text, const char *says)
{
    abx_manifest m;
    abx_error *err = NULL;
    assert_int_equal(abx__manifest_parse(text, &m, &err), -ABX_ECONFIG);
    assert_non_null(strstr(abx_error_message(err), says));
    abx_error_free(err);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\nshiny = 1\n[runtime]\ncommand = [\"a\"]\n",
            "provider.shiny");
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\n[runtime]\ncommand = [\"a\"]\n[extra]\n", "'extra'");
    refused("[provider]\nid = \"Bad_Id\"\nkind = \"exec\"\n[runtime]\ncommand = [\"a\"]\n", "Bad_Id");
    refused("[provider]\nid = \"x\"\nkind = \"docker\"\n", "docker");
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\n", "'runtime'");
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\n[runtime]\ncommand = []\n", "runtime.command");
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\n[runtime]\ncommand = [\"a\"]\nenv = [\"A-B\"]\n",
            "A-B");
    refused("[provider]\nid = \"x\"\nkind = \"rest\"\n[rest]\nbase_url = \"ftp://x\"\n", "ftp://x");
    refused("[provider]\nkind = \"exec\"\n", "provider.id");
    refused("[provider]\nid = \"x\"\nkind = \"exec\"\n[runtime]\ncommand = [\"a\"]\n[config.k]\nsecret = "
            "\"yes\"\n",
            "config.k");
    refused("[provider]\nid = \"x\"\nid = \"y\"\n", "line 3");
    refused("[provider]\n[provider]\n", "line 2");
    refused("[provider]\nid = [\"a\", 3]\n", "line 2");
    refused("[provider\n", "line 1");
}

static void test_ids(void **state)
{
    (void)state;
    assert_true(abx__provider_id_valid("a"));
    assert_true(abx__provider_id_valid("0-x-9"));
    assert_false(abx__provider_id_valid(""));
    assert_false(abx__provider_id_valid("-a"));
    assert_false(abx__provider_id_valid("a_b"));
    assert_false(abx__provider_id_valid("../x"));
    char long_id[70];
    memset(long_id, 'a', 64);
    long_id[64] = '\0';
    assert_false(abx__provider_id_valid(long_id));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_manifest),
        cmocka_unit_test(test_rest_manifest),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
