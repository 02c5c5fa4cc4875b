/* snapshot_tree.c: a sandbox's filesystem recorded as a template's tree
 * (snapshot_tree.h).
 *
 * Two phases. While the sandbox is frozen, what it wrote is copied: the
 * overlay's upper layer (without an overlay, its root filesystem), walked
 * directory by directory through descriptors, each entry looked at with
 * fstatat(AT_SYMLINK_NOFOLLOW) and opened with O_NOFOLLOW, so nothing the
 * sandbox made (a link, a mount) sends it elsewhere; the sandbox's merged
 * view beside it tells its mount points, left out. What it deleted
 * (whiteouts), left out, or made anew over the template's (opaque
 * directories) is noted. The walk is bounded in depth, entries and the
 * bytes of what it notes. Then the sandbox thaws and the template's tree
 * is merged in: each of its files the sandbox left alone becomes a hard
 * link to the store's (deduplicated by content: the template store's files
 * are never written, a template's tree is read-only to every sandbox),
 * each directory it did not touch is made. A snapshot outlives the
 * template it came from (the links keep the data).
 *
 * The overlay is mounted without redirect_dir and metacopy (rootfs.c; its
 * userxattr mode has neither): a directory the sandbox renamed is copied
 * whole into the upper layer, and every regular file there holds its data.
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
#include <sys/xattr.h>
#include <unistd.h>

#define ID_RANGE 65536u
#define OVERFLOW_ID 65534u /* nobody: an owner outside the sandbox's range */

/* Relative paths, sorted once noted (looked up while merging). */
typedef struct path_list {
    char **paths;
    size_t n, cap, bytes;
} path_list;

/* The sandbox's regular files with more than one name, by inode: where the
 * first was copied (relative to the snapshot's root), so that each further
 * name is a hard link to that copy (a file linked a million times is
 * copied once, as it takes room once in the sandbox's layer). Open
 * addressing; the paths' bytes bounded as the notes' are. */
typedef struct inode_seen {
    ino_t ino;
    char *path; /* NULL: a free slot */
} inode_seen;

typedef struct inode_map {
    inode_seen *slots;
    size_t cap, n, bytes;
} inode_map;

typedef struct walk {
    uid_t base;   /* host id of the sandbox's root: owners are shifted by it (0 for the store's own) */
    bool merging; /* there is a template to merge in: what is gone and opaque is noted */
    abx_snapshot_stats *st;
    abx_error **err;
    char rel[PATH_MAX]; /* the directory being walked, relative to the root ("" at the top) */
    path_list gone;     /* what the sandbox deleted (whiteouts) or that is left out (devices, sockets,
                           FIFOs, mount points): the template's of that name is not merged in */
    path_list opaque;   /* directories the sandbox made anew where the template has one: nothing of
                           the template's under them */
    inode_map seen;     /* its files of several names */
    int dst_root;       /* the snapshot's root: where seen's paths start */
} walk;

static inode_seen *seen_slot(const inode_map *m, ino_t ino)
{
    size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->slots[i].path && m->slots[i].ino != ino)
        i = (i + 1) & (m->cap - 1);
    return &m->slots[i];
}

/* Where ino's first name was copied, or NULL. */
static const char *seen_path(const walk *w, ino_t ino)
{
    return w->seen.cap ? seen_slot(&w->seen, ino)->path : NULL;
}

/* Records that ino's copy is name, in the directory being walked. */
static int seen_add(walk *w, ino_t ino, const char *name)
{
    inode_map *m = &w->seen;
    if (2 * (m->n + 1) > m->cap) {
        inode_map grown = {.cap = m->cap ? 2 * m->cap : 256, .n = m->n, .bytes = m->bytes};
        if (!(grown.slots = calloc(grown.cap, sizeof *grown.slots)))
            return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the files of several names");
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].path)
                *seen_slot(&grown, m->slots[i].ino) = m->slots[i];
        free(m->slots);
        *m = grown;
    }
    inode_seen *slot = seen_slot(m, ino);
    char *path = NULL;
    int n = asprintf(&path, "%s%s%s", w->rel, w->rel[0] ? "/" : "", name);
    if (n < 0)
        return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the files of several names");
    if ((m->bytes += (size_t)n + 1) > ABX_SNAPSHOT_MAX_NOTED_BYTES) {
        free(path);
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: more than %d MiB of paths of linked files",
                              ABX_SNAPSHOT_MAX_NOTED_BYTES >> 20);
    }
    if (slot->path)
        free(slot->path); /* its earlier copy is full of links (EMLINK): this one is used from now on */
    else
        m->n++;
    *slot = (inode_seen){.ino = ino, .path = path};
    return 0;
}

static void seen_free(inode_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].path);
    free(m->slots);
    *m = (inode_map){0};
}

static int note(walk *w, path_list *l, const char *name)
{
    if (!w->merging)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown)
            return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the paths it notes");
        l->paths = grown;
        l->cap = cap;
    }
    char *path = NULL;
    int n = asprintf(&path, "%s%s%s", w->rel, w->rel[0] ? "/" : "", name);
    if (n < 0)
        return abx__error_set(w->err, ABX_ENOMEM, "snapshot: the paths it notes");
    if ((l->bytes += (size_t)n + 1) > ABX_SNAPSHOT_MAX_NOTED_BYTES) {
        free(path);
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: more than %d MiB of deleted paths",
                              ABX_SNAPSHOT_MAX_NOTED_BYTES >> 20);
    }
    l->paths[l->n++] = path;
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool noted(const walk *w, const path_list *l, const char *name)
{
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s%s%s", w->rel, w->rel[0] ? "/" : "", name);
    const char *key = path;
    return l->n && bsearch(&key, l->paths, l->n, sizeof *l->paths, by_path) != NULL;
}

static void list_free(path_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    *l = (path_list){0};
}

/* w->rel gains name (*at: where to cut it back); -ABX_ETOOBIG past PATH_MAX. */
static int enter(walk *w, const char *name, size_t *at)
{
    *at = strlen(w->rel);
    int n = snprintf(w->rel + *at, sizeof w->rel - *at, "%s%s", *at ? "/" : "", name);
    if (n >= 0 && (size_t)n < sizeof w->rel - *at)
        return 0;
    w->rel[*at] = '\0';
    return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: a path longer than %d bytes", PATH_MAX);
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

/* len bytes at off of in to the same offset of out: copy_file_range, or
 * pread and pwrite where it does not join the two filesystems. */
static int copy_range(int in, int out, off_t off, off_t len, unsigned long long *bytes)
{
    bool plain = false;
    while (len > 0) {
        ssize_t n = -1;
        if (!plain) {
            loff_t from = off, to = off;
            n = copy_file_range(in, &from, out, &to, (size_t)(len < (1 << 30) ? len : (1 << 30)), 0);
            if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
                plain = true;
                continue;
            }
        } else {
            char buf[65536];
            n = pread(in, buf, (size_t)(len < (off_t)sizeof buf ? len : (off_t)sizeof buf), off);
            for (ssize_t done = 0; n > 0 && done < n;) {
                ssize_t wr = pwrite(out, buf + done, (size_t)(n - done), off + done);
                if (wr < 0)
                    return -1;
                done += wr;
            }
        }
        if (n < 0)
            return -1;
        if (n == 0)
            return 0; /* shorter than it was: nothing more to copy */
        off += n;
        len -= n;
        *bytes += (unsigned long long)n;
    }
    return 0;
}

/* in's size bytes to out, extent by extent (SEEK_DATA, SEEK_HOLE): holes
 * stay holes, so a sparse file costs the store what it holds, not what it
 * says its size is (a sandbox's 1 TiB of nothing is no terabyte written). */
static int copy_bytes(int in, int out, off_t size, unsigned long long *bytes)
{
    for (off_t at = 0; at < size;) {
        off_t data = lseek(in, at, SEEK_DATA);
        if (data < 0 && errno == ENXIO)
            break; /* a hole to the end */
        off_t hole = data < 0 ? -1 : lseek(in, data, SEEK_HOLE);
        if (hole < 0 || copy_range(in, out, data, (hole < size ? hole : size) - data, bytes) < 0)
            return -1;
        at = hole;
    }
    return ftruncate(out, size);
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
    int rc = out < 0 || copy_bytes(in, out, s->st_size, &w->st->copied_bytes) < 0 ||
                     keep_attrs(w, out, s, 0777) < 0
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

/* The directories one step of a walk is in: where the entries come from
 * (the upper layer, or the template's tree), the sandbox's merged view of
 * it (the copy only), where they go. */
typedef struct dirs {
    int src, merged, dst;
    bool fresh; /* merging: dst was made here from src, nothing of the sandbox's is in it */
    unsigned depth;
} dirs;

typedef int (*entry_fn)(walk *w, const dirs *at, const char *name);

/* Calls fn for every entry of at->src but . and .. */
static int each_entry(walk *w, const dirs *at, entry_fn fn)
{
    int fd = dup(at->src);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return abx__error_errno(w->err, ABX_EIO, errno, "snapshot: reading a directory");
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = fn(w, at, e->d_name);
    closedir(d);
    return rc;
}

/* Walks directory name of at (made in dst first when make) with fn, then
 * gives the copy s's owner, mode and times when set_attrs. */
static int descend(walk *w, const dirs *at, const char *name, const struct stat *s, bool make, bool set_attrs,
                   entry_fn fn)
{
    if (at->depth + 1 >= ABX_SNAPSHOT_MAX_DEPTH)
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: directories deeper than %d",
                              ABX_SNAPSHOT_MAX_DEPTH);
    if (make && mkdirat(at->dst, name, 0700) < 0)
        return fail(w, "making the directory", name);
    dirs sub = {.src = openat(at->src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                .merged = at->merged >= 0
                              ? openat(at->merged, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                              : -1,
                .dst = openat(at->dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
                .fresh = at->fresh || make,
                .depth = at->depth + 1};
    int rc = sub.src < 0 || sub.dst < 0 || (at->merged >= 0 && sub.merged < 0)
                 ? fail(w, "opening the directory", name)
                 : 0;
    size_t cut = 0;
    if (rc == 0 && (rc = enter(w, name, &cut)) == 0) {
        rc = each_entry(w, &sub, fn);
        w->rel[cut] = '\0';
    }
    if (rc == 0 && set_attrs && keep_attrs(w, sub.dst, s, 01777) < 0)
        rc = fail(w, "keeping the directory's owner and mode", name);
    const int fds[] = {sub.src, sub.merged, sub.dst};
    for (size_t i = 0; i < 3; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}

static int count_entry(walk *w)
{
    if (++w->st->entries > ABX_SNAPSHOT_MAX_ENTRIES)
        return abx__error_set(w->err, ABX_ETOOBIG, "snapshot: more than %llu entries",
                              ABX_SNAPSHOT_MAX_ENTRIES);
    return 0;
}

/* Whether the overlay made directory name of dir opaque (the sandbox
 * removed the template's and made its own): user.overlay.opaque under
 * userxattr, trusted.overlay.opaque otherwise. */
static bool opaque(int dir, const char *name)
{
    int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    char v[2] = "";
    bool yes = (fgetxattr(fd, "user.overlay.opaque", v, 1) == 1 && v[0] == 'y') ||
               (fgetxattr(fd, "trusted.overlay.opaque", v, 1) == 1 && v[0] == 'y');
    close(fd);
    return yes;
}

/* ---- while frozen: what the sandbox wrote -------------------------------- */

/* A regular file of the sandbox's: copied, or linked to the copy of its
 * inode's first name. */
static int copy_file(walk *w, const dirs *at, const char *name, const struct stat *s)
{
    const char *first = s->st_nlink > 1 ? seen_path(w, s->st_ino) : NULL;
    if (first && linkat(w->dst_root, first, at->dst, name, 0) == 0)
        return 0;
    if (first && errno != EMLINK)
        return fail(w, "linking", name);
    int rc = copy_regular(w, at->src, at->dst, name, s);
    if (rc == 0 && s->st_nlink > 1)
        rc = seen_add(w, s->st_ino, name);
    return rc;
}

/* One entry of what the sandbox wrote: copied (a file, a link, a directory
 * and what it holds), or noted as gone. */
static int copy_entry(walk *w, const dirs *at, const char *name)
{
    struct stat s;
    if (fstatat(at->src, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
        return fail(w, "looking at", name);
    int rc = count_entry(w);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(s.st_mode) && !S_ISLNK(s.st_mode) && !S_ISREG(s.st_mode))
        return note(w, &w->gone,
                    name); /* a whiteout (0:0), a device, socket or FIFO: a template holds none */
    struct statx x;
    if (statx(at->merged, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) < 0)
        return fail(w, "looking at", name);
    if (!(x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
        return abx__error_set(w->err, ABX_EHOSTSUPPORT,
                              "snapshot: the kernel does not tell mount points (5.8+)");
    if (x.stx_attributes & STATX_ATTR_MOUNT_ROOT)
        return note(w, &w->gone, name); /* a mount point: /proc, /dev, a bind, a volume */
    if (S_ISLNK(s.st_mode))
        return record_link(w, at->src, at->dst, name, &s);
    if (S_ISREG(s.st_mode))
        return copy_file(w, at, name, &s);
    if (w->merging && opaque(at->src, name) && (rc = note(w, &w->opaque, name)) < 0)
        return rc;
    return descend(w, at, name, &s, true, true, copy_entry);
}

/* ---- thawed: the template's tree merged in --------------------------------- */

static int link_file(walk *w, const dirs *at, const char *name, const struct stat *l)
{
    if (linkat(at->src, name, at->dst, name, 0) == 0) {
        w->st->linked++;
        return 0;
    }
    if (errno != EMLINK)
        return fail(w, "linking", name);
    return copy_regular(w, at->src, at->dst, name, l); /* a file with the most links the filesystem allows */
}

/* One entry of the template's: merged in unless the sandbox deleted,
 * replaced or left it out. */
static int merge_entry(walk *w, const dirs *at, const char *name)
{
    if (!at->fresh && noted(w, &w->gone, name))
        return 0;
    struct stat l, d;
    if (fstatat(at->src, name, &l, AT_SYMLINK_NOFOLLOW) < 0)
        return fail(w, "looking at", name);
    bool have = !at->fresh && fstatat(at->dst, name, &d, AT_SYMLINK_NOFOLLOW) == 0;
    if (have) /* the sandbox's own, or its directory over the template's (both merged unless opaque) */
        return S_ISDIR(d.st_mode) && S_ISDIR(l.st_mode) && !noted(w, &w->opaque, name)
                   ? descend(w, at, name, &l, false, false, merge_entry)
                   : 0;
    int rc = count_entry(w);
    if (rc < 0)
        return rc;
    if (S_ISREG(l.st_mode))
        return link_file(w, at, name, &l);
    if (S_ISLNK(l.st_mode))
        return record_link(w, at->src, at->dst, name, &l);
    if (S_ISDIR(l.st_mode))
        return descend(w, at, name, &l, true, true, merge_entry);
    return 0;
}

int abx__snapshot_tree(int upper_fd, int root_fd, const char *dest, const char *lower, uid_t id_base,
                       int (*thaw)(void *ctx), void *thaw_ctx, abx_snapshot_stats *st, abx_error **err)
{
    memset(st, 0, sizeof *st);
    if (upper_fd < 0 && lower)
        return abx__error_set(err, ABX_EINVAL, "snapshot: a template's tree without the layer over it");
    walk w = {.base = id_base, .merging = lower != NULL, .st = st, .err = err, .dst_root = -1};
    dirs top = {.src = openat(upper_fd >= 0 ? upper_fd : root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC),
                .merged = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC),
                .dst = open(dest, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
    int low = lower ? open(lower, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat s;
    int rc = top.src < 0 || top.merged < 0 || top.dst < 0 || (lower && low < 0) || fstat(top.merged, &s) < 0
                 ? abx__error_errno(err, ABX_EIO, errno, "snapshot: opening the trees")
                 : 0;
    w.dst_root = top.dst;
    if (rc == 0)
        rc = each_entry(&w, &top, copy_entry);
    if (rc == 0 && keep_attrs(&w, top.dst, &s, 01777) < 0)
        rc = abx__error_errno(err, ABX_EIO, errno, "snapshot: the root's owner and mode");
    if (thaw && thaw(thaw_ctx) < 0 && rc == 0)
        rc = abx__error_set(err, ABX_ECGROUP, "snapshot: thawing the sandbox");
    if (rc == 0 && lower) {
        qsort(w.gone.paths, w.gone.n, sizeof *w.gone.paths, by_path);
        qsort(w.opaque.paths, w.opaque.n, sizeof *w.opaque.paths, by_path);
        w.base = 0; /* the template's owners are the store's already */
        dirs merge = {.src = low, .merged = -1, .dst = top.dst};
        rc = each_entry(&w, &merge, merge_entry);
    }
    list_free(&w.gone);
    list_free(&w.opaque);
    seen_free(&w.seen);
    const int fds[] = {top.src, top.merged, top.dst, low};
    for (size_t i = 0; i < 4; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return rc;
}
