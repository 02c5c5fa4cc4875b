/* cmd_config.c: `abx config set|get|unset` (abx_config_*). Never prints
 * a secret, and takes a plugin's secret only on stdin. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_config_help[] =
    "Usage: abx config set KEY VALUE     write KEY into ~/.abx/config.toml\n"
    "       abx config set KEY           the same, with VALUE read from stdin (one\n"
    "                                    line; also with VALUE '-'): the only way\n"
    "                                    to set a key a plugin marks secret\n"
    "       abx config get [KEY]         print KEY, or every key\n"
    "       abx config unset KEY         remove KEY\n"
    "\n"
    "KEY is section.name, e.g. core.provider or providers.e2b.api_key\n"
    "([providers.e2b] api_key = ... in the file). Values of keys that name a\n"
    "secret (key, token, secret, password, credential), and keys a provider\n"
    "plugin's manifest marks secret, are shown masked.\n"
    "The file is written atomically with mode 0600; $ABX_HOME moves it.\n";

/* One line of stdin (the trailing newline dropped) into out. */
static bool value_from_stdin(char *out, size_t len)
{
    if (isatty(STDIN_FILENO))
        fprintf(stderr, "value: ");
    if (!fgets(out, (int)len, stdin))
        return false;
    size_t n = strlen(out);
    if (n && out[n - 1] == '\n')
        out[--n] = '\0';
    if (n && out[n - 1] == '\r')
        out[--n] = '\0';
    return true;
}

static void mask(const char *key, const char *value, char *out, size_t len)
{
    if (!abx_config_key_secret(key)) {
        snprintf(out, len, "%s", value);
        return;
    }
    size_t n = strlen(value);
    snprintf(out, len, "%s", n ? "********" : "");
}

/* A key a plugin marks secret (whose name may not say so). */
static bool plugin_secret(const char *key)
{
    return abx_config_key_secret(key) == ABX_SECRET_BY_PLUGIN;
}

static int config_get(cli_ctx *ctx, const char *key)
{
    char shown[1100], *value = NULL;
    abx_error *err = NULL;
    int rc = abx_config_get(key, &value, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (!value)
        return cli_fail(ctx, ABX_ECONFIG, "key is not set");
    mask(key, value, shown, sizeof shown);
    explicit_bzero(value, strlen(value));
    abx_free(value);
    if (ctx->json)
        cli_print_json(json_pack("{s:s, s:s}", "key", key, "value", shown));
    else
        printf("%s\n", shown);
    return 0;
}

static int config_list(cli_ctx *ctx)
{
    char *text = NULL, shown[1100];
    abx_error *err = NULL;
    int rc = abx_config_entries(&text, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *entries = json_loads(text, 0, NULL), *all = json_object(), *e;
    explicit_bzero(text, strlen(text));
    abx_free(text);
    size_t i;
    json_array_foreach(entries, i, e)
    {
        const char *k = json_string_value(json_array_get(e, 0)), *v = json_string_value(json_array_get(e, 1));
        mask(k, v, shown, sizeof shown);
        if (ctx->json)
            json_object_set_new(all, k, json_string(shown));
        else
            printf("%s = %s\n", k, shown);
    }
    json_decref(
        entries); /* the values were secrets too: jansson frees them unscrubbed, as the file holds them */
    if (ctx->json)
        cli_print_json(all);
    else
        json_decref(all);
    return 0;
}

int cmd_config(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "config", cmd_config_help, argc, argv, NULL, 0, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos < 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx config set KEY VALUE | get [KEY] | unset KEY");
    const char *op = pos[0];
    abx_error *err = NULL;
    if (strcmp(op, "set") == 0 && npos == 3 && strcmp(pos[2], "-") != 0 && plugin_secret(pos[1]))
        return cli_fail(
            ctx, ABX_EINVAL,
            "%s is a secret: never on the command line (it would stay in the shell's history); run "
            "'abx config set %s' and give it on stdin",
            pos[1], pos[1]);
    if (strcmp(op, "set") == 0 && (npos == 2 || npos == 3)) {
        char typed[1024];
        const char *value = npos == 3 && strcmp(pos[2], "-") != 0 ? pos[2] : NULL;
        if (!value && !value_from_stdin(typed, sizeof typed))
            return cli_fail(ctx, ABX_EINVAL, "no value: give KEY VALUE, or the value on stdin");
        rc = abx_config_set(pos[1], value ? value : typed, &err);
        explicit_bzero(typed, sizeof typed);
        if (rc < 0)
            return cli_fail_error(ctx, err, rc);
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "key", pos[1], "set", 1));
        return 0;
    }
    if (strcmp(op, "unset") == 0 && npos == 2) {
        bool was_set = false;
        if ((rc = abx_config_unset(pos[1], &was_set, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "key", pos[1], "was_set", was_set));
        return 0;
    }
    if (strcmp(op, "get") == 0 && npos == 2)
        return config_get(ctx, pos[1]);
    if (strcmp(op, "get") == 0 && npos == 1)
        return config_list(ctx);
    return cli_fail(ctx, ABX_EUSAGE, "usage: abx config set KEY VALUE | get [KEY] | unset KEY");
}
