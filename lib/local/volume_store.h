/* volume_store.h: the local provider's volumes (abx.h "volumes"). */
#ifndef ABX_VOLUME_STORE_H
#define ABX_VOLUME_STORE_H

#include "abx/abx.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* tenant: "" or NULL for the administrator. *info and *list: json_decref. */
int abx__volume_create(const char *tenant, const char *name, unsigned size_mb, json_t **info,
                       abx_error **err);
int abx__volume_list(const char *tenant, json_t **list, abx_error **err);
int abx__volume_inspect(const char *tenant, const char *name_or_id, json_t **info, abx_error **err);
int abx__volume_remove(const char *tenant, const char *name_or_id, abx_error **err);

/* A create's volumes ("NAME:/path[:ro]") as the shim's config wants them:
 * a JSON array of {name, dir, path, read_only, image} (*out: json_decref;
 * NULL when there are none). E8001 for a malformed or clashing one, E8002
 * for a volume the tenant has not. */
int abx__volume_mounts(const char *tenant, const char *const *specs, json_t **out, abx_error **err);

#endif
