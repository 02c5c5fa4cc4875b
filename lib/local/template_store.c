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
#include "parse.h"
#include "archive_extract.h"
#include "digest.h"
#include "config.h"
#include "error_internal.h"
#include "state.h"
#include "sysutil.h"

#include <ctype.h>
#include <signal.h>
#include <dirent.h>
#include <errno.h>
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

/* A name whose tree may be stored: an imported or built one, or
 * code-interpreter-v1 once it is built. */
static bool storable(const char *name)
{
    return abx__template_name_valid(name) || strcmp(name, ABX_TEMPLATE_CODE_INTERPRETER) == 0;
}

int abx__template_root(const char *name, char *out, size_t len)
{
    char dir[600], meta[700];
    if (!storable(name) || templates_dir(dir, sizeof dir, false, NULL) < 0)
        return -1;
    snprintf(meta, sizeof meta, "%s/%s/template.json", dir, name);
    snprintf(out, len, "%s/%s/rootfs", dir, name);
    struct stat st;
    return access(meta, F_OK) == 0 && lstat(out, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* ---- sizes and removal, never through a link -------------------------------- */

static void measure(const char *root, unsigned long long *bytes, unsigned long long *files)
{
    abx__tree_measure(root, bytes, files);
}

static int remove_tree(const char *root)
{
    return abx__tree_remove(root);
}

/* ---- import ------------------------------------------------------------------ */

#define TEMPLATE_JSON_MAX (256u * 1024) /* a template's config (its ENV) makes it grow */

static json_t *describe(const char *name, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/template.json", dir, name);
    struct stat st;
    if (stat(path, &st) < 0 || st.st_size > (off_t)TEMPLATE_JSON_MAX)
        return NULL;
    json_t *doc = json_load_file(path, 0, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *abx__template_config(const char *name)
{
    char dir[600];
    if (!storable(name) || templates_dir(dir, sizeof dir, false, NULL) < 0)
        return NULL;
    json_t *doc = describe(name, dir);
    json_t *config = json_incref(json_object_get(doc, "config"));
    json_decref(doc);
    return json_is_object(config) ? config : (json_decref(config), NULL);
}

/* ---- staging and installing ---------------------------------------------------- */

void abx__tree_reap_dead(const char *dir, const char *const *prefixes)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        const char *p = NULL;
        for (size_t i = 0; prefixes[i] && !p; i++)
            if (strncmp(e->d_name, prefixes[i], strlen(prefixes[i])) == 0)
                p = e->d_name + strlen(prefixes[i]);
        long pid = p ? strtol(p, NULL, 10) : 0;
        if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove_tree(path);
    }
    if (d)
        closedir(d);
}

/* Leftovers of an import, build or removal whose process died (their name
 * carries its pid): a half-made template is never listed, and its files go. */
static void reconcile(const char *dir)
{
    static const char *const leftovers[] = {".partial-", ".removing-", NULL};
    abx__tree_reap_dead(dir, leftovers);
}

int abx__template_stage(const char *name, char *staging, size_t len, abx_error **err)
{
    char dir[600], tree[800];
    int rc = templates_dir(dir, sizeof dir, true, err);
    if (rc < 0)
        return rc;
    reconcile(dir);
    snprintf(staging, len, "%s/.partial-%ld-%s-XXXXXX", dir, (long)getpid(), name);
    if (!mkdtemp(staging))
        return abx__error_errno(err, ABX_EIO, errno, "the template's staging directory");
    chmod(staging, 0755); /* sandboxes' ids reach the tree through it */
    snprintf(tree, sizeof tree, "%s/rootfs", staging);
    if (mkdir(tree, 0755) < 0) {
        rc = abx__error_errno(err, ABX_EIO, errno, "the template's staging directory");
        remove_tree(staging);
        return rc;
    }
    return 0;
}

void abx__template_discard(const char *staging)
{
    remove_tree(staging);
}

static unsigned users_of(const char *name);

int abx__template_install(const char *name, const char *staging, json_t *doc, bool replace, json_t **info,
                          abx_error **err)
{
    if (info)
        *info = NULL;
    char dir[600], final[700], tree[800], meta[800], gone[800];
    int rc = templates_dir(dir, sizeof dir, true, err);
    if (rc < 0) {
        remove_tree(staging);
        json_decref(doc);
        return rc;
    }
    snprintf(final, sizeof final, "%s/%s", dir, name);
    snprintf(tree, sizeof tree, "%s/rootfs", staging);
    unsigned long long bytes, files;
    measure(tree, &bytes, &files);
    char created[32];
    abx__rfc3339((long long)time(NULL), created, sizeof created);
    json_object_set_new(doc, "name", json_string(name));
    json_object_set_new(doc, "created_at", json_string(created));
    json_object_set_new(doc, "size_bytes", json_integer((json_int_t)bytes));
    json_object_set_new(doc, "files", json_integer((json_int_t)files));
    snprintf(meta, sizeof meta, "%s/template.json", staging);
    char *text = json_dumps(doc, JSON_COMPACT);
    rc = text && strlen(text) < TEMPLATE_JSON_MAX && abx__create_file(meta, text, 0644) == 0 ? 0 : -1;
    free(text);
    if (rc < 0) {
        rc = abx__error_set(err, ABX_EIO, "recording the template (its config may be too large)");
        goto fail;
    }
    gone[0] = '\0';
    if (access(final, F_OK) == 0) {
        unsigned users = users_of(name);
        if (!replace || users) {
            rc = users ? abx__error_set(err, ABX_EINVAL,
                                        "template %s is used by %u live sandbox%s: kill them, or "
                                        "use another name",
                                        name, users, users == 1 ? "" : "es")
                       : abx__error_set(err, ABX_EINVAL,
                                        "template %s exists already (abx template rm %s first)", name, name);
            goto fail;
        }
        snprintf(gone, sizeof gone, "%s/.removing-%ld-%s", dir, (long)getpid(), name);
        if (rename(final, gone) < 0) {
            rc = abx__error_errno(err, ABX_EIO, errno, "replacing the template");
            goto fail;
        }
    }
    if (rename(staging, final) < 0) {
        rc = abx__error_errno(err, ABX_EIO, errno, "recording the template");
        if (gone[0])
            rename(gone, final);
        goto fail;
    }
    if (gone[0])
        remove_tree(gone);
    if (info)
        *info = doc;
    else
        json_decref(doc);
    return 0;
fail:
    remove_tree(staging);
    json_decref(doc);
    return rc;
}

/* ---- import -------------------------------------------------------------------- */

#define OCI_JSON_MAX (4u << 20)

/* A blob of an OCI layout, by digest ("sha256:<64 hex>"): its path, checked
 * against the digest. */
static int oci_blob(const char *layout, const char *digest, char *path, size_t len, char *why, size_t whylen)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
        strspn(digest + 7, "0123456789abcdef") != 64) {
        snprintf(why, whylen, "OCI layout: a digest that is not sha256:<hex>");
        return -1;
    }
    snprintf(path, len, "%s/blobs/sha256/%s", layout, digest + 7);
    char hex[ABX_DIGEST_HEX];
    if (abx__sha256_file_hex(path, hex) < 0) {
        snprintf(why, whylen, "OCI layout: blob %.19s... is missing or unreadable", digest);
        return -1;
    }
    if (strcmp(hex, digest + 7) != 0) {
        snprintf(why, whylen, "OCI layout: blob %.19s... does not match its digest", digest);
        return -1;
    }
    return 0;
}

static json_t *oci_json(const char *path, char *why, size_t whylen)
{
    struct stat st;
    json_t *doc =
        stat(path, &st) == 0 && st.st_size <= (off_t)OCI_JSON_MAX ? json_load_file(path, 0, NULL) : NULL;
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(why, whylen, "OCI layout: %s is not a JSON object (of at most 4 MiB)",
                 strrchr(path, '/') + 1);
        return NULL;
    }
    return doc;
}

/* The image manifest an index names: linux/amd64 (or no platform), through
 * at most one nested index. */
static json_t *oci_manifest(const char *layout, json_t *index, const char *tag, int depth, char *why,
                            size_t whylen)
{
    json_t *list = json_object_get(index, "manifests"), *m, *pick = NULL;
    size_t i;
    json_array_foreach(list, i, m)
    {
        json_t *plat = json_object_get(m, "platform");
        const char *os = json_string_value(json_object_get(plat, "os"));
        const char *arch = json_string_value(json_object_get(plat, "architecture"));
        const char *ref = json_string_value(
            json_object_get(json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
        if ((!plat || (os && arch && strcmp(os, "linux") == 0 && strcmp(arch, "amd64") == 0)) &&
            (!tag || depth > 0 || (ref && strcmp(ref, tag) == 0))) {
            pick = m;
            break;
        }
    }
    if (!pick) {
        snprintf(why, whylen,
                 tag && depth == 0 ? "OCI layout: no manifest tagged '%.100s' for linux/amd64"
                                   : "OCI layout: no manifest for linux/amd64",
                 tag);
        return NULL;
    }
    char path[1024];
    if (oci_blob(layout, json_string_value(json_object_get(pick, "digest")), path, sizeof path, why, whylen) <
        0)
        return NULL;
    json_t *doc = oci_json(path, why, whylen);
    if (doc && json_is_array(json_object_get(doc, "manifests"))) {
        json_t *inner = depth < 1 ? oci_manifest(layout, doc, tag, depth + 1, why, whylen) : NULL;
        if (depth >= 1)
            snprintf(why, whylen, "OCI layout: indexes nested too deep");
        json_decref(doc);
        return inner;
    }
    return doc;
}

/* The image's Env, WorkingDir, User, Cmd and Entrypoint as a template's config. */
static json_t *config_from_image(json_t *image)
{
    json_t *c = json_object_get(image, "config"), *config = json_object(), *env = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(c, "Env"), i, v)
    {
        const char *pair = json_string_value(v);
        const char *eq = pair ? strchr(pair, '=') : NULL;
        if (eq && eq != pair && eq - pair < 256) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - pair), pair);
            json_object_set_new(env, name, json_string(eq + 1));
        }
    }
    json_object_set_new(config, "env", env);
    const char *wd = json_string_value(json_object_get(c, "WorkingDir"));
    if (wd && wd[0] == '/')
        json_object_set_new(config, "workdir", json_string(wd));
    const char *user = json_string_value(json_object_get(c, "User"));
    if (user && (strcmp(user, "root") == 0 || strcmp(user, "0") == 0 || strncmp(user, "0:", 2) == 0))
        json_object_set_new(config, "uid", json_integer(0));
    else if (user &&
             (strcmp(user, "user") == 0 || strcmp(user, "1000") == 0 || strncmp(user, "1000:", 5) == 0))
        json_object_set_new(config, "uid", json_integer(1000));
    if (json_is_array(json_object_get(c, "Entrypoint")))
        json_object_set(config, "entrypoint", json_object_get(c, "Entrypoint"));
    if (json_is_array(json_object_get(c, "Cmd")))
        json_object_set(config, "cmd", json_object_get(c, "Cmd"));
    return config;
}

/* Applies an OCI layout's layers (as `skopeo copy ... oci:DIR` writes it)
 * to tree in order; *config gets the image's config. */
static int import_oci(const char *layout, const char *tag, const char *tree, json_t **config, char *why,
                      size_t whylen)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/oci-layout", layout);
    json_t *marker = oci_json(path, why, whylen);
    json_decref(marker);
    if (!marker)
        return -1;
    snprintf(path, sizeof path, "%s/index.json", layout);
    json_t *index = oci_json(path, why, whylen);
    json_t *manifest = index ? oci_manifest(layout, index, tag, 0, why, whylen) : NULL;
    json_decref(index);
    if (!manifest)
        return -1;
    int rc =
        oci_blob(layout, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")),
                 path, sizeof path, why, whylen);
    json_t *image = rc == 0 ? oci_json(path, why, whylen) : NULL;
    json_t *layers = json_object_get(manifest, "layers");
    if (!image || !json_is_array(layers)) {
        if (image)
            snprintf(why, whylen, "OCI layout: the manifest lists no layers");
        json_decref(image);
        json_decref(manifest);
        return -1;
    }
    size_t i;
    json_t *layer;
    json_array_foreach(layers, i, layer)
    {
        const char *type = json_string_value(json_object_get(layer, "mediaType"));
        if (type && !strstr(type, "tar")) {
            snprintf(why, whylen, "OCI layout: layer %zu is %.100s, not a tar", i + 1, type);
            rc = -1;
            break;
        }
        char lwhy[400] = "";
        if ((rc = oci_blob(layout, json_string_value(json_object_get(layer, "digest")), path, sizeof path,
                           why, whylen)) < 0)
            break;
        if ((rc = abx__archive_extract_layer(path, tree, lwhy, sizeof lwhy)) < 0) {
            snprintf(why, whylen, "OCI layer %zu: %s", i + 1, lwhy);
            break;
        }
    }
    *config = rc == 0 ? config_from_image(image) : NULL;
    json_decref(image);
    json_decref(manifest);
    return rc;
}

int abx__template_import(const char *name, const char *source, json_t **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (!abx__template_name_valid(name))
        return abx__error_set(err, ABX_EINVAL,
                              "template name '%.64s': lower-case letters, digits, '.', '_', '-' "
                              "(at most 63), not base or code-interpreter-v1",
                              name);
    struct stat st;
    char layout[4096] = "";
    const char *tag = NULL, *colon = strrchr(source, ':');
    if (stat(source, &st) < 0 && colon && colon[1] && (size_t)(colon - source) < sizeof layout) {
        snprintf(layout, sizeof layout, "%.*s", (int)(colon - source),
                 source); /* DIR:TAG, as skopeo's oci:DIR:TAG */
        tag = colon + 1;
        if (stat(layout, &st) < 0 || !S_ISDIR(st.st_mode))
            return abx__error_errno(err, ABX_EINVAL, ENOENT, "template source");
        source = layout;
    } else if (stat(source, &st) < 0) {
        return abx__error_errno(err, ABX_EINVAL, errno, "template source");
    }
    char dir[600], final[700];
    int rc = templates_dir(dir, sizeof dir, true, err);
    if (rc < 0)
        return rc;
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (access(final, F_OK) == 0)
        return abx__error_set(err, ABX_EINVAL, "template %s exists already (abx template rm %s first)", name,
                              name);
    char staging[800], tree[900];
    if ((rc = abx__template_stage(name, staging, sizeof staging, err)) < 0)
        return rc;
    snprintf(tree, sizeof tree, "%s/rootfs", staging);
    char why[400] = "";
    json_t *config = NULL;
    rc = S_ISDIR(st.st_mode) ? import_oci(source, tag, tree, &config, why, sizeof why)
                             : abx__archive_extract_rootfs(source, tree, why, sizeof why);
    if (rc < 0) {
        remove_tree(staging);
        return abx__error_set(err, ABX_EINVAL, "template %s: %s", name, why[0] ? why : strerror(errno));
    }
    char shown[256]; /* template.json stays small: the source's name, cut */
    snprintf(shown, sizeof shown, "%.255s", source);
    json_t *doc = json_pack("{s:s, s:s}", "source", shown, "kind", S_ISDIR(st.st_mode) ? "oci" : "archive");
    if (config)
        json_object_set_new(doc, "config", config);
    return abx__template_install(name, staging, doc, false, info, err);
}

/* ---- list, inspect, remove ------------------------------------------------------ */

static json_t *builtin_doc(const char *name)
{
    char dir[600];
    json_t *built =
        strcmp(name, ABX_TEMPLATE_CODE_INTERPRETER) == 0 && templates_dir(dir, sizeof dir, false, NULL) == 0
            ? describe(name, dir)
            : NULL;
    if (built) {
        json_object_set_new(built, "builtin", json_true());
        json_object_set_new(built, "built", json_true());
        return built;
    }
    if (strcmp(name, "base") == 0)
        return json_pack("{s:s, s:b, s:s}", "name", name, "builtin", 1, "source",
                         "the host's /usr, read-only");
    return json_pack("{s:s, s:b, s:b, s:s}", "name", name, "builtin", 1, "built", 0, "source",
                     "Debian with python3, numpy, pandas, matplotlib and node: built on first use "
                     "(or ahead: abx template build --builtin code-interpreter-v1)");
}

int abx__template_list(json_t **out, abx_error **err)
{
    (void)err;
    *out = json_pack("[o, o]", builtin_doc("base"), builtin_doc(ABX_TEMPLATE_CODE_INTERPRETER));
    char dir[600];
    if (templates_dir(dir, sizeof dir, false, NULL) < 0)
        return 0;
    reconcile(dir);
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
    return *out ? 0
                : abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)",
                                 name);
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
    char dir[600], final[700], gone[760];
    bool stored = storable(name) && templates_dir(dir, sizeof dir, false, NULL) == 0;
    if (stored)
        snprintf(final, sizeof final, "%s/%s", dir, name);
    if ((!stored || access(final, F_OK) < 0) && abx__template_builtin(name))
        return abx__error_set(err, ABX_EINVAL, "template %s is built in: it cannot be removed%s", name,
                              strcmp(name, "base") == 0 ? "" : " (it is not built on this machine)");
    if (!stored || access(final, F_OK) < 0)
        return abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)", name);
    unsigned users = users_of(name);
    if (users && !force)
        return abx__error_set(err, ABX_EINVAL,
                              "template %s is used by %u live sandbox%s (kill them, or --force)", name, users,
                              users == 1 ? "" : "es");
    snprintf(gone, sizeof gone, "%s/.removing-%ld-%s", dir, (long)getpid(), name);
    if (rename(final, gone) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "removing the template");
    if (remove_tree(gone) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "removing the template's files");
    return 0;
}
