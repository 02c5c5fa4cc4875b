/* snapshot.c: the local provider's snapshots (abx.h "snapshots").
 *
 * Owns making one: a staging directory in the template store
 * (template_store.c), the sandbox's shim filling it from the sandbox's
 * filesystem while its processes are frozen (runtime/snapshot_tree.c:
 * what the sandbox did not change is a hard link to its template's file),
 * and the install, whole or not at all. A snapshot is a template whose
 * template.json says "snapshot": {sandbox_id, template, paused_ms, ...};
 * one of a sandbox from the host view (base) is marked host_view, so that
 * a sandbox from it gets the host's /usr under the recorded tree again.
 * A tenant's snapshots are stored as its own ("~KEY.NAME"); a fork's are
 * hidden ("fork": true) and removed once no live sandbox uses them.
 */
#include "snapshot.h"
#include "config.h"
#include "error_internal.h"
#include "parse.h"
#include "random_id.h"
#include "state.h"
#include "template_store.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define FORK_GRACE_S 120 /* a fork's template is kept this long before its children are counted */

/* The new template's document: the source template's config (env,
 * workdir, user, start command) and what the snapshot was. */
static json_t *snapshot_doc(const char *source, const char *sandbox_id, json_t *made, bool fork)
{
    json_t *doc = json_object();
    json_t *config = strcmp(source, "base") == 0 ? NULL : abx__template_config(source);
    json_t *own = config ? json_deep_copy(config) : json_object();
    json_decref(config);
    if (strcmp(source, "base") == 0)
        json_object_set_new(own, "host_view", json_true()); /* the host's /usr under the tree */
    json_object_set_new(doc, "config", own);
    json_object_set_new(doc, "kind", json_string("snapshot"));
    json_object_set_new(doc, "source", json_sprintf("a snapshot of sandbox local:%s", sandbox_id));
    json_t *snap = json_pack("{s:s, s:s}", "sandbox_id", sandbox_id, "template", abx__template_shown(source));
    json_object_update(snap, made);
    json_object_set_new(doc, "snapshot", snap);
    if (fork)
        json_object_set_new(doc, "fork", json_true());
    return doc;
}

int abx__local_snapshot(abx_sandbox *s, const char *dir, const char *id, const char *tenant, const char *name,
                        bool fork, json_t **info, abx_error **err)
{
    *info = NULL;
    char given[80], stored[160], staging[900], path[760];
    if (!name) {
        char rnd[ABX_RANDOM_ID_LEN + 1];
        if (abx__random_id(rnd, sizeof rnd) < 0)
            return abx__error_set(err, ABX_ESYS, "no randomness for the snapshot's name");
        snprintf(given, sizeof given, "%s-%.16s", fork ? "fork" : "snap", rnd);
        name = given;
    }
    if (!abx__template_name_valid(name))
        return abx__error_set(
            err, ABX_EINVAL,
            "snapshot name '%.64s': 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or "
            "digit, not a built-in template's",
            name);
    abx__template_own(tenant, name, stored, sizeof stored);
    char tree[1024];
    if (abx__template_root(stored, tree, sizeof tree) == 0)
        return abx__error_set(err, ABX_EINVAL, "snapshot %s: a template of that name exists already", name);
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *cfg = json_load_file(path, 0, NULL);
    char source[160];
    snprintf(source, sizeof source, "%s", json_string_value(json_object_get(cfg, "template")) ?: "base");
    json_decref(cfg);
    int rc = abx__template_stage(stored, staging, sizeof staging, err);
    if (rc < 0)
        return rc;
    json_t *body = json_pack("{s:s}", "dest", staging), *made = NULL;
    rc = abx__envd_json(&s->envd, "POST", "/abx/snapshot", body, &made, err);
    json_decref(body);
    if (rc == -ABX_ENOTRUNNING)
        rc = abx__error_set(err, ABX_ENOTRUNNING, "snapshot: the sandbox is not running (resume it first)");
    if (rc < 0) {
        abx__template_discard(staging);
        return rc;
    }
    json_t *doc = snapshot_doc(source, id, made, fork);
    json_decref(made);
    rc = abx__template_install(stored, staging, doc, false, info, err);
    if (rc == 0 && *info) {
        json_object_set_new(*info, "name", json_string(name));
        json_object_set_new(*info, "snapshot_id", json_string(name));
    }
    return rc;
}

static bool is_snapshot(json_t *t, const char *sandbox_id)
{
    json_t *snap = json_object_get(t, "snapshot");
    if (!json_is_object(snap) || json_is_true(json_object_get(t, "fork")))
        return false;
    const char *of = json_string_value(json_object_get(snap, "sandbox_id"));
    const char *bare = sandbox_id && strncmp(sandbox_id, "local:", 6) == 0 ? sandbox_id + 6 : sandbox_id;
    return !bare || (of && strcmp(of, bare) == 0);
}

int abx__local_snapshot_list(const char *tenant, const char *sandbox_id, json_t **out, abx_error **err)
{
    json_t *all = NULL, *t;
    int rc = abx__template_list_for(tenant, &all, err);
    if (rc < 0)
        return rc;
    *out = json_array();
    size_t i;
    json_array_foreach(all, i, t)
    {
        if (!is_snapshot(t, sandbox_id))
            continue;
        json_object_set(t, "snapshot_id", json_object_get(t, "name"));
        json_array_append(*out, t);
    }
    json_decref(all);
    return 0;
}

int abx__local_snapshot_remove(const char *tenant, const char *name, abx_error **err)
{
    char stored[160];
    abx__template_resolve(tenant, name ? name : "", stored, sizeof stored);
    json_t *doc = stored[0] ? abx__template_document(stored) : NULL;
    bool snap = doc && is_snapshot(doc, NULL);
    json_decref(doc);
    if (!snap)
        return abx__error_set(err, ABX_ENOTFOUND, "snapshot %.64s: no such snapshot (abx snapshot list)",
                              name ? name : "");
    return abx__template_remove(stored, false, err);
}

void abx__local_forks_reap(void)
{
    char home[512], dir[600];
    if (abx__home(home, sizeof home) < 0)
        return;
    snprintf(dir, sizeof dir, "%s/templates", home);
    DIR *d = opendir(dir);
    struct dirent *e;
    time_t now = time(NULL);
    while (d && (e = readdir(d))) { /* by name first: most clients' stores hold no fork */
        if (strncmp(abx__template_shown(e->d_name), "fork-", 5) != 0 || !abx__template_storable(e->d_name))
            continue;
        json_t *doc = abx__template_document(e->d_name);
        long long made = abx__parse_rfc3339(json_string_value(json_object_get(doc, "created_at")));
        if (json_is_true(json_object_get(doc, "fork")) && now - made > FORK_GRACE_S)
            abx__template_remove(e->d_name, false, NULL); /* refused while a live sandbox uses it */
        json_decref(doc);
    }
    if (d)
        closedir(d);
}
