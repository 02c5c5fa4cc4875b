/* cmd_pause.c: `abx pause` and `abx resume`: a sandbox's processes frozen
 * and thawed (libabx's abx_sandbox_pause and abx_sandbox_resume). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_pause_help[] = "Usage: abx pause ID [--json]\n"
                              "\n"
                              "Freezes every process of a sandbox; its memory and files are kept while\n"
                              "its supervisor lives, and its lifetime stops counting. A paused sandbox is\n"
                              "kept 24 h at most. `abx list --status paused` shows it; `abx resume ID`\n"
                              "starts it again. A durable one (abx create --persistent) has what its\n"
                              "filesystems hold written to disk first, and stays paused with its files\n"
                              "after a killed supervisor or a restart (then resume starts it from them);\n"
                              "with --pause-files-only its processes end at once (docs/durable.md).\n";

const char cmd_resume_help[] = "Usage: abx resume ID [--timeout S] [--json]\n"
                               "\n"
                               "Starts a paused sandbox's processes again, where they stopped; a durable\n"
                               "one at rest (after a restart) starts from its files, its processes from\n"
                               "the template's start command.\n"
                               "\n"
                               "  --timeout S  its lifetime from now (default: the one it was given last)\n";

/* Connects to id and prints its info after do_it ran on it; 0, or the exit status. */
static int pause_or_resume(cli_ctx *ctx, const char *verb, const char *id, bool pausing, unsigned timeout_s)
{
    int status = 0;
    abx_client *c = cli_client_for(ctx, id, &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    abx_sandbox *s = NULL;
    abx_sandbox_info info;
    int rc = abx_sandbox_connect(c, id, &s, &err);
    if (rc == 0)
        rc = pausing ? abx_sandbox_pause(s, &err) : abx_sandbox_resume(s, timeout_s, &err);
    if (rc == 0)
        rc = abx_get_info_by_id(c, id, &info, &err);
    abx_sandbox_free(s);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = cli_info_json(&info);
    abx_sandbox_info_clear(&info);
    if (ctx->json) {
        cli_print_json(doc);
    } else {
        printf("%s %s (%s)\n", json_string_value(json_object_get(doc, "sandbox_id")), verb,
               json_string_value(json_object_get(doc, "status")));
        json_decref(doc);
    }
    return 0;
}

int cmd_pause(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "pause", cmd_pause_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx pause ID");
    return pause_or_resume(ctx, "paused", pos[0], true, 0);
}

int cmd_resume(cli_ctx *ctx, int argc, char **argv)
{
    unsigned timeout_s = 0;
    const cli_flag flags[] = {
        {"--timeout", CLI_UINT, &timeout_s, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0, NULL}};
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "resume", cmd_resume_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx resume ID [--timeout S]");
    return pause_or_resume(ctx, "resumed", pos[0], false, timeout_s);
}
