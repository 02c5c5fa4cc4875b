/* test-sandbox-id.c: ids have E2B's shape and do not repeat. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "sandbox_id.h"

#include <string.h>

static void test_shape(void **state)
{
    (void)state;
    char id[ABX_SANDBOX_ID_LEN + 1];
    for (int i = 0; i < 200; i++) {
        assert_int_equal(abx__sandbox_id_new(id), 0);
        assert_int_equal(strlen(id), 21);
        assert_true(abx__sandbox_id_valid(id));
    }
}

static void test_distinct(void **state)
{
    (void)state;
    static char ids[500][ABX_SANDBOX_ID_LEN + 1];
    for (int i = 0; i < 500; i++) {
        assert_int_equal(abx__sandbox_id_new(ids[i]), 0);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(ids[i], ids[j]);
    }
}

static void test_validity(void **state)
{
    (void)state;
    assert_true(abx__sandbox_id_valid("iabcdefghij0123456789"));
    assert_false(abx__sandbox_id_valid("xabcdefghij0123456789"));
    assert_false(abx__sandbox_id_valid("iABCdefghij0123456789"));
    assert_false(abx__sandbox_id_valid("iabcdefghij012345678"));
    assert_false(abx__sandbox_id_valid("iabcdefghij0123456789a"));
    assert_false(abx__sandbox_id_valid("iabcdefghij01234567/."));
    assert_false(abx__sandbox_id_valid(""));
    assert_false(abx__sandbox_id_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_distinct),
        cmocka_unit_test(test_validity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
