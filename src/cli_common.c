/* cli_common.c: flag helpers and error output shared by every verb.
 * Owns how errors look to a shell user (one line: code, message, hint) and
 * to a program (--json: one JSON object on stderr). */
#include "cli.h"
#include "parse.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
        if (ctx->nopts >= CLI_MAX_OPTS - 1) { /* the list stays NULL-terminated */
            cli_fail(ctx, ABX_EUSAGE, "too many --opt flags (at most %d)", CLI_MAX_OPTS - 1);
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
        json_t *o = json_pack("{s:{s:s, s:s, s:s, s:s}}", "error", "code", abx_err_name(code), "category",
                              abx_err_category(code), "message", message, "hint", abx_err_hint(code));
        if (o) {
            json_dumpf(o, stderr, JSON_COMPACT);
            fputc('\n', stderr);
            json_decref(o);
        }
    } else {
        fprintf(stderr, "abx: %s: %s (hint: %s)\n", abx_err_name(code), message, abx_err_hint(code));
    }
    /* one exit status per category (docs/cli/README.md): a wrong command
     * line, unknown verb or flag (E8014) or a value out of its range
     * (E8001) is 2; anything else is 1. run and exec, which pass the
     * command's own status through, use 125 for all of abx's errors. */
    return code == ABX_EUSAGE || code == ABX_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
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

/* ---- declarative flags ---------------------------------------------------- */

static int take_flag(cli_ctx *ctx, const char *verb, int argc, char **argv, int *i, const cli_flag *f)
{
    const char *v = NULL;
    if (f->kind == CLI_BOOL) {
        if (strcmp(argv[*i], f->name) != 0)
            return 0;
        *(bool *)f->out = true;
    } else {
        int rc = cli_take_value(ctx, argc, argv, i, f->name, &v);
        if (rc <= 0)
            return rc;
        if (f->kind == CLI_STRING) {
            *(const char **)f->out = v;
        } else if (f->kind == CLI_UINT) {
            if (abx__parse_uint(v, f->min, f->max, (unsigned *)f->out) < 0) {
                cli_fail(ctx, ABX_EINVAL, "%s: expected a whole number from %u to %u", f->name, f->min,
                         f->max);
                return -1;
            }
        } else {
            if (*f->count >= f->cap) {
                cli_fail(ctx, ABX_EINVAL, "%s: at most %zu times for 'abx %s'", f->name, f->cap, verb);
                return -1;
            }
            ((const char **)f->out)[(*f->count)++] = v;
            ((const char **)f->out)[*f->count] = NULL;
        }
    }
    if (f->seen)
        *f->seen = true;
    return 1;
}

int cli_parse(cli_ctx *ctx, const char *verb, const char *help, int argc, char **argv, const cli_flag *flags,
              size_t nflags, const char **pos, size_t *npos)
{
    *npos = 0;
    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_positional && strcmp(arg, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (!only_positional && cli_is_help(arg)) {
            fputs(help, stdout);
            return 1;
        }
        /* "-5" is a (negative) number, not a flag: the verb's own check
         * then says what range it takes */
        bool negative_number = arg[0] == '-' && arg[1] >= '0' && arg[1] <= '9';
        if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0 || negative_number) {
            if (*npos >= CLI_MAX_POSITIONAL) {
                cli_fail(ctx, ABX_EUSAGE, "too many arguments for 'abx %s'", verb);
                return -1;
            }
            pos[(*npos)++] = arg;
            continue;
        }
        int rc = cli_take_global(ctx, argc, argv, &i);
        for (size_t k = 0; rc == 0 && k < nflags; k++)
            rc = take_flag(ctx, verb, argc, argv, &i, &flags[k]);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            cli_fail(ctx, ABX_EUSAGE, "unknown flag '%.64s' for 'abx %s'", arg, verb);
            return -1;
        }
    }
    return 0;
}

int cli_parse_exit(int rc)
{
    return rc > 0 ? 0 : CLI_EXIT_USAGE;
}

void cli_print_json(json_t *doc)
{
    if (!doc) {
        fputs("null\n", stdout);
        return;
    }
    json_dumpf(doc, stdout, JSON_COMPACT);
    fputc('\n', stdout);
    json_decref(doc);
}

abx_client *cli_client(cli_ctx *ctx, int *exit_status)
{
    return cli_client_for(ctx, NULL, exit_status);
}

abx_client *cli_client_for(cli_ctx *ctx, const char *id, int *exit_status)
{
    /* an id names its provider ("local-process:lp1..."): that one serves it */
    char prefix[64] = "";
    const char *colon = id ? strchr(id, ':') : NULL;
    if (colon && (size_t)(colon - id) < sizeof prefix)
        snprintf(prefix, sizeof prefix, "%.*s", (int)(colon - id), id);
    abx_client_options o = {.provider = prefix[0] ? prefix : NULL,
                            .cli_provider = ctx->provider,
                            .all_tenants = ctx->all_tenants};
    abx_client *c = NULL;
    abx_error *err = NULL;
    int rc = abx_client_new(&o, &c, &err);
    if (rc < 0) {
        *exit_status = cli_fail_error(ctx, err, rc);
        return NULL;
    }
    return c;
}

abx_sandbox *cli_connect(cli_ctx *ctx, const char *id, int *exit_status)
{
    abx_client *client = cli_client_for(ctx, id, exit_status);
    if (!client)
        return NULL;
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    int rc = abx_sandbox_connect(client, id, &s, &err);
    abx_client_free(client);
    if (rc < 0) {
        *exit_status = cli_fail_error(ctx, err, rc);
        return NULL;
    }
    return s;
}

json_t *cli_info_json(const abx_sandbox_info *i)
{
    char started[32], end[32];
    abx__rfc3339(i->started_at, started, sizeof started);
    abx__rfc3339(i->end_at, end, sizeof end);
    json_t *meta = json_loads(i->metadata_json ? i->metadata_json : "{}", 0, NULL);
    json_t *envs = json_loads(i->env_names_json ? i->env_names_json : "[]", 0, NULL);
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:o, s:o}", "sandbox_id", i->sandbox_id,
                            "template", i->template_id, "status", i->status, "started_at", started, "end_at",
                            end, "cpu_count", (int)i->cpu_count, "memory_mb", (int)i->memory_mb,
                            "disk_size_mb", (int)i->disk_size_mb, "metadata", meta ? meta : json_object(),
                            "env_names", envs ? envs : json_array());
    json_t *net = i->network_json ? json_loads(i->network_json, 0, NULL) : NULL;
    if (doc && net)
        json_object_set_new(doc, "network", net);
    else
        json_decref(net);
    if (doc && i->persistent)
        json_object_set_new(doc, "durable",
                            json_pack("{s:i, s:s}", "boots", (int)i->boots, "resumed_from", i->resumed_from));
    json_t *vols = i->volumes_json ? json_loads(i->volumes_json, 0, NULL) : NULL;
    if (doc && json_array_size(vols))
        json_object_set_new(doc, "volumes", vols);
    else
        json_decref(vols);
    return doc;
}

json_t *cli_host_checks(bool *sandboxes_work)
{
    char *text = NULL;
    *sandboxes_work = false;
    json_t *checks = abx_host_checks(&text, sandboxes_work, NULL) == 0 ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    return checks ? checks : json_array();
}

size_t cli_host_failures(const json_t *checks, char *out, size_t len)
{
    size_t count = 0, used = 0;
    out[0] = '\0';
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "status")), "fail") != 0)
            continue;
        int n = snprintf(out + used, len - used, "%s%s: %s", count ? "; " : "",
                         json_string_value(json_object_get(c, "check")),
                         json_string_value(json_object_get(c, "detail")));
        if (n > 0 && used + (size_t)n < len)
            used += (size_t)n;
        count++;
    }
    return count;
}
