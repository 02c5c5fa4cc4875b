/* cmd_template.c: `abx template build|import|list|inspect|rm|prune`: root
 * filesystems for sandboxes, the provider's (abx_templates; the local
 * provider's builds and store: abx_template_*). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_template_help[] =
    "Usage: abx template build NAME [-f DOCKERFILE] [CONTEXT] [--build-arg K=V]... [--no-cache]\n"
    "                          [--network sandbox|host]\n"
    "       abx template build --builtin code-interpreter-v1\n"
    "       abx template import NAME ARCHIVE|OCI-DIR | list | inspect NAME | rm NAME [--force] | prune\n"
    "       [--json]\n"
    "\n"
    "Templates are root filesystems for sandboxes: `abx create --template NAME`\n"
    "gives a sandbox the template's tree, read-only and shared, under a\n"
    "writable layer of its own (what it writes never reaches the template or\n"
    "another sandbox), with the template's ENV, WORKDIR, USER and start\n"
    "command (CMD/ENTRYPOINT, ready when its HEALTHCHECK passes). base (the\n"
    "host's /usr, read-only) is built in; code-interpreter-v1 (Debian with\n"
    "python3, numpy, pandas, matplotlib and node) is built on first use.\n"
    "\n"
    "  build NAME [CONTEXT]  runs a Dockerfile (CONTEXT/Dockerfile, or -f FILE):\n"
    "                       FROM debian:bookworm[-slim] | scratch | TEMPLATE |\n"
    "                       ARCHIVE, RUN (as root in a build sandbox with a\n"
    "                       network of its own), COPY, ADD, ENV, ARG, WORKDIR, USER,\n"
    "                       CMD, ENTRYPOINT, HEALTHCHECK, multi-stage builds;\n"
    "                       CONTEXT/.dockerignore leaves files out, as Docker's.\n"
    "                       Steps are cached: a changed step reruns from there\n"
    "                       (docs/templates.md). Progress on stderr;\n"
    "                       with --json, one JSON event per line on stdout\n"
    "  --build-arg K=V      an ARG's value (repeatable)\n"
    "  --no-cache           reruns every step\n"
    "  --network sandbox    RUN steps' network (the default): a namespace of their\n"
    "                       own, outbound through NAT as --network internet; the\n"
    "                       host, its loopback, its LAN and the sandboxes refused\n"
    "  --network host       RUN steps in the host's network (reaches its loopback\n"
    "                       services and LAN: an explicit choice, with a warning)\n"
    "  --builtin NAME       builds a built-in template (code-interpreter-v1)\n"
    "  import NAME SOURCE   a root filesystem archive (`docker export` output,\n"
    "                       .tar, .tar.gz, .tar.zst) or an OCI image layout\n"
    "                       directory (skopeo copy docker://IMAGE oci:DIR;\n"
    "                       DIR:TAG for a tagged image): its\n"
    "                       layers in order, whiteouts applied, its Env,\n"
    "                       WorkingDir, User and Cmd kept. Owners and modes\n"
    "                       kept, setuid/setgid bits dropped; absolute paths,\n"
    "                       '..', links out of the tree and device nodes refused\n"
    "  list                 every template\n"
    "  inspect NAME         one template's details\n"
    "  rm NAME              removes it; refused while live sandboxes use it\n"
    "                       unless --force (they keep their view until they end)\n"
    "  prune                empties the build cache (ABX_BUILD_CACHE, else\n"
    "                       /var/cache/abx/build)\n"
    "  --json               JSON on stdout\n"
    "\n"
    "Needs root to build templates and to make sandboxes from them (id-mapped\n"
    "mounts).\n"
    "See docs/templates.md.\n";

static void print_one(const json_t *t)
{
    if (json_is_true(json_object_get(t, "builtin")) && !json_is_true(json_object_get(t, "built")))
        printf("%-24s built in: %s\n", json_string_value(json_object_get(t, "name")),
               json_string_value(json_object_get(t, "source")));
    else
        printf("%-24s %lld files, %.1f MiB, from %s (%s)\n", json_string_value(json_object_get(t, "name")),
               (long long)json_integer_value(json_object_get(t, "files")),
               (double)json_integer_value(json_object_get(t, "size_bytes")) / 1048576.0,
               json_string_value(json_object_get(t, "source")),
               json_string_value(json_object_get(t, "created_at")));
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

/* Build progress: human lines on stderr, or JSON lines on stdout. */
static void on_build_event(const char *event_json, void *ud)
{
    const cli_ctx *ctx = ud;
    if (ctx->json) {
        printf("%s\n", event_json);
        fflush(stdout);
        return;
    }
    json_t *ev = json_loads(event_json, 0, NULL);
    if (!ev)
        return;
    const char *kind = json_string_value(json_object_get(ev, "event"));
    if (strcmp(kind, "step") == 0)
        fprintf(stderr, "step %d/%d: %s%s\n", (int)json_integer_value(json_object_get(ev, "step")),
                (int)json_integer_value(json_object_get(ev, "steps")),
                json_string_value(json_object_get(ev, "instruction")),
                json_is_true(json_object_get(ev, "cached")) ? " (cached)" : "");
    else if (strcmp(kind, "output") == 0)
        fwrite(json_string_value(json_object_get(ev, "data")), 1,
               json_string_length(json_object_get(ev, "data")), stderr);
    else if (strcmp(kind, "note") == 0)
        fprintf(stderr, "  %s\n", json_string_value(json_object_get(ev, "text")));
    json_decref(ev);
}

/* A call's JSON answer (taken) as a document, or the failure printed. */
static int show_text(cli_ctx *ctx, int rc, abx_error *err, char *text)
{
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = json_loads(text, 0, NULL);
    abx_free(text);
    return show(ctx, doc);
}

static int build(cli_ctx *ctx, abx_client *c, const char *name, const char *context, const char *file,
                 const char *builtin, const char *const *args, bool no_cache, const char *network)
{
    abx_template_build_options o = {.name = name,
                                    .network = network,
                                    .dockerfile = file,
                                    .context = context,
                                    .build_args = args,
                                    .no_cache = no_cache,
                                    .builtin = builtin,
                                    .on_event = on_build_event,
                                    .userdata = ctx};
    abx_error *err = NULL;
    char *text = NULL;
    int rc = abx_template_build(c, &o, &text, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = json_loads(text, 0, NULL);
    abx_free(text);
    if (ctx->json) {
        json_t *ev = json_pack("{s:s, s:o}", "event", "built", "template", doc);
        char *line = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
        printf("%s\n", line ? line : "{}");
        free(line);
        json_decref(ev);
        return 0;
    }
    fprintf(stderr, "built template %s\n", json_string_value(json_object_get(doc, "name")));
    print_one(doc);
    json_decref(doc);
    return 0;
}

static int template_verb(cli_ctx *ctx, abx_client *c, const char *op, const char **pos, size_t npos,
                         bool force, bool no_cache, const char *file, const char *builtin,
                         const char *const *args, size_t nargs, const char *network)
{
    abx_error *err = NULL;
    char *text = NULL;
    int rc;
    if (strcmp(op, "build") == 0 && ((builtin && npos == 1) || (!builtin && (npos == 2 || npos == 3)))) {
        for (size_t i = 0; i < nargs; i++)
            if (!strchr(args[i], '=') || args[i][0] == '=')
                return cli_fail(ctx, ABX_EUSAGE, "--build-arg: NAME=value");
        return build(ctx, c, npos > 1 ? pos[1] : NULL, npos == 3 ? pos[2] : ".", file, builtin, args,
                     no_cache, network);
    }
    if (strcmp(op, "prune") == 0 && npos == 1) {
        unsigned long long freed = 0;
        if ((rc = abx_template_prune(c, &freed, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        if (ctx->json)
            cli_print_json(json_pack("{s:I}", "freed_bytes", (json_int_t)freed));
        else
            printf("build cache emptied: %.1f MiB freed\n", (double)freed / 1048576.0);
        return 0;
    }
    if (strcmp(op, "import") == 0 && npos == 3) {
        rc = abx_template_import(c, pos[1], pos[2], &text, &err);
        return show_text(ctx, rc, err, text);
    }
    if (strcmp(op, "list") == 0 && npos == 1) {
        rc = abx_templates(c, &text, &err);
        return show_text(ctx, rc, err, text);
    }
    if (strcmp(op, "inspect") == 0 && npos == 2) {
        rc = abx_template_inspect(c, pos[1], &text, &err);
        return show_text(ctx, rc, err, text);
    }
    if (strcmp(op, "rm") == 0 && npos == 2) {
        if ((rc = abx_template_remove(c, pos[1], force, &err)) < 0)
            return cli_fail_error(ctx, err, rc);
        if (ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "name", pos[1], "removed", 1));
        else
            printf("removed %s\n", pos[1]);
        return 0;
    }
    return cli_fail(ctx, ABX_EUSAGE,
                    "usage: abx template build NAME [-f DOCKERFILE] [CONTEXT] | import NAME SOURCE | "
                    "list | inspect NAME | rm NAME [--force] | prune");
}

int cmd_template(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0, nargs = 0;
    bool force = false, no_cache = false;
    const char *file = NULL, *builtin = NULL, *network = NULL, *args[129] = {NULL};
    const cli_flag flags[] = {{"--force", CLI_BOOL, &force, 0, 0, NULL, 0, NULL},
                              {"--no-cache", CLI_BOOL, &no_cache, 0, 0, NULL, 0, NULL},
                              {"-f", CLI_STRING, &file, 0, 0, NULL, 0, NULL},
                              {"--file", CLI_STRING, &file, 0, 0, NULL, 0, NULL},
                              {"--builtin", CLI_STRING, &builtin, 0, 0, NULL, 0, NULL},
                              {"--network", CLI_STRING, &network, 0, 0, NULL, 0, NULL},
                              {"--build-arg", CLI_MULTI, args, 0, 0, &nargs, 128, NULL}};
    int rc = cli_parse(ctx, "template", cmd_template_help, argc, argv, flags, sizeof flags / sizeof flags[0],
                       pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    const char *op = npos ? pos[0] : "";
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    rc = template_verb(ctx, c, op, pos, npos, force, no_cache, file, builtin, args, nargs, network);
    abx_client_free(c);
    return rc;
}
