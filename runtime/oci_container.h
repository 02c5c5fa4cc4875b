/* oci_container.h: starting an OCI container's init and joining it.
 *
 * The runtime half of abx-oci (lib/oci.c keeps the state directory and
 * the verbs): the container's first process, made from the bundle's
 * config and left waiting for `start`; processes exec'd into a running
 * container; hooks. Uses the runtime's cgroup code (cgroup.c) and abx's
 * own seccomp list (seccomp_policy.c) under the sandbox profile.
 */
#ifndef ABX_OCI_CONTAINER_H
#define ABX_OCI_CONTAINER_H

#include "jail.h"
#include "oci_spec.h"

#include <seccomp.h>

/* What abx's sandbox profile adds on top of the config
 * (run.abx.profile=sandbox): a host id range of the pool, abx's seccomp
 * deny list, abx's /proc masks. */
typedef struct abx_oci_profile {
    bool sandbox;
    uid_t host_id_base; /* the range's first host id (uid_pool.h), when sandbox */
} abx_oci_profile;

typedef struct abx_oci_create_params {
    const abx_oci_spec *spec;
    const char *id;
    const char *bundle;
    const char *fifo_path;      /* the exec fifo, made by the caller: start opens it */
    const char *console_socket; /* NULL: no pseudo-terminal is sent */
    bool no_pivot;
    int preserve_fds;
    abx_oci_profile profile;
    const char *egress_script; /* the sandbox profile's egress filter (abx__oci_egress_script), or NULL */
} abx_oci_create_params;

/* Makes the container: its cgroup (*cg, at spec->cgroups_path), its
 * namespaces, its mounts and root, and its first process, which waits on
 * the fifo for `start` before it applies the process's user,
 * capabilities and seccomp profile and execs process.args. Runs the
 * prestart, createRuntime and createContainer hooks. *pid is the
 * process's host pid; it is not our child once the intermediate process
 * that made it exited (the caller's subreaper reaps it). On failure nothing
 * is left running and *cg is destroyed. */
int abx__oci_container_create(const abx_oci_create_params *p, pid_t *pid, abx_cgroup *cg, abx_error **err);

typedef struct abx_oci_exec_params {
    const abx_oci_spec *spec; /* the container's config (its seccomp profile, its namespaces) */
    const abx_oci_process *process;
    pid_t container_pid;
    const abx_cgroup *cg;
    const char *console_socket;
    int preserve_fds;
    bool detach; /* false: wait for the process (the caller becomes a subreaper) */
    abx_oci_profile profile;
} abx_oci_exec_params;

/* Starts process in the container's namespaces and cgroup. Detached:
 * *pid is its host pid, running. Otherwise waits for it: *exit_status is
 * its exit code (128 + signal when a signal ended it). */
int abx__oci_container_exec(const abx_oci_exec_params *p, pid_t *pid, int *exit_status, abx_error **err);

/* The in-container agent's init (run.abx.envd=true): a process that
 * joins every namespace of the container's init target and its cgroup
 * (cgroup_path), loads abx's seccomp list and serves the caller's spawn
 * requests on jail->control_fd (init_server.h), as a sandbox's init does.
 * The caller becomes a child subreaper: the init is its child. jail's
 * cgroup is left empty (the container's is not the agent's to remove). */
int abx__oci_agent_init(pid_t target, const char *cgroup_path, abx_jail *jail, abx_error **err);

/* Runs hooks in order, each given state_json on stdin; a hook that fails
 * or outlives its timeout is an error naming it (the caller decides
 * whether that is fatal: poststart and poststop failures are only
 * logged). */
int abx__oci_hooks_run(const abx_oci_hook *hooks, size_t n, const char *state_json, abx_error **err);

/* The egress policy of the annotations run.abx.network.allow_out and
 * deny_out (either may be NULL) as an nft script for the container's
 * network namespace (oci_egress.c; *script: the caller frees it). */
int abx__oci_egress_script(const char *table, const char *allow, const char *deny, char **script,
                           abx_error **err);
/* Loads it in the network namespace of pid. */
int abx__oci_egress_apply(pid_t pid, const char *script, abx_error **err);
/* Removes table from the network namespace at netns_path (one the
 * container joined, which outlives it). */
int abx__oci_egress_remove(const char *netns_path, const char *table, abx_error **err);

/* Writes the net.* sysctls of keys/values in the network namespace of pid
 * (the runtime's: under the sandbox profile the container's root cannot
 * write them in a namespace it joined). */
int abx__oci_net_sysctls(pid_t pid, char *const *keys, char *const *values, size_t n, abx_error **err);

/* linux.seccomp as a filter to load (oci_seccomp.c); NULL with *err. */
scmp_filter_ctx abx__oci_seccomp_build(const json_t *profile, abx_error **err);

/* The start time of pid (field 22 of /proc/PID/stat), 0 when it is gone;
 * *zombie says whether it has exited but is not yet reaped. */
unsigned long long abx__oci_proc_start_time(pid_t pid, bool *zombie);

#endif
