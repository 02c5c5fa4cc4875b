/* template_copy.c: what COPY and ADD of `abx template build` do to files
 * (template_copy.h).
 *
 * Owns: opening sources inside the build context (openat2 with
 * RESOLVE_IN_ROOT: a link in the context cannot lead out of it; `*`
 * patterns in a source's last component), their digest for the cache, and
 * copying them into a tree from a child chroot()ed into it, so that every
 * destination path resolves inside the tree (a link the tree holds cannot
 * lead a write onto the host). Links are copied as links, never followed;
 * devices, fifos and sockets are not copied; bounded depth and count.
 */
#include "template_copy.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define COPY_MAX_DEPTH 256
#define COPY_MAX_ENTRIES 1000000u

__attribute__((format(printf, 3, 4))) static int fail_why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Runs fn in a child chroot()ed into tree (as host root: the tree's own
 * ids are written as they are); 0, or -1 with fn's reason in why. */
static int in_tree(const char *tree, int (*fn)(void *ctx, char *why, size_t len), void *ctx, char *why,
                   size_t len)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        char msg[512] = "";
        int rc = chroot(tree) < 0 || chdir("/") < 0
                     ? (snprintf(msg, sizeof msg, "chroot: %s", strerror(errno)), -1)
                     : fn(ctx, msg, sizeof msg);
        umask(022);
        if (rc < 0)
            (void)abx__write_all(p[1], msg, strlen(msg));
        _exit(rc < 0 ? 1 : 0);
    }
    close(p[1]);
    ssize_t n = abx__read_full(p[0], why, len - 1);
    why[n > 0 ? n : 0] = '\0';
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (!why[0])
        snprintf(why, len, "the copy process failed");
    return -1;
}

/* mkdir -p inside the chroot; every new directory gets owner. */
static int make_dirs(const char *path, uid_t uid, gid_t gid)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *c = buf + 1;; c++) {
        if (*c == '/' || !*c) {
            char saved = *c;
            *c = '\0';
            if (mkdir(buf, 0755) == 0) {
                if (lchown(buf, uid, gid) < 0)
                    return -1;
            } else if (errno != EEXIST) {
                return -1;
            }
            *c = saved;
            if (!saved)
                break;
        }
    }
    struct stat st;
    if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

typedef struct dirs_ctx {
    const char *path;
} dirs_ctx;

static int make_dirs_fn(void *ctx, char *why, size_t len)
{
    const char *path = ((dirs_ctx *)ctx)->path;
    if (make_dirs(path, 0, 0) < 0) {
        snprintf(why, len, "WORKDIR %.200s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

typedef struct copy_ctx {
    const abx_copy_src *srcs;
    size_t n;
    const char *dest; /* absolute inside the tree */
    bool dest_is_dir; /* several sources, or a destination ending in '/' */
    bool keep_owner;  /* unpacked archives keep theirs */
    uid_t uid;
    gid_t gid;
    int mode; /* -1: the source's */
    const abx_ignore *ignore;
    unsigned entries;
} copy_ctx;

/* rel/name into out (the context path of a directory's entry); -1 when too long. */
static int child_rel(char *out, size_t len, const char *rel, const char *name)
{
    int n = snprintf(out, len, "%s%s%s", rel, rel[0] ? "/" : "", name);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

/* A directory stream over a copy of fd, from its first entry (the caller
 * closedir()s it; fd stays open). */
static DIR *dir_of(int fd)
{
    int copy = dup(fd);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (!d && copy >= 0)
        close(copy);
    if (d)
        rewinddir(d);
    return d;
}

static int copy_entry(copy_ctx *c, int srcdir, const char *name, const char *rel, const char *dest,
                      int depth);

static int copy_file_fd(copy_ctx *c, int in, const struct stat *st, const char *dest)
{
    struct stat dst;
    if (lstat(dest, &dst) == 0 && !S_ISDIR(dst.st_mode) && unlink(dest) < 0)
        return -1;
    int out = open(dest, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        rc = n < 0 ? -1 : abx__write_all(out, buf, (size_t)n);
    }
    if (rc == 0)
        rc = fchown(out, c->keep_owner ? st->st_uid : c->uid, c->keep_owner ? st->st_gid : c->gid);
    if (rc == 0)
        rc = fchmod(out, c->mode >= 0 ? (mode_t)c->mode : st->st_mode & 01777);
    int saved = errno;
    close(out);
    errno = saved;
    return rc;
}

/* A directory's entries into dest (made first when make: with the
 * source's mode, or 0755 when .dockerignore excludes it and it is walked
 * only for what an exception keeps); rel is its path in the context. */
static int copy_dir_fd(copy_ctx *c, int dirfd, const struct stat *st, const char *rel, const char *dest,
                       bool make, int depth)
{
    if (depth > COPY_MAX_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    if (make) {
        struct stat dst;
        if (lstat(dest, &dst) == 0 && !S_ISDIR(dst.st_mode) && unlink(dest) < 0)
            return -1;
        if (mkdir(dest, 0755) < 0 && errno != EEXIST)
            return -1;
        bool walked_only = rel[0] && abx__ignore_excluded(c->ignore, rel);
        mode_t mode = c->mode >= 0 ? (mode_t)c->mode : walked_only ? 0755 : st->st_mode & 01777;
        if (lchown(dest, c->keep_owner ? st->st_uid : c->uid, c->keep_owner ? st->st_gid : c->gid) < 0 ||
            chmod(dest, mode) < 0)
            return -1;
    }
    DIR *d = dir_of(dirfd);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char child[4096], crel[4096];
        if (snprintf(child, sizeof child, "%s/%s", strcmp(dest, "/") == 0 ? "" : dest, e->d_name) >=
                (int)sizeof child ||
            child_rel(crel, sizeof crel, rel, e->d_name) < 0) {
            errno = ENAMETOOLONG;
            rc = -1;
            break;
        }
        rc = copy_entry(c, dirfd, e->d_name, crel, child, depth + 1);
    }
    closedir(d);
    return rc;
}

/* One entry of a source directory (rel: its path in the context): links
 * stay links, nothing is followed; what .dockerignore excludes is left
 * out (a directory is still walked when an exception may keep something
 * under it). */
static int copy_entry(copy_ctx *c, int srcdir, const char *name, const char *rel, const char *dest, int depth)
{
    if (++c->entries > COPY_MAX_ENTRIES) {
        errno = EFBIG;
        return -1;
    }
    struct stat st;
    if (fstatat(srcdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    bool excluded = abx__ignore_excluded(c->ignore, rel);
    if (excluded && !(S_ISDIR(st.st_mode) && abx__ignore_has_exceptions(c->ignore)))
        return 0;
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlinkat(srcdir, name, target, sizeof target - 1);
        if (n < 0)
            return -1;
        target[n] = '\0';
        struct stat dst;
        if (lstat(dest, &dst) == 0 && !S_ISDIR(dst.st_mode) && unlink(dest) < 0)
            return -1;
        if (symlink(target, dest) < 0)
            return -1;
        return lchown(dest, c->keep_owner ? st.st_uid : c->uid, c->keep_owner ? st.st_gid : c->gid);
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return 0; /* devices, fifos and sockets are not copied */
    int fd = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (excluded && !abx__ignore_dir_keeps(c->ignore, fd, rel)) { /* nothing kept under it: not made */
        close(fd);
        return 0;
    }
    int rc = S_ISDIR(st.st_mode) ? copy_dir_fd(c, fd, &st, rel, dest, true, depth)
                                 : copy_file_fd(c, fd, &st, dest);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

/* path with its final links followed (inside the tree: this runs
 * chroot()ed into it), into out: where a file COPY names lands, as Docker
 * writes through a link at the destination. Links in the directories
 * before it the kernel follows. */
static int follow_dest(const char *path, char *out, size_t len)
{
    char cur[4096], target[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        ssize_t n;
        if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
            return snprintf(out, len, "%s", cur) < (int)len ? 0 : (errno = ENAMETOOLONG, -1);
        if ((n = readlink(cur, target, sizeof target - 1)) < 0)
            return -1;
        target[n] = '\0';
        char *slash = strrchr(cur, '/');
        char next[4096];
        int w = target[0] == '/' || !slash
                    ? snprintf(next, sizeof next, "%s", target)
                    : snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, target);
        if (w < 0 || (size_t)w >= sizeof next) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(cur, next, (size_t)w + 1);
    }
    errno = ELOOP;
    return -1;
}

static int copy_fn(void *ctx, char *why, size_t len)
{
    copy_ctx *c = ctx;
    const char *failed = c->dest;
    char path[4096];
    int rc = 0;
    if (c->dest_is_dir)
        rc = make_dirs(c->dest, c->uid, c->gid);
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        const abx_copy_src *s = &c->srcs[i];
        struct stat st, dst;
        if (fstat(s->fd, &st) < 0) {
            rc = -1;
            break;
        }
        if (s->is_dir) { /* a directory's contents go into the destination */
            rc = make_dirs(c->dest, c->uid, c->gid);
            if (rc == 0)
                rc = copy_dir_fd(c, s->fd, &st, s->rel, c->dest, false, 0);
            continue;
        }
        bool into = c->dest_is_dir || (stat(c->dest, &dst) == 0 && S_ISDIR(dst.st_mode));
        snprintf(path, sizeof path, "%s%s%s", c->dest, into ? "/" : "", into ? s->name : "");
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            rc = make_dirs(parent, c->uid, c->gid);
        }
        failed = path;
        char landing[4096];
        if (rc == 0)
            rc = follow_dest(path, landing, sizeof landing);
        if (rc == 0)
            rc = copy_file_fd(c, s->fd, &st, landing);
    }
    if (rc < 0)
        snprintf(why, len, "writing %.300s in the template: %s", failed, strerror(errno));
    return rc;
}

static bool has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

int abx__copy_open_in_context(int ctxfd, const char *rel, int flags)
{
    struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC),
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    return (int)syscall(SYS_openat2, ctxfd, rel[0] ? rel : ".", &how, sizeof how);
}

/* Adds what source names (a path, or a pattern in its last component) to
 * the list, each opened inside the context. */
int abx__copy_open_sources(int ctxfd, const char *source, const abx_ignore *ignore, abx_copy_src **srcs,
                           size_t *n, char *why, size_t len)
{
    char rel[4096];
    snprintf(rel, sizeof rel, "%s", source[0] == '/' ? source + 1 : source);
    char *slash = strrchr(rel, '/');
    const char *last = slash ? slash + 1 : rel;
    char parent[4096];
    snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - rel) : 0, rel);
    char names[64][256];
    size_t found = 0;
    if (has_glob(last)) {
        int dfd = abx__copy_open_in_context(ctxfd, parent, O_RDONLY | O_DIRECTORY);
        DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
        struct dirent *e;
        char crel[4096];
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.' && fnmatch(last, e->d_name, FNM_PERIOD) == 0 && found < 64 &&
                child_rel(crel, sizeof crel, parent, e->d_name) == 0 && !abx__ignore_excluded(ignore, crel))
                snprintf(names[found++], sizeof names[0], "%s", e->d_name);
        if (d)
            closedir(d);
        else if (dfd >= 0)
            close(dfd);
    } else {
        snprintf(names[found++], sizeof names[0], "%.255s", last);
    }
    if (found == 0)
        return fail_why(why, len, "%s: nothing in the context matches", source);
    for (size_t i = 0; i < found; i++) {
        char path[4400];
        if (snprintf(path, sizeof path, "%s%s%.255s", parent, parent[0] ? "/" : "", names[i]) >=
            (int)sizeof path)
            return fail_why(why, len, "%.100s: path too long", source);
        if (abx__ignore_excluded(ignore, path))
            return fail_why(why, len, "%s: excluded by the context's .dockerignore", path);
        int fd = abx__copy_open_in_context(ctxfd, path, O_RDONLY | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
            int e = fd < 0 ? errno : EINVAL;
            if (fd >= 0)
                close(fd);
            return fail_why(why, len, "%s: %s in the context", path,
                            e == ENOENT ? "no such file" : strerror(e));
        }
        abx_copy_src *grown = realloc(*srcs, (*n + 1) * sizeof *grown);
        if (!grown) {
            close(fd);
            return fail_why(why, len, "out of memory");
        }
        *srcs = grown;
        (*srcs)[*n] = (abx_copy_src){.fd = fd, .is_dir = S_ISDIR(st.st_mode)};
        snprintf((*srcs)[*n].name, sizeof(*srcs)[*n].name, "%.255s", names[i][0] ? names[i] : "context");
        snprintf((*srcs)[*n].rel, sizeof(*srcs)[*n].rel, "%.4095s", path);
        (*n)++;
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A source's digest for the cache key: names, modes, bytes, link targets
 * (rel: its path in the context; what ignore excludes is left out, so
 * that changing it does not change the key). */
static int digest_source(abx_digest *d, int fd, const char *rel, const abx_ignore *ignore, int depth)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || depth > COPY_MAX_DEPTH)
        return -1;
    char mode[32];
    snprintf(mode, sizeof mode, "%o", (unsigned)st.st_mode);
    abx__digest_add_str(d, mode);
    if (S_ISREG(st.st_mode)) {
        char buf[65536];
        ssize_t n;
        lseek(fd, 0, SEEK_SET);
        while ((n = read(fd, buf, sizeof buf)) > 0)
            abx__digest_add(d, buf, (size_t)n);
        lseek(fd, 0, SEEK_SET);
        return n < 0 ? -1 : 0;
    }
    DIR *dir = dir_of(fd);
    if (!dir)
        return -1;
    size_t n = 0, cap = 0;
    char **list = NULL;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(list, cap * sizeof *grown);
            if (!grown) {
                rc = -1;
                break;
            }
            list = grown;
        }
        list[n++] = strdup(e->d_name);
    }
    for (size_t i = 0; i < n; i++)
        if (!list[i])
            rc = -1;      /* out of memory: no digest rather than a wrong one */
    if (rc == 0 && n > 1) /* sorted, so that the order on disk does not matter (none: no list) */
        qsort(list, n, sizeof *list, by_name);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!list[i]) {
            rc = -1;
            break;
        }
        char crel[4096];
        if (child_rel(crel, sizeof crel, rel, list[i]) < 0) {
            rc = -1;
            break;
        }
        struct stat cst;
        bool excluded = abx__ignore_excluded(ignore, crel);
        if (fstatat(fd, list[i], &cst, AT_SYMLINK_NOFOLLOW) == 0 && excluded &&
            !(S_ISDIR(cst.st_mode) && abx__ignore_has_exceptions(ignore)))
            continue;
        abx__digest_add_str(d, list[i]);
        if (fstatat(fd, list[i], &cst, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = -1;
        } else if (S_ISLNK(cst.st_mode)) {
            char target[4096];
            ssize_t t = readlinkat(fd, list[i], target, sizeof target);
            if (t < 0)
                rc = -1;
            else
                abx__digest_add(d, target, (size_t)t);
        } else if (S_ISREG(cst.st_mode) || S_ISDIR(cst.st_mode)) {
            int cfd = openat(fd, list[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            rc = cfd < 0 ? -1 : digest_source(d, cfd, crel, ignore, depth + 1);
            if (cfd >= 0)
                close(cfd);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
    closedir(dir);
    return rc;
}

bool abx__copy_archive_name(const char *name)
{
    static const char *const ext[] = {".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar.bz2", ".tar.zst"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t e = strlen(ext[i]);
        if (n > e && strcmp(name + n - e, ext[i]) == 0)
            return true;
    }
    return false;
}

int abx__copy_digest(abx_digest *d, const abx_copy_src *src, const abx_ignore *ignore)
{
    return digest_source(d, src->fd, src->rel, ignore, 0);
}

int abx__tree_mkdir_p(const char *tree, const char *path, char *why, size_t len)
{
    dirs_ctx ctx = {.path = path};
    return in_tree(tree, make_dirs_fn, &ctx, why, len);
}

int abx__copy_into_tree(const char *tree, const abx_copy_spec *spec, char *why, size_t len)
{
    copy_ctx c = {.srcs = spec->srcs,
                  .n = spec->n,
                  .dest = spec->dest,
                  .dest_is_dir = spec->dest_is_dir,
                  .keep_owner = spec->keep_owner,
                  .uid = spec->uid,
                  .gid = spec->gid,
                  .mode = spec->mode,
                  .ignore = spec->ignore};
    return in_tree(tree, copy_fn, &c, why, len);
}
