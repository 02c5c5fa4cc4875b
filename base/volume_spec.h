/* volume_spec.h: volume mounts sent as JSON ([{name, path, <read-only
 * key>?}], from MCP's create_sandbox and E2B's volumeMounts) as the
 * "NAME:/path[:ro]" specs abx_create_options.volumes takes. One parser for
 * every front end; libabx checks the names and paths themselves. */
#ifndef ABX_VOLUME_SPEC_H
#define ABX_VOLUME_SPEC_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>

#define ABX_VOLUME_SPEC_NAME_MAX 64
#define ABX_VOLUME_SPEC_PATH_MAX 256

/* Holds the specs; list is NULL-terminated and points into text. */
typedef struct abx_volume_specs {
    char text[ABX_VOLUME_MOUNTS_MAX][ABX_VOLUME_SPEC_NAME_MAX + 1 + ABX_VOLUME_SPEC_PATH_MAX + 4];
    const char *list[ABX_VOLUME_MOUNTS_MAX + 1];
} abx_volume_specs;

/* Fills out from mounts (NULL or JSON null: none). False when mounts is
 * not an array of at most ABX_VOLUME_MOUNTS_MAX objects with a string name
 * (at most 64 bytes), a string path (at most 256) and, if present, a
 * boolean under read_only_key. Nothing is allocated. */
bool abx__volume_specs_from_json(const json_t *mounts, const char *read_only_key, abx_volume_specs *out);

/* out->list when it holds any, else NULL (what abx_create_options wants). */
const char *const *abx__volume_specs_list(const abx_volume_specs *out);

#endif
