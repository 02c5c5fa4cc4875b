/* volume.h: what every provider's volumes share: names and mount specs. */
#ifndef ABX_VOLUME_H
#define ABX_VOLUME_H

#include "abx/abx.h"
#include <stdbool.h>
#include <stddef.h>

#define ABX_VOLUME_PATH_MAX 255 /* bytes of a mount path inside */

typedef struct abx_volume_mount {
    char name[64];
    char path[ABX_VOLUME_PATH_MAX + 1];
    bool read_only;
} abx_volume_mount;

/* Parses one "NAME:/path[:ro|:rw]" into *out. The path is absolute and
 * plain (no '.', '..', empty components or trailing '/'), not "/" and
 * not in /proc, /dev, /sys or /etc (the sandbox's own). E8001 naming what is wrong. */
int abx__volume_mount_parse(const char *spec, abx_volume_mount *out, abx_error **err);
/* Parses *n specs (at most ABX_VOLUME_MOUNTS_MAX) into out[]; refuses one
 * volume twice and one path at or under another's. */
int abx__volume_mounts_parse(const char *const *specs, abx_volume_mount *out, size_t *n, abx_error **err);

#endif
