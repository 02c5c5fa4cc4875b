/* test-buf.c: the bounded growable buffer (base/buf.c), flooded past its
 * bound, consumed, read into and handed over. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>

static void test_appends_and_terminates(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 64);
    assert_int_equal(abx__buf_append_str(&b, "hello"), 0);
    assert_int_equal(abx__buf_append(&b, "\0 world", 7), 0);
    assert_int_equal(b.len, 12);
    assert_int_equal(b.data[12], '\0');
    assert_memory_equal(b.data, "hello\0 world", 12);
    size_t len = 0;
    char *s = abx__buf_take(&b, &len);
    assert_int_equal(len, 12);
    assert_null(b.data);
    assert_int_equal(b.max, 64); /* the bound stays */
    free(s);
    s = abx__buf_take(&b, &len); /* empty: "" not NULL */
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);
}

static void test_flood_stops_at_the_bound(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 1000);
    char chunk[300];
    memset(chunk, 'x', sizeof chunk);
    int rc = 0, appended = 0;
    for (int i = 0; i < 100000 && rc == 0; i++, appended++)
        rc = abx__buf_append(&b, chunk, sizeof chunk);
    assert_int_equal(rc, -ABX_ETOOBIG);
    assert_int_equal(b.len, 900); /* three fit, the fourth would pass 1000: nothing of it kept */
    assert_true(b.cap <= 1001);
    assert_int_equal(abx__buf_append(&b, chunk, 100), 0); /* exactly to the bound */
    assert_int_equal(abx__buf_append(&b, "y", 1), -ABX_ETOOBIG);
    assert_int_equal(abx__buf_append(&b, chunk, (size_t)-1), -ABX_ETOOBIG); /* no overflow in the check */
    assert_null(abx__buf_room(&b, 1));
    abx__buf_free(&b);
}

static void test_consume_and_room(void **state)
{
    (void)state;
    abx_buf b;
    abx__buf_init(&b, 1 << 20);
    abx__buf_append_str(&b, "line one\nline two\n");
    abx__buf_consume(&b, 9);
    assert_string_equal(b.data, "line two\n");
    char *room = abx__buf_room(&b, 4096);
    assert_non_null(room);
    memcpy(room, "more", 4);
    abx__buf_added(&b, 4);
    assert_string_equal(b.data, "line two\nmore");
    abx__buf_consume(&b, 1000);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    abx__buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends_and_terminates),
        cmocka_unit_test(test_flood_stops_at_the_bound),
        cmocka_unit_test(test_consume_and_room),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
