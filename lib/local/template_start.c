/* template_start.c: a template's start command in each new sandbox
 * (template_build.h: abx__template_start), as E2B's start_cmd.
 *
 * Owns: ENTRYPOINT + CMD as one argv (docker's rules: a shell-form
 * ENTRYPOINT ignores CMD), started in the background as the template's
 * user, and the readiness wait: the HEALTHCHECK command run every
 * interval until it exits 0, for at most its timeout, failing early when
 * the start command itself ends. Works through libabx's public calls only.
 */
#include "template_build.h"
#include "error_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define START_ARGS_MAX 256

/* The argv config describes (borrowed strings), or 0 when it has none. */
static size_t start_argv(const json_t *config, const char **argv)
{
    size_t n = 0, i;
    json_t *v;
    json_t *ep = json_object_get(config, "entrypoint"), *cmd = json_object_get(config, "cmd");
    json_array_foreach(ep, i, v) if (json_is_string(v) && n < START_ARGS_MAX) argv[n++] =
        json_string_value(v);
    if (!json_is_true(json_object_get(config, "entrypoint_shell")))
        json_array_foreach(cmd, i, v) if (json_is_string(v) && n < START_ARGS_MAX) argv[n++] =
            json_string_value(v);
    argv[n] = NULL;
    return n;
}

static const char *user_of(const json_t *config)
{
    json_t *uid = json_object_get(config, "uid");
    return !uid ? NULL : json_integer_value(uid) == 0 ? "root" : "user";
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The start command's last output, for a failure's message. */
static void last_output(abx_sandbox *s, int pid, char *out, size_t len, bool *running)
{
    abx_process_output o;
    memset(&o, 0, sizeof o);
    *running = true;
    out[0] = '\0';
    if (abx_sandbox_read_output(s, pid, 0, 0, 0, &o, NULL) < 0)
        return;
    *running = o.running;
    const char *tail = o.stderr_len ? o.stderr_data : o.stdout_data ? o.stdout_data : "";
    size_t tl = strlen(tail);
    snprintf(out, len, "%s", tl > len - 1 ? tail + tl - (len - 1) : tail);
    if (!o.running)
        snprintf(out + strlen(out), len - strlen(out), "%s(it exited with status %d)", out[0] ? "\n" : "",
                 o.exit_code);
    abx_process_output_clear(&o);
}

int abx__template_start(abx_sandbox *s, const json_t *config, abx_error **err)
{
    const char *argv[START_ARGS_MAX + 1];
    if (!config || start_argv(config, argv) == 0)
        return 0;
    abx_exec_options eo = {.user = user_of(config), .tag = "template-start", .stdin_fd = -1, .pty_fd = -1};
    int pid = 0;
    int rc = abx_sandbox_start_background_argv(s, argv, &eo, &pid, err);
    if (rc < 0)
        return abx__error_wrap(err, rc, "the template's start command (%s)", argv[0]);
    json_t *hc = json_object_get(config, "healthcheck");
    const char *check[START_ARGS_MAX + 1];
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(json_object_get(hc, "cmd"), i, v) if (json_is_string(v) && n < START_ARGS_MAX)
        check[n++] = json_string_value(v);
    check[n] = NULL;
    if (n == 0)
        return 0;
    double interval = (double)json_integer_value(json_object_get(hc, "interval_ms")) / 1000.0;
    double limit = (double)json_integer_value(json_object_get(hc, "timeout_ms")) / 1000.0;
    if (interval <= 0)
        interval = 0.5;
    if (limit <= 0)
        limit = 60;
    double deadline = now_s() + limit;
    char tail[1200];
    bool running = true;
    for (;;) {
        abx_exec_options co = {
            .user = user_of(config), .timeout_s = (unsigned)limit + 1, .stdin_fd = -1, .pty_fd = -1};
        abx_exec_result r;
        memset(&r, 0, sizeof r);
        int crc = abx_sandbox_exec_argv(s, check, &co, &r, NULL);
        int code = r.exit_code;
        abx_exec_result_clear(&r);
        if (crc == 0 && code == 0)
            return 0;
        last_output(s, pid, tail, sizeof tail, &running);
        if (!running)
            return abx__error_set(err, ABX_EBUILD,
                                  "the template's start command (%s) ended before its HEALTHCHECK "
                                  "passed:\n%s",
                                  argv[0], tail);
        if (now_s() + interval > deadline)
            break;
        struct timespec ts = {.tv_sec = (time_t)interval,
                              .tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9)};
        nanosleep(&ts, NULL);
    }
    return abx__error_set(err, ABX_ETIMEOUT,
                          "the template's start command (%s) was not ready within %.0f s (its "
                          "HEALTHCHECK %s never exited 0)%s%s",
                          argv[0], limit, check[n - 1], tail[0] ? "; its last output:\n" : "", tail);
}
