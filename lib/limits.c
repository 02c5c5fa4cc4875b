/* limits.c: the bounds on the resources a client may give a sandbox
 * (abx_limit_maxima_get, abx_limits_check), in one place for every surface:
 * `abx run`, `abx create`, the MCP tools (which also publish them as
 * `maximum` in their schemas) and, later, the REST API. A client that asks
 * for 1 TiB of memory or 1024 CPUs gets an error naming the field, never a
 * cgroup written with it.
 */
#include "abx/abx.h"
#include "config.h"
#include "error_internal.h"
#include "parse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define MIN_MEMORY_MB 16u
#define MIN_PIDS 8u
#define DEFAULT_MAX_PIDS 32768u

/* config.toml's [limits] key, when set and valid, lowers *value. */
static void lower_by_config(const abx_kvs *kvs, const char *key, unsigned *value)
{
    const char *text = kvs ? abx__kvs_get(kvs, key) : NULL;
    unsigned v = 0;
    if (text && abx__parse_uint(text, 1, UINT32_MAX, &v) == 0 && v > 0 && v < *value)
        *value = v;
}

void abx_limit_maxima_get(abx_limit_maxima *out)
{
    struct sysinfo si;
    unsigned long long mem_mb =
        sysinfo(&si) == 0 ? (unsigned long long)si.totalram * si.mem_unit >> 20 : 1024;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    out->memory_mb = mem_mb > 0 && mem_mb < 1048576 ? (unsigned)mem_mb : 1048576;
    out->cpu_count = cpus > 0 && cpus < 1024 ? (unsigned)cpus : 1;
    out->pids = DEFAULT_MAX_PIDS;
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (kvs && abx__config_load(kvs, NULL) < 0) {
        free(kvs);
        kvs = NULL;
    }
    lower_by_config(kvs, "limits.max_memory_mb", &out->memory_mb);
    lower_by_config(kvs, "limits.max_cpu", &out->cpu_count);
    lower_by_config(kvs, "limits.max_pids", &out->pids);
    out->disk_mb = out->memory_mb;
    lower_by_config(kvs, "limits.max_disk_mb", &out->disk_mb);
    free(kvs);
}

static int check_one(const char *field, unsigned v, unsigned min, unsigned max, const char *unit,
                     abx_error **err)
{
    if (v == 0 || (v >= min && v <= max))
        return 0;
    return abx__error_set(err, ABX_EINVAL, "%s: must be from %u to %u%s (this host's maximum)", field, min,
                          max, unit);
}

int abx_limits_check(const abx_limits *l, abx_error **err)
{
    abx_limit_maxima m;
    abx_limit_maxima_get(&m);
    int rc = check_one("memory", l->memory_mb, MIN_MEMORY_MB, m.memory_mb, " MB", err);
    if (rc == 0)
        rc = check_one("cpu", l->cpu_count, 1, m.cpu_count, "", err);
    if (rc == 0)
        rc = check_one("pids", l->pids, MIN_PIDS, m.pids, "", err);
    if (rc == 0)
        rc = check_one("disk", l->disk_mb, 1, m.disk_mb, " MB", err);
    return rc;
}
