/* cmd_serve.c: `abx serve`: this machine as an E2B-protocol sandbox host
 * (serve/serve.c). Owns the flags and the API keys: read from
 * --api-key-file (one per line, # comments) and ABX_SERVE_API_KEYS
 * (comma-separated), each "e2b_" + 40 hex characters; never printed. */
#include "cli.h"
#include "serve.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_KEYS 256

const char cmd_serve_help[] =
    "Usage: abx [--provider ID] serve [--listen ADDR:PORT] [--api-key-file F] [--domain D] [--warm N]\n"
    "                                 [--default-timeout S] [--metrics-token-file F] [--console]\n"
    "       abx serve --socket PATH [--warm N]\n"
    "\n"
    "Serve a provider's sandboxes over E2B's protocol: E2B's SDKs (and\n"
    "another machine's abx with --provider e2b) create and drive them\n"
    "through it. The provider is resolved as for every abx command (local\n"
    "by default); --provider fronts another one (an exec plugin, another\n"
    "E2B host). Set E2B_API_URL and E2B_SANDBOX_URL to http://ADDR:PORT and\n"
    "E2B_API_KEY to one of the keys.\n"
    "\n"
    "  --listen ADDR:PORT  where to listen (default 127.0.0.1:3000; port 0: a free one)\n"
    "  --api-key-file F    API keys, one per line ('e2b_' + 40 hex characters);\n"
    "                      also $ABX_SERVE_API_KEYS, comma-separated. A key is a\n"
    "                      tenant: it sees and touches only the sandboxes it created.\n"
    "                      A non-loopback --listen without keys is refused.\n"
    "  --domain D          the sandboxes' domain (default localhost): data-plane\n"
    "                      requests come as PORT-ID.D, or with the E2b-Sandbox-Id\n"
    "                      and E2b-Sandbox-Port headers; answers give D:PORT (the\n"
    "                      listener's port unless 80 or 443), so getHost(p) is a\n"
    "                      URL's authority\n"
    "  --default-timeout S a create that names no timeout lives S seconds\n"
    "                      (default 300, as E2B's cloud; 1-86400)\n"
    "  --metrics-token-file F\n"
    "                      GET /metrics with 'Authorization: Bearer TOKEN' (the file's\n"
    "                      first line, 16-1024 characters) answers every sandbox's\n"
    "                      series and the host's (pools, creates, kills, errors,\n"
    "                      request latencies); with an API key, that key's\n"
    "                      sandboxes' only (docs/metrics.md)\n"
    "  --console           the web console at http://ADDR:PORT/console/: log in with an\n"
    "                      API key (that key's sandboxes) or the metrics token (every\n"
    "                      sandbox and the pools); sessions end after 30 idle minutes\n"
    "                      (ABX_SERVE_CONSOLE_IDLE: other idle seconds) and 12 hours\n"
    "  --socket PATH       the abx service (root only): the same API on a Unix socket\n"
    "                      (or the one systemd passes), each caller the tenant of its\n"
    "                      host uid as the kernel names it, no key: root and the\n"
    "                      members of [service] allow_groups (default the group abx)\n"
    "                      may connect; 'abx service start' runs it detached\n"
    "  --warm N            local provider: sandboxes kept started ahead, in the shape\n"
    "                      of the last create (0-16, default 8): a create takes one\n"
    "                      (about 1 ms) instead of starting one (5-25 ms); nobody's\n"
    "                      until taken (nothing reaches them), they end with abx serve\n"
    "\n"
    "Control plane: POST /sandboxes and /v2/sandboxes, GET /v2/sandboxes,\n"
    "GET|DELETE /sandboxes/ID, POST /sandboxes/ID/timeout|connect|pause|resume,\n"
    "GET /sandboxes/ID/metrics (and abx's /stats), PUT /sandboxes/ID/network, GET /templates,\n"
    "GET /health, GET /metrics (Prometheus). Each key's tenant reaches only its own sandboxes, at most\n"
    "[limits] sandboxes_per_tenant of them (429 past it).\n"
    "Data plane (E2b-Sandbox-Id and E2b-Sandbox-Port, or Host PORT-ID.DOMAIN):\n"
    "49983 envd's API with the sandbox's X-Access-Token, 49999 the code\n"
    "interpreter's (/execute, /contexts, /health), any other port the\n"
    "sandbox's own service. Limits before authentication: ABX_SERVE_HEADER_TIMEOUT\n"
    "(seconds to send a request's headers, default 10), ABX_SERVE_CLIENT_CONNECTIONS\n"
    "(connections per client address, default 256), ABX_SERVE_CONNECTION_TIMEOUT\n"
    "(idle seconds, default 600). Stops on SIGTERM or SIGINT (its sandboxes\n"
    "live on until their timeout).\n";

static bool key_valid(const char *k)
{
    if (strlen(k) != 44 || strncmp(k, "e2b_", 4) != 0)
        return false;
    for (size_t i = 4; i < 44; i++)
        if (!isxdigit((unsigned char)k[i]) || isupper((unsigned char)k[i]))
            return false;
    return true;
}

/* One key (trimmed) into keys; false with the reason printed when it is bad. */
static bool add_key(cli_ctx *ctx, char **keys, size_t *n, char *k, const char *from)
{
    while (isspace((unsigned char)*k))
        k++;
    size_t len = strlen(k);
    while (len && isspace((unsigned char)k[len - 1]))
        k[--len] = '\0';
    if (!*k || *k == '#')
        return true;
    if (!key_valid(k)) {
        cli_fail(ctx, ABX_EINVAL, "%s: an API key is 'e2b_' followed by 40 lowercase hex characters", from);
        return false;
    }
    if (*n + 1 >= MAX_KEYS) {
        cli_fail(ctx, ABX_ELIMIT, "%s: more than %d API keys", from, MAX_KEYS - 1);
        return false;
    }
    keys[(*n)++] = strdup(k);
    return true;
}

static bool read_keys(cli_ctx *ctx, const char *file, char **keys, size_t *n)
{
    const char *env = getenv("ABX_SERVE_API_KEYS");
    if (env) {
        char *copy = strdup(env), *save = NULL;
        bool ok = copy != NULL;
        for (char *k = copy ? strtok_r(copy, ",", &save) : NULL; ok && k; k = strtok_r(NULL, ",", &save))
            ok = add_key(ctx, keys, n, k, "ABX_SERVE_API_KEYS");
        free(copy);
        if (!ok)
            return false;
    }
    if (!file)
        return true;
    FILE *f = fopen(file, "re");
    if (!f) {
        cli_fail(ctx, ABX_EIO, "--api-key-file: cannot read %s", file);
        return false;
    }
    char line[512];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f))
        ok = add_key(ctx, keys, n, line, "--api-key-file");
    fclose(f);
    return ok;
}

/* The metrics token: the first line of file (trimmed), 16-1024 bytes of
 * printable ASCII, into *out (the caller zeroes and frees it). */
static bool read_metrics_token(cli_ctx *ctx, const char *file, char **out)
{
    *out = NULL;
    if (!file)
        return true;
    FILE *f = fopen(file, "re");
    if (!f) {
        cli_fail(ctx, ABX_EIO, "--metrics-token-file: cannot read %s", file);
        return false;
    }
    char line[1100] = "";
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    size_t len = got ? strlen(line) : 0;
    while (len && isspace((unsigned char)line[len - 1]))
        line[--len] = '\0';
    bool ok = len >= 16 && len <= 1024;
    for (size_t i = 0; ok && i < len; i++)
        ok = line[i] > ' ' && line[i] < 127;
    if (ok)
        *out = strdup(line);
    explicit_bzero(line, sizeof line);
    if (!ok)
        cli_fail(ctx, ABX_EINVAL,
                 "--metrics-token-file: the token is the file's first line, 16-1024 printable characters "
                 "without spaces");
    return ok && *out;
}

int cmd_serve(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    const char *listen = "127.0.0.1:3000", *key_file = NULL, *domain = "localhost", *socket_path = NULL,
               *metrics_file = NULL;
    unsigned warm = 8, default_timeout = 300;
    bool console = false;
    const cli_flag flags[] = {
        {"--listen", CLI_STRING, &listen, 0, 0, NULL, 0, NULL},
        {"--api-key-file", CLI_STRING, &key_file, 0, 0, NULL, 0, NULL},
        {"--domain", CLI_STRING, &domain, 0, 0, NULL, 0, NULL},
        {"--warm", CLI_UINT, &warm, 0, 16, NULL, 0, NULL},
        {"--default-timeout", CLI_UINT, &default_timeout, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0,
         NULL},
        {"--socket", CLI_STRING, &socket_path, 0, 0, NULL, 0, NULL},
        {"--metrics-token-file", CLI_STRING, &metrics_file, 0, 0, NULL, 0, NULL},
        {"--console", CLI_BOOL, &console, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "serve", cmd_serve_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos,
                       &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos)
        return cli_fail(ctx, ABX_EUSAGE,
                        "usage: abx serve [--listen ADDR:PORT] [--api-key-file F] [--domain D] [--warm N]");
    if (socket_path && geteuid() != 0)
        return cli_fail(ctx, ABX_EPERM,
                        "--socket: the abx service runs as root (it makes every user's sandboxes)");
    char *keys[MAX_KEYS] = {NULL};
    size_t n = 0;
    char *metrics_token = NULL;
    if (!read_keys(ctx, key_file, keys, &n) || !read_metrics_token(ctx, metrics_file, &metrics_token)) {
        for (size_t i = 0; i < n; i++)
            free(keys[i]);
        return CLI_EXIT_FAILED;
    }
    serve_config cfg = {.listen = listen,
                        .api_keys = (const char *const *)keys,
                        .domain = domain,
                        .warm = warm,
                        .default_timeout_s = default_timeout,
                        .provider = ctx->provider,
                        .socket_path = socket_path,
                        .metrics_token = metrics_token,
                        .console = console};
    abx_error *err = NULL;
    rc = serve_run(&cfg, &err);
    for (size_t i = 0; i < n; i++) {
        explicit_bzero(keys[i], strlen(keys[i]));
        free(keys[i]);
    }
    if (metrics_token)
        explicit_bzero(metrics_token, strlen(metrics_token));
    free(metrics_token);
    return rc < 0 ? cli_fail_error(ctx, err, rc) : 0;
}
