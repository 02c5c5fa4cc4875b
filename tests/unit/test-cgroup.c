/* test-cgroup.c: the cgroup v2 parent an unprivileged user gets from
 * systemd's delegation (runtime/cgroup.c), from /proc/self/cgroup texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cgroup.h"

static void test_user_service_subtree(void **state)
{
    (void)state;
    char out[400];
    assert_int_equal(abx__cgroup_user_parent("0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
                                             "app-org.gnome.Terminal.slice/vte-spawn-1.scope\n",
                                             1000, out, sizeof out),
                     0);
    assert_string_equal(out, "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/abx.slice");
    /* a hybrid host: v1 lines first, the v2 line last */
    assert_int_equal(abx__cgroup_user_parent("12:pids:/user.slice\n1:name=systemd:/x\n"
                                             "0::/user.slice/user-42.slice/user@42.service/init.scope",
                                             42, out, sizeof out),
                     0);
    assert_string_equal(out, "/sys/fs/cgroup/user.slice/user-42.slice/user@42.service/abx.slice");
}

static void test_no_delegation(void **state)
{
    (void)state;
    char out[400];
    /* a login session scope, another user's service, a longer uid, no v2 line */
    assert_int_equal(
        abx__cgroup_user_parent("0::/user.slice/user-1000.slice/session-3.scope\n", 1000, out, sizeof out),
        -1);
    assert_int_equal(abx__cgroup_user_parent("0::/user.slice/user-1001.slice/user@1001.service/app.slice\n",
                                             1000, out, sizeof out),
                     -1);
    assert_int_equal(abx__cgroup_user_parent("0::/user.slice/user-10001.slice/user@10001.service/x\n", 1000,
                                             out, sizeof out),
                     -1);
    assert_int_equal(
        abx__cgroup_user_parent("4:memory:/user.slice/user@1000.service\n", 1000, out, sizeof out), -1);
    assert_int_equal(abx__cgroup_user_parent("", 1000, out, sizeof out), -1);
    char tiny[16];
    assert_int_equal(
        abx__cgroup_user_parent("0::/user.slice/user-7.slice/user@7.service\n", 7, tiny, sizeof tiny), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_user_service_subtree),
        cmocka_unit_test(test_no_delegation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
