/* archive_extract.c: a plugin archive (.tar, .tar.gz, ...) unpacked with
 * Debian's libarchive, loaded on first use (as base/netlibs.c loads libcurl:
 * `abx run` never pays for it).
 *
 * Owns: refusing what an archive must not do, before anything of the
 * entry is written: an absolute path, a ".." component, a link (symbolic or
 * hard) whose target is absolute or has "..", a device node, a fifo or a
 * socket; more than MAX_ENTRIES entries or MAX_BYTES bytes. Every path is
 * created one component at a time below the destination with O_NOFOLLOW,
 * so no entry can reach through a symlink another entry made.
 */
#include "archive_extract.h"
#include "error_internal.h"
#include "sysutil.h"

#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ENTRIES 10000
#define MAX_BYTES (256ull << 20)

typedef struct archive_api {
    struct archive *(*read_new)(void);
    int (*support_filter_all)(struct archive *);
    int (*support_format_tar)(struct archive *);
    int (*open_filename)(struct archive *, const char *, size_t);
    int (*next_header)(struct archive *, struct archive_entry **);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    int (*read_free)(struct archive *);
    const char *(*error_string)(struct archive *);
    const char *(*pathname)(struct archive_entry *);
    __LA_MODE_T (*filetype)(struct archive_entry *);
    __LA_MODE_T (*perm)(struct archive_entry *);
    const char *(*symlink)(struct archive_entry *);
    const char *(*hardlink)(struct archive_entry *);
    la_int64_t (*uid)(struct archive_entry *);
    la_int64_t (*gid)(struct archive_entry *);
} archive_api;

static archive_api api;
static bool api_ok;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void load_api(void)
{
    void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libarchive.so", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    static const char *const names[] = {"archive_read_new",
                                        "archive_read_support_filter_all",
                                        "archive_read_support_format_tar",
                                        "archive_read_open_filename",
                                        "archive_read_next_header",
                                        "archive_read_data",
                                        "archive_read_free",
                                        "archive_error_string",
                                        "archive_entry_pathname",
                                        "archive_entry_filetype",
                                        "archive_entry_perm",
                                        "archive_entry_symlink",
                                        "archive_entry_hardlink",
                                        "archive_entry_uid",
                                        "archive_entry_gid"};
    void *slots[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(slots[i] = dlsym(h, names[i])))
            return;
    *(void **)&api.read_new = slots[0];
    *(void **)&api.support_filter_all = slots[1];
    *(void **)&api.support_format_tar = slots[2];
    *(void **)&api.open_filename = slots[3];
    *(void **)&api.next_header = slots[4];
    *(void **)&api.read_data = slots[5];
    *(void **)&api.read_free = slots[6];
    *(void **)&api.error_string = slots[7];
    *(void **)&api.pathname = slots[8];
    *(void **)&api.filetype = slots[9];
    *(void **)&api.perm = slots[10];
    *(void **)&api.symlink = slots[11];
    *(void **)&api.hardlink = slots[12];
    *(void **)&api.uid = slots[13];
    *(void **)&api.gid = slots[14];
    api_ok = true;
}

/* A relative path with no "..", no empty and no "." component ("./" in
 * front is dropped first). Copies it into out. */
static bool safe_relative(const char *path, char *out, size_t len)
{
    while (strncmp(path, "./", 2) == 0)
        path += 2;
    if (!*path || path[0] == '/' || strlen(path) >= len)
        return false;
    snprintf(out, len, "%s", path);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
    if (n == 0)
        return false;
    for (const char *c = out; *c;) {
        const char *slash = strchr(c, '/');
        size_t part = slash ? (size_t)(slash - c) : strlen(c);
        if (part == 0 || (part == 1 && c[0] == '.') || (part == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += part + (slash ? 1 : 0);
    }
    return true;
}

/* Whether a relative symbolic link at rel climbs above the tree's root
 * ("../../.." from a shallow place); absolute ones resolve inside it. */
static bool climbs_out(const char *rel, const char *target)
{
    if (target[0] == '/')
        return false;
    int depth = 0;
    for (const char *c = rel; *c; c++)
        depth += *c == '/';
    for (const char *c = target; *c;) {
        const char *slash = strchr(c, '/');
        size_t part = slash ? (size_t)(slash - c) : strlen(c);
        if (part == 2 && c[0] == '.' && c[1] == '.') {
            if (--depth < 0)
                return true;
        } else if (part && !(part == 1 && c[0] == '.')) {
            depth++;
        }
        c += part + (slash ? 1 : 0);
    }
    return false;
}

/* The directory holding rel's last component, opened below dest one
 * component at a time (O_NOFOLLOW; missing ones made when make); *base
 * points at the last component. The caller closes the result. */
static int open_parent_at(int dest, char *rel, char **base, bool make)
{
    int dir = dup(dest);
    char *c = rel;
    for (char *slash; dir >= 0 && (slash = strchr(c, '/'));) {
        *slash = '\0';
        if (make && mkdirat(dir, c, 0755) < 0 && errno != EEXIST) {
            close(dir);
            return -1;
        }
        int next = openat(dir, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        *slash = '/';
        close(dir);
        dir = next;
        c = slash + 1;
    }
    *base = c;
    return dir;
}

static int open_parent(int dest, char *rel, char **base)
{
    return open_parent_at(dest, rel, base, true);
}

/* What an extraction allows: a plugin's files, or a template's tree. */
typedef struct extract_rules {
    bool rootfs; /* owners and modes kept, absolute symlinks allowed */
    bool layer;  /* an OCI layer over the tree: entries replace what is there,
                    whiteouts (.wh.NAME, .wh..wh..opq) remove */
    unsigned max_entries;
    unsigned long long max_bytes;
    const char *what; /* "the plugin", "the root filesystem" */
} extract_rules;

static int write_entry(struct archive *a, int dir, const char *name, mode_t perm, unsigned long long *total,
                       const extract_rules *rules)
{
    int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, perm & 0755);
    if (fd < 0)
        return -1;
    char buf[65536];
    la_ssize_t n;
    int rc = 0;
    while ((n = api.read_data(a, buf, sizeof buf)) > 0) {
        *total += (unsigned long long)n;
        if (*total > rules->max_bytes || abx__write_all(fd, buf, (size_t)n) < 0) {
            rc = -1;
            break;
        }
    }
    if (n < 0)
        rc = -1;
    if (close(fd) < 0)
        rc = -1;
    return rc;
}

/* A hard link to target (relative to dest, checked), reached one component
 * at a time without following a link, as the entry itself is: a symbolic
 * link an earlier entry made cannot lead it out of the tree. */
static int link_within(int destfd, char *target, int dir, const char *base)
{
    char *tbase = NULL;
    int tdir = open_parent(destfd, target, &tbase);
    if (tdir < 0)
        return -1;
    int rc = linkat(tdir, tbase, dir, base, 0);
    close(tdir);
    return rc;
}

/* A directory entry: made, or already a directory (never another kind of
 * entry of that name, such as a symbolic link an earlier entry made). */
static int make_dir(int dir, const char *base)
{
    if (mkdirat(dir, base, 0755) == 0)
        return 0;
    struct stat st;
    if (errno != EEXIST || fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 0 : -1;
}

/* Removes name in dir and, for a directory, everything under it, never
 * following a link (an OCI whiteout, or an entry replacing another). */
static int remove_at(int dir, const char *name, int depth)
{
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dir, name, 0);
    if (depth > 512)
        return -1;
    int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
    if (!d) {
        if (sub >= 0)
            close(sub);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = remove_at(dirfd(d), e->d_name, depth + 1);
    closedir(d);
    return rc == 0 ? unlinkat(dir, name, AT_REMOVEDIR) : -1;
}

/* Empties the directory dir/name (an opaque whiteout: what lower layers put there goes). */
static int empty_dir(int dir, const char *name)
{
    int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
    if (!d) {
        if (sub >= 0)
            close(sub);
        return errno == ENOENT ? 0 : -1;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = remove_at(dirfd(d), e->d_name, 1);
    closedir(d);
    return rc;
}

/* What an OCI layer entry's name says: WH_NONE a file, WH_FILE
 * ".wh.NAME" (NAME of the layers below goes), WH_OPAQUE ".wh..wh..opq"
 * (what the layers below put in its directory goes), WH_BAD a whiteout
 * naming nothing, ".", ".." or a reserved ".wh..wh." name. */
typedef enum { WH_NONE, WH_FILE, WH_OPAQUE, WH_BAD } whiteout_kind;

static whiteout_kind whiteout_of(const char *base)
{
    if (strncmp(base, ".wh.", 4) != 0)
        return WH_NONE;
    if (strcmp(base, ".wh..wh..opq") == 0)
        return WH_OPAQUE;
    const char *target = base + 4;
    if (!*target || strcmp(target, ".") == 0 || strcmp(target, "..") == 0 || strchr(target, '/') ||
        strncmp(target, ".wh.", 4) == 0)
        return WH_BAD;
    return WH_FILE;
}

/* Applies one whiteout to the layers below (what dest holds before this
 * layer's files): its parent is reached without making or following
 * anything; a missing one has nothing to remove. */
static int apply_whiteout(int destfd, char *rel, whiteout_kind kind)
{
    char *base = NULL;
    int dir = open_parent_at(destfd, rel, &base, false);
    if (dir < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    int rc = kind == WH_OPAQUE ? empty_dir(dir, ".") : remove_at(dir, base + 4, 0);
    close(dir);
    return rc;
}

/* An OCI layer's file at dir/base over the layers below: what is there
 * goes unless both are directories. */
static int replace_below(int dir, const char *base, mode_t type, bool hard)
{
    struct stat st;
    if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (S_ISDIR(st.st_mode) && type == AE_IFDIR && !hard)
        return 0;
    return remove_at(dir, base, 0);
}

/* A template entry's owner and mode (setuid and setgid dropped), set on
 * what was just made at dir/name without following it. */
static int keep_owner(int dir, const char *name, struct archive_entry *e, mode_t type)
{
    if (fchownat(dir, name, (uid_t)api.uid(e), (gid_t)api.gid(e), AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    if (type == AE_IFLNK)
        return 0;
    return fchmodat(dir, name, api.perm(e) & 01777, 0);
}

static struct archive *open_archive(const char *archive_path, char *why, size_t why_len)
{
    struct archive *a = api.read_new();
    if (!a) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    api.support_filter_all(a);
    api.support_format_tar(a);
    if (api.open_filename(a, archive_path, 65536) != ARCHIVE_OK) {
        snprintf(why, why_len, "not a tar archive abx can read: %s", api.error_string(a) ?: "unknown format");
        api.read_free(a);
        return NULL;
    }
    return a;
}

/* The checks every entry passes before anything of it is written: 0 with
 * rel (and target for a hard link) filled, 1 for the archive's own root
 * (skipped), -1 with why. */
static int check_entry(struct archive *a, struct archive_entry *e, int r, unsigned *entries,
                       const extract_rules *rules, char rel[2048], char target[2048], char *why,
                       size_t why_len)
{
    const char *path = api.pathname(e);
    const char *soft = api.symlink(e), *hard = api.hardlink(e);
    mode_t type = api.filetype(e);
    if (path && type == AE_IFDIR && (strcmp(path, ".") == 0 || strcmp(path, "./") == 0))
        return 1;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        snprintf(why, why_len, "the archive is damaged: %s", api.error_string(a) ?: "");
    else if (++*entries > rules->max_entries)
        snprintf(why, why_len, "more than %u entries", rules->max_entries);
    else if (!path || !safe_relative(path, rel, 2048))
        snprintf(why, why_len, "entry '%.200s' has an absolute path or '..'", path ? path : "");
    else if ((soft && !rules->rootfs && (soft[0] == '/' || strstr(soft, ".."))) ||
             (soft && rules->rootfs && climbs_out(rel, soft)) || (hard && !safe_relative(hard, target, 2048)))
        snprintf(why, why_len, "entry '%.200s' links outside %s", path, rules->what);
    else if (!hard && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
        snprintf(why, why_len, "entry '%.200s' is a device, fifo or socket", path);
    else
        return 0;
    return -1;
}

static const char *last_component(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? slash + 1 : rel;
}

/* A layer's first pass: its whiteouts, applied to the layers below before
 * any file of its own is written (the OCI image spec: whatever the order
 * of its entries, a layer's whiteouts never remove its own files). */
static int apply_whiteouts(const char *archive_path, int destfd, const extract_rules *rules, char *why,
                           size_t why_len)
{
    struct archive *a = open_archive(archive_path, why, why_len);
    if (!a)
        return -1;
    struct archive_entry *e;
    unsigned entries = 0;
    int rc = 0, r;
    while (rc == 0 && (r = api.next_header(a, &e)) != ARCHIVE_EOF) {
        char rel[2048], target[2048];
        int checked = check_entry(a, e, r, &entries, rules, rel, target, why, why_len);
        if (checked != 0) {
            rc = checked < 0 ? -1 : 0;
            continue;
        }
        whiteout_kind kind = whiteout_of(last_component(rel));
        if (kind == WH_BAD) {
            snprintf(why, why_len, "entry '%.200s' is a whiteout of nothing it may remove", rel);
            rc = -1;
        } else if (kind != WH_NONE && apply_whiteout(destfd, rel, kind) < 0) {
            snprintf(why, why_len, "cannot apply whiteout '%.200s' to the layers below", rel);
            rc = -1;
        }
    }
    api.read_free(a);
    return rc;
}

/* Writes one checked entry below destfd. */
static int write_one(struct archive *a, struct archive_entry *e, int destfd, char *rel, char *target,
                     unsigned long long *total, const extract_rules *rules, char *why, size_t why_len)
{
    const char *path = api.pathname(e);
    const char *soft = api.symlink(e), *hard = api.hardlink(e);
    mode_t type = api.filetype(e);
    char *base = NULL;
    int dir = open_parent(destfd, rel, &base);
    if (dir >= 0 && rules->layer && whiteout_of(base) != WH_NONE) {
        close(dir); /* applied by the first pass */
        return 0;
    }
    if (dir >= 0 && rules->layer && replace_below(dir, base, type, hard != NULL) < 0) {
        close(dir);
        snprintf(why, why_len, "cannot apply entry '%.200s' over the layers below", path);
        return -1;
    }
    int ok = dir < 0            ? -1
             : hard             ? link_within(destfd, target, dir, base)
             : type == AE_IFDIR ? make_dir(dir, base)
             : type == AE_IFLNK ? symlinkat(soft, dir, base)
                                : write_entry(a, dir, base, api.perm(e), total, rules);
    if (ok == 0 && rules->rootfs && !hard)
        ok = keep_owner(dir, base, e, type);
    if (dir >= 0)
        close(dir);
    if (ok < 0) {
        if (*total > rules->max_bytes)
            snprintf(why, why_len, "more than %llu MiB unpacked", rules->max_bytes >> 20);
        else
            snprintf(why, why_len, "cannot unpack entry '%.200s' (it may reach through a link)", path);
    }
    return ok;
}

static int extract(const char *archive_path, const char *dest, char *why, size_t why_len,
                   const extract_rules *rules)
{
    pthread_once(&api_once, load_api);
    if (!api_ok) {
        snprintf(why, why_len, "libarchive is not installed (apt-get install libarchive13)");
        return -1;
    }
    int destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (destfd < 0) {
        snprintf(why, why_len, "cannot unpack into %s", dest);
        return -1;
    }
    if (rules->layer && apply_whiteouts(archive_path, destfd, rules, why, why_len) < 0) {
        close(destfd);
        return -1;
    }
    struct archive *a = open_archive(archive_path, why, why_len);
    int rc = a ? 0 : -1;
    struct archive_entry *e;
    unsigned entries = 0;
    unsigned long long total = 0;
    int r;
    while (rc == 0 && (r = api.next_header(a, &e)) != ARCHIVE_EOF) {
        char rel[2048], target[2048];
        int checked = check_entry(a, e, r, &entries, rules, rel, target, why, why_len);
        if (checked == 0)
            rc = write_one(a, e, destfd, rel, target, &total, rules, why, why_len);
        else if (checked < 0)
            rc = -1;
    }
    if (a)
        api.read_free(a);
    close(destfd);
    return rc;
}

int abx__archive_extract(const char *archive_path, const char *dest, char *why, size_t why_len)
{
    const extract_rules plugin = {.max_entries = MAX_ENTRIES, .max_bytes = MAX_BYTES, .what = "the plugin"};
    return extract(archive_path, dest, why, why_len, &plugin);
}

int abx__archive_extract_layer(const char *archive_path, const char *dest, char *why, size_t why_len)
{
    const extract_rules layer = {.rootfs = true,
                                 .layer = true,
                                 .max_entries = 1000000,
                                 .max_bytes = 64ull << 30,
                                 .what = "the root filesystem"};
    return extract(archive_path, dest, why, why_len, &layer);
}

int abx__archive_extract_rootfs(const char *archive_path, const char *dest, char *why, size_t why_len)
{
    const extract_rules rootfs = {
        .rootfs = true, .max_entries = 1000000, .max_bytes = 64ull << 30, .what = "the root filesystem"};
    return extract(archive_path, dest, why, why_len, &rootfs);
}
