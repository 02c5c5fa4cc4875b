/* provider.h: the seam between libabx's provider-neutral API (abx.h,
 * served by lib/sandbox.c and lib/sandbox_envd.c) and the providers behind
 * it, in two tables chosen once per sandbox, as crun keeps one table per
 * handler: the control plane here (create, connect, info, list, timeout,
 * kill, pause, network, metrics, templates, endpoints: one table per
 * provider), and the data plane (processes, files: data_plane.h), which a
 * provider picks for each sandbox it hands out (envd's, abx's shim's, or
 * an exec plugin's own methods). A missing operation is E8004.
 *
 * Handles: sandbox.c makes the abx_sandbox; a provider fills `envd`,
 * `data` and `impl` (its own state, freed by free_impl) and the qualified
 * id.
 */
#ifndef ABX_PROVIDER_H
#define ABX_PROVIDER_H

#include "abx/abx.h"
#include "envd_client.h"
#include "data_plane.h"
#include <stdatomic.h>

typedef struct abx_provider abx_provider;
typedef struct abx_quota_book abx_quota_book;

/* A root client (abx_client_new) owns its provider's per-client state; a
 * tenant's client (abx_client_for_tenant[s]) shares its root's state and
 * holds a reference to the root, so either may be freed first. */
struct abx_client {
    char provider[64];
    const char *source; /* where the provider came from (flag, env, config, default) */
    const abx_provider *ops;
    void *state;      /* the provider's own per client (a plugin's process); ops->free_state, by the root */
    atomic_int refs;  /* the caller's, and each handle's that needs the client (abx__client_ref) */
    abx_client *root; /* a tenant's client: the root whose state it uses (a reference); NULL: a root */
    abx_quota_book *quota;           /* a root's: creates in flight per tenant (tenant.c) */
    char tenant[ABX_TENANT_MAX + 1]; /* "" : none (or a set) */
    char **tenant_set;               /* abx_client_for_tenants: NULL-terminated; else NULL */
};

struct abx_sandbox {
    const abx_provider *ops;
    char qualified[96];         /* "<provider>:<id>" */
    abx_envd envd;              /* the envd data plane's connection (base URL "" without one) */
    const abx_data_plane *data; /* the data plane (data_plane.h), chosen by the provider; envd's by default */
    void *impl;                 /* the provider's own; freed by ops->free_impl */
    char shell[16];             /* the shell inside ("/bin/bash", "/bin/sh"); "": as the host's */
    char tenant[ABX_TENANT_MAX + 1]; /* whom the provider recorded it for; "": nobody */
    char *notes; /* a remote provider's copy of the notes (JSON), or NULL; freed with the handle */
};

/* One sandbox of a provider's list: its info and its recorded tenant. */
typedef struct abx__listed {
    abx_sandbox_info info;
    char tenant[ABX_TENANT_MAX + 1];
} abx__listed;

/* One event of the host's log and its number; false: no more. */
typedef bool (*abx__event_fn)(json_t *event, unsigned long long seq, void *ud);

struct abx_provider {
    const char *name; /* the id prefix: "local" */
    /* id: the part after "<name>:". *out is a new handle (abx_sandbox_free). */
    int (*connect)(abx_client *c, const char *id, abx_sandbox **out, abx_error **err);
    int (*create)(abx_client *c, const abx_create_options *o, abx_sandbox **out, abx_error **err);
    int (*get_info)(abx_sandbox *s, abx_sandbox_info *out, abx_error **err);
    /* Every sandbox the provider has (status_filter applied), whoever's:
     * sandbox.c filters by tenant, sorts and pages. *items: free(). */
    int (*list)(abx_client *c, const char *status_filter, abx__listed **items, size_t *count,
                abx_error **err);
    int (*set_timeout)(abx_sandbox *s, unsigned seconds, abx_error **err);
    int (*kill)(abx_sandbox *s, abx_error **err);
    void (*free_impl)(void *impl);
    /* Optional: pause (processes stopped, memory and files kept) or resume
     * with a new lifetime of timeout seconds (0: its last); E8001 when it
     * already is so. */
    int (*pause)(abx_sandbox *s, bool pause, unsigned timeout, abx_error **err);
    /* Optional: a TCP connection to port on the sandbox's own loopback. */
    int (*connect_port)(abx_sandbox *s, unsigned port, int *fd, abx_error **err);
    /* Optional: what the sandbox uses now. */
    int (*metrics)(abx_sandbox *s, abx_sandbox_metrics *out, abx_error **err);
    /* Optional: what the sandbox has used since it started. */
    int (*stats)(abx_sandbox *s, abx_sandbox_stats *out, abx_error **err);
    /* Optional: its use over the last hour, as abx_sandbox_get_history's array (the caller's). */
    int (*history)(abx_sandbox *s, json_t **out, abx_error **err);
    /* Optional: the host's event log (lib/events.c): append one event
     * (taken), and read the events numbered over after, oldest first, each
     * to each until it returns false (*last: the last one given). */
    void (*event_append)(json_t *event);
    int (*events_read)(abx_client *c, unsigned long long after, abx__event_fn each, void *ud,
                       unsigned long long *last, abx_error **err);
    /* Optional: the host's pools (abx_host_pools_get; the caller checked the client is the administrator). */
    int (*pool_usage)(abx_client *c, abx_host_pools *out, abx_error **err);
    /* Optional, for sandboxes whose data plane keeps no task output for a
     * later reader (E2B clouds): the client's table of the background tasks
     * this process follows (lib/epp_exec.h), and in *ref another reference
     * to the client that holds it (abx_client_free). */
    struct abx_epp_execs *(*task_table)(abx_sandbox *s, abx_client **ref);
    /* Optional, for a built-in provider: its per-client state (c->state). */
    int (*attach)(abx_client *c, abx_error **err);
    void (*free_state)(void *state);
    /* Keeps count sandboxes started ahead (0: none); may be NULL (E8004). */
    int (*keep_warm)(abx_client *c, unsigned count, abx_error **err);
    /* A new network policy (its normal JSON form, netpolicy.h); may be NULL (E8004). */
    int (*set_network)(abx_sandbox *s, json_t *policy, abx_error **err);
    /* Optional: the data plane by named methods for a sandbox without envd
     * (an exec plugin's files.*): params (taken) gain the sandbox's id;
     * capability gates the call (E8004 when undeclared). */
    int (*data_call)(abx_sandbox *s, const char *capability, const char *method, json_t *params,
                     json_t **result, abx_error **err);
    /* Optional: the notes given at create (*json: free()); a provider that
     * keeps them in s->notes leaves this NULL. */
    int (*notes)(abx_sandbox *s, char **json, abx_error **err);
    /* Optional: how to reach port (abx_sandbox_endpoint); without it the
     * envd data plane's own URLs answer. */
    int (*endpoint)(abx_sandbox *s, unsigned port, abx_endpoint *out, abx_error **err);
    /* Optional: an unconnected socket in the sandbox's network. */
    int (*socket)(abx_sandbox *s, int *fd, abx_error **err);
    /* Optional: the sizes of the host-wide pools a sandbox takes from (uid
     * ranges, network addresses); 0: no such pool. */
    void (*pools)(abx_client *c, unsigned *uid_ranges, unsigned *net_addresses);
    /* Templates: whether name exists (0, or E8002 "template ... not found"),
     * and the list as a JSON array of {name, ...} (*json: json_decref).
     * Optional: without them, only "base" exists. */
    int (*template_exists)(abx_client *c, const char *name, abx_error **err);
    int (*template_list)(abx_client *c, json_t **json, abx_error **err);
    /* Optional: volumes (abx.h). verb "create" (name, size_mb), "list",
     * "inspect" and "remove" (name: a name or volume id); *out a new JSON
     * value (an info, a list; NULL for remove). Without it: E8004. */
    int (*volume)(abx_client *c, const char *verb, const char *name, unsigned size_mb, json_t **out,
                  abx_error **err);
    /* Optional: snapshots (abx.h). snapshot: a template of s's filesystem
     * named name (NULL: one is made; fork: hidden, gone with its last
     * sandbox), *info its description with "snapshot_id". snapshots: verb
     * "list" (of sandbox_id, or all when NULL; *out an array) or "remove"
     * (name). Without them: E8004. */
    int (*snapshot)(abx_sandbox *s, const char *name, bool fork, json_t **info, abx_error **err);
    int (*snapshots)(abx_client *c, const char *verb, const char *name, const char *sandbox_id, json_t **out,
                     abx_error **err);
    /* The capabilities it declares (EPP's names), a new JSON array. */
    int (*features)(abx_client *c, json_t **json, abx_error **err);
};

/* The providers built in (lib/local/local_provider.c), and the one that
 * serves every installed exec plugin (lib/provider_epp.c). */
extern const abx_provider abx__provider_local;
extern const abx_provider abx__provider_epp;
/* E2B-protocol clouds (lib/provider_e2b.c): the built-in e2b and
 * alicloud-express, and every installed rest plugin (m: its verified
 * manifest). */
extern const abx_provider abx__provider_e2b;
int abx__provider_e2b_attach(abx_client *c, const char *name, abx_error **err);
/* The local provider through the abx service (lib/service_client.c
 * decides when): the same E2B protocol on the service's Unix socket, the
 * caller named by the kernel, ids still "local:...". all_tenants: ask for
 * every user's sandboxes (the service grants it to its administrators). */
int abx__provider_service_attach(abx_client *c, const char *socket_path, bool all_tenants, abx_error **err);
/* A raw call to the service (c: a client attached so): the body is
 * body_fd's bytes from its offset (-1: none), header one more header line
 * (may be NULL), timeout_s 0 the default 120 s; *out the JSON answer (may
 * be NULL: json_decref). Errors as every call's. */
int abx__provider_service_call(abx_client *c, const char *method, const char *path, int body_fd,
                               const char *header, long timeout_s, json_t **out, abx_error **err);
/* The service's socket of a client attached so (owned by c), else NULL. */
const char *abx__provider_service_socket(const abx_client *c);
struct abx_manifest;
int abx__provider_rest_attach(abx_client *c, const struct abx_manifest *m, abx_error **err);
/* A client of installed plugin id: its state (the plugin starts at the
 * first call). */
int abx__provider_epp_attach(abx_client *c, const char *id, abx_error **err);

/* A new handle of provider ops for qualified id; the caller fills envd and
 * impl. NULL without memory. */
abx_sandbox *abx__sandbox_new(const abx_provider *ops, const char *qualified);
/* Another reference to c (a handle that calls through its client):
 * released with abx_client_free. */
abx_client *abx__client_ref(abx_client *c);
/* A provider's own method for s (capability gates it; params taken):
 * E8004 where the provider has no data_call. */
int abx__sandbox_provider_call(abx_sandbox *s, const char *capability, const char *method, json_t *params,
                               json_t **result, abx_error **err);
/* "K=V" pairs into obj (field names the error); env_names: keys must be
 * environment variable names. */
int abx__pairs_to_object(const char *const *pairs, json_t *obj, const char *field, bool env_names,
                         abx_error **err);
/* Records an event of type in the host's log where the provider keeps one
 * (lib/events.c): sandbox (qualified) and tenant when not NULL or "",
 * and detail's members (taken; may be NULL). */
void abx__event(const abx_provider *ops, const char *type, const char *sandbox, const char *tenant,
                json_t *detail);
/* A sandbox's stats from their JSON (the shim's /abx/stats, abx serve's
 * GET /sandboxes/ID/stats: {cpu_us, mem_bytes, mem_peak_bytes,
 * mem_limit_bytes, pids, pids_limit, oom_kills, disk_used_bytes,
 * disk_limit_bytes, network?: {out_bytes, out_packets, in_bytes,
 * in_packets, refused_packets}}); what is missing or negative reads 0. */
void abx__stats_from_json(json_t *doc, abx_sandbox_stats *out);
/* The root client whose per-client state c uses (c itself for a root). */
abx_client *abx__client_root(abx_client *c);
/* A remote provider's create: metadata (an object, may be NULL) refusing
 * the keys it keeps the tenant and notes under, then gaining them from c
 * and o. A remote provider's answer: *tenant and *notes taken out of
 * metadata (which no longer shows them). Both in tenant.c. */
int abx__remote_meta_put(const abx_client *c, const abx_create_options *o, json_t *metadata, abx_error **err);
void abx__remote_meta_take(json_t *metadata, char tenant[ABX_TENANT_MAX + 1], char **notes);

#endif
