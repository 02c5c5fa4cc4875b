/* cli.h: what every abx verb shares: the context, flag helpers, error output. */
#ifndef ABX_CLI_H
#define ABX_CLI_H

#include "abx/abx.h"
#include <stdbool.h>

#define CLI_MAX_OPTS 64

typedef struct cli_ctx {
    bool json;                       /* --json: machine output */
    const char *provider;            /* --provider ID */
    const char *opts[CLI_MAX_OPTS];  /* --opt K=V, in order */
    int nopts;
} cli_ctx;

typedef struct cli_command {
    const char *name;
    int (*run)(cli_ctx *ctx, int argc, char **argv); /* argv[0] is the verb */
    const char *summary;
    const char *help;                                /* full --help text */
} cli_command;

/* Exit status for an abx error that happened before any command ran. */
#define CLI_EXIT_ERROR 125
#define CLI_EXIT_USAGE 2

/* If argv[*i] is a global flag (--json, --provider, --opt), consumes it (and
 * its value) and returns 1; returns 0 if not; on a malformed global flag
 * prints the error and returns -1. */
int cli_take_global(cli_ctx *ctx, int argc, char **argv, int *i);

/* If argv[*i] is `name VALUE` or `name=VALUE`, stores VALUE, advances *i
 * past it and returns 1; returns 0 if argv[*i] is another flag; prints a
 * usage error and returns -1 if the value is missing. */
int cli_take_value(cli_ctx *ctx, int argc, char **argv, int *i, const char *name, const char **value);

/* True for -h and --help. */
bool cli_is_help(const char *arg);

/* Prints an error as one line (or one JSON object with --json) on stderr:
 * code, message, hint. Returns the exit status to use. */
int cli_fail(const cli_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prints err (a libabx error) the same way and frees it. */
int cli_fail_error(const cli_ctx *ctx, abx_error *err, int rc);

void cli_print_help(const cli_command *cmd);

int cmd_run(cli_ctx *ctx, int argc, char **argv);
int cmd_version(cli_ctx *ctx, int argc, char **argv);
extern const char cmd_run_help[];
extern const char cmd_version_help[];

#endif
