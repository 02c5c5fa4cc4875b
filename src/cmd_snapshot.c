/* cmd_snapshot.c: `abx snapshot create|list|rm` and `abx fork`: a running
 * sandbox's filesystem as a template, and new sandboxes from it (libabx's
 * abx_sandbox_snapshot, abx_snapshot_*, abx_sandbox_fork). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_snapshot_help[] =
    "Usage: abx snapshot create ID [--name NAME] | list [--sandbox ID] | rm NAME   [--json]\n"
    "\n"
    "A snapshot records a running sandbox's filesystem (its template's tree and\n"
    "what it wrote; not its memory, not its volumes) as a new template, while the\n"
    "sandbox goes on: its processes are frozen only for the walk (synced first;\n"
    "`paused_ms` says how long). Files it left as its template had them are\n"
    "shared with the template, not copied. Start sandboxes from it with\n"
    "`abx create --template NAME` (E2B: Sandbox.create(snapshotId)); they start\n"
    "from its files, with the template's start command.\n"
    "\n"
    "  create ID        records sandbox ID; prints the snapshot's name (its id)\n"
    "  --name NAME      its name (default: snap-<random>); a template name\n"
    "  list             the caller's snapshots (--sandbox ID: of that sandbox)\n"
    "  rm NAME          removes one; refused while a sandbox uses it\n"
    "  --json           JSON on stdout\n"
    "\n"
    "See docs/snapshots.md.\n";

const char cmd_fork_help[] = "Usage: abx fork ID [--count N] [--timeout S] [--json]\n"
                             "\n"
                             "Makes N sandboxes (default 1, at most 64) from sandbox ID's filesystem now,\n"
                             "each with its own uid range, network (none) and lifetime (--timeout, default\n"
                             "300 s); the parent goes on. A snapshot under the hood, not kept: it goes\n"
                             "with the last of them. Prints their ids, one per line (--json: an array of\n"
                             "their infos).\n";

static int print_answer(cli_ctx *ctx, char *text, bool list)
{
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    if (ctx->json) {
        cli_print_json(doc ? doc : json_object());
        return 0;
    }
    if (list) {
        printf("%-32s %-28s %-22s %s\n", "SNAPSHOT", "OF SANDBOX", "CREATED", "FILES");
        size_t i;
        json_t *v;
        json_array_foreach(doc, i, v)
        {
            json_t *snap = json_object_get(v, "snapshot");
            printf("%-32s local:%-22s %-22s %lld\n", json_string_value(json_object_get(v, "snapshot_id")),
                   json_string_value(json_object_get(snap, "sandbox_id")),
                   json_string_value(json_object_get(v, "created_at")),
                   (long long)json_integer_value(json_object_get(v, "files")));
        }
    } else {
        json_t *snap = json_object_get(doc, "snapshot");
        printf("%s\n", json_string_value(json_object_get(doc, "snapshot_id")));
        fprintf(stderr, "abx: snapshot of %s: %lld files linked, %lld copied (%lld bytes), paused %lld ms\n",
                json_string_value(json_object_get(snap, "sandbox_id")),
                (long long)json_integer_value(json_object_get(snap, "linked")),
                (long long)json_integer_value(json_object_get(snap, "copied")),
                (long long)json_integer_value(json_object_get(snap, "copied_bytes")),
                (long long)json_integer_value(json_object_get(snap, "paused_ms")));
    }
    json_decref(doc);
    return 0;
}

static int snapshot_create(cli_ctx *ctx, const char *id, const char *name)
{
    int status = 0;
    abx_client *c = cli_client_for(ctx, id, &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    abx_sandbox *s = NULL;
    char *info = NULL;
    int rc = abx_sandbox_connect(c, id, &s, &err);
    if (rc == 0)
        rc = abx_sandbox_snapshot(s, name, &info, &err);
    abx_sandbox_free(s);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    return print_answer(ctx, info, false);
}

int cmd_snapshot(cli_ctx *ctx, int argc, char **argv)
{
    const char *name = NULL, *of = NULL;
    const cli_flag flags[] = {{"--name", CLI_STRING, &name, 0, 0, NULL, 0, NULL},
                              {"--sandbox", CLI_STRING, &of, 0, 0, NULL, 0, NULL}};
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "snapshot", cmd_snapshot_help, argc, argv, flags, 2, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    const char *op = npos ? pos[0] : "";
    if (strcmp(op, "create") == 0 && npos == 2 && !of)
        return snapshot_create(ctx, pos[1], name);
    bool list = strcmp(op, "list") == 0 && npos == 1 && !name;
    bool rm = strcmp(op, "rm") == 0 && npos == 2 && !name && !of;
    if (!list && !rm)
        return cli_fail(ctx, ABX_EUSAGE,
                        "usage: abx snapshot create ID [--name NAME] | list [--sandbox ID] | rm NAME");
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    char *text = NULL;
    rc = list ? abx_snapshot_list(c, of, &text, &err) : abx_snapshot_remove(c, pos[1], &err);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (rm) {
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "snapshot_id", pos[1], "removed", 1));
        else
            printf("removed %s\n", pos[1]);
        return 0;
    }
    return print_answer(ctx, text, true);
}

int cmd_fork(cli_ctx *ctx, int argc, char **argv)
{
    unsigned count = 1, timeout_s = 0;
    const cli_flag flags[] = {
        {"--count", CLI_UINT, &count, 1, ABX_FORK_MAX, NULL, 0, NULL},
        {"--timeout", CLI_UINT, &timeout_s, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0, NULL}};
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "fork", cmd_fork_help, argc, argv, flags, 2, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx fork ID [--count N]");
    int status = 0;
    abx_client *c = cli_client_for(ctx, pos[0], &status);
    if (!c)
        return status;
    abx_error *err = NULL;
    abx_sandbox *s = NULL, **kids = NULL;
    abx_sandbox_info parent;
    rc = abx_sandbox_connect(c, pos[0], &s, &err);
    if (rc == 0)
        rc = abx_sandbox_get_info(s, &parent, &err);
    if (rc == 0) {
        abx_create_options o = {
            .cpu_count = parent.cpu_count, .memory_mb = parent.memory_mb, .timeout_s = timeout_s};
        abx_sandbox_info_clear(&parent);
        rc = abx_sandbox_fork(c, s, count, &o, &kids, &err);
    }
    abx_sandbox_free(s);
    if (rc < 0) {
        abx_client_free(c);
        return cli_fail_error(ctx, err, rc);
    }
    json_t *all = json_array();
    for (unsigned i = 0; i < count; i++) {
        abx_sandbox_info in;
        if (ctx->json && abx_sandbox_get_info(kids[i], &in, NULL) == 0) {
            json_array_append_new(all, cli_info_json(&in));
            abx_sandbox_info_clear(&in);
        } else if (!ctx->json) {
            printf("%s\n", abx_sandbox_id(kids[i]));
        }
        abx_sandbox_free(kids[i]);
    }
    abx_free(kids);
    abx_client_free(c);
    if (ctx->json)
        cli_print_json(all);
    else
        json_decref(all);
    return 0;
}
