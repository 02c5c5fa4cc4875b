/* capbuf.c: the capped output buffer (capbuf.h). Owns only memory. */
#include "capbuf.h"

#include <stdlib.h>
#include <string.h>

void abx__capbuf_init(abx_capbuf *b, size_t head_max, size_t tail_max)
{
    memset(b, 0, sizeof *b);
    b->head_max = head_max;
    b->tail_max = tail_max;
}

static size_t append_head(abx_capbuf *b, const char *data, size_t n)
{
    size_t room = b->head_max - b->head_len;
    size_t take = n < room ? n : room;
    if (take == 0)
        return 0;
    if (b->head_len + take > b->head_alloc) {
        size_t want = b->head_alloc ? b->head_alloc * 2 : 4096;
        while (want < b->head_len + take)
            want *= 2;
        if (want > b->head_max)
            want = b->head_max;
        char *grown = realloc(b->head, want);
        if (!grown) {
            b->failed = true;
            return n; /* counted, not kept */
        }
        b->head = grown;
        b->head_alloc = want;
    }
    memcpy(b->head + b->head_len, data, take);
    b->head_len += take;
    return take;
}

static void append_tail(abx_capbuf *b, const char *data, size_t n)
{
    if (b->tail_max == 0 || n == 0)
        return;
    if (!b->tail) {
        b->tail = malloc(b->tail_max);
        if (!b->tail) {
            b->failed = true;
            return;
        }
    }
    if (n > b->tail_max) { /* only the last tail_max bytes can stay */
        data += n - b->tail_max;
        n = b->tail_max;
    }
    size_t first = n < b->tail_max - b->tail_pos ? n : b->tail_max - b->tail_pos;
    memcpy(b->tail + b->tail_pos, data, first);
    memcpy(b->tail, data + first, n - first);
    b->tail_pos = (b->tail_pos + n) % b->tail_max;
    b->tail_len = b->tail_len + n > b->tail_max ? b->tail_max : b->tail_len + n;
}

void abx__capbuf_append(abx_capbuf *b, const void *data, size_t n)
{
    const char *p = data;
    b->total += n;
    size_t used = append_head(b, p, n);
    append_tail(b, p + used, n - used);
}

void abx__capbuf_skip(abx_capbuf *b, uint64_t n)
{
    if (n == 0)
        return;
    b->total += n;
    if (b->tail_len == 0)
        b->head_max = b->head_len; /* later bytes belong after the gap */
}

uint64_t abx__capbuf_dropped(const abx_capbuf *b)
{
    return b->total - b->head_len - b->tail_len;
}

char *abx__capbuf_take(abx_capbuf *b, size_t *len, size_t *cut)
{
    size_t n = b->head_len + b->tail_len;
    char *out = realloc(b->head, n + 1);
    if (!out) {
        abx__capbuf_free(b);
        *len = *cut = 0;
        return NULL;
    }
    /* the ring's oldest byte is at tail_pos once it has wrapped */
    size_t start = b->tail_len < b->tail_max ? 0 : b->tail_pos;
    size_t first = b->tail_len - (b->tail_len < b->tail_max ? 0 : start);
    if (b->tail_len) {
        memcpy(out + b->head_len, b->tail + start, first);
        memcpy(out + b->head_len + first, b->tail, b->tail_len - first);
    }
    out[n] = '\0';
    *len = n;
    *cut = b->head_len;
    free(b->tail);
    size_t head_max = b->head_max, tail_max = b->tail_max;
    abx__capbuf_init(b, head_max, tail_max);
    return out;
}

void abx__capbuf_free(abx_capbuf *b)
{
    free(b->head);
    free(b->tail);
    abx__capbuf_init(b, b->head_max, b->tail_max);
}
