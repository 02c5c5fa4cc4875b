/* test-prom.c: Prometheus' text exposition writer (base/prom.c): label
 * values escaped so that no input breaks a line or forges a series,
 * values printed as Prometheus reads them, and the buffer's bound kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "prom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_family_and_samples(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 4096);
    assert_int_equal(abx__prom_family(&b, "abx_x_total", "counter", "things"), 0);
    const char *labels[] = {"sandbox_id", "i123", "template", "base", NULL};
    assert_int_equal(abx__prom_sample_u(&b, "abx_x_total", labels, 18446744073709551615ull), 0);
    assert_int_equal(abx__prom_sample_u(&b, "abx_up", NULL, 1), 0);
    assert_string_equal(b.data, "# HELP abx_x_total things\n# TYPE abx_x_total counter\n"
                                "abx_x_total{sandbox_id=\"i123\",template=\"base\"} 18446744073709551615\n"
                                "abx_up 1\n");
    abx__buf_free(&b);
}

static void test_hostile_label_values_are_escaped(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 4096);
    const char *labels[] = {"template", "a\"} 1\nabx_forged 2\n\\", "tenant", NULL, NULL};
    assert_int_equal(abx__prom_sample_u(&b, "abx_s", labels, 7), 0);
    assert_string_equal(b.data, "abx_s{template=\"a\\\"} 1\\nabx_forged 2\\n\\\\\",tenant=\"\"} 7\n");
    assert_ptr_equal(strchr(b.data, '\n'), b.data + b.len - 1); /* one line, one series */
    abx__buf_free(&b);
}

static void test_real_values(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 4096);
    assert_int_equal(abx__prom_sample_f(&b, "a", NULL, 0.25), 0);
    assert_int_equal(abx__prom_sample_f(&b, "b", NULL, INFINITY), 0);
    assert_int_equal(abx__prom_sample_f(&b, "c", NULL, -INFINITY), 0);
    assert_int_equal(abx__prom_sample_f(&b, "d", NULL, NAN), 0);
    assert_int_equal(abx__prom_sample_f(&b, "e", NULL, 123456.789), 0);
    assert_string_equal(b.data, "a 0.25\nb +Inf\nc -Inf\nd NaN\ne 123456.789\n");
    abx__buf_free(&b);
}

static void test_flood_stops_at_the_bound(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 10000);
    char big[3000];
    memset(big, '"', sizeof big - 1); /* each doubles when escaped */
    big[sizeof big - 1] = '\0';
    const char *labels[] = {"v", big, NULL};
    int rc = 0, n = 0;
    for (; n < 100 && rc == 0; n++)
        rc = abx__prom_sample_u(&b, "abx_s", labels, 1);
    assert_int_equal(rc, -ABX_ETOOBIG);
    assert_true(b.len <= 10000);
    assert_true(n < 100);
    abx__buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_hostile_label_values_are_escaped),
        cmocka_unit_test(test_real_values),
        cmocka_unit_test(test_flood_stops_at_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
