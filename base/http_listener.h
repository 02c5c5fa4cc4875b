/* http_listener.h: the one HTTP listener skeleton of abx's servers (`abx
 * mcp serve`, `abx serve`): a TCP socket bound to HOST:PORT, a
 * libmicrohttpd daemon with a thread per connection on it, and what every
 * listener needs before authentication: a connection limit per client
 * address, a deadline to send a request's headers (a slow loris holding
 * slots gets cut), and an idle timeout. Part of the base layer: front
 * ends use it directly.
 */
#ifndef ABX_HTTP_LISTENER_H
#define ABX_HTTP_LISTENER_H

#include "abx/abx.h"
#include "netlibs.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct abx_http_service {
    const char *listen; /* "HOST:PORT" or "[V6]:PORT"; port 0: a free one; NULL: listen_fd */
    int listen_fd; /* with listen NULL: a bound, listening socket (a Unix one), the listener's from then on */
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    MHD_RequestCompletedCallback completed; /* may be NULL; gets handler_cls */
    /* Defaults, each overridden by $<env_prefix>_CONNECTION_TIMEOUT,
     * _HEADER_TIMEOUT (seconds, 1-3600) and _CLIENT_CONNECTIONS (1-1024). */
    const char *env_prefix; /* "ABX_MCP", "ABX_SERVE" */
    unsigned idle_s; /* a connection that sends nothing this long is closed (ABX_HTTP_FOREVER: never) */
    unsigned header_deadline_s; /* to send each request's headers */
    unsigned per_client;        /* connections per client address */
    bool per_user;              /* a Unix socket's callers: per_client connections per host user (uid) */
    unsigned max_connections;   /* in all */
} abx_http_service;

#define ABX_HTTP_FOREVER (~0u) /* idle_s: no idle timeout (streams that may stay quiet for long) */

typedef struct abx_http_listener abx_http_listener;

/* Binds and starts serving; *out is the caller's (abx__http_stop).
 * libmicrohttpd must be loaded (abx__mhd()). */
int abx__http_start(const abx_http_service *svc, abx_http_listener **out, abx_error **err);
/* What it listens on: the port, whether the address is loopback, and the
 * host to print ("0.0.0.0" for a wildcard; owned by l). */
int abx__http_port(const abx_http_listener *l);
bool abx__http_loopback(const abx_http_listener *l);
const char *abx__http_host(const abx_http_listener *l);
/* Stops the daemon (its connections end) and frees l. NULL is a no-op. */
void abx__http_stop(abx_http_listener *l);

/* A response body read from a pipe as it is written (libmicrohttpd's
 * content reader): bytes, or its end, or an error. */
ssize_t abx__http_read_fd(int fd, char *buf, size_t max);

/* A server's stop signals (SIGTERM, SIGINT, SIGHUP) blocked in the caller
 * (call it before any thread starts, so that they inherit the mask) and
 * read from the returned signalfd by abx__stop_signal_wait; SIGPIPE is
 * ignored (a client gone mid-answer is a write error, not a death). */
int abx__stop_signals_block(void);
/* Waits for one of them (fd from abx__stop_signals_block), then closes fd. */
void abx__stop_signal_wait(int fd);

#endif
