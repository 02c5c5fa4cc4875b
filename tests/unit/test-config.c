/* test-config.c: the .env and TOML-subset parsers, the formatter round
 * trip, and provider resolution order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static abx_kvs *kvs_new(void)
{
    abx_kvs *k = calloc(1, sizeof *k);
    assert_non_null(k);
    return k;
}

static void test_toml_subset(void **state)
{
    (void)state;
    abx_kvs *k = kvs_new();
    int line = 0;
    const char *text = "# comment\n"
                       "top = 1\n"
                       "[core]\n"
                       "provider = \"local\"   # trailing comment\n"
                       "\n"
                       "[providers.e2b]\n"
                       "api_key = 'lit\\eral'\n"
                       "base_url = \"https://x.example/\\u0041\\n\"\n"
                       "enabled = true\n"
                       "count = -42\n"
                       "dotted.key = \"v\"\r\n"
                       "[network]\n"
                       "client_may_allow = [\"10.99.0.0/16\", '192.168.7.0/24',]  # the LAN\n"
                       "empty = []\n";
    assert_int_equal(abx__toml_parse(text, k, &line), 0);
    assert_string_equal(abx__kvs_get(k, "network.client_may_allow"), "10.99.0.0/16, 192.168.7.0/24");
    assert_string_equal(abx__kvs_get(k, "network.empty"), "");
    assert_string_equal(abx__kvs_get(k, "top"), "1");
    assert_string_equal(abx__kvs_get(k, "core.provider"), "local");
    assert_string_equal(abx__kvs_get(k, "providers.e2b.api_key"), "lit\\eral");
    assert_string_equal(abx__kvs_get(k, "providers.e2b.base_url"), "https://x.example/A\n");
    assert_string_equal(abx__kvs_get(k, "providers.e2b.enabled"), "true");
    assert_string_equal(abx__kvs_get(k, "providers.e2b.count"), "-42");
    assert_string_equal(abx__kvs_get(k, "providers.e2b.dotted.key"), "v");
    free(k);
}

static void test_toml_rejects(void **state)
{
    (void)state;
    abx_kvs *k = kvs_new();
    const char *bad[] = {
        "key\n",
        "= 1\n",
        "[core\n",
        "[]\n",
        "k = \n",
        "k = \"unterminated\n",
        "k = bare words\n",
        "k = \"a\" junk\n",
        "[a..b]\n",
        "k = 1\nk = 2\n",
        "k = \"\\q\"\n",
        "k = \"\\u00e9\"\n",
        "k = \"\\u0000\"\n",
        "k = \"ctl\x01\"\n",
        "k = [1, 2]\n",
        "k = [\"a,b\"]\n",
        "k = [\"a\"\n",
        "k = [\"a\" \"b\"]\n",
        "k = [,]\n",
        "k = {a = 1}\n",
        "k = 1.5\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int line = 0;
        if (abx__toml_parse(bad[i], k, &line) != -ABX_ECONFIG)
            fail_msg("accepted: %s", bad[i]);
        assert_true(line >= 1);
    }
    int line = 0;
    /* found by fuzz-config: a last line ending in a lone \r once looped forever */
    assert_int_equal(abx__toml_parse("a = 1\r", k, &line), 0);
    assert_int_equal(abx__env_parse("A=1\r", k, &line), 0);
    assert_int_equal(abx__toml_parse("a = 1\n\nb = oops\n", k, &line), -ABX_ECONFIG);
    assert_int_equal(line, 3);
    free(k);
}

static void test_toml_round_trip(void **state)
{
    (void)state;
    abx_kvs *k = kvs_new(), *back = kvs_new();
    assert_int_equal(abx__kvs_set(k, "core.provider", "local"), 0);
    assert_int_equal(abx__kvs_set(k, "providers.e2b.api_key", "quote\" slash\\ nl\n tab\t ctl\x01"), 0);
    assert_int_equal(abx__kvs_set(k, "region", "cn-hangzhou"), 0);
    assert_int_equal(abx__kvs_set(k, "core.template", "base"), 0);
    assert_int_equal(abx__kvs_set(k, "bad key", "x"), -ABX_EINVAL);
    assert_int_equal(abx__kvs_set(k, "a..b", "x"), -ABX_EINVAL);
    char *text = abx__toml_format(k);
    assert_non_null(text);
    int line = 0;
    assert_int_equal(abx__toml_parse(text, back, &line), 0);
    assert_int_equal(back->n, k->n);
    for (size_t i = 0; i < k->n; i++)
        assert_string_equal(abx__kvs_get(back, k->items[i].key), k->items[i].value);
    free(text);
    assert_int_equal(abx__kvs_unset(k, "region"), 0);
    assert_null(abx__kvs_get(k, "region"));
    assert_int_equal(abx__kvs_unset(k, "region"), -ABX_ENOTFOUND);
    free(k);
    free(back);
}

static void test_env_files(void **state)
{
    (void)state;
    abx_kvs *k = kvs_new();
    int line = 0;
    assert_int_equal(
        abx__env_parse("# c\nABX_PROVIDER=local\nexport A = \"x y\"\nB='q'\nC=plain value # c\nD=\n", k,
                       &line),
        0);
    assert_string_equal(abx__kvs_get(k, "ABX_PROVIDER"), "local");
    assert_string_equal(abx__kvs_get(k, "A"), "x y");
    assert_string_equal(abx__kvs_get(k, "B"), "q");
    assert_string_equal(abx__kvs_get(k, "C"), "plain value");
    assert_string_equal(abx__kvs_get(k, "D"), "");
    assert_int_equal(abx__env_parse("OK=1\nnot a pair\n", k, &line), -ABX_ECONFIG);
    assert_int_equal(line, 2);
    assert_int_equal(abx__env_parse("1X=1\n", k, &line), -ABX_ECONFIG);
    free(k);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* argument > --provider > ABX_PROVIDER > ./.env > ~/.abx/.env > config.toml > local */
static void test_resolution_order(void **state)
{
    (void)state;
    char dir[] = "/tmp/abx-test-config-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char home[256], cwd[256], path[512], old[4096];
    snprintf(home, sizeof home, "%s/home", dir);
    snprintf(cwd, sizeof cwd, "%s/cwd", dir);
    mkdir(home, 0700);
    mkdir(cwd, 0700);
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(cwd), 0);
    setenv("ABX_HOME", home, 1);
    unsetenv("ABX_PROVIDER");
    char out[64];
    const char *src = NULL;
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "local");
    assert_string_equal(src, "default");
    snprintf(path, sizeof path, "%s/config.toml", home);
    write_file(path, "[core]\nprovider = \"from-toml\"\n");
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-toml");
    snprintf(path, sizeof path, "%s/.env", home);
    write_file(path, "ABX_PROVIDER=from-home-env\n");
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-home-env");
    write_file(".env", "ABX_PROVIDER=from-cwd-env\n");
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-cwd-env");
    setenv("ABX_PROVIDER", "from-variable", 1);
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-variable");
    assert_int_equal(abx__resolve_provider(NULL, "from-flag", out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-flag");
    assert_int_equal(abx__resolve_provider("from-arg", "from-flag", out, sizeof out, &src, NULL), 0);
    assert_string_equal(out, "from-arg");
    assert_string_equal(src, "argument");
    unsetenv("ABX_PROVIDER");
    write_file(".env", "garbage line\n");
    abx_error *err = NULL;
    assert_int_equal(abx__resolve_provider(NULL, NULL, out, sizeof out, &src, &err), -ABX_ECONFIG);
    assert_non_null(strstr(abx_error_message(err), "line 1"));
    abx_error_free(err);
    unlink(".env");
    snprintf(path, sizeof path, "%s/.env", home);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.toml", home);
    unlink(path);
    rmdir(home);
    assert_int_equal(chdir(old), 0);
    rmdir(cwd);
    rmdir(dir);
    unsetenv("ABX_HOME");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toml_subset),      cmocka_unit_test(test_toml_rejects),
        cmocka_unit_test(test_toml_round_trip),  cmocka_unit_test(test_env_files),
        cmocka_unit_test(test_resolution_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
