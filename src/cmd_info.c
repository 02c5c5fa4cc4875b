/* cmd_info.c: `abx info`. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

const char cmd_info_help[] = "Usage: abx info ID [--json]\n"
                             "\n"
                             "Shows a sandbox's details: template, status, start and end times, CPU,\n"
                             "memory, disk, metadata, and the names (never the values) of its\n"
                             "environment variables. ID is local:<id> or <id>.\n";

int cmd_info(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "info", cmd_info_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx info ID");
    int status = 0;
    abx_client *c = cli_client_for(ctx, pos[0], &status);
    if (!c)
        return status;
    abx_sandbox_info info;
    abx_error *err = NULL;
    rc = abx_get_info_by_id(c, pos[0], &info, &err);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = cli_info_json(&info);
    abx_sandbox_info_clear(&info);
    if (ctx->json) {
        cli_print_json(doc);
        return 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v)
    {
        char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("%-13s %s\n", k, text ? text : json_string_value(v));
        free(text);
    }
    json_decref(doc);
    return 0;
}
