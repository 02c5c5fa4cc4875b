/* snapshot_api.c: libabx's snapshots and forks (abx.h "snapshots"): the
 * calls, answered by the client's provider (the local provider's are
 * lib/local/snapshot.c; the E2B protocol's /sandboxes/{id}/snapshots). */
#include "error_internal.h"
#include "provider.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int dumped(json_t *doc, char **out, abx_error **err)
{
    *out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    return *out ? 0 : abx__error_set(err, ABX_ENOMEM, "snapshot");
}

int abx_sandbox_snapshot(abx_sandbox *s, const char *name, char **info, abx_error **err)
{
    *info = NULL;
    if (!s->ops->snapshot)
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' takes no snapshots", s->ops->name);
    if (name && (!*name || strlen(name) > 63))
        return abx__error_set(err, ABX_EINVAL, "snapshot name: 1-63 characters");
    json_t *doc = NULL;
    int rc = s->ops->snapshot(s, name, false, &doc, err);
    return rc < 0 ? rc : dumped(doc, info, err);
}

static int snapshots(abx_client *c, const char *verb, const char *name, const char *sandbox_id, char **json,
                     abx_error **err)
{
    if (json)
        *json = NULL;
    if (!c->ops->snapshots)
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' keeps no snapshots", c->ops->name);
    if (c->tenant_set)
        return abx__error_set(err, ABX_EINVAL, "a client of a set of tenants has no snapshots of its own");
    json_t *doc = NULL;
    int rc = c->ops->snapshots(c, verb, name, sandbox_id, &doc, err);
    if (rc < 0 || !json) {
        json_decref(doc);
        return rc;
    }
    return dumped(doc ? doc : json_array(), json, err);
}

int abx_snapshot_list(abx_client *c, const char *sandbox_id, char **json, abx_error **err)
{
    return snapshots(c, "list", NULL, sandbox_id, json, err);
}

int abx_snapshot_remove(abx_client *c, const char *name, abx_error **err)
{
    if (!name || !*name || strlen(name) > 63)
        return abx__error_set(err, ABX_ENOTFOUND, "snapshot %.64s: no such snapshot (abx snapshot list)",
                              name ? name : "");
    return snapshots(c, "remove", name, NULL, NULL, err);
}

static void free_children(abx_sandbox **kids, unsigned n, bool kill)
{
    for (unsigned i = 0; kids && i < n; i++) {
        if (!kids[i])
            continue;
        if (kill)
            abx_sandbox_kill(kids[i], NULL);
        abx_sandbox_free(kids[i]);
    }
    free(kids);
}

int abx_sandbox_fork(abx_client *c, abx_sandbox *s, unsigned count, const abx_create_options *o,
                     abx_sandbox ***children, abx_error **err)
{
    *children = NULL;
    if (count < 1 || count > ABX_FORK_MAX)
        return abx__error_set(err, ABX_EINVAL, "fork --count: 1-%d", ABX_FORK_MAX);
    if (!s->ops->snapshot)
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' does not fork sandboxes", s->ops->name);
    if (c->ops != s->ops)
        return abx__error_set(err, ABX_EINVAL, "fork: the client is of another provider than the sandbox");
    abx_sandbox_info parent;
    int rc = abx_sandbox_get_info(s, &parent, err);
    if (rc < 0)
        return rc;
    json_t *snap = NULL;
    rc = s->ops->snapshot(s, NULL, true, &snap, err);
    abx_create_options co = o ? *o : (abx_create_options){0};
    if (!o) {
        co.cpu_count = parent.cpu_count;
        co.memory_mb = parent.memory_mb;
    }
    co.persistent = false; /* a fork's template goes with its last sandbox: nothing may rest on it */
    co.template_id = json_string_value(json_object_get(snap, "snapshot_id"));
    abx_sandbox_info_clear(&parent);
    abx_sandbox **kids = rc == 0 ? calloc(count, sizeof *kids) : NULL;
    if (rc == 0 && !kids)
        rc = abx__error_set(err, ABX_ENOMEM, "fork");
    for (unsigned i = 0; rc == 0 && i < count; i++)
        rc = abx_sandbox_create(c, &co, &kids[i], err);
    if (rc == 0 && c->ops->snapshots && strcmp(c->ops->name, "local") != 0) {
        json_t *ignored = NULL; /* a remote host's snapshot: removed now, its sandboxes keep their copy */
        c->ops->snapshots(c, "remove", co.template_id, NULL, &ignored, NULL);
        json_decref(ignored);
    }
    json_decref(snap);
    if (rc < 0) {
        free_children(kids, count, true);
        return rc;
    }
    *children = kids;
    return 0;
}
