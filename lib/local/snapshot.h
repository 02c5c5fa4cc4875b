/* snapshot.h: the local provider's snapshots (abx.h "snapshots"). */
#ifndef ABX_SNAPSHOT_H
#define ABX_SNAPSHOT_H

#include "provider.h"
#include <jansson.h>
#include <stdbool.h>

/* Makes template name (NULL: "snap-..." or "fork-...") of sandbox s (state
 * directory dir, bare id) for tenant; fork: hidden, and removed once no
 * live sandbox uses it. *info: the template's description with
 * snapshot_id (json_decref). */
int abx__local_snapshot(abx_sandbox *s, const char *dir, const char *id, const char *tenant, const char *name,
                        bool fork, json_t **info, abx_error **err);
/* The tenant's snapshots (of sandbox_id only, unless NULL), *out a new array. */
int abx__local_snapshot_list(const char *tenant, const char *sandbox_id, json_t **out, abx_error **err);
/* Removes the tenant's snapshot name (E8002 for anything else, a template that is no snapshot among them). */
int abx__local_snapshot_remove(const char *tenant, const char *name, abx_error **err);
/* Removes the forks' templates no live sandbox uses any more. */
void abx__local_forks_reap(void);

#endif
