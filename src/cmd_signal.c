/* cmd_signal.c: `abx signal`. */
#include "cli.h"
#include "parse.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char cmd_signal_help[] = "Usage: abx signal ID TASK SIG [--json]\n"
                               "\n"
                               "Sends signal SIG (a number, or a name such as TERM, SIGKILL, INT) to a\n"
                               "background task and the processes of its group.\n";

static int signal_from_text(const char *s)
{
    unsigned n;
    if (abx__parse_uint(s, 1, 64, &n) == 0)
        return (int)n;
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    static const struct {
        const char *name;
        int sig;
    } names[] = {
        {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"KILL", SIGKILL}, {"TERM", SIGTERM},
        {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}, {"ALRM", SIGALRM},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0)
            return names[i].sig;
    return -1;
}

int cmd_signal(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "signal", cmd_signal_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 3)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx signal ID TASK SIG");
    unsigned pid;
    if (abx__parse_uint(pos[1], 1, 4194304, &pid) < 0)
        return cli_fail(ctx, ABX_EINVAL, "task: expected a task id as printed by 'abx exec --background'");
    int sig = signal_from_text(pos[2]);
    if (sig < 0)
        return cli_fail(ctx, ABX_EINVAL, "signal: expected a number from 1 to 64 or a name such as TERM");
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, pos[0], &status);
    if (!s)
        return status;
    abx_error *err = NULL;
    rc = abx_sandbox_signal(s, (int)pid, sig, &err);
    abx_sandbox_free(s);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (ctx->json)
        cli_print_json(json_pack("{s:b}", "success", 1));
    return 0;
}
