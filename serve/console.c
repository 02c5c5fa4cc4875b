/* console.c: the web console of abx serve and the service (--console):
 * its pages, built into the binary (console_assets.h), and its sessions.
 *
 * Owns: serving /console/ (index.html) and /console/NAME with a strict
 * Content-Security-Policy (scripts from the console only, no request to
 * anywhere but this server, no framing); the session table: a login
 * with a key gives a random session token, returned in the answer's
 * body, that the pages keep in sessionStorage and send as the header
 * X-Abx-Session on each call to the same API the SDKs use. No cookie is
 * ever set, so another site's page cannot make the browser act for the
 * user (no CSRF), and no secret is ever in a URL. A session ends after
 * its idle time without a call (SERVE_CONSOLE_IDLE_S, or
 * ABX_SERVE_CONSOLE_IDLE seconds), SESSION_MAX_S after its login, or at
 * logout; only its hash is kept. Whose a session is (a key, the
 * administrator) serve.c decides; this file keeps an opaque owner.
 */
#include "serve.h"
#include "console_assets.h"
#include "netlibs.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define SESSIONS_MAX 1024
#define SESSIONS_PER_OWNER 16 /* a key's live sessions: a 17th login ends its oldest */
#define SESSION_MAX_S (12 * 60 * 60)

#define CONSOLE_CSP                                                                                          \
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "        \
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

typedef struct console_session {
    char hash[34]; /* abx_tenant_from_secret of the token; "" : free */
    void *owner;
    long long born, used; /* monotonic milliseconds */
} console_session;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct serve_console {
    pthread_mutex_t mu;
    unsigned idle_s;
    console_session s[SESSIONS_MAX];
};

serve_console *serve_console_new(unsigned idle_s)
{
    serve_console *cs = calloc(1, sizeof *cs);
    if (cs) {
        pthread_mutex_init(&cs->mu, NULL);
        cs->idle_s = idle_s ? idle_s : SERVE_CONSOLE_IDLE_S;
    }
    return cs;
}

unsigned serve_console_idle_s(const serve_console *cs)
{
    return cs->idle_s;
}

void serve_console_free(serve_console *cs)
{
    if (!cs)
        return;
    pthread_mutex_destroy(&cs->mu);
    explicit_bzero(cs, sizeof *cs);
    free(cs);
}

static bool expired(const serve_console *cs, const console_session *e, long long now)
{
    return !e->hash[0] || now - e->used >= (long long)cs->idle_s * 1000 ||
           now - e->born >= SESSION_MAX_S * 1000LL;
}

/* Where owner's new session goes: a free entry, or, when owner already
 * holds SESSIONS_PER_OWNER live ones, the oldest of those (so that one key
 * logging in again and again never fills the table for the others); NULL
 * when the table is full of other owners' live sessions. mu held. */
static console_session *slot_for_locked(serve_console *cs, void *owner, long long now)
{
    console_session *free_slot = NULL, *oldest = NULL;
    unsigned held = 0;
    for (size_t i = 0; i < SESSIONS_MAX; i++) {
        console_session *e = &cs->s[i];
        if (expired(cs, e, now)) {
            free_slot = free_slot ? free_slot : e;
        } else if (e->owner == owner) {
            held++;
            oldest = !oldest || e->born < oldest->born ? e : oldest;
        }
    }
    return held >= SESSIONS_PER_OWNER ? oldest : free_slot;
}

int serve_console_login(serve_console *cs, void *owner, char token[65])
{
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return -1;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    explicit_bzero(raw, sizeof raw);
    long long now = now_ms();
    pthread_mutex_lock(&cs->mu);
    console_session *e = slot_for_locked(cs, owner, now);
    if (e) {
        abx_tenant_from_secret(token, e->hash);
        e->owner = owner;
        e->born = e->used = now;
    }
    pthread_mutex_unlock(&cs->mu);
    if (!e)
        explicit_bzero(token, 65);
    return e ? 0 : -1;
}

/* The live session the request's X-Abx-Session names (refreshed), or NULL;
 * every entry compared in constant time. The caller holds mu. */
static console_session *session_of_locked(serve_console *cs, struct MHD_Connection *c, long long now)
{
    const char *token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Abx-Session");
    if (!token || strlen(token) != 64)
        return NULL;
    char h[34];
    abx_tenant_from_secret(token, h);
    console_session *found = NULL;
    for (size_t i = 0; i < SESSIONS_MAX; i++)
        if (CRYPTO_memcmp(h, cs->s[i].hash, sizeof h) == 0)
            found = &cs->s[i];
    return found && !expired(cs, found, now) ? found : NULL;
}

void *serve_console_session(serve_console *cs, struct MHD_Connection *c)
{
    if (!cs)
        return NULL;
    long long now = now_ms();
    pthread_mutex_lock(&cs->mu);
    console_session *e = session_of_locked(cs, c, now);
    void *owner = e ? e->owner : NULL;
    if (e)
        e->used = now;
    pthread_mutex_unlock(&cs->mu);
    return owner;
}

bool serve_console_logout(serve_console *cs, struct MHD_Connection *c)
{
    pthread_mutex_lock(&cs->mu);
    console_session *e = session_of_locked(cs, c, now_ms());
    if (e)
        memset(e, 0, sizeof *e);
    pthread_mutex_unlock(&cs->mu);
    return e != NULL;
}

static enum MHD_Result send_asset(struct MHD_Connection *c, const serve_asset *a)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", a->type);
    MHD_add_response_header(r, "Content-Security-Policy", CONSOLE_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

int serve_console_asset(struct MHD_Connection *c, const char *url)
{
    if (strcmp(url, "/console") == 0) { /* relative names resolve below /console/ */
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r)
            return -1;
        MHD_add_response_header(r, "Location", "/console/");
        enum MHD_Result ok = MHD_queue_response(c, 308, r);
        MHD_destroy_response(r);
        return ok == MHD_YES ? 0 : -1;
    }
    const char *name = url + strlen("/console/");
    if (!*name)
        name = "index.html";
    for (const serve_asset *a = serve_console_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return send_asset(c, a) == MHD_YES ? 0 : -1;
    return serve_send_error(c, 404, "no such page of the console");
}
