/* epp_exec.c: the exec streams of one plugin process (EPP's exec.start,
 * exec.output, exec.exit).
 *
 * Owns: a table of at most EXECS_MAX records, each one exec's two output
 * rings (base/ring.h, the shim's own: the last RING_MAX bytes of each
 * stream, read by offset) and its end. The plugin's reader thread fills
 * it from notifications; callers read it (foreground streams, background
 * tasks) and wait on it. Records are made by whichever comes first: the
 * first notification or exec.start's answer. What a plugin may not do is a
 * protocol error: an event without exec_id, output after the exit, a second
 * exit, bad base64. Bounds: EXECS_MAX records, rings together at most
 * RINGS_TOTAL (past that a ring keeps its size and wraps sooner).
 */
#include "epp_exec.h"
#include "ring.h"
#include "b64.h"
#include "sysutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXECS_MAX 64
#define EXEC_ID_MAX 128
#define RING_MIN (64u << 10)
#define RING_MAX (1u << 20)
#define RINGS_TOTAL (32u << 20)

typedef struct exec_record {
    bool used;
    char exec_id[EXEC_ID_MAX];
    char tag[64];
    int pid;
    bool claimed;  /* exec.start answered (or the record came from it) */
    bool released; /* a foreground exec done with it */
    bool exited;
    int exit_code;
    bool lost; /* ended without exec.exit: the plugin went away */
    char why[160];
    abx_ring out, err;      /* base/ring.h: their pool is the table's */
    unsigned long long seq; /* age, for reuse */
} exec_record;

struct abx_epp_execs {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    exec_record rec[EXECS_MAX];
    size_t ring_pool; /* what the rings together may still grow by */
    unsigned long long seq;
};

abx_epp_execs *abx__epp_execs_new(void)
{
    abx_epp_execs *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->changed, &attr);
    pthread_condattr_destroy(&attr);
    x->ring_pool = RINGS_TOTAL;
    return x;
}

static void record_clear(exec_record *r)
{
    abx__ring_release(&r->out);
    abx__ring_release(&r->err);
    memset(r, 0, sizeof *r);
}

void abx__epp_execs_free(abx_epp_execs *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < EXECS_MAX; i++)
        record_clear(&x->rec[i]);
    pthread_cond_destroy(&x->changed);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* ---- rings ----------------------------------------------------------------------- */

/* The bytes from *offset on (moved up to the oldest kept); *offset becomes
 * the end. NULL without memory. */
static char *ring_read(const abx_ring *g, unsigned long long *offset, size_t *len, bool *truncated)
{
    uint64_t from = *offset;
    uint64_t avail = g->total > from ? g->total - from : 0;
    char *out = malloc((avail < g->cap ? (size_t)avail : g->cap) + 1);
    if (!out)
        return NULL;
    *len = abx__ring_read(g, &from, out, g->cap, truncated);
    out[*len] = '\0';
    *offset = from;
    return out;
}

/* ---- the table ---------------------------------------------------------------------- */

static exec_record *find(abx_epp_execs *x, const char *exec_id, int pid)
{
    for (size_t i = 0; i < EXECS_MAX; i++) {
        exec_record *r = &x->rec[i];
        if (r->used && (exec_id ? strcmp(r->exec_id, exec_id) == 0 : (pid > 0 && r->pid == pid)))
            return r;
    }
    return NULL;
}

/* A free record for exec_id, else the oldest one a caller is done with,
 * else the oldest ended one; NULL when every record is a running exec. */
static exec_record *make(abx_epp_execs *x, const char *exec_id)
{
    exec_record *pick = NULL;
    for (size_t i = 0; i < EXECS_MAX && !pick; i++)
        if (!x->rec[i].used)
            pick = &x->rec[i];
    for (int pass = 0; pass < 2 && !pick; pass++)
        for (size_t i = 0; i < EXECS_MAX; i++) {
            exec_record *r = &x->rec[i];
            bool done = pass == 0 ? r->released : (r->exited || r->lost);
            if (done && (!pick || r->seq < pick->seq))
                pick = r;
        }
    if (!pick)
        return NULL;
    record_clear(pick);
    abx__ring_init(&pick->out, RING_MIN, RING_MAX, &x->ring_pool);
    abx__ring_init(&pick->err, RING_MIN, RING_MAX, &x->ring_pool);
    pick->used = true;
    pick->seq = ++x->seq;
    snprintf(pick->exec_id, sizeof pick->exec_id, "%s", exec_id);
    return pick;
}

/* A signal given by name ("SIGKILL", "KILL") or number; 0 when unknown. */
static int signal_number(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v) > 0 && json_integer_value(v) < 65 ? (int)json_integer_value(v) : 0;
    const char *name = json_string_value(v);
    if (!name)
        return 0;
    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (int n = 1; n < 65; n++)
        if (sigabbrev_np(n) && strcmp(sigabbrev_np(n), name) == 0)
            return n;
    return 0;
}

static int protocol_error(char *why, size_t why_len, const char *what, const char *exec_id)
{
    snprintf(why, why_len, "%s (exec_id '%.64s')", what, exec_id ? exec_id : "");
    return -1;
}

/* exec.output or exec.exit on record r (locked). */
static int apply(exec_record *r, const char *method, json_t *params, char *why, size_t why_len)
{
    if (r->exited)
        return protocol_error(why, why_len,
                              strcmp(method, "exec.exit") == 0 ? "a second exec.exit for one exec"
                                                               : "exec.output after the exec's exec.exit",
                              r->exec_id);
    if (strcmp(method, "exec.exit") == 0) {
        int sig = signal_number(json_object_get(params, "signal"));
        json_t *code = json_object_get(params, "exit_code");
        r->exited = true;
        r->exit_code = sig ? 128 + sig : json_is_integer(code) ? (int)json_integer_value(code) : -1;
        if (json_is_string(json_object_get(params, "error")) && !json_is_integer(code) && !sig)
            r->exit_code = 127; /* it could not be run */
        return 0;
    }
    const char *stream = json_string_value(json_object_get(params, "stream"));
    const char *b64 = json_string_value(json_object_get(params, "data_b64"));
    bool is_out = stream && strcmp(stream, "stdout") == 0, is_err = stream && strcmp(stream, "stderr") == 0;
    if ((!is_out && !is_err) || !b64)
        return protocol_error(why, why_len, "exec.output without stream \"stdout\"|\"stderr\" and data_b64",
                              r->exec_id);
    char *data = NULL;
    long n = abx__b64_decode(b64, &data);
    if (n < 0)
        return protocol_error(why, why_len, "exec.output with data_b64 that is not base64", r->exec_id);
    abx__ring_append(is_out ? &r->out : &r->err, data, (size_t)n);
    free(data);
    return 0;
}

int abx__epp_execs_notify(abx_epp_execs *x, const char *method, json_t *params, char *why, size_t why_len)
{
    const char *exec_id = json_string_value(json_object_get(params, "exec_id"));
    if (!exec_id || !*exec_id || strlen(exec_id) >= EXEC_ID_MAX)
        return protocol_error(why, why_len, "an exec event without a usable exec_id", NULL);
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, exec_id, 0);
    if (!r)
        r = make(x, exec_id);
    int rc = r ? apply(r, method, params, why, why_len) : 0; /* no room: an exec nobody can read */
    pthread_cond_broadcast(&x->changed);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

void abx__epp_execs_lost(abx_epp_execs *x, const char *why)
{
    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < EXECS_MAX; i++) {
        exec_record *r = &x->rec[i];
        if (r->used && !r->exited && !r->lost) {
            r->lost = true;
            snprintf(r->why, sizeof r->why, "%s", why);
        }
    }
    pthread_cond_broadcast(&x->changed);
    pthread_mutex_unlock(&x->mu);
}

void abx__epp_execs_end(abx_epp_execs *x, const char *exec_id, const char *why)
{
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, exec_id, 0);
    if (r && !r->exited && !r->lost) {
        r->lost = true;
        snprintf(r->why, sizeof r->why, "%s", why);
    }
    pthread_cond_broadcast(&x->changed);
    pthread_mutex_unlock(&x->mu);
}

int abx__epp_execs_claim(abx_epp_execs *x, const char *exec_id, int pid, const char *tag)
{
    if (!exec_id || !*exec_id || strlen(exec_id) >= EXEC_ID_MAX)
        return -ABX_EPROVIDER;
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, exec_id, 0);
    if (!r)
        r = make(x, exec_id);
    if (r) {
        r->claimed = true;
        r->pid = pid > 0 ? pid : 0;
        snprintf(r->tag, sizeof r->tag, "%s", tag ? tag : "");
    }
    pthread_mutex_unlock(&x->mu);
    return r ? 0 : -ABX_ELIMIT;
}

void abx__epp_execs_release(abx_epp_execs *x, const char *exec_id)
{
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, exec_id, 0);
    if (r)
        r->released = true;
    pthread_mutex_unlock(&x->mu);
}

void abx__epp_execs_tag(abx_epp_execs *x, int pid, char *buf, size_t len)
{
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, NULL, pid);
    snprintf(buf, len, "%s", r ? r->tag : "");
    pthread_mutex_unlock(&x->mu);
}

int abx__epp_execs_read(abx_epp_execs *x, const char *exec_id, int pid, unsigned long long stdout_offset,
                        unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                        char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    struct timespec until;
    abx__deadline_after(&until, wait_ms);
    pthread_mutex_lock(&x->mu);
    exec_record *r = find(x, exec_id, pid);
    /* wait for new output or the end, but no longer than asked */
    while (r && wait_ms && !r->exited && !r->lost && r->out.total <= stdout_offset &&
           r->err.total <= stderr_offset) {
        if (pthread_cond_timedwait(&x->changed, &x->mu, &until) != 0)
            break;
        r = find(x, exec_id, pid); /* it may have been reused meanwhile */
    }
    if (!r) {
        pthread_mutex_unlock(&x->mu);
        return -ABX_ENOTASK;
    }
    int rc = 0;
    out->pid = r->pid;
    out->running = !r->exited && !r->lost;
    out->exit_code = r->exited ? r->exit_code : 0;
    out->stdout_offset = stdout_offset;
    out->stderr_offset = stderr_offset;
    out->stdout_data = ring_read(&r->out, &out->stdout_offset, &out->stdout_len, &out->truncated);
    out->stderr_data = ring_read(&r->err, &out->stderr_offset, &out->stderr_len, &out->truncated);
    if (!out->stdout_data || !out->stderr_data)
        rc = -ABX_ENOMEM;
    else if (r->lost) {
        snprintf(why, why_len, "%s", r->why);
        rc = -ABX_EPROVIDER;
    }
    pthread_mutex_unlock(&x->mu);
    if (rc < 0 && rc != -ABX_EPROVIDER)
        abx_process_output_clear(out);
    return rc;
}
