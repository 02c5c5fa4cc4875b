/* cmd_kill.c: `abx kill`. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_kill_help[] = "Usage: abx kill ID [--all] [--json]\n"
                             "\n"
                             "Destroys a sandbox: every process in it, its files, cgroups and state.\n"
                             "Returns when it is gone.\n"
                             "\n"
                             "  --all   ID may be any user's (root; through the abx service, a member\n"
                             "          of [service] admin_groups)\n";

int cmd_kill(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    const cli_flag flags[] = {{"--all", CLI_BOOL, &ctx->all_tenants, 0, 0, NULL, 0, NULL}};
    int rc = cli_parse(ctx, "kill", cmd_kill_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx kill ID");
    int status = 0;
    abx_client *c = cli_client_for(ctx, pos[0], &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    rc = abx_kill_by_id(c, pos[0], &err);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (ctx->json)
        cli_print_json(json_pack("{s:b}", "success", 1));
    return 0;
}
