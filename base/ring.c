/* ring.c: the offset-addressed output ring (ring.h). */
#include "ring.h"
#include "bounds.h"

#include <stdlib.h>
#include <string.h>

static size_t min_of(const abx_ring *r)
{
    return r->min ? r->min : ABX_BOUND_RING_MIN;
}

static size_t max_of(const abx_ring *r)
{
    return r->max ? r->max : ABX_BOUND_RING;
}

void abx__ring_init(abx_ring *r, size_t min, size_t max, size_t *pool)
{
    memset(r, 0, sizeof *r);
    r->min = min;
    r->max = max;
    r->pool = pool;
}

/* Grows a ring that has not wrapped to hold total + len, within its max
 * and its pool. */
static void grow(abx_ring *r, size_t len)
{
    size_t lo = min_of(r), hi = max_of(r);
    size_t want = r->cap ? r->cap * 2 : lo;
    while (want < r->total + len && want < hi)
        want *= 2;
    if (want > hi)
        want = hi;
    size_t charged = r->cap > lo ? r->cap : lo; /* the first min bytes are not charged */
    size_t more = want > charged ? want - charged : 0;
    if (r->pool && more > *r->pool) /* the pool is spent: keep this size */
        want = r->cap ? r->cap : lo;
    char *grown = want > r->cap ? realloc(r->data, want) : NULL;
    if (grown) {
        if (r->pool && want > charged)
            *r->pool -= want - charged;
        r->data = grown;
        r->cap = want;
    }
}

void abx__ring_append(abx_ring *r, const char *data, size_t len)
{
    if (len == 0)
        return;
    if (r->total + len > r->cap && r->cap < max_of(r) && r->total <= r->cap)
        grow(r, len);
    if (r->cap == 0) {
        r->total += len; /* no memory: counted as dropped */
        return;
    }
    if (len > r->cap) { /* only the tail can be kept */
        r->total += len - r->cap;
        data += len - r->cap;
        len = r->cap;
    }
    size_t pos = (size_t)(r->total % r->cap);
    size_t first = len < r->cap - pos ? len : r->cap - pos;
    memcpy(r->data + pos, data, first);
    memcpy(r->data, data + first, len - first);
    r->total += len;
}

size_t abx__ring_read(const abx_ring *r, uint64_t *off, char *out, size_t max, bool *truncated)
{
    uint64_t oldest = r->total > r->cap ? r->total - r->cap : 0;
    if (*off < oldest) {
        *truncated = true;
        *off = oldest;
    }
    if (*off > r->total)
        *off = r->total;
    size_t n = (size_t)(r->total - *off);
    if (n > max)
        n = max;
    if (n == 0)
        return 0;
    size_t pos = (size_t)(*off % r->cap);
    size_t first = n < r->cap - pos ? n : r->cap - pos;
    memcpy(out, r->data + pos, first);
    memcpy(out + first, r->data, n - first);
    *off += n;
    return n;
}

size_t abx__ring_capacity(const abx_ring *r)
{
    size_t now = r->cap > min_of(r) ? r->cap : min_of(r);
    bool can_grow = r->total <= r->cap && (!r->pool || *r->pool >= max_of(r) - now);
    return can_grow ? max_of(r) : now;
}

void abx__ring_release(abx_ring *r)
{
    size_t lo = min_of(r);
    if (r->pool && r->cap > lo)
        *r->pool += r->cap - lo; /* the first min never came from the pool */
    free(r->data);
    r->data = NULL;
    r->cap = 0;
}
