/* cmd_logs.c: `abx logs`. */
#include "cli.h"
#include "parse.h"
#include "text.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_logs_help[] = "Usage: abx logs ID TASK [--follow] [--json]\n"
                             "\n"
                             "Prints a background task's output (stdout to stdout, stderr to stderr)\n"
                             "as kept by the sandbox: the last 1 MiB of each stream. With --follow,\n"
                             "keeps printing until the task exits. TASK is the id 'abx exec\n"
                             "--background' printed. With --json: {status, exit_code, stdout, stderr,\n"
                             "truncated}.\n";

int cmd_logs(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    bool follow = false;
    const cli_flag flags[] = {{"--follow", CLI_BOOL, &follow, 0, 0, NULL, 0, NULL}};
    int rc = cli_parse(ctx, "logs", cmd_logs_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    unsigned pid;
    if (npos != 2)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx logs ID TASK");
    if (abx__parse_uint(pos[1], 1, 4194304, &pid) < 0)
        return cli_fail(ctx, ABX_EINVAL, "task: expected a task id as printed by 'abx exec --background'");
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, pos[0], &status);
    if (!s)
        return status;
    unsigned long long so = 0, se = 0;
    bool truncated = false;
    for (;;) {
        abx_process_output o;
        abx_error *err = NULL;
        rc = abx_sandbox_read_output(s, (int)pid, so, se, follow ? 1000 : 0, &o, &err);
        if (rc < 0) {
            abx_sandbox_free(s);
            return cli_fail_error(ctx, err, rc);
        }
        truncated |= o.truncated;
        if (ctx->json && !follow) {
            json_t *doc = json_pack(
                "{s:s, s:o, s:o, s:b, s:I, s:I}", "status", o.running ? "running" : "exited", "stdout",
                mcp_text(o.stdout_data, o.stdout_len, (size_t)-1, NULL), "stderr",
                mcp_text(o.stderr_data, o.stderr_len, (size_t)-1, NULL), "truncated", truncated,
                "stdout_offset", (json_int_t)o.stdout_offset, "stderr_offset", (json_int_t)o.stderr_offset);
            json_object_set_new(doc, "exit_code", o.running ? json_null() : json_integer(o.exit_code));
            cli_print_json(doc);
            abx_process_output_clear(&o);
            break;
        }
        fwrite(o.stdout_data, 1, o.stdout_len, stdout);
        fwrite(o.stderr_data, 1, o.stderr_len, stderr);
        fflush(stdout);
        fflush(stderr);
        so = o.stdout_offset;
        se = o.stderr_offset;
        bool done = !follow || !o.running;
        abx_process_output_clear(&o);
        if (done)
            break;
    }
    abx_sandbox_free(s);
    return 0;
}
