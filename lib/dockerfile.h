/* dockerfile.h: the Dockerfile subset `abx template build` reads, as data
 * (lib/dockerfile.c; no system calls).
 *
 * Instructions: FROM, RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, CMD,
 * ENTRYPOINT, HEALTHCHECK (several FROMs: a multi-stage build, COPY
 * --from a stage or a template), and the ones recorded in the template's config
 * (EXPOSE, LABEL, MAINTAINER, STOPSIGNAL, VOLUME) or changing how later
 * steps run (SHELL). ONBUILD, and anything else, is an error naming the
 * line and the instruction. Lines end with '\' to continue; '#' starts a comment
 * line; keywords are case-insensitive; RUN, CMD, ENTRYPOINT, HEALTHCHECK CMD
 * and COPY/ADD take the JSON array form too. Variables ($NAME, ${NAME},
 * ${NAME:-word}, ${NAME:+word}) are expanded at build time
 * (abx__dockerfile_expand), not here.
 */
#ifndef ABX_DOCKERFILE_H
#define ABX_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#define ABX_DOCKERFILE_MAX_BYTES (1u << 20)
#define ABX_DOCKERFILE_MAX_STEPS 512
#define ABX_DOCKERFILE_MAX_ARGS 256 /* words of one instruction */

typedef enum df_kind {
    DF_FROM,
    DF_RUN,
    DF_COPY,
    DF_ADD,
    DF_ENV,
    DF_ARG,
    DF_WORKDIR,
    DF_USER,
    DF_CMD,
    DF_ENTRYPOINT,
    DF_HEALTHCHECK,
    DF_EXPOSE,
    DF_LABEL,
    DF_MAINTAINER,
    DF_STOPSIGNAL,
    DF_SHELL,
    DF_VOLUME,
} df_kind;

typedef struct df_step {
    df_kind kind;
    unsigned line;  /* where it starts, from 1 */
    char *text;     /* as written, continuations joined: the cache key and messages use it */
    bool exec_form; /* RUN, CMD, ENTRYPOINT, HEALTHCHECK: a JSON array, run without a shell */
    char **args;    /* owned. FROM: image; RUN/CMD/ENTRYPOINT/HEALTHCHECK: the command
                       (one string, or the array); COPY/ADD: sources..., destination;
                       ENV, LABEL: name, value pairs; ARG: name[, default]; WORKDIR, USER,
                       STOPSIGNAL, MAINTAINER: one; EXPOSE: ports; SHELL: the array; VOLUME: paths */
    size_t nargs;
    bool has_default;      /* ARG NAME=default */
    char *chown;           /* COPY/ADD --chown=U[:G], or NULL */
    char *chmod;           /* COPY/ADD --chmod=OCTAL, or NULL */
    char *from;            /* COPY --from=STAGE (a name or an index) or a template's name, or NULL */
    char *stage;           /* FROM IMAGE AS NAME: the stage's name, or NULL */
    bool healthcheck_none; /* HEALTHCHECK NONE */
    unsigned interval_ms;  /* HEALTHCHECK --interval (default 1000 here) */
    unsigned timeout_ms;   /* HEALTHCHECK --timeout: the whole wait for readiness (default 30000) */
} df_step;

typedef struct abx_dockerfile {
    df_step *steps; /* owned */
    size_t n;
} abx_dockerfile;

const char *abx__dockerfile_keyword(df_kind kind);

/* Parses text (len bytes, at most ABX_DOCKERFILE_MAX_BYTES). On failure
 * returns -1 with why ("line N: ..."); *out is then empty. The caller
 * frees *out with abx__dockerfile_free. */
int abx__dockerfile_parse(const char *text, size_t len, abx_dockerfile *out, char *why, size_t whylen);
void abx__dockerfile_free(abx_dockerfile *df);

/* Variables for expansion: a NULL-terminated "NAME=value" array. */
typedef struct df_vars {
    const char *const *pairs;
} df_vars;

/* Expands $NAME, ${NAME}, ${NAME:-word}, ${NAME:+word} and '\$' in in;
 * unknown names expand to nothing. Returns a malloc'd string (the
 * caller's), or NULL on a malformed reference or a result over 64 KiB. */
char *abx__dockerfile_expand(const char *in, const df_vars *vars);

#endif
