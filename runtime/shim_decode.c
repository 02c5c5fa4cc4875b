/* shim_decode.c: decoding client input for the shim's data plane (see
 * shim_decode.h). Every function is pure: bounded work on its arguments,
 * no shim state, so a fuzzer can drive them directly. */
#include "shim_decode.h"
#include "b64.h"
#include "bounds.h"
#include "parse.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

json_t *abx__shim_json_body(const char *body, size_t len)
{
    if (len == 0)
        return json_object();
    if (!abx__json_depth_ok(body, len, ABX_BOUND_JSON_DEPTH))
        return NULL;
    return json_loadb(body, len, 0, NULL);
}

json_t *abx__shim_connect_unwrap(const char *body, size_t len)
{
    if (len < 5 || body[0] != 0)
        return NULL;
    size_t n = ((size_t)(unsigned char)body[1] << 24) | ((size_t)(unsigned char)body[2] << 16) |
               ((size_t)(unsigned char)body[3] << 8) | (size_t)(unsigned char)body[4];
    if (n != len - 5 || n == 0)
        return NULL;
    return abx__shim_json_body(body + 5, n);
}

bool abx__shim_string_map_ok(json_t *m)
{
    if (!m)
        return true;
    if (!json_is_object(m))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) if (!json_is_string(v) || !abx__env_name_valid(k, strlen(k))) return false;
    return true;
}

bool abx__shim_string_array_ok(json_t *a)
{
    if (!a)
        return true;
    if (!json_is_array(a))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

int abx__shim_user_from_name(const char *name, unsigned default_uid, unsigned *uid)
{
    *uid = !name || !*name ? default_uid : 1000;
    if (!name || !*name || strcmp(name, "user") == 0)
        return 0;
    if (strcmp(name, "root") == 0) {
        *uid = 0;
        return 0;
    }
    return -1;
}

int abx__shim_user_from_basic(const char *header, unsigned default_uid, unsigned *uid)
{
    *uid = default_uid;
    if (!header)
        return 0;
    if (strncmp(header, "Basic ", 6) != 0)
        return -1;
    char *raw = NULL;
    long len = strlen(header + 6) <= 256 ? abx__b64_decode(header + 6, &raw) : -1;
    if (len <= 0 || memchr(raw, '\0', (size_t)len)) {
        free(raw);
        return -1;
    }
    char *colon = strchr(raw, ':');
    if (colon)
        *colon = '\0';
    int rc = abx__shim_user_from_name(raw, default_uid, uid);
    if (rc == 0 && !*raw)
        rc = -1; /* "Basic base64(:)" names nobody */
    free(raw);
    return rc;
}

int abx__shim_signal_from_name(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } table[] = {
        {"SIGNAL_SIGKILL", SIGKILL}, {"SIGNAL_SIGTERM", SIGTERM}, {"SIGNAL_SIGINT", SIGINT},
        {"SIGNAL_SIGHUP", SIGHUP},   {"SIGNAL_SIGQUIT", SIGQUIT}, {"SIGNAL_SIGUSR1", SIGUSR1},
        {"SIGNAL_SIGUSR2", SIGUSR2}, {"SIGNAL_SIGSTOP", SIGSTOP}, {"SIGNAL_SIGCONT", SIGCONT},
    };
    for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].sig;
    return -1;
}
