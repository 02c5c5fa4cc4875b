/* test-errors.c: the error table is complete, unique, and documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "error_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_codes_are_unique_and_named(void **state)
{
    (void)state;
    size_t n = abx__error_table_size();
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        int code = abx__error_table_code(i);
        assert_in_range(code, 8001, 8999);
        char name[16];
        snprintf(name, sizeof name, "E%d", code);
        assert_string_equal(abx_err_name(code), name);
        assert_string_equal(abx_err_name(-code), name);
        assert_true(strlen(abx_strerror(code)) > 3);
        assert_true(strlen(abx_err_hint(code)) > 10);
        assert_true(strlen(abx_err_category(code)) >= 2);
        assert_in_range(abx_err_http_status(code), 400, 599);
        for (size_t j = i + 1; j < n; j++)
            assert_int_not_equal(code, abx__error_table_code(j));
    }
}

static void test_spec_fixed_codes(void **state)
{
    (void)state;
    assert_int_equal(ABX_ENOTSUP, 8004);
    assert_int_equal(ABX_EPLUGINCHANGED, 8011);
}

static void test_unknown_code_is_generic(void **state)
{
    (void)state;
    assert_string_equal(abx_err_name(7), "E8000");
    assert_string_equal(abx_strerror(0), "success");
    assert_non_null(abx_err_hint(123456));
}

static void test_error_object(void **state)
{
    (void)state;
    abx_error *err = NULL;
    int rc = abx__error_set(&err, ABX_EINVAL, "memory: %s", "bad");
    assert_int_equal(rc, -ABX_EINVAL);
    assert_int_equal(abx_error_code(err), ABX_EINVAL);
    assert_string_equal(abx_error_message(err), "memory: bad");
    rc = abx__error_set(&err, -ABX_ENOTFOUND, "again");
    assert_int_equal(rc, -ABX_ENOTFOUND);
    assert_string_equal(abx_error_message(err), "again");
    abx_error_free(err);
    assert_int_equal(abx__error_set(NULL, ABX_EIO, "x"), -ABX_EIO);
    abx_error_free(NULL);
    assert_int_equal(abx_error_code(NULL), ABX_OK);
}

/* docs/errors.md has a row for every code, with its hint word for word. */
static void test_docs_table_matches(void **state)
{
    (void)state;
    FILE *f = fopen(ABX_SOURCE_ROOT "/docs/errors.md", "r");
    assert_non_null(f);
    static char doc[65536];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = '\0';
    for (size_t i = 0; i < abx__error_table_size(); i++) {
        int code = abx__error_table_code(i);
        char row[32];
        snprintf(row, sizeof row, "| %s |", abx_err_name(code));
        if (!strstr(doc, row))
            fail_msg("docs/errors.md lacks a row for %s", abx_err_name(code));
        if (!strstr(doc, abx_err_hint(code)))
            fail_msg("docs/errors.md lacks the hint of %s", abx_err_name(code));
    }
}

static void test_wrap_adds_context(void **state)
{
    (void)state;
    abx_error *err = NULL;
    int rc = abx__error_set(&err, ABX_ENOENT, "no such file: /app/x");
    rc = abx__error_wrap(&err, rc, "reading %s", "the manifest");
    rc = abx__error_wrap(&err, rc, "installing '%s'", "p");
    assert_int_equal(rc, -ABX_ENOENT);
    assert_int_equal(abx_error_code(err), ABX_ENOENT);
    assert_string_equal(abx_error_message(err), "installing 'p': reading the manifest: no such file: /app/x");
    abx_error_free(err);
    err = NULL;
    assert_int_equal(abx__error_wrap(&err, -ABX_EIO, "writing"), -ABX_EIO); /* no error yet: one is made */
    assert_string_equal(abx_error_message(err), "writing");
    assert_int_equal(abx__error_wrap(&err, 0, "unused"), 0); /* success: nothing changes */
    assert_string_equal(abx_error_message(err), "writing");
    abx_error_free(err);
    assert_int_equal(abx__error_wrap(NULL, -ABX_EIO, "x"), -ABX_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_are_unique_and_named), cmocka_unit_test(test_spec_fixed_codes),
        cmocka_unit_test(test_unknown_code_is_generic),    cmocka_unit_test(test_error_object),
        cmocka_unit_test(test_wrap_adds_context),          cmocka_unit_test(test_docs_table_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
