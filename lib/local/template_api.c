/* template_api.c: the public template calls of abx.h ("templates of the
 * local provider"): the local provider's store (template_store.c) and its
 * Dockerfile builds (template_build.c) behind a client, E8004 through any
 * other provider (a remote host builds its own). Listing and existence are
 * provider operations (abx_templates, abx_template_exists).
 *
 * A host user's templates (a client of tenant "uid:N", the abx service's
 * callers) are their own: built and imported under their own stored name
 * (template_store.h), inspected and removed only there, the shared ones
 * read-only to them, the build cache root's. Through the service (a user's
 * own process) the calls go to it (service_client.c), the context packed
 * here with the user's rights. */
#include "provider.h"
#include "service_client.h"
#include "tenant.h"
#include "error_internal.h"
#include "archive_extract.h"
#include "sysutil.h"
#include "template_build.h"
#include "template_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

static int local_only(abx_client *c, const char *what, abx_error **err)
{
    if (c && c->ops == &abx__provider_local)
        return 0;
    return abx__error_set(err, ABX_ENOTSUP,
                          "%s: provider '%s' keeps its templates itself (the local provider only)", what,
                          c ? c->provider : "?");
}

/* doc (taken) as text in *out (abx_free); out may be NULL. A host user's
 * own template is described by the name they gave it. */
static int give(json_t *doc, char **out, abx_error **err)
{
    const char *name = json_string_value(json_object_get(doc, "name"));
    if (name && abx__template_shown(name) != name)
        json_object_set_new(doc, "name", json_string(abx__template_shown(name)));
    if (out && !(*out = doc ? json_dumps(doc, JSON_COMPACT) : strdup("{}"))) {
        json_decref(doc);
        return abx__error_set(err, ABX_ENOMEM, "template");
    }
    json_decref(doc);
    return 0;
}

typedef struct event_relay {
    void (*fn)(const char *event_json, void *userdata);
    void *userdata;
} event_relay;

static void relay_event(json_t *ev, void *ud)
{
    event_relay *r = ud;
    char *text = json_dumps(ev, JSON_COMPACT);
    if (text)
        r->fn(text, r->userdata);
    free(text);
}

/* A context archive (abx_template_pack_context's layout) unpacked into a
 * new private directory dir (removed by the caller with abx__tree_remove). */
static int unpack_context(const char *archive, char *dir, size_t len, abx_error **err)
{
    snprintf(dir, len, "%s/abx-context-XXXXXX",
             getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return abx__error_errno(err, ABX_EIO, errno, "a directory for the build context");
    char why[300];
    if (abx__archive_extract(archive, dir, why, sizeof why) < 0)
        return abx__error_set(err, ABX_EINVAL, "the build context: %s", why);
    return 0;
}

int abx_template_build(abx_client *c, const abx_template_build_options *o, char **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (c && abx_client_service(c))
        return abx__service_template_build(c, o, info, err);
    int rc = local_only(c, "template build", err);
    if (rc == 0)
        rc = abx__tenant_may_build(c->tenant, err);
    if (rc == 0 && o->builtin && c->tenant[0] && strncmp(c->tenant, "uid:", 4) == 0)
        rc = abx__error_set(err, ABX_ENOTALLOWED, "--builtin: the built-in templates are root's to build");
    if (rc < 0)
        return rc;
    event_relay relay = {o->on_event, o->userdata};
    char stored[160], unpacked[600] = "", dockerfile[700], context[700];
    if (o->name)
        abx__template_own(c->tenant, o->name, stored, sizeof stored);
    template_build_request r = {.name = o->builtin ? o->builtin
                                        : o->name  ? stored
                                                   : NULL,
                                .dockerfile = o->dockerfile,
                                .context = o->context,
                                .build_args = o->build_args,
                                .no_cache = o->no_cache,
                                .on_event = o->on_event ? relay_event : NULL,
                                .ud = &relay,
                                .tenant = c->tenant};
    if (o->network && strcmp(o->network, "sandbox") != 0 && strcmp(o->network, "host") != 0)
        return abx__error_set(err, ABX_EINVAL, "--network '%.40s': sandbox (the default) or host",
                              o->network);
    r.host_network = o->network && strcmp(o->network, "host") == 0;
    if (r.host_network && c->tenant[0])
        return abx__error_set(err, ABX_ENOTALLOWED,
                              "--network host: RUN steps in the host's network are root's");
    if (o->builtin && !(r.dockerfile_text = abx__template_builtin_recipe(o->builtin)))
        return abx__error_set(err, ABX_EINVAL,
                              "--builtin: code-interpreter-v1 is the built-in template abx builds");
    if (o->builtin)
        r.context = "/";
    if (!r.name)
        return abx__error_set(err, ABX_EINVAL, "template build: a name");
    if (o->context_archive && !o->builtin) {
        if ((rc = unpack_context(o->context_archive, unpacked, sizeof unpacked, err)) < 0) {
            abx__tree_remove(unpacked);
            return rc;
        }
        snprintf(dockerfile, sizeof dockerfile, "%s/Dockerfile", unpacked);
        snprintf(context, sizeof context, "%s/context", unpacked);
        r.dockerfile = dockerfile;
        r.context = context;
        r.source_label = "a Dockerfile and context sent to the abx service";
    }
    json_t *doc = NULL;
    rc = abx__template_build(&r, &doc, err);
    if (unpacked[0])
        abx__tree_remove(unpacked);
    return rc < 0 ? rc : give(doc, info, err);
}

int abx_template_import(abx_client *c, const char *name, const char *source, char **info, abx_error **err)
{
    if (info)
        *info = NULL;
    if (c && abx_client_service(c))
        return abx__service_template_import(c, name, source, info, err);
    json_t *doc = NULL;
    int rc = local_only(c, "template import", err);
    if (rc == 0)
        rc = abx__tenant_may_build(c->tenant, err);
    char stored[160];
    if (rc == 0)
        abx__template_own(c->tenant, name, stored, sizeof stored);
    if (rc == 0)
        rc = abx__template_import(stored, source, &doc, err);
    return rc < 0 ? rc : give(doc, info, err);
}

int abx_template_inspect(abx_client *c, const char *name, char **json, abx_error **err)
{
    *json = NULL;
    if (c && abx_client_service(c))
        return abx__service_template_call(c, "GET", name, json, err);
    json_t *doc = NULL;
    int rc = local_only(c, "template inspect", err);
    char stored[160];
    if (rc == 0)
        abx__template_resolve(c->tenant, name, stored, sizeof stored);
    if (rc == 0)
        rc = abx__template_inspect(stored, &doc, err);
    return rc < 0 ? rc : give(doc, json, err);
}

int abx_template_remove(abx_client *c, const char *name, bool force, abx_error **err)
{
    if (c && abx_client_service(c))
        return abx__service_template_call(c, force ? "DELETE-FORCE" : "DELETE", name, NULL, err);
    int rc = local_only(c, "template rm", err);
    char stored[160];
    bool own = rc == 0 && abx__template_own(c->tenant, name, stored, sizeof stored);
    char tree[1024];
    if (own && abx__template_root(stored, tree, sizeof tree) < 0 &&
        (abx__template_builtin(name) || abx__template_root(name, tree, sizeof tree) == 0))
        return abx__error_set(err, ABX_ENOTALLOWED, "template %.64s is the machine's: only root removes it",
                              name);
    if (own && abx__template_root(stored, tree, sizeof tree) < 0) /* said by the name the user gave */
        return abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)", name);
    return rc < 0 ? rc : abx__template_remove(stored, force, err);
}

int abx_template_prune(abx_client *c, unsigned long long *freed, abx_error **err)
{
    unsigned long long f = 0;
    int rc = c && abx_client_service(c)
                 ? abx__error_set(err, ABX_ENOTALLOWED, "template prune: the build cache is root's")
                 : local_only(c, "template prune", err);
    if (rc == 0 && c->tenant[0])
        rc = abx__error_set(err, ABX_ENOTALLOWED, "template prune: the build cache is root's");
    if (rc == 0)
        rc = abx__template_prune_cache(&f, err);
    if (freed)
        *freed = f;
    return rc;
}
