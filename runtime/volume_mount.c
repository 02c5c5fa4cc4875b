/* volume_mount.c: a volume's tree for a sandbox (volume_mount.h).
 *
 * Owns how a supervisor reaches a volume: the hold (a shared flock on the
 * volume's directory for the supervisor's whole life, which a removal's
 * exclusive one waits on), and the detached mount of its tree that the
 * jail id-maps for the sandbox (runtime/jail.c). An image volume's ext4
 * filesystem sits on a loop device bound to the image with AUTOCLEAR (it
 * goes when its last mount does); the device is found again by the
 * image's inode while one is bound, under the volume's attach.lock, so
 * that every sandbox mounting the image at once shares one superblock.
 * Every step is checked; a failure takes the sandbox's start down.
 */
#include "volume_mount.h"
#include "error_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_SEARCH_MAX 4096 /* loop devices looked at for the image's */

/* The directory's fd, its shared flock held, still at dir (a removal
 * renames it away under its exclusive flock). */
static int hold_dir(const char *dir, abx_error **err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return abx__error_errno(err, ABX_ENOTFOUND, errno, "volume: its directory");
    struct stat held, named;
    if (flock(fd, LOCK_SH) < 0 || fstat(fd, &held) < 0 || stat(dir, &named) < 0 ||
        held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
        close(fd);
        return abx__error_set(err, ABX_ENOTFOUND, "volume: removed while the sandbox started");
    }
    return fd;
}

/* /dev/loopN bound to the image (dev, ino) now, opened; -1 when none is. */
static int loop_of_image(dev_t dev, ino_t ino)
{
    DIR *d = opendir("/sys/block");
    struct dirent *e;
    int found = -1;
    for (unsigned seen = 0; d && found < 0 && seen < LOOP_SEARCH_MAX && (e = readdir(d)); seen++) {
        if (strncmp(e->d_name, "loop", 4) != 0 || strlen(e->d_name) > 16)
            continue;
        char path[64];
        snprintf(path, sizeof path, "/dev/%.16s", e->d_name);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        struct loop_info64 info;
        if (fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &info) == 0 && info.lo_device == dev &&
            info.lo_inode == ino)
            found = fd;
        else if (fd >= 0)
            close(fd);
    }
    if (d)
        closedir(d);
    return found;
}

/* A new loop device bound to image_fd (AUTOCLEAR), opened. */
static int loop_bind(int image_fd, abx_error **err)
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return abx__error_errno(err, ABX_EHOSTSUPPORT, errno, "/dev/loop-control (a loop device)");
    for (int attempt = 0; attempt < 8; attempt++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0)
            break;
        char path[32];
        snprintf(path, sizeof path, "/dev/loop%d", n);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct loop_config cfg = {.fd = (unsigned)image_fd};
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
            close(ctl);
            return fd;
        }
        close(fd); /* taken by another meanwhile: the next free one */
    }
    int saved = errno;
    close(ctl);
    return abx__error_errno(err, ABX_EHOSTSUPPORT, saved, "volume: binding a loop device to its image");
}

/* A detached mount of the ext4 filesystem on the loop device loop_fd. */
static int mount_loop(int loop_fd)
{
    char source[48];
    snprintf(source, sizeof source, "/proc/self/fd/%d", loop_fd);
    char dev[64];
    ssize_t n = readlink(source, dev, sizeof dev - 1);
    if (n <= 0)
        return -1;
    dev[n] = '\0';
    int fs = fsopen("ext4", FSOPEN_CLOEXEC);
    if (fs < 0)
        return -1;
    int mnt = -1;
    if (fsconfig(fs, FSCONFIG_SET_STRING, "source", dev, 0) == 0 &&
        fsconfig(fs, FSCONFIG_SET_STRING, "errors", "remount-ro", 0) == 0 &&
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == 0)
        mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    int saved = errno;
    close(fs);
    errno = saved;
    return mnt;
}

int abx__image_mount(int dir_fd, const char *name, abx_error **err)
{
    int lock = openat(dir_fd, "attach.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) < 0) {
        int saved = errno;
        if (lock >= 0)
            close(lock);
        return abx__error_errno(err, ABX_EIO, saved, "an image's attach lock");
    }
    int rc = -1, image = openat(dir_fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (image < 0 || fstat(image, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = abx__error_errno(err, ABX_EIO, errno, "an ext4 image");
        goto out;
    }
    int loop = loop_of_image(st.st_dev, st.st_ino);
    int mnt = loop >= 0 ? mount_loop(loop) : -1;
    if (loop >= 0)
        close(loop);
    if (mnt < 0) { /* none bound, or one on its way out: a new one */
        if ((loop = loop_bind(image, err)) < 0) {
            rc = loop;
            goto out;
        }
        mnt = mount_loop(loop);
        int saved = errno;
        close(loop); /* the mount holds it now; AUTOCLEAR unbinds it after the last */
        if (mnt < 0) {
            rc = abx__error_errno(err, ABX_EIO, saved, "mounting an ext4 image");
            goto out;
        }
    }
    rc = mnt;
out:
    if (image >= 0)
        close(image);
    close(lock);
    return rc;
}

int abx__image_make(const char *path, unsigned size_mb, unsigned owner, abx_error **err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return abx__error_errno(err, ABX_EIO, errno, "an ext4 image");
    int rc = ftruncate(fd, (off_t)size_mb << 20);
    int saved = errno;
    close(fd);
    if (rc < 0)
        return abx__error_errno(err, ABX_EIO, saved, "sizing an ext4 image");
    static const char *const mkfs[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};
    const char *tool = access(mkfs[0], X_OK) == 0 ? mkfs[0] : access(mkfs[1], X_OK) == 0 ? mkfs[1] : NULL;
    if (!tool)
        return abx__error_set(err, ABX_EHOSTSUPPORT, "mkfs.ext4 not found (apt-get install e2fsprogs)");
    pid_t pid = fork();
    if (pid < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "fork");
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        char opts[64];
        snprintf(opts, sizeof opts, "root_owner=%u:%u,lazy_itable_init=1", owner, owner);
        execl(tool, tool, "-q", "-F", "-m", "0", "-E", opts, path, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return abx__error_set(err, ABX_EIO, "mkfs.ext4 failed on an image (status %d)", status);
    return 0;
}

/* A detached clone of the directory volume's data/ (not following a link). */
static int dir_tree(int dir_fd, abx_error **err)
{
    struct stat st;
    if (fstatat(dir_fd, ABX_VOLUME_DATA, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
        return abx__error_set(err, ABX_EIO, "volume: its data directory is missing");
    int tree = open_tree(dir_fd, ABX_VOLUME_DATA, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
    return tree < 0 ? abx__error_errno(err, ABX_EJAIL, errno, "volume: cloning its tree") : tree;
}

int abx__volume_take(const char *dir, bool image, abx_volume_hold *out, abx_error **err)
{
    out->dir_fd = out->tree_fd = -1;
    int fd = hold_dir(dir, err);
    if (fd < 0)
        return fd;
    int tree = image ? abx__image_mount(fd, ABX_VOLUME_IMAGE, err) : dir_tree(fd, err);
    if (tree < 0) {
        close(fd);
        return tree;
    }
    out->dir_fd = fd;
    out->tree_fd = tree;
    return 0;
}

void abx__volume_release(abx_volume_hold *h)
{
    if (h->tree_fd >= 0)
        close(h->tree_fd);
    if (h->dir_fd >= 0)
        close(h->dir_fd);
    h->tree_fd = h->dir_fd = -1;
}
