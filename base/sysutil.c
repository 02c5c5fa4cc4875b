/* sysutil.c: checked, EINTR-safe wrappers over system calls. See sysutil.h.
 * Owns nothing but the retry/loop idioms; callers own every fd they get. */
#include "sysutil.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

int abx__write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int abx__write_all_nosigpipe(int fd, const void *buf, size_t len)
{
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    int rc = abx__write_all(fd, buf, len);
    int saved = errno;
    if (rc < 0 && saved == EPIPE && !was_pending) {
        const struct timespec now = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &now) < 0 && errno == EINTR)
            ; /* the SIGPIPE this write raised, taken back */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = saved;
    return rc;
}

ssize_t abx__read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int abx__write_file_at(int dirfd, const char *path, const char *s)
{
    int fd;
    do
        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    int rc = abx__write_all(fd, s, strlen(s));
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int abx__create_file(const char *path, const char *content, mode_t mode)
{
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    int rc = content ? abx__write_all(fd, content, strlen(content)) : 0;
    int saved = errno;
    if (close(fd) < 0 && rc == 0)
        return -1;
    errno = saved;
    return rc;
}

int abx__read_small_file(const char *path, char *buf, size_t cap)
{
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    ssize_t n = abx__read_full(fd, buf, cap - 1);
    int saved = errno;
    close(fd);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

int abx__mkdir_exist_ok(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0 || errno == EEXIST)
        return 0;
    return -1;
}

unsigned long long abx__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

const char *abx__env_path(const char *const *envp)
{
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], "PATH=", 5) == 0)
            return envp[i] + 5;
    return NULL;
}

void abx__deadline_after(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* ---- trees: measured and removed, without following a link or leaving the filesystem ---- */

#define TREE_DEPTH_MAX 256

typedef struct tree_walk {
    bool remove;                 /* remove what is visited (children first) */
    bool defang;                 /* drop setuid/setgid bits and file capabilities of what is visited */
    unsigned long long defanged; /* entries that had either */
    unsigned long long bytes;    /* st_blocks of all that was visited */
    unsigned long long files;    /* entries visited (the root included) */
    int failed;                  /* errno of the first failure (remove) */
} tree_walk;

/* A file's setuid and setgid bits and its capabilities (the
 * security.capability attribute) dropped: what makes a file run with more
 * than its caller's rights. Directories (setgid there only passes a group
 * on) and symbolic links are left alone. A failure counts in w->failed. */
static void defang_entry(int dir, const char *name, const struct stat *st, tree_walk *w)
{
    if (S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode))
        return;
    bool had = false;
    if (st->st_mode & (S_ISUID | S_ISGID)) {
        had = true;
        if (fchmodat(dir, name, st->st_mode & 01777 & ~(mode_t)(S_ISUID | S_ISGID), 0) < 0 && !w->failed)
            w->failed = errno;
    }
    if (S_ISREG(st->st_mode)) {
        char path[64 + NAME_MAX];
        snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dir, name);
        if (lremovexattr(path, "security.capability") == 0)
            had = true;
        else if (errno != ENODATA && errno != ENOTSUP && !w->failed)
            w->failed = errno;
    }
    w->defanged += had;
}

/* Visits the entries of the directory open at fd (device dev), depth deep. */
static void walk_dir(int fd, dev_t dev, int depth, tree_walk *w)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        w->bytes += (unsigned long long)st.st_blocks * 512ull;
        w->files++;
        if (w->defang)
            defang_entry(dirfd(d), e->d_name, &st, w);
        bool dir = S_ISDIR(st.st_mode);
        if (dir && st.st_dev == dev && depth < TREE_DEPTH_MAX) {
            int child = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (child >= 0)
                walk_dir(child, dev, depth + 1, w);
        }
        if (w->remove && unlinkat(dirfd(d), e->d_name, dir ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT &&
            !w->failed)
            w->failed = errno;
    }
    closedir(d);
}

static int walk_tree(const char *path, tree_walk *w)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    w->bytes += (unsigned long long)st.st_blocks * 512ull;
    w->files++;
    if (S_ISDIR(st.st_mode)) {
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            walk_dir(fd, st.st_dev, 0, w);
    }
    if (w->remove && (S_ISDIR(st.st_mode) ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT && !w->failed)
        w->failed = errno;
    if (w->failed) {
        errno = w->failed;
        return -1;
    }
    return 0;
}

int abx__tree_remove(const char *path)
{
    tree_walk w = {.remove = true};
    return walk_tree(path, &w);
}

int abx__tree_remove_counted(const char *path, unsigned long long *bytes)
{
    tree_walk w = {.remove = true};
    int rc = walk_tree(path, &w);
    *bytes += w.bytes;
    return rc;
}

int abx__tree_defang(const char *path, unsigned long long *defanged)
{
    tree_walk w = {.defang = true};
    int rc = walk_tree(path, &w);
    if (defanged)
        *defanged = w.defanged;
    return rc;
}

void abx__tree_measure(const char *path, unsigned long long *bytes, unsigned long long *files)
{
    tree_walk w = {0};
    walk_tree(path, &w);
    if (bytes)
        *bytes = w.bytes;
    if (files)
        *files = w.files;
}

int abx__signalfd_block(const int *signals, int flags)
{
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; signals[i]; i++)
        sigaddset(&mask, signals[i]);
    if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
        return -1;
    return signalfd(-1, &mask, SFD_CLOEXEC | flags);
}

int abx__send_fd(int sock, int fd)
{
    char byte = 'f';
    struct iovec io = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr m = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof fd);
    ssize_t n;
    do
        n = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : -1;
}

int abx__recv_fd(int sock)
{
    char byte;
    struct iovec io = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n;
    do
        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        return -1;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    if (!h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
        h->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(h), sizeof fd);
    return fd;
}
