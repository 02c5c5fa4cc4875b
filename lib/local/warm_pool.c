/* warm_pool.c: sandboxes started ahead for a long-lived client (warm_pool.h).
 *
 * Owns: the standby handles, the shape they are kept in, and the one
 * thread that starts them (in batches: the missing ones at once, once the
 * creates have paused, or at once when the pool runs low), recycles old
 * ones (a standby sandbox lives 900 s: it is replaced well before) and ends
 * them all when the pool is freed. Starting and ending happen outside the
 * lock.
 */
#include "warm_pool.h"
#include "sysutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RECYCLE_AFTER_NS (600ull * 1000000000ull) /* standby sandboxes live 900 s */
#define IDLE_WAKE_S 10
#define BACKOFF_MAX_S 30
#define QUIET_NS (100ull * 1000000ull) /* creates have paused: no take for this long */

typedef struct warm_item {
    abx_sandbox *sandbox;
    abx_warm_shape shape;
    unsigned long long made_ns;
} warm_item;

struct abx_warm_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    pthread_t thread;
    unsigned want;
    bool stopping;
    abx_warm_shape shape; /* what creates ask for: the last one's */
    warm_item items[ABX_WARM_POOL_MAX];
    size_t count;
    unsigned failures;               /* in a row: the thread waits longer after each */
    unsigned long long last_take_ns; /* 0: none yet */
    abx_warm_make_fn make;
    abx_warm_kill_fn kill;
};

static bool same_shape(const abx_warm_shape *a, const abx_warm_shape *b)
{
    return strcmp(a->template_id, b->template_id) == 0 && a->cpu_count == b->cpu_count &&
           a->memory_mb == b->memory_mb;
}

static void wait_seconds_locked(abx_warm_pool *p, unsigned seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += seconds;
    pthread_cond_timedwait(&p->cv, &p->mu, &until);
}

/* Removes and returns an item that no longer fits (another shape, too old). Lock held. */
static abx_sandbox *take_stale_locked(abx_warm_pool *p)
{
    unsigned long long now = abx__now_ns();
    for (size_t i = 0; i < p->count; i++) {
        if (same_shape(&p->items[i].shape, &p->shape) && now - p->items[i].made_ns < RECYCLE_AFTER_NS)
            continue;
        abx_sandbox *s = p->items[i].sandbox;
        p->items[i] = p->items[--p->count];
        return s;
    }
    return NULL;
}

/* One start of a batch: the shape to make, what came of it. */
typedef struct warm_start {
    abx_warm_pool *pool;
    abx_warm_shape shape;
    abx_sandbox *made;
    int rc;
    pthread_t thread;
    bool threaded;
} warm_start;

static void *start_main(void *arg)
{
    warm_start *w = arg;
    w->rc = w->pool->make(&w->shape, &w->made);
    return NULL;
}

/* Starts n sandboxes at once, outside the lock: their cgroup attaches then
 * share one grace period of the kernel's instead of waiting for one each,
 * and the sandboxes in use are slowed once per batch. Returns how many failed. */
static unsigned start_batch(abx_warm_pool *p, const abx_warm_shape *shape, unsigned n)
{
    warm_start batch[ABX_WARM_POOL_MAX];
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < n; i++) {
        batch[i] = (warm_start){.pool = p, .shape = *shape, .rc = -1};
        batch[i].threaded = i > 0 && pthread_create(&batch[i].thread, NULL, start_main, &batch[i]) == 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    start_main(&batch[0]);
    unsigned failed = 0;
    for (unsigned i = 0; i < n; i++) {
        if (batch[i].threaded)
            pthread_join(batch[i].thread, NULL);
        if (batch[i].rc < 0) {
            failed++;
            continue;
        }
        pthread_mutex_lock(&p->mu);
        bool keep = !p->stopping && p->count < ABX_WARM_POOL_MAX;
        if (keep)
            p->items[p->count++] =
                (warm_item){.sandbox = batch[i].made, .shape = *shape, .made_ns = abx__now_ns()};
        pthread_mutex_unlock(&p->mu);
        if (!keep)
            p->kill(batch[i].made);
    }
    return failed;
}

unsigned abx__warm_refill_count(unsigned want, size_t count, unsigned long long since_take_ns)
{
    if (count >= want)
        return 0;
    if (count <= want / 4 || since_take_ns >= QUIET_NS)
        return want - (unsigned)count;
    return 0;
}

static unsigned to_start_locked(const abx_warm_pool *p)
{
    unsigned long long since = p->last_take_ns ? abx__now_ns() - p->last_take_ns : QUIET_NS;
    return abx__warm_refill_count(p->want, p->count, since);
}

/* Until something may change: a take, a pause in the creates (the pool is
 * short), or the periodic look at stale ones. Lock held. */
static void wait_for_change_locked(abx_warm_pool *p)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    unsigned long long wait_ns = (unsigned long long)IDLE_WAKE_S * 1000000000ull;
    if (p->count < p->want && p->last_take_ns) {
        unsigned long long since = abx__now_ns() - p->last_take_ns;
        wait_ns = since < QUIET_NS ? QUIET_NS - since : 1000000ull;
    }
    unsigned long long ns = (unsigned long long)until.tv_nsec + wait_ns;
    until.tv_sec += (time_t)(ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    pthread_cond_timedwait(&p->cv, &p->mu, &until);
}

static void *pool_main(void *arg)
{
    abx_warm_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        abx_sandbox *stale = take_stale_locked(p);
        if (stale) {
            pthread_mutex_unlock(&p->mu);
            p->kill(stale);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        unsigned n = to_start_locked(p);
        if (n == 0) {
            wait_for_change_locked(p);
            continue;
        }
        abx_warm_shape shape = p->shape;
        pthread_mutex_unlock(&p->mu);
        unsigned failed = start_batch(p, &shape, n);
        pthread_mutex_lock(&p->mu);
        p->failures = failed ? p->failures + 1 : 0;
        if (failed)
            wait_seconds_locked(p, p->failures < BACKOFF_MAX_S ? p->failures : BACKOFF_MAX_S);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

abx_warm_pool *abx__warm_pool_new(unsigned want, const abx_warm_shape *shape, abx_warm_make_fn make,
                                  abx_warm_kill_fn kill)
{
    if (want < 1 || want > ABX_WARM_POOL_MAX)
        return NULL;
    abx_warm_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->want = want;
    p->make = make;
    p->kill = kill;
    p->shape = *shape;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* the thread takes no signal: they stay the application's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, pool_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    return p;
}

void abx__warm_pool_free(abx_warm_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    for (size_t i = 0; i < p->count; i++)
        p->kill(p->items[i].sandbox);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

abx_sandbox *abx__warm_pool_take(abx_warm_pool *p, const abx_warm_shape *shape)
{
    abx_sandbox *s = NULL;
    pthread_mutex_lock(&p->mu);
    p->shape = *shape;
    p->last_take_ns = abx__now_ns();
    for (size_t i = 0; i < p->count && !s; i++) {
        if (!same_shape(&p->items[i].shape, shape))
            continue;
        s = p->items[i].sandbox;
        p->items[i] = p->items[--p->count];
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return s;
}

void abx__warm_pool_counts(abx_warm_pool *p, unsigned *ready, unsigned *want)
{
    pthread_mutex_lock(&p->mu);
    *ready = (unsigned)p->count;
    *want = p->want;
    pthread_mutex_unlock(&p->mu);
}
