/* cmd_timeout.c: `abx timeout`. */
#include "cli.h"
#include "parse.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_timeout_help[] =
    "Usage: abx timeout ID SECONDS [--json]\n"
    "\n"
    "Gives a sandbox a new lifetime of SECONDS (1-" ABX_STRINGIFY(
        ABX_TIMEOUT_MAX_S) ") from now; it is\n"
                           "killed when that runs out. Prints the new end time.\n";

int cmd_timeout(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "timeout", cmd_timeout_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 2)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx timeout ID SECONDS");
    unsigned seconds;
    if (abx__parse_uint(pos[1], ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, &seconds) < 0)
        return cli_fail(
            ctx, ABX_EINVAL,
            "timeout: expected a whole number of seconds from 1 to " ABX_STRINGIFY(ABX_TIMEOUT_MAX_S));
    int status = 0;
    abx_client *c = cli_client_for(ctx, pos[0], &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    abx_sandbox_info info;
    rc = abx_set_timeout_by_id(c, pos[0], seconds, &err);
    if (rc == 0)
        rc = abx_get_info_by_id(c, pos[0], &info, &err);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = cli_info_json(&info);
    abx_sandbox_info_clear(&info);
    if (ctx->json) {
        cli_print_json(doc);
    } else {
        printf("%s ends at %s\n", json_string_value(json_object_get(doc, "sandbox_id")),
               json_string_value(json_object_get(doc, "end_at")));
        json_decref(doc);
    }
    return 0;
}
