/* volume.c: libabx's volumes (abx.h "volumes"): names, mount specs, and
 * the calls, which the client's provider answers (the local provider's
 * store is lib/local/volume_store.c; the E2B protocol's is /volumes).
 */
#include "volume.h"
#include "error_internal.h"
#include "provider.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool abx_volume_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 63 || !(islower((unsigned char)name[0]) || isdigit((unsigned char)name[0])))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)name[i]) && !isdigit((unsigned char)name[i]) && !strchr("._-", name[i]))
            return false;
    return true;
}

/* Whether path is plain: absolute, components neither empty nor "." nor "..". */
static bool path_plain(const char *path)
{
    if (path[0] != '/' || path[1] == '\0')
        return false;
    for (const char *p = path + 1; *p;) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!end)
            break;
        p = end + 1;
        if (!*p)
            return false; /* a trailing '/' */
    }
    return true;
}

/* Whether path is at or under dir (both plain). */
static bool path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int abx__volume_mount_parse(const char *spec, abx_volume_mount *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof out->name)
        return abx__error_set(err, ABX_EINVAL, "--volume '%.80s': NAME:/path or NAME:/path:ro",
                              spec ? spec : "");
    memcpy(out->name, spec, (size_t)(colon - spec));
    if (!abx_volume_name_valid(out->name))
        return abx__error_set(err, ABX_EINVAL, "--volume: '%.63s' is no volume name (abx volume list)",
                              out->name);
    const char *path = colon + 1;
    const char *mode = strchr(path, ':');
    size_t len = mode ? (size_t)(mode - path) : strlen(path);
    if (mode && strcmp(mode, ":ro") != 0 && strcmp(mode, ":rw") != 0)
        return abx__error_set(err, ABX_EINVAL, "--volume %s: the mode after the path is ro or rw", out->name);
    out->read_only = mode && strcmp(mode, ":ro") == 0;
    if (len == 0 || len > ABX_VOLUME_PATH_MAX)
        return abx__error_set(err, ABX_EINVAL, "--volume %s: a path of 1-%d bytes", out->name,
                              ABX_VOLUME_PATH_MAX);
    memcpy(out->path, path, len);
    if (!path_plain(out->path))
        return abx__error_set(err, ABX_EINVAL,
                              "--volume %s: '%.80s' is not a plain absolute path (no '.', '..', '//' or "
                              "trailing '/'; not /)",
                              out->name, out->path);
    static const char *const own[] = {"/proc", "/dev", "/sys", "/etc"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (path_within(out->path, own[i]))
            return abx__error_set(err, ABX_EINVAL, "--volume %s: %s is the sandbox's own; mount it elsewhere",
                                  out->name, own[i]);
    return 0;
}

int abx__volume_mounts_parse(const char *const *specs, abx_volume_mount *out, size_t *n, abx_error **err)
{
    if (*n > ABX_VOLUME_MOUNTS_MAX)
        return abx__error_set(err, ABX_EINVAL, "--volume: at most %d in one sandbox", ABX_VOLUME_MOUNTS_MAX);
    for (size_t i = 0; i < *n; i++) {
        int rc = abx__volume_mount_parse(specs[i], &out[i], err);
        if (rc < 0)
            return rc;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(out[i].name, out[j].name) == 0)
                return abx__error_set(err, ABX_EINVAL, "--volume %s: mounted twice", out[i].name);
            if (path_within(out[i].path, out[j].path) || path_within(out[j].path, out[i].path))
                return abx__error_set(err, ABX_EINVAL, "--volume: %s and %s overlap", out[j].path,
                                      out[i].path);
        }
    }
    return 0;
}

/* ---- the calls --------------------------------------------------------------------------- */

static int call(abx_client *c, const char *verb, const char *name, unsigned size_mb, char **json,
                abx_error **err)
{
    if (json)
        *json = NULL;
    if (!c->ops->volume)
        return abx__error_set(err, ABX_ENOTSUP, "provider '%s' has no volumes", c->ops->name);
    if (c->tenant_set)
        return abx__error_set(err, ABX_EINVAL, "a client of a set of tenants has no volumes of its own");
    json_t *out = NULL;
    int rc = c->ops->volume(c, verb, name, size_mb, &out, err);
    if (rc == 0 && json && !(*json = json_dumps(out ? out : json_object(), JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "volume");
    json_decref(out);
    return rc;
}

int abx_volume_create(abx_client *c, const char *name, unsigned size_mb, char **info, abx_error **err)
{
    if (!abx_volume_name_valid(name))
        return abx__error_set(err, ABX_EINVAL,
                              "volume name '%.64s': 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter "
                              "or digit",
                              name ? name : "");
    if (size_mb > ABX_VOLUME_MB_MAX)
        return abx__error_set(err, ABX_EINVAL, "--size: at most %d MiB", ABX_VOLUME_MB_MAX);
    return call(c, "create", name, size_mb, info, err);
}

int abx_volume_list(abx_client *c, char **json, abx_error **err)
{
    return call(c, "list", NULL, 0, json, err);
}

int abx_volume_inspect(abx_client *c, const char *name_or_id, char **info, abx_error **err)
{
    if (!name_or_id || !*name_or_id || strlen(name_or_id) > 64)
        return abx__error_set(err, ABX_ENOTFOUND, "volume %.64s: no such volume (abx volume list)",
                              name_or_id ? name_or_id : "");
    return call(c, "inspect", name_or_id, 0, info, err);
}

int abx_volume_remove(abx_client *c, const char *name_or_id, abx_error **err)
{
    if (!name_or_id || !*name_or_id || strlen(name_or_id) > 64)
        return abx__error_set(err, ABX_ENOTFOUND, "volume %.64s: no such volume (abx volume list)",
                              name_or_id ? name_or_id : "");
    return call(c, "remove", name_or_id, 0, NULL, err);
}
