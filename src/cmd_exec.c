/* cmd_exec.c: `abx exec`. */
#include "cli.h"
#include "text.h"

#include <jansson.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

const char cmd_exec_help[] =
    "Usage: abx exec ID [--cwd DIR] [--timeout S] [--env K=V]... [--user root|user] [--no-stdin]\n"
    "                [--background] [--json] [--] \"CMD\"\n"
    "       abx exec -it ID [--cwd DIR] [--env K=V]... [--user root|user] [\"CMD\"]\n"
    "\n"
    "Runs CMD in the sandbox through `bash -l -c` (`sh -c` where there is no\n"
    "bash), streaming its output live. The exit status is CMD's (128+N for\n"
    "signal N, 124 if --timeout killed it, 125 if abx failed). Several words\n"
    "after ID are joined with spaces into one command.\n"
    "\n"
    "  --cwd DIR       working directory (default: the template's WORKDIR, else /app,\n"
    "                  as abx run and the MCP tools)\n"
    "  --timeout S     kill CMD after S seconds, 1-" ABX_STRINGIFY(
        ABX_TIMEOUT_MAX_S) " (default: none)\n"
                           "  --env K=V       environment variable (repeatable)\n"
                           "  --user U        user (uid 1000, default) or root\n"
                           "  -it, -t, --tty  a terminal: CMD (default: an interactive bash) gets a\n"
                           "                  pseudo-terminal of its own, sized as yours and resized\n"
                           "                  with it; what you type goes to it as typed (Ctrl-C\n"
                           "                  interrupts CMD, not abx); -i/--interactive is implied\n"
                           "  --background    start CMD and print its task id (see 'abx logs',\n"
                           "                  'abx signal', 'abx ps') instead of waiting\n"
                           "  --json          print {exit_code, stdout, stderr} (or {task_id}) at the end\n"
                           "\n"
                           "abx's stdin (when it is not a terminal, or with -i) is CMD's stdin; --no-stdin "
                           "gives\n"
                           "CMD an empty one (in a `while read` loop, as ssh -n does).\n"
                           "Interrupting abx (Ctrl-C, SIGTERM, SIGHUP) kills CMD in the sandbox and\n"
                           "exits 128+N; the sandbox itself lives on. So does a closed output\n"
                           "(`abx exec ID yes | head -1`): CMD is killed, abx exits 141 (128+SIGPIPE).\n";

/* The one piece of process state exec needs: the signal that interrupted
 * a foreground exec (0: none). Written only by on_interrupt. */
static volatile sig_atomic_t exec_interrupted_by;

static void on_interrupt(int sig)
{
    exec_interrupted_by = sig;
}

static bool interrupted(void *ud)
{
    (void)ud;
    return exec_interrupted_by != 0;
}

/* Catches SIGINT, SIGTERM and SIGHUP, except those abx was started with
 * ignored (a background job's SIGINT, nohup's SIGHUP), as a shell would. */
static void catch_interrupts(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* Output to a reader that has gone (`abx exec ID yes | head -1`: EPIPE,
 * SIGPIPE being ignored) ends the command as a shell pipeline would: it is
 * killed and abx exits 128+SIGPIPE. */
static void copy_out(FILE *f, const char *data, size_t len)
{
    if ((fwrite(data, 1, len, f) != len || fflush(f) != 0) && errno == EPIPE)
        exec_interrupted_by = SIGPIPE;
}

static void to_stdout(const char *data, size_t len, void *ud)
{
    (void)ud;
    copy_out(stdout, data, len);
}

static void to_stderr(const char *data, size_t len, void *ud)
{
    (void)ud;
    copy_out(stderr, data, len);
}

/* Joins positionals [from, n) with spaces into buf. */
static int join(const char **pos, size_t from, size_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = from; i < n; i++) {
        size_t l = strlen(pos[i]);
        if (len + l + 2 > cap)
            return -1;
        if (len)
            buf[len++] = ' ';
        memcpy(buf + len, pos[i], l + 1);
        len += l;
    }
    return 0;
}

/* The exit status of an exec that did not run to its end: 128+N when
 * signal N interrupted abx, else the error's report and 125. Takes err. */
static int exec_failed(cli_ctx *ctx, abx_error *err, int rc)
{
    if (rc == -ABX_ECANCELLED && exec_interrupted_by) {
        abx_error_free(err);
        return 128 + exec_interrupted_by;
    }
    cli_fail_error(ctx, err, rc);
    return CLI_EXIT_FAILED;
}

/* exec -it: the command gets a terminal of its own; ours is in raw mode
 * meanwhile (every key, Ctrl-C included, goes to it) and restored after. */
static int exec_tty(cli_ctx *ctx, abx_sandbox *s, const char *command, abx_exec_options *o)
{
    if (!isatty(STDIN_FILENO)) {
        abx_sandbox_free(s);
        cli_fail(ctx, ABX_EUSAGE, "exec -it: stdin is not a terminal (use exec without -it for pipes)");
        return CLI_EXIT_FAILED;
    }
    struct termios saved, raw;
    bool have_modes = tcgetattr(STDIN_FILENO, &saved) == 0;
    raw = saved;
    cfmakeraw(&raw);
    if (have_modes)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &raw);
    o->pty = true;
    o->pty_fd = STDIN_FILENO;
    o->with_stdin = true;
    o->stdin_fd = STDIN_FILENO;
    o->on_stdout = to_stdout;
    o->on_stderr = to_stderr;
    o->should_cancel = interrupted; /* SIGTERM, SIGHUP; Ctrl-C is a key now */
    catch_interrupts();
    abx_exec_result r;
    abx_error *err = NULL;
    static const char *const shell[] = {"/bin/bash", "-i", "-l", NULL};
    int rc =
        command ? abx_sandbox_exec(s, command, o, &r, &err) : abx_sandbox_exec_argv(s, shell, o, &r, &err);
    abx_sandbox_free(s);
    if (have_modes)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
    if (rc < 0)
        return exec_failed(ctx, err, rc);
    int code = r.exit_code;
    abx_exec_result_clear(&r);
    return code;
}

int cmd_exec(cli_ctx *ctx, int argc, char **argv)
{
    const char *envs[129] = {NULL}, *pos[CLI_MAX_POSITIONAL];
    size_t nenvs = 0, npos = 0;
    abx_exec_options o = {0};
    bool background = false, no_stdin = false, tty = false, interactive = false;
    const cli_flag flags[] = {
        {"--no-stdin", CLI_BOOL, &no_stdin, 0, 0, NULL, 0, NULL},
        {"--tty", CLI_BOOL, &tty, 0, 0, NULL, 0, NULL},
        {"-t", CLI_BOOL, &tty, 0, 0, NULL, 0, NULL},
        {"-it", CLI_BOOL, &tty, 0, 0, NULL, 0, NULL},
        {"-ti", CLI_BOOL, &tty, 0, 0, NULL, 0, NULL},
        {"--interactive", CLI_BOOL, &interactive, 0, 0, NULL, 0, NULL},
        {"-i", CLI_BOOL, &interactive, 0, 0, NULL, 0, NULL},
        {"--cwd", CLI_STRING, &o.cwd, 0, 0, NULL, 0, NULL},
        {"--timeout", CLI_UINT, &o.timeout_s, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0, NULL},
        {"--env", CLI_MULTI, envs, 0, 0, &nenvs, 128, NULL},
        {"--user", CLI_STRING, &o.user, 0, 0, NULL, 0, NULL},
        {"--background", CLI_BOOL, &background, 0, 0, NULL, 0, NULL},
    };
    int rc =
        cli_parse(ctx, "exec", cmd_exec_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos, &npos);
    if (rc != 0)
        return rc > 0 ? 0 : CLI_EXIT_FAILED;
    if (!o.cwd) /* one default working directory for run, exec and the MCP tools, unless the */
        o.default_cwd = "/app"; /* sandbox's template names its own (WORKDIR) */
    char command[1 << 16];
    if (tty && (background || ctx->json || no_stdin)) {
        cli_fail(ctx, ABX_EUSAGE, "exec -it: not with --background, --json or --no-stdin");
        return CLI_EXIT_FAILED;
    }
    if (tty && npos == 1)
        command[0] = '\0'; /* an interactive shell */
    else if (npos < 2 || join(pos, 1, npos, command, sizeof command) < 0 || !command[0]) {
        cli_fail(ctx, ABX_EUSAGE, "usage: abx exec ID \"CMD\"");
        return CLI_EXIT_FAILED;
    }
    if (o.user && strcmp(o.user, "root") != 0 && strcmp(o.user, "user") != 0) {
        cli_fail(ctx, ABX_EINVAL, "--user: expected 'root' or 'user'");
        return CLI_EXIT_FAILED;
    }
    o.envs = envs;
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, pos[0], &status);
    if (!s)
        return CLI_EXIT_FAILED;
    if (tty)
        return exec_tty(ctx, s, command[0] ? command : NULL, &o);
    abx_error *err = NULL;
    if (background && !abx_sandbox_tasks_outlive_client(s)) {
        abx_sandbox_free(s);
        cli_fail(ctx, ABX_ENOTSUP,
                 "--background: this sandbox's provider keeps a task and its output only while the abx "
                 "process that "
                 "started it runs (its plugin process); start it from an MCP session (abx mcp start), or run "
                 "it in "
                 "the foreground");
        return CLI_EXIT_FAILED;
    }
    if (background) {
        int pid = 0;
        rc = abx_sandbox_start_background(s, command, &o, &pid, &err);
        abx_sandbox_free(s);
        if (rc < 0) {
            cli_fail_error(ctx, err, rc);
            return CLI_EXIT_FAILED;
        }
        if (ctx->json) {
            char id[16];
            snprintf(id, sizeof id, "%d", pid);
            cli_print_json(json_pack("{s:s, s:i}", "task_id", id, "pid", pid));
        } else {
            printf("%d\n", pid);
        }
        return 0;
    }
    if (!ctx->json) {
        o.on_stdout = to_stdout;
        o.on_stderr = to_stderr;
    }
    /* what comes on abx's stdin is the command's (`echo data | abx exec ID
     * 'wc -c'`); a terminal is not read (no command waits on it by surprise) */
    o.with_stdin = !no_stdin && (interactive || !isatty(STDIN_FILENO));
    o.stdin_fd = STDIN_FILENO;
    o.keep_output = ctx->json;
    o.should_cancel = interrupted;
    catch_interrupts();
    abx_exec_result r;
    rc = abx_sandbox_exec(s, command, &o, &r, &err);
    abx_sandbox_free(s);
    if (rc < 0)
        return exec_failed(ctx, err, rc);
    if (ctx->json)
        cli_print_json(json_pack("{s:i, s:o, s:o, s:b}", "exit_code", r.exit_code, "stdout",
                                 mcp_text(r.stdout_data ? r.stdout_data : "", r.stdout_len, (size_t)-1, NULL),
                                 "stderr",
                                 mcp_text(r.stderr_data ? r.stderr_data : "", r.stderr_len, (size_t)-1, NULL),
                                 "timed_out", r.timed_out));
    else if (r.timed_out)
        fprintf(stderr, "abx: %s: the command ran past --timeout and was killed (hint: %s)\n",
                abx_err_name(ABX_ETIMEOUT), abx_err_hint(ABX_ETIMEOUT));
    int code = r.exit_code;
    abx_exec_result_clear(&r);
    return code;
}
