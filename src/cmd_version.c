/* cmd_version.c: `abx version`. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

const char cmd_version_help[] = "Usage: abx version [--json]\n"
                                "\n"
                                "Prints the version of abx.\n";

int cmd_version(cli_ctx *ctx, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            fputs(cmd_version_help, stdout);
            return 0;
        }
        int g = cli_take_global(ctx, argc, argv, &i);
        if (g < 0)
            return CLI_EXIT_USAGE;
        if (g == 0)
            return cli_fail(ctx, ABX_EUSAGE, "unknown argument '%.64s' for 'abx version'", argv[i]);
    }
    if (ctx->json)
        printf("{\"version\":\"%s\"}\n", abx_version());
    else
        printf("abx %s\n", abx_version());
    return 0;
}
