/* shim_files.c: filesystem operations inside a sandbox, done by the shim.
 *
 * Owns: path resolution (the only way this file reaches a file), the
 * credentials file operations run with, and the E2B EntryInfo shape.
 *
 * Security: the shim runs as host root outside the sandbox, and the
 * sandbox's files are hostile: any component may be a symlink planted to
 * point at the host. So every lookup is openat2(rootfd, path,
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS), where rootfd is the sandbox's
 * "/" (opened once through /proc/<init>/root): ".." and absolute symlinks
 * stop at the sandbox root, and /proc magic links are refused. Operations
 * on a final component (mkdir, unlink, rename) are made relative to a
 * parent directory fd resolved that way, with a plain name, and never
 * follow a symlink there. Anything on procfs or sysfs is refused. Each
 * operation runs with the thread's fsuid/fsgid set to the sandbox user's
 * host id, so the kernel applies that user's permissions and new files
 * belong to that user.
 */
#include "shim_files.h"
#include "parse.h"
#include "error_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST_ENTRIES 10000
#define MAX_DEPTH 32

/* ---- credentials -------------------------------------------------------- */

typedef struct fs_creds {
    bool switched;
    bool failed; /* the switch did not take: the operation must not run */
} fs_creds;

/* setfsuid/setfsgid report no error: read the ids back to be sure. */
static fs_creds become(const shim *sh, unsigned uid)
{
    fs_creds c = {false, false};
    if (geteuid() != 0)
        return c; /* unprivileged abx: the caller's id is the sandbox root */
    uid_t want = sh->jail.host_id_base + uid;
    setfsgid(want);
    setfsuid(want);
    c.switched = true;
    c.failed = (uid_t)setfsuid((uid_t)-1) != want || (gid_t)setfsgid((gid_t)-1) != want;
    return c;
}

static void restore(fs_creds c)
{
    if (!c.switched)
        return;
    setfsuid(0);
    setfsgid(0);
}

/* ---- resolution --------------------------------------------------------- */

int abx__fs_absolute(unsigned uid, const char *path, char *out, size_t len)
{
    if (!path || !*path)
        return -ABX_EINVAL;
    int n = path[0] == '/' ? snprintf(out, len, "%s", path)
                           : snprintf(out, len, "%s/%s", uid == 0 ? "/root" : "/home/user", path);
    return n < 0 || (size_t)n >= len ? -ABX_ETOOBIG : 0;
}

static int errno_code(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return ABX_ENOENT;
    case EROFS:
        return ABX_EROFS;
    case EACCES:
    case EPERM:
        return ABX_EPERM;
    case EXDEV:
    case ELOOP:
        return ABX_EPATHOUTSIDE;
    case EISDIR:
        return ABX_EISDIR;
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return ABX_ETOOBIG;
    case ENAMETOOLONG:
        return ABX_EINVAL;
    case ENOMEM:
        return ABX_ENOMEM;
    default:
        return ABX_EIO;
    }
}

static int fail_errno(abx_error **err, int e, const char *what, const char *path)
{
    return abx__error_set(err, errno_code(e), "%s %s: %s", what, path, strerror(e));
}

static bool on_pseudo_fs(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return true;
    return sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC;
}

/* openat2 inside the sandbox root; returns fd or -1 with errno. */
static int resolve(shim *sh, const char *abs_path, int flags, mode_t mode)
{
    struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
                           .mode = (flags & O_CREAT) ? mode : 0,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd;
    do
        fd = (int)syscall(SYS_openat2, sh->rootfd, abs_path, &how, sizeof how);
    while (fd < 0 && errno == EAGAIN);
    if (fd >= 0 && on_pseudo_fs(fd)) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* Splits an absolute path into its parent and last component. */
static int split(const char *abs_path, char *parent, size_t plen, char *base, size_t blen)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", abs_path);
    size_t n = strlen(tmp);
    while (n > 1 && tmp[n - 1] == '/')
        tmp[--n] = '\0';
    char *slash = strrchr(tmp, '/');
    if (!slash)
        return -ABX_EINVAL;
    const char *name = slash + 1;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) >= blen)
        return -ABX_EINVAL;
    snprintf(base, blen, "%s", name);
    if (slash == tmp)
        snprintf(parent, plen, "/");
    else {
        *slash = '\0';
        snprintf(parent, plen, "%s", tmp);
    }
    return 0;
}

/* Opens the directory at abs_path, creating it and its missing parents if
 * asked. Iterative (a deep path must not exhaust a server thread's stack):
 * each prefix is resolved inside the root; a missing one is made with
 * mkdirat in its resolved parent, by a plain name. */
static int open_dir(shim *sh, const char *abs_path, bool create, bool *created)
{
    int fd = resolve(sh, abs_path, O_PATH | O_DIRECTORY, 0);
    if (fd >= 0 || errno != ENOENT || !create)
        return fd;
    size_t len = strlen(abs_path);
    char *prefix = malloc(len + 2);
    if (!prefix) {
        errno = ENOMEM;
        return -1;
    }
    int parent = resolve(sh, "/", O_PATH | O_DIRECTORY, 0);
    size_t i = 0;
    while (parent >= 0) {
        while (i < len && abs_path[i] == '/')
            i++;
        if (i >= len)
            break;
        size_t start = i;
        while (i < len && abs_path[i] != '/')
            i++;
        char name[256];
        if (i - start >= sizeof name) {
            close(parent);
            parent = -1;
            errno = ENAMETOOLONG;
            break;
        }
        snprintf(name, sizeof name, "%.*s", (int)(i - start), abs_path + start);
        snprintf(prefix, len + 2, "%.*s", (int)i, abs_path);
        int next = resolve(sh, prefix, O_PATH | O_DIRECTORY, 0);
        if (next < 0 && errno == ENOENT && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            if (mkdirat(parent, name, 0755) < 0 && errno != EEXIST) {
                int e = errno;
                close(parent);
                parent = -1;
                errno = e;
                break;
            }
            if (created)
                *created = true;
            next = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        int e = errno;
        close(parent);
        parent = next;
        errno = e;
    }
    free(prefix);
    return parent;
}

/* ---- EntryInfo ---------------------------------------------------------- */

static const char *user_name(const shim *sh, uid_t host_id)
{
    uid_t base = sh->jail.host_id_base;
    unsigned id = base && host_id >= base ? host_id - base : host_id;
    return id == 0 ? "root" : id == 1000 ? "user" : id == 65534 ? "nobody" : "unknown";
}

static void permissions_string(mode_t m, char out[11])
{
    out[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : '-';
    const char *rwx = "rwxrwxrwx";
    for (int i = 0; i < 9; i++)
        out[i + 1] = (m & (1u << (8 - i))) ? rwx[i] : '-';
    out[10] = '\0';
}

static int resolve(shim *sh, const char *abs_path, int flags, mode_t mode);

/* An entry's metadata. A symlink's type is its target's, looked up inside
 * the sandbox root (never through the host's: an absolute target such as
 * /etc/shadow names the sandbox's file, and a missing one stays a link). */
static json_t *entry_info(shim *sh, int dirfd, const char *name, const char *abs_path)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
        return NULL;
    char target[4096] = "";
    bool is_link = S_ISLNK(st.st_mode);
    char perms[11], mtime[40], size[32];
    permissions_string(st.st_mode, perms); /* a symlink's own ("lrwxrwxrwx") */
    if (is_link) {
        ssize_t n = readlinkat(dirfd, name, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        int tfd = resolve(sh, abs_path, O_PATH, 0);
        struct stat tst;
        if (tfd >= 0 && fstat(tfd, &tst) == 0)
            st.st_mode = (st.st_mode & ~S_IFMT) | (tst.st_mode & S_IFMT);
        if (tfd >= 0)
            close(tfd);
    }
    abx__rfc3339((long long)st.st_mtim.tv_sec, mtime, sizeof mtime);
    snprintf(size, sizeof size, "%lld", (long long)st.st_size);
    const char *slash = strrchr(abs_path, '/');
    json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "name",
                          slash && slash[1] ? slash + 1 : abs_path, "type",
                          S_ISDIR(st.st_mode) ? "FILE_TYPE_DIRECTORY" : "FILE_TYPE_FILE", "path", abs_path,
                          "size", size, "mode", (int)(st.st_mode & 07777), "permissions", perms, "owner",
                          user_name(sh, st.st_uid), "group", user_name(sh, st.st_gid), "modifiedTime", mtime);
    if (is_link && e)
        json_object_set_new(e, "symlinkTarget", json_string(target));
    return e;
}

/* ---- operations --------------------------------------------------------- */

/* Takes uid's file credentials, checked. On success the caller must
 * restore(*c) when the operation is done. */
static int take_creds(const shim *sh, unsigned uid, fs_creds *c, abx_error **err)
{
    *c = become(sh, uid);
    if (c->failed) {
        restore(*c);
        return abx__error_set(err, ABX_EPERM, "cannot take the sandbox user's file credentials");
    }
    return 0;
}

/* The start of most operations: the path made absolute for uid, then
 * uid's credentials. */
static int op_begin(const shim *sh, unsigned uid, const char *path, char abs_path[4096], fs_creds *c,
                    abx_error **err)
{
    if (abx__fs_absolute(uid, path, abs_path, 4096) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: must be a non-empty path inside the sandbox");
    return take_creds(sh, uid, c, err);
}

int abx__fs_open_file(shim *sh, unsigned uid, const char *path, int flags, int *fd, abx_error **err)
{
    char abs_path[4096];
    fs_creds c;
    int rc = op_begin(sh, uid, path, abs_path, &c, err);
    if (rc < 0)
        return rc;
    bool writing = (flags & O_ACCMODE) != O_RDONLY;
    if (writing) {
        char parent[4096], base[256];
        if (split(abs_path, parent, sizeof parent, base, sizeof base) < 0) {
            rc = abx__error_set(err, ABX_EINVAL, "path: names no file");
            goto out;
        }
        int pfd = open_dir(sh, parent, true, NULL);
        if (pfd < 0) {
            rc = fail_errno(err, errno, "creating the parent of", path);
            goto out;
        }
        close(pfd);
    }
    /* O_NONBLOCK: a FIFO planted at path must not hang this thread; it is
     * refused below like any other non-regular file */
    *fd = resolve(sh, abs_path, flags | O_NONBLOCK | O_NOCTTY, 0644);
    if (*fd < 0) {
        rc = errno == ENXIO ? abx__error_set(err, ABX_EINVAL, "%s: not a regular file", path)
                            : fail_errno(err, errno, writing ? "writing" : "reading", path);
        goto out;
    }
    struct stat st;
    if (fstat(*fd, &st) == 0 && S_ISREG(st.st_mode) && fcntl(*fd, F_SETFL, flags & O_APPEND) < 0) {
        close(*fd);
        *fd = -1;
        rc = fail_errno(err, errno, "opening", path);
        goto out;
    }
    if (fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        bool dir = S_ISDIR(st.st_mode);
        close(*fd);
        *fd = -1;
        rc = abx__error_set(err, dir ? ABX_EISDIR : ABX_EINVAL, "%s: not a regular file", path);
    }
out:
    restore(c);
    return rc;
}

int abx__fs_watch_dir(shim *sh, unsigned uid, const char *path, int inotify_fd, uint32_t mask,
                      abx_error **err)
{
    char abs_path[4096];
    fs_creds c;
    int rc = op_begin(sh, uid, path, abs_path, &c, err);
    if (rc < 0)
        return rc;
    int fd = resolve(sh, abs_path, O_PATH | O_DIRECTORY, 0);
    if (fd < 0) {
        rc = fail_errno(err, errno, "watching", path);
    } else {
        /* the resolved directory itself, through our own descriptor: the
         * sandbox's path is never looked up again on the host */
        char self[64];
        snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
        rc = inotify_add_watch(inotify_fd, self, mask | IN_ONLYDIR);
        if (rc < 0)
            rc = errno == ENOSPC ? abx__error_set(err, ABX_ELIMIT, "watching %s: too many watches", path)
                                 : fail_errno(err, errno, "watching", path);
        close(fd);
    }
    restore(c);
    return rc;
}

int abx__fs_stat(shim *sh, unsigned uid, const char *path, json_t **entry, abx_error **err)
{
    char abs_path[4096];
    fs_creds c;
    int rc = op_begin(sh, uid, path, abs_path, &c, err);
    if (rc < 0)
        return rc;
    int fd = resolve(sh, abs_path, O_PATH | O_NOFOLLOW, 0);
    if (fd < 0) {
        rc = fail_errno(err, errno, "stat", path);
    } else {
        *entry = entry_info(sh, fd, "", abs_path);
        close(fd);
        if (!*entry)
            rc = abx__error_set(err, ABX_EIO, "stat %s", path);
    }
    restore(c);
    return rc;
}

static void list_into(shim *sh, int dir_fd, const char *abs_path, unsigned depth, json_t *out)
{
    int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) && json_array_size(out) < MAX_LIST_ENTRIES) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char child[4096];
        snprintf(child, sizeof child, "%s%s%s", abs_path, strcmp(abs_path, "/") ? "/" : "", de->d_name);
        json_t *e = entry_info(sh, dirfd(d), de->d_name, child);
        if (!e)
            continue;
        json_array_append_new(out, e);
        if (depth > 1 && de->d_type == DT_DIR) {
            int sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                if (!on_pseudo_fs(sub))
                    list_into(sh, sub, child, depth - 1, out);
                close(sub);
            }
        }
    }
    closedir(d);
}

int abx__fs_list(shim *sh, unsigned uid, const char *path, unsigned depth, json_t **entries, abx_error **err)
{
    char abs_path[4096];
    if (abx__fs_absolute(uid, path, abs_path, sizeof abs_path) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: must be a non-empty path inside the sandbox");
    if (depth == 0)
        depth = 1;
    if (depth > MAX_DEPTH)
        depth = MAX_DEPTH;
    fs_creds c;
    int rc = take_creds(sh, uid, &c, err);
    if (rc < 0)
        return rc;
    int fd = resolve(sh, abs_path, O_PATH | O_DIRECTORY, 0);
    if (fd < 0) {
        rc = fail_errno(err, errno, "listing", path);
    } else {
        size_t n = strlen(abs_path);
        while (n > 1 && abs_path[n - 1] == '/')
            abs_path[--n] = '\0';
        *entries = json_array();
        list_into(sh, fd, abs_path, depth, *entries);
        close(fd);
    }
    restore(c);
    return rc;
}

int abx__fs_mkdir(shim *sh, unsigned uid, const char *path, bool *exists, json_t **entry, abx_error **err)
{
    char abs_path[4096];
    *exists = false;
    if (abx__fs_absolute(uid, path, abs_path, sizeof abs_path) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: must be a non-empty path inside the sandbox");
    fs_creds c;
    int rc = take_creds(sh, uid, &c, err);
    if (rc < 0)
        return rc;
    bool created = false;
    int fd = open_dir(sh, abs_path, true, &created);
    if (fd < 0) {
        rc = fail_errno(err, errno, "creating directory", path);
    } else {
        *entry = entry_info(sh, fd, "", abs_path);
        close(fd);
        if (!created) {
            *exists = true;
            rc = abx__error_set(err, ABX_EINVAL, "%s: already exists", path);
        }
    }
    restore(c);
    return rc;
}

int abx__fs_move(shim *sh, unsigned uid, const char *from, const char *to, json_t **entry, abx_error **err)
{
    char src[4096], dst[4096], sp[4096], sb[256], dp[4096], db[256];
    if (abx__fs_absolute(uid, from, src, sizeof src) < 0 || abx__fs_absolute(uid, to, dst, sizeof dst) < 0 ||
        split(src, sp, sizeof sp, sb, sizeof sb) < 0 || split(dst, dp, sizeof dp, db, sizeof db) < 0)
        return abx__error_set(err, ABX_EINVAL, "source and destination must name files inside the sandbox");
    fs_creds c;
    int rc = take_creds(sh, uid, &c, err);
    if (rc < 0)
        return rc;
    int sfd = resolve(sh, sp, O_PATH | O_DIRECTORY, 0);
    int dfd = sfd >= 0 ? open_dir(sh, dp, true, NULL) : -1;
    if (sfd < 0 || dfd < 0)
        rc = fail_errno(err, errno, "moving", from);
    else if (renameat(sfd, sb, dfd, db) < 0)
        rc = fail_errno(err, errno, "moving", from);
    else
        *entry = entry_info(sh, dfd, db, dst);
    if (sfd >= 0)
        close(sfd);
    if (dfd >= 0)
        close(dfd);
    restore(c);
    return rc;
}

/* Removes name in dirfd and, for a directory, all it holds; never follows a
 * symlink (a link is removed, not what it points at). */
static int remove_tree(int parent_fd, const char *name, int level)
{
    if (unlinkat(parent_fd, name, 0) == 0)
        return 0;
    if (errno != EISDIR && errno != EPERM)
        return -1;
    if (level > 128) {
        errno = ELOOP;
        return -1;
    }
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
            remove_tree(dirfd(d), de->d_name, level + 1) < 0)
            rc = -1;
    closedir(d);
    if (rc == 0)
        rc = unlinkat(parent_fd, name, AT_REMOVEDIR);
    return rc;
}

int abx__fs_remove(shim *sh, unsigned uid, const char *path, abx_error **err)
{
    char abs_path[4096], parent[4096], base[256];
    if (abx__fs_absolute(uid, path, abs_path, sizeof abs_path) < 0 ||
        split(abs_path, parent, sizeof parent, base, sizeof base) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: must name a file or directory inside the sandbox");
    fs_creds c;
    int rc = take_creds(sh, uid, &c, err);
    if (rc < 0)
        return rc;
    int pfd = resolve(sh, parent, O_PATH | O_DIRECTORY, 0);
    struct stat st;
    if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        rc = fail_errno(err, errno, "removing", path);
    } else {
        int dfd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || remove_tree(dfd, base, 0) < 0)
            rc = fail_errno(err, errno, "removing", path);
        if (dfd >= 0)
            close(dfd);
    }
    if (pfd >= 0)
        close(pfd);
    restore(c);
    return rc;
}
