/* snapshot_tree.h: a sandbox's filesystem recorded as a template's tree. */
#ifndef ABX_SNAPSHOT_TREE_H
#define ABX_SNAPSHOT_TREE_H

#include "abx/abx.h"
#include <sys/types.h>

#define ABX_SNAPSHOT_MAX_DEPTH 128          /* directories deep */
#define ABX_SNAPSHOT_MAX_ENTRIES 1000000ull /* entries in one tree (each unchanged file a path in memory) */

typedef struct abx_snapshot_stats {
    unsigned long long linked;       /* files shared with the template's tree (hard links) */
    unsigned long long copied;       /* files copied (written in the sandbox, or not in the template) */
    unsigned long long copied_bytes; /* what they hold */
    unsigned long long entries;      /* everything recorded */
} abx_snapshot_stats;

/* Records the tree under root_fd (a sandbox's "/" seen from the host,
 * /proc/<init>/root, O_PATH; its processes frozen) into the empty directory
 * dest (the caller's, on the template store's filesystem): what lies on
 * root's own filesystem only (not /proc, /dev, binds or volumes), links
 * never followed, devices, sockets and FIFOs left out, setuid and setgid
 * bits dropped, owners shifted from the sandbox's host ids (id_base..
 * id_base+65535) to the template store's (0..65535). A regular file the
 * sandbox did not change (the same size, times, mode and owner as in the
 * template's tree at lower, or NULL) is a hard link to the template's:
 * deduplicated by content with the template store. The tree's shape and
 * what the sandbox wrote are recorded first; then thaw(thaw_ctx) is called
 * (may be NULL: the sandbox can go on, what is left to do touches only the
 * template's files, which do not change); then the links are made. 0, or
 * -ABX_E* with dest partly filled (the caller discards it). */
int abx__snapshot_tree(int root_fd, const char *dest, const char *lower, uid_t id_base,
                       int (*thaw)(void *ctx), void *thaw_ctx, abx_snapshot_stats *st, abx_error **err);

#endif
