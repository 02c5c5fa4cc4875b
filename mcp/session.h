/* session.h: one MCP session's sandboxes (the "SandboxManager"). */
#ifndef ABX_MCP_SESSION_H
#define ABX_MCP_SESSION_H

#include "abx/abx.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define MCP_SESSION_MAX_SANDBOXES 64

/* A sandbox the session holds: created by it (owned: destroyed when the
 * session ends) or addressed by an explicit external id (never destroyed
 * by the session's end). Reference-counted: a tool call holds a reference
 * for its duration. */
typedef struct mcp_sandbox {
    char id[96]; /* qualified */
    char template_name[64];
    abx_sandbox *handle;
    bool owned;
    unsigned renew_s;    /* renewal lifetime (owned only); 0: none */
    uint64_t renewed_ms; /* when it was last renewed (monotonic ms) */
    int refs;
    bool killed;
    bool persistent; /* durable (create_sandbox persistent): the session's end pauses it, never kills it */
} mcp_sandbox;

typedef struct mcp_session {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    abx_client *client;
    char template_name[64];
    mcp_sandbox *boxes[MCP_SESSION_MAX_SANDBOXES];
    int nboxes;
    mcp_sandbox *default_box; /* borrowed from boxes */
    bool creating_default;
    bool ended;
    /* The tenant the session acts for ("" on STDIO: the user's own
     * sandboxes), its client's (libabx): it sees, uses, re-times and kills
     * only that tenant's sandboxes; any other id answers as one that does
     * not exist. */
    char tenant[80];
    /* Bytes of each output stream a result shows (text.h's policy):
     * ABX_MCP_OUTPUT_LIMIT, else config.toml [mcp] output_limit, else
     * MCP_OUTPUT_LIMIT_DEFAULT. */
    size_t output_limit;
} mcp_session;

/* Creates a session using template_name for sandboxes it creates, acting
 * for tenant (NULL or "": no tenant). */
int mcp_session_init(mcp_session *s, const char *template_name, const char *provider, const char *tenant,
                     abx_error **err);
/* Destroys every sandbox the session created, then frees the session. */
void mcp_session_end(mcp_session *s);

typedef struct mcp_create_args {
    const char *template_name; /* NULL: the session's */
    unsigned timeout_s;        /* 0: 300 */
    const char *const *envs;
    unsigned cpu, memory_mb;
    /* the network (abx_create_options): mode NULL decided by the lists */
    const char *network;
    const char *const *allow_out, *const *deny_out;
    const char *const *volumes; /* "NAME:/path[:ro]" (abx_create_options) */
    bool persistent;            /* durable (abx_create_options) */
} mcp_create_args;

/* Creates a sandbox and makes it the default. The result holds a reference
 * (mcp_session_release). */
int mcp_session_create(mcp_session *s, const mcp_create_args *a, mcp_sandbox **out, abx_error **err);
/* The sandbox a tool call addresses: explicit id (never changes the
 * default; an external id is connected to, not adopted), or the default,
 * created lazily (exactly one, however many calls race) when create is
 * true (then *created, when non-NULL, is set). Renews an owned sandbox's
 * lifetime; the default's renewal is also its liveness check: a default
 * that has ended (timed out, killed from outside) is replaced by a new one
 * when create is true, and *replaced (when non-NULL) says so. Holds a
 * reference. */
int mcp_session_use(mcp_session *s, const char *id, bool create, bool renew, mcp_sandbox **out, bool *created,
                    bool *replaced, abx_error **err);
void mcp_session_release(mcp_session *s, mcp_sandbox *b);
/* After a call on the default failed as if it were gone: true when the
 * default has indeed ended (it is then forgotten, so the next use creates a
 * new one); false when it is alive or there is none. */
bool mcp_session_check_default(mcp_session *s);
/* Kills the addressed sandbox (NULL: the default, or an error if none). */
int mcp_session_kill(mcp_session *s, const char *id, abx_error **err);
/* Sets a new lifetime and, for an owned sandbox, the renewal policy. */
int mcp_session_set_timeout(mcp_session *s, const char *id, unsigned seconds, char *qualified, size_t len,
                            abx_error **err);

#endif
