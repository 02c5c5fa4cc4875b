/* shim.h: the per-sandbox supervisor ("shim") and what its parts share.
 *
 * A shim is one host process per persistent sandbox, detached from whoever
 * created it. It owns the sandbox's init (jail.c), cgroups, lifetime,
 * processes and their bounded output, and serves the envd-compatible data
 * plane on $state_dir/envd.sock. Its parts:
 *   shim.c        start-up, the event loop (init messages, output pipes,
 *                 lifetime timer, signals) and teardown
 *   shim_proc.c   the process table: start, signal, stdin, output buffers
 *   shim_http.c   the HTTP server: routing, auth, Connect RPC, streaming
 *   shim_files.c  filesystem operations resolved inside the sandbox root
 *
 * Locking: one mutex (shim.mu) guards the process table, pending spawn
 * replies, end_at and `ending`; one condition variable (shim.cv) is
 * broadcast on every change. HTTP threads wait on it; the event loop
 * (main thread) changes state and broadcasts.
 */
#ifndef ABX_SHIM_H
#define ABX_SHIM_H

#include "abx/abx.h"
#include "jail.h"
#include "net_denials.h"
#include "volume_mount.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "bounds.h"
#include "ring.h"

#define ABX_OUTBUF_CAP ABX_BOUND_RING /* bytes kept per stream */
#define ABX_SHIM_MAX_PROCS 1024
#define ABX_SHIM_SAVED_OUTPUTS 32 /* saved whole outputs kept in a sandbox's /tmp/.abx-output */
#define ABX_ENVD_VERSION "0.6.4"
#define ABX_SHIM_MAX_STREAMS 8

/* Bytes a process wrote to one stream: the last ABX_OUTBUF_CAP of them,
 * in a ring of base/ring.h whose pool is the sandbox's (shim.ring_pool). */
typedef struct shim_proc {
    int pid; /* inside the sandbox */
    char tag[128];
    json_t *config;     /* {cmd, args, envs, cwd} as started; owned */
    int stdin_fd;       /* our write end, -1 once closed */
    int out_fd, err_fd; /* our read ends, -1 at EOF */
    abx_ring out, err;
    bool exited;
    int wait_status;
    uint64_t exited_at_ms;
    /* Streams (Start/Connect) reading this process: their offsets. While
     * one lags by nearly a whole buffer, the event loop stops reading the
     * pipe (backpressure), so a streamed command loses no output. */
    const uint64_t *stream_out[ABX_SHIM_MAX_STREAMS];
    const uint64_t *stream_err[ABX_SHIM_MAX_STREAMS];
    int nstreams;
    bool paused;          /* the event loop skipped a pipe for a lagging stream */
    bool awaiting_stream; /* started for a stream that has not attached yet: its output
                             is held from the first byte as if it had (nothing wraps away) */
    /* Saving whole output (shim_proc.c): a stream that passes save_after
     * bytes is also written to /tmp/.abx-output/<pid>.stdout|.stderr in the
     * sandbox, so that a caller showing only its head and tail can say
     * where the rest is. */
    unsigned uid;
    int pty_master;       /* a pty process: our side of its terminal (output, input, resize); else -1 */
    uint64_t save_after;  /* 0: never */
    int save_fd[2];       /* stdout, stderr: -1 until saving starts and after it ends */
    uint64_t saved[2];    /* bytes in the file */
    uint64_t save_cap[2]; /* at most this many: a quarter of the free space when saving began */
    bool save_ended[2];   /* stopped: failed, or the file reached ABX_BOUND_SAVED_OUTPUT */
} shim_proc;

typedef struct shim_reply {
    unsigned seq; /* 0: slot free */
    bool done;
    shim_proc *pending; /* the process waiting for "spawned"; the event loop takes it */
    json_t *msg;        /* init's reply; owned until taken */
} shim_reply;

typedef struct abx_watchers abx_watchers;

/* The sandbox's use, sampled by the event loop for GET /abx/history: an
 * hour of it, one sample every SHIM_HISTORY_EVERY_S. */
#define SHIM_HISTORY_EVERY_S 30
#define SHIM_HISTORY (3600 / SHIM_HISTORY_EVERY_S)
typedef struct shim_sample {
    long long t; /* unix seconds */
    unsigned long long cpu_us, mem_bytes;
} shim_sample;

typedef struct shim {
    char id[32];
    char host_name[32]; /* its cgroups' name on the host (config "host_name", else the id) */
    char state_dir[512];
    char token[80];
    char template_name[64];
    char template_root[512]; /* an imported template's tree on the host; "" for a built-in one */
    abx_limits limits;
    json_t *metadata;           /* {str: str} */
    json_t *envs;               /* {str: str} set at create */
    json_t *template_env;       /* {str: str}: the template's ENV, under envs; may be NULL */
    char template_workdir[256]; /* the template's WORKDIR: where commands start by default; "" */
    unsigned default_uid;       /* who runs a request that names no user: the template's USER, else user */
    unsigned timeout_s;         /* the last lifetime asked for */
    time_t started_at;
    time_t end_at;
    abx_jail jail;
    int rootfd; /* O_PATH of the sandbox's "/" (via /proc/<init>/root) */
    int timerfd, wakefd, sigfd, lockfd;
    int listen_fd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    shim_proc *procs[ABX_SHIM_MAX_PROCS];
    int nprocs;
    size_t ring_pool; /* ABX_BOUND_SHIM_RINGS less what the rings hold (lock: mu) */
    char saved_files[ABX_SHIM_SAVED_OUTPUTS]
                    [48]; /* the newest saved outputs (lock: mu); older ones are removed */
    unsigned
        saved_uids[ABX_SHIM_SAVED_OUTPUTS]; /* whose each one is: it is removed with that user's rights */
    unsigned saved_next;
    shim_reply replies[64];
    unsigned next_seq;
    bool ending;
    bool paused;                       /* frozen (pause): processes stopped, memory and files kept */
    bool pause_on_timeout;             /* the timeout pauses instead of ending (lock: mu) */
    json_t *net_policy;                /* the network policy's normal form (netpolicy.h; lock: mu) */
    struct abx_net *net;               /* its network when it has one (net.h; lock: mu) */
    unsigned long long cpu_us_high;    /* the most CPU time /abx/stats reported (lock: mu) */
    shim_sample history[SHIM_HISTORY]; /* a ring, oldest at history_head once full (lock: mu) */
    unsigned history_n, history_head;
    time_t history_next;          /* when the event loop samples next */
    unsigned long oom_kills_seen; /* its cgroup's OOM kills already in the event log (lock: mu) */
    int oom_fd;                   /* wakes the event loop on an OOM (abx__cgroup_oom_watch); -1 */
    abx_net_denial last_denial;   /* the last denied event's destination (the event loop's) */
    time_t last_denial_at;
    short oom_events;
    bool standby;                      /* started ahead for a warm pool: nobody's until claimed (lock: mu) */
    bool spawned;                      /* init was asked to start a process, ever (lock: mu) */
    int owner_pidfd;                   /* the pool's process while standby: its end ends the sandbox; -1 */
    struct abx_watchers *watchers;     /* CreateWatcher's (shim_watch.c), made at the first (lock: mu) */
    void *httpd;                       /* abx_http_listener * (base/http_listener.h) */
    char *control_buf;                 /* the event loop's receive buffer for init's messages */
    struct code_context *contexts[16]; /* code-interpreter kernels (shim_code.c) */
    int ncontexts;
    pthread_mutex_t code_mu; /* serialises executions and context changes */
                             /* abx-oci's in-container agent (run.abx.envd=true): the data plane of
                              * an OCI container, not of a sandbox of its own. Its init joins the
                              * container's (attach_pid's) namespaces and cgroup; it listens on
                              * listen_addr ("IP:PORT") in the container's network namespace; its
                              * lifetime is the container's. 0 / "" for a sandbox's shim. */
    pid_t attach_pid;
    char attach_cgroup[256];
    char listen_addr[64];
    int code_listen_fd; /* the agent's code interpreter (port 49999) when the image has Python; -1 */
    void *httpd_code;
    bool template_host_view; /* template_config "host_view": a snapshot of a sandbox from base */
    bool durable; /* config "persistent": the writable layer is layer.ext4 in the state directory, and
                     the sandbox ends only by a kill: any other end leaves it at rest (paused, files kept) */
    bool pause_keeps_memory; /* a durable sandbox's pause freezes it (true) or puts it at rest (false) */
    bool killed;             /* a kill asked for the end: the state goes, durable or not */
    bool keep_state_on_fail; /* a durable sandbox started again: a failed start leaves its files */
    unsigned boots;          /* starts of a durable sandbox, this one included */
    const char
        *resumed_from; /* "memory" after a resume in this shim, "files" after a start from its layer, "" */
    json_t *volumes; /* the create's [{name, dir, path, read_only, image}] (lib/local/volume_store.h); NULL */
    abx_volume_hold holds[ABX_VOLUME_MOUNTS_MAX]; /* each held for the shim's whole life */
    size_t n_holds;
} shim;

/* shim.c */
int abx__shim_main(int argc, char **argv);
/* Sets a new lifetime of seconds from now; rewrites the metadata. */
int abx__shim_set_timeout(shim *sh, unsigned seconds);
/* Pauses (freezes) or resumes (thaws) the sandbox. A paused sandbox is
 * kept 24 h at most; resume gives it timeout seconds (0: its last). -ABX_E*
 * (E8001 when it already is so: the caller tells which). */
int abx__shim_pause(shim *sh, bool pause, unsigned timeout, bool *rest_when_answered, abx_error **err);
/* A pause that puts a durable sandbox at rest ends the shim: at once, or,
 * when rest_when_answered is given (a request asked), it is set and the
 * caller calls abx__shim_request_rest once its answer has been sent. */
void abx__shim_request_rest(shim *sh);
/* Hands a standby sandbox to its first user: a fresh lifetime of timeout
 * seconds from now, the create's envs and metadata (string maps; the shim
 * takes its own references). E8001 when it is not standby (claimed once). */
int abx__shim_claim(shim *sh, unsigned timeout, bool pause_on_timeout, json_t *envs, json_t *metadata,
                    const char *token, abx_error **err);
/* Applies a new network policy (normal form): gives the sandbox its
 * network the first time it is not "none". */
int abx__shim_set_network(shim *sh, json_t *policy, abx_error **err);
/* Asks the event loop to end the sandbox. */
void abx__shim_request_end(shim *sh);
/* Records the sandbox's filesystem into dest/rootfs (dest: a template
 * store's staging directory, checked to be one): its processes frozen (and
 * its filesystems synced) for the walk, unless it is paused already; *out:
 * {paused_ms, linked, copied, copied_bytes, entries}. */
int abx__shim_snapshot(shim *sh, const char *dest, json_t **out, abx_error **err);
/* The metadata document (what `abx info` shows); caller owns it. Lock held. */
json_t *abx__shim_info_locked(shim *sh);
uint64_t abx__shim_now_ms(void);

/* shim_proc.c (all but the *_locked functions take the lock themselves) */
typedef struct shim_start_request {
    const char *cmd;
    json_t *args;            /* array of strings, may be NULL */
    json_t *envs;            /* {str: str}, may be NULL */
    const char *cwd;         /* may be NULL: the template's WORKDIR, else default_cwd, else the user's home */
    const char *default_cwd; /* may be NULL */
    const char *tag;         /* may be NULL */
    unsigned uid;            /* 0 or 1000 */
    bool stdin_open;
    bool streamed;       /* a stream will attach (process Start): hold output until it does */
    uint64_t save_after; /* 0, or save each stream whole once it passes this many bytes */
    bool pty;            /* a pseudo-terminal of rows x cols as its stdin, stdout and stderr */
    unsigned rows, cols;
} shim_start_request;
/* The sandbox path of pid's saved stream (err_stream: stderr). */
void abx__shim_saved_path(int pid, bool err_stream, char *out, size_t len);
/* Starts a process; returns its pid (>0) or -ABX_E* with *err set. */
int abx__shim_proc_start(shim *sh, const shim_start_request *req, abx_error **err);
/* The process by pid (or by tag when pid <= 0 and tag is non-NULL); lock held. */
shim_proc *abx__shim_proc_find_locked(shim *sh, int pid, const char *tag);
int abx__shim_proc_signal(shim *sh, int pid, int sig);
/* Writes bytes to the process's stdin; -ABX_E* if closed or unknown. */
int abx__shim_proc_write_stdin(shim *sh, int pid, const void *buf, size_t len);
int abx__shim_proc_close_stdin(shim *sh, int pid);
/* A pty process's terminal size; -ABX_E* when it has no pty or is gone. */
int abx__shim_proc_resize(shim *sh, int pid, unsigned rows, unsigned cols);
/* True when the process has exited and its output is complete (pipes at
 * EOF, or a short grace after exit for descendants holding them). Lock held. */
bool abx__shim_proc_finished_locked(const shim_proc *p);
/* E2B-style end fields for a finished process. */
void abx__shim_proc_end_fields(const shim_proc *p, int *exit_code, bool *exited, char *status, size_t len);
void abx__shim_proc_free(shim_proc *p);
/* Registers (or unregisters) a stream's offsets with process pid; the first
 * one ends awaiting_stream. Lock held. */
bool abx__shim_stream_attach_locked(shim *sh, int pid, const uint64_t *out_off, const uint64_t *err_off);
void abx__shim_stream_detach_locked(shim *sh, int pid, const uint64_t *out_off);
/* How many bytes the event loop may read from p's stream now without
 * overwriting what a stream has not sent yet (0: paused). Lock held. */
size_t abx__shim_proc_read_room_locked(shim_proc *p, bool err_stream);
/* Wakes the event loop (a stream caught up). */
void abx__shim_wake(shim *sh);
/* An event of this sandbox in the host's log (runtime/event_log.c):
 * type, its id and tenant, and detail's members (taken; may be NULL). */
void abx__shim_event(shim *sh, const char *type, json_t *detail);
/* Event loop helpers: handle a message from init; read one output fd. */
void abx__shim_on_init_message(shim *sh, json_t *msg);
/* Kills every process in the sandbox but its init and waits until they
 * are reaped (a claimed standby starts with nothing of what ran before). */
int abx__shim_kill_all(shim *sh, abx_error **err);
void abx__shim_on_output(shim *sh, int fd);

/* shim_http.c */
int abx__shim_http_start(shim *sh, abx_error **err);
void abx__shim_http_stop(shim *sh);

#endif
