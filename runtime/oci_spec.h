/* oci_spec.h: an OCI runtime bundle's config.json, read into C.
 *
 * What abx-oci applies of the OCI runtime specification (1.0-1.2): the
 * root, the process, mounts, hooks, the Linux namespaces, id mappings,
 * devices, sysctls, masked and read-only paths, the seccomp profile and the
 * cgroup resources. Every list is bounded (ABX_OCI_MAX_*): a config past a
 * bound is refused, never cut.
 */
#ifndef ABX_OCI_SPEC_H
#define ABX_OCI_SPEC_H

#include "abx/abx.h"
#include "cgroup.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ABX_OCI_MAX_MOUNTS 512
#define ABX_OCI_MAX_LIST 4096  /* args, env, paths, devices, sysctls, hooks, rlimits */
#define ABX_OCI_MAX_IDMAPS 340 /* the kernel's own bound on uid_map lines */
#define ABX_OCI_NS_COUNT 8

typedef struct abx_oci_mount {
    char *destination, *type, *source;
    unsigned long flags;       /* MS_* set by the options */
    unsigned long propagation; /* MS_PRIVATE/SHARED/SLAVE/UNBINDABLE (| MS_REC), 0: none */
    char *data;                /* options that are not flags, comma-joined ("" for none) */
    bool bind;                 /* bind or rbind */
    bool readonly;             /* "ro": a bind is remounted read-only after it is made */
} abx_oci_mount;

typedef struct abx_oci_idmap {
    uint32_t container_id, host_id, size;
} abx_oci_idmap;

typedef struct abx_oci_namespace {
    int flag;   /* CLONE_NEW* */
    char *path; /* to join, or NULL for a new one */
} abx_oci_namespace;

typedef struct abx_oci_rlimit {
    int resource;
    uint64_t soft, hard;
} abx_oci_rlimit;

typedef struct abx_oci_device {
    char *path;
    char type; /* 'c', 'b', 'u' or 'p' */
    int64_t major, minor;
    unsigned mode; /* fileMode, 0666 by default */
    uint32_t uid, gid;
} abx_oci_device;

typedef struct abx_oci_hook {
    char *path;
    char **args, **env; /* NULL-terminated; may be NULL */
    int timeout_s;      /* 0: none */
} abx_oci_hook;

enum abx_oci_hook_kind {
    ABX_OCI_HOOK_PRESTART,
    ABX_OCI_HOOK_CREATE_RUNTIME,
    ABX_OCI_HOOK_CREATE_CONTAINER,
    ABX_OCI_HOOK_START_CONTAINER,
    ABX_OCI_HOOK_POSTSTART,
    ABX_OCI_HOOK_POSTSTOP,
    ABX_OCI_HOOK_KINDS
};

typedef struct abx_oci_process {
    bool terminal;
    unsigned short console_rows, console_cols; /* process.consoleSize; 0: the terminal's own */
    uint32_t uid, gid;
    gid_t *additional_gids;
    size_t n_additional_gids;
    int umask;          /* -1: left as it is */
    char **args, **env; /* NULL-terminated */
    char *cwd;
    bool has_caps;
    uint64_t caps[5]; /* bounding, effective, inheritable, permitted, ambient: bit N = cap N */
    bool no_new_privileges;
    abx_oci_rlimit *rlimits;
    size_t n_rlimits;
    bool has_oom_score_adj;
    int oom_score_adj;
    char *apparmor_profile;
} abx_oci_process;

enum {
    ABX_OCI_CAP_BOUNDING,
    ABX_OCI_CAP_EFFECTIVE,
    ABX_OCI_CAP_INHERITABLE,
    ABX_OCI_CAP_PERMITTED,
    ABX_OCI_CAP_AMBIENT
};

typedef struct abx_oci_spec {
    char *oci_version;
    char *root_path; /* absolute: the bundle's root.path resolved against the bundle */
    bool root_readonly;
    abx_oci_process process;
    char *hostname, *domainname;
    abx_oci_mount *mounts;
    size_t n_mounts;
    abx_oci_hook *hooks[ABX_OCI_HOOK_KINDS];
    size_t n_hooks[ABX_OCI_HOOK_KINDS];
    abx_oci_namespace namespaces[ABX_OCI_NS_COUNT];
    size_t n_namespaces;
    abx_oci_idmap *uid_maps, *gid_maps;
    size_t n_uid_maps, n_gid_maps;
    abx_oci_device *devices;
    size_t n_devices;
    char **sysctl_keys, **sysctl_values;
    size_t n_sysctls;
    char **masked_paths, **readonly_paths; /* NULL-terminated */
    char *cgroups_path;
    unsigned long rootfs_propagation; /* MS_* | MS_REC; 0: rslave, as runc */
    abx_cgroup_resources resources;
    json_t *seccomp;     /* linux.seccomp, or NULL; owned */
    json_t *annotations; /* an object (empty when the config has none); owned */
} abx_oci_spec;

/* Reads config from the bundle directory's parsed config.json: fills
 * *spec (the caller frees it with abx__oci_spec_free, also on failure).
 * Returns 0, or -ABX_EINVAL naming the field that is wrong. */
int abx__oci_spec_parse(const json_t *config, const char *bundle, abx_oci_spec *spec, abx_error **err);
/* Reads a process object alone (abx-oci exec --process FILE). */
int abx__oci_process_parse(const json_t *process, abx_oci_process *out, abx_error **err);
/* The cgroup resources of an object (linux.resources; abx-oci update). */
int abx__oci_resources_parse(const json_t *resources, abx_cgroup_resources *out, abx_error **err);
void abx__oci_process_free(abx_oci_process *process);
void abx__oci_spec_free(abx_oci_spec *spec);
/* The namespace of a CLONE_NEW* flag in spec, or NULL when it has none. */
const abx_oci_namespace *abx__oci_spec_namespace(const abx_oci_spec *spec, int flag);
/* "SIGKILL", "KILL", "9": the signal's number, or -1. */
int abx__oci_signal_parse(const char *text);
/* A capability's name ("CAP_SYS_ADMIN") to its number, or -1. */
int abx__oci_cap_parse(const char *name);

#endif
