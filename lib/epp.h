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
 * (0: the plugin's request_timeout, 30 s) for its result (*result is the
 * caller's). Any thread, several at once. */
int abx__epp_call(abx_epp *e, const char *method, json_t *params, unsigned timeout_ms, json_t **result,
                  abx_error **err);
/* Whether initialize declared capability. */
bool abx__epp_has(const abx_epp *e, const char *capability);
const char *abx__epp_id(const abx_epp *e);
/* The features initialize declared (borrowed). */
json_t *abx__epp_features(const abx_epp *e);
/* Whether the plugin is gone, broke the protocol or hung: no call is sent
 * to it again (the provider starts a new one). */
bool abx__epp_dead(abx_epp *e);
/* Its exec streams (epp_exec.h), alive as long as e. */
struct abx_epp_execs *abx__epp_execs(abx_epp *e);
/* Another reference to e, dropped with abx__epp_stop. */
abx_epp *abx__epp_ref(abx_epp *e);
/* Drops a reference; the last one ends the plugin: shutdown, then SIGTERM
 * and SIGKILL for a plugin that stays. */
void abx__epp_stop(abx_epp *e);

#endif
