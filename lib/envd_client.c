/* envd_client.c: the data-plane client, written against E2B's envd
 * protocol (../shared/e2b-protocol.md §2), not against the shim's insides:
 * the same code will serve E2B-protocol clouds.
 *
 * Owns: requests and their headers (X-Access-Token, Basic user, Connect
 * protocol version, deadlines), the 5-byte envelope framing of streams, and
 * turning error bodies into abx errors. The exchange itself goes over the
 * local shim's Unix socket (envd_unix.c: no libcurl, whose first use maps
 * some thirty libraries and cost `abx exec` half its time) or, for a cloud
 * over TCP, libcurl (curl_perform below). An error body from abx's own shim
 * carries the abx code ("E8023: ..."); anything else is mapped from the
 * Connect code and never passed on verbatim.
 */
#include "envd_client.h"
#include "envd_exchange.h"
#include "buf.h"
#include "b64.h"
#include "bounds.h"
#include "error_internal.h"
#include "parse.h"

#include "netlibs.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_RESPONSE ABX_BOUND_ENVD_RESPONSE
#define MAX_STREAM_MESSAGE ABX_BOUND_ENVD_MESSAGE

void abx__envd_init(abx_envd *e, const char *base_url, const char *unix_socket, const char *token)
{
    memset(e, 0, sizeof *e);
    snprintf(e->base_url, sizeof e->base_url, "%s", base_url);
    snprintf(e->unix_socket, sizeof e->unix_socket, "%s", unix_socket ? unix_socket : "");
    snprintf(e->token, sizeof e->token, "%s", token ? token : "");
    for (size_t i = 0; i < ABX_ENVD_IDLE_MAX; i++)
        e->idle_fds[i] = -1;
    pthread_mutex_init(&e->mu, NULL);
}

void abx__envd_route(abx_envd *e, const char *route_id, const char *code_url)
{
    snprintf(e->route_id, sizeof e->route_id, "%s", route_id ? route_id : "");
    snprintf(e->code_url, sizeof e->code_url, "%s", code_url ? code_url : "");
}

void abx__envd_cleanup(abx_envd *e)
{
    if (e->cached && abx__curl())
        curl_easy_cleanup(e->cached);
    e->cached = NULL;
    abx__envd_unix_close(e);
    pthread_mutex_destroy(&e->mu);
}

/* ---- the exchange over libcurl (TCP) --------------------------------------- */

static CURL *acquire(abx_envd *e)
{
    pthread_mutex_lock(&e->mu);
    CURL *c = e->cached;
    e->cached = NULL;
    pthread_mutex_unlock(&e->mu);
    if (!c)
        c = curl_easy_init();
    else
        curl_easy_reset(c); /* keeps the connection cache */
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    return c;
}

static void release(abx_envd *e, CURL *c)
{
    pthread_mutex_lock(&e->mu);
    if (!e->cached) {
        e->cached = c;
        c = NULL;
    }
    pthread_mutex_unlock(&e->mu);
    if (c)
        curl_easy_cleanup(c);
}

typedef struct curl_call {
    envd_exchange *x;
    CURL *curl;
    bool read_failed; /* read_fn failed the upload (libcurl says "aborted by callback", as for a cancel) */
} curl_call;

static size_t curl_body(char *ptr, size_t size, size_t n, void *ud)
{
    curl_call *cc = ud;
    curl_easy_getinfo(cc->curl, CURLINFO_RESPONSE_CODE, &cc->x->status);
    return cc->x->on_body(ptr, size * n, cc->x->ud);
}

static size_t curl_header(char *ptr, size_t size, size_t n, void *ud)
{
    curl_call *cc = ud;
    size_t len = size * n, line = len;
    while (line > 0 && (ptr[line - 1] == '\r' || ptr[line - 1] == '\n'))
        line--;
    if (line == 0)
        return len;
    return cc->x->on_header(ptr, line, cc->x->ud) == line ? len : 0;
}

static size_t curl_read(char *buf, size_t size, size_t n, void *ud)
{
    curl_call *cc = ud;
    size_t got = cc->x->read_fn(buf, size * n, cc->x->read_ud);
    cc->read_failed = cc->read_failed || got > size * n;
    return got > size * n ? CURL_READFUNC_ABORT : got;
}

static int curl_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    curl_call *cc = ud;
    return cc->x->cancel(cc->x->cancel_ud) ? 1 : 0;
}

static envd_outcome curl_perform(abx_envd *e, envd_exchange *x)
{
    if (!abx__curl())
        return ENVD_NO_LIBRARY;
    CURL *c = acquire(e);
    if (!c)
        return ENVD_NO_LIBRARY;
    char url[4800];
    snprintf(url, sizeof url, "%s%s", x->base, x->path);
    struct curl_slist *h = NULL;
    for (size_t i = 0; x->headers[i]; i++)
        h = curl_slist_append(h, x->headers[i]);
    h = curl_slist_append(h, "Expect:");
    curl_call cc = {x, c, false};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, curl_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &cc);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
    if (x->on_header) {
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, curl_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &cc);
    }
    if (x->range)
        curl_easy_setopt(c, CURLOPT_RANGE, x->range);
    if (x->post && x->read_fn) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, curl_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &cc);
        curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
        if (x->read_size >= 0)
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->read_size);
    } else if (x->post) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, x->body ? x->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)x->body_len);
    }
    if (x->cancel) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, curl_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &cc);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    CURLcode code = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
    curl_slist_free_all(h);
    snprintf(x->detail, sizeof x->detail, "%s", curl_easy_strerror(code));
    envd_outcome out = code == CURLE_OK                    ? ENVD_OK
                       : code == CURLE_WRITE_ERROR         ? ENVD_ABORTED
                       : code == CURLE_ABORTED_BY_CALLBACK ? (cc.read_failed ? ENVD_ABORTED : ENVD_CANCELLED)
                       : code == CURLE_OPERATION_TIMEDOUT  ? ENVD_TIMEOUT
                       : code == CURLE_COULDNT_CONNECT || code == CURLE_GOT_NOTHING ||
                               code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR ||
                               code == CURLE_COULDNT_RESOLVE_HOST
                           ? ENVD_NO_ANSWER
                       : code == CURLE_READ_ERROR ? ENVD_ABORTED
                                                  : ENVD_FAILED;
    /* a transfer cut short leaves the connection unusable: not kept */
    if (out == ENVD_OK)
        release(e, c);
    else
        curl_easy_cleanup(c);
    return out;
}

/* The exchange over the sandbox's Unix socket, or libcurl for TCP. */
static envd_outcome perform(abx_envd *e, envd_exchange *x)
{
    return e->unix_socket[0] ? abx__envd_unix_perform(e, x) : curl_perform(e, x);
}

/* ---- headers -------------------------------------------------------------- */

/* The header lines of one exchange (bounded: each under 320 bytes). */
typedef struct header_lines {
    char line[ENVD_MAX_HEADERS][320];
    size_t n;
} header_lines;

__attribute__((format(printf, 3, 4))) static void add_header(envd_exchange *x, header_lines *h,
                                                             const char *fmt, ...)
{
    if (h->n >= ENVD_MAX_HEADERS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->line[h->n], sizeof h->line[h->n], fmt, ap);
    va_end(ap);
    x->headers[h->n] = h->line[h->n];
    h->n++;
    x->headers[h->n] = NULL;
}

/* The headers every request carries; port: the sandbox port it is for
 * (named only when routing by headers). */
static void port_headers(abx_envd *e, envd_exchange *x, header_lines *h, const char *user,
                         const char *content_type, unsigned port)
{
    if (e->route_id[0]) {
        add_header(x, h, "E2b-Sandbox-Id: %s", e->route_id);
        add_header(x, h, "E2b-Sandbox-Port: %u", port);
    }
    if (e->token[0])
        add_header(x, h, "X-Access-Token: %s", e->token);
    if (user && *user) {
        char raw[80];
        snprintf(raw, sizeof raw, "%s:", user);
        char *enc = abx__b64_encode(raw, strlen(raw));
        add_header(x, h, "Authorization: Basic %s", enc ? enc : "");
        free(enc);
    }
    if (content_type)
        add_header(x, h, "Content-Type: %s", content_type);
    add_header(x, h, "Connect-Protocol-Version: 1");
}

static void base_headers(abx_envd *e, envd_exchange *x, header_lines *h, const char *user,
                         const char *content_type)
{
    port_headers(e, x, h, user, content_type, 49983);
}

/* ---- buffers and errors ------------------------------------------------- */

/* A response body, bounded by MAX_RESPONSE (overflow: it was longer). */
typedef struct membuf {
    abx_buf b;
    bool overflow;
} membuf;
#define MEMBUF_INIT                                                                                          \
    {                                                                                                        \
        {NULL, 0, 0, MAX_RESPONSE}, false                                                                    \
    }

static size_t membuf_write(const char *ptr, size_t len, void *ud)
{
    membuf *m = ud;
    int rc = abx__buf_append(&m->b, ptr, len);
    m->overflow |= rc == -ABX_ETOOBIG;
    return rc == 0 ? len : 0;
}

static int code_from_connect(const char *connect)
{
    static const struct {
        const char *name;
        int code;
    } map[] = {
        {"not_found", ABX_ENOENT},           {"invalid_argument", ABX_EINVAL},
        {"permission_denied", ABX_EPERM},    {"unauthenticated", ABX_EAUTH},
        {"resource_exhausted", ABX_ELIMIT},  {"unavailable", ABX_ENOTRUNNING},
        {"deadline_exceeded", ABX_ETIMEOUT}, {"unimplemented", ABX_ENOTSUP},
        {"already_exists", ABX_EINVAL},      {"canceled", ABX_ECANCELLED},
    };
    for (size_t i = 0; connect && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(connect, map[i].name) == 0)
            return map[i].code;
    return ABX_EPROVIDER;
}

/* Turns an error body (or its absence) into an abx error. */
static int error_from_body(const char *body, size_t len, long status, abx_error **err)
{
    json_t *doc = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *obj = json_object_get(doc, "error");
    if (!obj)
        obj = doc;
    const char *connect = json_string_value(json_object_get(obj, "code"));
    const char *message = json_string_value(json_object_get(obj, "message"));
    int code = 0;
    char rest[512] = "";
    int rc;
    if (message && message[0] == 'E' && sscanf(message, "E%d: %511[^\n]", &code, rest) >= 1 && code > 8000 &&
        code < 9000) {
        rc = abx__error_set(err, code, "%s", rest[0] ? rest : abx_strerror(code));
    } else {
        code = connect         ? code_from_connect(connect)
               : status == 401 ? ABX_EAUTH
               : status == 404 ? ABX_ENOENT
               : status == 507 ? ABX_ETOOBIG
                               : ABX_EPROVIDER;
        rc = abx__error_set(err, code, "the sandbox answered HTTP %ld", status);
    }
    json_decref(doc);
    return rc;
}

/* An exchange that did not end with a whole answer, as an abx error. */
static int transport_failure(envd_outcome out, const envd_exchange *x, abx_error **err)
{
    switch (out) {
    case ENVD_NO_ANSWER:
        return abx__error_set(err, ABX_ENOTRUNNING, "the sandbox's data plane does not answer");
    case ENVD_TIMEOUT:
        return abx__error_set(err, ABX_ETIMEOUT, "the sandbox did not answer in time");
    case ENVD_CANCELLED:
        return abx__error_set(err, ABX_ECANCELLED, "cancelled");
    case ENVD_NO_LIBRARY:
        return abx__error_set(err, ABX_EHOSTSUPPORT, "libcurl could not be loaded or used");
    case ENVD_OK:
    case ENVD_ABORTED:
    case ENVD_FAILED:
        break;
    }
    return abx__error_set(err, ABX_EIO, "data plane: %s", x->detail[0] ? x->detail : "failed");
}

/* ---- JSON requests ------------------------------------------------------ */

/* A handle without a data plane (a provider that has no envd for this
 * sandbox): every envd call is E8004, never a request to nowhere. */
static int no_data_plane(const abx_envd *e, abx_error **err)
{
    if (e->down_reason[0])
        return abx__error_set(err, ABX_ENOTRUNNING, "%s", e->down_reason);
    if (e->base_url[0])
        return 0;
    return abx__error_set(
        err, ABX_ENOTSUP,
        "this sandbox's provider has no envd data plane and did not declare the capability this "
        "operation needs");
}

/* The outcome of a plain exchange whose body went to m: 0 for a whole 2xx
 * answer, else the error (past the bound, the transport's, the server's). */
static int plain_result(envd_outcome o, const envd_exchange *x, const membuf *m, abx_error **err)
{
    if (o == ENVD_ABORTED && m->overflow)
        return abx__error_set(err, ABX_ETOOBIG, "response over 64 MiB");
    if (o != ENVD_OK)
        return transport_failure(o, x, err);
    if (x->status < 200 || x->status > 299)
        return error_from_body(m->b.data, m->b.len, x->status, err);
    return 0;
}

static int json_request(abx_envd *e, const char *method, const char *path, const char *user, json_t *body,
                        json_t **resp, abx_error **err)
{
    int rc = no_data_plane(e, err);
    if (rc < 0)
        return rc;
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    membuf out = MEMBUF_INIT;
    envd_exchange x = {.base = e->code_url[0] ? e->code_url : e->base_url, /* the code interpreter */
                       .path = path,
                       .post = strcmp(method, "POST") == 0,
                       .body = text ? text : "",
                       .body_len = text ? strlen(text) : 0,
                       .on_body = membuf_write,
                       .ud = &out};
    header_lines h = {0};
    base_headers(e, &x, &h, user, body ? "application/json" : NULL);
    envd_outcome o = perform(e, &x);
    free(text);
    rc = plain_result(o, &x, &out, err);
    if (rc == 0 && resp) {
        *resp = out.b.len ? json_loadb(out.b.data, out.b.len, 0, NULL) : json_object();
        if (!*resp)
            rc = abx__error_set(err, ABX_EPROVIDER, "the sandbox answered with malformed JSON");
    }
    abx__buf_free(&out.b);
    return rc;
}

int abx__envd_unary(abx_envd *e, const char *method_path, const char *user, json_t *req, json_t **resp,
                    abx_error **err)
{
    json_t *empty = req ? NULL : json_object();
    int rc = json_request(e, "POST", method_path, user, req ? req : empty, resp, err);
    json_decref(empty);
    return rc;
}

int abx__envd_json(abx_envd *e, const char *method, const char *path_query, json_t *body, json_t **resp,
                   abx_error **err)
{
    return json_request(e, method, path_query, NULL, body, resp, err);
}

/* ---- streams ------------------------------------------------------------ */

typedef struct stream_state {
    membuf buf;
    abx_envd_event_fn fn;
    void *userdata;
    bool stopped;
    bool ended;
    json_t *end_error; /* the end-of-stream envelope's error, if any */
    envd_exchange *x;
} stream_state;

static size_t stream_write(const char *ptr, size_t len, void *ud)
{
    stream_state *s = ud;
    if (membuf_write(ptr, len, &s->buf) != len)
        return 0;
    if (s->x->status != 200)
        return len; /* an error body: collected whole, read after */
    size_t pos = 0;
    while (s->buf.b.len - pos >= 5) {
        unsigned char *h = (unsigned char *)s->buf.b.data + pos;
        size_t mlen = ((size_t)h[1] << 24) | ((size_t)h[2] << 16) | ((size_t)h[3] << 8) | h[4];
        if (mlen > MAX_STREAM_MESSAGE)
            return 0;
        if (s->buf.b.len - pos - 5 < mlen)
            break;
        json_t *msg = json_loadb(s->buf.b.data + pos + 5, mlen, 0, NULL);
        pos += 5 + mlen;
        if (h[0] & 0x02) {
            s->ended = true;
            s->end_error = json_incref(json_object_get(msg, "error"));
            json_decref(msg);
            continue;
        }
        if (msg && !s->stopped && s->fn(msg, s->userdata))
            s->stopped = true;
        json_decref(msg);
        if (s->stopped)
            return 0; /* ends the transfer */
    }
    abx__buf_consume(&s->buf.b, pos);
    return len;
}

/* The result of a stream that was read to its end (or stopped). */
static int stream_result(const stream_state *s, envd_outcome o, const envd_exchange *x, abx_error **err)
{
    if (o == ENVD_CANCELLED)
        return abx__error_set(err, ABX_ECANCELLED, "cancelled");
    if (s->stopped)
        return 0;
    if (o != ENVD_OK && !(s->ended && o == ENVD_ABORTED))
        return x->status && x->status != 200 ? error_from_body(s->buf.b.data, s->buf.b.len, x->status, err)
                                             : transport_failure(o, x, err);
    if (x->status != 200)
        return error_from_body(s->buf.b.data, s->buf.b.len, x->status, err);
    if (s->end_error) {
        const char *code = json_string_value(json_object_get(s->end_error, "code"));
        if (code && strcmp(code, "deadline_exceeded") == 0)
            return abx__error_set(err, ABX_ETIMEOUT, "the command's deadline passed");
        if (code && strcmp(code, "unavailable") == 0)
            return abx__error_set(err, ABX_ENOTRUNNING,
                                  "the sandbox ended (timed out or killed) while the command ran");
        return abx__error_set(err, code_from_connect(code), "the stream ended with an error");
    }
    if (!s->ended)
        return abx__error_set(err, ABX_ENOTRUNNING, "the stream ended early: the sandbox is gone");
    return 0;
}

int abx__envd_stream(abx_envd *e, const char *method_path, const char *user, json_t *req,
                     unsigned deadline_ms, abx_envd_event_fn fn, void *userdata, abx_envd_cancel_fn cancel,
                     abx_error **err)
{
    int rc = no_data_plane(e, err);
    if (rc < 0)
        return rc;
    char *text = json_dumps(req, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    char *body = malloc(n + 5);
    if (!text || !body) {
        free(text);
        free(body);
        return abx__error_set(err, ABX_ENOMEM, "request");
    }
    body[0] = 0;
    body[1] = (char)(n >> 24);
    body[2] = (char)(n >> 16);
    body[3] = (char)(n >> 8);
    body[4] = (char)n;
    memcpy(body + 5, text, n);
    free(text);
    envd_exchange x = {.base = e->base_url,
                       .path = method_path,
                       .post = true,
                       .body = body,
                       .body_len = n + 5,
                       .on_body = stream_write,
                       .cancel = cancel,
                       .cancel_ud = userdata};
    stream_state s = {.buf = MEMBUF_INIT, .fn = fn, .userdata = userdata, .x = &x};
    x.ud = &s;
    header_lines h = {0};
    base_headers(e, &x, &h, user, "application/connect+json");
    add_header(&x, &h, "Keepalive-Ping-Interval: 50");
    if (deadline_ms)
        add_header(&x, &h, "Connect-Timeout-Ms: %u", deadline_ms);
    envd_outcome o = perform(e, &x);
    free(body);
    rc = stream_result(&s, o, &x, err);
    json_decref(s.end_error);
    abx__buf_free(&s.buf.b);
    return rc;
}

/* ---- a JSON request with a raw answer (code interpreter: NDJSON) ---------- */

int abx__envd_post_raw(abx_envd *e, const char *path, const char *user, json_t *body,
                       abx_envd_cancel_fn cancel, void *userdata, char **out, size_t *out_len,
                       abx_error **err)
{
    *out = NULL;
    *out_len = 0;
    int rc = no_data_plane(e, err);
    if (rc < 0)
        return rc;
    char *text = json_dumps(body, JSON_COMPACT);
    membuf answer = MEMBUF_INIT;
    envd_exchange x = {.base = e->base_url,
                       .path = path,
                       .post = true,
                       .body = text ? text : "{}",
                       .body_len = text ? strlen(text) : 2,
                       .on_body = membuf_write,
                       .ud = &answer,
                       .cancel = cancel,
                       .cancel_ud = userdata};
    header_lines h = {0};
    port_headers(e, &x, &h, user, "application/json", 49999);
    envd_outcome o = perform(e, &x);
    free(text);
    rc = plain_result(o, &x, &answer, err);
    if (rc == 0)
        *out = abx__buf_take(&answer.b, out_len);
    abx__buf_free(&answer.b);
    return rc == 0 && !*out ? abx__error_set(err, ABX_ENOMEM, "answer") : rc;
}

/* ---- files -------------------------------------------------------------- */

/* "/files?path=P[&username=U]", P percent-encoded: 0, or -1 when it does not fit. */
static int files_path(const char *path, const char *user, char *out, size_t len)
{
    int n = snprintf(out, len, "/files?path=");
    size_t enc = abx__percent_encode(out + n, len - (size_t)n, path, false);
    if (enc == (size_t)-1)
        return -1;
    if (user && *user) {
        size_t used = (size_t)n + enc;
        int m = snprintf(out + used, len - used, "&username=%s", user);
        if (m < 0 || (size_t)m >= len - used)
            return -1;
    }
    return 0;
}

typedef struct download_state {
    abx_envd_write_fn fn;
    void *userdata;
    membuf err_body;
    envd_exchange *x;
    const abx_envd_range *range; /* NULL: the whole file */
    unsigned long long pos;      /* bytes of a whole-file answer seen (a server that ignored the range) */
    long long size;              /* from Content-Range or Content-Length; -1 unknown */
} download_state;

/* Bytes [pos, pos + len) of a whole-file answer that fall in the range go
 * to fn; past the range the transfer ends (a short write). */
static size_t range_from_whole(download_state *d, const char *ptr, size_t len)
{
    unsigned long long end = d->range->offset + d->range->length, from = d->pos, to = d->pos + len;
    d->pos = to;
    if (from >= end)
        return 0;
    unsigned long long a = from > d->range->offset ? from : d->range->offset, b = to < end ? to : end;
    if (a < b && d->fn(ptr + (a - from), (size_t)(b - a), d->userdata) != (size_t)(b - a))
        return 0;
    return to <= end ? len : 0;
}

static size_t download_write(const char *ptr, size_t len, void *ud)
{
    download_state *d = ud;
    long status = d->x->status;
    if (status != 200 && status != 206)
        return membuf_write(ptr, len, &d->err_body);
    if (d->range && status == 200)
        return range_from_whole(d, ptr, len);
    return d->fn(ptr, len, d->userdata);
}

/* Content-Range: bytes A-B/SIZE or bytes STAR/SIZE, and Content-Length. */
static size_t download_header(const char *ptr, size_t len, void *ud)
{
    download_state *d = ud;
    char line[160];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), ptr);
    const char *slash = strchr(line, '/');
    if (strncasecmp(line, "content-range:", 14) == 0 && slash)
        d->size = strtoll(slash + 1, NULL, 10);
    else if (strncasecmp(line, "content-length:", 15) == 0 && d->size < 0 && d->x->status != 206)
        d->size = strtoll(line + 15, NULL, 10);
    if (strncasecmp(line, "HTTP/", 5) == 0)
        d->size = -1; /* a new response (after a 100 Continue): forget the last one's */
    return len;
}

int abx__envd_download(abx_envd *e, const char *path, const char *user, abx_envd_write_fn fn, void *userdata,
                       abx_error **err)
{
    return abx__envd_download_range(e, path, user, NULL, fn, userdata, err);
}

int abx__envd_download_range(abx_envd *e, const char *path, const char *user, abx_envd_range *range,
                             abx_envd_write_fn fn, void *userdata, abx_error **err)
{
    int rc = no_data_plane(e, err);
    if (rc < 0)
        return rc;
    char where[4800];
    if (files_path(path, user, where, sizeof where) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: too long");
    envd_exchange x = {.base = e->base_url, .path = where, .on_body = download_write};
    download_state d = {
        .err_body = MEMBUF_INIT, .fn = fn, .userdata = userdata, .x = &x, .range = range, .size = -1};
    x.ud = &d;
    char bytes[64];
    if (range) {
        snprintf(bytes, sizeof bytes, "%llu-%llu", range->offset,
                 range->offset + (range->length ? range->length : 1) - 1);
        x.range = bytes;
        x.on_header = download_header;
    }
    header_lines h = {0};
    base_headers(e, &x, &h, NULL, NULL);
    envd_outcome o = perform(e, &x);
    long status = x.status;
    if (range) {
        range->file_size = d.size;
        if (status == 416)
            status = 206; /* the range starts past the end: no bytes, and the size */
        if (status == 200 && o == ENVD_ABORTED && d.pos > range->offset)
            o = ENVD_OK; /* a whole-file answer cut once the range was had */
    }
    rc = 0;
    if (status && status != 200 && status != 206)
        rc = error_from_body(d.err_body.b.data, d.err_body.b.len, status, err);
    else if (o == ENVD_ABORTED)
        rc = abx__error_set(err, ABX_EIO, "writing the downloaded bytes failed");
    else if (o != ENVD_OK)
        rc = transport_failure(o, &x, err);
    abx__buf_free(&d.err_body.b);
    return rc;
}

int abx__envd_upload(abx_envd *e, const char *path, const char *user, abx_envd_read_fn fn, void *userdata,
                     long long size, abx_error **err)
{
    int rc = no_data_plane(e, err);
    if (rc < 0)
        return rc;
    char where[4800];
    if (files_path(path, user, where, sizeof where) < 0)
        return abx__error_set(err, ABX_EINVAL, "path: too long");
    membuf out = MEMBUF_INIT;
    envd_exchange x = {.base = e->base_url,
                       .path = where,
                       .post = true,
                       .read_fn = fn,
                       .read_ud = userdata,
                       .read_size = size,
                       .on_body = membuf_write,
                       .ud = &out};
    header_lines h = {0};
    base_headers(e, &x, &h, NULL, "application/octet-stream");
    envd_outcome o = perform(e, &x);
    rc = 0;
    if (x.status && (x.status < 200 || x.status > 299))
        rc = error_from_body(out.b.data, out.b.len, x.status, err);
    else if (o != ENVD_OK)
        rc = transport_failure(o, &x, err);
    abx__buf_free(&out.b);
    return rc;
}
