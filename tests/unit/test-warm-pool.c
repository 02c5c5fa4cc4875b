/* test-warm-pool.c: when the warm pool starts sandboxes: the missing ones
 * once the creates pause (100 ms without a take), at once when it runs low
 * (a quarter of the pool or less), never more than are missing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "warm_pool.h"

#define MS 1000000ull

static void test_full_pool_starts_none(void **state)
{
    (void)state;
    assert_int_equal(abx__warm_refill_count(8, 8, 0), 0);
    assert_int_equal(abx__warm_refill_count(8, 8, 10000 * MS), 0);
    assert_int_equal(abx__warm_refill_count(8, 9, 10000 * MS), 0); /* more than wanted: a smaller --warm */
}

static void test_waits_while_creates_come(void **state)
{
    (void)state;
    /* a burst: a take every few ms, the pool above its low mark: nothing yet */
    for (size_t count = 3; count < 8; count++)
        assert_int_equal(abx__warm_refill_count(8, count, 5 * MS), 0);
    assert_int_equal(abx__warm_refill_count(8, 7, 99 * MS), 0);
}

static void test_refills_once_creates_pause(void **state)
{
    (void)state;
    assert_int_equal(abx__warm_refill_count(8, 7, 100 * MS), 1);
    assert_int_equal(abx__warm_refill_count(8, 3, 250 * MS), 5);
    assert_int_equal(abx__warm_refill_count(2, 1, 100 * MS), 1);
}

static void test_refills_at_once_when_low(void **state)
{
    (void)state;
    assert_int_equal(abx__warm_refill_count(8, 2, 0), 6);
    assert_int_equal(abx__warm_refill_count(8, 0, 1 * MS), 8);
    assert_int_equal(abx__warm_refill_count(16, 4, 0), 12);
    assert_int_equal(abx__warm_refill_count(16, 5, 0), 0);
    assert_int_equal(abx__warm_refill_count(1, 0, 0), 1); /* a pool of one: refilled as soon as it is taken */
    assert_int_equal(abx__warm_refill_count(2, 0, 0), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_pool_starts_none),
        cmocka_unit_test(test_waits_while_creates_come),
        cmocka_unit_test(test_refills_once_creates_pause),
        cmocka_unit_test(test_refills_at_once_when_low),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
