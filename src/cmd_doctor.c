/* cmd_doctor.c: `abx doctor`: what this host and this user can run, checked
 * before an IDE or a script finds out by failing (issue 9 #8). Each check
 * prints one line: ok, warn (sandboxes work, with less) or fail (sandboxes
 * cannot be made here), and what to do (the checks: host_checks.c). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_doctor_help[] =
    "Usage: abx doctor [--json]\n"
    "\n"
    "Checks what abx needs on this host, as this user: the namespaces, user\n"
    "namespaces for this user, seccomp, cgroups (v1 controllers or a\n"
    "delegated v2 subtree: ABX_CGROUP_PARENT, or the one systemd gives your\n"
    "user session), the host uid range for `user` inside, $ABX_HOME,\n"
    "the libraries loaded on demand (libcurl, libmicrohttpd, libcrypto, libldns),\n"
    "sandbox networking and templates (root, the kernel, mmdebstrap), and what\n"
    "would make starts faster here (start speed: cgroup favordynmods). Prints one\n"
    "line per check (ok, warn, fail) with what to do; exits 0 when sandboxes\n"
    "can be made here, 1 when they cannot.\n";

int cmd_doctor(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "doctor", cmd_doctor_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 0)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx doctor [--json]");
    bool works = false;
    json_t *checks = cli_host_checks(&works);
    if (ctx->json) {
        cli_print_json(json_pack("{s:b, s:o}", "sandboxes_work", works, "checks", checks));
    } else {
        size_t i;
        json_t *c;
        json_array_foreach(checks, i, c) printf(
            "%-5s %-38s %s\n", json_string_value(json_object_get(c, "status")),
            json_string_value(json_object_get(c, "check")), json_string_value(json_object_get(c, "detail")));
        printf("\n%s\n", works ? "sandboxes can be made here as this user"
                               : "sandboxes cannot be made here as this user: fix the lines marked fail");
        json_decref(checks);
    }
    return works ? 0 : CLI_EXIT_ERROR;
}
