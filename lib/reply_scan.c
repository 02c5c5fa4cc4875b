/* reply_scan.c: the bounded reply scanner (reply_scan.h). */
#include "reply_scan.h"
#include "bounds.h"

#include <stdlib.h>
#include <string.h>

#define MARKER_LEN (sizeof ABX_KERNEL_MARKER - 1)

void abx__reply_scan_init(abx_reply_scan *s, size_t head_max, size_t tail_max)
{
    memset(s, 0, sizeof *s);
    abx__capbuf_init(&s->other, head_max, tail_max);
}

void abx__reply_scan_free(abx_reply_scan *s)
{
    abx__capbuf_free(&s->other);
    free(s->line);
    s->line = NULL;
    s->line_len = s->line_alloc = 0;
}

static void line_add(abx_reply_scan *s, const char *data, size_t n)
{
    if (s->overlong) {
        abx__capbuf_skip(&s->other, n);
        return;
    }
    if (n == 0)
        return;
    if (s->line_len + n > ABX_BOUND_KERNEL_LINE) {
        /* not a reply: counted as dropped output, marker included */
        abx__capbuf_skip(&s->other, MARKER_LEN + s->line_len + n);
        s->overlong = true;
        free(s->line);
        s->line = NULL;
        s->line_len = s->line_alloc = 0;
        return;
    }
    if (s->line_len + n > s->line_alloc) {
        size_t want = s->line_alloc ? s->line_alloc * 2 : 4096;
        while (want < s->line_len + n)
            want *= 2;
        char *grown = realloc(s->line, want);
        if (!grown) {
            s->overlong = true; /* cannot hold it: drop it like an overlong one */
            return;
        }
        s->line = grown;
        s->line_alloc = want;
    }
    memcpy(s->line + s->line_len, data, n);
    s->line_len += n;
}

/* The line ended: a reply for want_id, or NULL (any other line is dropped). */
static json_t *line_end(abx_reply_scan *s, long long want_id)
{
    json_t *doc = NULL;
    if (!s->overlong && s->line_len)
        doc = json_loadb(s->line, s->line_len, 0, NULL);
    if (s->overlong)
        s->dropped_lines++;
    s->in_line = s->overlong = false;
    s->line_len = 0;
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
