/* cmd_volume.c: `abx volume create|list|inspect|rm`: named storage that
 * outlives sandboxes (libabx's abx_volume_*). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

const char cmd_volume_help[] =
    "Usage: abx volume create NAME [--size MiB] | list | inspect NAME|ID | rm NAME|ID   [--json]\n"
    "\n"
    "A volume is a named directory that outlives sandboxes: mount it with\n"
    "`abx create --volume NAME:/path[:ro]` and what is written there stays\n"
    "across kill, a killed supervisor and a machine restart, owned by whoever\n"
    "wrote it inside (files of 'user' stay user's in every later sandbox).\n"
    "Several sandboxes may mount one at once: they share one filesystem, and\n"
    "a write is seen by the others at once (no file locking between them).\n"
    "Volumes are the caller's: another user's or tenant's are not seen.\n"
    "\n"
    "  create NAME      makes one (NAME: 1-63 of a-z 0-9 . _ -)\n"
    "  --size MiB       its size, 16-1048576: an ext4 filesystem image that takes\n"
    "                   only the disk it holds; without it root's volume is a\n"
    "                   plain directory bounded by the host's disk, and a\n"
    "                   tenant's (a user through the abx service) has 1024 MiB\n"
    "  list             every volume of the caller\n"
    "  inspect NAME|ID  one volume's details\n"
    "  rm NAME|ID       removes it and its files, for good; refused (E8034)\n"
    "                   while a sandbox mounts it\n"
    "  --json           JSON on stdout\n"
    "\n"
    "Needs root, or the machine's abx service (docs/volumes.md).\n";

static void print_volume(const json_t *v)
{
    json_int_t mb = json_integer_value(json_object_get(v, "size_mb"));
    char size[32];
    if (mb)
        snprintf(size, sizeof size, "%lld MiB", (long long)mb);
    else
        snprintf(size, sizeof size, "-");
    printf("%-24s %-30s %-10s %-22s %s\n", json_string_value(json_object_get(v, "name")),
           json_string_value(json_object_get(v, "volume_id")), size,
           json_string_value(json_object_get(v, "created_at")),
           json_is_true(json_object_get(v, "in_use")) ? "in use" : "-");
}

/* Prints the JSON text libabx answered (freed here): as is with --json, else by shape. */
static int answer(cli_ctx *ctx, char *text, const char *done)
{
    json_t *doc = text ? json_loads(text, 0, NULL) : NULL;
    abx_free(text);
    if (ctx->json) {
        cli_print_json(doc ? doc : json_object());
        return 0;
    }
    if (json_is_array(doc)) {
        printf("%-24s %-30s %-10s %-22s %s\n", "NAME", "VOLUME ID", "SIZE", "CREATED", "IN USE");
        size_t i;
        json_t *v;
        json_array_foreach(doc, i, v) print_volume(v);
    } else if (done) {
        printf("%s %s (%s)\n", done, json_string_value(json_object_get(doc, "name")),
               json_string_value(json_object_get(doc, "volume_id")));
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(doc, k, v)
        {
            char *t = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf("%-12s %s\n", k, t ? t : json_string_value(v));
            free(t);
        }
    }
    json_decref(doc);
    return 0;
}

static int volume_verb(cli_ctx *ctx, abx_client *c, const char *const *pos, size_t npos, unsigned size_mb,
                       bool size_seen)
{
    const char *op = npos ? pos[0] : "";
    abx_error *err = NULL;
    char *text = NULL;
    int rc;
    if (size_seen && strcmp(op, "create") != 0)
        return cli_fail(ctx, ABX_EUSAGE, "--size: only with abx volume create");
    if (strcmp(op, "list") == 0 && npos == 1)
        rc = abx_volume_list(c, &text, &err);
    else if (strcmp(op, "create") == 0 && npos == 2)
        rc = abx_volume_create(c, pos[1], size_mb, &text, &err);
    else if (strcmp(op, "inspect") == 0 && npos == 2)
        rc = abx_volume_inspect(c, pos[1], &text, &err);
    else if (strcmp(op, "rm") == 0 && npos == 2)
        rc = abx_volume_remove(c, pos[1], &err);
    else
        return cli_fail(ctx, ABX_EUSAGE,
                        "usage: abx volume create NAME [--size MiB] | list | inspect NAME | rm NAME");
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (strcmp(op, "rm") == 0) {
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "name", pos[1], "removed", 1));
        else
            printf("removed %s\n", pos[1]);
        return 0;
    }
    return answer(ctx, text, strcmp(op, "create") == 0 ? "created" : NULL);
}

int cmd_volume(cli_ctx *ctx, int argc, char **argv)
{
    unsigned size_mb = 0;
    bool size_seen = false;
    const cli_flag flags[] = {{"--size", CLI_UINT, &size_mb, 16, ABX_VOLUME_MB_MAX, NULL, 0, &size_seen}};
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    int rc = cli_parse(ctx, "volume", cmd_volume_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    rc = volume_verb(ctx, c, pos, npos, size_mb, size_seen);
    abx_client_free(c);
    return rc;
}
