/* test-seccomp-policy.c: the filter builds and exports, and its arch rules
 * are what the policy says (the escape suite tests it in real sandboxes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "seccomp_policy.h"

#include <stdint.h>

static void test_builds(void **state)
{
    (void)state;
    scmp_filter_ctx ctx = abx__seccomp_policy_new();
    assert_non_null(ctx);
    uint32_t badarch = 0;
    assert_int_equal(seccomp_attr_get(ctx, SCMP_FLTATR_ACT_BADARCH, &badarch), 0);
    assert_int_equal(badarch, SCMP_ACT_KILL_PROCESS);
    /* only the native architecture is in the filter */
    assert_int_equal(seccomp_arch_exist(ctx, SCMP_ARCH_NATIVE), 0);
    assert_int_not_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X86), 0);
    assert_int_not_equal(seccomp_arch_exist(ctx, SCMP_ARCH_X32), 0);
    seccomp_release(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
