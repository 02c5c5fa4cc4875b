/* jail.h: starting a process tree in a new sandbox. */
#ifndef ABX_JAIL_H
#define ABX_JAIL_H

#include "abx/abx.h"
#include "cgroup.h"
#include <stdbool.h>
#include <sys/types.h>

/* When abx runs as root, each sandbox gets ABX_HOST_ID_COUNT host ids of
 * its own from the pool (uid_pool.h): root inside is the range's first id,
 * uid N inside is first + N. Unprivileged, the caller's own ids are the
 * only ones mapped. */
#define ABX_HOST_ID_COUNT 65536u

/* A volume for a sandbox (runtime/volume_mount.h makes its tree). */
typedef struct abx_jail_volume {
    int tree_fd;      /* a detached mount of its tree, not id-mapped yet: id-mapped here for the sandbox
                         (and closed: it is used once) */
    const char *path; /* where inside (a plain absolute path, lib/volume.h) */
    bool read_only;
} abx_jail_volume;

typedef struct abx_jail_config {
    const char *id; /* sandbox id; also the hostname */
    /* The sandbox's name on the host (its cgroups): one that does not tell
     * its id to other host users, who can read every process's cgroup in
     * /proc. NULL: the id. */
    const char *host_name;
    abx_limits limits;
    const char *const *argv; /* the command, resolved with the sandbox's PATH; NULL for a
                                persistent sandbox whose init serves abx__jail's control socket */
    char *const *envp;       /* the command's whole environment */
    const char *cwd;         /* inside the sandbox */
    bool as_root;            /* root inside, else user (uid 1000) */
    bool terminal;           /* fd 0 is a pseudo-terminal of the sandbox's own: its controlling terminal */
    /* Optional: called once the sandbox's namespaces exist (init_pid) and
     * before init builds anything; it may fill resolv (the sandbox's
     * /etc/resolv.conf, at most ABX_JAIL_RESOLV_MAX bytes). A failure ends
     * the start. abx run gives a sandbox its network here. */
    int (*before_go)(void *ctx, pid_t init_pid, char *resolv, size_t resolv_len, abx_error **err);
    void *before_go_ctx;
    /* A template's tree on the host (NULL: the host view): the sandbox's
     * root is an overlay over an id-mapped view of it. Needs root. */
    const char *template_root;
    bool template_host_view; /* over template_root, the host view's /usr and /etc: a snapshot of base */
    bool template_writable;  /* template_root is the root itself, written through: a
                                template build's step (no overlay, no /app or /home) */
    bool host_network;       /* no network namespace of its own: the host's network, as
                                `docker build` has it (template builds only) */
    bool root_caps;          /* root inside keeps abx__root_caps (privs.h): template sandboxes, builds */
    const int *stdio;        /* the command's fds 0, 1, 2 (the caller's, dup'ed); NULL:
                                the supervisor's own */
    bool durable; /* the writable layer is layer_fd, not a tmpfs: a detached ext4 mount (volume_mount.h),
                     id-mapped here for the sandbox; the fd stays the caller's. Needs root. */
    int layer_fd;
    abx_jail_volume *volumes; /* n_volumes (at most ABX_VOLUME_MOUNTS_MAX) mounted after the
                                 root is built; needs root. Their tree_fd are consumed (-1 after). */
    size_t n_volumes;
} abx_jail_config;

#define ABX_JAIL_RESOLV_MAX 255 /* its length travels in one byte */

typedef struct abx_jail {
    pid_t init_pid;  /* the sandbox's pid 1, our child; reaped by abx__jail_wait/destroy */
    int report_fd;   /* read end: setup and exec failures from inside */
    int control_fd;  /* persistent sandboxes: our end of init's control socket (init_proto.h) */
    int lifeline_fd; /* write end of the "go" pipe, held open for our whole life: init
                        sees it hang up if we die before its parent-death signal is armed */
    abx_cgroup cgroup;
    uid_t host_id_base; /* host id of root inside (0 when unprivileged: the caller's ids) */
    int uid_range_fd;   /* holds the sandbox's id range (uid_pool.c); closed after init is reaped */
    bool reaped;
    int init_status; /* wait status of init once reaped */
    int upper_sock;  /* until started: where init sends upper_fd */
    int upper_fd;    /* a persistent sandbox over a template: its overlay's upper directory (O_RDONLY,
                        opened by init before its pivot), what the sandbox wrote; -1 otherwise.
                        Closed by abx__jail_destroy */
} abx_jail;

/* Makes jail hold nothing (no process, every fd -1): abx__jail_destroy
 * may be called on it. */
void abx__jail_clear(abx_jail *jail);

/* Creates the sandbox and starts cfg->argv in it. Signals SIGCHLD, SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT must be blocked by the caller (the sandbox's
 * init waits for them with sigwaitinfo and forwards them to the command).
 * On success the caller owns *jail and must call abx__jail_destroy(). On
 * failure nothing is left behind. */
int abx__jail_start(const abx_jail_config *cfg, abx_jail *jail, abx_error **err);

/* Blocks until the command has been exec'd, or a persistent sandbox's init
 * serves its control socket (returns 0), or it failed to start
 * (returns -ABX_E*, with *exit_status set to 125, 126 or 127). */
int abx__jail_wait_started(abx_jail *jail, int *exit_status, abx_error **err);

/* Kills the whole sandbox (SIGKILL to its init, which takes its pid
 * namespace with it), reaps init, removes the cgroups. Idempotent. */
void abx__jail_destroy(abx_jail *jail);

/* An id-mapped clone of the tree at root (detached, recursive, nosuid,
 * nodev) for the user namespace of pid: files owned by host uid 0.. appear
 * as uid 0.. there. Returns its fd (the caller's) or -ABX_EJAIL. */
int abx__jail_idmapped_tree(const char *root, pid_t pid, abx_error **err);

/* Gives the sandbox's host id range back to the pool (abx__jail_destroy
 * does, after init is reaped). Idempotent. */
void abx__jail_release_ids(abx_jail *jail);

/* Encodes a wait status as a shell would: code, or 128+signal. */
int abx__jail_exit_code(int wait_status);

#endif
