/* mcp_deploy.c: `abx mcp deploy`: a function-compute custom-runtime bundle
 * for `abx mcp serve` (spec/mcp-server-design.zh.md §7, adapted to a C
 * server as ../shared/DESIGN.md "Departures" says). Writes files only; no
 * cloud API is called. Never prints a token or key unmasked. */
#include "cli.h"
#include "mcp_deploy.h"

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

static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    int rc = write(fd, text, n) == (ssize_t)n ? 0 : -1;
    if (fchmod(fd, mode) < 0)
        rc = -1;
    if (close(fd) < 0)
        rc = -1;
    return rc;
}

static int copy_binary(const char *src, const char *dir, const char *name)
{
    char dst[PATH_MAX];
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    char buf[65536];
    ssize_t n = 0;
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    if (n < 0)
        rc = -1;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) < 0)
        rc = -1;
    return rc;
}

static void mask(const char *secret, char *out, size_t len)
{
    snprintf(out, len, "%.4s%s", secret, strlen(secret) > 4 ? "****************" : "****");
}

/* The YAML scalar for s, double-quoted with escapes. */
static void yaml_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int mcp_deploy_write(cli_ctx *ctx, const mcp_deploy_opts *o)
{
    char region[128] = "cn-hangzhou";
    const char *region_src = "default";
    if (o->region && *o->region) {
        snprintf(region, sizeof region, "%s", o->region);
        region_src = "--region";
    } else if (getenv("ALIBABA_CLOUD_REGION_ID") && *getenv("ALIBABA_CLOUD_REGION_ID")) {
        snprintf(region, sizeof region, "%s", getenv("ALIBABA_CLOUD_REGION_ID"));
        region_src = "ALIBABA_CLOUD_REGION_ID";
    } else {
        char *v = NULL;
        if (abx_config_get("region", &v, NULL) == 0 && v) {
            snprintf(region, sizeof region, "%s", v);
            region_src = "config region";
        }
        abx_free(v);
    }
    /* the token: --auth-token-file, --generate-token, then the environment */
    char token[256] = "";
    bool generated = false;
    if (o->token_file) {
        FILE *f = fopen(o->token_file, "r");
        if (!f || !fgets(token, sizeof token, f)) {
            if (f)
                fclose(f);
            return cli_fail(ctx, ABX_ECONFIG, "--auth-token-file: cannot read a token from it");
        }
        fclose(f);
        token[strcspn(token, "\r\n")] = '\0';
    } else if (o->generate_token) {
        unsigned char raw[32];
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
            return cli_fail(ctx, ABX_ESYS, "no randomness for a token");
        for (int i = 0; i < 32; i++)
            snprintf(token + 2 * i, 3, "%02x", raw[i]);
        generated = true;
    } else if (getenv("ABX_MCP_AUTH_TOKEN")) {
        snprintf(token, sizeof token, "%s", getenv("ABX_MCP_AUTH_TOKEN"));
    }
    if (strlen(token) < 16)
        return cli_fail(
            ctx, ABX_EAUTH,
            "a deployed server needs a token of 16+ characters: --generate-token, --auth-token-file "
            "or ABX_MCP_AUTH_TOKEN");
    const char *api_key = o->api_key ? o->api_key : getenv("ABX_SANDBOX_API_KEY");
    const char *dir = o->output_dir ? o->output_dir : "./mcp-artifact";
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return cli_fail(ctx, ABX_EIO, "--output-dir: cannot create it: %s", strerror(errno));
    char self[PATH_MAX], shim[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return cli_fail(ctx, ABX_ESYS, "cannot find this abx executable");
    self[n] = '\0';
    snprintf(shim, sizeof shim, "%.*s/abx-shim", (int)(strrchr(self, '/') - self), self);
    if (copy_binary(self, dir, "abx") < 0 ||
        (access(shim, X_OK) == 0 && copy_binary(shim, dir, "abx-shim") < 0))
        return cli_fail(ctx, ABX_EIO, "copying the abx binaries into the bundle failed");
    char bootstrap[1024];
    snprintf(bootstrap, sizeof bootstrap,
             "#!/bin/sh\n"
             "# bootstrap: function compute's custom runtime starts this; it serves MCP\n"
             "# over Streamable HTTP on the platform's port. The token and keys come\n"
             "# from the function's environment variables (config.yaml).\n"
             "here=$(cd \"$(dirname \"$0\")\" && pwd)\n"
             "export ABX_SHIM=\"$here/abx-shim\"\n"
             "exec \"$here/abx\" mcp serve --listen \"0.0.0.0:${FC_SERVER_PORT:-9000}\" \\\n"
             "    --template \"${ABX_DEFAULT_TEMPLATE:-%s}\" --allow-host \"${ABX_MCP_ALLOWED_HOST:-*}\"\n",
             o->template_name ? o->template_name : "base");
    if (write_file(dir, "bootstrap", bootstrap, 0755) < 0)
        return cli_fail(ctx, ABX_EIO, "writing bootstrap failed");
    char yaml_path[PATH_MAX + 16];
    snprintf(yaml_path, sizeof yaml_path, "%s/config.yaml", dir);
    int fd = open(yaml_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return cli_fail(ctx, ABX_EIO, "writing config.yaml failed");
    fprintf(f, "# config.yaml: a deployment manifest for abx's MCP server on function compute\n"
               "# (not an API payload). Holds the token: keep it private (mode 0600).\n");
    fprintf(f, "function_name: ");
    yaml_str(f, o->name ? o->name : "agent-sandbox-mcp");
    fprintf(f, "\nregion: ");
    yaml_str(f, region);
    fprintf(f, "\nruntime: custom.debian12\nhandler: bootstrap\nmemory: %u\ntimeout: %u\n", o->memory_mb,
            o->timeout_s);
    fprintf(f, "environment_variables:\n  ABX_MCP_AUTH_TOKEN: ");
    yaml_str(f, token);
    fprintf(f, "\n  ABX_DEFAULT_TEMPLATE: ");
    yaml_str(f, o->template_name ? o->template_name : "base");
    if (api_key && *api_key) {
        fprintf(f, "\n  ABX_SANDBOX_API_KEY: ");
        yaml_str(f, api_key);
    }
    if (o->custom_domain) {
        fprintf(f, "\n  ABX_MCP_ALLOWED_HOST: ");
        yaml_str(f, o->custom_domain);
    }
    fprintf(f,
            "\nhttp_trigger:\n  methods: [POST, GET, DELETE]\n  path: /mcp\n  enable_session_affinity: %s\n",
            o->no_affinity ? "false" : "true");
    if (o->custom_domain) {
        fprintf(f, "custom_domain: ");
        yaml_str(f, o->custom_domain);
        fputc('\n', f);
    }
    if (fclose(f) != 0)
        return cli_fail(ctx, ABX_EIO, "writing config.yaml failed");
    if (generated && write_file(dir, "auth-token", token, 0600) < 0)
        return cli_fail(ctx, ABX_EIO, "writing the token file failed");
    char masked[64];
    mask(token, masked, sizeof masked);
    explicit_bzero(token, sizeof token);
    const char *url_host = o->custom_domain ? o->custom_domain : "<FC_HTTP_TRIGGER_URL>";
    if (ctx->json) {
        cli_print_json(json_pack("{s:s, s:s, s:s, s:s, s:[s, s, s], s:b, s:s}", "output_dir", dir, "region",
                                 region, "region_source", region_src, "token", masked, "files", "bootstrap",
                                 "abx", "config.yaml", "token_generated", generated, "url",
                                 o->custom_domain ? o->custom_domain : ""));
        return 0;
    }
    printf("Bundle written to %s (bootstrap, abx, abx-shim, config.yaml%s)\n", dir,
           generated ? ", auth-token" : "");
    printf("Region: %s (from %s). Token: %s%s\n\n", region, region_src, masked,
           generated ? " (full value in auth-token, mode 0600)" : "");
    printf("Manual deployment steps:\n"
           "  1. cd %s && zip -r ../agent-sandbox-mcp.zip .\n"
           "  2. In the function compute console (or its SDK), create function '%s' in %s:\n"
           "     runtime custom.debian12, handler bootstrap, memory %u MB, timeout %u s,\n"
           "     the environment variables of config.yaml, code: the zip from step 1.\n"
           "  3. Add an HTTP trigger for POST, GET and DELETE on /mcp%s.\n"
           "  4. %s\n\n",
           dir, o->name ? o->name : "agent-sandbox-mcp", region, o->memory_mb, o->timeout_s,
           o->no_affinity ? "" : ", with Mcp-Session-Id session affinity enabled",
           o->custom_domain ? "Bind the custom domain to the trigger." : "Note the trigger's URL.");
    printf("IDE configuration (replace the masked token with the real one):\n"
           "{\n  \"mcpServers\": {\n    \"agent-sandbox-remote\": {\n"
           "      \"url\": \"https://%s/mcp\",\n      \"headers\": {\"Authorization\": \"Bearer %s\"}\n    "
           "}\n  }\n}\n",
           url_host, masked);
    return 0;
}
