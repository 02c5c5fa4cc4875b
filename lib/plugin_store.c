/* plugin_store.c: installed provider plugins (issue 10) under $ABX_HOME.
 *
 * Owns: where they live ($ABX_HOME/providers/<id>/: a copy, or a symlink
 * for --link), their data directories ($ABX_HOME/provider-data/<id>/,
 * which survive reinstalls), the index ($ABX_HOME/provider-index.json,
 * 0600, outside every plugin's directory: id -> kind, version, source,
 * linked, digest), and the digest: SHA-256 (OpenSSL) over the sorted
 * relative paths of everything in the plugin's directory, each with its
 * mode and its contents (a symlink's target). Checked before every start:
 * a changed, added or removed file, or a changed mode, is E8011.
 */
#include "plugin_store.h"
#include "config.h"
#include "manifest.h"
#include "error_internal.h"
#include "sysutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 10000
#define MAX_DEPTH 32

int abx__plugin_path(const char *what, const char *id, char *out, size_t len, abx_error **err)
{
    char home[512];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    int n = id ? snprintf(out, len, "%s/%s/%s", home, what, id) : snprintf(out, len, "%s/%s", home, what);
    return n > 0 && (size_t)n < len ? 0 : abx__error_set(err, ABX_ECONFIG, "$ABX_HOME is too long");
}

/* ---- the digest ------------------------------------------------------------- */

typedef struct path_list {
    char **paths;
    size_t n, cap;
} path_list;

static int list_add(path_list *l, const char *rel)
{
    if (l->n >= MAX_FILES)
        return -1;
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

/* Every path under dir (relative, "a/b"), symlinks not followed. */
static int walk(int dirfd, const char *rel, int depth, path_list *l)
{
    if (depth > MAX_DEPTH)
        return -1;
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
            rc = walk(dirfd, child, depth + 1, l);
    }
    closedir(d);
    return rc;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds one entry: "path\0mode\0" and its contents (a regular file's bytes,
 * a symlink's target). */
static int hash_entry(EVP_MD_CTX *md, int dirfd, const char *rel)
{
    struct stat st;
    if (fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -1;
    char mode[32];
    int n = snprintf(mode, sizeof mode, "%o", (unsigned)st.st_mode);
    EVP_DigestUpdate(md, rel, strlen(rel) + 1);
    EVP_DigestUpdate(md, mode, (size_t)n + 1);
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t t = readlinkat(dirfd, rel, target, sizeof target);
        if (t < 0)
            return -1;
        EVP_DigestUpdate(md, target, (size_t)t);
    } else if (S_ISREG(st.st_mode)) {
        int fd = openat(dirfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return -1;
        char buf[65536];
        ssize_t got;
        while ((got = read(fd, buf, sizeof buf)) > 0)
            EVP_DigestUpdate(md, buf, (size_t)got);
        close(fd);
        if (got < 0)
            return -1;
    } else if (!S_ISDIR(st.st_mode)) {
        return -1; /* devices, fifos, sockets: never part of a plugin */
    }
    EVP_DigestUpdate(md, "\n", 1);
    return 0;
}

int abx__plugin_digest(const char *dir, char hex[65], abx_error **err)
{
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return abx__error_errno(err, ABX_EIO, errno, "opening the plugin directory");
    path_list l = {0};
    int rc = walk(dirfd, "", 0, &l);
    EVP_MD_CTX *md = rc == 0 ? EVP_MD_CTX_new() : NULL;
    if (md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1) {
        qsort(l.paths, l.n, sizeof *l.paths, cmp_paths);
        for (size_t i = 0; i < l.n && rc == 0; i++)
            rc = hash_entry(md, dirfd, l.paths[i]);
        unsigned char sum[32];
        unsigned len = 0;
        if (rc == 0 && EVP_DigestFinal_ex(md, sum, &len) == 1 && len == 32)
            for (int i = 0; i < 32; i++)
                snprintf(hex + 2 * i, 3, "%02x", sum[i]);
        else
            rc = -1;
    } else {
        rc = -1;
    }
    EVP_MD_CTX_free(md);
    for (size_t i = 0; i < l.n; i++)
        free(l.paths[i]);
    free(l.paths);
    close(dirfd);
    return rc < 0 ? abx__error_set(
                        err, ABX_EIO,
                        "the plugin directory cannot be read whole (more than %d files, a device node, "
                        "or an unreadable file)",
                        MAX_FILES)
                  : 0;
}

/* ---- the index ---------------------------------------------------------------- */

int abx__plugin_index_load(json_t **index, abx_error **err)
{
    char path[640];
    int rc = abx__plugin_path("provider-index.json", NULL, path, sizeof path, err);
    if (rc < 0)
        return rc;
    json_error_t je;
    *index = json_load_file(path, 0, &je);
    if (!*index && access(path, F_OK) == 0)
        return abx__error_set(err, ABX_ECONFIG, "%s is not valid JSON (line %d)", path, je.line);
    if (!*index)
        *index = json_object();
    if (!json_is_object(*index)) {
        json_decref(*index);
        *index = NULL;
        return abx__error_set(err, ABX_ECONFIG, "%s is not a JSON object", path);
    }
    return 0;
}

int abx__plugin_index_save(json_t *index, abx_error **err)
{
    char path[640], tmp[700], home[512];
    int rc = abx__plugin_path("provider-index.json", NULL, path, sizeof path, err);
    if (rc < 0)
        return rc;
    if (abx__home(home, sizeof home) < 0 || abx__mkdir_exist_ok(home, 0700) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "creating $ABX_HOME");
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    char *text = json_dumps(index, JSON_INDENT(2) | JSON_SORT_KEYS);
    int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
    bool ok = fd >= 0 && abx__write_all(fd, text, strlen(text)) == 0 && abx__write_all(fd, "\n", 1) == 0 &&
              fsync(fd) == 0;
    if (fd >= 0 && close(fd) < 0)
        ok = false;
    free(text);
    if (!ok || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return abx__error_errno(err, ABX_EIO, e, "writing the provider index");
    }
    return 0;
}

int abx__plugin_check(const char *id, json_t *entry, char *state, size_t len, abx_error **err)
{
    char dir[640];
    int rc = abx__plugin_path("providers", id, dir, sizeof dir, err);
    if (rc < 0)
        return rc;
    if (json_is_true(json_object_get(entry, "linked"))) {
        snprintf(state, len, "linked");
        return 0;
    }
    char hex[65] = "";
    const char *want = json_string_value(json_object_get(entry, "digest"));
    abx_error *ignored = NULL;
    bool same = want && abx__plugin_digest(dir, hex, &ignored) == 0 && strcmp(hex, want) == 0;
    abx_error_free(ignored);
    snprintf(state, len, "%s", same ? "ok" : "mismatch");
    return same ? 0
                : abx__error_set(
                      err, ABX_EPLUGINCHANGED,
                      "provider '%s': its files changed since it was installed (edited, added, removed or "
                      "re-moded); nothing was started",
                      id);
}

bool abx__plugin_config_secret(const char *id, const char *key)
{
    char dir[640], path[700];
    if (!abx__provider_id_valid(id) || abx__plugin_path("providers", id, dir, sizeof dir, NULL) < 0)
        return false;
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    FILE *f = fopen(path, "re");
    char *text = f ? calloc(1, 65537) : NULL;
    if (text) {
        size_t got = fread(text, 1, 65536, f);
        (void)got;
    }
    if (f)
        fclose(f);
    abx_manifest m;
    bool secret = false;
    if (text && abx__manifest_parse(text, &m, NULL) == 0) {
        secret = json_is_true(json_object_get(json_object_get(m.config, key), "secret"));
        abx__manifest_clear(&m);
    }
    free(text);
    return secret;
}

int abx__plugin_manifest_verified(const char *id, abx_manifest *m, abx_error **err)
{
    json_t *index = NULL;
    int rc = abx__plugin_index_load(&index, err);
    if (rc < 0)
        return rc;
    json_t *entry = json_object_get(index, id);
    if (!abx__provider_id_valid(id) || !entry) {
        json_decref(index);
        return abx__error_set(err, ABX_EPROVIDER, "no provider '%.64s' is installed (abx provider list)", id);
    }
    char state[16], dir[640], path[700];
    rc = abx__plugin_check(id, entry, state, sizeof state, err);
    bool linked = json_is_true(json_object_get(entry, "linked"));
    json_decref(index);
    if (rc < 0)
        return rc;
    if (linked)
        fprintf(stderr,
                "abx: warning: provider %s is a --link install (development): its files are not checked\n",
                id);
    abx__plugin_path("providers", id, dir, sizeof dir, NULL);
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    char *text = calloc(1, 65537);
    FILE *f = text ? fopen(path, "re") : NULL;
    if (f) {
        size_t got = fread(text, 1, 65536, f);
        (void)got;
        fclose(f);
    }
    rc = f ? abx__error_wrap(err, abx__manifest_parse(text, m, err), "provider '%s': its manifest", id)
           : abx__error_set(err, ABX_EPROVIDER, "provider '%s': no manifest", id);
    free(text);
    return rc;
}
