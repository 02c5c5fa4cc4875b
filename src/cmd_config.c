/* cmd_config.c: `abx config set|get|unset`. Never prints a secret. */
#include "cli.h"
#include "plugin_store.h"
#include "config.h"

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

/* A providers.<id>.<key> that the installed plugin's manifest marks secret. */
static bool plugin_secret(const char *key)
{
    if (strncmp(key, "providers.", 10) != 0)
        return false;
    const char *id = key + 10, *dot = strchr(id, '.');
    char plugin[64];
    if (!dot || (size_t)(dot - id) >= sizeof plugin || strchr(dot + 1, '.'))
        return false;
    snprintf(plugin, sizeof plugin, "%.*s", (int)(dot - id), id);
    return abx__plugin_config_secret(plugin, dot + 1);
}

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
    if (!cli_is_secret_key(key) && !plugin_secret(key)) {
        snprintf(out, len, "%s", value);
        return;
    }
    size_t n = strlen(value);
    snprintf(out, len, "%s", n ? "********" : "");
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
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (!kvs)
        return cli_fail(ctx, ABX_ENOMEM, "config");
    abx_error *err = NULL;
    rc = abx__config_load(kvs, &err);
    int status = 0;
    if (rc < 0) {
        status = cli_fail_error(ctx, err, rc);
    } else if (strcmp(op, "set") == 0 && npos == 3 && strcmp(pos[2], "-") != 0 && plugin_secret(pos[1])) {
        status = cli_fail(ctx, ABX_EINVAL,
                          "%s is a secret: never on the command line (it would stay in the shell's history); run "
                          "'abx config set %s' and give it on stdin",
                          pos[1], pos[1]);
    } else if (strcmp(op, "set") == 0 && (npos == 2 || npos == 3)) {
        char typed[1024];
        const char *value = npos == 3 && strcmp(pos[2], "-") != 0 ? pos[2] : NULL;
        if (!value && !value_from_stdin(typed, sizeof typed)) {
            free(kvs);
            return cli_fail(ctx, ABX_EINVAL, "no value: give KEY VALUE, or the value on stdin");
        }
        rc = abx__kvs_set(kvs, pos[1], value ? value : typed);
        explicit_bzero(typed, sizeof typed);
        if (rc < 0)
            status = cli_fail(ctx, -rc, "key: expected section.name of letters, digits, '_' and '-'");
        else if ((rc = abx__config_save(kvs, &err)) < 0)
            status = cli_fail_error(ctx, err, rc);
        else if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "key", pos[1], "set", 1));
    } else if (strcmp(op, "unset") == 0 && npos == 2) {
        bool was_set = abx__kvs_unset(kvs, pos[1]) == 0;
        if ((rc = abx__config_save(kvs, &err)) < 0)
            status = cli_fail_error(ctx, err, rc);
        else if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "key", pos[1], "was_set", was_set));
    } else if (strcmp(op, "get") == 0 && npos <= 2) {
        char shown[1100];
        if (npos == 2) {
            const char *v = abx__kvs_get(kvs, pos[1]);
            if (!v) {
                status = cli_fail(ctx, ABX_ECONFIG, "key is not set");
            } else {
                mask(pos[1], v, shown, sizeof shown);
                if (ctx->json)
                    cli_print_json(json_pack("{s:s, s:s}", "key", pos[1], "value", shown));
                else
                    printf("%s\n", shown);
            }
        } else {
            json_t *all = json_object();
            for (size_t i = 0; i < kvs->n; i++) {
                mask(kvs->items[i].key, kvs->items[i].value, shown, sizeof shown);
                if (ctx->json)
                    json_object_set_new(all, kvs->items[i].key, json_string(shown));
                else
                    printf("%s = %s\n", kvs->items[i].key, shown);
            }
            if (ctx->json)
                cli_print_json(all);
            else
                json_decref(all);
        }
    } else {
        status = cli_fail(ctx, ABX_EUSAGE, "usage: abx config set KEY VALUE | get [KEY] | unset KEY");
    }
    free(kvs);
    return status;
}
