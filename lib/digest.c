/* digest.c: SHA-256 through libcrypto's EVP interface (digest.h), of
 * bytes, files and whole trees; libcrypto's digests are loaded on first
 * use (base/evp_api.h). */
#include "digest.h"
#include "evp_api.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct abx_digest {
    EVP_MD_CTX *md;
    int failed;
};

abx_digest *abx__digest_new(void)
{
    static abx_digest none = {NULL, 1}; /* out of memory: every call fails at finish */
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return &none;
    }
    abx_digest *d = OPENSSL_zalloc(sizeof *d);
    if (!d) {
        EVP_MD_CTX_free(md);
        return &none;
    }
    d->md = md;
    return d;
}

void abx__digest_add(abx_digest *d, const void *data, size_t len)
{
    if (!d->failed && EVP_DigestUpdate(d->md, data, len) != 1)
        d->failed = 1;
}

void abx__digest_add_str(abx_digest *d, const char *s)
{
    abx__digest_add(d, s, strlen(s) + 1);
}

int abx__digest_add_file(abx_digest *d, int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            abx__digest_add(d, buf, (size_t)n);
    close(fd);
    return n < 0 ? -1 : 0;
}

int abx__digest_finish(abx_digest *d, char hex[ABX_DIGEST_HEX])
{
    unsigned char sum[32];
    unsigned len = 0;
    int rc = d->md && !d->failed && EVP_DigestFinal_ex(d->md, sum, &len) == 1 && len == 32 ? 0 : -1;
    if (d->md) {
        EVP_MD_CTX_free(d->md);
        OPENSSL_free(d);
    }
    hex[0] = '\0';
    for (int i = 0; rc == 0 && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    return rc;
}

int abx__sha256_file_hex(const char *path, char hex[ABX_DIGEST_HEX])
{
    abx_digest *d = abx__digest_new();
    if (abx__digest_add_file(d, AT_FDCWD, path) < 0) {
        abx__digest_finish(d, hex);
        return -1;
    }
    return abx__digest_finish(d, hex);
}

/* ---- trees ---------------------------------------------------------------------- */

typedef struct path_list {
    char **paths;
    size_t n, cap, max;
} path_list;

static int list_add(path_list *l, const char *rel)
{
    if (l->n >= l->max) {
        errno = E2BIG;
        return -1;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->paths = grown;
        l->cap = cap;
    }
    return (l->paths[l->n++] = strdup(rel)) ? 0 : -1;
}

/* Every path under dirfd (relative, "a/b"), symbolic links not followed. */
static int walk(int dirfd, const char *rel, int depth, int max_depth, path_list *l)
{
    if (depth > max_depth) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(dirfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char child[4096];
        int n = snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        if (n < 0 || (size_t)n >= sizeof child || list_add(l, child) < 0) {
            rc = -1;
            break;
        }
        struct stat st;
        if (fstatat(dirfd, child, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            rc = walk(dirfd, child, depth + 1, max_depth, l);
    }
    closedir(d);
    return rc;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A regular file's bytes into d and, as they are read, into a new file rel
 * of copyfd with mode (the one hashed). The file opened must be the one
 * stat'ed (st): else ESTALE. */
static int copy_file(abx_digest *d, int dirfd, const char *rel, const struct stat *st, int copyfd)
{
    int in = openat(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat now;
    if (in < 0)
        return -1;
    if (fstat(in, &now) < 0 || !S_ISREG(now.st_mode) || now.st_ino != st->st_ino ||
        now.st_dev != st->st_dev) {
        close(in);
        errno = ESTALE;
        return -1;
    }
    int out = openat(copyfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = out < 0 ? -1 : 0;
    char buf[65536];
    ssize_t n;
    while (rc == 0 && ((n = read(in, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
        if (n <= 0)
            continue;
        abx__digest_add(d, buf, (size_t)n);
        for (ssize_t done = 0, w; rc == 0 && done < n; done += w)
            if ((w = write(out, buf + done, (size_t)(n - done))) <= 0)
                rc = -1;
    }
    if (rc == 0 && n < 0)
        rc = -1;
    if (rc == 0 && fchmod(out, st->st_mode & 0777) < 0)
        rc = -1;
    int saved = errno;
    if (out >= 0 && close(out) < 0 && rc == 0)
        rc = -1;
    close(in);
    errno = rc < 0 ? saved : errno;
    return rc;
}

/* One entry: "path\0mode\0" (with owners: "uid:gid\0"), then a regular
 * file's bytes or a link's target, then "\n". With copyfd >= 0 the entry is
 * also made there, of what was hashed. */
static int hash_entry(abx_digest *d, int dirfd, const char *rel, const abx_tree_digest_rules *r, int copyfd)
{
    struct stat st;
    if (fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    char mode[32], owner[48];
    snprintf(mode, sizeof mode, "%o", (unsigned)st.st_mode);
    abx__digest_add_str(d, rel);
    abx__digest_add_str(d, mode);
    if (r->owners) {
        snprintf(owner, sizeof owner, "%u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
        abx__digest_add_str(d, owner);
    }
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t t = readlinkat(dirfd, rel, target, sizeof target);
        if (t < 0)
            return -1;
        abx__digest_add(d, target, (size_t)t);
        if (copyfd >= 0) {
            target[t < (ssize_t)sizeof target ? t : (ssize_t)sizeof target - 1] = '\0';
            if ((size_t)t >= sizeof target || symlinkat(target, copyfd, rel) < 0)
                return -1;
        }
    } else if (S_ISREG(st.st_mode)) {
        if ((copyfd >= 0 ? copy_file(d, dirfd, rel, &st, copyfd) : abx__digest_add_file(d, dirfd, rel)) < 0)
            return -1;
    } else if (!S_ISDIR(st.st_mode) && !r->owners) {
        errno = EINVAL;
        return -1; /* devices, fifos, sockets: never part of a plugin */
    } else if (S_ISDIR(st.st_mode) && copyfd >= 0 && mkdirat(copyfd, rel, 0700) < 0) {
        return -1;
    } else if (!S_ISDIR(st.st_mode) && copyfd >= 0) {
        errno = EINVAL;
        return -1; /* a copy holds files, directories and links only */
    }
    abx__digest_add(d, "\n", 1);
    return 0;
}

int abx__digest_tree(const char *dir, const abx_tree_digest_rules *r, char hex[ABX_DIGEST_HEX])
{
    hex[0] = '\0';
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return -1;
    int copyfd = r->copy_to ? open(r->copy_to, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (r->copy_to && copyfd < 0) {
        close(dirfd);
        return -1;
    }
    path_list l = {.max = r->max_entries};
    int rc = walk(dirfd, "", 0, r->max_depth, &l);
    abx_digest *d = abx__digest_new();
    if (rc == 0) {
        if (l.n > 1) /* a directory comes before what it holds */
            qsort(l.paths, l.n, sizeof *l.paths, cmp_paths);
        for (size_t i = 0; i < l.n && rc == 0; i++)
            rc = hash_entry(d, dirfd, l.paths[i], r, copyfd);
    }
    int saved = errno;
    if (abx__digest_finish(d, hex) < 0)
        rc = -1;
    for (size_t i = 0; i < l.n; i++)
        free(l.paths[i]);
    free(l.paths);
    close(dirfd);
    if (copyfd >= 0)
        close(copyfd);
    errno = saved;
    return rc;
}
