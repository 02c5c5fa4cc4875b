/* cmd_template.c: `abx template import|list|inspect|rm`: root filesystems
 * for sandboxes (lib/local/template_store.c). */
#include "cli.h"
#include "template_store.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

const char cmd_template_help[] =
    "Usage: abx template import NAME ARCHIVE | list | inspect NAME | rm NAME [--force] [--json]\n"
    "\n"
    "Templates are root filesystems for sandboxes: `abx create --template NAME`\n"
    "gives a sandbox the template's tree, read-only and shared, under a\n"
    "writable layer of its own (what it writes never reaches the template or\n"
    "another sandbox). base (the host's /usr, read-only) and\n"
    "code-interpreter-v1 are built in.\n"
    "\n"
    "  import NAME ARCHIVE  a root filesystem archive (`docker export` output,\n"
    "                       .tar, .tar.gz, .tar.zst): owners and modes kept,\n"
    "                       setuid/setgid bits dropped; absolute paths, '..',\n"
    "                       links out of the tree and device nodes refused\n"
    "  list                 every template\n"
    "  inspect NAME         one template's details\n"
    "  rm NAME              removes it; refused while live sandboxes use it\n"
    "                       unless --force (they keep their view until they end)\n"
    "  --json               JSON on stdout\n"
    "\n"
    "Needs root to make sandboxes from a template (id-mapped mounts).\n"
    "See docs/templates.md.\n";

static void print_one(const json_t *t)
{
    if (json_is_true(json_object_get(t, "builtin")))
        printf("%-24s built in: %s\n", json_string_value(json_object_get(t, "name")),
               json_string_value(json_object_get(t, "source")));
    else
        printf("%-24s %lld files, %.1f MiB, from %s (%s)\n", json_string_value(json_object_get(t, "name")),
               (long long)json_integer_value(json_object_get(t, "files")),
               (double)json_integer_value(json_object_get(t, "size_bytes")) / 1048576.0,
               json_string_value(json_object_get(t, "source")), json_string_value(json_object_get(t, "created_at")));
}

static int show(cli_ctx *ctx, json_t *doc)
{
    if (ctx->json) {
        cli_print_json(doc);
        return 0;
    }
    if (json_is_array(doc)) {
        size_t i;
        json_t *t;
        json_array_foreach(doc, i, t) print_one(t);
    } else {
        print_one(doc);
    }
    json_decref(doc);
    return 0;
}

int cmd_template(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    bool force = false;
    const cli_flag flags[] = {{"--force", CLI_BOOL, &force, 0, 0, NULL, 0, NULL}};
    int rc = cli_parse(ctx, "template", cmd_template_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    const char *op = npos ? pos[0] : "";
    abx_error *err = NULL;
    json_t *doc = NULL;
    if (strcmp(op, "import") == 0 && npos == 3) {
        if ((rc = abx__template_import(pos[1], pos[2], &doc, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        return show(ctx, doc);
    }
    if (strcmp(op, "list") == 0 && npos == 1) {
        if ((rc = abx__template_list(&doc, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        return show(ctx, doc);
    }
    if (strcmp(op, "inspect") == 0 && npos == 2) {
        if ((rc = abx__template_inspect(pos[1], &doc, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        return show(ctx, doc);
    }
    if (strcmp(op, "rm") == 0 && npos == 2) {
        if ((rc = abx__template_remove(pos[1], force, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "name", pos[1], "removed", 1));
        else
            printf("removed %s\n", pos[1]);
        return 0;
    }
    return cli_fail(ctx, ABX_EUSAGE, "usage: abx template import NAME ARCHIVE | list | inspect NAME | rm NAME [--force]");
}
