/* snapshot_tree.h: a sandbox's filesystem recorded as a template's tree. */
#ifndef ABX_SNAPSHOT_TREE_H
#define ABX_SNAPSHOT_TREE_H

#include "abx/abx.h"
#include <sys/types.h>

#define ABX_SNAPSHOT_MAX_DEPTH 128              /* directories deep */
#define ABX_SNAPSHOT_MAX_ENTRIES 1000000ull     /* entries in one tree */
#define ABX_SNAPSHOT_MAX_NOTED_BYTES (64 << 20) /* paths the sandbox deleted or left out, kept to merge */

typedef struct abx_snapshot_stats {
    unsigned long long linked;       /* files shared with the template's tree (hard links) */
    unsigned long long copied;       /* files copied (written in the sandbox, or not in the template) */
    unsigned long long copied_bytes; /* what they hold */
    unsigned long long entries;      /* everything recorded */
} abx_snapshot_stats;

/* Records a sandbox's filesystem into the empty directory dest (the
 * caller's, on the template store's filesystem). root_fd is the sandbox's
 * "/" seen from the host (/proc/<init>/root, O_PATH), its processes
 * frozen; upper_fd the overlay's upper directory over the template's tree
 * at lower (what the sandbox wrote: copied), or -1 with lower NULL when
 * root_fd's own filesystem is all of it. What lies on that filesystem
 * only is recorded (not /proc, /dev, binds or volumes), links never
 * followed, devices, sockets and FIFOs left out, setuid and setgid bits
 * dropped, owners shifted from the sandbox's host ids (id_base..
 * id_base+65535) to the template store's (0..65535). What the sandbox
 * wrote is copied first; then thaw(thaw_ctx) is called (may be NULL: the
 * sandbox can go on, what is left touches only the template's files, which
 * do not change); then lower's files the sandbox did not delete or replace
 * are merged in as hard links to the store's (deduplicated by content).
 * 0, or -ABX_E* with dest partly filled (the caller discards it). */
int abx__snapshot_tree(int upper_fd, int root_fd, const char *dest, const char *lower, uid_t id_base,
                       int (*thaw)(void *ctx), void *thaw_ctx, abx_snapshot_stats *st, abx_error **err);

#endif
