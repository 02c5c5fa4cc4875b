/* events.c: the host's event log as libabx records and reads it.
 *
 * Owns: which API calls record what (create, kill, pause, resume, network,
 * quota refusals: sandbox.c calls abx__event once the provider answered),
 * the event's common members (type, sandbox_id, tenant), and who reads
 * what: a tenant's client only the events of its own tenant, the
 * administrator all. Where the events are kept is the provider's
 * (event_append, events_read: the local provider's log,
 * runtime/event_log.c); a provider without one records nothing.
 */
#include "provider.h"
#include "error_internal.h"
#include "tenant.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void abx__event(const abx_provider *ops, const char *type, const char *sandbox, const char *tenant,
                json_t *detail)
{
    if (!ops || !ops->event_append) {
        json_decref(detail);
        return;
    }
    json_t *ev = json_pack("{s:s}", "type", type);
    if (ev && sandbox && *sandbox)
        json_object_set_new(ev, "sandbox_id", json_string(sandbox));
    if (ev && tenant && *tenant)
        json_object_set_new(ev, "tenant", json_string(tenant));
    if (ev && json_is_object(detail))
        json_object_update_missing(ev, detail);
    json_decref(detail);
    if (ev)
        ops->event_append(ev);
}

typedef struct collect {
    const abx_client *c;
    json_t *out;
    unsigned max;
    unsigned long long last_kept; /* the number of the last event kept */
} collect;

static bool keep_visible(json_t *ev, unsigned long long seq, void *ud)
{
    collect *k = ud;
    const char *tenant = json_string_value(json_object_get(ev, "tenant"));
    if (!abx__tenant_may_see(k->c, tenant ? tenant : ""))
        return true;
    json_array_append(k->out, ev);
    k->last_kept = seq;
    return json_array_size(k->out) < k->max;
}

int abx_events_read(abx_client *c, unsigned long long after, unsigned max, char **json,
                    unsigned long long *next, abx_error **err)
{
    *json = NULL;
    *next = after;
    if (max < 1 || max > ABX_EVENTS_READ_MAX)
        return abx__error_set(err, ABX_EINVAL, "events: at most 1-%u at a time", ABX_EVENTS_READ_MAX);
    if (!c->ops->events_read)
        return abx__error_set(err, ABX_ENOTSUP, "events: provider '%s' keeps no event log", c->ops->name);
    collect k = {.c = c, .out = json_array(), .max = max, .last_kept = after};
    unsigned long long scanned = after;
    int rc = k.out ? c->ops->events_read(c, after, keep_visible, &k, &scanned, err)
                   : abx__error_set(err, ABX_ENOMEM, "events");
    /* stopped at max: go on after the last kept; else past what was scanned */
    *next = json_array_size(k.out) >= max ? k.last_kept : scanned;
    if (rc == 0 && !(*json = json_dumps(k.out, JSON_COMPACT | JSON_PRESERVE_ORDER)))
        rc = abx__error_set(err, ABX_ENOMEM, "events");
    json_decref(k.out);
    return rc;
}
