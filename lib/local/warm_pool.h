/* warm_pool.h: sandboxes started ahead for a long-lived client.
 *
 * Starting a local sandbox costs one cgroup attach, and on this kind of
 * kernel an attach waits for an RCU grace period (5-25 ms here, whatever
 * the machine's load). A long-lived client (abx serve, an MCP server) keeps
 * a few standby sandboxes of the shape its creates ask for; a create takes
 * one and the pool's thread starts the missing ones in the background once
 * the creates pause (starting processes slows the ones in use: 40 % on a
 * paravirtualized 2-core VM, whatever their nice value), or at once when it
 * runs low.
 */
#ifndef ABX_WARM_POOL_H
#define ABX_WARM_POOL_H

#include "provider.h"

#include <stdbool.h>

#define ABX_WARM_POOL_MAX 16

/* What a standby sandbox is fixed with at start: a create of another shape
 * takes none. */
typedef struct abx_warm_shape {
    char template_id[64];
    unsigned cpu_count, memory_mb;
} abx_warm_shape;

/* Starts one standby sandbox of that shape; *out is the pool's. */
typedef int (*abx_warm_make_fn)(const abx_warm_shape *shape, abx_sandbox **out);
/* Ends a standby sandbox and frees the handle. */
typedef void (*abx_warm_kill_fn)(abx_sandbox *s);

typedef struct abx_warm_pool abx_warm_pool;

/* A pool keeping want (1-ABX_WARM_POOL_MAX) sandboxes of the shape last
 * asked for (at first: shape), with its own thread; NULL when it cannot start. */
abx_warm_pool *abx__warm_pool_new(unsigned want, const abx_warm_shape *shape, abx_warm_make_fn make,
                                  abx_warm_kill_fn kill);
/* Stops the thread and ends every sandbox still standing by. NULL is a no-op. */
void abx__warm_pool_free(abx_warm_pool *p);
/* A standby sandbox of that shape (the caller's: claim it or kill it), or
 * NULL; the shape becomes what the pool keeps. */
abx_sandbox *abx__warm_pool_take(abx_warm_pool *p, const abx_warm_shape *shape);

/* How many stand by now, and how many the pool keeps. */
void abx__warm_pool_counts(abx_warm_pool *p, unsigned *ready, unsigned *want);

/* How many to start now, with count of want standing by and since_take_ns
 * since the last take: the missing ones once the creates have paused for
 * 100 ms, or at once when count is down to a quarter of want; else none. */
unsigned abx__warm_refill_count(unsigned want, size_t count, unsigned long long since_take_ns);

#endif
