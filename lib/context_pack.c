/* context_pack.c: a template build's Dockerfile and context packed into one
 * tar stream by the user who asked for the build (abx_template_pack_context):
 * the abx service never opens a path a client names, it gets this stream.
 *
 * Owns: walking the context with this process's own rights, one directory
 * fd at a time and every entry opened with O_NOFOLLOW (so what is packed is
 * what lstat saw, never what a link points at), what a context may hold
 * (regular files, directories, symbolic links whose targets are relative
 * and have no ".."; anything else refuses the build, naming the path), the
 * bounds (those of the unpacking side, lib/archive_extract.c), and the
 * layout: "Dockerfile", then the context under "context/", leaving out
 * what its .dockerignore excludes (lib/dockerignore.c). libarchive
 * writes the tar; it is loaded on first use, as archive_extract.c loads it.
 */
#include "abx/abx.h"
#include "dockerignore.h"
#include "error_internal.h"
#include "sysutil.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PACK_MAX_ENTRIES 10000
#define PACK_MAX_BYTES (256ull << 20)
#define PACK_MAX_DEPTH 64
#define DOCKERFILE_MAX (1u << 20)

typedef struct writer_api {
    struct archive *(*write_new)(void);
    int (*set_format_pax_restricted)(struct archive *);
    int (*open_fd)(struct archive *, int);
    int (*write_header)(struct archive *, struct archive_entry *);
    la_ssize_t (*write_data)(struct archive *, const void *, size_t);
    int (*write_close)(struct archive *);
    int (*write_free)(struct archive *);
    struct archive_entry *(*entry_new)(void);
    void (*entry_free)(struct archive_entry *);
    void (*set_pathname)(struct archive_entry *, const char *);
    void (*set_filetype)(struct archive_entry *, unsigned int);
    void (*set_perm)(struct archive_entry *, __LA_MODE_T);
    void (*set_size)(struct archive_entry *, la_int64_t);
    void (*set_symlink)(struct archive_entry *, const char *);
    const char *(*error_string)(struct archive *);
} writer_api;

static writer_api W;
static bool w_ok;
static pthread_once_t w_once = PTHREAD_ONCE_INIT;

static void load_writer(void)
{
    void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libarchive.so", RTLD_NOW | RTLD_LOCAL);
    static const char *const names[] = {
        "archive_write_new",          "archive_write_set_format_pax_restricted",
        "archive_write_open_fd",      "archive_write_header",
        "archive_write_data",         "archive_write_close",
        "archive_write_free",         "archive_entry_new",
        "archive_entry_free",         "archive_entry_set_pathname",
        "archive_entry_set_filetype", "archive_entry_set_perm",
        "archive_entry_set_size",     "archive_entry_set_symlink",
        "archive_error_string"};
    void *slots[sizeof names / sizeof names[0]];
    for (size_t i = 0; h && i < sizeof names / sizeof names[0]; i++)
        if (!(slots[i] = dlsym(h, names[i])))
            return;
    if (!h)
        return;
    void **fields[] = {(void **)&W.write_new,    (void **)&W.set_format_pax_restricted,
                       (void **)&W.open_fd,      (void **)&W.write_header,
                       (void **)&W.write_data,   (void **)&W.write_close,
                       (void **)&W.write_free,   (void **)&W.entry_new,
                       (void **)&W.entry_free,   (void **)&W.set_pathname,
                       (void **)&W.set_filetype, (void **)&W.set_perm,
                       (void **)&W.set_size,     (void **)&W.set_symlink,
                       (void **)&W.error_string};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = slots[i];
    w_ok = true;
}

typedef struct packer {
    struct archive *a;
    unsigned entries;
    unsigned long long bytes;
    abx_ignore *ignore; /* the context's .dockerignore (NULL: none); owned */
} packer;

/* One entry's header; the caller writes a regular file's bytes after it. */
static int put_header(packer *p, const char *path, unsigned type, mode_t perm, long long size,
                      const char *link, abx_error **err)
{
    if (++p->entries > PACK_MAX_ENTRIES)
        return abx__error_set(err, ABX_ETOOBIG, "context: more than %d entries", PACK_MAX_ENTRIES);
    struct archive_entry *e = W.entry_new();
    if (!e)
        return abx__error_set(err, ABX_ENOMEM, "context");
    W.set_pathname(e, path);
    W.set_filetype(e, type);
    W.set_perm(e, perm & 0777);
    W.set_size(e, size);
    if (link)
        W.set_symlink(e, link);
    int rc = W.write_header(p->a, e) == ARCHIVE_OK ? 0 : abx__error_set(err, ABX_EIO, "context: %s", path);
    W.entry_free(e);
    return rc;
}

/* A regular file's bytes from fd (at most size: a file that grows meanwhile is cut). */
static int put_data(packer *p, int fd, long long size, const char *path, abx_error **err)
{
    char buf[65536];
    long long left = size;
    while (left > 0) {
        ssize_t n = read(fd, buf, (size_t)(left < (long long)sizeof buf ? left : (long long)sizeof buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return abx__error_set(err, ABX_EIO, "context: reading %s: %s", path, strerror(errno));
        if (n == 0) /* it shrank: pad with zeros, as tar must */
            memset(buf, 0,
                   (size_t)(n = (ssize_t)(left < (long long)sizeof buf ? left : (long long)sizeof buf)));
        if (W.write_data(p->a, buf, (size_t)n) != n)
            return abx__error_set(err, ABX_EIO, "context: writing %s", path);
        left -= n;
    }
    return 0;
}

/* A link target the unpacking side keeps: relative, no ".." component. */
static bool link_inside(const char *target)
{
    if (!*target || target[0] == '/')
        return false;
    for (const char *s = target; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        s += n + (s[n] == '/');
    }
    return true;
}

static int pack_dir(packer *p, int dirfd, const char *rel, unsigned depth, abx_error **err);

static int pack_entry(packer *p, int dirfd, const char *name, const char *path, unsigned depth,
                      abx_error **err)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return abx__error_set(err, ABX_EIO, "context: %s: %s", path + 8, strerror(errno));
    /* as Docker's client: what .dockerignore excludes is not sent (a
     * directory is still walked when an exception may keep something in it) */
    bool excluded = abx__ignore_excluded(p->ignore, path + 8);
    if (excluded && !(S_ISDIR(st.st_mode) && abx__ignore_has_exceptions(p->ignore)))
        return 0;
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        if (n < 0)
            return abx__error_set(err, ABX_EIO, "context: %s: %s", path + 8, strerror(errno));
        target[n] = '\0';
        if (!link_inside(target))
            return abx__error_set(
                err, ABX_EINVAL,
                "context: %s is a symbolic link leaving the context (to %.200s): copy the file "
                "in instead",
                path + 8, target);
        return put_header(p, path, AE_IFLNK, 0777, 0, target, err);
    }
    if (S_ISDIR(st.st_mode)) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return abx__error_set(err, ABX_EIO, "context: %s: %s", path + 8, strerror(errno));
        if (excluded && !abx__ignore_dir_keeps(p->ignore, fd, path + 8)) { /* nothing kept under it */
            close(fd);
            return 0;
        }
        int rc = put_header(p, path, AE_IFDIR, excluded ? 0755 : st.st_mode, 0, NULL, err);
        if (rc == 0)
            rc = pack_dir(p, fd, path, depth + 1, err);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode))
        return abx__error_set(err, ABX_EINVAL, "context: %s is neither a file, a directory nor a link",
                              path + 8);
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return abx__error_set(err, ABX_EIO, "context: cannot open %s: %s", path + 8, strerror(errno));
    p->bytes += (unsigned long long)st.st_size;
    int rc = p->bytes > PACK_MAX_BYTES
                 ? abx__error_set(err, ABX_ETOOBIG, "context: more than %llu MiB", PACK_MAX_BYTES >> 20)
                 : put_header(p, path, AE_IFREG, st.st_mode, st.st_size, NULL, err);
    if (rc == 0)
        rc = put_data(p, fd, st.st_size, path, err);
    close(fd);
    return rc;
}

static int pack_dir(packer *p, int dirfd, const char *rel, unsigned depth, abx_error **err)
{
    if (depth > PACK_MAX_DEPTH)
        return abx__error_set(err, ABX_ETOOBIG, "context: deeper than %d directories", PACK_MAX_DEPTH);
    int dup_fd = dup(dirfd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0)
            close(dup_fd);
        return abx__error_set(err, ABX_EIO, "context: %s: %s", rel, strerror(errno));
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", rel, e->d_name) >= sizeof path)
            rc = abx__error_set(err, ABX_ETOOBIG, "context: a path longer than %zu bytes", sizeof path);
        else
            rc = pack_entry(p, dirfd, e->d_name, path, depth, err);
    }
    closedir(d);
    return rc;
}

/* The Dockerfile, read as this user (at most DOCKERFILE_MAX), as the entry "Dockerfile". */
static int pack_dockerfile(packer *p, const char *path, abx_error **err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return abx__error_set(err, ABX_EIO, "cannot open %s: %s", path, strerror(errno));
    int rc =
        fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? abx__error_set(err, ABX_EINVAL, "%s: not a file", path)
        : st.st_size > (off_t)DOCKERFILE_MAX
            ? abx__error_set(err, ABX_ETOOBIG, "%s: a Dockerfile over %u KiB", path, DOCKERFILE_MAX >> 10)
            : put_header(p, "Dockerfile", AE_IFREG, 0644, st.st_size, NULL, err);
    if (rc == 0)
        rc = put_data(p, fd, st.st_size, "Dockerfile", err);
    close(fd);
    return rc;
}

/* The context's .dockerignore, read as this user, into p->ignore (none: NULL). */
static int read_ignore(packer *p, int dirfd, abx_error **err)
{
    int fd = openat(dirfd, ".dockerignore", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0
                               : abx__error_set(err, ABX_EIO, "context: .dockerignore: %s", strerror(errno));
    char why[300];
    int rc = abx__ignore_read_fd(fd, &p->ignore, why, sizeof why) < 0
                 ? abx__error_set(err, ABX_EINVAL, "context: %s", why)
                 : 0;
    close(fd);
    return rc;
}

int abx_template_pack_context(const char *dockerfile, const char *context, int fd, abx_error **err)
{
    pthread_once(&w_once, load_writer);
    if (!w_ok)
        return abx__error_set(err, ABX_EHOSTSUPPORT,
                              "libarchive could not be loaded (apt-get install libarchive13)");
    const char *ctx = context && *context ? context : ".";
    char df[4096];
    snprintf(df, sizeof df, "%s", dockerfile ? dockerfile : "");
    if (!dockerfile)
        snprintf(df, sizeof df, "%s/Dockerfile", ctx);
    int dirfd = open(ctx, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return abx__error_set(err, ABX_EIO, "context %s: %s", ctx, strerror(errno));
    packer p = {.a = W.write_new()};
    int rc = p.a && W.set_format_pax_restricted(p.a) == ARCHIVE_OK && W.open_fd(p.a, fd) == ARCHIVE_OK
                 ? 0
                 : abx__error_set(err, ABX_EIO, "packing the context");
    if (rc == 0)
        rc = read_ignore(&p, dirfd, err);
    if (rc == 0)
        rc = pack_dockerfile(&p, df, err);
    if (rc == 0)
        rc = put_header(&p, "context", AE_IFDIR, 0755, 0, NULL, err);
    if (rc == 0)
        rc = pack_dir(&p, dirfd, "context", 0, err);
    if (p.a && W.write_close(p.a) != ARCHIVE_OK && rc == 0)
        rc = abx__error_set(err, ABX_EIO, "packing the context: %s", W.error_string(p.a));
    if (p.a)
        W.write_free(p.a);
    abx__ignore_free(p.ignore);
    close(dirfd);
    return rc;
}
