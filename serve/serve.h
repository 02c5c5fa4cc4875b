/* serve.h: `abx serve`, this machine as an E2B-protocol sandbox host
 * (serve/serve.c: listener, keys and tenants, the REST control plane;
 * serve/proxy.c: the data plane, forwarded to each sandbox's envd). */
#ifndef ABX_SERVE_H
#define ABX_SERVE_H

#include "abx/abx.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct abx_serve_config {
    const char *listen;           /* "ADDR:PORT" (port 0: a free one) */
    const char *const *api_keys;  /* "e2b_" + 40 hex each, NULL-terminated */
    const char *domain;           /* sandbox domain; NULL: "localhost" */
    unsigned warm;                /* sandboxes kept started ahead (abx_client_keep_warm) */
    void *reserved[4];
} abx_serve_config;

/* Serves until SIGTERM/SIGINT; prints "abx serve: listening on http://H:P"
 * on stderr once ready. The caller checked the keys' shape. */
int abx_serve_run(const abx_serve_config *cfg, abx_error **err);

/* ---- shared between serve.c and proxy.c ---- */

struct MHD_Connection;
typedef struct serve_proxy serve_proxy;

/* A data-plane request for sandbox id (bare) and port: the proxy's state
 * (NULL with *status and *body set for an answer to send instead). */
serve_proxy *abx__serve_proxy_begin(struct MHD_Connection *c, const char *id, unsigned port, const char *url,
                                    const char *method, unsigned *status, char **body);
/* The request's body bytes, as they come. false: stop (the sandbox went away). */
bool abx__serve_proxy_upload(serve_proxy *p, const char *data, size_t len);
/* The request is whole: queue the sandbox's answer. */
int abx__serve_proxy_finish(serve_proxy *p, struct MHD_Connection *c);
/* The connection is done with p. */
void abx__serve_proxy_release(serve_proxy *p);

#endif
