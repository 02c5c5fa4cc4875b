/* main.c: the abx command-line tool: the verb table and dispatch.
 * Every verb lives in its own cmd_<verb>.c and is built only on libabx's
 * public API (include/abx/abx.h). */
#include "cli.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const cli_command commands[] = {
#define CLI_ENTRY(name, summary) {#name, cmd_##name, summary, cmd_##name##_help},
    CLI_VERBS(CLI_ENTRY)
#undef CLI_ENTRY
};

static void print_usage(FILE *out)
{
    fputs("Usage: abx [--json] [--provider ID] [--opt K=V] VERB [ARGS]\n"
          "\n"
          "abx runs code in sandboxes: on this machine (the local provider, built\n"
          "on Linux namespaces, cgroups and seccomp) or on a provider's backend.\n"
          "\n"
          "Verbs:\n",
          out);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("  help VERB  show a verb's flags\n"
          "\n"
          "Global flags (accepted before the verb or among its flags):\n"
          "  --json          machine-readable output and errors\n"
          "  --provider ID   provider to use (default: local)\n"
          "  --opt K=V       provider option (repeatable)\n"
          "  -h, --help      help; 'abx VERB --help' for a verb\n"
          "  --version       print the version\n",
          out);
}

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* A process started with 0, 1 or 2 closed would hand those numbers to the
 * first files it opens, and a sandboxed command would inherit them. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            if (open("/dev/null", O_RDWR) != fd)
                _exit(CLI_EXIT_FAILED);
}

int main(int argc, char **argv)
{
    ensure_std_fds();
    signal(SIGPIPE, SIG_IGN);
    cli_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (cli_is_help(argv[i])) {
            print_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0)
            return cmd_version(&ctx, 1, argv);
        int rc = cli_take_global(&ctx, argc, argv, &i);
        if (rc < 0)
            return CLI_EXIT_USAGE;
        if (rc == 0)
            return cli_fail(&ctx, ABX_EUSAGE, "unknown flag '%.64s'", argv[i]);
    }
    if (i >= argc) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0) {
        if (i + 1 >= argc) {
            print_usage(stdout);
            return 0;
        }
        const cli_command *c = find_command(argv[i + 1]);
        if (!c)
            return cli_fail(&ctx, ABX_EUSAGE, "unknown verb '%.64s'", argv[i + 1]);
        cli_print_help(c);
        return 0;
    }
    const cli_command *c = find_command(argv[i]);
    if (!c)
        return cli_fail(&ctx, ABX_EUSAGE, "unknown verb '%.64s'", argv[i]);
    return c->run(&ctx, argc - i, argv + i);
}
