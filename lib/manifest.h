/* manifest.h: a provider plugin's abx-provider.toml (lib/manifest.c). */
#ifndef ABX_MANIFEST_H
#define ABX_MANIFEST_H

#include "abx/abx.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct abx_manifest {
    char id[64], name[128], version[64], kind[8], description[512], license[64];
    json_t *command; /* [runtime] command: argv strings (exec), or NULL */
    json_t *env;     /* [runtime] env: variable names passed through (an array, maybe empty) */
    char base_url[512], domain[256]; /* [rest] */
    json_t *config;                  /* {KEY: {secret, description}} */
} abx_manifest;

/* Parses and checks text; 0, or -ABX_ECONFIG naming the key or line. On
 * success free with abx__manifest_clear. */
int abx__manifest_parse(const char *text, abx_manifest *m, abx_error **err);
void abx__manifest_clear(abx_manifest *m);
/* [a-z0-9][a-z0-9-]{0,62} */
bool abx__provider_id_valid(const char *id);

#endif
