/* envd_client.c: the data-plane client (libcurl), written against E2B's envd
 * protocol (../shared/e2b-protocol.md §2), not against the shim's insides:
 * the same code will serve E2B-protocol clouds.
 *
 * Owns: requests and their headers (X-Access-Token, Basic user, Connect
 * protocol version, deadlines), the 5-byte envelope framing of streams, and
 * turning error bodies into abx errors. An error body from abx's own shim
 * carries the abx code ("E8023: ..."); anything else is mapped from the
 * Connect code and never passed on verbatim.
 */
#include "envd_client.h"
#include "buf.h"
#include "b64.h"
#include "bounds.h"
#include "error_internal.h"

#include "netlibs.h"
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
    pthread_mutex_destroy(&e->mu);
}

static CURL *acquire(abx_envd *e)
{
    if (!abx__curl())
        return NULL; /* libcurl is missing: callers report it */
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
    if (e->unix_socket[0])
        curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, e->unix_socket);
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

/* The headers every request carries; port: the sandbox port it is for
 * (named only when routing by headers). */
static struct curl_slist *port_headers(abx_envd *e, const char *user, const char *content_type, unsigned port)
{
    struct curl_slist *h = NULL;
    char line[300];
    if (e->route_id[0]) {
        snprintf(line, sizeof line, "E2b-Sandbox-Id: %s", e->route_id);
        h = curl_slist_append(h, line);
        snprintf(line, sizeof line, "E2b-Sandbox-Port: %u", port);
        h = curl_slist_append(h, line);
    }
    if (e->token[0]) {
        snprintf(line, sizeof line, "X-Access-Token: %s", e->token);
        h = curl_slist_append(h, line);
    }
    if (user && *user) {
        char raw[80];
        snprintf(raw, sizeof raw, "%s:", user);
        char *enc = abx__b64_encode(raw, strlen(raw));
        snprintf(line, sizeof line, "Authorization: Basic %s", enc ? enc : "");
        free(enc);
        h = curl_slist_append(h, line);
    }
    if (content_type) {
        snprintf(line, sizeof line, "Content-Type: %s", content_type);
        h = curl_slist_append(h, line);
    }
    h = curl_slist_append(h, "Connect-Protocol-Version: 1");
    h = curl_slist_append(h, "Expect:");
    return h;
}

static struct curl_slist *base_headers(abx_envd *e, const char *user, const char *content_type)
{
    return port_headers(e, user, content_type, 49983);
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

static size_t membuf_write(char *ptr, size_t size, size_t n, void *ud)
{
    membuf *m = ud;
    size_t len = size * n;
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

static int curl_failure(CURLcode cc, abx_error **err)
{
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR ||
        cc == CURLE_SEND_ERROR || cc == CURLE_COULDNT_RESOLVE_HOST)
        return abx__error_set(err, ABX_ENOTRUNNING, "the sandbox's data plane does not answer");
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return abx__error_set(err, ABX_ETIMEOUT, "the sandbox did not answer in time");
    return abx__error_set(err, ABX_EIO, "data plane: %s", curl_easy_strerror(cc));
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

/* A handle for one call: none (with *rc and *err set) for a sandbox
 * without a data plane, or when libcurl cannot be had. */
static CURL *begin(abx_envd *e, int *rc, abx_error **err)
{
    if ((*rc = no_data_plane(e, err)) < 0)
        return NULL;
    CURL *c = acquire(e);
    if (!c)
        *rc = abx__error_set(err, abx__curl() ? ABX_ENOMEM : ABX_EHOSTSUPPORT,
                             "libcurl could not be loaded or used");
    return c;
}

static int json_request(abx_envd *e, const char *method, const char *path, const char *user, json_t *body,
                        json_t **resp, abx_error **err)
{
    int rc = 0;
    CURL *c = begin(e, &rc, err);
    if (!c)
        return rc;
    char url[1200];
    snprintf(url, sizeof url, "%s%s", e->code_url[0] ? e->code_url : e->base_url,
             path); /* the code interpreter */
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    struct curl_slist *h = base_headers(e, user, body ? "application/json" : NULL);
    membuf out = MEMBUF_INIT;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, membuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(text ? strlen(text) : 0));
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(text);
    rc = 0;
    if (cc != CURLE_OK)
        rc = out.overflow ? abx__error_set(err, ABX_ETOOBIG, "response over 64 MiB") : curl_failure(cc, err);
    else if (status < 200 || status > 299)
        rc = error_from_body(out.b.data, out.b.len, status, err);
    else if (resp) {
        *resp = out.b.len ? json_loadb(out.b.data, out.b.len, 0, NULL) : json_object();
        if (!*resp)
            rc = abx__error_set(err, ABX_EPROVIDER, "the sandbox answered with malformed JSON");
    }
    abx__buf_free(&out.b);
    release(e, c);
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

/* Cancelling a transfer: cancel (polled by libcurl's progress callback)
 * returning true cuts it and sets cancelled. */
typedef struct cancel_state {
    abx_envd_cancel_fn cancel;
    void *userdata;
    bool cancelled;
} cancel_state;

static int cancel_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    cancel_state *s = ud;
    if (s->cancel && s->cancel(s->userdata)) {
        s->cancelled = true;
        return 1;
    }
    return 0;
}

typedef struct stream_state {
    membuf buf;
    abx_envd_event_fn fn;
    cancel_state cs;
    void *userdata;
    bool stopped;
    bool ended;
    json_t *end_error; /* the end-of-stream envelope's error, if any */
    long status;
    CURL *curl;
} stream_state;

static size_t stream_write(char *ptr, size_t size, size_t n, void *ud)
{
    stream_state *s = ud;
    size_t len = size * n;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (membuf_write(ptr, 1, len, &s->buf) != len)
        return 0;
    if (s->status != 200)
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

int abx__envd_stream(abx_envd *e, const char *method_path, const char *user, json_t *req,
                     unsigned deadline_ms, abx_envd_event_fn fn, void *userdata, abx_envd_cancel_fn cancel,
                     abx_error **err)
{
    int rc = 0;
    CURL *c = begin(e, &rc, err);
    if (!c)
        return rc;
    char url[1200];
    snprintf(url, sizeof url, "%s%s", e->base_url, method_path);
    char *text = json_dumps(req, JSON_COMPACT);
    size_t n = text ? strlen(text) : 0;
    char *body = malloc(n + 5);
    if (!text || !body) {
        free(text);
        free(body);
        release(e, c);
        return abx__error_set(err, ABX_ENOMEM, "request");
    }
    body[0] = 0;
    body[1] = (char)(n >> 24);
    body[2] = (char)(n >> 16);
    body[3] = (char)(n >> 8);
    body[4] = (char)n;
    memcpy(body + 5, text, n);
    free(text);
    struct curl_slist *h = base_headers(e, user, "application/connect+json");
    h = curl_slist_append(h, "Keepalive-Ping-Interval: 50");
    if (deadline_ms) {
        char line[64];
        snprintf(line, sizeof line, "Connect-Timeout-Ms: %u", deadline_ms);
        h = curl_slist_append(h, line);
    }
    stream_state s = {.buf = MEMBUF_INIT,
                      .fn = fn,
                      .userdata = userdata,
                      .curl = c,
                      .cs = {.cancel = cancel, .userdata = userdata}};
    if (cancel) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, cancel_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &s.cs);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(n + 5));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, stream_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(h);
    free(body);
    rc = 0;
    if (s.cs.cancelled) {
        rc = abx__error_set(err, ABX_ECANCELLED, "cancelled");
    } else if (s.stopped) {
        rc = 0;
    } else if (cc != CURLE_OK && !(s.ended && cc == CURLE_WRITE_ERROR)) {
        rc = s.status && s.status != 200 ? error_from_body(s.buf.b.data, s.buf.b.len, s.status, err)
                                         : curl_failure(cc, err);
    } else if (s.status != 200) {
        rc = error_from_body(s.buf.b.data, s.buf.b.len, s.status, err);
    } else if (s.end_error) {
        const char *code = json_string_value(json_object_get(s.end_error, "code"));
        if (code && strcmp(code, "deadline_exceeded") == 0)
            rc = abx__error_set(err, ABX_ETIMEOUT, "the command's deadline passed");
        else if (code && strcmp(code, "unavailable") == 0)
            rc = abx__error_set(err, ABX_ENOTRUNNING,
                                "the sandbox ended (timed out or killed) while the command ran");
        else
            rc = abx__error_set(err, code_from_connect(code), "the stream ended with an error");
    } else if (!s.ended) {
        rc = abx__error_set(err, ABX_ENOTRUNNING, "the stream ended early: the sandbox is gone");
    }
    json_decref(s.end_error);
    abx__buf_free(&s.buf.b);
    /* a transfer we cut short leaves the connection unusable: do not cache it */
    if (s.stopped || s.cs.cancelled || cc != CURLE_OK)
        curl_easy_cleanup(c);
    else
        release(e, c);
    return rc;
}

/* ---- a JSON request with a raw answer (code interpreter: NDJSON) ---------- */

int abx__envd_post_raw(abx_envd *e, const char *path, const char *user, json_t *body,
                       abx_envd_cancel_fn cancel, void *userdata, char **out, size_t *out_len,
                       abx_error **err)
{
    *out = NULL;
    *out_len = 0;
    int rc = 0;
    CURL *c = begin(e, &rc, err);
    if (!c)
        return rc;
    char url[1200];
    snprintf(url, sizeof url, "%s%s", e->base_url, path);
    char *text = json_dumps(body, JSON_COMPACT);
    struct curl_slist *h = port_headers(e, user, "application/json", 49999);
    membuf answer = MEMBUF_INIT;
    cancel_state cs = {.cancel = cancel, .userdata = userdata};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, membuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "{}");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)(text ? strlen(text) : 2));
    if (cancel) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, cancel_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &cs);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    }
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    free(text);
    rc = 0;
    if (cs.cancelled)
        rc = abx__error_set(err, ABX_ECANCELLED, "cancelled");
    else if (cc != CURLE_OK)
        rc = answer.overflow ? abx__error_set(err, ABX_ETOOBIG, "response over 64 MiB")
                             : curl_failure(cc, err);
    else if (status < 200 || status > 299)
        rc = error_from_body(answer.b.data, answer.b.len, status, err);
    if (rc == 0)
        *out = abx__buf_take(&answer.b, out_len);
    abx__buf_free(&answer.b);
    /* a transfer cut short leaves the connection unusable: do not cache it */
    if (cs.cancelled || cc != CURLE_OK)
        curl_easy_cleanup(c);
    else
        release(e, c);
    return rc == 0 && !*out ? abx__error_set(err, ABX_ENOMEM, "answer") : rc;
}

/* ---- files -------------------------------------------------------------- */

static void files_url(abx_envd *e, CURL *c, const char *path, const char *user, char *url, size_t len)
{
    char *p = curl_easy_escape(c, path, 0);
    if (user && *user)
        snprintf(url, len, "%s/files?path=%s&username=%s", e->base_url, p ? p : "", user);
    else
        snprintf(url, len, "%s/files?path=%s", e->base_url, p ? p : "");
    curl_free(p);
}

typedef struct download_state {
    abx_envd_write_fn fn;
    void *userdata;
    membuf err_body;
    long status;
    CURL *curl;
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

static size_t download_write(char *ptr, size_t size, size_t n, void *ud)
{
    download_state *d = ud;
    size_t len = size * n;
    curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->status);
    if (d->status != 200 && d->status != 206)
        return membuf_write(ptr, 1, len, &d->err_body);
    if (d->range && d->status == 200)
        return range_from_whole(d, ptr, len);
    return d->fn(ptr, len, d->userdata);
}

/* Content-Range: bytes A-B/SIZE or bytes STAR/SIZE, and Content-Length. */
static size_t download_header(char *ptr, size_t size, size_t n, void *ud)
{
    download_state *d = ud;
    size_t len = size * n;
    char line[160];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line - 1 ? len : sizeof line - 1), ptr);
    const char *slash = strchr(line, '/');
    if (strncasecmp(line, "content-range:", 14) == 0 && slash)
        d->size = strtoll(slash + 1, NULL, 10);
    else if (strncasecmp(line, "content-length:", 15) == 0 && d->size < 0 && d->status != 206)
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
    int rc = 0;
    CURL *c = begin(e, &rc, err);
    if (!c)
        return rc;
    char url[4800];
    files_url(e, c, path, user, url, sizeof url);
    struct curl_slist *h = base_headers(e, NULL, NULL);
    download_state d = {
        .err_body = MEMBUF_INIT, .fn = fn, .userdata = userdata, .curl = c, .range = range, .size = -1};
    char bytes[64];
    if (range) {
        snprintf(bytes, sizeof bytes, "%llu-%llu", range->offset,
                 range->offset + (range->length ? range->length : 1) - 1);
        curl_easy_setopt(c, CURLOPT_RANGE, bytes);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, download_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &d);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, download_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L * 1024);
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &d.status);
    curl_slist_free_all(h);
    if (range) {
        range->file_size = d.size;
        curl_easy_setopt(c, CURLOPT_RANGE, NULL); /* the handle is reused */
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, NULL);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, NULL);
        if (d.status == 416)
            d.status = 206; /* the range starts past the end: no bytes, and the size */
        if (d.status == 200 && cc == CURLE_WRITE_ERROR && d.pos > range->offset)
            cc = CURLE_OK; /* a whole-file answer cut once the range was had */
    }
    rc = 0;
    if (d.status && d.status != 200 && d.status != 206)
        rc = error_from_body(d.err_body.b.data, d.err_body.b.len, d.status, err);
    else if (cc == CURLE_WRITE_ERROR)
        rc = abx__error_set(err, ABX_EIO, "writing the downloaded bytes failed");
    else if (cc != CURLE_OK)
        rc = curl_failure(cc, err);
    abx__buf_free(&d.err_body.b);
    if (cc != CURLE_OK)
        curl_easy_cleanup(c);
    else
        release(e, c);
    return rc;
}

typedef struct upload_state {
    abx_envd_read_fn fn;
    void *userdata;
} upload_state;

static size_t upload_read(char *buf, size_t size, size_t n, void *ud)
{
    upload_state *u = ud;
    return u->fn(buf, size * n, u->userdata);
}

int abx__envd_upload(abx_envd *e, const char *path, const char *user, abx_envd_read_fn fn, void *userdata,
                     long long size, abx_error **err)
{
    int rc = 0;
    CURL *c = begin(e, &rc, err);
    if (!c)
        return rc;
    char url[4800];
    files_url(e, c, path, user, url, sizeof url);
    struct curl_slist *h = base_headers(e, NULL, "application/octet-stream");
    upload_state u = {fn, userdata};
    membuf out = MEMBUF_INIT;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, upload_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &u);
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    if (size >= 0)
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, membuf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    CURLcode cc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    rc = 0;
    if (status && (status < 200 || status > 299))
        rc = error_from_body(out.b.data, out.b.len, status, err);
    else if (cc != CURLE_OK)
        rc = curl_failure(cc, err);
    abx__buf_free(&out.b);
    if (cc != CURLE_OK)
        curl_easy_cleanup(c);
    else
        release(e, c);
    return rc;
}
