/* volume_spec.c: volume mounts in JSON as create options' specs (see
 * volume_spec.h). */
#include "volume_spec.h"

#include <stdio.h>
#include <string.h>

bool abx__volume_specs_from_json(const json_t *mounts, const char *read_only_key, abx_volume_specs *out)
{
    memset(out, 0, sizeof *out);
    if (!mounts || json_is_null(mounts))
        return true;
    if (!json_is_array(mounts) || json_array_size(mounts) > ABX_VOLUME_MOUNTS_MAX)
        return false;
    for (size_t i = 0; i < json_array_size(mounts); i++) {
        const json_t *m = json_array_get(mounts, i);
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *path = json_string_value(json_object_get(m, "path"));
        const json_t *ro = json_object_get(m, read_only_key);
        if (!json_is_object(m) || !name || !path || strlen(name) > ABX_VOLUME_SPEC_NAME_MAX ||
            strlen(path) > ABX_VOLUME_SPEC_PATH_MAX || (ro && !json_is_boolean(ro)))
            return false;
        snprintf(out->text[i], sizeof out->text[i], "%s:%s%s", name, path, json_is_true(ro) ? ":ro" : "");
        out->list[i] = out->text[i];
    }
    return true;
}

const char *const *abx__volume_specs_list(const abx_volume_specs *out)
{
    return out->list[0] ? out->list : NULL;
}
