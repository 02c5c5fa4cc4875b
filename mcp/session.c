/* session.c: one MCP session's sandboxes, by the rules of
 * spec/mcp-server-design.zh.md §2 and spec/mcp-lifecycle-tools.zh.md:
 *
 *   1. create_sandbox makes the new sandbox the default; older ones live on
 *      until killed or the session ends.
 *   2. The first call without sandbox_id lazily creates one default;
 *      concurrent first calls create exactly one (creating_default + cv).
 *   3. Sandboxes are created with the session's template unless one is named.
 *   4. kill_sandbox without an id kills the default, or fails if there is
 *      none. Ending the session destroys every sandbox it created, but
 *      a persistent (durable) one, which it pauses.
 *   5. An explicit sandbox_id addresses that sandbox and never moves the
 *      default. Before each use an owned sandbox is renewed by its creation
 *      timeout (or the last set_sandbox_timeout).
 *   External ids (not created by this session) can be read, used and
 *   re-timed, but are never adopted: the session's end leaves them alone.
 *   6. A session with a tenant (HTTP: its token) reaches only the
 *      sandboxes of its tenant; another id is answered as one that does not
 *      exist (the same error, from the same call), so ids are no oracle.
 *
 * State per sandbox: ALIVE (in boxes[]) -> KILLED (removed from boxes[],
 * killed flag set; freed when the last reference goes).
 */
#include "session.h"
#include "kernel.h"
#include "text.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RENEW_EVERY_MS 1000

/* Errors from libabx carry a message; sessions only pass codes on. */
static int fail(abx_error **err, int code)
{
    if (code < 0)
        code = -code;
    if (err) {
        abx_error_free(*err);
        *err = NULL;
    }
    return -code;
}

int mcp_session_init(mcp_session *s, const char *template_name, const char *provider, const char *tenant,
                     abx_error **err)
{
    memset(s, 0, sizeof *s);
    snprintf(s->tenant, sizeof s->tenant, "%s", tenant ? tenant : "");
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    snprintf(s->template_name, sizeof s->template_name, "%s", template_name ? template_name : "base");
    int rc = mcp_output_limit_get(&s->output_limit, err);
    if (rc < 0)
        return rc;
    abx_client_options o = {.cli_provider = provider, .tenant = s->tenant[0] ? s->tenant : NULL};
    return abx_client_new(&o, &s->client, err);
}

/* Connects to an id the session did not create (libabx answers another
 * tenant's id as one that does not exist). */
static int connect_external(mcp_session *s, const char *id, abx_sandbox **out, abx_sandbox_info *info,
                            bool *have_info, abx_error **err)
{
    *have_info = false;
    int rc = abx_sandbox_connect(s->client, id, out, err);
    if (rc < 0)
        return rc;
    *have_info = abx_sandbox_get_info(*out, info, NULL) == 0;
    if (*have_info && strcmp(info->status, "paused") == 0 && abx_sandbox_resume(*out, 0, NULL) == 0) {
        abx_sandbox_info_clear(info); /* a paused one (a durable one at rest) goes on, as E2B's connect */
        *have_info = abx_sandbox_get_info(*out, info, NULL) == 0;
    }
    return 0;
}

static void box_free(mcp_sandbox *b)
{
    abx_sandbox_free(b->handle);
    free(b);
}

void mcp_session_release(mcp_session *s, mcp_sandbox *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&s->mu);
    bool last = --b->refs == 0 && b->killed;
    pthread_mutex_unlock(&s->mu);
    if (last)
        box_free(b);
}

static mcp_sandbox *box_new(const char *id, abx_sandbox *h, bool owned, unsigned renew_s, const char *tmpl)
{
    mcp_sandbox *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    snprintf(b->id, sizeof b->id, "%s", id);
    snprintf(b->template_name, sizeof b->template_name, "%s", tmpl ? tmpl : "base");
    b->handle = h;
    b->owned = owned;
    b->renew_s = renew_s;
    return b;
}

/* Removes b from the table (lock held); the caller kills it. */
static void unlink_locked(mcp_session *s, mcp_sandbox *b)
{
    for (int i = 0; i < s->nboxes; i++) {
        if (s->boxes[i] == b) {
            memmove(&s->boxes[i], &s->boxes[i + 1], (size_t)(s->nboxes - i - 1) * sizeof s->boxes[0]);
            s->nboxes--;
            break;
        }
    }
    if (s->default_box == b)
        s->default_box = NULL;
    b->killed = true;
}

static mcp_sandbox *find_locked(mcp_session *s, const char *id)
{
    const char *bare = strncmp(id, "local:", 6) == 0 ? id + 6 : id;
    for (int i = 0; i < s->nboxes; i++) {
        const char *have = s->boxes[i]->id;
        const char *have_bare = strncmp(have, "local:", 6) == 0 ? have + 6 : have;
        if (strcmp(have, id) == 0 || strcmp(have_bare, bare) == 0)
            return s->boxes[i];
    }
    return NULL;
}

static int create_box(mcp_session *s, const mcp_create_args *a, mcp_sandbox **out, abx_error **err)
{
    abx_create_options o = {
        .template_id = a && a->template_name ? a->template_name : s->template_name,
        .timeout_s = a && a->timeout_s ? a->timeout_s : ABX_DEFAULT_TIMEOUT_S,
        .envs = a ? a->envs : NULL,
        .cpu_count = a ? a->cpu : 0,
        .memory_mb = a ? a->memory_mb : 0,
        .network = a ? a->network : NULL,
        .allow_out = a ? a->allow_out : NULL,
        .deny_out = a ? a->deny_out : NULL,
        .volumes = a ? a->volumes : NULL,
        .persistent = a && a->persistent,
    };
    abx_sandbox *h = NULL;
    int rc = abx_sandbox_create(s->client, &o, &h, err);
    if (rc < 0)
        return rc;
    *out = box_new(abx_sandbox_id(h), h, true, o.timeout_s, o.template_id);
    if (*out)
        (*out)->persistent = o.persistent;
    if (!*out) {
        abx_sandbox_kill(h, NULL);
        abx_sandbox_free(h);
        return fail(err, ABX_ENOMEM);
    }
    return 0;
}

/* Puts a new owned box in the table (lock held); false when the session
 * ended or is full (the caller then kills it). */
static bool adopt_locked(mcp_session *s, mcp_sandbox *b)
{
    if (s->ended || s->nboxes >= MCP_SESSION_MAX_SANDBOXES)
        return false;
    s->boxes[s->nboxes++] = b;
    return true;
}

/* The session's end: a sandbox goes, a durable one is paused (a later
 * session names it by id, which resumes it). */
static void destroy_box(mcp_sandbox *b)
{
    if (!b->persistent || abx_sandbox_pause(b->handle, NULL) < 0)
        abx_sandbox_kill(b->handle, NULL);
}

int mcp_session_create(mcp_session *s, const mcp_create_args *a, mcp_sandbox **out, abx_error **err)
{
    pthread_mutex_lock(&s->mu);
    bool full = s->nboxes >= MCP_SESSION_MAX_SANDBOXES;
    pthread_mutex_unlock(&s->mu);
    if (full)
        return fail(err, ABX_ELIMIT);
    mcp_sandbox *b = NULL;
    int rc = create_box(s, a, &b, err);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&s->mu);
    bool ok = adopt_locked(s, b);
    if (ok) {
        s->default_box = b;
        b->refs++;
    }
    pthread_mutex_unlock(&s->mu);
    if (!ok) {
        destroy_box(b);
        box_free(b);
        return fail(err, ABX_ELIMIT);
    }
    *out = b;
    return 0;
}

static int use_default(mcp_session *s, bool create, mcp_sandbox **out, bool *created, abx_error **err)
{
    pthread_mutex_lock(&s->mu);
    while (!s->default_box && s->creating_default && !s->ended)
        pthread_cond_wait(&s->cv, &s->mu);
    if (s->default_box) {
        *out = s->default_box;
        (*out)->refs++;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    if (!create || s->ended) {
        pthread_mutex_unlock(&s->mu);
        return fail(err, ABX_ENOTFOUND);
    }
    s->creating_default = true;
    pthread_mutex_unlock(&s->mu);

    mcp_sandbox *b = NULL;
    int rc = create_box(s, NULL, &b, err);
    pthread_mutex_lock(&s->mu);
    s->creating_default = false;
    bool ok = rc == 0 && adopt_locked(s, b);
    if (ok) {
        if (!s->default_box)
            s->default_box = b;
        b->refs++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (rc < 0)
        return rc;
    if (!ok) {
        destroy_box(b);
        box_free(b);
        return fail(err, ABX_ELIMIT);
    }
    if (created)
        *created = true;
    *out = b;
    return 0;
}

static int use_explicit(mcp_session *s, const char *id, mcp_sandbox **out, abx_error **err)
{
    pthread_mutex_lock(&s->mu);
    mcp_sandbox *b = find_locked(s, id);
    if (b) {
        b->refs++;
        *out = b;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    pthread_mutex_unlock(&s->mu);
    /* an external id: connect for this call only, never adopted */
    abx_sandbox *h = NULL;
    abx_sandbox_info info;
    bool have_info = false;
    int rc = connect_external(s, id, &h, &info, &have_info, err);
    if (rc < 0)
        return rc;
    b = box_new(abx_sandbox_id(h), h, false, 0, have_info ? info.template_id : "base");
    if (have_info)
        abx_sandbox_info_clear(&info);
    if (!b) {
        abx_sandbox_free(h);
        return fail(err, ABX_ENOMEM);
    }
    b->refs = 1;
    b->killed = true; /* not in the table: freed when released */
    *out = b;
    return 0;
}

/* The default has ended: it leaves the table (it is not killed again at
 * the session's end) and the caller's reference goes. */
static void forget_dead_default(mcp_session *s, mcp_sandbox *b)
{
    pthread_mutex_lock(&s->mu);
    if (s->default_box == b)
        unlink_locked(s, b);
    pthread_mutex_unlock(&s->mu);
    mcp_session_release(s, b);
}

int mcp_session_use(mcp_session *s, const char *id, bool create, bool renew, mcp_sandbox **out, bool *created,
                    bool *replaced, abx_error **err)
{
    *out = NULL;
    if (created)
        *created = false;
    if (replaced)
        *replaced = false;
    int rc = id ? use_explicit(s, id, out, err) : use_default(s, create, out, created, err);
    if (rc < 0)
        return rc;
    /* end_at has one-second resolution: renewing more often changes
     * nothing. A renewal that finds the default gone replaces it (a call
     * that finds it gone between renewals: mcp_session_check_default) */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    bool check_default = !id && create;
    bool due = now - (*out)->renewed_ms >= RENEW_EVERY_MS;
    if (renew && due && (*out)->owned && (*out)->renew_s) {
        (*out)->renewed_ms = now;
        rc = abx_sandbox_set_timeout((*out)->handle, (*out)->renew_s, err);
        if (rc < 0 && check_default && (rc == -ABX_ENOTFOUND || rc == -ABX_ENOTRUNNING)) {
            forget_dead_default(s, *out);
            *out = NULL;
            fail(err, rc);
            rc = use_default(s, create, out, created, err);
            if (rc == 0 && replaced)
                *replaced = true;
            return rc;
        }
        if (rc < 0) {
            mcp_session_release(s, *out);
            *out = NULL;
            return rc;
        }
    }
    return 0;
}

bool mcp_session_check_default(mcp_session *s)
{
    pthread_mutex_lock(&s->mu);
    mcp_sandbox *b = s->default_box;
    if (b)
        b->refs++;
    pthread_mutex_unlock(&s->mu);
    if (!b)
        return false;
    abx_sandbox_info info;
    int rc = abx_sandbox_get_info(b->handle, &info, NULL);
    if (rc == 0) {
        abx_sandbox_info_clear(&info);
        mcp_session_release(s, b);
        return false;
    }
    if (rc != -ABX_ENOTFOUND && rc != -ABX_ENOTRUNNING) {
        mcp_session_release(s, b);
        return false;
    }
    forget_dead_default(s, b);
    return true;
}

int mcp_session_kill(mcp_session *s, const char *id, abx_error **err)
{
    if (!id) {
        pthread_mutex_lock(&s->mu);
        mcp_sandbox *b = s->default_box;
        if (!b) {
            pthread_mutex_unlock(&s->mu);
            return fail(err, ABX_ENOTFOUND);
        }
        unlink_locked(s, b);
        b->refs++;
        pthread_mutex_unlock(&s->mu);
        int rc = abx_sandbox_kill(b->handle, err);
        mcp_session_release(s, b);
        return rc;
    }
    pthread_mutex_lock(&s->mu);
    mcp_sandbox *b = find_locked(s, id);
    if (b) {
        unlink_locked(s, b);
        b->refs++;
    }
    pthread_mutex_unlock(&s->mu);
    if (b) {
        int rc = abx_sandbox_kill(b->handle, err);
        mcp_session_release(s, b);
        return rc;
    }
    abx_sandbox *h = NULL;
    abx_sandbox_info info;
    bool have_info = false;
    int rc = connect_external(s, id, &h, &info, &have_info, err);
    if (have_info)
        abx_sandbox_info_clear(&info);
    if (rc == 0)
        rc = abx_sandbox_kill(h, err);
    abx_sandbox_free(h);
    return rc;
}

int mcp_session_set_timeout(mcp_session *s, const char *id, unsigned seconds, char *qualified, size_t len,
                            abx_error **err)
{
    mcp_sandbox *b = NULL;
    int rc;
    if (!id) {
        rc = use_default(s, false, &b, NULL, err);
    } else {
        pthread_mutex_lock(&s->mu);
        b = find_locked(s, id);
        if (b)
            b->refs++;
        pthread_mutex_unlock(&s->mu);
        if (!b) {
            /* external: re-time it directly, never adopt it */
            abx_sandbox *h = NULL;
            abx_sandbox_info info;
            bool have_info = false;
            rc = connect_external(s, id, &h, &info, &have_info, err);
            if (have_info)
                abx_sandbox_info_clear(&info);
            if (rc == 0)
                rc = abx_sandbox_set_timeout(h, seconds, err);
            if (rc == 0)
                snprintf(qualified, len, "%s", abx_sandbox_id(h));
            abx_sandbox_free(h);
            return rc;
        }
        rc = 0;
    }
    if (rc < 0)
        return rc;
    rc = abx_sandbox_set_timeout(b->handle, seconds, err);
    if (rc == 0) {
        pthread_mutex_lock(&s->mu);
        if (b->owned && !b->killed) {
            b->renew_s = seconds; /* later uses renew by the new lifetime */
            b->renewed_ms = 0;
        }
        pthread_mutex_unlock(&s->mu);
        snprintf(qualified, len, "%s", b->id);
    }
    mcp_session_release(s, b);
    return rc;
}

/* The session's end kills its sandboxes several at a time: a client that
 * closes gives its server a few seconds (the SDK: 2 s, SIGTERM, 2 s, SIGKILL),
 * and a full table of them one by one can take longer than that. */
#define END_WORKERS 8

typedef struct {
    mcp_session *s;
    mcp_sandbox **boxes;
    int n;
    atomic_int next;
} end_work;

static void *end_worker(void *arg)
{
    end_work *w = arg;
    for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        if (w->boxes[i]->owned)
            destroy_box(w->boxes[i]);
        mcp_session_release(w->s, w->boxes[i]);
    }
    return NULL;
}

/* Kills (a durable one: pauses) and releases boxes[0..n) (one reference each, taken by the caller);
 * if no thread can be started, the caller's own does all of it. */
static void destroy_all(mcp_session *s, mcp_sandbox **boxes, int n)
{
    end_work w = {.s = s, .boxes = boxes, .n = n};
    atomic_init(&w.next, 0);
    pthread_t t[END_WORKERS];
    int started = 0;
    while (started < END_WORKERS && started < n - 1 && pthread_create(&t[started], NULL, end_worker, &w) == 0)
        started++;
    end_worker(&w);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
}

void mcp_session_end(mcp_session *s)
{
    pthread_mutex_lock(&s->mu);
    s->ended = true;
    pthread_cond_broadcast(&s->cv);
    mcp_sandbox *boxes[MCP_SESSION_MAX_SANDBOXES];
    int n = s->nboxes;
    memcpy(boxes, s->boxes, sizeof boxes[0] * (size_t)n);
    for (int i = 0; i < n; i++) {
        boxes[i]->killed = true;
        boxes[i]->refs++;
    }
    s->nboxes = 0;
    s->default_box = NULL;
    pthread_mutex_unlock(&s->mu);
    destroy_all(s, boxes, n);
    abx_client_free(s->client);
    s->client = NULL;
}
