/* template_api.c: the public template calls of abx.h ("templates of the
 * local provider"): the local provider's store (template_store.c) and its
 * Dockerfile builds (template_build.c) behind a client, E8004 through any
 * other provider (a remote host builds its own). Listing and existence are
 * provider operations (abx_templates, abx_template_exists). */
#include "provider.h"
#include "error_internal.h"
#include "template_build.h"
#include "template_store.h"

#include <stdlib.h>
#include <string.h>

static int local_only(abx_client *c, const char *what, abx_error **err)
{
    if (c && c->ops == &abx__provider_local)
        return 0;
    if (c && abx_client_service(c))
        return abx__error_set(err, ABX_ENOTSUP,
                              "%s: through the abx service a user starts sandboxes from the machine's "
                              "templates; building and importing are root's ('abx template list' shows them)",
                              what);
    return abx__error_set(err, ABX_ENOTSUP,
                          "%s: provider '%s' keeps its templates itself (the local provider only)", what,
                          c ? c->provider : "?");
}

/* doc (taken) as text in *out (abx_free); out may be NULL. */
static int give(json_t *doc, char **out, abx_error **err)
{
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

int abx_template_build(abx_client *c, const abx_template_build_options *o, char **info, abx_error **err)
{
    if (info)
        *info = NULL;
    int rc = local_only(c, "template build", err);
    if (rc < 0)
        return rc;
    event_relay relay = {o->on_event, o->userdata};
    template_build_request r = {.name = o->builtin ? o->builtin : o->name,
                                .dockerfile = o->dockerfile,
                                .context = o->context,
                                .build_args = o->build_args,
                                .no_cache = o->no_cache,
                                .on_event = o->on_event ? relay_event : NULL,
                                .ud = &relay};
    if (o->network && strcmp(o->network, "sandbox") != 0 && strcmp(o->network, "host") != 0)
        return abx__error_set(err, ABX_EINVAL, "--network '%.40s': sandbox (the default) or host",
                              o->network);
    r.host_network = o->network && strcmp(o->network, "host") == 0;
    if (o->builtin && !(r.dockerfile_text = abx__template_builtin_recipe(o->builtin)))
        return abx__error_set(err, ABX_EINVAL,
                              "--builtin: code-interpreter-v1 is the built-in template abx builds");
    if (o->builtin)
        r.context = "/";
    if (!r.name)
        return abx__error_set(err, ABX_EINVAL, "template build: a name");
    json_t *doc = NULL;
    rc = abx__template_build(&r, &doc, err);
    return rc < 0 ? rc : give(doc, info, err);
}

int abx_template_import(abx_client *c, const char *name, const char *source, char **info, abx_error **err)
{
    if (info)
        *info = NULL;
    json_t *doc = NULL;
    int rc = local_only(c, "template import", err);
    if (rc == 0)
        rc = abx__template_import(name, source, &doc, err);
    return rc < 0 ? rc : give(doc, info, err);
}

int abx_template_inspect(abx_client *c, const char *name, char **json, abx_error **err)
{
    *json = NULL;
    json_t *doc = NULL;
    int rc = local_only(c, "template inspect", err);
    if (rc == 0)
        rc = abx__template_inspect(name, &doc, err);
    return rc < 0 ? rc : give(doc, json, err);
}

int abx_template_remove(abx_client *c, const char *name, bool force, abx_error **err)
{
    int rc = local_only(c, "template rm", err);
    return rc < 0 ? rc : abx__template_remove(name, force, err);
}

int abx_template_prune(abx_client *c, unsigned long long *freed, abx_error **err)
{
    unsigned long long f = 0;
    int rc = local_only(c, "template prune", err);
    if (rc == 0)
        rc = abx__template_prune_cache(&f, err);
    if (freed)
        *freed = f;
    return rc;
}
