/* cmd_list.c: `abx list`. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <time.h>

const char cmd_list_help[] =
    "Usage: abx list [--status running|paused] [--limit N] [--offset N] [--all] [--json]\n"
    "\n"
    "Lists live sandboxes, oldest first. Sandboxes whose supervisor died are\n"
    "cleaned up first. A user without root sees the sandboxes the abx\n"
    "service made for them; root sees every sandbox of the machine.\n"
    "\n"
    "  --status S   only sandboxes in state S\n"
    "  --limit N    at most N, 1-100 (default 100)\n"
    "  --offset N   skip the first N (default 0)\n"
    "  --all        every user's sandboxes: root's, and through the service\n"
    "               those of [service] admin_groups (E8033 for anyone else)\n"
    "  --json       a JSON array of sandbox details\n";

int cmd_list(cli_ctx *ctx, int argc, char **argv)
{
    const char *status_filter = NULL, *pos[CLI_MAX_POSITIONAL];
    unsigned limit = 100, offset = 0;
    size_t npos = 0;
    const cli_flag flags[] = {
        {"--status", CLI_STRING, &status_filter, 0, 0, NULL, 0, NULL},
        {"--limit", CLI_UINT, &limit, 1, 100, NULL, 0, NULL},
        {"--offset", CLI_UINT, &offset, 0, 1000000000, NULL, 0, NULL},
        {"--all", CLI_BOOL, &ctx->all_tenants, 0, 0, NULL, 0, NULL},
    };
    int rc =
        cli_parse(ctx, "list", cmd_list_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos)
        return cli_fail(ctx, ABX_EUSAGE, "abx list takes no arguments");
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    abx_sandbox_info *items = NULL;
    size_t n = 0;
    abx_error *err = NULL;
    rc = abx_list(c, status_filter, limit, offset, &items, &n, &err);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (ctx->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, cli_info_json(&items[i]));
        cli_print_json(arr);
    } else {
        printf("%-28s %-20s %-8s %-20s %s\n", "SANDBOX", "TEMPLATE", "STATUS", "STARTED", "ENDS");
        for (size_t i = 0; i < n; i++) {
            char started[32], end[32];
            struct tm tm;
            time_t s = (time_t)items[i].started_at, e = (time_t)items[i].end_at;
            strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S", localtime_r(&s, &tm));
            strftime(end, sizeof end, "%Y-%m-%d %H:%M:%S", localtime_r(&e, &tm));
            printf("%-28s %-20s %-8s %-20s %s\n", items[i].sandbox_id, items[i].template_id, items[i].status,
                   started, end);
        }
    }
    abx_sandbox_info_list_free(items, n);
    return 0;
}
