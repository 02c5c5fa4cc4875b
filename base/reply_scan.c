/* reply_scan.c: the bounded reply scanner (reply_scan.h). */
#include "reply_scan.h"
#include "bounds.h"
#include "abx/abx.h"

#include <stdlib.h>
#include <string.h>

#define MARKER_LEN (sizeof ABX_KERNEL_MARKER - 1)

void abx__reply_scan_init(abx_reply_scan *s, size_t head_max, size_t tail_max)
{
    memset(s, 0, sizeof *s);
    abx__capbuf_init(&s->other, head_max, tail_max);
    abx__buf_init(&s->line, ABX_BOUND_KERNEL_LINE);
}

void abx__reply_scan_free(abx_reply_scan *s)
{
    abx__capbuf_free(&s->other);
    abx__buf_free(&s->line);
}

static void line_add(abx_reply_scan *s, const char *data, size_t n)
{
    if (s->overlong) {
        abx__capbuf_skip(&s->other, n);
        return;
    }
    if (n == 0)
        return;
    int rc = abx__buf_append(&s->line, data, n);
    if (rc == -ABX_ETOOBIG) {
        /* not a reply: counted as dropped output, marker included */
        abx__capbuf_skip(&s->other, MARKER_LEN + s->line.len + n);
        s->overlong = true;
        abx__buf_free(&s->line);
    } else if (rc < 0) {
        s->overlong = true; /* cannot hold it: drop it like an overlong one */
    }
}

/* The line ended: a reply for want_id, or NULL (any other line is dropped). */
static json_t *line_end(abx_reply_scan *s, long long want_id)
{
    json_t *doc = NULL;
    if (!s->overlong && s->line.len)
        doc = json_loadb(s->line.data, s->line.len, 0, NULL);
    if (s->overlong)
        s->dropped_lines++;
    s->in_line = s->overlong = false;
    abx__buf_consume(&s->line, s->line.len);
    if (doc && json_is_object(doc) && json_integer_value(json_object_get(doc, "id")) == want_id)
        return doc;
    json_decref(doc);
    return NULL;
}

/* Outside a line: consumes bytes up to and including a whole marker. */
static size_t scan_other(abx_reply_scan *s, const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s->matched == 0) {
            const char *m = memchr(p + i, ABX_KERNEL_MARKER[0], n - i);
            size_t plain = m ? (size_t)(m - (p + i)) : n - i;
            abx__capbuf_append(&s->other, p + i, plain);
            i += plain;
            if (!m)
                break;
        }
        if (p[i] == ABX_KERNEL_MARKER[s->matched]) {
            i++;
            if (++s->matched == MARKER_LEN) {
                s->matched = 0;
                s->in_line = true;
                return i;
            }
            continue;
        }
        /* a partial marker that did not complete is ordinary output; the
         * marker's first byte occurs nowhere else in it, so restart here */
        abx__capbuf_append(&s->other, ABX_KERNEL_MARKER, s->matched);
        s->matched = 0;
    }
    return i;
}

json_t *abx__reply_scan_feed(abx_reply_scan *s, const char *data, size_t n, long long want_id, size_t *used)
{
    size_t i = 0;
    while (i < n) {
        if (!s->in_line) {
            i += scan_other(s, data + i, n - i);
            continue;
        }
        const char *nl = memchr(data + i, '\n', n - i);
        size_t part = nl ? (size_t)(nl - (data + i)) : n - i;
        line_add(s, data + i, part);
        i += part;
        if (!nl)
            break;
        i++; /* the newline */
        json_t *doc = line_end(s, want_id);
        if (doc) {
            *used = i;
            return doc;
        }
    }
    *used = i;
    return NULL;
}
