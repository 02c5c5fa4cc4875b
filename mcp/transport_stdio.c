/* transport_stdio.c: the STDIO transport: newline-delimited JSON-RPC on stdin and
 * stdout, logs only on stderr.
 *
 * A reader thread splits stdin into lines (a line over MAX_MESSAGE bytes is
 * dropped and answered with -32600 and its id, read from the line's first
 * bytes or its last TAIL_KEPT, so the client is not left waiting; a last
 * line without a newline still counts) and hands each to the server; answers from any thread are written
 * whole under one lock. The main thread waits for stdin's end or a
 * termination signal. At the end of input, tool calls still running are
 * let finish and answered (for up to DRAIN_SECONDS, or until a signal), so
 * `printf '...' | abx mcp start` gets every answer; a signal cancels them
 * at once. Then the server shuts down, which destroys every sandbox the
 * session created, and only then does this return.
 */
#include "transport_stdio.h"
#include "buf.h"
#include "bounds.h"
#include "text.h"
#include "sysutil.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#define MAX_MESSAGE ABX_BOUND_MCP_MESSAGE
#define TAIL_KEPT 65536
#define DRAIN_SECONDS 300

typedef struct stdio_ctx {
    mcp_server *srv;
    pthread_mutex_t out_mu;
    int eof_fd; /* eventfd: the reader saw EOF */
} stdio_ctx;

static void write_line(void *ctx, const char *json, size_t len)
{
    stdio_ctx *c = ctx;
    pthread_mutex_lock(&c->out_mu);
    fwrite(json, 1, len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&c->out_mu);
}

/* The last TAIL_KEPT bytes of an over-long line, as a ring. */
typedef struct tail_ring {
    char data[TAIL_KEPT];
    size_t pos, len;
} tail_ring;

static void tail_add(tail_ring *t, char ch)
{
    t->data[t->pos] = ch;
    t->pos = (t->pos + 1) % TAIL_KEPT;
    if (t->len < TAIL_KEPT)
        t->len++;
}

/* Answers an over-long line: -32600 with its id when it can be told. */
static void reject_long(stdio_ctx *c, const char *head, size_t head_len, tail_ring *t)
{
    static char linear[TAIL_KEPT];
    size_t start = (t->pos + TAIL_KEPT - t->len) % TAIL_KEPT;
    for (size_t i = 0; i < t->len; i++)
        linear[i] = t->data[(start + i) % TAIL_KEPT];
    json_t *id = mcp_rpc_id_of_long(head, head_len, linear, t->len);
    json_t *e = json_pack("{s:s, s:o, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                          "code", -32600, "message", "Invalid request: message too large (16 MiB at most)");
    char *text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    if (text)
        write_line(c, text, strlen(text));
    free(text);
    t->pos = t->len = 0;
}

/* A line's bytes: into the buffer while it has room, after that only its
 * tail is kept (for the id of the line's answer). */
static void line_bytes(abx_buf *line, bool *overflow, tail_ring *tail, const char *p, size_t n)
{
    size_t room = *overflow ? 0 : line->max - line->len;
    size_t take = n < room ? n : room;
    if (take && abx__buf_append(line, p, take) < 0)
        take = 0; /* no memory: the line cannot be held */
    if (take < n)
        *overflow = true;
    for (size_t i = take; i < n; i++)
        tail_add(tail, p[i]);
}

static void line_end(stdio_ctx *c, mcp_sink *sink, abx_buf *line, bool overflow, tail_ring *tail)
{
    if (overflow)
        reject_long(c, line->data ? line->data : "", line->len, tail);
    else if (line->len > 0 && !(line->len == 1 && line->data[0] == '\r'))
        mcp_server_handle(c->srv, line->data, line->len, sink);
    abx__buf_consume(line, line->len);
}

static void *reader(void *arg)
{
    stdio_ctx *c = arg;
    mcp_sink sink = {write_line, NULL, c};
    abx_buf line;
    abx__buf_init(&line, MAX_MESSAGE - 1);
    bool overflow = false;
    static tail_ring tail; /* this thread's alone */
    char chunk[65536];
    for (;;) {
        ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (size_t at = 0; at < (size_t)n;) {
            const char *nl = memchr(chunk + at, '\n', (size_t)n - at);
            size_t span = nl ? (size_t)(nl - (chunk + at)) : (size_t)n - at;
            line_bytes(&line, &overflow, &tail, chunk + at, span);
            at += span;
            if (nl) {
                line_end(c, &sink, &line, overflow, &tail);
                overflow = false;
                at++;
            }
        }
    }
    if (overflow || line.len) /* a last line without its newline counts */
        line_end(c, &sink, &line, overflow, &tail);
    abx__buf_free(&line);
    uint64_t one = 1;
    (void)write(c->eof_fd, &one, sizeof one);
    return NULL;
}

/* Waits for the calls in flight to finish on their own. Returns true if a
 * termination signal arrived first. */
static bool drain(mcp_server *srv, int sigfd)
{
    struct pollfd p = {.fd = sigfd, .events = POLLIN};
    for (int waited_ms = 0; waited_ms < DRAIN_SECONDS * 1000; waited_ms += 50) {
        if (mcp_server_calls_in_flight(srv) == 0)
            return false;
        if (poll(&p, 1, 50) > 0)
            return true;
    }
    return false;
}

int mcp_stdio_serve(mcp_server *srv)
{
    stdio_ctx c = {.srv = srv};
    pthread_mutex_init(&c.out_mu, NULL);
    c.eof_fd = eventfd(0, EFD_CLOEXEC);
    static const int stop[] = {SIGTERM, SIGINT, SIGHUP, 0};
    int sigfd = abx__signalfd_block(stop, 0); /* threads created below inherit the mask */
    pthread_t t;
    if (c.eof_fd < 0 || sigfd < 0 || pthread_create(&t, NULL, reader, &c) != 0) {
        fprintf(stderr, "abx mcp: cannot start the stdio transport\n");
        return 1;
    }
    pthread_detach(t);
    struct pollfd p[2] = {{.fd = c.eof_fd, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
    while (poll(p, 2, -1) < 0 && errno == EINTR)
        ;
    bool signalled = p[1].revents & POLLIN;
    if (!signalled)
        signalled = drain(srv, sigfd);
    fprintf(stderr, "abx mcp: session ending (%s); destroying its sandboxes\n",
            signalled ? "signal" : "end of input");
    mcp_server_shutdown(srv);
    return 0;
}
