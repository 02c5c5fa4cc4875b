/* snapshot_tree.c: a sandbox's filesystem recorded as a template's tree
 * (snapshot_tree.h).
 *
 * Owns the walk: directory by directory through descriptors, each entry
 * looked at with fstatat(AT_SYMLINK_NOFOLLOW) and opened with O_NOFOLLOW,
 * so nothing the sandbox made (a link, a mount) sends it outside the
 * sandbox's root filesystem; bounded in depth and in entries. The sandbox's
 * processes are frozen while it runs (the shim's /abx/snapshot), so the
 * tree does not change under it. What the sandbox left as the template had
 * it is linked, not copied: the template store's files are never written
 * (a template's tree is read-only to every sandbox), so sharing them is
 * safe; a snapshot outlives the template it came from (the links keep the
 * data).
 */
#include "snapshot_tree.h"
#include "error_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ID_RANGE 65536u
#define OVERFLOW_ID 65534u /* nobody: an owner outside the sandbox's range */

typedef struct walk {
    dev_t dev; /* the root filesystem's: a directory of another is a mount point, left out */
    uid_t base;
    abx_snapshot_stats *st;
    abx_error **err;
    char rel[PATH_MAX]; /* the directory being walked, relative to the root ("" at the top) */
    char **links;       /* the unchanged files' relative paths: linked after the thaw */
    size_t nlinks, cap;
} walk;

/* Notes name (in the directory being walked) as a file to link later. */
static int defer_link(walk *w, const char *name)
{
    if (w->nlinks == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 4096;
        char **grown = realloc(w->links, cap * sizeof *grown);
        if (!grown)
            return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the files to link");
        w->links = grown;
        w->cap = cap;
    }
    char *path = NULL;
    if (asprintf(&path, "%s%s%s", w->rel, w->rel[0] ? "/" : "", name) < 0)
        return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the files to link");
    w->links[w->nlinks++] = path;
    return 0;
}

static unsigned shift(const walk *w, unsigned id)
{
    return id >= w->base && id - w->base < ID_RANGE ? id - w->base : OVERFLOW_ID;
}

static int fail(walk *w, const char *what, const char *name)
{
    int saved = errno;
    return abx__error_set(w->err, ABX_EIO, "snapshot: %s %.200s: %s", what, name, strerror(saved));
}

/* Owner, mode (setuid and setgid dropped) and times of what fd is, as s says. */
static int keep_attrs(walk *w, int fd, const struct stat *s, mode_t keep)
{
    struct timespec times[2] = {s->st_atim, s->st_mtim};
    if (fchown(fd, shift(w, s->st_uid), shift(w, s->st_gid)) < 0 || fchmod(fd, s->st_mode & keep) < 0 ||
        futimens(fd, times) < 0)
        return -1;
    return 0;
}

/* Whether the regular file s (named name in the sandbox) is the template's
 * own, unchanged: lower has one of that name with the same size, times,
 * mode and owner (an overlay shows a file it has not copied up with the
 * template's attributes; a write, chmod or chown copies it up, with a new
 * ctime the sandbox cannot set back). */
static bool unchanged(const walk *w, int lower, const char *name, const struct stat *s)
{
    struct stat l;
    return lower >= 0 && fstatat(lower, name, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(l.st_mode) &&
           l.st_size == s->st_size && l.st_mtim.tv_sec == s->st_mtim.tv_sec &&
           l.st_mtim.tv_nsec == s->st_mtim.tv_nsec && l.st_ctim.tv_sec == s->st_ctim.tv_sec &&
           l.st_ctim.tv_nsec == s->st_ctim.tv_nsec && (l.st_mode & 07777) == (s->st_mode & 07777) &&
           l.st_uid == shift(w, s->st_uid) && l.st_gid == shift(w, s->st_gid);
}

static int copy_bytes(int in, int out, unsigned long long *bytes)
{
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0) {
            *bytes += (unsigned long long)n;
            continue;
        }
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return -1;
        char buf[65536]; /* a filesystem pair copy_file_range does not join */
        ssize_t r;
        while ((r = read(in, buf, sizeof buf)) > 0) {
            for (ssize_t done = 0; done < r;) {
                ssize_t wr = write(out, buf + done, (size_t)(r - done));
                if (wr < 0)
                    return -1;
                done += wr;
            }
            *bytes += (unsigned long long)r;
        }
        return r < 0 ? -1 : 0;
    }
}

static int copy_regular(walk *w, int src, int dst, const char *name, const struct stat *s)
{
    int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat again;
    if (in < 0 || fstat(in, &again) < 0 || !S_ISREG(again.st_mode) || again.st_ino != s->st_ino) {
        if (in >= 0)
            close(in);
        return fail(w, "reading", name);
    }
    int out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = out < 0 || copy_bytes(in, out, &w->st->copied_bytes) < 0 || keep_attrs(w, out, s, 0777) < 0
                 ? fail(w, "copying", name)
                 : 0;
    if (out >= 0)
        close(out);
    close(in);
    w->st->copied++;
    return rc;
}

static int record_link(walk *w, int src, int dst, const char *name, const struct stat *s)
{
    char target[4097];
    ssize_t n = readlinkat(src, name, target, sizeof target - 1);
    if (n < 0)
        return fail(w, "reading the link", name);
    target[n] = '\0';
    struct timespec times[2] = {s->st_atim, s->st_mtim};
    if (symlinkat(target, dst, name) < 0 ||
        fchownat(dst, name, shift(w, s->st_uid), shift(w, s->st_gid), AT_SYMLINK_NOFOLLOW) < 0 ||
        utimensat(dst, name, times, AT_SYMLINK_NOFOLLOW) < 0)
        return fail(w, "making the link", name);
    return 0;
}

static int walk_dir(walk *w, int src, int lower, int dst, unsigned depth);

static int record_dir(walk *w, int src, int lower, int dst, const char *name, const struct stat *s,
                      unsigned depth)
{
    if (depth >= ABX_SNAPSHOT_MAX_DEPTH)
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: directories deeper than %d",
                              ABX_SNAPSHOT_MAX_DEPTH);
    if (mkdirat(dst, name, 0700) < 0)
        return fail(w, "making the directory", name);
    int sub_src = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int sub_dst = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int sub_lower = lower >= 0 ? openat(lower, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    size_t at = strlen(w->rel);
    int n = snprintf(w->rel + at, sizeof w->rel - at, "%s%s", at ? "/" : "", name);
    int rc = 0;
    if (n < 0 || (size_t)n >= sizeof w->rel - at)
        rc = abx__error_set(w->err, ABX_ETOOBIG, "snapshot: a path longer than %d bytes", PATH_MAX);
    else if (sub_src < 0 || sub_dst < 0)
        rc = fail(w, "opening the directory", name);
    else
        rc = walk_dir(w, sub_src, sub_lower, sub_dst, depth + 1);
    w->rel[at] = '\0';
    if (rc == 0 && keep_attrs(w, sub_dst, s, 01777) < 0)
        rc = fail(w, "keeping the directory's owner and mode", name);
    if (sub_src >= 0)
        close(sub_src);
    if (sub_dst >= 0)
        close(sub_dst);
    if (sub_lower >= 0)
        close(sub_lower);
    return rc;
}

static int record(walk *w, int src, int lower, int dst, const char *name, unsigned depth)
{
    struct stat s;
    struct statx x;
    if (fstatat(src, name, &s, AT_SYMLINK_NOFOLLOW) < 0 ||
        statx(src, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) < 0)
        return fail(w, "looking at", name);
    if (!(x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
        return abx__error_set(w->err, ABX_EHOSTSUPPORT,
                              "snapshot: the kernel does not tell mount points (5.8+)");
    if (x.stx_attributes & STATX_ATTR_MOUNT_ROOT)
        return 0; /* a mount point: /proc, /dev, a bind, a volume */
    if (S_ISDIR(s.st_mode) && s.st_dev != w->dev)
        return 0; /* not the root's filesystem (an overlay shows a lower file with the lower's device) */
    if (++w->st->entries > ABX_SNAPSHOT_MAX_ENTRIES)
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: more than %llu entries",
                              ABX_SNAPSHOT_MAX_ENTRIES);
    if (S_ISDIR(s.st_mode))
        return record_dir(w, src, lower, dst, name, &s, depth);
    if (S_ISLNK(s.st_mode))
        return record_link(w, src, dst, name, &s);
    if (!S_ISREG(s.st_mode))
        return 0; /* devices, sockets, FIFOs: a template holds none */
    if (unchanged(w, lower, name, &s))
        return defer_link(w, name); /* the template's file cannot change: linked after the thaw */
    return copy_regular(w, src, dst, name, &s);
}

static int walk_dir(walk *w, int src, int lower, int dst, unsigned depth)
{
    int fd = dup(src);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return abx__error_errno(w->err, ABX_EIO, errno, "snapshot: reading a directory");
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        rc = record(w, src, lower, dst, e->d_name, depth);
    }
    closedir(d);
    return rc;
}

/* The unchanged files, linked from the template's tree, or copied from it
 * where a link cannot be made (a file with the most links ext4 allows). */
static int link_deferred(walk *w, int low, int dst, bool go)
{
    int rc = 0;
    for (size_t i = 0; i < w->nlinks; i++) {
        const char *path = w->links[i], *slash = strrchr(path, '/');
        struct stat s;
        if (!go || rc < 0) {
            /* nothing more: the caller discards what was made */
        } else if (linkat(low, path, dst, path, 0) == 0) {
            w->st->linked++;
        } else if (errno != EMLINK || fstatat(low, path, &s, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = fail(w, "linking", path);
        } else {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
            int from = openat(low, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int to = openat(dst, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            uid_t base = w->base;
            w->base = 0; /* the template's owners are the store's already */
            rc = from < 0 || to < 0 ? fail(w, "opening", dir)
                                    : copy_regular(w, from, to, slash ? slash + 1 : path, &s);
            w->base = base;
            if (from >= 0)
                close(from);
            if (to >= 0)
                close(to);
        }
        free(w->links[i]);
    }
    free(w->links);
    w->links = NULL;
    w->nlinks = 0;
    return rc;
}

int abx__snapshot_tree(int root_fd, const char *dest, const char *lower, uid_t id_base,
                       int (*thaw)(void *ctx), void *thaw_ctx, abx_snapshot_stats *st, abx_error **err)
{
    memset(st, 0, sizeof *st);
    walk w = {.base = id_base, .st = st, .err = err};
    int src = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int dst = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int low = lower ? open(lower, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat s;
    int rc = src < 0 || dst < 0 || (lower && low < 0) || fstat(src, &s) < 0
                 ? abx__error_errno(err, ABX_EIO, errno, "snapshot: opening the trees")
                 : 0;
    if (rc == 0) {
        w.dev = s.st_dev;
        rc = walk_dir(&w, src, low, dst, 0);
    }
    if (rc == 0 && keep_attrs(&w, dst, &s, 01777) < 0)
        rc = abx__error_errno(err, ABX_EIO, errno, "snapshot: the root's owner and mode");
    if (thaw && thaw(thaw_ctx) < 0 && rc == 0)
        rc = abx__error_set(err, ABX_ECGROUP, "snapshot: thawing the sandbox");
    int linked = link_deferred(&w, low, dst, rc == 0);
    if (rc == 0)
        rc = linked;
    if (src >= 0)
        close(src);
    if (dst >= 0)
        close(dst);
    if (low >= 0)
        close(low);
    return rc;
}
