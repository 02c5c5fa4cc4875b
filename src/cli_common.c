/* cli_common.c: flag helpers and error output shared by every verb.
 * Owns how errors look to a shell user (one line: code, message, hint) and
 * to a program (--json: one JSON object on stderr). */
#include "cli.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_take_value(cli_ctx *ctx, int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        cli_fail(ctx, ABX_EUSAGE, "%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int cli_take_global(cli_ctx *ctx, int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--json") == 0) {
        ctx->json = true;
        return 1;
    }
    const char *v;
    int rc = cli_take_value(ctx, argc, argv, i, "--provider", &v);
    if (rc != 0) {
        if (rc > 0)
            ctx->provider = v;
        return rc;
    }
    rc = cli_take_value(ctx, argc, argv, i, "--opt", &v);
    if (rc > 0) {
        if (!strchr(v, '=') || v[0] == '=') {
            cli_fail(ctx, ABX_EUSAGE, "--opt expects KEY=VALUE");
            return -1;
        }
        if (ctx->nopts >= CLI_MAX_OPTS) {
            cli_fail(ctx, ABX_EUSAGE, "too many --opt flags (at most %d)", CLI_MAX_OPTS);
            return -1;
        }
        ctx->opts[ctx->nopts++] = v;
    }
    return rc;
}

static int print_error(const cli_ctx *ctx, int code, const char *message)
{
    if (code < 0)
        code = -code;
    if (ctx && ctx->json) {
        json_t *o = json_pack("{s:{s:s, s:s, s:s, s:s}}", "error", "code", abx_err_name(code),
                              "category", abx_err_category(code), "message", message, "hint",
                              abx_err_hint(code));
        if (o) {
            json_dumpf(o, stderr, JSON_COMPACT);
            fputc('\n', stderr);
            json_decref(o);
        }
    } else {
        fprintf(stderr, "abx: %s: %s (hint: %s)\n", abx_err_name(code), message, abx_err_hint(code));
    }
    return code == ABX_EUSAGE ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
}

int cli_fail(const cli_ctx *ctx, int code, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return print_error(ctx, code, message);
}

int cli_fail_error(const cli_ctx *ctx, abx_error *err, int rc)
{
    int code = err ? (int)abx_error_code(err) : -rc;
    const char *msg = err ? abx_error_message(err) : abx_strerror(code);
    int status = print_error(ctx, code, msg && *msg ? msg : abx_strerror(code));
    abx_error_free(err);
    return status;
}

void cli_print_help(const cli_command *cmd)
{
    fputs(cmd->help, stdout);
}
