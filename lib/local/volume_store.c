/* volume_store.c: the local provider's volumes (volume_store.h).
 *
 * Owns $ABX_HOME/volumes: one directory per tenant (NS: "_" for the
 * administrator, "t-TENANT" for a tenant, 0700), and in it one directory
 * per volume, by name:
 *
 *   NAME/volume.json   {volume_id, name, size_mb, created_at}
 *   NAME/data/         the tree, owned by uid 1000 (a volume without a size)
 *   NAME/image.ext4    an ext4 image of size_mb (a volume with a size),
 *                      sparse: it takes the disk that is written
 *
 * A create builds .new-XXXX/ whole and renames it to NAME (never over one
 * that exists), so a half-made volume is never seen; a removal takes the
 * directory's exclusive flock (every shim that mounts the volume holds a
 * shared one for its whole life: runtime/volume_mount.c), renames it to
 * .gone-XXXX and deletes that. The tenant's directory's own flock orders
 * creates and removals (the count quota is checked under it).
 */
#include "volume_store.h"
#include "volume.h"
#include "config.h"
#include "error_internal.h"
#include "parse.h"
#include "random_id.h"
#include "state.h"
#include "sysutil.h"
#include "tenant.h"
#include "volume_mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VOLUME_JSON_MAX 4096
#define VOLUME_MIN_MB 16 /* ext4 and its journal need room of their own */
#define VOLUME_UID 1000  /* user: a volume's root is theirs */
#define RM_WAIT_MS 3000  /* how long a removal waits for the sandboxes that are ending */

/* $ABX_HOME/volumes/NS into out (made 0700 when create). */
static int ns_dir(const char *tenant, bool create, char *out, size_t len, abx_error **err)
{
    char home[512];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    bool admin = !tenant || !*tenant;
    int n = snprintf(out, len, "%s/volumes", home);
    if (create && (abx__mkdir_exist_ok(home, 0700) < 0 || abx__mkdir_exist_ok(out, 0700) < 0))
        return abx__error_errno(err, ABX_EIO, errno, "the volumes directory");
    n = snprintf(out, len, "%s/volumes/%s%s", home, admin ? "_" : "t-", admin ? "" : tenant);
    if (n < 0 || (size_t)n >= len)
        return abx__error_set(err, ABX_ECONFIG, "ABX_HOME is too long");
    if (create && abx__mkdir_exist_ok(out, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the volumes directory");
    return abx__home_check(home, err);
}

/* The tenant's directory, opened and flocked (LOCK_EX) for a create or a
 * removal: its fd (the caller closes it, which unlocks), or -ABX_E*. */
static int ns_lock(const char *ns, abx_error **err)
{
    int fd = open(ns, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return abx__error_errno(err, ABX_EIO, saved, "locking the volumes directory");
    }
    return fd;
}

static json_t *read_doc(const char *ns, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/volume.json", ns, name);
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > VOLUME_JSON_MAX)
        return NULL;
    json_t *doc = json_load_file(path, 0, NULL);
    if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "volume_id"))) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* Whether a shim holds the volume (a shared flock on its directory). */
static bool in_use(const char *ns, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", ns, name);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);
    return busy;
}

/* The info a caller sees: the document and whether it is in use. */
static bool kept_by_durable(const char *dir);

static json_t *info_of(const char *ns, const char *name, json_t *doc)
{
    json_t *info = json_deep_copy(doc);
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", ns, name);
    if (info)
        json_object_set_new(info, "in_use", json_boolean(in_use(ns, name) || kept_by_durable(dir)));
    return info;
}

/* Finds a volume by name, else by volume id: its name into name_out. */
static json_t *find(const char *ns, const char *name_or_id, char *name_out, size_t len)
{
    if (abx_volume_name_valid(name_or_id)) {
        json_t *doc = read_doc(ns, name_or_id);
        if (doc) {
            snprintf(name_out, len, "%s", name_or_id);
            return doc;
        }
    }
    DIR *d = opendir(ns);
    struct dirent *e;
    json_t *found = NULL;
    while (d && !found && (e = readdir(d))) {
        if (!abx_volume_name_valid(e->d_name))
            continue;
        json_t *doc = read_doc(ns, e->d_name);
        if (doc && strcmp(json_string_value(json_object_get(doc, "volume_id")), name_or_id) == 0) {
            snprintf(name_out, len, "%.63s", e->d_name);
            found = doc;
        } else {
            json_decref(doc);
        }
    }
    if (d)
        closedir(d);
    return found;
}

static int not_found(const char *name_or_id, abx_error **err)
{
    return abx__error_set(err, ABX_ENOTFOUND, "volume %.64s: no such volume (abx volume list)", name_or_id);
}

/* Leftovers of creates and removals that were cut short. */
static void sweep(const char *ns)
{
    DIR *d = opendir(ns);
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d))) {
        bool gone = strncmp(e->d_name, ".gone-", 6) == 0, partial = strncmp(e->d_name, ".new-", 5) == 0;
        char path[1200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", ns, e->d_name);
        if ((gone || partial) && lstat(path, &st) == 0 && (gone || now - st.st_mtime > 3600))
            abx__tree_remove(path);
    }
    if (d)
        closedir(d);
}

/* The tenant's volumes: how many, and how many MiB the sized ones hold. */
static void tally(const char *ns, unsigned *count, unsigned long long *mb)
{
    *count = 0;
    *mb = 0;
    DIR *d = opendir(ns);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        json_t *doc = abx_volume_name_valid(e->d_name) ? read_doc(ns, e->d_name) : NULL;
        if (doc) {
            (*count)++;
            *mb += (unsigned long long)json_integer_value(json_object_get(doc, "size_mb"));
        }
        json_decref(doc);
    }
    if (d)
        closedir(d);
}

/* The volume's content in the partial directory: a tree or an image. */
static int make_content(const char *partial, unsigned size_mb, abx_error **err)
{
    char path[1300];
    if (size_mb) {
        snprintf(path, sizeof path, "%s/" ABX_VOLUME_IMAGE, partial);
        return abx__image_make(path, size_mb, VOLUME_UID, err);
    }
    snprintf(path, sizeof path, "%s/" ABX_VOLUME_DATA, partial);
    if (mkdir(path, 0755) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the volume's directory");
    if (geteuid() == 0 && chown(path, VOLUME_UID, VOLUME_UID) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "the volume's owner");
    return 0;
}

static int check_quota(const char *tenant, const char *ns, unsigned size_mb, abx_error **err)
{
    if (!tenant || !*tenant)
        return 0;
    unsigned count;
    unsigned long long mb;
    tally(ns, &count, &mb);
    return abx__quota_volume(tenant, count, mb, size_mb, err);
}

static int finish_create(const char *ns, const char *name, unsigned size_mb, json_t **info, abx_error **err)
{
    char id[ABX_RANDOM_ID_LEN + 1], partial[1200], path[1300], when[40];
    if (abx__random_id(id, sizeof id) < 0)
        return abx__error_set(err, ABX_ESYS, "no randomness for the volume id");
    snprintf(partial, sizeof partial, "%s/.new-%.16s", ns, id);
    if (mkdir(partial, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "creating the volume");
    abx__rfc3339((long long)time(NULL), when, sizeof when);
    char volume_id[40];
    snprintf(volume_id, sizeof volume_id, "vol-%.24s", id);
    json_t *doc = json_pack("{s:s, s:s, s:i, s:s}", "volume_id", volume_id, "name", name, "size_mb",
                            (int)size_mb, "created_at", when);
    snprintf(path, sizeof path, "%s/volume.json", partial);
    int rc = doc && json_dump_file(doc, path, JSON_COMPACT) == 0
                 ? 0
                 : abx__error_set(err, ABX_EIO, "writing the volume's description");
    if (rc == 0)
        rc = make_content(partial, size_mb, err);
    snprintf(path, sizeof path, "%s/%s", ns, name);
    if (rc == 0 && renameat2(AT_FDCWD, partial, AT_FDCWD, path, RENAME_NOREPLACE) < 0)
        rc = errno == EEXIST ? abx__error_set(err, ABX_EINVAL, "volume %s exists already", name)
                             : abx__error_errno(err, ABX_EIO, errno, "creating the volume");
    if (rc < 0)
        abx__tree_remove(partial);
    if (rc == 0 && info && !(*info = info_of(ns, name, doc)))
        rc = abx__error_set(err, ABX_ENOMEM, "volume");
    json_decref(doc);
    return rc;
}

int abx__volume_create(const char *tenant, const char *name, unsigned size_mb, json_t **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (!name || !abx_volume_name_valid(name))
        return abx__error_set(err, ABX_EINVAL,
                              "volume name '%.64s': 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter "
                              "or digit",
                              name ? name : "");
    if (geteuid() != 0)
        return abx__error_set(
            err, ABX_EPERM,
            "volumes need abx to run as root, or the machine's abx service (abx service start)");
    bool tenant_set = tenant && *tenant;
    if (!size_mb && tenant_set)
        size_mb = ABX_VOLUME_DEFAULT_MB;
    if (size_mb && (size_mb < VOLUME_MIN_MB || size_mb > ABX_VOLUME_MB_MAX))
        return abx__error_set(err, ABX_EINVAL, "--size: %d-%d MiB", VOLUME_MIN_MB, ABX_VOLUME_MB_MAX);
    char ns[900];
    int rc = ns_dir(tenant, true, ns, sizeof ns, err);
    if (rc < 0)
        return rc;
    int lock = ns_lock(ns, err);
    if (lock < 0)
        return lock;
    sweep(ns);
    json_t *exists = read_doc(ns, name);
    if (exists)
        rc = abx__error_set(err, ABX_EINVAL, "volume %s exists already", name);
    json_decref(exists);
    if (rc == 0)
        rc = check_quota(tenant, ns, size_mb, err);
    if (rc == 0)
        rc = finish_create(ns, name, size_mb, info, err);
    close(lock);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    json_t *const *x = a, *const *y = b;
    return strcmp(json_string_value(json_object_get(*x, "name")),
                  json_string_value(json_object_get(*y, "name")));
}

int abx__volume_list(const char *tenant, json_t **list, abx_error **err)
{
    *list = json_array();
    if (!*list)
        return abx__error_set(err, ABX_ENOMEM, "volumes");
    char ns[900];
    if (ns_dir(tenant, false, ns, sizeof ns, NULL) < 0)
        return 0;
    DIR *d = opendir(ns);
    struct dirent *e;
    size_t n = 0, cap = 0;
    json_t **items = NULL;
    while (d && (e = readdir(d))) {
        json_t *doc = abx_volume_name_valid(e->d_name) ? read_doc(ns, e->d_name) : NULL;
        json_t *info = doc ? info_of(ns, e->d_name, doc) : NULL;
        json_decref(doc);
        if (!info)
            continue;
        if (n == cap) {
            json_t **grown = realloc(items, (cap = cap ? 2 * cap : 16) * sizeof *grown);
            if (!grown) {
                json_decref(info);
                break;
            }
            items = grown;
        }
        items[n++] = info;
    }
    if (d)
        closedir(d);
    if (n > 1)
        qsort(items, n, sizeof *items, cmp_name);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(*list, items[i]);
    free(items);
    return 0;
}

int abx__volume_inspect(const char *tenant, const char *name_or_id, json_t **info, abx_error **err)
{
    *info = NULL;
    char ns[900], name[80];
    if (!name_or_id || ns_dir(tenant, false, ns, sizeof ns, NULL) < 0)
        return not_found(name_or_id ? name_or_id : "", err);
    json_t *doc = find(ns, name_or_id, name, sizeof name);
    if (!doc)
        return not_found(name_or_id, err);
    *info = info_of(ns, name, doc);
    json_decref(doc);
    return *info ? 0 : abx__error_set(err, ABX_ENOMEM, "volume");
}

/* The exclusive flock of a volume's directory, waiting a moment for a
 * sandbox that is ending (a kill answers before its supervisor is gone). */
static bool lock_soon(int fd)
{
    for (int i = 0; i < RM_WAIT_MS / 20; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK)
            return false;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* Whether a durable sandbox (at rest: its shim gone, so no flock) will
 * mount the volume at dir when it is resumed. */
static bool kept_by_durable(const char *dir)
{
    char root[560];
    if (abx__state_root(root, sizeof root, false, NULL) < 0)
        return false;
    DIR *d = opendir(root);
    struct dirent *e;
    bool kept = false;
    while (d && !kept && (e = readdir(d))) {
        char sandbox[900], path[1000];
        snprintf(sandbox, sizeof sandbox, "%s/%.64s", root, e->d_name);
        if (e->d_name[0] == '.' || !abx__state_durable(sandbox))
            continue;
        snprintf(path, sizeof path, "%s/config.json", sandbox);
        json_t *cfg = json_load_file(path, 0, NULL), *m;
        size_t i;
        json_array_foreach(json_object_get(cfg, "volumes"), i, m)
        {
            const char *used = json_string_value(json_object_get(m, "dir"));
            kept = kept || (used && strcmp(used, dir) == 0);
        }
        json_decref(cfg);
    }
    if (d)
        closedir(d);
    return kept;
}

/* Takes the volume away from under its name (its exclusive flock held,
 * so no shim holds it), then deletes it. */
static int take_away(const char *ns, const char *name, abx_error **err)
{
    char path[1200], gone[1200], id[ABX_RANDOM_ID_LEN + 1];
    snprintf(path, sizeof path, "%s/%s", ns, name);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return not_found(name, err);
    if (!lock_soon(fd)) {
        close(fd);
        return abx__error_set(err, ABX_EBUSY, "volume %s is in use by a sandbox: kill it first", name);
    }
    if (kept_by_durable(path)) {
        close(fd);
        return abx__error_set(
            err, ABX_EBUSY,
            "volume %s is mounted by a paused durable sandbox (abx list --status paused): kill "
            "it first",
            name);
    }
    if (abx__random_id(id, sizeof id) < 0) {
        close(fd);
        return abx__error_set(err, ABX_ESYS, "no randomness");
    }
    snprintf(gone, sizeof gone, "%s/.gone-%.16s", ns, id);
    int rc = rename(path, gone) < 0 ? abx__error_errno(err, ABX_EIO, errno, "removing the volume") : 0;
    close(fd);
    if (rc == 0)
        abx__tree_remove(gone);
    return rc;
}

int abx__volume_remove(const char *tenant, const char *name_or_id, abx_error **err)
{
    char ns[900], name[80];
    if (!name_or_id || ns_dir(tenant, false, ns, sizeof ns, NULL) < 0)
        return not_found(name_or_id ? name_or_id : "", err);
    int lock = ns_lock(ns, NULL);
    if (lock < 0)
        return not_found(name_or_id, err);
    json_t *doc = find(ns, name_or_id, name, sizeof name);
    int rc = doc ? take_away(ns, name, err) : not_found(name_or_id, err);
    json_decref(doc);
    close(lock);
    return rc;
}

int abx__volume_mounts(const char *tenant, const char *const *specs, json_t **out, abx_error **err)
{
    *out = NULL;
    size_t n = 0;
    while (specs && specs[n])
        n++;
    if (!n)
        return 0;
    abx_volume_mount parsed[ABX_VOLUME_MOUNTS_MAX];
    int rc = abx__volume_mounts_parse(specs, parsed, &n, err);
    if (rc < 0)
        return rc;
    if (geteuid() != 0)
        return abx__error_set(
            err, ABX_EPERM,
            "volumes need abx to run as root, or the machine's abx service (abx service start)");
    char ns[900];
    if (ns_dir(tenant, false, ns, sizeof ns, NULL) < 0)
        return not_found(parsed[0].name, err);
    json_t *arr = json_array();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        json_t *doc = read_doc(ns, parsed[i].name);
        char dir[1200];
        snprintf(dir, sizeof dir, "%.900s/%.63s", ns, parsed[i].name);
        if (!doc) {
            rc = not_found(parsed[i].name, err);
            break;
        }
        json_array_append_new(arr,
                              json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", parsed[i].name, "dir", dir,
                                        "path", parsed[i].path, "read_only", parsed[i].read_only, "image",
                                        json_integer_value(json_object_get(doc, "size_mb")) > 0));
        json_decref(doc);
    }
    if (rc < 0)
        json_decref(arr);
    else
        *out = arr;
    return rc;
}
