/* abx.h: the public C API of libabx, the SDK under the abx CLI and MCP server.
 *
 * Owns: the error model (one enum, generated from abx_errors.def), the
 * one-shot sandbox run, provider resolution, sandbox handles (create,
 * connect, info, list, timeout, kill), exec (to completion and streaming),
 * background processes, and files.
 *
 * Conventions:
 *   - Functions that can fail return int: 0 on success, -ABX_E* on failure,
 *     and fill *err (when err is non-NULL) with a message that carries context.
 *     The caller frees *err with abx_error_free().
 *   - Memory the library returns is freed with abx_free().
 *   - Every destroy/free function accepts NULL.
 *   - Only symbols prefixed abx_ are exported.
 */
#ifndef ABX_ABX_H
#define ABX_ABX_H

#include <stddef.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ABX_BUILDING_LIB)
#define ABX_API __attribute__((visibility("default")))
#else
#define ABX_API
#endif

/* ---- errors ------------------------------------------------------------ */

typedef enum abx_code {
    ABX_OK = 0,
#define ABX_ERR(name, num, cat, http, msg, hint) ABX_E##name = num,
#include "abx_errors.def"
#undef ABX_ERR
} abx_code;

/* An error with context. Opaque; created by the library, freed by the caller. */
typedef struct abx_error abx_error;

/* The code of err (positive), or ABX_OK for NULL. */
ABX_API abx_code abx_error_code(const abx_error *err);
/* The message with context; owned by err, valid until abx_error_free(). */
ABX_API const char *abx_error_message(const abx_error *err);
ABX_API void abx_error_free(abx_error *err);

/* Static tables by code; code may be given positive or negated. Unknown codes
 * yield "unknown error" / "E8000" / a generic hint. Never NULL. */
ABX_API const char *abx_strerror(int code);
ABX_API const char *abx_err_name(int code); /* "E8001" */
ABX_API const char *abx_err_hint(int code);
ABX_API const char *abx_err_category(int code);
ABX_API int abx_err_http_status(int code);

/* Frees memory returned by libabx. NULL is a no-op. */
ABX_API void abx_free(void *p);

ABX_API const char *abx_version(void);

/* ---- bounds ---------------------------------------------------------------
 * One constant per limit a client meets; every surface (CLI flags, MCP tool
 * schemas, abx serve's REST API, the shim) checks against these. */

#define ABX_STRINGIFY_(x) #x
#define ABX_STRINGIFY(x) ABX_STRINGIFY_(x) /* a bound as text, for help and messages */
#define ABX_TIMEOUT_MIN_S 1                /* a sandbox's lifetime (and a command's), in seconds */
#define ABX_TIMEOUT_MAX_S 86400
#define ABX_LIST_LIMIT_MAX 100              /* abx_list's page */
#define ABX_TENANT_MAX 128                  /* bytes of a tenant string */
#define ABX_NOTES_MAX 16384                 /* bytes of a front end's notes (abx_create_options.notes_json) */
#define ABX_SANDBOXES_PER_TENANT_DEFAULT 64 /* [limits] sandboxes_per_tenant */
#define ABX_TENANT_POOL_SHARE_DEFAULT 50    /* [limits] tenant_pool_share: percent of a host-wide pool */
#define ABX_VOLUMES_PER_TENANT_DEFAULT 32   /* [limits] volumes_per_tenant */
#define ABX_VOLUME_MB_PER_TENANT_DEFAULT 65536 /* [limits] volume_mb_per_tenant: MiB of sized volumes */
#define ABX_VOLUME_MB_MAX 1048576              /* a volume's --size, MiB */
#define ABX_VOLUME_MOUNTS_MAX 8                /* volumes mounted in one sandbox */

/* ---- one-shot sandbox run (abx run) ------------------------------------ */

#define ABX_DEFAULT_MEMORY_MB 512u
#define ABX_DEFAULT_CPU_COUNT 1u
#define ABX_DEFAULT_PIDS 256u
#define ABX_DEFAULT_DISK_MB 256u

typedef struct abx_limits {
    unsigned memory_mb; /* memory (and memory+swap) ceiling */
    unsigned cpu_count; /* CPU quota in whole CPUs */
    unsigned pids;      /* tasks ceiling */
    unsigned disk_mb;   /* size of the writable layer */
} abx_limits;

/* Fills *limits with the defaults above. */
ABX_API void abx_limits_default(abx_limits *limits);

/* The most a client may ask for, on this host: memory <= the host's memory,
 * cpu <= its online CPUs, pids <= 32768, disk <= the memory maximum (the
 * writable layer is memory-backed); each lowered by config.toml's
 * [limits] max_memory_mb, max_cpu, max_pids, max_disk_mb. Every surface
 * (CLI, MCP, REST) checks against these. */
typedef struct abx_limit_maxima {
    unsigned memory_mb, cpu_count, pids, disk_mb;
} abx_limit_maxima;
ABX_API void abx_limit_maxima_get(abx_limit_maxima *out);
/* Checks limits against the minima (memory 16 MB, cpu 1, pids 8, disk 1 MB)
 * and abx_limit_maxima_get(); a field of 0 means "the default" and passes.
 * The error names the field and its range. */
ABX_API int abx_limits_check(const abx_limits *limits, abx_error **err);

typedef struct abx_run_options {
    abx_limits limits;
    unsigned timeout_s;      /* 0: none; else the sandbox is killed after it */
    const char *const *argv; /* command and arguments, NULL-terminated; required */
    const char *const
        *envs;       /* "K=V" strings added to the sandbox's environment, NULL-terminated; may be NULL */
    const char *cwd; /* working directory inside; NULL means /app */
    bool as_root;    /* run as root inside (still unprivileged on the host) */
    /* Outputs, when non-NULL: set when the timeout ended the sandbox, and
     * when the memory limit's OOM killer killed a process inside. */
    bool *timed_out;
    bool *oom_killed;
    /* The network, as in abx_create_options (NULL, NULL, NULL: the lists,
     * then config.toml [network] default, then none). Needs root. */
    const char *network;
    const char *const *allow_out;
    const char *const *deny_out;
    /* NULL or "base": the host's view; else a template's tree under the
     * sandbox's own layer, with its ENV and WORKDIR (cwd NULL). Needs root. */
    const char *template_id;
} abx_run_options;

/* Runs opts->argv in a fresh sandbox with this process's stdin, stdout and
 * stderr, waits for it, destroys the sandbox, and stores the command's status
 * in *exit_status as a shell would report it: its exit code, 128+N for
 * signal N, 124 when the timeout killed it. Returns 0 when the command ran
 * (whatever its status), -ABX_E* when the sandbox could not be made or the
 * command could not be started (then *exit_status is 125, or 126/127 for a
 * command that is not executable or not found). Leaves nothing behind. */
ABX_API int abx_run(const abx_run_options *opts, int *exit_status, abx_error **err);

/* ---- clients, providers and sandboxes ------------------------------------ */

/* A client resolves a provider once and holds its configuration. */
typedef struct abx_client abx_client;
/* A handle to one sandbox; freeing it leaves the sandbox alive. */
typedef struct abx_sandbox abx_sandbox;

typedef struct abx_client_options {
    const char *provider;     /* the caller's explicit choice (a tool argument); NULL: resolve */
    const char *cli_provider; /* --provider; NULL: resolve further */
    /* Whom the client acts for (abx_tenant_valid; abx_tenant_from_secret
     * and abx_tenant_from_uid make one). NULL: nobody in particular, the
     * machine's administrator, who sees and touches every sandbox. */
    const char *tenant;
    /* Every tenant's sandboxes, as the machine's administrator sees them:
     * a client without a tenant does already; through the abx service
     * (a user without root) only root and the operator's [service]
     * admin_groups may (E8033 otherwise). */
    bool all_tenants;
    void *reserved[2]; /* room to grow without breaking the layout: leave zero */
} abx_client_options;

/* Resolves the provider (argument > --provider > ABX_PROVIDER > ./.env >
 * ~/.abx/.env > ~/.abx/config.toml [core] provider > local) and makes a
 * client. opts may be NULL. Free with abx_client_free().
 * The local provider of a process that is not root goes through the
 * machine's abx service when its socket exists ($ABX_SOCKET, else
 * /run/abx/abx.sock; abx_client_service says so): the same calls, on the
 * service's sandboxes of this host user (E8032 while it is not
 * reachable). */
ABX_API int abx_client_new(const abx_client_options *opts, abx_client **out, abx_error **err);
ABX_API void abx_client_free(abx_client *c);
/* Keeps count (0-16) sandboxes started ahead, in the shape of the last
 * create (template, cpu, memory; at first the defaults), so that a create
 * takes one ready-made instead of starting one (a cgroup attach waits for
 * the kernel, 5-25 ms): for long-lived clients (abx serve, an MCP server).
 * The missing ones start once creates pause (100 ms without one) or at
 * once when a quarter or less is left.
 * They are nobody's until taken (list and connect pass them by) and end
 * with the client (abx_client_free) or this process. 0 ends the pool. Local
 * provider only (E8004 otherwise). Call it before the client is shared
 * between threads. */
ABX_API int abx_client_keep_warm(abx_client *c, unsigned count, abx_error **err);
/* Changes a live sandbox's network policy (mode as in abx_create_options,
 * NULL: decided by the lists); the next connections follow it. */
ABX_API int abx_sandbox_set_network(abx_sandbox *s, const char *mode, const char *const *allow_out,
                                    const char *const *deny_out, abx_error **err);
/* ---- tenants ------------------------------------------------------------
 *
 * A client with a tenant sees and touches only the sandboxes created
 * through a client of that tenant: every call (list, connect, info,
 * timeout, pause, network, kill, exec, files, the data plane) on another
 * tenant's sandbox fails exactly as for an id that does not exist (E8002,
 * the same message). The provider records each sandbox's tenant (the local
 * provider in its state, a remote one in metadata it never shows). Each
 * tenant's live sandboxes are bounded ([limits] sandboxes_per_tenant,
 * default ABX_SANDBOXES_PER_TENANT_DEFAULT), and so is its share of each
 * host-wide pool (uid ranges, network addresses: [limits]
 * tenant_pool_share percent, default ABX_TENANT_POOL_SHARE_DEFAULT): past
 * either a create fails with E8030. */

/* A tenant is 1-ABX_TENANT_MAX bytes of [A-Za-z0-9._:=-]. */
ABX_API bool abx_tenant_valid(const char *tenant);
/* The tenant of a secret (an HTTP token, an API key): "k" and the first
 * 128 bits of its SHA-256 in hex, so one secret is one tenant at every
 * front end and the secret itself is never stored. out holds 34 bytes. */
ABX_API void abx_tenant_from_secret(const char *secret, char out[34]);
/* The tenant of a host user: "uid:N". out holds 16 bytes. */
ABX_API void abx_tenant_from_uid(unsigned uid, char out[16]);
/* A client of c's provider and per-client state (its warm pool, a
 * plugin's process) acting for tenant; *out is freed with abx_client_free
 * (before or after c). */
ABX_API int abx_client_for_tenant(abx_client *c, const char *tenant, abx_client **out, abx_error **err);
/* The same for a set of tenants (NULL-terminated, 1-1024): it reaches the
 * sandboxes of any of them and creates none (E8001): a server's keyless
 * data plane, which must reach the sandboxes of its own tenants only. */
ABX_API int abx_client_for_tenants(abx_client *c, const char *const *tenants, abx_client **out,
                                   abx_error **err);
/* The client's tenant; NULL without one (or with a set). Owned by c. */
ABX_API const char *abx_client_tenant(const abx_client *c);

/* The abx service's socket c goes through (owned by c), or NULL when it
 * reaches its provider directly. */
ABX_API const char *abx_client_service(const abx_client *c);
/* The socket a client of the local provider would go through in this
 * process into out ($ABX_SOCKET, else /run/abx/abx.sock), and whether
 * it would (not root, and the socket is there or named). */
ABX_API bool abx_service_socket(char *out, size_t len);
/* Whether the abx service answers on socket_path (GET /health, 3 s at most). */
ABX_API bool abx_service_reachable(const char *socket_path);

/* The resolved provider id ("local", ...), and where it came from. Owned by c. */
ABX_API const char *abx_client_provider(const abx_client *c);
ABX_API const char *abx_client_provider_source(const abx_client *c);

#define ABX_DEFAULT_TIMEOUT_S 300u

typedef struct abx_create_options {
    const char *template_id;     /* NULL: "base" */
    unsigned timeout_s;          /* lifetime, ABX_TIMEOUT_MIN_S-ABX_TIMEOUT_MAX_S; 0: 300 */
    const char *const *envs;     /* "K=V", NULL-terminated; may be NULL */
    const char *const *metadata; /* "K=V", NULL-terminated; may be NULL */
    unsigned cpu_count;          /* 0: 1 */
    unsigned memory_mb;          /* 0: 512 */
    /* "K=V", NULL-terminated, may be NULL: provider options (`--opt`), a
     * plugin's sandbox.create `options`; a provider that takes none
     * refuses them. A key a plugin marks secret is refused here: secrets
     * come from configuration only. */
    const char *const *options;
    /* The network (docs/network.md): mode "none" (loopback only),
     * "internet" or "allowlist"; NULL: decided by the lists, else
     * config.toml [network] default, else "none". allow_out and deny_out:
     * addresses, CIDRs, domains, *.domains, NULL-terminated, may be NULL.
     * A network needs root on the local provider. */
    const char *network;
    const char *const *allow_out;
    const char *const *deny_out;
    /* A front end's own notes on this sandbox (a JSON object of at most
     * ABX_NOTES_MAX bytes; NULL: none), kept by the provider beside it and
     * never shown by info or list: read back with abx_sandbox_notes
     * (abx serve keeps E2B's create options there). */
    const char *notes_json; /* (the layout's last reserved slot until 0.2) */
    /* At its timeout the sandbox is paused (processes stopped, memory and
     * files kept; a connect or resume goes on) instead of killed, as E2B's
     * lifecycle.onTimeout "pause" (autoPause); a paused one is kept a day.
     * The local provider; others refuse nothing and kill. */
    bool pause_on_timeout;
    /* Volumes to mount, "NAME:/path" or "NAME:/path:ro", NULL-terminated,
     * may be NULL: at most ABX_VOLUME_MOUNTS_MAX, each of the client's
     * tenant (abx_volume_create). The local provider as root or through
     * the service; E8004 where the provider has none. */
    const char *const *volumes;
    /* Durable (docs/durable.md): the writable layer is kept on disk (an
     * ext4 image of the sandbox's disk size) instead of in memory, and the
     * sandbox ends only when killed: its timeout pauses it, and a killed
     * supervisor, an abx upgrade or a machine restart leave it paused with
     * its files; a resume (or connect) starts it again from them, its
     * processes from the template's start command (memory does not survive
     * a restart). E2B's autoPause. The local provider as root. */
    bool persistent;
    /* A durable sandbox's pause puts it at rest at once (processes ended,
     * files kept; a resume cold-boots) instead of freezing it in memory:
     * E2B's autoPauseMemory false. */
    bool pause_drops_memory;
} abx_create_options;

/* Creates a sandbox; *out is the caller's (abx_sandbox_free). */
ABX_API int abx_sandbox_create(abx_client *c, const abx_create_options *opts, abx_sandbox **out,
                               abx_error **err);
/* Connects to a live sandbox by id ("local:i..." or "i..."). */
ABX_API int abx_sandbox_connect(abx_client *c, const char *id, abx_sandbox **out, abx_error **err);
ABX_API void abx_sandbox_free(abx_sandbox *s);
/* The qualified id, "provider:id". Owned by s. */
ABX_API const char *abx_sandbox_id(const abx_sandbox *s);
/* Whom the sandbox was created for (its tenant as the provider recorded
 * it); NULL: nobody (the administrator's). Owned by s. */
ABX_API const char *abx_sandbox_tenant(const abx_sandbox *s);
/* The notes given at create (abx_create_options.notes_json) as a JSON
 * object (*json: abx_free; "{}" when there are none). */
ABX_API int abx_sandbox_notes(abx_sandbox *s, char **json, abx_error **err);

typedef struct abx_sandbox_info {
    char sandbox_id[96]; /* qualified */
    char template_id[64];
    char status[16];      /* "running" */
    long long started_at; /* unix seconds */
    long long end_at;
    unsigned cpu_count, memory_mb, disk_size_mb;
    char *metadata_json;  /* {"k":"v",...}; freed by abx_sandbox_info_clear */
    char *env_names_json; /* ["K",...] */
    /* {"mode", "allow_out", "deny_out"[, "address", "gateway", "interface"]};
     * NULL when the provider does not say. Freed by abx_sandbox_info_clear. */
    char *network_json;
    /* [{"name", "path", "read_only"}]: the volumes mounted in it; NULL
     * when the provider does not say. Freed by abx_sandbox_info_clear. */
    char *volumes_json;
    /* A durable sandbox (abx_create_options.persistent): its starts so far,
     * and what its last resume came back from: "memory" (frozen while its
     * supervisor lived), "files" (started again from its layer: after a
     * restart or a memory-less pause), "" (not resumed). */
    bool persistent;
    unsigned boots;
    char resumed_from[8];
} abx_sandbox_info;

ABX_API void abx_sandbox_info_clear(abx_sandbox_info *info);
ABX_API int abx_sandbox_get_info(abx_sandbox *s, abx_sandbox_info *out, abx_error **err);
ABX_API int abx_get_info_by_id(abx_client *c, const char *id, abx_sandbox_info *out, abx_error **err);
/* Lists sandboxes (status_filter NULL or "running"; limit 1-100; offset >= 0),
 * oldest first. *items is an array of *count infos: abx_sandbox_info_list_free. */
ABX_API int abx_list(abx_client *c, const char *status_filter, unsigned limit, unsigned offset,
                     abx_sandbox_info **items, size_t *count, abx_error **err);
ABX_API void abx_sandbox_info_list_free(abx_sandbox_info *items, size_t count);
/* New lifetime: seconds (ABX_TIMEOUT_MIN_S-ABX_TIMEOUT_MAX_S) from now. */
ABX_API int abx_sandbox_set_timeout(abx_sandbox *s, unsigned seconds, abx_error **err);
ABX_API int abx_set_timeout_by_id(abx_client *c, const char *id, unsigned seconds, abx_error **err);
/* Destroys the sandbox and everything in it. */
ABX_API int abx_sandbox_kill(abx_sandbox *s, abx_error **err);
/* What a sandbox uses now. */
typedef struct abx_sandbox_metrics {
    unsigned cpu_count;
    double cpu_used_pct; /* over the last 100 ms, of one CPU (may exceed 100 with several) */
    unsigned long long mem_used, mem_total;   /* bytes */
    unsigned long long disk_used, disk_total; /* bytes */
    void *reserved[4];
} abx_sandbox_metrics;
ABX_API int abx_sandbox_get_metrics(abx_sandbox *s, abx_sandbox_metrics *out, abx_error **err);
/* What a sandbox has used since it started, read now (counters and
 * gauges for monitoring: no sampling interval, so a scrape costs one
 * round trip). */
typedef struct abx_sandbox_stats {
    unsigned long long cpu_usec;                                   /* CPU time of all its processes */
    unsigned long long mem_bytes, mem_peak_bytes, mem_limit_bytes; /* its memory cgroup's */
    unsigned long long pids, pids_limit;
    unsigned long long oom_kills;                         /* processes its memory limit's OOM killer killed */
    unsigned long long disk_used_bytes, disk_limit_bytes; /* its writable layer */
    bool has_network; /* it has an interface: the net_ fields are its own */
    unsigned long long net_out_bytes, net_out_packets, net_in_bytes, net_in_packets;
    unsigned long long net_refused_packets; /* egress its network policy refused */
    void *reserved[4];
} abx_sandbox_stats;
ABX_API int abx_sandbox_get_stats(abx_sandbox *s, abx_sandbox_stats *out, abx_error **err);
/* The sandbox's use over the last hour, sampled where it runs: a JSON
 * array in *json (abx_free) of {"t": unix seconds, "cpu_usec",
 * "memory_bytes"}, oldest first, one about every 30 s and the last one
 * now. E8004 for a provider that keeps none. */
ABX_API int abx_sandbox_get_history(abx_sandbox *s, char **json, abx_error **err);
/* The host's shared pools, as the provider's runtime holds them now. */
typedef struct abx_host_pools {
    unsigned uid_ranges_total, uid_ranges_used; /* per-sandbox host uid ranges */
    unsigned net_slots_total, net_slots_used;   /* per-sandbox network addresses */
    unsigned warm_ready, warm_target;           /* this client's warm pool (abx_client_keep_warm) */
    void *reserved[4];
} abx_host_pools;
/* The administrator's only (a client without a tenant): a tenant's client
 * gets E8021 (ABX_ENOTALLOWED). E8004 for a provider without a runtime on
 * this host. */
ABX_API int abx_host_pools_get(abx_client *c, abx_host_pools *out, abx_error **err);

/* The host's event log: what happened to the sandboxes c may see (a
 * tenant's client: its own; the administrator: all, and the host's own
 * events), one JSON object per event with "seq" (increasing), "time"
 * (RFC 3339, UTC, milliseconds), "type" (create, kill, timeout, pause,
 * resume, network, denied, oom, supervisor_died, quota_refused),
 * "sandbox_id" and "tenant" where they apply, and the type's details.
 * The events numbered over after, oldest first, at most max (1-1000), as
 * a JSON array in *json (abx_free); *next: what to pass as after next
 * time (after when nothing is new). The log is bounded: the oldest go
 * first. E8004 for a provider that keeps none (a remote one). */
#define ABX_EVENTS_READ_MAX 1000
ABX_API int abx_events_read(abx_client *c, unsigned long long after, unsigned max, char **json,
                            unsigned long long *next, abx_error **err);

/* Pauses the sandbox: its processes stop, its memory and files are kept
 * (the local provider freezes its cgroup; nothing is written to disk); a
 * paused sandbox is kept 24 h at most. E8001 when it is already paused,
 * E8004 where the provider cannot. */
ABX_API int abx_sandbox_pause(abx_sandbox *s, abx_error **err);
/* Resumes a paused sandbox with a lifetime of timeout_s from now (0: the
 * last one it was given). E8001 when it is not paused. */
ABX_API int abx_sandbox_resume(abx_sandbox *s, unsigned timeout_s, abx_error **err);
ABX_API int abx_kill_by_id(abx_client *c, const char *id, abx_error **err);

/* ---- volumes (docs/volumes.md) ---------------------------------------------
 *
 * A volume is a named directory that outlives sandboxes: mounted into one
 * at create (abx_create_options.volumes) it keeps what is written there
 * across kill, a killed supervisor and a machine restart. Each belongs to
 * the tenant of the client that made it: another tenant's answers as one
 * that does not exist (E8002), and its names are its own. Files keep the
 * owner they were written with inside (uid 1000 'user' stays 1000 in every
 * later sandbox: an id-mapped mount). Several sandboxes may mount one at
 * once: they share one directory, with the consistency of one local
 * filesystem (a write is seen by the others at once; nothing locks files
 * for them). A volume in use is not removed (E8034). size_mb 0: no bound
 * but the host's disk (the administrator's only: a tenant's volume always
 * has a size, ABX_VOLUME_DEFAULT_MB when none is asked); else a filesystem
 * image of that size. Quotas: [limits] volumes_per_tenant and
 * volume_mb_per_tenant (E8030 past them).
 *
 * Info is a JSON object: {name, volume_id, size_mb, created_at, in_use}. */
#define ABX_VOLUME_DEFAULT_MB 1024u
/* Names: 1-63 of [a-z0-9._-], starting with a letter or digit. */
ABX_API bool abx_volume_name_valid(const char *name);
ABX_API int abx_volume_create(abx_client *c, const char *name, unsigned size_mb, char **info,
                              abx_error **err);
/* The client's volumes as a JSON array of infos, by name (*json: abx_free). */
ABX_API int abx_volume_list(abx_client *c, char **json, abx_error **err);
/* One volume by name or volume id (*info: abx_free). */
ABX_API int abx_volume_inspect(abx_client *c, const char *name_or_id, char **info, abx_error **err);
/* Removes a volume and what it holds, for good. E8034 while a sandbox uses it. */
ABX_API int abx_volume_remove(abx_client *c, const char *name_or_id, abx_error **err);

/* ---- snapshots and forks (docs/snapshots.md) ------------------------------
 *
 * A snapshot records a running sandbox's filesystem (its template's tree
 * and what it wrote) as a new template, while the sandbox goes on: its
 * processes are frozen (its filesystems synced) only for the walk, which
 * links what the sandbox left unchanged to its template's files and copies
 * what it wrote (deduplicated with the template store). Memory is not
 * recorded: a sandbox from a snapshot starts from its files, with the
 * template's start command. Volumes are not part of it. The snapshot's id
 * is its template name: abx_create_options.template_id takes it (E2B:
 * Sandbox.create(snapshotId)). A tenant's snapshots are its own.
 *
 * Info: the template's description and {snapshot_id, snapshot: {sandbox_id,
 * template, paused_ms, linked, copied, copied_bytes, entries}}. */
/* name: NULL makes one ("snap-..."); a template name otherwise (E8001 if taken). */
ABX_API int abx_sandbox_snapshot(abx_sandbox *s, const char *name, char **info, abx_error **err);
/* The client's snapshots (of sandbox_id, or all when NULL), a JSON array of infos. */
ABX_API int abx_snapshot_list(abx_client *c, const char *sandbox_id, char **json, abx_error **err);
/* Removes a snapshot (E8002 for a name that is none; refused while a sandbox uses it). */
ABX_API int abx_snapshot_remove(abx_client *c, const char *name, abx_error **err);
#define ABX_FORK_MAX 64 /* sandboxes one fork makes */
/* count (1-ABX_FORK_MAX) new sandboxes (created through c, of s's
 * provider) from s's filesystem now, each with
 * its own uid range, network (none, unless o says) and lifetime: o (may be
 * NULL: s's cpu, memory and a 300 s lifetime; its template_id is ignored).
 * The snapshot under them is not kept: it goes with the last of them.
 * *children: an array of count handles (abx_sandbox_free each, then
 * abx_free the array). On failure none is left. */
ABX_API int abx_sandbox_fork(abx_client *c, abx_sandbox *s, unsigned count, const abx_create_options *o,
                             abx_sandbox ***children, abx_error **err);

/* ---- templates (the provider's) ------------------------------------------ */

/* 0 when the client's provider has template name (the local provider: a
 * built-in one, or one built or imported here; a remote one: the host's);
 * E8002 "template 'NAME' not found" otherwise. */
ABX_API int abx_template_exists(abx_client *c, const char *name, abx_error **err);
/* The provider's templates as a JSON array of objects, each with at least
 * "name" (*json: abx_free). */
ABX_API int abx_templates(abx_client *c, char **json, abx_error **err);

/* ---- configuration ($ABX_HOME/config.toml) --------------------------------
 *
 * Keys are "section.name" ("core.provider", "providers.e2b.api_key",
 * "limits.sandboxes_per_tenant"). The file is written atomically, mode
 * 0600. */

/* *value (abx_free) is the key's value, or NULL when it is not set. */
ABX_API int abx_config_get(const char *key, char **value, abx_error **err);
ABX_API int abx_config_set(const char *key, const char *value, abx_error **err);
/* *was_set (may be NULL) says whether there was something to remove. */
ABX_API int abx_config_unset(const char *key, bool *was_set, abx_error **err);
/* Every key as a JSON array of [key, value] in the file's order (*json:
 * abx_free): the values as they are; show a secret's masked. */
ABX_API int abx_config_entries(char **json, abx_error **err);
/* Whether a key names a secret, and why: 0 not; ABX_SECRET_BY_NAME its
 * name says so (key, token, secret, password, credential);
 * ABX_SECRET_BY_PLUGIN an installed plugin's manifest marks it. A front
 * end never prints a secret, and takes a plugin's only on stdin. */
#define ABX_SECRET_BY_NAME 1
#define ABX_SECRET_BY_PLUGIN 2
ABX_API int abx_config_key_secret(const char *key);
/* abx's state directory ($ABX_HOME, else ~/.abx) into out. */
ABX_API int abx_home(char *out, size_t len, abx_error **err);

/* ---- this host ------------------------------------------------------------- */

/* What this host and this user can run sandboxes with (namespaces,
 * seccomp, cgroups, host ids, the state directory, the libraries loaded
 * on first use, networking, templates): a JSON array of {check, status
 * (ok, warn or fail), detail (what to do)} (*json: abx_free); *works (may
 * be NULL) is false when a check failed. Reads only. */
ABX_API int abx_host_checks(char **json, bool *works, abx_error **err);
/* The capabilities the client's provider declares (EPP's names:
 * "sandbox.lifecycle", "exec.run", ...) as a JSON array (*json: abx_free). */
ABX_API int abx_client_features(abx_client *c, char **json, abx_error **err);

/* ---- provider plugins ($ABX_HOME/providers) --------------------------------- */

typedef struct abx_plugin_install_options {
    /* A plugin directory (abx-provider.toml at its root, named by its id),
     * a tar archive of one, or a git source (URL//subdir, owner/repo//subdir). */
    const char *source;
    bool link;  /* a symlink to a directory (development): no digest, a warning at every use */
    bool force; /* replaces an installed plugin of the same id */
    /* Called with the manifest as JSON ({id, name, version, kind,
     * description, command, base_url, env, config}) before anything is
     * installed: false stops the install (E8024). May be NULL. */
    bool (*confirm)(const char *manifest_json, void *userdata);
    void *userdata;
    void *reserved[4];
} abx_plugin_install_options;

/* Installs (copies files and records a digest; runs nothing of the
 * plugin's). *info (abx_free): {id, kind, version, source, linked,
 * digest, path}. */
ABX_API int abx_plugin_install(const abx_plugin_install_options *o, char **info, abx_error **err);
/* [{id, kind, version, source, linked, digest: ok|mismatch|linked}] (*json: abx_free). */
ABX_API int abx_plugin_list(char **json, abx_error **err);
/* Uninstalls; purge also removes its data directory. */
ABX_API int abx_plugin_remove(const char *id, bool purge, abx_error **err);
/* Checks an installed plugin: {id, ok, checks: [{check, status, detail}]}
 * (the manifest, its command, the digest, the initialize handshake or the
 * API's answer, config keys not set) (*json: abx_free). */
ABX_API int abx_plugin_doctor(const char *id, char **json, abx_error **err);

/* ---- templates of the local provider (E8004 for the others) ------------------ */

typedef struct abx_template_build_options {
    const char *name;              /* the template made (an existing one is replaced) */
    const char *dockerfile;        /* its path; NULL: CONTEXT/Dockerfile */
    const char *context;           /* the directory COPY and ADD read; NULL: "." */
    const char *const *build_args; /* "NAME=value", NULL-terminated; may be NULL */
    bool no_cache;                 /* every step again */
    const char *builtin;           /* instead: build this built-in template from its own recipe */
    /* Each step's progress as one JSON event (not kept past the call). May be NULL. */
    void (*on_event)(const char *event_json, void *userdata);
    void *userdata;
    /* RUN steps' network: NULL or "sandbox" (a namespace of their own with
     * outbound NAT, as --network internet: the host, its loopback and LAN
     * unreachable), or "host" (the host's network, as it was before:
     * an explicit choice, announced by a "note" event). */
    const char *network;
    /* Instead of dockerfile and context: a tar archive (a file this
     * process may open) holding "Dockerfile" and the context under
     * "context/", as abx_template_pack_context writes it: what the abx
     * service receives from a user, unpacked into a private directory. */
    const char *context_archive;
    void *reserved[2];
} abx_template_build_options;

/* *info (may be NULL; abx_free) describes the template made; a failed
 * step is E8029 with its output. Through the abx service (a user without
 * root) the context is packed by this process, with its user's rights
 * (abx_template_pack_context), and the template is that user's own: they
 * see it by its name, nobody else does (root sees it as "~UID.NAME"). */
ABX_API int abx_template_build(abx_client *c, const abx_template_build_options *o, char **info,
                               abx_error **err);
/* Packs dockerfile (NULL: CONTEXT/Dockerfile) and the directory context
 * (NULL: ".") into a tar stream on fd, read with this process's rights:
 * regular files, directories, and symbolic links whose targets are
 * relative without ".."; anything else, a link leaving the context, or a
 * file this user cannot read refuses it (E8001 / E8012 naming the path).
 * At most 10000 entries and 256 MiB. */
ABX_API int abx_template_pack_context(const char *dockerfile, const char *context, int fd, abx_error **err);
/* A root filesystem archive or an OCI layout (DIR[:TAG]) as template name
 * (through the abx service: an archive, read by this process). */
ABX_API int abx_template_import(abx_client *c, const char *name, const char *source, char **info,
                                abx_error **err);
ABX_API int abx_template_inspect(abx_client *c, const char *name, char **json, abx_error **err);
/* Refused (E8001) while a live sandbox uses it, unless force. */
ABX_API int abx_template_remove(abx_client *c, const char *name, bool force, abx_error **err);
/* Empties the build cache; *freed (may be NULL) gets the bytes it held. */
ABX_API int abx_template_prune(abx_client *c, unsigned long long *freed, abx_error **err);

/* ---- processes ----------------------------------------------------------- */

typedef void (*abx_output_fn)(const char *data, size_t len, void *userdata);

typedef struct abx_exec_options {
    const char *cwd;         /* NULL: the template's WORKDIR, else default_cwd, else the user's home */
    const char *user;        /* "user" (default) or "root" */
    const char *const *envs; /* "K=V", NULL-terminated; may be NULL */
    unsigned timeout_s;      /* 0: none; else the process is killed after it */
    abx_output_fn on_stdout; /* called per chunk as output arrives; may be NULL */
    abx_output_fn on_stderr;
    void *userdata;
    bool keep_output; /* also collect the output into the result */
    const char *tag;  /* background processes: a name to find them by */
    /* Polled about once a second and on output; returning true stops the
     * command (it is killed) and the call fails with ABX_ECANCELLED. */
    bool (*should_cancel)(void *userdata);
    /* with_stdin: what stdin_fd gives until its end is the command's
     * stdin, which is then closed (abx_sandbox_exec only); otherwise the
     * command's stdin is empty. */
    bool with_stdin;
    int stdin_fd;
    /* 0: off. Otherwise a stream that passes this many bytes is also saved
     * whole (up to 32 MiB, and a quarter of the sandbox's free space) into a file inside the sandbox, named
     * in the result's stdout_path / stderr_path, so that a caller who shows only the head and tail can say
     * where the rest is. The sandbox keeps the newest 32 such files (in /tmp/.abx-output). */
    unsigned long long save_output_after;
    /* pty: the command gets a pseudo-terminal (its stdin, stdout and
     * stderr, and its controlling terminal) sized as the terminal on pty_fd
     * (-1: 24x80), followed when that one is resized; its output comes to
     * on_stdout, and with_stdin's bytes go to it as typed (Ctrl-C included). */
    bool pty;
    int pty_fd;
    /* Where the command starts when cwd is NULL and the sandbox's template
     * names no WORKDIR (NULL: the user's home). The CLI and MCP tools give
     * "/app". */
    const char *default_cwd;
    void *reserved[3]; /* room to grow without breaking the layout: leave zero */
} abx_exec_options;

typedef struct abx_exec_result {
    int exit_code; /* the command's; 128+N for signal N; 124 on timeout */
    bool timed_out;
    /* When keep_output: the first and last bytes of each stream (at most
     * 256 KiB kept per stream), NUL-terminated; free with abx_exec_result_clear.
     * When *_total > *_len, the bytes in between were dropped at *_cut. */
    char *stdout_data;
    size_t stdout_len;
    char *stderr_data;
    size_t stderr_len;
    unsigned long long stdout_total; /* bytes the command wrote to the stream */
    unsigned long long stderr_total;
    size_t stdout_cut;
    size_t stderr_cut;
    /* With save_output_after: the sandbox path holding the whole stream,
     * or "" when it was not saved. */
    char stdout_path[64];
    char stderr_path[64];
} abx_exec_result;

/* Runs command through `bash -l -c` (`sh -c` where there is no bash) and
 * waits for it. Returns 0 when it ran (whatever its exit code); on an error
 * *out holds nothing to free. */
ABX_API int abx_sandbox_exec(abx_sandbox *s, const char *command, const abx_exec_options *opts,
                             abx_exec_result *out, abx_error **err);
ABX_API void abx_exec_result_clear(abx_exec_result *r);
/* The same without a shell: argv[0] is looked up in the sandbox's PATH. */
ABX_API int abx_sandbox_exec_argv(abx_sandbox *s, const char *const *argv, const abx_exec_options *opts,
                                  abx_exec_result *out, abx_error **err);

/* Starts command in the background; *pid names it for the calls below. */
ABX_API int abx_sandbox_start_background(abx_sandbox *s, const char *command, const abx_exec_options *opts,
                                         int *pid, abx_error **err);

/* Whether background processes outlive the client that started them: true
 * for a sandbox with an envd data plane (the sandbox keeps them and their
 * output), false for an exec plugin's sandbox, whose tasks and their output
 * live in the plugin process of one client (an MCP session's). */
ABX_API bool abx_sandbox_tasks_outlive_client(const abx_sandbox *s);

/* The same without a shell: argv[0] is looked up in the sandbox's PATH. */
ABX_API int abx_sandbox_start_background_argv(abx_sandbox *s, const char *const *argv,
                                              const abx_exec_options *opts, int *pid, abx_error **err);

typedef struct abx_process_output {
    int pid;
    bool running;
    int exit_code;     /* when !running: as abx_exec_result */
    char *stdout_data; /* bytes from stdout_offset on; NUL-terminated */
    size_t stdout_len;
    char *stderr_data;
    size_t stderr_len;
    unsigned long long stdout_offset; /* where the next read starts */
    unsigned long long stderr_offset;
    bool truncated; /* older output than asked for was dropped */
} abx_process_output;

/* Reads a process's buffered output from the given offsets, waiting up to
 * wait_ms for new output or the exit. */
ABX_API int abx_sandbox_read_output(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                                    unsigned long long stderr_offset, unsigned wait_ms,
                                    abx_process_output *out, abx_error **err);
ABX_API void abx_process_output_clear(abx_process_output *o);
ABX_API int abx_sandbox_signal(abx_sandbox *s, int pid, int signal_number, abx_error **err);
ABX_API int abx_sandbox_send_stdin(abx_sandbox *s, int pid, const void *data, size_t len, abx_error **err);
ABX_API int abx_sandbox_close_stdin(abx_sandbox *s, int pid, abx_error **err);
/* A terminal process's new size (one started with pty). */
ABX_API int abx_sandbox_pty_resize(abx_sandbox *s, int pid, unsigned rows, unsigned cols, abx_error **err);
/* Running processes as a JSON array of {pid, tag?, config{cmd,args,envs,cwd}}. Free with abx_free. */
ABX_API int abx_sandbox_list_processes(abx_sandbox *s, char **json, abx_error **err);

/* ---- ports ---------------------------------------------------------------- */

/* A TCP connection to port inside the sandbox (its own loopback: a server
 * bound to 127.0.0.1 there answers). *fd is the caller's to close. The
 * local provider needs root for it (E8010 otherwise). */
ABX_API int abx_sandbox_connect_port(abx_sandbox *s, unsigned port, int *fd, abx_error **err);

/* The URL at which a service listening on port inside the sandbox is
 * reached from outside (*url: abx_free). E8004 where the provider offers
 * none (an exec plugin without ports.url). */
ABX_API int abx_sandbox_port_url(abx_sandbox *s, unsigned port, char **url, abx_error **err);

/* ---- the data plane, for a front end that relays it (abx serve) ----------
 *
 * Port ABX_PORT_ENVD is the sandbox's envd (E2B's process and filesystem
 * API, /files), ABX_PORT_CODE its code interpreter (/execute,
 * /contexts), any other port a TCP service inside. The endpoint says how
 * to reach one: a Unix socket to send the requests to (the local
 * provider's supervisor), sockets the library makes in the sandbox's own
 * network (a port on a local sandbox's loopback) or a URL with the
 * headers the far side needs (an E2B-protocol host). */

#define ABX_PORT_ENVD 49983u
#define ABX_PORT_CODE 49999u

typedef struct abx_endpoint {
    /* true: make each connection's socket with abx_sandbox_socket (it
     * lives in the sandbox's network), then connect it to url's host. */
    bool sandbox_socket;
    /* "": none; else the Unix socket every connection goes to (url then
     * names only the scheme and host): valid while the handle lives. */
    char unix_socket[108];
    char url[512]; /* the base URL requests go to (no trailing slash) */
    /* Headers each request must carry to reach this sandbox's port (an
     * E2B host's routing: "E2b-Sandbox-Id: ..."); "" after the last. */
    char headers[4][160];
    /* The access token envd and the code interpreter expect in
     * X-Access-Token ("" none): a relay adds it only where it must. */
    char token[128];
    void *reserved[4];
} abx_endpoint;

/* How to reach port of the sandbox; E8004 where the provider has no such
 * data plane (an exec plugin's sandbox has no envd). */
ABX_API int abx_sandbox_endpoint(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err);
/* A TCP socket (IPv4, not connected) in the sandbox's own network
 * namespace, for an endpoint with sandbox_socket: connecting it to
 * 127.0.0.1:PORT reaches what listens on the sandbox's loopback. *fd is
 * the caller's to close. The local provider needs root (E8010). */
ABX_API int abx_sandbox_socket(abx_sandbox *s, int *fd, abx_error **err);

/* ---- code (a code interpreter in the sandbox) --------------------------- */

/* Runs a cell in one of the sandbox's kernels: the same kernels E2B's SDK
 * reaches through /execute, so every client of the sandbox sees the same
 * notebook state. */
typedef struct abx_code_options {
    const char *language;                  /* "python" (default) or "javascript" */
    const char *context_id;                /* NULL: the language's default context */
    const char *cwd;                       /* this cell's directory; NULL: the context's */
    unsigned timeout_s;                    /* 0: 300; past it the cell is interrupted */
    bool fresh;                            /* a new interpreter for this cell alone */
    const char *const *envs;               /* "K=V" for this cell only; may be NULL */
    unsigned long long save_output_after;  /* as in abx_exec_options */
    bool (*should_cancel)(void *userdata); /* polled: true interrupts the cell */
    void *userdata;
    void *reserved[4]; /* room to grow without breaking the layout: leave zero */
} abx_code_options;

typedef struct abx_code_result {
    int exit_code; /* 0; 1 an exception; 124 timeout; 130 interrupted; the kernel's status if it died */
    bool timed_out;
    bool kernel_died; /* the kernel died in this cell: error_* says how */
    bool state_reset; /* this cell ran in a new kernel: earlier state is gone */
    char state_reset_reason[200];
    int execution_count;
    char context_id[40];
    /* Each stream's first bytes and last bytes (cut where the first part
     * ends) of *_total written, as UTF-8; *_path names a file in the
     * sandbox holding all of it when it was saved. */
    char *stdout_data;
    size_t stdout_len, stdout_cut;
    unsigned long long stdout_total;
    char stdout_path[96];
    char *stderr_data;
    size_t stderr_len, stderr_cut;
    unsigned long long stderr_total;
    char stderr_path[96];
    char *error_name, *error_value, *traceback; /* NULL without an error */
    char *text;                                 /* the final expression's value as text, or NULL */
    /* JSON arrays: E2B's results in order ({text?, html?, markdown?, svg?,
     * png? (base64), jpeg?, json?, ..., is_main_result}) and the files the
     * cell created or changed under its directory ({name, path, size}). */
    char *results_json;
    char *files_json;
} abx_code_result;

/* Returns 0 when the cell ran, whatever it did (an exception, a timeout
 * and a kernel's death are in *out); free *out with abx_code_result_clear. */
/* Whether the sandbox has a code interpreter (an envd data plane with
 * /execute): an exec plugin's sandbox without envd has none. */
ABX_API bool abx_sandbox_has_code_interpreter(const abx_sandbox *s);
ABX_API int abx_sandbox_run_code(abx_sandbox *s, const char *code, const abx_code_options *opts,
                                 abx_code_result *out, abx_error **err);
ABX_API void abx_code_result_clear(abx_code_result *r);

/* ---- files --------------------------------------------------------------- */

/* Paths are inside the sandbox; relative ones are relative to the user's
 * home. user: "user" (NULL) or "root". Transfers stream: nothing is held
 * whole in memory. */
ABX_API int abx_sandbox_write_file(abx_sandbox *s, const char *path, const void *data, size_t len,
                                   const char *user, abx_error **err);
ABX_API int abx_sandbox_write_file_from_fd(abx_sandbox *s, const char *path, int fd, const char *user,
                                           unsigned long long *written, abx_error **err);
/* Reads a whole file (up to max_len bytes, else E8018) into *data (abx_free). */
ABX_API int abx_sandbox_read_file(abx_sandbox *s, const char *path, const char *user, size_t max_len,
                                  char **data, size_t *len, abx_error **err);
/* Bytes [offset, offset + length) of a file (fewer at its end, none past
 * it), NUL-terminated (abx_free), and the file's size. */
ABX_API int abx_sandbox_read_file_range(abx_sandbox *s, const char *path, const char *user,
                                        unsigned long long offset, size_t length, char **data, size_t *len,
                                        unsigned long long *file_size, abx_error **err);
ABX_API int abx_sandbox_read_file_to_fd(abx_sandbox *s, const char *path, int fd, const char *user,
                                        unsigned long long *read_bytes, abx_error **err);
/* Entries as a JSON array of {name, type ("file", "dir" or "symlink"),
 * path, size (a number), mode, permissions, owner, group, modified_time,
 * symlink_target and target_type ("file" or "dir") for a symlink}
 * (abx_free). abx_sandbox_stat gives one such object. */
ABX_API int abx_sandbox_list_files(abx_sandbox *s, const char *path, unsigned depth, const char *user,
                                   char **json, abx_error **err);
ABX_API int abx_sandbox_stat(abx_sandbox *s, const char *path, const char *user, char **json,
                             abx_error **err);
/* Creates a directory and its parents; *created is false when it existed. */
ABX_API int abx_sandbox_mkdir(abx_sandbox *s, const char *path, const char *user, bool *created,
                              abx_error **err);
ABX_API int abx_sandbox_remove(abx_sandbox *s, const char *path, const char *user, abx_error **err);
ABX_API int abx_sandbox_move(abx_sandbox *s, const char *from, const char *to, const char *user,
                             abx_error **err);

/* ---- abx-oci: an OCI runtime with runc's command line (lib/oci.c) ----
 *
 * Containers made from OCI bundles for the engines that call a runtime
 * (containerd's runc shim, CRI-O, Podman's conmon, Docker): each
 * container's state lives in root/<id>. The engine's stdio is the
 * container's; its first process is left to the caller's subreaper. */
typedef struct abx_oci_runtime {
    const char *root;    /* the state directory; NULL: /run/abx-oci (or $XDG_RUNTIME_DIR/abx-oci) */
    bool systemd_cgroup; /* cgroupsPath is "slice:prefix:name" (made as that path on cgroupfs) */
} abx_oci_runtime;

typedef struct abx_oci_create_options {
    const char *bundle;         /* the bundle directory (config.json and the root); NULL: the cwd */
    const char *pid_file;       /* where the container's pid is written; may be NULL */
    const char *console_socket; /* a unix socket the pseudo-terminal's master is sent to */
    bool no_pivot;              /* move the root and chroot instead of pivot_root */
    bool no_new_keyring;        /* accepted: abx-oci never makes a session keyring */
    int preserve_fds;           /* fds 3 .. 3 + N - 1 are passed to the process */
} abx_oci_create_options;

/* Makes container id from the bundle, its process waiting for
 * abx_oci_start. E8001 for a bad config or an id in use. */
ABX_API int abx_oci_create(const abx_oci_runtime *rt, const char *id, const abx_oci_create_options *opts,
                           abx_error **err);
/* Starts the process of a created container. E8016 when it is not created. */
ABX_API int abx_oci_start(const abx_oci_runtime *rt, const char *id, abx_error **err);
/* The OCI state of a container as JSON (*json: abx_free): ociVersion, id,
 * status (created, running, paused, stopped), pid, bundle, rootfs,
 * created, annotations. E8002 "container does not exist". */
ABX_API int abx_oci_state(const abx_oci_runtime *rt, const char *id, char **json, abx_error **err);
/* Every container's state, as a JSON array (*json: abx_free). */
ABX_API int abx_oci_list(const abx_oci_runtime *rt, char **json, abx_error **err);
/* Sends sig to the container's process (all: to every process in its
 * cgroup). E8016 "container not running" when it is stopped. */
ABX_API int abx_oci_kill(const abx_oci_runtime *rt, const char *id, int sig, bool all, abx_error **err);
/* Removes a stopped container (force: any, killing it first), running
 * its poststop hooks; never touches the bundle. */
ABX_API int abx_oci_delete(const abx_oci_runtime *rt, const char *id, bool force, abx_error **err);
/* Freezes (pause) or thaws the container's cgroup. */
ABX_API int abx_oci_pause(const abx_oci_runtime *rt, const char *id, bool pause, abx_error **err);
/* The container's processes (host pids; *pids: abx_free). */
ABX_API int abx_oci_ps(const abx_oci_runtime *rt, const char *id, int **pids, size_t *count, abx_error **err);
/* Writes new cgroup resources (linux.resources' JSON shape). */
ABX_API int abx_oci_update(const abx_oci_runtime *rt, const char *id, const char *resources_json,
                           abx_error **err);

typedef struct abx_oci_exec_options {
    const char *process_path; /* a process object (config.json's "process" shape); or: */
    const char *const *args;  /* the command, NULL-terminated (the container's env, user and caps) */
    const char *const *env;   /* added "K=V", NULL-terminated; may be NULL */
    const char *cwd;          /* NULL: the config's */
    const char *user;         /* "UID[:GID]"; NULL: the config's */
    bool tty;
    bool detach; /* leave it running and return; else wait for it */
    const char *pid_file;
    const char *console_socket;
    int preserve_fds;
} abx_oci_exec_options;
/* Runs another process in a running container. Not detached:
 * *exit_status is its exit code (128 + signal). */
ABX_API int abx_oci_exec(const abx_oci_runtime *rt, const char *id, const abx_oci_exec_options *opts,
                         int *exit_status, abx_error **err);
/* create, start, and (unless detach) wait and delete: *exit_status is the
 * process's exit code. */
ABX_API int abx_oci_run(const abx_oci_runtime *rt, const char *id, const abx_oci_create_options *opts,
                        bool detach, int *exit_status, abx_error **err);
/* A default config.json for a bundle whose root is "rootfs" (abx_free). */
ABX_API char *abx_oci_default_spec(void);
/* What this runtime supports, as the OCI features document (abx_free). */
ABX_API char *abx_oci_features(void);
/* A signal's number from "SIGKILL", "KILL" or "9"; -1 when it is none. */
ABX_API int abx_oci_signal_parse(const char *text);
/* The OCI runtime specification version abx-oci implements ("1.2.0"). */
ABX_API const char *abx_oci_spec_version(void);

#ifdef __cplusplus
}
#endif
#endif
