/* test-code.c: reading a code interpreter's answer (lib/code.c): abx's
 * shim's lines, another E2B server's lines, and lines that are not JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "code.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *text, abx_code_result *r)
{
    return abx__code_parse_answer(text, strlen(text), r);
}

static void test_abx_answer(void **state)
{
    (void)state;
    abx_code_result r;
    assert_int_equal(
        parse("{\"type\":\"number_of_executions\",\"execution_count\":3}\n"
              "{\"type\":\"stdout\",\"text\":\"head\"}\n"
              "{\"type\":\"stdout\",\"text\":\"tail\\n\"}\n"
              "{\"type\":\"result\",\"text\":\"42\",\"png\":\"iVBO\",\"is_main_result\":true}\n"
              "{\"type\":\"abx\",\"context_id\":\"c1\",\"exit_code\":0,\"stdout_bytes\":100,"
              "\"stdout_cut\":4,\"stdout_path\":\"/tmp/.abx-output/x.stdout\",\"files\":[{\"name\":\"a\"}],"
              "\"state_reset\":true,\"state_reset_reason\":\"died\"}\n"
              "{\"type\":\"end_of_execution\"}\n",
              &r),
        0);
    assert_int_equal(r.execution_count, 3);
    assert_string_equal(r.stdout_data, "headtail\n");
    assert_int_equal(r.stdout_len, 9);
    assert_int_equal(r.stdout_cut, 4);
    assert_int_equal(r.stdout_total, 100);
    assert_string_equal(r.stdout_path, "/tmp/.abx-output/x.stdout");
    assert_string_equal(r.text, "42");
    assert_non_null(strstr(r.results_json, "\"png\":\"iVBO\""));
    assert_null(strstr(r.results_json, "\"type\""));
    assert_string_equal(r.files_json, "[{\"name\":\"a\"}]");
    assert_true(r.state_reset);
    assert_string_equal(r.state_reset_reason, "died");
    assert_string_equal(r.context_id, "c1");
    assert_null(r.error_name);
    abx_code_result_clear(&r);
}

static void test_other_server_and_noise(void **state)
{
    (void)state;
    abx_code_result r;
    assert_int_equal(
        parse("not json\n[1,2]\n{\"type\":\"stderr\",\"text\":\"warn\"}\n{\"no\":\"type\"}\n"
              "{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":\"division by zero\","
              "\"traceback\":\"tb\"}\n{\"type\":\"keepalive\"}\n{\"type\":\"stdout\",\"text\":7}",
              &r),
        0);
    assert_string_equal(r.stdout_data, "");
    assert_string_equal(r.stderr_data, "warn");
    assert_int_equal(r.stderr_total, 4);
    assert_int_equal(r.stderr_cut, 4);
    assert_int_equal(r.exit_code, 1);
    assert_string_equal(r.error_name, "ZeroDivisionError");
    assert_string_equal(r.traceback, "tb");
    assert_string_equal(r.results_json, "[]");
    assert_string_equal(r.files_json, "[]");
    abx_code_result_clear(&r);
}

static void test_bad_counts_are_ignored(void **state)
{
    (void)state;
    abx_code_result r;
    /* a cut past the text, and totals below it, do not stand */
    assert_int_equal(parse("{\"type\":\"stdout\",\"text\":\"abc\"}\n"
                           "{\"type\":\"abx\",\"stdout_bytes\":1,\"stdout_cut\":99,\"stderr_bytes\":-5}\n",
                           &r),
                     0);
    assert_int_equal(r.stdout_total, 3);
    assert_int_equal(r.stdout_cut, 3);
    assert_int_equal(r.stderr_total, 0);
    abx_code_result_clear(&r);
}

static void test_request_checks(void **state)
{
    (void)state;
    abx_error *err = NULL;
    int rc = 0;
    abx_code_options o = {.language = "ruby"};
    assert_null(abx__code_request("1", &o, &err, &rc));
    assert_int_equal(rc, -ABX_EINVAL);
    abx_error_free(err);
    err = NULL;
    const char *envs[] = {"A-B=1", NULL};
    abx_code_options bad_env = {.envs = envs};
    assert_null(abx__code_request("1", &bad_env, &err, &rc));
    abx_error_free(err);
    err = NULL;
    const char *good[] = {"A=1", NULL};
    abx_code_options fine = {
        .language = "javascript", .cwd = "/app", .timeout_s = 5, .fresh = true, .envs = good};
    json_t *req = abx__code_request("1", &fine, &err, &rc);
    assert_non_null(req);
    char *text = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(text, "{\"code\":\"1\",\"cwd\":\"/app\",\"env_vars\":{\"A\":\"1\"},\"fresh\":true,"
                              "\"language\":\"javascript\",\"timeout\":5}");
    free(text);
    json_decref(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abx_answer),
        cmocka_unit_test(test_other_server_and_noise),
        cmocka_unit_test(test_bad_counts_are_ignored),
        cmocka_unit_test(test_request_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
