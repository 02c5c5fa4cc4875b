/* plugin_store.h: installed provider plugins and their digests (lib/plugin_store.c). */
#ifndef ABX_PLUGIN_STORE_H
#define ABX_PLUGIN_STORE_H

#include "abx/abx.h"
#include "manifest.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* $ABX_HOME/<what>[/<id>] into out ("providers", "provider-data",
 * "provider-index.json"). */
int abx__plugin_path(const char *what, const char *id, char *out, size_t len, abx_error **err);
/* The SHA-256 of a plugin directory (paths, modes, contents) in hex. */
int abx__plugin_digest(const char *dir, char hex[65], abx_error **err);
/* The index ({} when there is none yet); *index is the caller's. */
int abx__plugin_index_load(json_t **index, abx_error **err);
/* Writes the index atomically, 0600. */
int abx__plugin_index_save(json_t *index, abx_error **err);
/* Checks an installed plugin against its index entry: *state gets "ok",
 * "linked" or "mismatch"; a mismatch is -ABX_EPLUGINCHANGED (E8011). */
int abx__plugin_check(const char *id, json_t *entry, char *state, size_t len, abx_error **err);

/* Whether installed plugin id's manifest marks config key a secret. */
bool abx__plugin_config_secret(const char *id, const char *key);

/* Installed plugin id's manifest, after its digest was checked (E8011 on a
 * change; a --link install warns on stderr). *m is the caller's
 * (abx__manifest_clear) on success. */
int abx__plugin_manifest_verified(const char *id, abx_manifest *m, abx_error **err);
/* Installed plugin id made ready to run: its files copied into a fresh
 * private directory in the same pass that computes their digest, which must
 * be the installed one (E8011, and no copy stays); its manifest (*m, the
 * caller's) read from the copy. run_dir gets where it runs: the copy
 * (*copied), or for a --link install its own directory (with a warning).
 * The caller removes the copy with abx__plugin_unstage once the plugin has
 * ended. */
int abx__plugin_stage(const char *id, abx_manifest *m, char *run_dir, size_t len, bool *copied,
                      abx_error **err);
void abx__plugin_unstage(const char *run_dir, bool copied);

#endif
