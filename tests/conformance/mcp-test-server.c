/* mcp-test-server.c: the MCP conformance suite's fixed test tools, served
 * over Streamable HTTP by abx's own mcp/ library (server.c and
 * transport_http.c). Only for tests: these tools are never in abx's tool
 * list. Both protocol eras (2025-11-25 sessions, 2026-07-28 stateless).
 * Usage: mcp-test-server [--listen HOST:PORT] */
#include "server.h"
#include "tools.h"
#include "transport_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A 1x1 red PNG and a tiny silent WAV, base64. */
static const char red_png[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
static const char silent_wav[] = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

static const char *const names[] = {
    "test_simple_text",        "test_image_content",          "test_audio_content",
    "test_embedded_resource",  "test_multiple_content_types", "test_tool_with_logging",
    "test_error_handling",     "test_tool_with_progress",     "test_logging_tool",
    "test_missing_capability", "test_streaming_elicitation",
};

static json_t *list(void)
{
    json_t *tools = json_array();
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        json_array_append_new(tools, json_pack("{s:s, s:s, s:{s:s, s:{}}}", "name", names[i], "description",
                                               "A conformance-suite test tool.", "inputSchema", "type",
                                               "object", "properties"));
    return tools;
}

static bool exists(const char *name)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static json_t *text(const char *t)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", t);
}

static json_t *image(void)
{
    return json_pack("{s:s, s:s, s:s}", "type", "image", "data", red_png, "mimeType", "image/png");
}

static json_t *resource(void)
{
    return json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri",
                     "test://embedded-resource", "mimeType", "text/plain", "text",
                     "This is an embedded resource content.");
}

static json_t *call(mcp_call *c, const char *name)
{
    json_t *content = json_array();
    if (strcmp(name, "test_simple_text") == 0) {
        json_array_append_new(content, text("This is a simple text response for testing."));
    } else if (strcmp(name, "test_image_content") == 0) {
        json_array_append_new(content, image());
    } else if (strcmp(name, "test_audio_content") == 0) {
        json_array_append_new(content, json_pack("{s:s, s:s, s:s}", "type", "audio", "data", silent_wav,
                                                 "mimeType", "audio/wav"));
    } else if (strcmp(name, "test_embedded_resource") == 0) {
        json_array_append_new(content, resource());
    } else if (strcmp(name, "test_multiple_content_types") == 0) {
        json_array_append_new(content, text("Multiple content types test:"));
        json_array_append_new(content, image());
        json_array_append_new(content, resource());
    } else if (strcmp(name, "test_missing_capability") == 0) {
        /* needs the client's sampling: without it, MissingRequiredClientCapability */
        if (!json_object_get(c->client_capabilities, "sampling")) {
            c->rpc_error = json_pack("{s:i, s:s, s:{s:{s:{}}}}", "code", -32021, "message",
                                     "Missing required client capability: sampling", "data",
                                     "requiredCapabilities", "sampling");
            json_decref(content);
            return NULL;
        }
        json_array_append_new(content, text("The client declared sampling."));
    } else if (strcmp(name, "test_streaming_elicitation") == 0) {
        /* abx asks nothing of a client: the answer is a result, never a request */
        mcp_call_progress(c, 0, 1, "started");
        json_array_append_new(content, text("No elicitation is needed."));
    } else if (strcmp(name, "test_tool_with_logging") == 0 || strcmp(name, "test_logging_tool") == 0) {
        mcp_call_log(c, 1, "Tool execution started");
        nap_ms(50);
        mcp_call_log(c, 1, "Tool processing data");
        nap_ms(50);
        mcp_call_log(c, 1, "Tool execution completed");
        json_array_append_new(content, text("Tool with logging executed successfully"));
    } else if (strcmp(name, "test_error_handling") == 0) {
        json_array_append_new(content, text("This tool intentionally returns an error for testing"));
        return json_pack("{s:o, s:b}", "content", content, "isError", 1);
    } else if (strcmp(name, "test_tool_with_progress") == 0) {
        mcp_call_progress(c, 0, 100, "started");
        nap_ms(50);
        mcp_call_progress(c, 50, 100, "half way");
        nap_ms(50);
        mcp_call_progress(c, 100, 100, "done");
        json_array_append_new(content, text("Tool with progress executed successfully"));
    }
    return json_pack("{s:o}", "content", content);
}

static const mcp_toolset test_tools = {.list = list, .exists = exists, .call = call};

int main(int argc, char **argv)
{
    const char *listen = argc > 2 && strcmp(argv[1], "--listen") == 0 ? argv[2] : "127.0.0.1:3999";
    mcp_http_config cfg = {.listen = listen,
                           .server = {.tools = &test_tools, .name = "abx-conformance-test-server"}};
    abx_error *err = NULL;
    if (mcp_http_serve(&cfg, &err) < 0) {
        fprintf(stderr, "mcp-test-server: %s\n", abx_error_message(err));
        abx_error_free(err);
        return 1;
    }
    return 0;
}
