/* test-outbuf.c: the bounded output buffer behind background tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "shim.h"

#include <stdlib.h>
#include <string.h>

static void test_small_reads_by_offset(void **state)
{
    (void)state;
    abx_ring b = {0};
    abx__ring_append(&b, "hello ", 6);
    abx__ring_append(&b, "world", 5);
    char out[32];
    uint64_t off = 0;
    bool trunc = false;
    size_t n = abx__ring_read(&b, &off, out, sizeof out, &trunc);
    assert_int_equal(n, 11);
    assert_memory_equal(out, "hello world", 11);
    assert_int_equal(off, 11);
    assert_false(trunc);
    off = 6;
    n = abx__ring_read(&b, &off, out, 3, &trunc);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "wor", 3);
    off = 99; /* past the end: clamped, nothing read */
    assert_int_equal(abx__ring_read(&b, &off, out, sizeof out, &trunc), 0);
    assert_int_equal(off, 11);
    free(b.data);
}

static void test_wraps_and_truncates(void **state)
{
    (void)state;
    abx_ring b = {0};
    size_t total = 3 * ABX_OUTBUF_CAP + 12345;
    char *chunk = malloc(7001);
    uint64_t written = 0;
    while (written < total) {
        size_t n = total - written < 7001 ? total - written : 7001;
        for (size_t i = 0; i < n; i++)
            chunk[i] = (char)((written + i) % 251);
        abx__ring_append(&b, chunk, n);
        written += n;
    }
    assert_int_equal(b.total, total);
    assert_int_equal(b.cap, ABX_OUTBUF_CAP);
    char *out = malloc(ABX_OUTBUF_CAP);
    uint64_t off = 0;
    bool trunc = false;
    size_t n = abx__ring_read(&b, &off, out, ABX_OUTBUF_CAP, &trunc);
    assert_true(trunc);
    assert_int_equal(n, ABX_OUTBUF_CAP);
    assert_int_equal(off, total);
    uint64_t first = total - ABX_OUTBUF_CAP;
    for (size_t i = 0; i < n; i++)
        if (out[i] != (char)((first + i) % 251))
            fail_msg("byte %zu differs", i);
    /* one huge append keeps only its tail */
    char *huge = malloc(ABX_OUTBUF_CAP + 10);
    memset(huge, 'x', ABX_OUTBUF_CAP + 10);
    huge[ABX_OUTBUF_CAP + 9] = 'z';
    abx__ring_append(&b, huge, ABX_OUTBUF_CAP + 10);
    off = b.total - 1;
    assert_int_equal(abx__ring_read(&b, &off, out, 1, &trunc), 1);
    assert_int_equal(out[0], 'z');
    free(huge);
    free(out);
    free(chunk);
    free(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_reads_by_offset),
        cmocka_unit_test(test_wraps_and_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
