/* template_store.c: templates on this machine (template_store.h).
 *
 * Owns the templates directory: an import unpacks into
 * templates/.partial-NAME-XXXXXX/ (lib/archive_extract.c's rootfs rules)
 * and renames it to templates/NAME when it is whole, so a half-made
 * template is never listed or used; a removal renames it away first, then
 * deletes the tree without following a link. Which sandboxes use a
 * template: the live ones whose meta.json names it.
 */
#define _XOPEN_SOURCE 700
#include "template_store.h"
#include "archive_extract.h"
#include "config.h"
#include "error_internal.h"
#include "state.h"
#include "sysutil.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool abx__template_builtin(const char *name)
{
    return strcmp(name, "base") == 0 || strcmp(name, "code-interpreter-v1") == 0;
}

bool abx__template_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63 || !(islower((unsigned char)name[0]) || isdigit((unsigned char)name[0])))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) && !strchr("._-", name[i]))
            return false;
    return !abx__template_builtin(name);
}

static int templates_dir(char *out, size_t len, bool create, abx_error **err)
{
    char home[512];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    snprintf(out, len, "%s/templates", home);
    if (create && (abx__mkdir_exist_ok(home, 0700) < 0 || abx__mkdir_exist_ok(out, 0700) < 0))
        return abx__error_errno(err, ABX_EIO, errno, "the templates directory");
    return 0;
}

int abx__template_root(const char *name, char *out, size_t len)
{
    char dir[600], meta[700];
    if (!abx__template_name_valid(name) || templates_dir(dir, sizeof dir, false, NULL) < 0)
        return -1;
    snprintf(meta, sizeof meta, "%s/%s/template.json", dir, name);
    snprintf(out, len, "%s/%s/rootfs", dir, name);
    struct stat st;
    return access(meta, F_OK) == 0 && lstat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* ---- sizes and removal, never through a link -------------------------------- */

static unsigned long long walk_bytes, walk_files;

static int count_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)path, (void)type, (void)f;
    walk_bytes += (unsigned long long)st->st_blocks * 512ull;
    walk_files++;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st, (void)f;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* One walk at a time: nftw's callbacks have no context (the CLI is one thread). */
static void measure(const char *root, unsigned long long *bytes, unsigned long long *files)
{
    walk_bytes = walk_files = 0;
    nftw(root, count_one, 64, FTW_PHYS | FTW_MOUNT);
    *bytes = walk_bytes;
    *files = walk_files;
}

static int remove_tree(const char *root)
{
    return nftw(root, remove_one, 64, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
}

/* ---- import ------------------------------------------------------------------ */

static json_t *describe(const char *name, const char *dir)
{
    char path[1024], text[4096];
    snprintf(path, sizeof path, "%s/%s/template.json", dir, name);
    json_t *doc = abx__read_small_file(path, text, sizeof text) == 0 ? json_loads(text, 0, NULL) : NULL;
    return doc;
}

int abx__template_import(const char *name, const char *source, json_t **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (!abx__template_name_valid(name))
        return abx__error_set(err, ABX_EINVAL, "template name '%.64s': lower-case letters, digits, '.', '_', '-' "
                                               "(at most 63), not base or code-interpreter-v1", name);
    struct stat st;
    if (stat(source, &st) < 0)
        return abx__error_errno(err, ABX_EINVAL, errno, "template source");
    if (S_ISDIR(st.st_mode))
        return abx__error_set(err, ABX_ENOTSUP, "template source: a directory (an OCI layout) is not imported yet; "
                                                "give a root filesystem archive (docker export, .tar[.gz|.zst])");
    char dir[600], partial[700], tree[760], final[700];
    int rc = templates_dir(dir, sizeof dir, true, err);
    if (rc < 0)
        return rc;
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (access(final, F_OK) == 0)
        return abx__error_set(err, ABX_EINVAL, "template %s exists already (abx template rm %s first)", name, name);
    snprintf(partial, sizeof partial, "%s/.partial-%s-XXXXXX", dir, name);
    if (!mkdtemp(partial))
        return abx__error_errno(err, ABX_EIO, errno, "the template's staging directory");
    snprintf(tree, sizeof tree, "%s/rootfs", partial);
    char why[400] = "";
    if (mkdir(tree, 0755) < 0 || abx__archive_extract_rootfs(source, tree, why, sizeof why) < 0) {
        remove_tree(partial);
        return abx__error_set(err, ABX_EINVAL, "template %s: %s", name, why[0] ? why : strerror(errno));
    }
    unsigned long long bytes, files;
    measure(tree, &bytes, &files);
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    char shown[256]; /* template.json stays small: the source's name, cut */
    snprintf(shown, sizeof shown, "%s", source);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:I}", "name", name, "source", shown, "created_at", created,
                            "size_bytes", (json_int_t)bytes, "files", (json_int_t)files);
    char meta[800];
    snprintf(meta, sizeof meta, "%s/template.json", partial);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    rc = text && abx__create_file(meta, text, 0644) == 0 ? 0 : -1;
    free(text);
    if (rc == 0 && rename(partial, final) < 0)
        rc = -1;
    if (rc < 0) {
        int saved = errno;
        json_decref(doc);
        remove_tree(partial);
        return abx__error_errno(err, ABX_EIO, saved, "recording the template");
    }
    if (info)
        *info = doc;
    else
        json_decref(doc);
    return 0;
}

/* ---- list, inspect, remove ------------------------------------------------------ */

static json_t *builtin_doc(const char *name)
{
    return json_pack("{s:s, s:b, s:s}", "name", name, "builtin", 1, "source",
                     strcmp(name, "base") == 0 ? "the host's /usr, read-only" : "the host's /usr with its kernels");
}

int abx__template_list(json_t **out, abx_error **err)
{
    (void)err;
    *out = json_pack("[o, o]", builtin_doc("base"), builtin_doc("code-interpreter-v1"));
    char dir[600];
    if (templates_dir(dir, sizeof dir, false, NULL) < 0)
        return 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        json_t *doc = abx__template_name_valid(names[i]->d_name) ? describe(names[i]->d_name, dir) : NULL;
        if (doc)
            json_array_append_new(*out, doc);
        free(names[i]);
    }
    free(names);
    return 0;
}

int abx__template_inspect(const char *name, json_t **out, abx_error **err)
{
    *out = NULL;
    if (abx__template_builtin(name)) {
        *out = builtin_doc(name);
        return 0;
    }
    char dir[600];
    if (abx__template_name_valid(name) && templates_dir(dir, sizeof dir, false, NULL) == 0)
        *out = describe(name, dir);
    return *out ? 0 : abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)", name);
}

/* How many live sandboxes were made from template name. */
static unsigned users_of(const char *name)
{
    char root[560];
    if (abx__state_root(root, sizeof root, false, NULL) < 0)
        return 0;
    unsigned count = 0;
    DIR *d = opendir(root);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char sdir[900], path[960];
        snprintf(sdir, sizeof sdir, "%s/%s", root, e->d_name);
        snprintf(path, sizeof path, "%s/meta.json", sdir);
        if (e->d_name[0] == '.' || !abx__state_shim_alive(sdir))
            continue;
        json_t *doc = json_load_file(path, 0, NULL); /* metadata can make it large */
        const char *t = json_string_value(json_object_get(doc, "template"));
        count += t && strcmp(t, name) == 0;
        json_decref(doc);
    }
    if (d)
        closedir(d);
    return count;
}

int abx__template_remove(const char *name, bool force, abx_error **err)
{
    if (abx__template_builtin(name))
        return abx__error_set(err, ABX_EINVAL, "template %s is built in: it cannot be removed", name);
    char dir[600], final[700], gone[760];
    if (!abx__template_name_valid(name) || templates_dir(dir, sizeof dir, false, NULL) < 0)
        return abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)", name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (access(final, F_OK) < 0)
        return abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)", name);
    unsigned users = users_of(name);
    if (users && !force)
        return abx__error_set(err, ABX_EINVAL, "template %s is used by %u live sandbox%s (kill them, or --force)", name,
                              users, users == 1 ? "" : "es");
    snprintf(gone, sizeof gone, "%s/.removing-%s-%ld", dir, name, (long)getpid());
    if (rename(final, gone) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "removing the template");
    if (remove_tree(gone) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "removing the template's files");
    return 0;
}
