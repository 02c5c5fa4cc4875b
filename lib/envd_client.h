/* envd_client.h: a client of the envd data plane (E2B's protocol), over a
 * Unix socket (the local shim) or TCP (an E2B-protocol cloud). */
#ifndef ABX_ENVD_CLIENT_H
#define ABX_ENVD_CLIENT_H

#include "abx/abx.h"
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_ENVD_IDLE_MAX 8

typedef struct abx_envd {
    char base_url[256];    /* "http://localhost" with a Unix socket */
    char unix_socket[600]; /* "" for TCP */
    char token[128];       /* X-Access-Token; "" for none */
    /* An E2B-protocol cloud reached through one URL (E2B's E2B_SANDBOX_URL
     * way): every request names the sandbox in E2b-Sandbox-Id and the port
     * (49983 envd, 49999 code interpreter) in E2b-Sandbox-Port. "": none. */
    char route_id[64];
    /* The code interpreter's own base URL (https://49999-ID.DOMAIN); "":
     * base_url serves it too. */
    char code_url[256];
    /* Non-empty: the sandbox has no live data plane for a known reason (a
     * durable sandbox at rest); every call fails E8016 with this text. */
    char down_reason[256];
    pthread_mutex_t mu; /* guards cached */
    void *cached;       /* one idle CURL handle kept for reuse (TCP) */
    /* idle connections to unix_socket kept for reuse (envd_unix.c): as many
     * as calls ran at once, up to ABX_ENVD_IDLE_MAX; -1: none */
    int idle_fds[ABX_ENVD_IDLE_MAX];
} abx_envd;

void abx__envd_init(abx_envd *e, const char *base_url, const char *unix_socket, const char *token);
void abx__envd_cleanup(abx_envd *e);
/* Routing for a cloud sandbox: by headers to base_url (route_id), or the
 * code interpreter at its own URL (code_url); either may be NULL. */
void abx__envd_route(abx_envd *e, const char *route_id, const char *code_url);

/* Unary Connect call: POST base/method_path with JSON; *resp is the caller's. */
int abx__envd_unary(abx_envd *e, const char *method_path, const char *user, json_t *req, json_t **resp,
                    abx_error **err);
/* Plain JSON request (abx endpoints under /abx/). body may be NULL (GET). */
int abx__envd_json(abx_envd *e, const char *method, const char *path_query, json_t *body, json_t **resp,
                   abx_error **err);

/* Called for each streamed message ({"event": {...}}); return nonzero to stop. */
typedef int (*abx_envd_event_fn)(json_t *msg, void *userdata);
/* Server-streaming Connect call. deadline_ms: Connect-Timeout-Ms (0: none).
 * Returns 0 when the stream ended normally or fn stopped it; a stream that
 * ended with deadline_exceeded returns -ABX_ETIMEOUT; cancel (may be NULL,
 * called with userdata) returning true aborts it with -ABX_ECANCELLED. */
typedef bool (*abx_envd_cancel_fn)(void *userdata);
int abx__envd_stream(abx_envd *e, const char *method_path, const char *user, json_t *req,
                     unsigned deadline_ms, abx_envd_event_fn fn, void *userdata, abx_envd_cancel_fn cancel,
                     abx_error **err);

/* POST path with a JSON body; the answer's bytes, whatever their type, in
 * *out (NUL-terminated; the caller frees). cancel (may be NULL) is polled:
 * true cuts the transfer (-ABX_ECANCELLED), which the server sees as a
 * hang-up. */
int abx__envd_post_raw(abx_envd *e, const char *path, const char *user, json_t *body,
                       abx_envd_cancel_fn cancel, void *userdata, char **out, size_t *out_len,
                       abx_error **err);

typedef size_t (*abx_envd_write_fn)(const char *data, size_t len,
                                    void *userdata);                       /* return len, else abort */
typedef size_t (*abx_envd_read_fn)(char *buf, size_t len, void *userdata); /* 0 at end */
/* What a read_fn returns to fail the upload (libcurl's CURL_READFUNC_ABORT). */
#define ABX_ENVD_READ_ABORT ((size_t)0x10000000)
/* GET /files: the file's bytes go to fn as they arrive. */
int abx__envd_download(abx_envd *e, const char *path, const char *user, abx_envd_write_fn fn, void *userdata,
                       abx_error **err);
/* GET /files with a byte range: bytes [offset, offset + length) go to fn
 * (fewer at the end of the file); file_size is set to the file's size
 * (-1 when the server did not say). A server that ignores ranges is
 * handled too. length must be > 0. */
typedef struct abx_envd_range {
    unsigned long long offset, length;
    long long file_size; /* out */
} abx_envd_range;
int abx__envd_download_range(abx_envd *e, const char *path, const char *user, abx_envd_range *range,
                             abx_envd_write_fn fn, void *userdata, abx_error **err);
/* POST /files (octet-stream): the body comes from fn, size bytes (-1: unknown). */
int abx__envd_upload(abx_envd *e, const char *path, const char *user, abx_envd_read_fn fn, void *userdata,
                     long long size, abx_error **err);

#endif
