/* cmd_create.c: `abx create`. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_create_help[] =
    "Usage: abx create [--template T] [--timeout S] [--env K=V]... [--metadata K=V]...\n"
    "                  [--cpu N] [--memory MB] [--network none|internet|allowlist]\n"
    "                  [--allow-out X]... [--deny-out X]... [--volume NAME:/PATH[:ro]]...\n"
    "                  [--persistent [--pause-files-only]] [--json]\n"
    "\n"
    "Creates a sandbox that lives until it times out or is killed, across abx\n"
    "invocations, and prints its id (local:<id>).\n"
    "\n"
    "  --template T    template (default base): base, code-interpreter-v1, or one\n"
    "                  imported with abx template import (abx template list)\n"
    "  --timeout S     lifetime in seconds, 1-" ABX_STRINGIFY(
        ABX_TIMEOUT_MAX_S) " (default 300); see 'abx timeout'\n"
                           "  --env K=V       environment of every process in it (repeatable)\n"
                           "  --metadata K=V  labels shown by 'abx info' and 'abx list' (repeatable)\n"
                           "  --cpu N         CPUs, 1-1024 (default 1)\n"
                           "  --memory MB     memory, 16-1048576 (default 512)\n"
                           "  --network M     none: loopback only (the default, or config.toml [network]\n"
                           "                  default); internet: public addresses less --deny-out;\n"
                           "                  allowlist: only what --allow-out names. Needs root.\n"
                           "  --allow-out X   an address, CIDR, domain or *.domain it may reach "
                           "(repeatable;\n"
                           "                  alone it means --network allowlist); a CIDR here also opens\n"
                           "                  private ranges, which are closed otherwise\n"
                           "  --deny-out X    one it may not (repeatable; alone it means --network "
                           "internet);\n"
                           "                  see docs/network.md\n"
                           "  --volume V:/P[:ro] mounts volume V at /P (abx volume; repeatable, at most 8;\n"
                           "                  ro: read-only)\n"
                           "  --persistent    durable: its writable layer on disk (its disk size, half its\n"
                           "                  memory), paused at its timeout, kept paused with its files\n"
                           "                  across a killed supervisor, an upgrade or a restart; resume\n"
                           "                  starts it from them (docs/durable.md); ends only by kill\n"
                           "  --pause-files-only  with --persistent: a pause ends its processes and keeps\n"
                           "                  its files (E2B's autoPauseMemory false): resume cold-boots\n"
                           "  --json          {\"sandbox_id\": ..., ...} instead of the id alone\n";

int cmd_create(cli_ctx *ctx, int argc, char **argv)
{
    const char *envs[129] = {NULL}, *meta[129] = {NULL}, *pos[CLI_MAX_POSITIONAL];
    const char *allow[4097] = {NULL}, *deny[4097] = {NULL}, *volumes[ABX_VOLUME_MOUNTS_MAX + 1] = {NULL};
    size_t nenvs = 0, nmeta = 0, npos = 0, nallow = 0, ndeny = 0, nvolumes = 0;
    abx_create_options o = {0};
    const cli_flag flags[] = {
        {"--template", CLI_STRING, &o.template_id, 0, 0, NULL, 0, NULL},
        {"--timeout", CLI_UINT, &o.timeout_s, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0, NULL},
        {"--env", CLI_MULTI, envs, 0, 0, &nenvs, 128, NULL},
        {"--metadata", CLI_MULTI, meta, 0, 0, &nmeta, 128, NULL},
        {"--cpu", CLI_UINT, &o.cpu_count, 1, 1024, NULL, 0, NULL},
        {"--memory", CLI_UINT, &o.memory_mb, 16, 1048576, NULL, 0, NULL},
        {"--network", CLI_STRING, &o.network, 0, 0, NULL, 0, NULL},
        {"--allow-out", CLI_MULTI, allow, 0, 0, &nallow, 4096, NULL},
        {"--deny-out", CLI_MULTI, deny, 0, 0, &ndeny, 4096, NULL},
        {"--volume", CLI_MULTI, volumes, 0, 0, &nvolumes, ABX_VOLUME_MOUNTS_MAX, NULL},
        {"--persistent", CLI_BOOL, &o.persistent, 0, 0, NULL, 0, NULL},
        {"--pause-files-only", CLI_BOOL, &o.pause_drops_memory, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "create", cmd_create_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos,
                       &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos)
        return cli_fail(ctx, ABX_EUSAGE, "abx create takes no arguments");
    o.envs = envs;
    o.metadata = meta;
    o.allow_out = allow;
    o.deny_out = deny;
    o.volumes = nvolumes ? volumes : NULL;
    if (o.pause_drops_memory && !o.persistent)
        return cli_fail(ctx, ABX_EUSAGE, "--pause-files-only: only with --persistent");
    o.options = ctx->nopts ? ctx->opts : NULL; /* --opt K=V, anywhere on the line */
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    rc = abx_sandbox_create(c, &o, &s, &err);
    if (rc < 0) {
        abx_client_free(c);
        return cli_fail_error(ctx, err, rc);
    }
    if (ctx->json) {
        abx_sandbox_info info;
        if (abx_sandbox_get_info(s, &info, NULL) == 0) {
            cli_print_json(cli_info_json(&info));
            abx_sandbox_info_clear(&info);
        } else {
            cli_print_json(json_pack("{s:s}", "sandbox_id", abx_sandbox_id(s)));
        }
    } else {
        printf("%s\n", abx_sandbox_id(s));
    }
    abx_sandbox_free(s);
    abx_client_free(c);
    return 0;
}
