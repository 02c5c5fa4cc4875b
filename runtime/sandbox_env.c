/* sandbox_env.c: the environment a sandboxed process starts with: a fixed,
 * minimal set plus what the caller asked for. Nothing of the caller's own
 * environment crosses except TERM (never a secret). */
#include "sandbox_env.h"
#include "error_internal.h"
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void abx__sandbox_env_free(abx_sandbox_env *env)
{
    for (int i = 0; i < env->n; i++)
        free(env->vars[i]);
    env->n = 0;
    env->vars[0] = NULL;
}

int abx__sandbox_env_put(abx_sandbox_env *env, const char *pair, abx_error **err)
{
    size_t key_len;
    if (abx__parse_env_pair(pair, &key_len) < 0)
        return abx__error_set(err, ABX_EINVAL, "env: expected KEY=VALUE with KEY of [A-Za-z_][A-Za-z0-9_]*");
    char *copy = strdup(pair);
    if (!copy)
        return abx__error_set(err, ABX_ENOMEM, "env");
    for (int i = 0; i < env->n; i++) {
        if (strncmp(env->vars[i], pair, key_len + 1) == 0) {
            free(env->vars[i]);
            env->vars[i] = copy;
            return 0;
        }
    }
    if (env->n >= ABX_SANDBOX_MAX_ENVS) {
        free(copy);
        return abx__error_set(err, ABX_EINVAL, "env: more than %d variables", ABX_SANDBOX_MAX_ENVS);
    }
    env->vars[env->n++] = copy;
    env->vars[env->n] = NULL;
    return 0;
}

int abx__sandbox_env_init(abx_sandbox_env *env, const char *id, bool as_root, const char *const *extra,
                          abx_error **err)
{
    char line[512];
    const char *shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
    const char *term = getenv("TERM");
    const char *user = as_root ? "root" : "user";
    const char *fixed[][2] = {
        {"PATH", ABX_SANDBOX_PATH},
        {"HOME", as_root ? "/root" : "/home/user"},
        {"USER", user},
        {"LOGNAME", user},
        {"SHELL", shell},
        {"LANG", "C.UTF-8"},
        {"HOSTNAME", id},
        {"TERM", term && strlen(term) < 64 ? term : NULL},
    };
    memset(env, 0, sizeof *env);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof fixed / sizeof fixed[0]; i++) {
        if (!fixed[i][1])
            continue;
        snprintf(line, sizeof line, "%s=%s", fixed[i][0], fixed[i][1]);
        rc = abx__sandbox_env_put(env, line, err);
    }
    for (size_t i = 0; rc == 0 && extra && extra[i]; i++)
        rc = abx__sandbox_env_put(env, extra[i], err);
    if (rc < 0)
        abx__sandbox_env_free(env);
    return rc;
}
