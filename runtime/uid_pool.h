/* uid_pool.h: a range of host uids/gids of its own for each sandbox. */
#ifndef ABX_UID_POOL_H
#define ABX_UID_POOL_H

#include "abx/abx.h"
#include <sys/types.h>

/* The pool: ABX_UID_POOL_SLOTS ranges of ABX_HOST_ID_COUNT ids from
 * ABX_UID_POOL_BASE on (1000000000 .. 1536870911 by default: 8192 ranges); the
 * environment variables of the same names move and resize it. */
#define ABX_UID_POOL_BASE_DEFAULT 1000000000u
#define ABX_UID_POOL_SLOTS_DEFAULT 8192u
#define ABX_UID_POOL_DIR "/run/abx/uid-slots"

/* How many ranges the pool has. */
unsigned abx__uid_pool_slots(void);
/* How many ranges are held now (by live sandboxes and containers). */
unsigned abx__uid_pool_used(void);
/* Takes a free range: *base is its first host id; *lock_fd holds it (an
 * flock on ABX_UID_POOL_DIR/<base>) until closed, by the caller after the
 * sandbox's last process is gone. Returns 0, or -ABX_ELIMIT when every
 * range is taken. */
int abx__uid_range_take(uid_t *base, int *lock_fd, abx_error **err);

#endif
