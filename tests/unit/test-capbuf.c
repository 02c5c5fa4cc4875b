/* test-capbuf.c: the capped output buffer and the kernel reply scanner,
 * fed floods far past their bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "bounds.h"
#include "capbuf.h"
#include "reply_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_small_is_kept_whole(void **state)
{
    (void)state;
    abx_capbuf b;
    abx__capbuf_init(&b, 8, 8);
    abx__capbuf_append(&b, "hello", 5);
    abx__capbuf_append(&b, " world", 6);
    size_t len, cut;
    assert_int_equal(abx__capbuf_dropped(&b), 0);
    char *s = abx__capbuf_take(&b, &len, &cut);
    assert_string_equal(s, "hello world");
    assert_int_equal(len, 11);
    assert_int_equal(cut, 8);
    free(s);
}

/* Every byte is its offset mod 251: head and tail can be checked exactly. */
static void test_flood_keeps_head_and_tail(void **state)
{
    (void)state;
    abx_capbuf b;
    abx__capbuf_init(&b, 1000, 700);
    char chunk[4096];
    unsigned long long off = 0;
    for (int i = 0; i < 3000; i++) { /* 12 MB through a 1700-byte buffer */
        size_t n = (size_t)(1 + (i * 7919) % (int)sizeof chunk);
        for (size_t k = 0; k < n; k++)
            chunk[k] = (char)((off + k) % 251);
        abx__capbuf_append(&b, chunk, n);
        off += n;
        assert_true(b.head_alloc <= 1000);
    }
    assert_int_equal(b.total, off);
    assert_int_equal(abx__capbuf_dropped(&b), off - 1700);
    size_t len, cut;
    char *s = abx__capbuf_take(&b, &len, &cut);
    assert_int_equal(len, 1700);
    assert_int_equal(cut, 1000);
    for (size_t k = 0; k < 1000; k++)
        assert_int_equal((unsigned char)s[k], k % 251);
    for (size_t k = 0; k < 700; k++)
        assert_int_equal((unsigned char)s[1000 + k], (off - 700 + k) % 251);
    free(s);
    abx__capbuf_free(&b);
}

static void test_one_huge_append(void **state)
{
    (void)state;
    abx_capbuf b;
    abx__capbuf_init(&b, 4, 4);
    abx__capbuf_append(&b, "0123456789", 10);
    size_t len, cut;
    char *s = abx__capbuf_take(&b, &len, &cut);
    assert_string_equal(s, "01236789");
    assert_int_equal(cut, 4);
    free(s);
}

/* Bytes dropped before they arrived (abx__capbuf_skip) stand between what
 * came before and what comes after: the head takes nothing more, the cut is
 * reported where they were, and they count as dropped. */
static void test_skip_is_a_gap(void **state)
{
    (void)state;
    abx_capbuf b;
    abx__capbuf_init(&b, 100, 100);
    abx__capbuf_append(&b, "before", 6);
    abx__capbuf_skip(&b, 5000);
    abx__capbuf_append(&b, "after", 5);
    assert_int_equal(abx__capbuf_dropped(&b), 5000);
    assert_int_equal(b.total, 5011);
    size_t len, cut;
    char *s = abx__capbuf_take(&b, &len, &cut);
    assert_string_equal(s, "beforeafter");
    assert_int_equal(len, 11);
    assert_int_equal(cut, 6); /* the gap: after "before", before "after" */
    free(s);
    /* a skip at the very start: nothing before the cut */
    abx__capbuf_init(&b, 100, 100);
    abx__capbuf_skip(&b, 7);
    abx__capbuf_append(&b, "late", 4);
    s = abx__capbuf_take(&b, &len, &cut);
    assert_string_equal(s, "late");
    assert_int_equal(cut, 0);
    free(s);
    /* no skip: the cut is the head's end, after everything */
    abx__capbuf_init(&b, 100, 100);
    abx__capbuf_append(&b, "whole", 5);
    s = abx__capbuf_take(&b, &len, &cut);
    assert_int_equal(cut, 5);
    assert_int_equal(abx__capbuf_dropped(&b), 0);
    free(s);
}

static const char marker[] = ABX_KERNEL_MARKER;

static void test_scan_finds_reply_among_noise(void **state)
{
    (void)state;
    abx_reply_scan sc;
    abx__reply_scan_init(&sc, 64, 64);
    char text[512];
    snprintf(text, sizeof text, "noise\x1e not a marker\n%s{\"id\":1}\nmore%s{\"id\":2,\"x\":3}\ntail",
             marker, marker);
    size_t used = 0, total = strlen(text);
    /* fed one byte at a time: a marker split across chunks is still found */
    json_t *doc = NULL;
    size_t i = 0;
    for (; i < total && !doc; i++)
        doc = abx__reply_scan_feed(&sc, text + i, 1, 2, &used);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "x")), 3);
    assert_int_equal(text[i], 't'); /* what follows the reply is left */
    json_decref(doc);
    size_t len, cut;
    char *other = abx__capbuf_take(&sc.other, &len, &cut);
    assert_string_equal(other, "noise\x1e not a marker\nmore");
    free(other);
    abx__reply_scan_free(&sc);
}

static void test_scan_bounds_a_flooded_line(void **state)
{
    (void)state;
    abx_reply_scan sc;
    abx__reply_scan_init(&sc, 16, 16);
    size_t used;
    assert_null(abx__reply_scan_feed(&sc, marker, strlen(marker), 1, &used));
    char *chunk = malloc(1 << 20);
    memset(chunk, 'A', 1 << 20);
    for (int i = 0; i < 64; i++) { /* 64 MiB of one line, then noise without markers */
        assert_null(abx__reply_scan_feed(&sc, chunk, 1 << 20, 1, &used));
        assert_true(sc.line.cap <= ABX_BOUND_KERNEL_LINE + 1);
    }
    assert_null(abx__reply_scan_feed(&sc, "\n", 1, 1, &used));
    assert_int_equal(sc.dropped_lines, 1);
    for (int i = 0; i < 64; i++)
        assert_null(abx__reply_scan_feed(&sc, chunk, 1 << 20, 1, &used));
    assert_true(sc.other.head_alloc <= 16);
    assert_true(sc.other.total == (128ull << 20) + strlen(marker)); /* the dropped line counts */
    char reply[64];
    snprintf(reply, sizeof reply, "%s{\"id\":1}\n", marker);
    json_t *doc = abx__reply_scan_feed(&sc, reply, strlen(reply), 1, &used);
    assert_non_null(doc);
    json_decref(doc);
    free(chunk);
    abx__reply_scan_free(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_is_kept_whole),
        cmocka_unit_test(test_flood_keeps_head_and_tail),
        cmocka_unit_test(test_one_huge_append),
        cmocka_unit_test(test_skip_is_a_gap),
        cmocka_unit_test(test_scan_finds_reply_among_noise),
        cmocka_unit_test(test_scan_bounds_a_flooded_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
