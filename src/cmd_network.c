/* cmd_network.c: `abx network ID`: shows a sandbox's network policy, or
 * replaces it while the sandbox runs. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>

const char cmd_network_help[] =
    "Usage: abx network ID [--mode none|internet|allowlist] [--allow-out X]... [--deny-out X]... [--json]\n"
    "\n"
    "Without flags, shows the sandbox's network: its mode, allow and deny\n"
    "lists, and its address. With flags, replaces the policy (what is not\n"
    "given is cleared, as E2B's updateNetwork does); connections already open\n"
    "stay, the next ones follow the new policy. A sandbox created with\n"
    "--network none gets its network the first time it is given one (root).\n"
    "\n"
    "  --mode M        none: loopback only; internet: public addresses less\n"
    "                  --deny-out; allowlist: only what --allow-out names\n"
    "                  (without --mode: allowlist when --allow-out is given,\n"
    "                  else internet)\n"
    "  --allow-out X   an address, CIDR, domain or *.domain (repeatable)\n"
    "  --deny-out X    the same, refused (repeatable)\n"
    "  --json          the sandbox's details, network included\n"
    "\n"
    "The mechanism and its limits: docs/network.md.\n";

static void print_network(json_t *doc)
{
    json_t *net = json_object_get(doc, "network");
    printf("%s\n", json_string_value(json_object_get(doc, "sandbox_id")));
    printf("mode       %s\n", json_string_value(json_object_get(net, "mode")) ?: "none");
    const char *lists[] = {"allow_out", "deny_out"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        json_t *v;
        printf("%-10s", lists[l]);
        json_array_foreach(json_object_get(net, lists[l]), i, v) printf(" %s", json_string_value(v));
        printf("\n");
    }
    if (json_is_string(json_object_get(net, "address")))
        printf("address    %s (gateway and DNS %s)\n", json_string_value(json_object_get(net, "address")),
               json_string_value(json_object_get(net, "gateway")));
}

int cmd_network(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL], *mode = NULL;
    const char *allow[4097] = {NULL}, *deny[4097] = {NULL};
    size_t npos = 0, nallow = 0, ndeny = 0;
    bool mode_given = false;
    const cli_flag flags[] = {
        {"--mode", CLI_STRING, &mode, 0, 0, NULL, 0, &mode_given},
        {"--allow-out", CLI_MULTI, allow, 0, 0, &nallow, 4096, NULL},
        {"--deny-out", CLI_MULTI, deny, 0, 0, &ndeny, 4096, NULL},
    };
    int rc = cli_parse(ctx, "network", cmd_network_help, argc, argv, flags, 3, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE,
                        "usage: abx network ID [--mode M] [--allow-out X]... [--deny-out X]...");
    int status = 0;
    abx_client *c = cli_client_for(ctx, pos[0], &status);
    if (!c)
        return status;
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    abx_sandbox_info info;
    rc = abx_sandbox_connect(c, pos[0], &s, &err);
    if (rc == 0 && (mode_given || nallow || ndeny))
        rc = abx_sandbox_set_network(s, mode, allow, deny, &err);
    if (rc == 0)
        rc = abx_sandbox_get_info(s, &info, &err);
    abx_sandbox_free(s);
    abx_client_free(c);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = cli_info_json(&info);
    abx_sandbox_info_clear(&info);
    if (!json_object_get(doc, "network"))
        json_object_set_new(doc, "network",
                            json_pack("{s:s, s:[], s:[]}", "mode", "none", "allow_out", "deny_out"));
    if (ctx->json) {
        cli_print_json(doc);
        return 0;
    }
    print_network(doc);
    json_decref(doc);
    return 0;
}
