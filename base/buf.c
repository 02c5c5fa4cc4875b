/* buf.c: the bounded growable byte buffer (buf.h). */
#include "buf.h"
#include "abx/abx.h"

#include <stdlib.h>
#include <string.h>

void abx__buf_init(abx_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

/* Capacity for len + n bytes and the NUL: 0, or -ABX_ETOOBIG / -ABX_ENOMEM. */
static int reserve(abx_buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return -ABX_ETOOBIG;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t want = b->cap ? b->cap : 256;
    while (want < need)
        want = want > ((size_t)-1) / 2 ? need : want * 2;
    if (want > b->max + 1 && need <= b->max + 1)
        want = b->max + 1;
    char *grown = realloc(b->data, want);
    if (!grown)
        return -ABX_ENOMEM;
    b->data = grown;
    b->cap = want;
    return 0;
}

int abx__buf_append(abx_buf *b, const void *data, size_t n)
{
    int rc = reserve(b, n);
    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int abx__buf_append_str(abx_buf *b, const char *s)
{
    return abx__buf_append(b, s, strlen(s));
}

char *abx__buf_room(abx_buf *b, size_t n)
{
    return reserve(b, n) < 0 ? NULL : b->data + b->len;
}

void abx__buf_added(abx_buf *b, size_t n)
{
    b->len += n;
    b->data[b->len] = '\0';
}

void abx__buf_consume(abx_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data)
        b->data[b->len] = '\0';
}

char *abx__buf_take(abx_buf *b, size_t *len)
{
    char *out = b->data ? b->data : calloc(1, 1);
    if (len)
        *len = out ? b->len : 0;
    size_t max = b->max;
    abx__buf_init(b, max);
    return out;
}

void abx__buf_free(abx_buf *b)
{
    free(b->data);
    abx__buf_init(b, b->max);
}
