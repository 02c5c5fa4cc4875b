/* cmd_mcp.c: `abx mcp start | serve | deploy | install | status`.
 * start serves the fifteen tools on STDIO (mcp/transport_stdio.c), serve on
 * HTTP; install (src/mcp_install.c) merges an agent-sandbox entry into an
 * MCP client's configuration; status reports the server and every client. */
#include "cli.h"
#include "server.h"
#include "transport_stdio.h"
#include "transport_http.h"
#include "mcp_deploy.h"
#include "mcp_install.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define SERVER_NAME MCP_SERVER_NAME

const char cmd_mcp_help[] =
    "Usage: abx mcp start [--template T] [--provider P]\n"
    "       abx mcp serve [--listen ADDR:PORT] [--auth-token-file F | --no-auth] [--session-ttl S]\n"
    "                     [--allow-host NAME]... [--max-sessions N] [--template T] [--provider P]\n"
    "       abx mcp deploy [--name N] [--region R] [--template T] [--memory MB] [--timeout S]\n"
    "                      [--auth-token-file F | --generate-token] [--sandbox-api-key K]\n"
    "                      [--no-session-affinity] [--custom-domain D] [--output-dir DIR]\n"
    "       abx mcp install --target cursor|claude|vscode|claude-code|codex|gemini|windsurf|copilot\n"
    "                       [--scope user|project] [--json]\n"
    "       abx mcp status [--json]\n"
    "\n"
    "start    serve the MCP tools on stdin/stdout (newline-delimited JSON-RPC;\n"
    "         logs on stderr). Sandboxes use --template, else\n"
    "         $ABX_DEFAULT_TEMPLATE, else code-interpreter-v1. Every sandbox the\n"
    "         session creates is destroyed when stdin closes (after the calls\n"
    "         still running are answered) or on SIGTERM/SIGINT (which cancels them).\n"
    "serve    serve the same tools over Streamable HTTP at /mcp for many clients\n"
    "         (default 127.0.0.1:8080; port 0 picks a free one). Each client's\n"
    "         session (Mcp-Session-Id) has its own sandboxes, destroyed on DELETE,\n"
    "         after --session-ttl idle seconds (default 1800), or on SIGTERM.\n"
    "         Bearer tokens: $ABX_MCP_AUTH_TOKEN (comma-separated) and/or the\n"
    "         lines of --auth-token-file; with neither, the token in\n"
    "         $ABX_HOME/mcp-token (generated, mode 0600, its path printed, never\n"
    "         its value). A token is a tenant: its sessions see and use only the\n"
    "         sandboxes its sessions created; any other id answers as unknown.\n"
    "         --no-auth serves loopback only, without a token (with a warning).\n"
    "         Host and Origin must be loopback, the listen host, or an\n"
    "         --allow-host name.\n"
    "deploy   write a function-compute custom-runtime bundle to --output-dir\n"
    "         (default ./mcp-artifact): bootstrap (runs abx mcp serve on the\n"
    "         platform's port), the abx binaries, config.yaml; then print the\n"
    "         manual steps and an IDE config template with the token masked.\n"
    "         --name agent-sandbox-mcp, --region (> ALIBABA_CLOUD_REGION_ID >\n"
    "         config 'region' > cn-hangzhou), --template base, --memory 512,\n"
    "         --timeout 600; token from --auth-token-file, --generate-token\n"
    "         (written to DIR/auth-token, mode 0600, printed masked) or\n"
    "         $ABX_MCP_AUTH_TOKEN; session affinity on unless --no-session-affinity.\n"
    "install  merge an 'agent-sandbox' entry (this abx's absolute path, args\n"
    "         mcp start) into an MCP client's configuration, in its own format\n"
    "         and place (docs/mcp-clients.md). --scope user (the user's own file)\n"
    "         or project (a file in the current directory) where the client has\n"
    "         both; without it, the scope marked *:\n"
    "           cursor       *~/.cursor/mcp.json | .cursor/mcp.json (mcpServers)\n"
    "           claude       *claude_desktop_config.json (mcpServers)\n"
    "           vscode        Code/User/mcp.json | *.vscode/mcp.json (servers, stdio)\n"
    "           claude-code   ~/.claude.json | *.mcp.json (mcpServers, stdio)\n"
    "           codex        *~/.codex/config.toml ($CODEX_HOME) | .codex/config.toml\n"
    "                         ([mcp_servers.agent-sandbox], TOML)\n"
    "           gemini       *~/.gemini/settings.json | .gemini/settings.json\n"
    "           windsurf     *~/.codeium/windsurf/mcp_config.json\n"
    "           copilot      *~/.copilot/mcp-config.json ($COPILOT_HOME) |\n"
    "                         .github/mcp.json (type local, tools *)\n"
    "         The API key (ABX_SANDBOX_API_KEY, or config core.api_key) is\n"
    "         written into user files only, and only when configured; never\n"
    "         into a project's file, never printed. Other entries, comments of\n"
    "         a TOML file and the file's mode are kept; the file is replaced\n"
    "         atomically. A file that is not strict JSON (JSONC) or valid TOML\n"
    "         is left byte for byte untouched: E8021 names the line, and the\n"
    "         entry to add by hand is printed.\n"
    "status   server name, transport, tools, whether an API key is configured,\n"
    "         and the install state of every client above, in each scope.\n";

static int mcp_status(cli_ctx *ctx)
{
    json_t *tools = mcp_tools_list(), *names = json_array();
    size_t i;
    json_t *tool;
    json_array_foreach(tools, i, tool) json_array_append(names, json_object_get(tool, "name"));
    char *key = getenv("ABX_SANDBOX_API_KEY");
    char *configured = NULL;
    bool have_key = (key && *key) ||
                    (abx_config_get("core.api_key", &configured, NULL) == 0 && configured && *configured);
    if (configured)
        explicit_bzero(configured, strlen(configured));
    abx_free(configured);
    json_t *installs = mcp_install_state();
    char problems[1024];
    bool blocked = mcp_host_problems(problems, sizeof problems);
    json_t *doc =
        json_pack("{s:s, s:s, s:I, s:o, s:b, s:o, s:b}", "server", SERVER_NAME, "transport", "stdio",
                  "tool_count", (json_int_t)json_array_size(names), "tools", names, "api_key_configured",
                  have_key, "installations", installs, "sandboxes_work", !blocked);
    if (blocked)
        json_object_set_new(doc, "host_problems", json_string(problems));
    char sock[108];
    bool through = abx_service_socket(sock, sizeof sock), up = abx_service_reachable(sock);
    json_object_set_new(doc, "service",
                        json_pack("{s:s, s:b, s:b}", "socket", sock, "used", through, "reachable", up));
    json_decref(tools);
    if (ctx->json) {
        cli_print_json(doc);
        return 0;
    }
    printf("%-20s %s\n%-20s %s\n%-20s %lld\n", "server", SERVER_NAME, "transport", "stdio", "tools",
           (long long)json_integer_value(json_object_get(doc, "tool_count")));
    json_array_foreach(json_object_get(doc, "tools"), i, tool) printf("  %s\n", json_string_value(tool));
    printf("%-20s %s\n", "api key configured",
           json_is_true(json_object_get(doc, "api_key_configured")) ? "yes" : "no");
    printf("%-20s %s%s%s\n", "sandboxes here", blocked ? "no, as this user: " : "yes",
           blocked ? problems : "", blocked ? " (abx doctor)" : "");
    printf("%-20s %s %s%s\n", "abx service", sock, up ? "reachable" : "not reachable",
           through          ? " (this user's sandboxes go through it)"
           : geteuid() == 0 ? " (root goes direct)"
                            : "");
    printf("\n%-12s %-10s %-8s %s\n", "CLIENT", "INSTALLED", "SCOPE", "CONFIG");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(doc, "installations"), k, v)
        printf("%-12s %-10s %-8s %s\n", k, json_is_true(json_object_get(v, "installed")) ? "yes" : "no",
               json_string_value(json_object_get(v, "scope")), json_string_value(json_object_get(v, "path")));
    json_decref(doc);
    return 0;
}

static int mcp_start(cli_ctx *ctx, const char *template_name)
{
    if (!template_name)
        template_name = getenv("ABX_DEFAULT_TEMPLATE");
    if (!template_name || !*template_name)
        template_name = "code-interpreter-v1";
    mcp_server_config cfg = {.template_name = template_name, .provider = ctx->provider};
    mcp_server *srv = NULL;
    abx_error *err = NULL;
    int rc = mcp_server_new(&cfg, &srv, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    fprintf(stderr, "abx mcp: serving %s on stdio (template %s)\n", SERVER_NAME, template_name);
    char problems[1024];
    if (mcp_host_problems(problems, sizeof problems)) /* said once, at start */
        fprintf(stderr,
                "abx mcp: warning: sandboxes cannot be made here as uid %u: %s; tool calls will fail "
                "until this is fixed (abx doctor)\n",
                (unsigned)geteuid(), problems);
    int status = mcp_stdio_serve(srv);
    mcp_server_free(srv);
    return status;
}

#define MAX_TOKENS 64

/* Tokens from $ABX_MCP_AUTH_TOKEN (comma-separated) and the file's lines. */
static int load_tokens(cli_ctx *ctx, const char *file, char **tokens, size_t *n)
{
    *n = 0;
    const char *env = getenv("ABX_MCP_AUTH_TOKEN");
    char *copy = env ? strdup(env) : NULL;
    for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t && *n < MAX_TOKENS;
         t = strtok_r(NULL, ",", &save))
        if (*t)
            tokens[(*n)++] = strdup(t);
    free(copy);
    if (!file)
        return 0;
    FILE *f = fopen(file, "r");
    if (!f)
        return cli_fail(ctx, ABX_ECONFIG, "--auth-token-file: cannot read it: %s", strerror(errno));
    char line[1024];
    while (fgets(line, sizeof line, f) && *n < MAX_TOKENS) {
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        if (len >= 16)
            tokens[(*n)++] = strdup(line);
        else if (len > 0) {
            fclose(f);
            return cli_fail(ctx, ABX_ECONFIG, "--auth-token-file: tokens must be at least 16 characters");
        }
    }
    fclose(f);
    return 0;
}

/* With no token configured, abx mcp serve still authenticates: it uses the
 * token in $ABX_HOME/mcp-token, creating it (256 bits from the CSPRNG, mode
 * 0600) the first time. The user is told where the token is, never what. */
static int default_token(cli_ctx *ctx, char **tokens, size_t *n)
{
    char home[512], path[600];
    if (abx_home(home, sizeof home, NULL) < 0)
        return cli_fail(ctx, ABX_ECONFIG, "no home for the generated token: set ABX_HOME or a token");
    mkdir(home, 0700);
    snprintf(path, sizeof path, "%s/mcp-token", home);
    bool created = false;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        unsigned char raw[32];
        char hex[65];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            return cli_fail(ctx, ABX_ESYS, "no randomness for a token");
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        explicit_bzero(raw, sizeof raw);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        bool ok = fd >= 0 && write(fd, hex, 64) == 64 && write(fd, "\n", 1) == 1;
        explicit_bzero(hex, sizeof hex);
        if (fd >= 0)
            close(fd);
        if (!ok)
            return cli_fail(ctx, ABX_ECONFIG, "cannot write the generated token file %s: %s", path,
                            strerror(errno));
        created = true;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return cli_fail(ctx, ABX_ECONFIG, "cannot read the token file %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        return cli_fail(ctx, ABX_ECONFIG, "%s must be a regular file of yours with mode 0600", path);
    }
    char line[256] = "";
    ssize_t got = read(fd, line, sizeof line - 1);
    close(fd);
    line[got > 0 ? got : 0] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (strlen(line) < 16) {
        explicit_bzero(line, sizeof line);
        return cli_fail(ctx, ABX_ECONFIG, "%s: the token must be at least 16 characters", path);
    }
    tokens[(*n)++] = strdup(line);
    explicit_bzero(line, sizeof line);
    fprintf(stderr,
            "abx mcp: no token configured: %s the Bearer token in %s (mode 0600); clients send "
            "'Authorization: Bearer <its content>' (--no-auth serves loopback without one)\n",
            created ? "generated" : "using", path);
    return 0;
}

static int mcp_serve(cli_ctx *ctx, const char *listen, const char *token_file, unsigned ttl,
                     unsigned max_sessions, const char *const *allow, const char *template_name, bool no_auth)
{
    if (!template_name)
        template_name = getenv("ABX_DEFAULT_TEMPLATE");
    if (!template_name || !*template_name)
        template_name = "code-interpreter-v1";
    char *tokens[MAX_TOKENS + 1] = {NULL};
    size_t ntokens = 0;
    int rc = load_tokens(ctx, token_file, tokens, &ntokens);
    if (rc == 0 && no_auth && ntokens > 0)
        rc = cli_fail(ctx, ABX_EUSAGE,
                      "--no-auth: a token is configured too (ABX_MCP_AUTH_TOKEN or --auth-token-file)");
    else if (rc == 0 && no_auth)
        fprintf(stderr,
                "abx mcp: WARNING: --no-auth: every local user and program that can reach the port can "
                "use this server's sandboxes\n");
    else if (rc == 0 && ntokens == 0)
        rc = default_token(ctx, tokens, &ntokens);
    if (rc != 0) {
        for (size_t i = 0; i < ntokens; i++) {
            explicit_bzero(tokens[i], strlen(tokens[i]));
            free(tokens[i]);
        }
        return rc;
    }
    mcp_http_config cfg = {.listen = listen,
                           .tokens = (const char *const *)tokens,
                           .session_ttl_s = ttl,
                           .max_sessions = max_sessions,
                           .allowed_hosts = allow,
                           .server = {.template_name = template_name, .provider = ctx->provider}};
    abx_error *err = NULL;
    rc = mcp_http_serve(&cfg, &err);
    for (size_t i = 0; i < ntokens; i++) {
        explicit_bzero(tokens[i], strlen(tokens[i]));
        free(tokens[i]);
    }
    return rc < 0 ? cli_fail_error(ctx, err, rc) : 0;
}

int cmd_mcp(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL], *template_name = NULL, *target = NULL, *listen = NULL,
                                         *token_file = NULL, *scope = NULL;
    const char *allow[33] = {NULL};
    size_t npos = 0, nallow = 0;
    unsigned ttl = 1800, max_sessions = 256;
    mcp_deploy_opts d = {.memory_mb = 512, .timeout_s = 600};
    bool affinity = false, no_auth = false;
    const cli_flag flags[] = {
        {"--no-auth", CLI_BOOL, &no_auth, 0, 0, NULL, 0, NULL},
        {"--name", CLI_STRING, &d.name, 0, 0, NULL, 0, NULL},
        {"--region", CLI_STRING, &d.region, 0, 0, NULL, 0, NULL},
        {"--memory", CLI_UINT, &d.memory_mb, 128, 32768, NULL, 0, NULL},
        {"--timeout", CLI_UINT, &d.timeout_s, ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, NULL, 0, NULL},
        {"--generate-token", CLI_BOOL, &d.generate_token, 0, 0, NULL, 0, NULL},
        {"--sandbox-api-key", CLI_STRING, &d.api_key, 0, 0, NULL, 0, NULL},
        {"--no-session-affinity", CLI_BOOL, &d.no_affinity, 0, 0, NULL, 0, NULL},
        {"--enable-session-affinity", CLI_BOOL, &affinity, 0, 0, NULL, 0, NULL},
        {"--custom-domain", CLI_STRING, &d.custom_domain, 0, 0, NULL, 0, NULL},
        {"--output-dir", CLI_STRING, &d.output_dir, 0, 0, NULL, 0, NULL},
        {"--template", CLI_STRING, &template_name, 0, 0, NULL, 0, NULL},
        {"--target", CLI_STRING, &target, 0, 0, NULL, 0, NULL},
        {"--scope", CLI_STRING, &scope, 0, 0, NULL, 0, NULL},
        {"--listen", CLI_STRING, &listen, 0, 0, NULL, 0, NULL},
        {"--auth-token-file", CLI_STRING, &token_file, 0, 0, NULL, 0, NULL},
        {"--session-ttl", CLI_UINT, &ttl, 1, 604800, NULL, 0, NULL},
        {"--max-sessions", CLI_UINT, &max_sessions, 1, 100000, NULL, 0, NULL},
        {"--allow-host", CLI_MULTI, allow, 0, 0, &nallow, 32, NULL},
    };
    int rc =
        cli_parse(ctx, "mcp", cmd_mcp_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE,
                        "usage: abx mcp start | serve | deploy | install --target T | status");
    if (strcmp(pos[0], "start") == 0)
        return mcp_start(ctx, template_name);
    if (strcmp(pos[0], "deploy") == 0) {
        d.template_name = template_name;
        d.token_file = token_file;
        if (affinity)
            d.no_affinity = false;
        return mcp_deploy_write(ctx, &d);
    }
    if (strcmp(pos[0], "serve") == 0)
        return mcp_serve(ctx, listen, token_file, ttl, max_sessions, allow, template_name, no_auth);
    if (strcmp(pos[0], "install") == 0)
        return mcp_install(ctx, target, scope);
    if (strcmp(pos[0], "status") == 0)
        return mcp_status(ctx);
    return cli_fail(ctx, ABX_EUSAGE, "unknown 'abx mcp' command (start, serve, deploy, install, status)");
}
