/* rootfs.h: building the sandbox's root filesystem. */
#ifndef ABX_ROOTFS_H
#define ABX_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct abx_rootfs_volume {
    int fd;           /* a detached, id-mapped mount of the volume's tree (consumed) */
    const char *path; /* where in the tree: made (each component a directory, no link followed) */
} abx_rootfs_volume;

typedef struct abx_rootfs_spec {
    const char *hostname;    /* written to /etc/hostname and /etc/hosts */
    unsigned disk_mb;        /* size of the writable layer */
    bool full_id_range;      /* uid/gid 0..65535 are mapped (abx runs as host root) */
    const char *resolv_conf; /* /etc/resolv.conf's text; NULL: a copy of the host's */
    int template_fd;         /* a template's tree (idmapped, detached mount), consumed; -1: the host view */
    bool template_writable;  /* that tree is the root itself, written through (template builds):
                                no overlay, no /app or /home made in it, /etc's hostname, hosts
                                and resolv.conf bound over, not written */
    bool host_view; /* over template_fd, the host view's plan (/usr and /etc from the host): a snapshot
                       of a sandbox from base */
    int layer_fd;   /* a durable sandbox's writable layer (an id-mapped ext4 mount, consumed): the root,
                       or over a template the overlay's upper layer; -1: a tmpfs of disk_mb */
    const abx_rootfs_volume *volumes; /* mounted last, before the pivot */
    size_t n_volumes;
    int *upper_out; /* over a template: where the overlay's upper directory is opened (the caller's fd,
                       O_RDONLY): what the sandbox wrote, for a snapshot; NULL: not wanted */
} abx_rootfs_spec;

/* Inside a fresh mount namespace (and user namespace with CAP_SYS_ADMIN),
 * builds the sandbox tree and pivots into it. On failure returns -ABX_EJAIL
 * and writes the failing step into errbuf. Must run in the sandbox's init,
 * before any untrusted code exists. */
int abx__rootfs_build(const abx_rootfs_spec *spec, char *errbuf, size_t errlen);

/* The flags the kernel locks on the mount at path when it came from a more
 * privileged namespace (nosuid, nodev, noexec, the atime ones, ro): a
 * remount must keep them or fail with EPERM. 0 when path cannot be read. */
unsigned long abx__rootfs_locked_flags(const char *path);

#endif
