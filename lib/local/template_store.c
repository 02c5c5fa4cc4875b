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
#include "oci_layout.h"
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
#define OWNER_KEY_MAX 40 /* "~KEY." : KEY of [0-9a-z] */

/* A tenant's own template (snapshots, a host user's builds): "~KEY.NAME". */
static bool host_users_own(const char *name)
{
    size_t key = name[0] == '~' ? strspn(name + 1, "0123456789abcdefghijklmnopqrstuvwxyz") : 0;
    return key > 0 && key <= OWNER_KEY_MAX && name[1 + key] == '.' &&
           abx__template_name_valid(name + 2 + key);
}

/* The key a tenant's own templates are stored under: a host user's uid
 * ("uid:N"), a secret's tenant ("k" and 32 hex digits) as it is, any other
 * "h" and the first 64 bits of its SHA-256. */
static void owner_key(const char *tenant, char *out, size_t len)
{
    unsigned uid = 0;
    if (strncmp(tenant, "uid:", 4) == 0 && abx__parse_uint(tenant + 4, 1, 4294967294u, &uid) == 0) {
        snprintf(out, len, "%u", uid);
        return;
    }
    if (tenant[0] == 'k' && strlen(tenant) == 33 && strspn(tenant + 1, "0123456789abcdef") == 32) {
        snprintf(out, len, "%s", tenant);
        return;
    }
    char hex[ABX_DIGEST_HEX];
    abx_digest *d = abx__digest_new();
    if (d)
        abx__digest_add(d, tenant, strlen(tenant));
    if (!d || abx__digest_finish(d, hex) < 0)
        snprintf(hex, sizeof hex, "0000000000000000");
    snprintf(out, len, "h%.16s", hex);
}

static bool storable(const char *name)
{
    return abx__template_name_valid(name) || strcmp(name, ABX_TEMPLATE_CODE_INTERPRETER) == 0 ||
           host_users_own(name);
}

bool abx__template_storable(const char *name)
{
    return storable(name);
}

bool abx__template_own(const char *tenant, const char *name, char *out, size_t len)
{
    bool tenant_set = tenant && *tenant;
    char key[OWNER_KEY_MAX + 1] = "";
    if (tenant_set)
        owner_key(tenant, key, sizeof key);
    if (tenant_set && host_users_own(name))
        out[0] = '\0'; /* a tenant never names another's template by its stored name: no such template */
    else if (tenant_set)
        snprintf(out, len, "~%s.%s", key, name);
    else
        snprintf(out, len, "%s", name);
    return tenant_set;
}

void abx__template_resolve(const char *tenant, const char *name, char *out, size_t len)
{
    char tree[1024];
    if (!abx__template_own(tenant, name, out, len) || abx__template_root(out, tree, sizeof tree) < 0)
        snprintf(out, len, "%s", tenant && *tenant && host_users_own(name) ? "" : name);
}

const char *abx__template_shown(const char *stored)
{
    return stored && host_users_own(stored) ? strchr(stored, '.') + 1 : stored;
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

json_t *abx__template_document(const char *name)
{
    char dir[600];
    if (!storable(name) || templates_dir(dir, sizeof dir, false, NULL) < 0)
        return NULL;
    return describe(name, dir);
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

/* Applies an OCI layout's layers (as `skopeo copy ... oci:DIR` writes it)
 * to tree in order (oci_layout.c reads and checks the layout); *config gets
 * the image's config. */
static int import_oci(const char *layout, const char *tag, const char *tree, json_t **config, char *why,
                      size_t whylen)
{
    abx_oci_image img;
    if (abx__oci_read(layout, tag, &img, why, whylen) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < img.nlayers && rc == 0; i++) {
        char lwhy[400] = "";
        if ((rc = abx__archive_extract_layer(img.layers[i], tree, lwhy, sizeof lwhy)) < 0)
            snprintf(why, whylen, "OCI layer %zu: %s", i + 1, lwhy);
    }
    *config = rc == 0 ? json_incref(img.config) : NULL;
    abx__oci_image_clear(&img);
    return rc;
}

int abx__template_import(const char *name, const char *source, json_t **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (!storable(name) || strcmp(name, ABX_TEMPLATE_CODE_INTERPRETER) == 0)
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
    return abx__template_list_for(NULL, out, err);
}

int abx__template_list_for(const char *tenant, json_t **out, abx_error **err)
{
    (void)err;
    char mine[OWNER_KEY_MAX + 4] = "";
    abx__template_own(tenant, "", mine, sizeof mine); /* "~KEY." ("" for the administrator) */
    *out = json_pack("[o, o]", builtin_doc("base"), builtin_doc(ABX_TEMPLATE_CODE_INTERPRETER));
    char dir[600];
    if (templates_dir(dir, sizeof dir, false, NULL) < 0)
        return 0;
    reconcile(dir);
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *entry = names[i]->d_name;
        bool shared = abx__template_name_valid(entry);
        bool seen =
            shared || (host_users_own(entry) && (!mine[0] || strncmp(entry, mine, strlen(mine)) == 0));
        json_t *doc = seen ? describe(entry, dir) : NULL;
        if (doc && json_is_true(json_object_get(doc, "fork"))) { /* a fork's, under the hood */
            json_decref(doc);
            doc = NULL;
        }
        if (doc && !shared && mine[0]) { /* the user's own, by the name they gave it */
            json_object_set_new(doc, "name", json_string(abx__template_shown(entry)));
            json_object_set_new(doc, "own", json_true());
        } else if (doc && !shared) {
            bool uid = entry[1] >= '0' && entry[1] <= '9';
            json_object_set_new(
                doc, "owner",
                json_sprintf("%s%.*s", uid ? "uid:" : "tenant ~", (int)strcspn(entry + 1, "."), entry + 1));
        }
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
    if (storable(name) && templates_dir(dir, sizeof dir, false, NULL) == 0)
        *out = describe(name, dir);
    return *out ? 0
                : abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)",
                                 name);
}

/* How many live sandboxes were made from template name. A warm pool's
 * standby sandboxes of it are nobody's: they are ended, not counted. */
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
        count += t && strcmp(t, name) == 0 && !abx__state_end_standby(sdir);
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
    /* a standby that came up during the first look: ended now (one coming
     * up after this finds its template gone and ends itself, make_standby) */
    (void)users_of(name);
    if (remove_tree(gone) < 0)
        return abx__error_errno(err, ABX_EIO, errno, "removing the template's files");
    return 0;
}
