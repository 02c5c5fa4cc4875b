/* serve.h: `abx serve`, this machine as an E2B-protocol sandbox host, in
 * front of any provider (serve/serve.c: the listener, keys and their
 * tenants, the REST control plane; serve/proxy.c: the data plane, relayed
 * to each sandbox's endpoint as libabx gives it; serve/envd_front.c: the
 * data plane of a provider that has no envd, answered through libabx).
 * Built on include/abx/abx.h and the base layer only.
 */
#ifndef ABX_SERVE_H
#define ABX_SERVE_H

#include "abx/abx.h"
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct serve_config {
    const char *listen;          /* "ADDR:PORT" (port 0: a free one) */
    const char *const *api_keys; /* "e2b_" + 40 hex each, NULL-terminated */
    const char *domain;          /* sandbox domain; NULL: "localhost" */
    unsigned warm;               /* sandboxes kept started ahead (abx_client_keep_warm; the local provider) */
    const char *provider;        /* the provider fronted; NULL: resolved as every abx command resolves it */
    /* The abx service: instead of listen, this Unix socket (or the one
     * systemd passes), each caller the tenant of its host uid (peers.c). */
    const char *socket_path;
    unsigned default_timeout_s; /* a create that names no timeout; 0: 300, as E2B's cloud */
    /* GET /metrics with "Authorization: Bearer" this: every sandbox's series
     * and the host's (NULL: only an API key's own sandboxes' series). */
    const char *metrics_token;
    /* The web console at /console/ (console.c): a login with an API key,
     * or with the metrics token for every sandbox. */
    bool console;
    void *reserved[1];
} serve_config;

/* Serves until SIGTERM/SIGINT; prints "abx serve: listening on http://H:P"
 * on stderr once ready. The caller checked the keys' shape. */
int serve_run(const serve_config *cfg, abx_error **err);

/* ---- the service's callers (peers.c) ---- */

/* The service's listening socket into *out: the one systemd passed
 * (LISTEN_FDS), else path made anew (a dead service's removed; a live
 * one's refused). */
int serve_socket_open(const char *path, int *out, bool *activated, abx_error **err);
/* The host uid at the other end of a Unix socket; -1 when the kernel does not say. */
int serve_peer_uid(int fd, unsigned *uid);
/* Whether uid may use the service (0) and administer it (*admin); else
 * -ABX_ENOTALLOWED with the answer, naming the groups, in why. */
int serve_peer_admit(unsigned uid, bool *admin, char *why, size_t why_len);

/* ---- shared between serve.c, proxy.c and envd_front.c ---- */

struct MHD_Connection;
typedef struct serve_proxy serve_proxy;

/* E2B's answers: an error body {code, message} with that status. */
int serve_send_error(struct MHD_Connection *c, unsigned status, const char *message);
/* A data-plane request to sb's port (sb taken: the proxy frees it), its
 * path already checked against what the port is for. NULL with *status
 * and *body set for an answer to send instead. */
serve_proxy *serve_proxy_begin(struct MHD_Connection *c, abx_sandbox *sb, unsigned port, const char *url,
                               const char *method, unsigned *status, char **body);
/* Whether the request is a signed /files URL (E2B's uploadUrl and
 * downloadUrl: signature, signature_expiration, path, username) that the
 * sandbox's envd token verifies for its method (GET read, POST write),
 * compared in constant time; an expired one never is. */
/* Whether the request's signature_expiration, if any, is a number not yet past. */
bool serve_signed_url_unexpired(struct MHD_Connection *c);
bool serve_signed_url_ok(struct MHD_Connection *c, const char *method, const char *token);
/* The request's body bytes, as they come. false: stop (the sandbox went away). */
bool serve_proxy_upload(serve_proxy *p, const char *data, size_t len);
/* The request is whole: queue the sandbox's answer. */
int serve_proxy_finish(serve_proxy *p, struct MHD_Connection *c);
/* The connection is done with p. */
void serve_proxy_release(serve_proxy *p);

/* The envd data plane of a sandbox without one to relay (envd_front.c),
 * in the same four steps (sb taken). */
typedef struct envd_front envd_front;
envd_front *serve_envd_begin(struct MHD_Connection *c, abx_sandbox *sb, const char *url, const char *method,
                             unsigned *status, char **body);
bool serve_envd_upload(envd_front *f, const char *data, size_t len);
int serve_envd_finish(envd_front *f, struct MHD_Connection *c);
void serve_envd_release(envd_front *f);

/* ---- GET /metrics (metrics.c) ---- */

typedef struct serve_metrics serve_metrics;
typedef enum serve_event { SERVE_EVENT_NONE, SERVE_EVENT_CREATE, SERVE_EVENT_KILL } serve_event;
/* The server's counters, and token's hash (NULL or "": no token is
 * accepted). NULL without memory; serve_metrics_free. */
serve_metrics *serve_metrics_new(const char *token);
void serve_metrics_free(serve_metrics *m);
/* Whether the request's "Authorization: Bearer T" is the metrics token
 * (compared in constant time). */
bool serve_metrics_bearer_ok(const serve_metrics *m, struct MHD_Connection *c);
/* A request completed: its plane, how long it took, the abx error it was
 * answered with (0: none), what it did. */
void serve_metrics_request(serve_metrics *m, bool data_plane, double seconds, int error_code,
                           serve_event event);
/* The scrape's answer: the series of every sandbox who reaches, and with
 * host (the administrator's client) the host's. 0, or -1 when the
 * connection is lost. */
int serve_metrics_answer(const serve_metrics *m, struct MHD_Connection *c, abx_client *who, abx_client *host);

/* ---- the web console (console.c) ---- */

typedef struct serve_console serve_console;
/* idle_s: how long a session lives without a call (0: SERVE_CONSOLE_IDLE_S). */
serve_console *serve_console_new(unsigned idle_s);
unsigned serve_console_idle_s(const serve_console *cs);
void serve_console_free(serve_console *cs);
/* A new session for owner: its token (64 hex + NUL) in token. 0, or -1
 * when the table is full of live sessions. */
int serve_console_login(serve_console *cs, void *owner, char token[65]);
/* The owner of the live session the request's X-Abx-Session names
 * (its idle time starts again), or NULL. */
void *serve_console_session(serve_console *cs, struct MHD_Connection *c);
/* Ends that session; false when there was none. */
bool serve_console_logout(serve_console *cs, struct MHD_Connection *c);
/* GET /console and /console/NAME: a page of the console, or 404. 0, or -1
 * when the connection is lost. */
int serve_console_asset(struct MHD_Connection *c, const char *url);
#define SERVE_CONSOLE_IDLE_S (30 * 60)
/* Whether text is the metrics token (constant time). */
bool serve_metrics_token_is(const serve_metrics *m, const char *text);

/* ---- GET /events (events.c) ---- */

/* The host's event log as who may see it: server-sent events from
 * ?after or Last-Event-ID on (until stopping or the client goes), or with
 * ?format=json one page {events, next}. 0, or -1 when the connection is
 * lost. */
int serve_events_answer(struct MHD_Connection *c, abx_client *who, const atomic_bool *stopping);

/* The most proxied requests one tenant may have in flight at once (each
 * holds at most SERVE_PROXY_BUFFER bytes of its stream in abx serve). */
#define SERVE_INFLIGHT_PER_TENANT 128
#define SERVE_PROXY_BUFFER (256u << 10)

#endif
