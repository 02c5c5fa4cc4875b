/* epp.h: the host side of the exec-plugin protocol (lib/epp.c). */
#ifndef ABX_EPP_H
#define ABX_EPP_H

#include "abx/abx.h"
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

typedef struct abx_epp abx_epp;

/* Starts installed plugin id (digest checked first: E8011 and nothing
 * started on a mismatch) and runs initialize; *out is the caller's
 * (abx__epp_stop). */
int abx__epp_start(const char *id, abx_epp **out, abx_error **err);
/* Calls method (params borrowed, may be NULL) and waits up to timeout_ms
 * (0: 60 s) for its result (*result is the caller's). */
int abx__epp_call(abx_epp *e, const char *method, json_t *params, unsigned timeout_ms, json_t **result,
                  abx_error **err);
/* Whether initialize declared capability. */
bool abx__epp_has(const abx_epp *e, const char *capability);
const char *abx__epp_id(const abx_epp *e);
/* The features initialize declared (borrowed). */
json_t *abx__epp_features(const abx_epp *e);
/* shutdown, then SIGTERM and SIGKILL for a plugin that stays. */
void abx__epp_stop(abx_epp *e);

#endif
