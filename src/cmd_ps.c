/* cmd_ps.c: `abx ps`. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

const char cmd_ps_help[] = "Usage: abx ps ID [--json]\n"
                           "\n"
                           "Lists the processes that abx started in a sandbox and that still run:\n"
                           "their task id (pid inside the sandbox), tag and command.\n";

int cmd_ps(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "ps", cmd_ps_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx ps ID");
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, pos[0], &status);
    if (!s)
        return status;
    char *text = NULL;
    abx_error *err = NULL;
    rc = abx_sandbox_list_processes(s, &text, &err);
    abx_sandbox_free(s);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *list = json_loads(text, 0, NULL);
    abx_free(text);
    json_t *out = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
    {
        json_t *cfg = json_object_get(p, "config");
        char task[16];
        snprintf(task, sizeof task, "%d", (int)json_integer_value(json_object_get(p, "pid")));
        json_t *args = json_object_get(cfg, "args");
        json_t *cmdline = json_array();
        json_array_append(cmdline, json_object_get(cfg, "cmd"));
        if (args)
            json_array_extend(cmdline, args);
        json_array_append_new(out, json_pack("{s:s, s:I, s:s, s:o, s:O}", "task_id", task, "pid",
                                             json_integer_value(json_object_get(p, "pid")), "tag",
                                             json_string_value(json_object_get(p, "tag")) ?: "", "command",
                                             cmdline, "cwd", json_object_get(cfg, "cwd") ?: json_null()));
    }
    json_decref(list);
    if (ctx->json) {
        cli_print_json(out);
        return 0;
    }
    printf("%-8s %-16s %s\n", "TASK", "TAG", "COMMAND");
    json_array_foreach(out, i, p)
    {
        printf("%-8s %-16s", json_string_value(json_object_get(p, "task_id")),
               json_string_value(json_object_get(p, "tag")));
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(p, "command"), k, a) printf(" %s", json_string_value(a));
        printf("\n");
    }
    json_decref(out);
    return 0;
}
