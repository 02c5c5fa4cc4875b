/* proxy.c: the data plane of `abx serve`: a request routed to a sandbox
 * (serve.c, which found the sandbox through a tenant's client and checked
 * the path against what the port is for) is relayed to that port's
 * endpoint as libabx gives it (abx_sandbox_endpoint: connections the
 * library opens for a local sandbox, its shim's socket or a port inside
 * its network namespace; a URL with routing headers for a remote host)
 * and the answer streamed back, both ways without holding a body: a
 * worker thread drives libcurl, the request body reaches it through one
 * pipe and the answer leaves through another, read by libmicrohttpd as it
 * comes (Connect streams, 1 GiB files). What one request holds in flight
 * is bounded (SERVE_PROXY_BUFFER); serve.c bounds the requests per tenant.
 *
 * Owns: the proxy's state (refcounted by the connection, the worker and
 * the response), which headers pass (not hop-by-hop ones, not routing,
 * API-key or traffic-token headers), the traffic token a sandbox created
 * with allowPublicTraffic false needs on every port but envd's, and which
 * token reaches the sandbox: envd (49983) gets only the client's own
 * X-Access-Token, never one added here; the code interpreter (49999) gets
 * the sandbox's for /contexts and /health, which E2B's SDK sends without
 * one, but /execute only with the client's.
 */
#include "serve.h"
#include "http_listener.h"
#include "buf.h"
#include "netlibs.h"
#include "sysutil.h"
#include "parse.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include "evp_api.h"
#include <sched.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MAX_ANSWER_HEADERS 32
#define SMALL_BODY (1u << 20)

struct serve_proxy {
    atomic_int refs; /* the connection's, the worker's, the response's */
    CURL *curl;
    struct curl_slist *req_headers;
    abx_sandbox *sandbox; /* the proxy's (freed with it) */
    char url[8192];
    bool upload;
    bool discard;     /* a body the method does not carry (GET, DELETE): read and dropped */
    long long length; /* the request body's, -1 unknown */
    int conn;         /* a socket of the sandbox's network (sandbox_socket), until curl takes it; else -1 */
    int up[2];        /* request body: the connection writes up[1], curl reads up[0] */
    int down[2];      /* answer body: curl writes down[1], the response reads down[0] */
    pthread_t worker;
    pthread_mutex_t mu;    /* what follows, and the fds' closing */
    pthread_cond_t headed; /* the answer's headers are in (or it failed) */
    bool headers_done, failed;
    bool answered; /* a response reads down[0] (and closes it) */
    /* A body of known length up to SMALL_BODY (every RPC) is gathered first
     * and sent whole: a shim that answers before reading it (a wrong token)
     * then never races a body still streaming. Larger ones stream. */
    bool small;
    bool started; /* the worker runs (it holds a reference) */
    abx_buf small_body;
    long status;
    char *names[MAX_ANSWER_HEADERS], *values[MAX_ANSWER_HEADERS];
    size_t nheaders;
};

static void close_fd(serve_proxy *p, int *fd)
{
    pthread_mutex_lock(&p->mu);
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
    pthread_mutex_unlock(&p->mu);
}

static void unref(serve_proxy *p)
{
    if (atomic_fetch_sub(&p->refs, 1) != 1)
        return;
    int *fds[] = {&p->up[0], &p->up[1], &p->down[0], &p->down[1], &p->conn};
    for (size_t i = 0; i < 5; i++)
        if (*fds[i] >= 0)
            close(*fds[i]);
    for (size_t i = 0; i < p->nheaders; i++) {
        free(p->names[i]);
        free(p->values[i]);
    }
    if (p->curl)
        curl_easy_cleanup(p->curl);
    abx__buf_free(&p->small_body);
    curl_slist_free_all(p->req_headers);
    abx_sandbox_free(p->sandbox);
    pthread_cond_destroy(&p->headed);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* ---- the worker: libcurl to the shim ---------------------------------------------------- */

static bool hop_by_hop(const char *name, size_t n)
{
    static const char *const skip[] = {"connection", "keep-alive", "transfer-encoding", "content-length",
                                       "date",       "server",     "upgrade",           "proxy-connection",
                                       "te",         "trailer"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strlen(skip[i]) == n && strncasecmp(name, skip[i], n) == 0)
            return true;
    return false;
}

/* One header line of the shim's answer, as libcurl hands it. */
static size_t on_header(char *line, size_t size, size_t n, void *ud)
{
    serve_proxy *p = ud;
    size_t len = size * n;
    pthread_mutex_lock(&p->mu);
    if (len >= 2 && line[0] == '\r' && line[1] == '\n') { /* the end of a header block */
        long status = 0;
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200) {
            p->status = status;
            p->headers_done = true;
            pthread_cond_broadcast(&p->headed);
        }
    } else if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        for (size_t i = 0; i < p->nheaders; i++) { /* a new answer (after 100 Continue) */
            free(p->names[i]);
            free(p->values[i]);
        }
        p->nheaders = 0;
    } else {
        const char *colon = memchr(line, ':', len);
        size_t nl = colon ? (size_t)(colon - line) : 0;
        if (colon && nl && !hop_by_hop(line, nl) && p->nheaders < MAX_ANSWER_HEADERS) {
            const char *v = colon + 1, *end = line + len;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
                end--;
            p->names[p->nheaders] = strndup(line, nl);
            p->values[p->nheaders] = strndup(v, (size_t)(end - v));
            if (p->names[p->nheaders] && p->values[p->nheaders])
                p->nheaders++;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    serve_proxy *p = ud;
    size_t len = size * n;
    return abx__write_all(p->down[1], data, len) == 0 ? len : 0; /* the client went away: stop */
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
    serve_proxy *p = ud;
    for (;;) {
        ssize_t got = read(p->up[0], buf, size * n);
        if (got >= 0)
            return (size_t)got;
        if (errno != EINTR)
            return CURL_READFUNC_ABORT;
    }
}

/* An endpoint with sandbox_socket: curl's one socket is the one libabx
 * made in the sandbox's network; curl connects it. */
static curl_socket_t open_dialed(void *ud, curlsocktype purpose, struct curl_sockaddr *address)
{
    (void)purpose;
    (void)address;
    serve_proxy *p = ud;
    pthread_mutex_lock(&p->mu);
    int fd = p->conn;
    p->conn = -1; /* curl's now: it closes it */
    pthread_mutex_unlock(&p->mu);
    return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static void *worker_main(void *arg)
{
    serve_proxy *p = arg;
    CURLcode cc = curl_easy_perform(p->curl);
    pthread_mutex_lock(&p->mu);
    (void)cc; /* an answer cut short ends its stream; one never begun is a 502 */
    p->failed = !p->headers_done;
    p->headers_done = true;
    pthread_cond_broadcast(&p->headed);
    pthread_mutex_unlock(&p->mu);
    close_fd(p, &p->down[1]); /* the answer's end */
    close_fd(p, &p->up[0]);
    unref(p);
    return NULL;
}

/* ---- the connection's side ---------------------------------------------------------------- */

static enum MHD_Result add_request_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                          const char *value)
{
    (void)kind;
    serve_proxy *p = cls;
    static const char *const drop[] = {"host",
                                       "connection",
                                       "content-length",
                                       "transfer-encoding",
                                       "expect",
                                       "e2b-sandbox-id",
                                       "e2b-sandbox-port",
                                       "x-api-key",
                                       "keep-alive",
                                       "upgrade",
                                       "proxy-connection",
                                       "te",
                                       "e2b-traffic-access-token"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (strcasecmp(key, drop[i]) == 0)
            return MHD_YES;
    if (strlen(key) + strlen(value ? value : "") > 8000)
        return MHD_YES;
    char line[8200];
    snprintf(line, sizeof line, "%s: %s", key, value ? value : "");
    struct curl_slist *l = curl_slist_append(p->req_headers, line);
    if (l)
        p->req_headers = l;
    return MHD_YES;
}

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    serve_proxy *p = cls;
    char *k = curl_easy_escape(p->curl, key, 0), *v = value ? curl_easy_escape(p->curl, value, 0) : NULL;
    size_t at = strlen(p->url);
    if (k && at + strlen(k) + (v ? strlen(v) : 0) + 3 < sizeof p->url)
        snprintf(p->url + at, sizeof p->url - at, "%c%s%s%s", strchr(p->url, '?') ? '&' : '?', k,
                 v ? "=" : "", v ? v : "");
    curl_free(k);
    curl_free(v);
    return MHD_YES;
}

/* A sandbox created with network.allowPublicTraffic false (its notes keep
 * the traffic token): the request must carry it. */
static bool traffic_allowed(struct MHD_Connection *c, abx_sandbox *sb)
{
    char *text = NULL;
    json_t *notes = abx_sandbox_notes(sb, &text, NULL) == 0 ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    const char *want = json_string_value(json_object_get(notes, "traffic_token"));
    const char *got = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "e2b-traffic-access-token");
    bool ok = !want || (got && strlen(got) == strlen(want) && CRYPTO_memcmp(got, want, strlen(want)) == 0);
    json_decref(notes);
    return ok;
}

static void add_header_line(serve_proxy *p, const char *name, const char *value)
{
    char line[1100];
    if (snprintf(line, sizeof line, "%s: %s", name, value) >= (int)sizeof line)
        return;
    struct curl_slist *l = curl_slist_append(p->req_headers, line);
    if (l)
        p->req_headers = l;
    explicit_bzero(line, sizeof line);
}

bool serve_signed_url_unexpired(struct MHD_Connection *c)
{
    const char *exp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature_expiration");
    unsigned long long until = 0;
    return !exp || (abx__parse_u64(exp, &until) == 0 && until >= (unsigned long long)time(NULL));
}

bool serve_signed_url_ok(struct MHD_Connection *c, const char *method, const char *token)
{
    const char *sig = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature");
    const char *path = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "path");
    const char *user = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "username");
    const char *exp = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature_expiration");
    const char *op = strcmp(method, "GET") == 0 ? "read" : strcmp(method, "POST") == 0 ? "write" : NULL;
    if (!sig || !op || !token || !token[0] || strlen(sig) > 64 || !serve_signed_url_unexpired(c))
        return false;
    /* E2B's v1: base64(sha256("path:operation:user:token[:expiration]")), unpadded */
    char *raw = NULL;
    int n = asprintf(&raw, "%s:%s:%s:%s%s%s", path ? path : "", op, user ? user : "", token, exp ? ":" : "",
                     exp ? exp : "");
    unsigned char digest[32];
    bool hashed = n > 0 && EVP_Digest(raw, (size_t)n, digest, NULL, EVP_sha256(), NULL) == 1;
    if (raw) {
        explicit_bzero(raw, (size_t)(n > 0 ? n : 0));
        free(raw);
    }
    char want[3 + 48];
    memcpy(want, "v1_", 3);
    int len = hashed ? EVP_EncodeBlock((unsigned char *)want + 3, digest, sizeof digest) : 0;
    while (len > 0 && want[3 + len - 1] == '=')
        len--;
    want[3 + len] = '\0';
    return hashed && strlen(sig) == (size_t)(3 + len) && CRYPTO_memcmp(sig, want, (size_t)(3 + len)) == 0;
}

/* The headers the relayed request carries besides the client's: the
 * endpoint's routing, the Host a user port's app was called by, and the
 * code interpreter's token where E2B's SDK sends none. */
static void add_endpoint_headers(serve_proxy *p, struct MHD_Connection *c, const abx_endpoint *ep,
                                 unsigned port, const char *url, const char *method)
{
    for (size_t i = 0; i < sizeof ep->headers / sizeof ep->headers[0] && ep->headers[i][0]; i++) {
        struct curl_slist *l = curl_slist_append(p->req_headers, ep->headers[i]);
        if (l)
            p->req_headers = l;
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    bool user_port = port != ABX_PORT_ENVD && port != ABX_PORT_CODE;
    if (ep->sandbox_socket && user_port && host &&
        strlen(host) < 512) /* the app inside sees the name it was called by */
        add_header_line(p, "Host", host);
    bool client_token = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token") != NULL;
    if (port == ABX_PORT_CODE && !client_token && ep->token[0] && strcmp(url, "/execute") != 0)
        add_header_line(p, "X-Access-Token", ep->token);
    /* a signed upload or download URL (E2B's uploadUrl/downloadUrl) is the
     * token's proof for that one file and operation */
    if (port == ABX_PORT_ENVD && !client_token && strcmp(url, "/files") == 0 &&
        serve_signed_url_ok(c, method, ep->token))
        add_header_line(p, "X-Access-Token", ep->token);
}

/* libcurl set up for the request (the worker starts later). */
static void setup_curl(serve_proxy *p, const char *method, const abx_endpoint *ep)
{
    if (ep->unix_socket[0])
        curl_easy_setopt(p->curl, CURLOPT_UNIX_SOCKET_PATH, ep->unix_socket); /* copied by curl */
    if (ep->sandbox_socket) {
        curl_easy_setopt(p->curl, CURLOPT_OPENSOCKETFUNCTION, open_dialed);
        curl_easy_setopt(p->curl, CURLOPT_OPENSOCKETDATA, p);
    }
    curl_easy_setopt(p->curl, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(p->curl, CURLOPT_URL, p->url);
    curl_easy_setopt(p->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, p->req_headers);
    curl_easy_setopt(p->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(p->curl, CURLOPT_HEADERDATA, p);
    curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(p->curl, CURLOPT_BUFFERSIZE, (long)SERVE_PROXY_BUFFER);
    curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(p->curl, CURLOPT_PATH_AS_IS, 1L); /* the path as checked, never resolved anew */
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(p->curl, CURLOPT_NOBODY, 1L);
    if (p->upload && !p->small) {
        curl_easy_setopt(p->curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(p->curl, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(p->curl, CURLOPT_READDATA, p);
        curl_easy_setopt(p->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)p->length);
        curl_easy_setopt(p->curl, CURLOPT_CUSTOMREQUEST, method); /* UPLOAD means PUT unless told */
    }
}

serve_proxy *serve_proxy_begin(struct MHD_Connection *c, abx_sandbox *sb, unsigned port, const char *url,
                               const char *method, unsigned *status, char **body)
{
    *status = 502;
    *body = NULL;
    abx_endpoint ep;
    int conn = -1;
    abx_error *err = NULL;
    int rc = abx_sandbox_endpoint(sb, port, &ep, &err);
    bool signed_url = port == ABX_PORT_ENVD && strcmp(url, "/files") == 0 &&
                      MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "signature") &&
                      !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Access-Token");
    if (rc == 0 && signed_url && !serve_signed_url_ok(c, method, ep.token)) { /* as envd answers it */
        *status = 401;
        *body = strdup("invalid signature: not this file's and operation's, or expired");
        rc = -ABX_EAUTH;
    } else if (rc == 0 && port != ABX_PORT_ENVD && !traffic_allowed(c, sb)) {
        *status = 403;
        *body = strdup("this sandbox's ports need its e2b-traffic-access-token");
        rc = -ABX_EPERM;
    } else if (rc == -ABX_ENOTSUP) {
        *status = 501;
        *body = strdup("this provider's sandboxes have no data plane abx serve can relay");
    }
    abx_error_free(err);
    if (rc == 0 && ep.sandbox_socket)
        rc = abx_sandbox_socket(sb, &conn, NULL); /* gone: E2B's 502 */
    serve_proxy *p = rc == 0 && abx__curl() ? calloc(1, sizeof *p) : NULL;
    if (!p) {
        if (conn >= 0)
            close(conn);
        explicit_bzero(&ep, sizeof ep);
        abx_sandbox_free(sb);
        return NULL;
    }
    atomic_init(&p->refs, 2);
    p->up[0] = p->up[1] = p->down[0] = p->down[1] = -1;
    p->conn = conn;
    p->sandbox = sb;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->headed, NULL);
    p->curl = curl_easy_init();
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    p->length = cl ? strtoll(cl, NULL, 10) : -1;
    p->upload = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
    p->discard = !p->upload;
    p->small = p->upload && p->length >= 0 && p->length <= (long long)SMALL_BODY;
    abx__buf_init(&p->small_body, SMALL_BODY);
    bool ok =
        p->curl && pipe2(p->down, O_CLOEXEC) == 0 && (p->small || !p->upload || pipe2(p->up, O_CLOEXEC) == 0);
    if (ok) { /* what one request holds in flight: its pipes' and curl's buffers */
        fcntl(p->down[1], F_SETPIPE_SZ, (int)SERVE_PROXY_BUFFER);
        if (p->up[1] >= 0)
            fcntl(p->up[1], F_SETPIPE_SZ, (int)SERVE_PROXY_BUFFER);
        snprintf(p->url, sizeof p->url, "%s%s", ep.url, url);
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query, p);
        MHD_get_connection_values(c, MHD_HEADER_KIND, add_request_header, p);
        p->req_headers = curl_slist_append(p->req_headers, "Expect:");
        add_endpoint_headers(p, c, &ep, port, url, method);
        setup_curl(p, method, &ep);
        ok = p->small || pthread_create(&p->worker, NULL, worker_main, p) == 0; /* small: at finish */
        p->started = ok && !p->small;
        if (p->started)
            pthread_detach(p->worker);
    }
    explicit_bzero(&ep, sizeof ep);
    if (!ok) {
        atomic_store(&p->refs, 1);
        unref(p);
        *status = 500;
        *body = strdup("the request could not be forwarded");
        return NULL;
    }
    return p;
}

bool serve_proxy_upload(serve_proxy *p, const char *data, size_t len)
{
    if (p->discard)
        return true;
    if (p->small) /* more than its Content-Length said: refused */
        return abx__buf_append(&p->small_body, data, len) == 0;
    return p->up[1] >= 0 && abx__write_all(p->up[1], data, len) == 0;
}

static ssize_t read_answer(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    serve_proxy *p = cls;
    return abx__http_read_fd(p->down[0], buf, max);
}

static void answer_done(void *cls)
{
    serve_proxy *p = cls;
    close_fd(p, &p->down[0]); /* a worker still writing stops */
    unref(p);
}

int serve_proxy_finish(serve_proxy *p, struct MHD_Connection *c)
{
    close_fd(p, &p->up[1]); /* the request's end */
    if (p->small) {         /* the whole body is here: send it in one piece */
        curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, p->small_body.data ? p->small_body.data : "");
        curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->small_body.len);
        p->started = pthread_create(&p->worker, NULL, worker_main, p) == 0;
        if (p->started) {
            pthread_detach(p->worker);
        } else {
            pthread_mutex_lock(&p->mu);
            p->failed = p->headers_done = true;
            pthread_mutex_unlock(&p->mu);
        }
    }
    pthread_mutex_lock(&p->mu);
    while (!p->headers_done)
        pthread_cond_wait(&p->headed, &p->mu);
    bool failed = p->failed;
    long status = p->status;
    pthread_mutex_unlock(&p->mu);
    struct MHD_Response *r = NULL;
    if (failed) {
        static const char gone[] = "{\"code\":502,\"message\":\"The sandbox was not found\"}";
        r = MHD_create_response_from_buffer(sizeof gone - 1, (void *)gone, MHD_RESPMEM_PERSISTENT);
        if (r)
            MHD_add_response_header(r, "Content-Type", "application/json");
        status = 502;
    } else {
        atomic_fetch_add(&p->refs, 1);
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 256 * 1024, read_answer, p, answer_done);
        if (!r)
            unref(p);
        else
            p->answered = true;
        for (size_t i = 0; r && i < p->nheaders; i++)
            MHD_add_response_header(r, p->names[i], p->values[i]);
    }
    if (!r)
        return -1;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}

void serve_proxy_release(serve_proxy *p)
{
    if (!p)
        return;
    close_fd(p, &p->up[1]); /* a request cut short: the shim sees its body end */
    if (!p->answered)
        close_fd(p, &p->down[0]); /* nobody will read the answer: the worker stops */
    if (!p->started)
        unref(p); /* the worker's reference: it never ran */
    unref(p);
}
