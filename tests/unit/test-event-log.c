/* test-event-log.c: the host's event log (runtime/event_log.c) in a
 * directory of its own: numbered in order, read from a number on, an
 * event over the line bound dropped, and a flood kept within two files'
 * bound with the newest events and none missing among them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "event_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char home[64];

static int setup(void **state)
{
    (void)state;
    snprintf(home, sizeof home, "/tmp/abx-event-log-XXXXXX");
    return mkdtemp(home) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct seen {
    unsigned long long seqs[20000];
    size_t n;
    size_t stop_at; /* 0: never */
} seen;

static bool keep(json_t *ev, unsigned long long seq, void *ud)
{
    seen *s = ud;
    assert_int_equal(json_integer_value(json_object_get(ev, "seq")), seq);
    assert_non_null(json_string_value(json_object_get(ev, "time")));
    s->seqs[s->n++] = seq;
    return s->stop_at == 0 || s->n < s->stop_at;
}

static void test_numbered_in_order_and_read_from_a_number(void **state)
{
    (void)state;
    unsigned long long last = 99;
    seen *s = calloc(1, sizeof *s);
    assert_int_equal(abx__event_log_read(home, 0, keep, s, &last), -1); /* no log yet */
    assert_int_equal(last, 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(abx__event_log_append(
                             home, json_pack("{s:s, s:i, s:s}", "type", "create", "i", i, "seq", "forged")),
                         0);
    assert_int_equal(abx__event_log_read(home, 0, keep, s, &last), 0);
    assert_int_equal(s->n, 5);
    assert_int_equal(last, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(s->seqs[i], i + 1); /* the event's own "seq" never wins */
    s->n = 0;
    assert_int_equal(abx__event_log_read(home, 3, keep, s, &last), 0);
    assert_int_equal(s->n, 2);
    assert_int_equal(s->seqs[0], 4);
    s->n = 0;
    s->stop_at = 1;
    assert_int_equal(abx__event_log_read(home, 0, keep, s, &last), 0);
    assert_int_equal(s->n, 1);
    assert_int_equal(last, 1); /* stopped: goes on from there */
    free(s);
}

static void test_an_event_over_the_line_bound_is_dropped(void **state)
{
    (void)state;
    char *big = malloc(ABX_EVENT_LINE_MAX + 10);
    memset(big, 'x', ABX_EVENT_LINE_MAX + 9);
    big[ABX_EVENT_LINE_MAX + 9] = '\0';
    assert_int_equal(abx__event_log_append(home, json_pack("{s:s, s:s}", "type", "network", "huge", big)),
                     -1);
    free(big);
    assert_int_equal(abx__event_log_append(home, json_pack("{s:s}", "type", "kill")), 0);
    seen *s = calloc(1, sizeof *s);
    unsigned long long last = 0;
    assert_int_equal(abx__event_log_read(home, 0, keep, s, &last), 0);
    assert_int_equal(s->n, 1);
    assert_int_equal(s->seqs[0], 1); /* the dropped one took no number */
    free(s);
    assert_int_equal(abx__event_log_append(home, NULL), -1);
    assert_int_equal(abx__event_log_append(home, json_string("not an object")), -1);
}

static void test_a_flood_stays_within_the_bound(void **state)
{
    (void)state;
    char detail[300];
    memset(detail, 'd', sizeof detail - 1);
    detail[sizeof detail - 1] = '\0';
    for (int i = 0; i < 15000; i++)
        assert_int_equal(
            abx__event_log_append(home, json_pack("{s:s, s:s}", "type", "quota_refused", "reason", detail)),
            0);
    char path[128];
    struct stat cur, prev;
    snprintf(path, sizeof path, "%s/events/current.jsonl", home);
    assert_int_equal(stat(path, &cur), 0);
    snprintf(path, sizeof path, "%s/events/previous.jsonl", home);
    assert_int_equal(stat(path, &prev), 0);
    assert_true(cur.st_size <= ABX_EVENT_FILE_MAX && prev.st_size <= ABX_EVENT_FILE_MAX);
    seen *s = calloc(1, sizeof *s);
    unsigned long long last = 0;
    assert_int_equal(abx__event_log_read(home, 0, keep, s, &last), 0);
    assert_true(s->n > 1000 && s->n < 15000);
    assert_int_equal(last, 15000);
    for (size_t i = 1; i < s->n; i++)
        assert_int_equal(s->seqs[i], s->seqs[i - 1] + 1);
    free(s);
}

static void test_home_of_a_state_directory(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(abx__event_log_home_of("/root/.abx/sandboxes/iabc", out, sizeof out), 0);
    assert_string_equal(out, "/root/.abx");
    assert_int_equal(abx__event_log_home_of("/root/.abx/elsewhere/iabc", out, sizeof out), -1);
    assert_int_equal(abx__event_log_home_of("iabc", out, sizeof out), -1);
    assert_int_equal(abx__event_log_home_of("/sandboxes/iabc", out, sizeof out), -1); /* no home above */
    assert_int_equal(abx__event_log_home_of("/a/very/long/home/sandboxes/iabc", out, 8), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_numbered_in_order_and_read_from_a_number, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_event_over_the_line_bound_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_flood_stays_within_the_bound, setup, teardown),
        cmocka_unit_test(test_home_of_a_state_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
