/* test-parse.c: the parsers that guard every user-supplied number and pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "parse.h"
#include "random_id.h"

#include <string.h>

static void test_uint_accepts_in_range(void **state)
{
    (void)state;
    unsigned v = 0;
    assert_int_equal(abx__parse_uint("512", 16, 1048576, &v), 0);
    assert_int_equal(v, 512);
    assert_int_equal(abx__parse_uint("16", 16, 32, &v), 0);
    assert_int_equal(abx__parse_uint("32", 16, 32, &v), 0);
    assert_int_equal(abx__parse_uint("0", 0, 5, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(abx__parse_uint("4294967295", 0, 4294967295u, &v), 0);
    assert_int_equal(v, 4294967295u);
}

static void test_uint_rejects(void **state)
{
    (void)state;
    unsigned v = 7;
    const char *bad[] = {"",    "-1",   "+1",  " 1",   "1 ",         "1.5",
                         "abc", "0x10", "012", "true", "4294967296", "99999999999999999999",
                         "15",  "86401"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(abx__parse_uint(bad[i], 16, 86400, &v), -ABX_EINVAL);
    assert_int_equal(abx__parse_uint(NULL, 0, 1, &v), -ABX_EINVAL);
    assert_int_equal(v, 7); /* untouched on failure */
}

static void test_env_pairs(void **state)
{
    (void)state;
    size_t k = 0;
    assert_int_equal(abx__parse_env_pair("A=1", &k), 0);
    assert_int_equal(k, 1);
    assert_int_equal(abx__parse_env_pair("_X9=", &k), 0);
    assert_int_equal(k, 3);
    assert_int_equal(abx__parse_env_pair("PATH=/a=b", &k), 0);
    assert_int_equal(k, 4);
    const char *bad[] = {"", "=1", "A", "9A=1", "A-B=1", "A B=1", "é=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(abx__parse_env_pair(bad[i], &k), -ABX_EINVAL);
    assert_int_equal(abx__parse_env_pair(NULL, &k), -ABX_EINVAL);
}

static void test_hex_digits(void **state)
{
    (void)state;
    assert_int_equal(abx__hex_digit('0'), 0);
    assert_int_equal(abx__hex_digit('9'), 9);
    assert_int_equal(abx__hex_digit('a'), 10);
    assert_int_equal(abx__hex_digit('F'), 15);
    assert_int_equal(abx__hex_digit('g'), -1);
    assert_int_equal(abx__hex_digit('\0'), -1);
    assert_int_equal(abx__hex_digit('/'), -1);
}

/* 32 hex digits, a new one each time; a buffer too small is refused. */
static void test_random_ids(void **state)
{
    (void)state;
    char a[ABX_RANDOM_ID_LEN + 1], b[ABX_RANDOM_ID_LEN + 1];
    assert_int_equal(abx__random_id(a, sizeof a), 0);
    assert_int_equal(abx__random_id(b, sizeof b), 0);
    assert_int_equal(strlen(a), 32);
    assert_int_equal(strspn(a, "0123456789abcdef"), 32);
    assert_string_not_equal(a, b);
    assert_int_equal(abx__random_id(a, 32), -ABX_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uint_accepts_in_range),
        cmocka_unit_test(test_uint_rejects),
        cmocka_unit_test(test_env_pairs),
        cmocka_unit_test(test_hex_digits),
        cmocka_unit_test(test_random_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
