/* volume_mount.h: a volume's tree, taken by a sandbox's supervisor. */
#ifndef ABX_VOLUME_MOUNT_H
#define ABX_VOLUME_MOUNT_H

#include "abx/abx.h"
#include <stdbool.h>

/* The files of a volume's directory (lib/local/volume_store.c's header says more). */
#define ABX_VOLUME_DATA "data"        /* a volume without a size: the tree itself */
#define ABX_VOLUME_IMAGE "image.ext4" /* a volume with a size: an ext4 image of it */

typedef struct abx_volume_hold {
    int dir_fd;  /* the volume's directory, its shared flock held: the volume is in use while open */
    int tree_fd; /* a detached mount of its tree (not id-mapped yet), for abx__jail_start; -1 once given */
} abx_volume_hold;

/* Takes the volume whose directory is dir (lib/local/volume_store.c's
 * layout): holds it (a shared flock: it is not removed while held) and
 * makes a detached mount of its tree, its data/ directory or, for an image
 * volume, the ext4 filesystem in image.ext4 on a loop device (one per
 * image, shared by every sandbox that mounts it at once: one filesystem,
 * never two over one image). Needs root. *out is the caller's:
 * abx__volume_release. */
int abx__volume_take(const char *dir, bool image, abx_volume_hold *out, abx_error **err);
/* The ext4 filesystem of the image name in dir_fd, mounted detached
 * (nosuid, nodev): on the loop device bound to the image now, else on a
 * new one (AUTOCLEAR), under dir_fd's attach.lock. Its fd, or -ABX_E*. */
int abx__image_mount(int dir_fd, const char *name, abx_error **err);
/* Makes path (new, 0600) a sparse ext4 image of size_mb whose root
 * belongs to uid and gid owner (as ids inside a sandbox), with mkfs.ext4. */
int abx__image_make(const char *path, unsigned size_mb, unsigned owner, abx_error **err);

/* Closes what is still open of it (its tree, then the hold). Idempotent. */
void abx__volume_release(abx_volume_hold *h);

#endif
