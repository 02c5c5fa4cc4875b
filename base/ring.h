/* ring.h: the one offset-addressed output ring of abx (base/ring.c): the
 * last bytes a process wrote to one stream, read by absolute offset, as
 * the shim keeps every process's output and libabx an exec plugin's task
 * output. A ring starts at `min` bytes, grows (doubling, while nothing has
 * wrapped) up to `max`, and charges what it grows past `min` to a pool the
 * rings of one owner share; once the pool is spent it keeps the size it
 * has and wraps sooner. Bytes it cannot keep are counted (total), never
 * held: what a hostile process writes never grows it past its bound.
 *
 * Not locked: the owner holds its own lock around every call.
 */
#ifndef ABX_RING_H
#define ABX_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct abx_ring {
    char *data; /* cap bytes, or NULL */
    size_t cap;
    uint64_t total; /* bytes ever appended: offsets are absolute */
    size_t *pool;   /* bytes the owner's rings may still grow by; NULL: no pool */
    size_t min;     /* its first size (0: ABX_BOUND_RING_MIN), not charged to the pool */
    size_t max;     /* its largest (0: ABX_BOUND_RING) */
} abx_ring;

/* A zeroed ring (min and max as defaults) with pool set is ready too. */
void abx__ring_init(abx_ring *r, size_t min, size_t max, size_t *pool);
void abx__ring_append(abx_ring *r, const char *data, size_t len);
/* Copies up to max bytes from offset *off into out; returns how many and
 * advances *off; sets *truncated when bytes before *off were dropped
 * (*off then first jumps to the oldest byte kept). */
size_t abx__ring_read(const abx_ring *r, uint64_t *off, char *out, size_t max, bool *truncated);
/* The size it can reach without dropping: its max while it has not
 * wrapped and its pool can pay for that, else the size it has. */
size_t abx__ring_capacity(const abx_ring *r);
/* Frees its bytes and gives them back to the pool. */
void abx__ring_release(abx_ring *r);

#endif
