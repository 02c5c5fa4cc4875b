/* sandbox_env.h: the environment every sandboxed process starts with. */
#ifndef ABX_SANDBOX_ENV_H
#define ABX_SANDBOX_ENV_H

#include "abx/abx.h"
#include <stdbool.h>

#define ABX_SANDBOX_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define ABX_SANDBOX_MAX_ENVS 512

/* NULL-terminated "K=V" strings; owns them. */
typedef struct abx_sandbox_env {
    char *vars[ABX_SANDBOX_MAX_ENVS + 1];
    int n;
} abx_sandbox_env;

/* The fixed set (PATH, HOME, USER, LOGNAME, SHELL, LANG, HOSTNAME, and TERM
 * when the caller has one) for root or user, then each "K=V" of extra
 * (may be NULL). Nothing else of the caller's environment. */
int abx__sandbox_env_init(abx_sandbox_env *env, const char *id, bool as_root, const char *const *extra,
                          abx_error **err);
/* Sets "K=V", replacing an earlier K. */
int abx__sandbox_env_put(abx_sandbox_env *env, const char *pair, abx_error **err);
void abx__sandbox_env_free(abx_sandbox_env *env);

#endif
