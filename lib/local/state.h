/* state.h: local sandboxes' state directories and reconciliation. */
#ifndef ABX_STATE_H
#define ABX_STATE_H

#include "abx/abx.h"
#include <stdbool.h>
#include <stddef.h>

/* $ABX_HOME/sandboxes, created 0700 when create is true. */
int abx__state_root(char *out, size_t len, bool create, abx_error **err);
/* $ABX_HOME/sandboxes/<id> (id unqualified and valid). */
int abx__state_dir(const char *id, char *out, size_t len, abx_error **err);
/* True when a live shim holds dir/shim.lock. */
bool abx__state_shim_alive(const char *dir);
/* When dir is a warm pool's standby sandbox (its `standby` marker) with a
 * live shim: ends it (SIGTERM to the shim recorded in meta.json, then up
 * to 3 s for its lock to go) and returns true; false for any other. A
 * standby is nobody's yet, so a template's removal ends those of it
 * rather than counting them as its users. */
bool abx__state_end_standby(const char *dir);
/* Reaps every sandbox whose shim is gone: its processes, cgroups and
 * state directory. Safe to run concurrently with shims and other abx. */
void abx__state_reconcile(void);
/* abx__state_reconcile when this ABX_HOME's last one is older than
 * ABX_RECONCILE_DUE_S ($ABX_HOME/.reconciled's mtime; nothing when there
 * is no ABX_HOME yet): what a start calls, paying one stat instead of a
 * scan of every sandbox there is. */
#define ABX_RECONCILE_DUE_S 60
void abx__state_reconcile_due(void);
/* Whether the sandbox in dir is durable (its `durable` marker). */
bool abx__state_durable(const char *dir);
/* A durable sandbox whose shim is gone: at rest. Its cgroups and network
 * leftovers go; its directory (layer, request, token) stays. */
void abx__state_rest(const char *id);
/* Reaps one dead sandbox's leftovers (cgroups, then the directory). */
void abx__state_reap(const char *id);

/* Starts abx-shim (found as for a sandbox) on the state directory dir,
 * which holds its config.json and token, and waits for its ready line:
 * abx-oci's in-container agent uses the same supervisor. */
int abx__shim_start_detached(const char *dir, abx_error **err);

/* The network namespace of the sandbox whose state directory is dir (an
 * O_RDONLY|O_CLOEXEC fd, the caller's), from its init's pid in meta.json,
 * checked to be the child of the shim that holds it; -1 when that cannot be
 * told (gone, or its pid reused). */
int abx__state_netns(const char *dir);

#endif
