/* transport_http.c: MCP over Streamable HTTP (spec 2025-03-26 and later).
 *
 * Owns: the one endpoint /mcp (POST a JSON-RPC message, DELETE a session,
 * GET answered 405), sessions (Mcp-Session-Id: 128 random bits, bound to
 * the token that created them, ended by DELETE, by idle TTL, or at
 * shutdown), Host/Origin checks against DNS rebinding, Bearer tokens
 * (compared in constant time), body limits, and the choice between an
 * application/json answer and a text/event-stream one (when a tool call
 * sends progress or log notifications before its result). Each session is
 * one mcp_server with its own sandboxes (server.c, session.c): sessions
 * never share a default sandbox, a kill or a cleanup.
 *
 * HTTP parsing is libmicrohttpd's (one thread per connection, so a request
 * may wait for its tool call); idle connections time out (slow clients).
 *
 * Request checks, in order: path (404), method (405), Host and Origin (403),
 * token (401), body size (413), content type (415), JSON (400 / -32700),
 * batch (400 / -32600), session (400 missing, 404 unknown, expired or
 * another token's), protocol version header (400).
 *
 * Both protocol eras on the one endpoint: an initialize opens a session
 * (2025-11-25 and older); a request of the stateless revision (2026-07-28:
 * per-request _meta, no session id) has its MCP-Protocol-Version, Mcp-Method
 * and Mcp-Name headers checked against its body (400 / -32020) and goes to
 * the token's one stateless session; its error answers carry their HTTP
 * status (modern_status).
 */
#include "transport_http.h"
#include "http_listener.h"
#include "buf.h"
#include "text.h"
#include "bounds.h"
#include "parse.h"
#include "error_internal.h"
#include "random_id.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include "netlibs.h"
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY ABX_BOUND_MCP_MESSAGE
#define IDLE_CONNECTION_S 60
#define HEADER_DEADLINE_S 10       /* to send a request's headers; ABX_MCP_HEADER_TIMEOUT */
#define PER_CLIENT_CONNECTIONS 256 /* per client address; ABX_MCP_CLIENT_CONNECTIONS */
#define SSE_KEEPALIVE_MS 15000

static const char *const protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

typedef struct http_session {
    char id[40];
    int token; /* index of the token that created it; -1 without auth */
    /* the token's one session for requests of the stateless revision
     * (2026-07-28): no id a client can name, the same default sandbox for
     * all of them, ended after the same idle TTL */
    bool stateless;
    mcp_server *srv;
    uint64_t last_used_ms;
    int refs; /* requests using it right now */
    bool ended;
} http_session;

typedef struct http_server {
    const mcp_http_config *cfg;
    size_t ntokens;
    char listen_host[256];
    pthread_mutex_t mu;
    pthread_mutex_t stateless_mu; /* one stateless session per token, however many race */
    http_session **sessions;
    size_t nsessions, max_sessions;
    unsigned ttl_s;
    bool stopping;
} http_server;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- responses ------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
                             const char *session_id)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, "Content-Type", type);
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    if (status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"abx\"");
    if (status == 405)
        MHD_add_response_header(r, "Allow", "POST, DELETE");
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* A JSON-RPC error body (no id: the request's was not read or not reached). */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status, int code, const char *message)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":\"%s\"}}", code, message);
    return reply(c, status, "application/json", body, NULL);
}

/* ---- checks ----------------------------------------------------------------- */

static bool host_allowed(const http_server *s, const char *host, size_t len)
{
    /* "*" (for a server behind a proxy whose public name is not known in
     * advance) is only honoured with tokens: see mcp_http_serve */
    for (size_t i = 0; s->ntokens && s->cfg->allowed_hosts && s->cfg->allowed_hosts[i]; i++)
        if (strcmp(s->cfg->allowed_hosts[i], "*") == 0)
            return true;
    static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]", "::1"};
    for (size_t i = 0; i < 4; i++)
        if (strlen(loopback[i]) == len && strncasecmp(host, loopback[i], len) == 0)
            return true;
    if (s->listen_host[0] && strlen(s->listen_host) == len && strncasecmp(host, s->listen_host, len) == 0)
        return true;
    for (size_t i = 0; s->cfg->allowed_hosts && s->cfg->allowed_hosts[i]; i++)
        if (strlen(s->cfg->allowed_hosts[i]) == len && strncasecmp(host, s->cfg->allowed_hosts[i], len) == 0)
            return true;
    return false;
}

/* Length of the host part of "host[:port]" (IPv6 in brackets). */
static size_t host_part(const char *h)
{
    if (h[0] == '[') {
        const char *end = strchr(h, ']');
        return end ? (size_t)(end - h) + 1 : strlen(h);
    }
    const char *colon = strchr(h, ':');
    return colon ? (size_t)(colon - h) : strlen(h);
}

/* An authority is exactly host[:port] up to `end`: a host of letters,
 * digits, '-', '.', or an IPv6 literal in brackets, then at most a colon
 * and 1-5 digits. Userinfo ("localhost:80@evil"), paths and spaces fail. */
static bool authority_ok(const char *a, size_t len)
{
    size_t i = 0;
    if (len > 0 && a[0] == '[') {
        while (i < len && a[i] != ']')
            if (!strchr("[0123456789abcdefABCDEF:.", a[i++]))
                return false;
        if (i++ >= len)
            return false;
    } else {
        while (i < len && (isalnum((unsigned char)a[i]) || a[i] == '-' || a[i] == '.'))
            i++;
    }
    if (i == 0)
        return false;
    if (i == len)
        return true;
    if (a[i++] != ':' || i == len || len - i > 5)
        return false;
    for (; i < len; i++)
        if (!isdigit((unsigned char)a[i]))
            return false;
    return true;
}

static bool origin_ok(const http_server *s, struct MHD_Connection *c)
{
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host || !authority_ok(host, strlen(host)) || !host_allowed(s, host, host_part(host)))
        return false;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin || strcmp(origin, "null") == 0)
        return origin == NULL;
    const char *p = strstr(origin, "://");
    if (!p)
        return false;
    p += 3;
    size_t alen = strcspn(p, "/");
    if (p[alen] == '/' && p[alen + 1] != '\0')
        return false; /* an Origin has no path */
    return authority_ok(p, alen) && host_allowed(s, p, host_part(p));
}

/* Request smuggling guards: a second Host, or two Content-Length headers
 * that disagree, make the request ambiguous; it is refused (400). */
typedef struct header_count {
    int host;
    int lengths;
    const char *first_length;
    bool lengths_differ;
} header_count;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    header_count *n = cls;
    if (strcasecmp(key, "Host") == 0)
        n->host++;
    if (strcasecmp(key, "Content-Length") == 0) {
        if (n->lengths++ == 0)
            n->first_length = value;
        else if (strcmp(value ? value : "", n->first_length ? n->first_length : "") != 0)
            n->lengths_differ = true;
    }
    return MHD_YES;
}

static bool headers_unambiguous(struct MHD_Connection *c)
{
    header_count n = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &n);
    return n.host <= 1 && !n.lengths_differ;
}

/* The index of the Bearer token presented, -1 with no auth configured, -2
 * when it is missing or wrong. Compares against every token in constant
 * time per token. */
static int token_index(const http_server *s, struct MHD_Connection *c)
{
    if (s->ntokens == 0)
        return -1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return -2;
    const char *got = h + 7;
    size_t n = strlen(got);
    int found = -2;
    for (size_t i = 0; i < s->ntokens; i++) {
        const char *want = s->cfg->tokens[i];
        if (strlen(want) == n && CRYPTO_memcmp(got, want, n) == 0)
            found = (int)i;
    }
    return found;
}

/* ---- sessions ------------------------------------------------------------------- */

static void session_end(http_session *hs)
{
    mcp_server_shutdown(hs->srv);
    mcp_server_free(hs->srv);
    free(hs);
}

/* The tenant a token stands for (abx_tenant_from_secret: the token itself
 * is never stored with a sandbox); "noauth" when the server runs without
 * authentication. */
static void tenant_of(const http_server *s, int token, char *out, size_t len)
{
    char t[34];
    if (token < 0)
        snprintf(t, sizeof t, "noauth");
    else
        abx_tenant_from_secret(s->cfg->tokens[token], t);
    snprintf(out, len, "%s", t);
}

/* Creates a session bound to token (stateless: the token's session for the
 * stateless revision); NULL when the limit is reached. */
static http_session *session_new(http_server *s, int token, bool stateless, abx_error **err)
{
    http_session *hs = calloc(1, sizeof *hs);
    if (!hs)
        return NULL;
    if (abx__random_id(hs->id, sizeof hs->id) < 0) {
        free(hs);
        abx__error_set(err, ABX_ESYS, "no randomness for a session id");
        return NULL;
    }
    hs->token = token;
    hs->stateless = stateless;
    hs->last_used_ms = now_ms();
    hs->refs = 1;
    char tenant[80];
    tenant_of(s, token, tenant, sizeof tenant);
    mcp_server_config cfg = s->cfg->server;
    cfg.tenant = tenant;
    cfg.stateless = stateless;
    if (mcp_server_new(&cfg, &hs->srv, err) < 0) {
        free(hs);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    bool full = s->nsessions >= s->max_sessions || s->stopping;
    if (!full)
        s->sessions[s->nsessions++] = hs;
    pthread_mutex_unlock(&s->mu);
    if (full) {
        session_end(hs);
        abx__error_set(err, ABX_ELIMIT, "too many sessions");
        return NULL;
    }
    return hs;
}

/* The live session id names, if token may use it; takes a reference. */
static http_session *session_get(http_server *s, const char *id, int token)
{
    http_session *found = NULL;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsessions; i++) {
        http_session *hs = s->sessions[i];
        if (!hs->ended && !hs->stateless && strcmp(hs->id, id) == 0 && hs->token == token) {
            hs->refs++;
            hs->last_used_ms = now_ms();
            found = hs;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* The token's stateless session, created on first use; takes a reference. */
static http_session *stateless_session(http_server *s, int token, abx_error **err)
{
    pthread_mutex_lock(&s->stateless_mu);
    http_session *found = NULL;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nsessions && !found; i++) {
        http_session *hs = s->sessions[i];
        if (!hs->ended && hs->stateless && hs->token == token) {
            hs->refs++;
            hs->last_used_ms = now_ms();
            found = hs;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (!found)
        found = session_new(s, token, true, err);
    pthread_mutex_unlock(&s->stateless_mu);
    return found;
}

/* Drops a reference; ends the session if it was marked ended and unused. */
static void session_put(http_server *s, http_session *hs)
{
    pthread_mutex_lock(&s->mu);
    hs->last_used_ms = now_ms();
    bool end = --hs->refs == 0 && hs->ended;
    if (end) {
        for (size_t i = 0; i < s->nsessions; i++) {
            if (s->sessions[i] == hs) {
                s->sessions[i] = s->sessions[--s->nsessions];
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (end)
        session_end(hs);
}

/* Marks a session ended: it is gone for new requests now, and its sandboxes
 * are destroyed when its last request finishes (at once if none). */
static void session_kill(http_server *s, http_session *hs)
{
    pthread_mutex_lock(&s->mu);
    hs->ended = true;
    hs->refs++;
    pthread_mutex_unlock(&s->mu);
    mcp_server_shutdown(hs->srv); /* cancels its calls now, destroys its sandboxes */
    session_put(s, hs);
}

static void *reaper(void *arg)
{
    http_server *s = arg;
    for (;;) {
        sleep(1);
        uint64_t now = now_ms();
        http_session *expired = NULL;
        pthread_mutex_lock(&s->mu);
        if (s->stopping) {
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        for (size_t i = 0; i < s->nsessions && !expired; i++) {
            http_session *hs = s->sessions[i];
            if (!hs->ended && hs->refs == 0 && now - hs->last_used_ms >= (uint64_t)s->ttl_s * 1000u) {
                expired = hs;
                hs->refs++;
            }
        }
        pthread_mutex_unlock(&s->mu);
        if (expired) {
            fprintf(stderr, "abx mcp: a session was idle for %u s: ending it and its sandboxes\n", s->ttl_s);
            pthread_mutex_lock(&s->mu);
            expired->ended = true;
            pthread_mutex_unlock(&s->mu);
            mcp_server_shutdown(expired->srv);
            session_put(s, expired);
        }
    }
}

/* ---- one exchange: the messages that answer one POST ---------------------------------- */

typedef struct msg_node {
    char *json;
    struct msg_node *next;
} msg_node;

typedef struct exchange {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    msg_node *head, *tail;
    bool done;
    int refs; /* the sink's and the response's */
    http_server *srv;
    http_session *session; /* a reference, dropped when the exchange goes */
    /* a stateless-revision tools/call: its id (owned), and the request is
     * cancelled when its stream closes before the answer (the revision's
     * only cancellation on HTTP) */
    json_t *cancel_id;
    int fd;    /* its connection's socket, watched while waiting; -1: not watched */
    char *out; /* SSE bytes being written */
    size_t out_len, out_pos;
} exchange;

static void exchange_unref(exchange *x)
{
    pthread_mutex_lock(&x->mu);
    bool last = --x->refs == 0;
    pthread_mutex_unlock(&x->mu);
    if (!last)
        return;
    for (msg_node *m = x->head; m;) {
        msg_node *next = m->next;
        free(m->json);
        free(m);
        m = next;
    }
    free(x->out);
    json_decref(x->cancel_id);
    if (x->session)
        session_put(x->srv, x->session);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
}

static void sink_send(void *ctx, const char *json, size_t len)
{
    exchange *x = ctx;
    msg_node *m = calloc(1, sizeof *m);
    if (!m)
        return;
    m->json = strndup(json, len);
    pthread_mutex_lock(&x->mu);
    if (x->tail)
        x->tail->next = m;
    else
        x->head = m;
    x->tail = m;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void sink_done(void *ctx)
{
    exchange *x = ctx;
    pthread_mutex_lock(&x->mu);
    x->done = true;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    exchange_unref(x);
}

static msg_node *pop_locked(exchange *x)
{
    msg_node *m = x->head;
    if (m) {
        x->head = m->next;
        if (!x->head)
            x->tail = NULL;
    }
    return m;
}

/* The wall-clock time ms from now, for pthread_cond_timedwait. */
static struct timespec in_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Whether the client has closed the watched connection (x->fd). */
static bool peer_closed(const exchange *x)
{
    struct pollfd p = {.fd = x->fd, .events = POLLRDHUP};
    return x->fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* SSE: each message as an event; a comment now and then keeps proxies from
 * closing a quiet stream. A watched connection the client closes ends the
 * stream at once (sse_free then cancels the request). */
static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    exchange *x = cls;
    while (x->out_pos >= x->out_len) {
        free(x->out);
        x->out = NULL;
        x->out_len = x->out_pos = 0;
        pthread_mutex_lock(&x->mu);
        uint64_t keepalive_at = now_ms() + SSE_KEEPALIVE_MS;
        bool closed = false;
        while (!x->head && !x->done && !(closed = peer_closed(x)) && now_ms() < keepalive_at) {
            struct timespec ts = in_ms(x->fd >= 0 ? 200 : SSE_KEEPALIVE_MS); /* a watched one: often */
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
        if (closed) {
            pthread_mutex_unlock(&x->mu);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        msg_node *m = pop_locked(x);
        bool finished = !m && x->done;
        pthread_mutex_unlock(&x->mu);
        if (finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (!m) {
            x->out = strdup(": keepalive\n\n");
        } else {
            size_t n = strlen(m->json) + 32;
            x->out = malloc(n);
            if (x->out)
                snprintf(x->out, n, "event: message\ndata: %s\n\n", m->json);
            free(m->json);
            free(m);
        }
        if (!x->out)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        x->out_len = strlen(x->out);
    }
    size_t n = x->out_len - x->out_pos < max ? x->out_len - x->out_pos : max;
    memcpy(buf, x->out + x->out_pos, n);
    x->out_pos += n;
    return (ssize_t)n;
}

/* The response is gone: sent whole, or its connection closed. */
static void sse_free(void *cls)
{
    exchange *x = cls;
    pthread_mutex_lock(&x->mu);
    bool unanswered = !x->done;
    pthread_mutex_unlock(&x->mu);
    if (unanswered && x->cancel_id && x->session)
        mcp_server_cancel(x->session->srv, x->cancel_id);
    exchange_unref(x);
}

static bool is_notification(const char *json)
{
    json_t *m = json_loads(json, 0, NULL);
    bool yes = m && json_object_get(m, "method") != NULL;
    json_decref(m);
    return yes;
}

/* The HTTP status of a stateless-revision answer that is one JSON-RPC
 * error: 404 for a method the server does not have, 400 for a request it
 * will not take, 500 for its own failure; 200 for a result. The one place
 * this mapping lives. */
static unsigned modern_status(const char *json)
{
    json_t *m = json_loads(json, 0, NULL);
    json_t *e = json_object_get(m, "error");
    json_int_t code = json_integer_value(json_object_get(e, "code"));
    json_decref(m);
    if (!e)
        return 200;
    if (code == -32601)
        return 404;
    if (code == -32603)
        return 500;
    return 400; /* -32700, -32600, -32602, -32020 (headers), -32021 (capabilities), -32022 (version) */
}

/* Answers a request: its response alone as application/json when nothing
 * came before it, else everything as text/event-stream (progress and log
 * notifications first, then the response). A stateless-revision error
 * alone carries its HTTP status (modern_status). A stateless tools/call's
 * connection is watched while it runs: the client closing it cancels the
 * call (the revision's only cancellation on HTTP). */
static enum MHD_Result answer(struct MHD_Connection *c, exchange *x, const char *session_header, bool modern)
{
    const union MHD_ConnectionInfo *info =
        x->cancel_id ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    x->fd = info ? info->connect_fd : -1;
    pthread_mutex_lock(&x->mu);
    bool closed = false;
    while (!x->done && !(x->head && is_notification(x->head->json)) && !(closed = peer_closed(x))) {
        struct timespec ts = in_ms(200); /* a watched connection: its close is looked for */
        if (x->fd >= 0)
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        else
            pthread_cond_wait(&x->cv, &x->mu);
    }
    if (closed) { /* the client gave up: the call stops, nothing is answered */
        pthread_mutex_unlock(&x->mu);
        mcp_server_cancel(x->session->srv, x->cancel_id);
        exchange_unref(x);
        return MHD_NO;
    }
    bool single = x->done && x->head && !x->head->next;
    msg_node *only = single ? pop_locked(x) : NULL;
    bool empty = x->done && !x->head && !only;
    pthread_mutex_unlock(&x->mu);
    if (only) {
        enum MHD_Result r = reply(c, modern ? modern_status(only->json) : 200, "application/json", only->json,
                                  session_header);
        free(only->json);
        free(only);
        exchange_unref(x);
        return r;
    }
    if (empty) { /* a cancelled request: no answer is owed */
        exchange_unref(x);
        return reply(c, 202, NULL, "", session_header);
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_reader, x, sse_free);
    if (!r) {
        exchange_unref(x);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    if (session_header)
        MHD_add_response_header(r, "Mcp-Session-Id", session_header);
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- request handling -------------------------------------------------------------- */

typedef struct http_req {
    abx_buf body; /* the POST body, at most MAX_BODY */
    bool too_big;
    int token;
} http_req;

static bool version_ok(struct MHD_Connection *c)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    if (!v)
        return true;
    for (size_t i = 0; i < sizeof protocol_versions / sizeof protocol_versions[0]; i++)
        if (strcmp(v, protocol_versions[i]) == 0)
            return true;
    return false;
}

static exchange *exchange_new(http_server *s, http_session *hs)
{
    exchange *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    x->refs = 2;
    x->fd = -1;
    x->srv = s;
    x->session = hs;
    return x;
}

/* 2025-03-26 allowed a JSON array of messages: each is handled, and the
 * responses (notifications sent meanwhile are dropped) come back as one
 * array, or 202 when the batch held no request. Later versions reject it. */
static enum MHD_Result handle_batch(http_server *s, struct MHD_Connection *c, http_req *rq, json_t *batch)
{
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    http_session *hs = sid ? session_get(s, sid, rq->token) : NULL;
    if (!hs || strcmp(mcp_server_protocol_version(hs->srv), "2025-03-26") != 0 ||
        json_array_size(batch) == 0 || json_array_size(batch) > 64) {
        if (hs)
            session_put(s, hs);
        return reply_error(c, 400, -32600, "Invalid request: batches are not supported");
    }
    json_t *responses = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(batch, i, m)
    {
        char *text = json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY);
        pthread_mutex_lock(&s->mu);
        hs->refs++; /* the exchange's own reference, dropped when it goes */
        pthread_mutex_unlock(&s->mu);
        exchange *x = text ? exchange_new(s, hs) : NULL;
        if (!x) {
            free(text);
            session_put(s, hs);
            continue;
        }
        x->refs++; /* ours, to read it after done */
        mcp_sink sink = {sink_send, sink_done, x};
        mcp_server_handle(hs->srv, text, strlen(text), &sink);
        free(text);
        pthread_mutex_lock(&x->mu);
        while (!x->done)
            pthread_cond_wait(&x->cv, &x->mu);
        for (msg_node *n = x->head; n; n = n->next)
            if (!is_notification(n->json))
                json_array_append_new(responses, json_loads(n->json, 0, NULL));
        pthread_mutex_unlock(&x->mu);
        exchange_unref(x);
        exchange_unref(x);
    }
    session_put(s, hs);
    if (json_array_size(responses) == 0) {
        json_decref(responses);
        return reply(c, 202, NULL, "", NULL);
    }
    char *out = json_dumps(responses, JSON_COMPACT);
    json_decref(responses);
    enum MHD_Result r = reply(c, 200, "application/json", out ? out : "[]", NULL);
    free(out);
    return r;
}

/* Hands the body to session hs (whose reference this takes) and answers. */
static enum MHD_Result dispatch(http_server *s, struct MHD_Connection *c, http_req *rq, http_session *hs,
                                bool is_request, const char *session_header, bool modern, json_t *cancel_id)
{
    exchange *x = exchange_new(s, hs);
    if (!x) {
        session_put(s, hs);
        return MHD_NO;
    }
    x->cancel_id = cancel_id ? json_incref(cancel_id) : NULL;
    mcp_sink sink = {sink_send, sink_done, x};
    mcp_server_handle(hs->srv, rq->body.data ? rq->body.data : "", rq->body.len, &sink);
    if (!is_request) { /* a notification or a response: accepted, nothing to say */
        exchange_unref(x);
        return reply(c, 202, NULL, "", NULL);
    }
    return answer(c, x, session_header, modern);
}

/* ---- the stateless revision (2026-07-28) ------------------------------------------- */

#define META_VERSION "io.modelcontextprotocol/protocolVersion"

static bool legacy_version(const char *v)
{
    for (size_t i = 0; i < sizeof protocol_versions / sizeof protocol_versions[0]; i++)
        if (strcmp(v, protocol_versions[i]) == 0)
            return true;
    return false;
}

/* A message of the stateless revision: server/discover, a request whose
 * _meta names its protocol version, or, with no session, one whose
 * MCP-Protocol-Version header is not a legacy revision's. An initialize
 * without them opens a legacy session. */
static bool is_modern(struct MHD_Connection *c, json_t *msg, const char *sid)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    const char *header = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    if ((method && strcmp(method, "server/discover") == 0) ||
        json_object_get(json_object_get(params, "_meta"), META_VERSION))
        return true;
    return !sid && header && !legacy_version(header) && !(method && strcmp(method, "initialize") == 0);
}

/* Whether header value v (decoded when it is a "=?base64?...?=" sentinel)
 * is exactly want, once the whitespace around it is trimmed. */
static bool header_is(const char *v, const char *want)
{
    if (!v || !want)
        return false;
    v += strspn(v, " \t"); /* HTTP's optional whitespace around a value */
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n < 12 || strncmp(v, "=?base64?", 9) != 0 || strncmp(v + n - 2, "?=", 2) != 0)
        return n == strlen(want) && memcmp(v, want, n) == 0;
    char *text = strndup(v + 9, n - 11), *decoded = NULL;
    long len = text ? mcp_unb64(text, &decoded) : -1;
    bool same = len >= 0 && (size_t)len == strlen(want) && memcmp(decoded, want, (size_t)len) == 0;
    free(text);
    free(decoded);
    return same;
}

/* Why the request's headers disagree with its body (NULL: they agree):
 * MCP-Protocol-Version with _meta's version, Mcp-Method with the method,
 * Mcp-Name with params.name (tools/call, prompts/get) or params.uri
 * (resources/read). */
static const char *header_mismatch(struct MHD_Connection *c, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    const char *version = json_string_value(json_object_get(json_object_get(params, "_meta"), META_VERSION));
    if (!header_is(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version"), version))
        return "Header mismatch: MCP-Protocol-Version is missing or differs from the protocol version in "
               "_meta";
    if (!header_is(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Method"), method))
        return "Header mismatch: Mcp-Method is missing or differs from the request's method";
    const char *name = NULL;
    if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0)
        name = json_string_value(json_object_get(params, "name"));
    else if (strcmp(method, "resources/read") == 0)
        name = json_string_value(json_object_get(params, "uri"));
    if (name && !header_is(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Name"), name))
        return "Header mismatch: Mcp-Name is missing or differs from the request's name or uri";
    return NULL;
}

/* A JSON-RPC error for request id (which may be NULL). */
static enum MHD_Result reply_error_id(struct MHD_Connection *c, unsigned status, json_t *id, int code,
                                      const char *message)
{
    json_t *e = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                          "code", code, "message", message);
    char *body = e ? json_dumps(e, JSON_COMPACT) : NULL;
    json_decref(e);
    enum MHD_Result r = body ? reply(c, status, "application/json", body, NULL) : MHD_NO;
    free(body);
    return r;
}

/* A stateless-revision message: its headers checked against its body once
 * its _meta is well formed (the server answers a malformed one, -32602),
 * then served by the token's stateless session. Mcp-Session-Id and
 * Last-Event-ID are ignored. */
static enum MHD_Result handle_modern(http_server *s, struct MHD_Connection *c, http_req *rq, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
    bool is_request = method && id;
    bool meta_ok = json_is_string(json_object_get(meta, META_VERSION)) &&
                   json_is_object(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
    const char *why = is_request && meta_ok ? header_mismatch(c, msg) : NULL;
    if (why)
        return reply_error_id(c, 400, id, -32020, why);
    abx_error *err = NULL;
    http_session *hs = stateless_session(s, rq->token, &err);
    int code = err ? (int)abx_error_code(err) : ABX_ESYS;
    abx_error_free(err);
    if (!hs)
        return code == ABX_ELIMIT ? reply_error_id(c, 503, id, -32000, "Too many sessions: try later")
                                  : reply_error_id(c, 500, id, -32603, "Internal error");
    bool call = is_request && strcmp(method, "tools/call") == 0;
    return dispatch(s, c, rq, hs, is_request, NULL, true, call ? id : NULL);
}

static enum MHD_Result handle_post(http_server *s, struct MHD_Connection *c, http_req *rq)
{
    if (rq->too_big)
        return reply_error(c, 413, -32600, "Request body too large (16 MiB at most)");
    const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (!type || strncasecmp(type, "application/json", 16) != 0)
        return reply_error(c, 415, -32600, "Content-Type must be application/json");
    if (!abx__json_depth_ok(rq->body.data ? rq->body.data : "", rq->body.len, ABX_BOUND_JSON_DEPTH))
        return reply_error(c, 400, -32600, "Invalid request: nested too deeply");
    json_t *msg = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, JSON_DECODE_ANY, NULL);
    if (!msg)
        return reply_error(c, 400, -32700, "Parse error");
    if (json_is_array(msg)) {
        enum MHD_Result r = handle_batch(s, c, rq, msg);
        json_decref(msg);
        return r;
    }
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    if (is_modern(c, msg, sid)) {
        enum MHD_Result r = handle_modern(s, c, rq, msg);
        json_decref(msg);
        return r;
    }
    const char *method = json_string_value(json_object_get(msg, "method"));
    bool is_request = method && json_object_get(msg, "id");
    bool is_initialize = is_request && strcmp(method, "initialize") == 0;
    json_decref(msg);
    http_session *hs = NULL;
    if (is_initialize) {
        abx_error *err = NULL;
        hs = session_new(s, rq->token, false, &err);
        int code = err ? (int)abx_error_code(err) : ABX_ESYS;
        abx_error_free(err);
        if (!hs)
            return code == ABX_ELIMIT ? reply_error(c, 503, -32000, "Too many sessions: end one or try later")
                                      : reply_error(c, 500, -32603, "Internal error");
    } else {
        if (!sid)
            return reply_error(c, 400, -32600, "Missing Mcp-Session-Id");
        if (!version_ok(c))
            return reply_error(c, 400, -32600, "Unsupported MCP-Protocol-Version");
        hs = session_get(s, sid, rq->token);
        if (!hs)
            return reply_error(c, 404, -32001, "Session not found");
    }
    return dispatch(s, c, rq, hs, is_request, is_initialize ? hs->id : NULL, false, NULL);
}

static enum MHD_Result handle_delete(http_server *s, struct MHD_Connection *c, int token)
{
    const char *sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
    if (!sid)
        return reply_error(c, 400, -32600, "Missing Mcp-Session-Id");
    http_session *hs = session_get(s, sid, token);
    if (!hs)
        return reply_error(c, 404, -32001, "Session not found");
    session_kill(s, hs);
    session_put(s, hs);
    return reply(c, 200, NULL, "", NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size,
                                  void **con_cls)
{
    (void)version;
    http_server *s = cls;
    http_req *rq = *con_cls;
    if (!rq) {
        if (!headers_unambiguous(c))
            return reply_error(c, 400, -32600, "Bad request: a duplicate Host or conflicting Content-Length");
        if (strcmp(url, "/mcp") != 0)
            return reply_error(c, 404, -32600, "Not found: the endpoint is /mcp");
        bool post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
        if (!origin_ok(s, c))
            return reply_error(c, 403, -32600, "Forbidden: Host or Origin not allowed");
        int token = token_index(s, c);
        if (token == -2)
            return reply_error(c, 401, -32600, "Unauthorized: a valid Bearer token is required");
        if (!post && !del)
            return reply_error(c, 405, -32600, "Method not allowed: POST to send, DELETE to end a session");
        if (del)
            return handle_delete(s, c, token);
        rq = calloc(1, sizeof *rq);
        if (!rq)
            return MHD_NO;
        rq->token = token;
        abx__buf_init(&rq->body, MAX_BODY);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        int added = abx__buf_append(&rq->body, upload, *upload_size);
        if (added == -ABX_ETOOBIG)
            rq->too_big = true;
        else if (added < 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    return handle_post(s, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode t)
{
    (void)t;
    (void)cls;
    (void)c;
    http_req *rq = *con_cls;
    if (rq) {
        abx__buf_free(&rq->body);
        free(rq);
    }
    *con_cls = NULL;
}

/* ---- start and stop ------------------------------------------------------------------ */

int mcp_http_serve(const mcp_http_config *cfg, abx_error **err)
{
    http_server s;
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    while (cfg->tokens && cfg->tokens[s.ntokens])
        s.ntokens++;
    s.ttl_s = cfg->session_ttl_s ? cfg->session_ttl_s : 1800;
    s.max_sessions = cfg->max_sessions ? cfg->max_sessions : 256;
    s.sessions = calloc(s.max_sessions, sizeof *s.sessions);
    pthread_mutex_init(&s.mu, NULL);
    pthread_mutex_init(&s.stateless_mu, NULL);
    if (!s.sessions)
        return abx__error_set(err, ABX_ENOMEM, "sessions");
    int sigfd = abx__stop_signals_block();
    /* a client that stops sending loses its connection after IDLE_CONNECTION_S,
     * one that takes longer than HEADER_DEADLINE_S to send a request's
     * headers (a slow loris, before any auth) at once; ABX_MCP_CONNECTION_TIMEOUT,
     * ABX_MCP_HEADER_TIMEOUT and ABX_MCP_CLIENT_CONNECTIONS change them */
    abx_http_service svc = {.listen = cfg->listen && *cfg->listen ? cfg->listen : "127.0.0.1:8080",
                            .handler = on_request,
                            .handler_cls = &s,
                            .completed = on_completed,
                            .env_prefix = "ABX_MCP",
                            .idle_s = IDLE_CONNECTION_S,
                            .header_deadline_s = HEADER_DEADLINE_S,
                            .per_client = PER_CLIENT_CONNECTIONS,
                            .max_connections = 1024};
    abx_http_listener *listener = NULL;
    int rc = sigfd < 0 ? abx__error_errno(err, ABX_ESYS, errno, "signalfd")
                       : abx__http_start(&svc, &listener, err);
    if (rc == 0 && !abx__http_loopback(listener) && s.ntokens == 0)
        rc =
            abx__error_set(err, ABX_EAUTH,
                           "refusing to serve a non-loopback address without a token (set ABX_MCP_AUTH_TOKEN "
                           "or --auth-token-file)");
    if (rc < 0) {
        abx__http_stop(listener);
        if (sigfd >= 0)
            close(sigfd);
        free(s.sessions);
        return rc;
    }
    const char *host = abx__http_host(listener);
    snprintf(s.listen_host, sizeof s.listen_host, "%s", strcmp(host, "0.0.0.0") == 0 ? "" : host);
    pthread_t reaper_thread;
    pthread_create(&reaper_thread, NULL, reaper, &s);
    fprintf(stderr, "abx mcp: listening on http://%s:%d/mcp%s\n", strchr(host, ':') ? "[::1]" : host,
            abx__http_port(listener), s.ntokens ? " (Bearer token required)" : "");
    abx__stop_signal_wait(sigfd);
    fprintf(stderr, "abx mcp: shutting down: ending %zu session(s) and their sandboxes\n", s.nsessions);
    pthread_mutex_lock(&s.mu);
    s.stopping = true;
    size_t n = s.nsessions;
    http_session **all = calloc(n ? n : 1, sizeof *all);
    for (size_t i = 0; all && i < n; i++) {
        all[i] = s.sessions[i];
        all[i]->ended = true;
        all[i]->refs++;
    }
    pthread_mutex_unlock(&s.mu);
    for (size_t i = 0; all && i < n; i++) /* cancels calls, destroys sandboxes, answers waiting requests */
        mcp_server_shutdown(all[i]->srv);
    pthread_join(reaper_thread, NULL);
    abx__http_stop(listener);
    for (size_t i = 0; all && i < n; i++)
        session_put(&s, all[i]);
    free(all);
    free(s.sessions);
    return 0;
}
