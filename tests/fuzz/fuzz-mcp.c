/* fuzz-mcp.c: the MCP request dispatcher with abx's fifteen tools and
 * every argument check. Each input is a session: an initialize, then the
 * input's lines as messages. Sandboxes cannot be made here (ABX_SHIM is
 * /bin/false and $ABX_HOME is empty), so a call that passes validation
 * fails fast at its sandbox; everything before that runs for real.
 * Checked on every input: each message the server sends is a JSON object
 * with "jsonrpc": "2.0" and either an id or a method, and every call ends. */
#include "server.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static void on_send(void *ctx, const char *json, size_t len)
{
    (void)ctx;
    json_t *m = json_loadb(json, len, 0, NULL);
    const char *v = json_string_value(json_object_get(m, "jsonrpc"));
    if (!json_is_object(m) || !v || strcmp(v, "2.0") != 0 ||
        (!json_object_get(m, "id") && !json_object_get(m, "method")))
        abort();
    json_decref(m);
}

static void on_done(void *ctx)
{
    (void)ctx;
}

/* The run's ABX_HOME: no sandbox is made in it (ABX_SHIM is /bin/false), and
 * it goes at exit. */
static char home[] = "/tmp/abx-fuzz-mcp-XXXXXX";

static void remove_home(void)
{
    char state[sizeof home + 16];
    snprintf(state, sizeof state, "%s/sandboxes", home); /* made empty by a lookup */
    rmdir(state);
    rmdir(home);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (getenv("ABX_FUZZ_HOME_SET"))
        return 0;
    setenv("ABX_FUZZ_HOME_SET", "1", 1);
    if (!mkdtemp(home))
        abort();
    atexit(remove_home);
    setenv("ABX_HOME", home, 1);
    setenv("ABX_SHIM", "/bin/false", 1);
    setenv("ABX_PROVIDER", "local", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    LLVMFuzzerInitialize(NULL, NULL);
    mcp_server_config cfg = {.template_name = "base"};
    mcp_server *srv = NULL;
    if (mcp_server_new(&cfg, &srv, NULL) < 0)
        abort();
    mcp_sink sink = {on_send, on_done, NULL};
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"0\"}}}";
    mcp_server_handle(srv, init, sizeof init - 1, &sink);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        mcp_server_handle(srv, p, n, &sink);
        p += n + (nl ? 1 : 0);
    }
    for (int waited = 0; mcp_server_calls_in_flight(srv) > 0; waited++) {
        if (waited > 20000)
            abort(); /* a call that never ends */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    mcp_server_shutdown(srv);
    mcp_server_free(srv);
    return 0;
}
