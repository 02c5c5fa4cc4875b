/* cgroup.h: per-sandbox resource limits through cgroups (v1 and v2). */
#ifndef ABX_CGROUP_H
#define ABX_CGROUP_H

#include "abx/abx.h"
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ABX_CGROUP_MAX_DIRS 4
#define ABX_CGROUP_MAX_EXTRA 6

typedef struct abx_cgroup {
    int version;                         /* 1, 2, or 0 when nothing was created */
    int ndirs;                           /* leaf directories created */
    char dirs[ABX_CGROUP_MAX_DIRS][256]; /* absolute paths of those leaves */
    bool freezer;                        /* v1: dirs[3] is a freezer leaf */
    /* v1, cgroups made at a path (abx__cgroup_create_path): the other
     * controllers' leaves an OCI container is placed in too (cpuset,
     * devices, cpuacct, blkio, name=systemd), where the host has them */
    int nextra;
    char extra[ABX_CGROUP_MAX_EXTRA][256];
    bool keep_dirs; /* joined, not made: destroy leaves the directories (another owner's) */
} abx_cgroup;

/* An OCI container's linux.resources (oci_spec.c reads them). Unset
 * fields are ABX_CGROUP_UNSET; -1 means "no limit" where the OCI spec
 * says so (memory, swap, quota, pids). */
#define ABX_CGROUP_UNSET INT64_MIN
#define ABX_CGROUP_MAX_DEVICE_RULES 256
typedef struct abx_cgroup_device_rule {
    bool allow;
    char type;            /* 'a', 'c' or 'b' */
    int64_t major, minor; /* -1: any */
    char access[4];       /* of "rwm" */
} abx_cgroup_device_rule;
typedef struct abx_cgroup_resources {
    int64_t memory_limit, memory_swap, memory_reservation;
    int64_t cpu_shares, cpu_quota, cpu_period;
    char cpuset_cpus[128], cpuset_mems[128]; /* "" unset */
    int64_t pids_limit;
    abx_cgroup_device_rule devices[ABX_CGROUP_MAX_DEVICE_RULES];
    int n_devices;
} abx_cgroup_resources;

/* Creates the sandbox's cgroup(s) named after id and writes the limits
 * (freezer: a v1 freezer leaf too, where the host has one). On failure
 * nothing is left behind. The caller owns *cg and must call
 * abx__cgroup_destroy(). */
int abx__cgroup_create(abx_cgroup *cg, const char *id, const abx_limits *lim, bool freezer, abx_error **err);
/* An OCI container's cgroups at path ("/a/b", below each hierarchy's
 * root; made with its parents where missing, v1 cpuset levels given their
 * parent's cpus and mems): memory, pids, cpu and freezer in dirs[], the
 * other v1 controllers in extra[]. An existing leaf is joined, and kept by
 * destroy. On failure nothing made is left behind. */
int abx__cgroup_create_path(abx_cgroup *cg, const char *path, abx_error **err);
/* The same cgroups, for a later command (pause, kill --all, delete): fills
 * *cg from path without creating anything. */
void abx__cgroup_open_path(abx_cgroup *cg, const char *path);
/* Writes the resources that are set (v1 or v2 knobs; device rules on v1,
 * where the devices controller is). */
int abx__cgroup_apply(const abx_cgroup *cg, const abx_cgroup_resources *res, abx_error **err);
/* Every resource unset. */
void abx__cgroup_resources_init(abx_cgroup_resources *res);
/* The pids in the cgroup (its first leaf's cgroup.procs), at most cap of
 * them: how many were found. */
size_t abx__cgroup_members(const abx_cgroup *cg, pid_t *out, size_t cap);
/* Signals every member of the cgroup (kill --all), each pinned with a
 * pidfd and checked to be a member still. */
void abx__cgroup_signal_all(const abx_cgroup *cg, int sig);
/* Whether the cgroup's freezer holds it frozen now. */
bool abx__cgroup_frozen(const abx_cgroup *cg);
/* Moves pid into every created cgroup. */
int abx__cgroup_attach(const abx_cgroup *cg, pid_t pid, abx_error **err);
/* SIGKILLs whatever is still inside and removes the directories. Idempotent. */
void abx__cgroup_destroy(abx_cgroup *cg);
/* True when the memory controller's OOM killer killed a process in cg
 * (v1 memory.oom_control, v2 memory.events: oom_kill > 0). */
bool abx__cgroup_oom_killed(const abx_cgroup *cg);
/* How many processes the memory limit has killed in the cgroup so far. */
unsigned long abx__cgroup_oom_kills(const abx_cgroup *cg);
/* Removes the cgroups of sandboxes whose supervisor died without cleaning
 * up: empty leaves created at least grace_s seconds ago. */
void abx__cgroup_sweep_stale(unsigned grace_s);
/* Kills what is left in the cgroups named name (a sandbox's host name,
 * abx_jail_config.host_name) and removes them. */
void abx__cgroup_reap_name(const char *name);
/* Freezes (stops every process, memory kept) or thaws the cgroup, and
 * waits until it is so: v2 cgroup.freeze, v1 the freezer leaf. E8004
 * where the host has no freezer. */
int abx__cgroup_freeze(const abx_cgroup *cg, bool freeze, abx_error **err);
/* Gives the cgroup the smallest CPU weight (background: v1 cpu.shares 2,
 * v2 cpu.weight 1) or the default one back (1024, 100). */
int abx__cgroup_set_background(const abx_cgroup *cg, bool background, abx_error **err);
/* Thaws the cgroup without waiting (a frozen process cannot die of
 * SIGKILL until it is thawed). No-op without a freezer. */
void abx__cgroup_thaw_now(const abx_cgroup *cg);
/* CPU time used by the cgroup's processes (v2 cpu.stat; v1: its current
 * members' utime + stime and their waited-for children's) and its memory
 * in use. -1 with no cgroup. */
int abx__cgroup_usage(const abx_cgroup *cg, unsigned long long *cpu_us, unsigned long long *mem_bytes);
/* What the cgroup counts, for metrics: 0 where the host does not say. */
typedef struct abx_cgroup_stats {
    unsigned long long cpu_us;                    /* as abx__cgroup_usage */
    unsigned long long mem_bytes, mem_peak_bytes; /* v2 memory.current/.peak; v1 usage/max_usage */
    unsigned long long pids;                      /* pids.current */
    unsigned long oom_kills;
} abx_cgroup_stats;
/* A descriptor that wakes poll() (for *events) when the sandbox's memory
 * cgroup runs out of memory: v1 an eventfd registered on
 * memory.oom_control (POLLIN), v2 memory.events itself (POLLPRI); -1
 * without a memory cgroup. The caller closes it, and calls
 * abx__cgroup_oom_watch_ack after each wake. */
int abx__cgroup_oom_watch(const abx_cgroup *cg, short *events);
void abx__cgroup_oom_watch_ack(const abx_cgroup *cg, int fd);
/* -1 with no cgroup. */
int abx__cgroup_stats(const abx_cgroup *cg, abx_cgroup_stats *out);
/* Which version this host offers to abx: 1, 2, or a negative abx code. */
int abx__cgroup_detect(abx_error **err);
/* From /proc/self/cgroup's text, the cgroup v2 parent abx uses for a user
 * who is not root: /sys/fs/cgroup/<...>/user@UID.service/abx.slice (the
 * subtree systemd delegates to the user). 0, or -1 when there is none. */
int abx__cgroup_user_parent(const char *self_cgroup, unsigned uid, char *out, size_t len);

#endif
