/* cli.h: what every abx verb shares: the context, flag helpers, error output. */
#ifndef ABX_CLI_H
#define ABX_CLI_H

#include "abx/abx.h"
#include <stdbool.h>

#define CLI_MAX_OPTS 64

typedef struct cli_ctx {
    bool json;                      /* --json: machine output */
    const char *provider;           /* --provider ID */
    const char *opts[CLI_MAX_OPTS]; /* --opt K=V, in order */
    int nopts;
    bool all_tenants; /* --all (list, kill): every user's sandboxes, as the machine's administrator */
} cli_ctx;

typedef struct cli_command {
    const char *name;
    int (*run)(cli_ctx *ctx, int argc, char **argv); /* argv[0] is the verb */
    const char *summary;
    const char *help; /* full --help text */
} cli_command;

/* Exit statuses: a failed verb; a usage error; and for run and exec,
 * whose own status is the command's, abx's failure (as docker's 125). */
#define CLI_EXIT_ERROR 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_FAILED 125

/* A verb's flags, declared as data and parsed by cli_parse(). */
typedef enum cli_flag_kind {
    CLI_BOOL,   /* bool *: present or not */
    CLI_STRING, /* const char **: the value */
    CLI_UINT,   /* unsigned *: a whole number in [min, max] */
    CLI_MULTI,  /* const char **out (array of cap), size_t *count: repeatable */
} cli_flag_kind;

typedef struct cli_flag {
    const char *name; /* "--timeout" */
    cli_flag_kind kind;
    void *out;
    unsigned min, max; /* CLI_UINT */
    size_t *count;     /* CLI_MULTI */
    size_t cap;        /* CLI_MULTI */
    bool *seen;        /* optional: set when the flag was given */
} cli_flag;

#define CLI_MAX_POSITIONAL 64

/* Parses argv[1..] (argv[0] is the verb): the verb's flags, global flags
 * anywhere, `--help`, `--flag=value`, and positionals (everything after `--`
 * is positional). Returns 0, 1 when help was printed (exit 0), or -1 after
 * printing an error. *npos positionals land in pos. */
int cli_parse(cli_ctx *ctx, const char *verb, const char *help, int argc, char **argv, const cli_flag *flags,
              size_t nflags, const char **pos, size_t *npos);
/* Exit status for cli_parse's -1/1. */
int cli_parse_exit(int rc);
/* Prints one JSON document on stdout and frees it. */
struct json_t;
void cli_print_json(struct json_t *doc);
/* Opens a client for the resolved provider, printing the error on failure. */
abx_client *cli_client(cli_ctx *ctx, int *exit_status);
/* The same for the provider sandbox id names ("<provider>:<id>"), or the
 * resolved one for a bare id. */
abx_client *cli_client_for(cli_ctx *ctx, const char *id, int *exit_status);
/* A sandbox's details as the JSON the CLI prints. */
struct json_t *cli_info_json(const abx_sandbox_info *info);
/* Connects to the sandbox ID names through a client for the resolved
 * provider. The caller abx_sandbox_free()s the result; on failure the
 * error is printed, *EXIT_STATUS set and NULL returned. */
abx_sandbox *cli_connect(cli_ctx *ctx, const char *id, int *exit_status);

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

#define CLI_VERBS(X)                                                                                         \
    X(run, "run a command in a one-shot sandbox")                                                            \
    X(create, "create a sandbox and print its id")                                                           \
    X(exec, "run a shell command in a sandbox")                                                              \
    X(list, "list live sandboxes")                                                                           \
    X(info, "show a sandbox's details")                                                                      \
    X(timeout, "give a sandbox a new lifetime")                                                              \
    X(pause, "freeze a sandbox's processes, its memory and files kept")                                      \
    X(resume, "start a paused sandbox again")                                                                \
    X(kill, "destroy a sandbox")                                                                             \
    X(ps, "list a sandbox's running processes")                                                              \
    X(logs, "print a background task's output")                                                              \
    X(events, "print what happened to sandboxes (the host's event log); --follow")                           \
    X(top, "show the sandboxes' CPU, memory, network and disk, live")                                        \
    X(signal, "send a signal to a background task")                                                          \
    X(files, "ls, cat, put, get, mkdir, rm, mv files in a sandbox")                                          \
    X(config, "set or get configuration (~/.abx/config.toml)")                                               \
    X(mcp, "serve the MCP tools (start), install them into an IDE, show status")                             \
    X(doctor, "check what this host and user can run")                                                       \
    X(provider, "install, list and remove provider plugins")                                                 \
    X(serve, "serve this machine's sandboxes over E2B's protocol")                                           \
    X(service, "start, stop or install the abx service (sandboxes for every user)")                          \
    X(expose, "forward a host port to a port inside a sandbox")                                              \
    X(network, "show or change a sandbox's network policy")                                                  \
    X(template, "build, import, list, inspect and remove sandbox templates")                                 \
    X(volume, "create, list, inspect and remove volumes (storage that outlives sandboxes)")                  \
    X(snapshot, "record a running sandbox's filesystem as a template; list, remove")                         \
    X(fork, "make sandboxes from a running sandbox's filesystem now")                                        \
    X(version, "print the version")

#define CLI_DECLARE(name, summary)                                                                           \
    int cmd_##name(cli_ctx *ctx, int argc, char **argv);                                                     \
    extern const char cmd_##name##_help[];
CLI_VERBS(CLI_DECLARE)
#undef CLI_DECLARE

/* abx_host_checks as JSON: what this host and user can run (an array of
 * {check, status, detail}; the caller owns it); *sandboxes_work is false
 * when a check failed. */
struct json_t *cli_host_checks(bool *sandboxes_work);
/* The failed checks as one line ("check: detail; ...") in out; their count. */
size_t cli_host_failures(const struct json_t *checks, char *out, size_t len);

#endif
