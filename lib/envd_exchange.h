/* envd_exchange.h: one HTTP exchange of the envd client (envd_client.c),
 * described apart from the transport that carries it: libcurl for an
 * E2B-protocol cloud over TCP, or the Unix-socket transport of
 * envd_unix.c for the local shim (which needs no libcurl, and so none of
 * the thirty libraries libcurl maps at its first use).
 */
#ifndef ABX_ENVD_EXCHANGE_H
#define ABX_ENVD_EXCHANGE_H

#include "envd_client.h"
#include <stdbool.h>
#include <stddef.h>

#define ENVD_MAX_HEADERS 12

typedef struct envd_exchange {
    const char *base;                          /* "http://localhost" with a Unix socket */
    const char *path;                          /* "/files?path=..." (encoded) */
    bool post;                                 /* POST, else GET */
    const char *headers[ENVD_MAX_HEADERS + 1]; /* "Name: value" lines, NULL-terminated */
    const char *body;                          /* a POST's fixed body of body_len bytes, or */
    size_t body_len;
    abx_envd_read_fn read_fn; /* its body read from here (0 at the end), read_size bytes (-1: unknown) */
    void *read_ud;
    long long read_size;
    const char *range; /* "A-B": a byte range asked for; NULL: none */
    /* Each response header as "Name: value" (no line end), a new status
     * line as "HTTP/..."; return len to go on. */
    size_t (*on_header)(const char *line, size_t len, void *ud);
    /* The response body as it arrives; status is set before the first
     * call. Return len to go on, anything else ends the exchange (ENVD_ABORTED). */
    size_t (*on_body)(const char *data, size_t len, void *ud);
    void *ud;
    abx_envd_cancel_fn cancel; /* polled while waiting; true ends the exchange (ENVD_CANCELLED) */
    void *cancel_ud;
    long status;      /* out: the response's status (0: none was had) */
    char detail[160]; /* out: what failed, in the transport's words */
} envd_exchange;

typedef enum envd_outcome {
    ENVD_OK,        /* a whole response */
    ENVD_ABORTED,   /* on_body (or read_fn) stopped it */
    ENVD_CANCELLED, /* cancel said so */
    ENVD_NO_ANSWER, /* no connection, or it closed before an answer */
    ENVD_TIMEOUT,   /* the transport's own deadline passed */
    ENVD_FAILED,    /* anything else (a malformed answer, an I/O error): detail says */
    ENVD_NO_LIBRARY /* the transport's library could not be loaded */
} envd_outcome;

/* Runs x over the Unix socket of e, reusing the connection e keeps (and
 * keeping it for the next exchange when the response allows). Thread-safe
 * per e. */
envd_outcome abx__envd_unix_perform(abx_envd *e, envd_exchange *x);
/* Closes the connection e keeps, if any. */
void abx__envd_unix_close(abx_envd *e);

#endif
