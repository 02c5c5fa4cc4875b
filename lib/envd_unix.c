/* envd_unix.c: the envd client's transport to the local shim, HTTP/1.1 over
 * its Unix socket (see envd_exchange.h).
 *
 * Owns: the kept-alive connections of an abx_envd (idle_fds: as many as
 * calls ran at once, up to ABX_ENVD_IDLE_MAX, so that an MCP server's
 * concurrent calls do not each open a connection, for which the shim
 * starts a thread), writing a
 * request (its headers from the exchange, a fixed body with its length or
 * a streamed one chunked when its size is unknown) and reading the answer,
 * which http-parser parses (status, headers, chunked or sized bodies,
 * keep-alive). The answer is bounded by the exchange's callbacks (and its
 * headers by http-parser's 80 KiB), every wait by poll() that also checks
 * the exchange's cancel ten times a second. Nothing here knows envd's
 * routes or errors (envd_client.c does).
 */
#include "envd_exchange.h"
#include "buf.h"
#include "sysutil.h"

#include <errno.h>
#include <http_parser.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define POLL_MS 100
#define READ_CHUNK (64u << 10)
#define UPLOAD_CHUNK (512u << 10)
#define HEAD_MAX (16u << 10) /* the request's head: headers from the exchange, a few hundred bytes each */

/* ---- the kept connection ------------------------------------------------ */

static int connect_socket(const char *path, envd_exchange *x)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(x->detail, sizeof x->detail, "the socket path is too long");
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(x->detail, sizeof x->detail, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(x->detail, sizeof x->detail, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* A kept connection that is still open and quiet (a server that closed
 * it, or sent anything unasked, makes it unusable: it is closed and the
 * next one tried), else -1. */
static int take_cached(abx_envd *e)
{
    for (;;) {
        int fd = -1;
        pthread_mutex_lock(&e->mu);
        for (size_t i = 0; i < ABX_ENVD_IDLE_MAX && fd < 0; i++) {
            fd = e->idle_fds[i];
            e->idle_fds[i] = -1;
        }
        pthread_mutex_unlock(&e->mu);
        if (fd < 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 0) == 0)
            return fd;
        close(fd);
    }
}

static void keep_or_close(abx_envd *e, int fd)
{
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < ABX_ENVD_IDLE_MAX && fd >= 0; i++) {
        if (e->idle_fds[i] < 0) {
            e->idle_fds[i] = fd;
            fd = -1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    if (fd >= 0)
        close(fd);
}

void abx__envd_unix_close(abx_envd *e)
{
    for (size_t i = 0; i < ABX_ENVD_IDLE_MAX; i++) {
        if (e->idle_fds[i] >= 0)
            close(e->idle_fds[i]);
        e->idle_fds[i] = -1;
    }
}

/* ---- writing the request -------------------------------------------------- */

static int send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The request line and headers into head (bounded): 0, or -1 when they do not fit. */
static int format_head(const envd_exchange *x, abx_buf *head)
{
    int rc = abx__buf_append_str(head, x->post ? "POST " : "GET ");
    rc = rc ? rc : abx__buf_append_str(head, x->path);
    rc = rc ? rc : abx__buf_append_str(head, " HTTP/1.1\r\nHost: localhost\r\n");
    for (size_t i = 0; rc == 0 && x->headers[i]; i++) {
        rc = abx__buf_append_str(head, x->headers[i]);
        rc = rc ? rc : abx__buf_append_str(head, "\r\n");
    }
    char line[96];
    if (rc == 0 && x->range) {
        snprintf(line, sizeof line, "Range: bytes=%s\r\n", x->range);
        rc = abx__buf_append_str(head, line);
    }
    if (rc == 0 && x->post) {
        if (x->read_fn && x->read_size < 0)
            snprintf(line, sizeof line, "Transfer-Encoding: chunked\r\n");
        else
            snprintf(line, sizeof line, "Content-Length: %lld\r\n",
                     x->read_fn ? x->read_size : (long long)x->body_len);
        rc = abx__buf_append_str(head, line);
    }
    return rc ? rc : abx__buf_append_str(head, "\r\n");
}

/* A streamed body: read_size bytes (chunked when unknown) from read_fn. */
static envd_outcome send_streamed(int fd, envd_exchange *x)
{
    char *chunk = malloc(UPLOAD_CHUNK + 32);
    if (!chunk) {
        snprintf(x->detail, sizeof x->detail, "out of memory");
        return ENVD_FAILED;
    }
    bool chunked = x->read_size < 0;
    long long left = x->read_size;
    envd_outcome out = ENVD_OK;
    while (out == ENVD_OK && (chunked || left > 0)) {
        size_t want = chunked || left > (long long)UPLOAD_CHUNK ? UPLOAD_CHUNK : (size_t)left;
        size_t got = x->read_fn(chunk + 16, want, x->read_ud);
        if (got > want) { /* ABX_ENVD_READ_ABORT */
            snprintf(x->detail, sizeof x->detail, "the upload's source failed");
            out = ENVD_ABORTED;
            break;
        }
        if (got == 0 && !chunked) {
            snprintf(x->detail, sizeof x->detail, "the upload ended %lld bytes short", left);
            out = ENVD_ABORTED;
            break;
        }
        char *from = chunk + 16;
        size_t len = got;
        if (chunked) { /* "<hex>\r\n" before the bytes, "\r\n" after */
            char size_line[16];
            int n = snprintf(size_line, sizeof size_line, "%zx\r\n", got);
            from -= n;
            memcpy(from, size_line, (size_t)n);
            memcpy(chunk + 16 + got, "\r\n", 2);
            len = got + (size_t)n + 2;
        }
        if (send_all(fd, from, len) < 0) {
            snprintf(x->detail, sizeof x->detail, "send: %s", strerror(errno));
            out = ENVD_NO_ANSWER;
        }
        left -= (long long)got;
        if (chunked && got == 0)
            break; /* "0\r\n\r\n" was the last chunk */
    }
    free(chunk);
    return out;
}

/* ---- reading the answer ---------------------------------------------------- */

typedef struct reader {
    envd_exchange *x;
    char field[128];
    char value[512];
    size_t field_len, value_len;
    bool in_value;
    bool complete;
    bool aborted;
} reader;

static void add_bounded(char *to, size_t cap, size_t *len, const char *at, size_t n)
{
    size_t room = cap - 1 - *len;
    n = n < room ? n : room; /* a longer header is cut: none we read is that long */
    memcpy(to + *len, at, n);
    *len += n;
    to[*len] = '\0';
}

static int flush_header(reader *r)
{
    if (!r->in_value)
        return 0;
    r->in_value = false;
    char line[sizeof r->field + sizeof r->value + 2];
    int n = snprintf(line, sizeof line, "%s: %s", r->field, r->value);
    r->field_len = r->value_len = 0;
    r->field[0] = r->value[0] = '\0';
    if (r->x->on_header && r->x->on_header(line, (size_t)n, r->x->ud) != (size_t)n) {
        r->aborted = true;
        return -1;
    }
    return 0;
}

static int on_message_begin(http_parser *p)
{
    reader *r = p->data;
    if (r->x->on_header && r->x->on_header("HTTP/1.1", 8, r->x->ud) != 8) {
        r->aborted = true;
        return -1;
    }
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    reader *r = p->data;
    if (flush_header(r) < 0)
        return -1;
    add_bounded(r->field, sizeof r->field, &r->field_len, at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    reader *r = p->data;
    r->in_value = true;
    add_bounded(r->value, sizeof r->value, &r->value_len, at, n);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    reader *r = p->data;
    r->x->status = p->status_code;
    return flush_header(r);
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    reader *r = p->data;
    if (r->x->status < 200)
        return 0; /* an interim answer's body (there is none in HTTP/1.1) */
    if (r->x->on_body(at, n, r->x->ud) != n) {
        r->aborted = true;
        return -1;
    }
    return 0;
}

static int on_message_complete(http_parser *p)
{
    reader *r = p->data;
    if (r->x->status >= 200) /* a 100 Continue is followed by the answer */
        r->complete = true;
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Reads and parses the answer until it is whole; *keep: the connection
 * can carry the next exchange. *got_any: a byte of it arrived. */
static envd_outcome read_answer(int fd, envd_exchange *x, bool *keep, bool *got_any)
{
    reader r = {.x = x};
    http_parser parser;
    http_parser_init(&parser, HTTP_RESPONSE);
    parser.data = &r;
    char *buf = malloc(READ_CHUNK);
    if (!buf) {
        snprintf(x->detail, sizeof x->detail, "out of memory");
        return ENVD_FAILED;
    }
    envd_outcome out = ENVD_OK;
    while (!r.complete) {
        if (x->cancel && x->cancel(x->cancel_ud)) {
            out = ENVD_CANCELLED;
            break;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = poll(&pfd, 1, x->cancel ? POLL_MS : -1);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0) {
            snprintf(x->detail, sizeof x->detail, "poll: %s", strerror(errno));
            out = ENVD_FAILED;
            break;
        }
        if (ready == 0)
            continue;
        ssize_t n = recv(fd, buf, READ_CHUNK, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(x->detail, sizeof x->detail, "recv: %s", strerror(errno));
            out = *got_any ? ENVD_FAILED : ENVD_NO_ANSWER;
            break;
        }
        *got_any = *got_any || n > 0;
        size_t used = http_parser_execute(&parser, &parser_settings, buf, (size_t)n);
        if (r.aborted) {
            out = ENVD_ABORTED;
            break;
        }
        if (HTTP_PARSER_ERRNO(&parser) != HPE_OK || used != (size_t)n) {
            snprintf(x->detail, sizeof x->detail, "malformed answer: %s",
                     http_errno_description(HTTP_PARSER_ERRNO(&parser)));
            out = ENVD_FAILED;
            break;
        }
        if (n == 0 && !r.complete) { /* closed before the answer was whole */
            snprintf(x->detail, sizeof x->detail, "the connection closed mid-answer");
            out = *got_any ? ENVD_FAILED : ENVD_NO_ANSWER;
            break;
        }
    }
    *keep = out == ENVD_OK && http_should_keep_alive(&parser);
    free(buf);
    return out;
}

/* ---- one exchange --------------------------------------------------------- */

/* Sends x on fd and reads its answer. *retry: it failed before anything
 * could have reached the server's handler (a kept connection the server
 * had closed), and x may be sent again on a new one. */
static envd_outcome exchange_on(int fd, envd_exchange *x, bool *keep, bool *retry)
{
    *keep = false;
    *retry = false;
    abx_buf head;
    abx__buf_init(&head, HEAD_MAX);
    if (format_head(x, &head) != 0) {
        abx__buf_free(&head);
        snprintf(x->detail, sizeof x->detail, "the request's headers are too long");
        return ENVD_FAILED;
    }
    int sent = send_all(fd, head.data, head.len);
    abx__buf_free(&head);
    if (sent < 0) {
        snprintf(x->detail, sizeof x->detail, "send: %s", strerror(errno));
        *retry = true;
        return ENVD_NO_ANSWER;
    }
    envd_outcome out = ENVD_OK;
    if (x->post && x->read_fn && (out = send_streamed(fd, x)) == ENVD_ABORTED)
        return out; /* the server waits for the rest: the connection is dropped */
    if (x->post && !x->read_fn && x->body_len && send_all(fd, x->body, x->body_len) < 0) {
        snprintf(x->detail, sizeof x->detail, "send: %s", strerror(errno));
        out = ENVD_NO_ANSWER;
    }
    /* a server that answered early (and closed) has its answer read still */
    bool got_any = false;
    envd_outcome answer = read_answer(fd, x, keep, &got_any);
    if (answer == ENVD_NO_ANSWER && !x->read_fn)
        *retry = true;
    if (out != ENVD_OK && answer == ENVD_NO_ANSWER)
        return out;
    *keep = *keep && out == ENVD_OK;
    return answer;
}

envd_outcome abx__envd_unix_perform(abx_envd *e, envd_exchange *x)
{
    x->status = 0;
    x->detail[0] = '\0';
    int fd = take_cached(e);
    bool reused = fd >= 0;
    if (fd < 0 && (fd = connect_socket(e->unix_socket, x)) < 0)
        return ENVD_NO_ANSWER;
    bool keep, retry;
    envd_outcome out = exchange_on(fd, x, &keep, &retry);
    if (out == ENVD_NO_ANSWER && retry && reused) { /* the kept connection had gone stale: once more */
        close(fd);
        if ((fd = connect_socket(e->unix_socket, x)) < 0)
            return ENVD_NO_ANSWER;
        out = exchange_on(fd, x, &keep, &retry);
    }
    if (keep)
        keep_or_close(e, fd);
    else
        close(fd);
    return out;
}
