/* template_build.h: `abx template build`: a template from a Dockerfile
 * (lib/local/template_build.c), and the built-in code-interpreter-v1.
 *
 * The build cache lives in ABX_BUILD_CACHE, else /var/cache/abx/build
 * (root) or $ABX_HOME/build-cache: steps/KEY.json (the state after a step)
 * and trees/KEY/rootfs (the tree after a step that changes files), KEY the
 * SHA-256 of the instruction chain up to it, the build arguments and the
 * files it copies. Shared by every ABX_HOME of the machine; kept under
 * ABX_BUILD_CACHE_MAX_MB (default 10240) by evicting the least recently
 * used trees after each build.
 */
#ifndef ABX_TEMPLATE_BUILD_H
#define ABX_TEMPLATE_BUILD_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct template_build_request {
    const char *name;              /* the template made (an existing one is replaced) */
    const char *dockerfile;        /* its path; NULL: CONTEXT/Dockerfile */
    const char *dockerfile_text;   /* or its text (the built-in recipes); wins over dockerfile */
    const char *context;           /* the directory COPY and ADD read; NULL: "." */
    const char *const *build_args; /* "NAME=value", NULL-terminated; may be NULL */
    bool no_cache;                 /* run every step again (their results still refresh the cache) */
    bool host_network;             /* RUN steps in the host's network namespace (else one of their own) */
    const char *source_label;      /* what template.json's source says instead of the Dockerfile's path */
    const char *tenant;            /* whose build: FROM NAME finds a host user's own NAME first */
    /* Each progress event ({"event": "step"|"output"|"note", ...}), the
     * callee's reference; may be NULL. */
    void (*on_event)(json_t *event, void *ud);
    void *ud;
} template_build_request;

/* Builds the template; *info (may be NULL) gets its description. A failed
 * step fails the build with ABX_EBUILD and the step's output; the template
 * is then unchanged. Needs root. */
int abx__template_build(const template_build_request *o, json_t **info, abx_error **err);

/* The Dockerfile of a built-in template ("code-interpreter-v1"), or NULL. */
const char *abx__template_builtin_recipe(const char *name);

/* Builds code-interpreter-v1 when it is not built yet (saying so on
 * stderr); 0 when it is there. */
int abx__template_ensure_builtin(const char *name, abx_error **err);

/* Starts the template's start command (ENTRYPOINT + CMD of config, a
 * template's "config") in the new sandbox s and waits for its HEALTHCHECK
 * to pass; 0 at once when it has none. On failure the caller kills s. */
struct abx_sandbox;
int abx__template_start(abx_sandbox *s, const json_t *config, abx_error **err);

/* Removes the build cache (`abx template prune`); *freed gets its size. */
int abx__template_prune_cache(unsigned long long *freed, abx_error **err);

#endif
