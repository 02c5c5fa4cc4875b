/* resources.c: sandbox files as MCP resources. Owns the sandbox://ID/PATH
 * URI (built for the resource_link blocks results carry, parsed for
 * resources/read), and resources/read itself under the session's tenant
 * rule: a sandbox the session may not reach, a file that is not there and
 * a URI that is not ours all answer the same "Resource not found".
 *
 * A URI is "sandbox://" + the id percent-encoded + the absolute path with
 * every byte outside RFC 3986's unreserved set and "/" percent-encoded.
 * What a client sends is hostile: parts are bounded by their buffers, an
 * escape must be two hex digits and never %00, and the path must be
 * absolute (the sandbox's own path resolution confines it).
 */
#include "resources.h"
#include "bounds.h"
#include "parse.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest file resources/read returns whole (its base64 must fit in a
 * result); a larger one is read in parts with read_file. */
#define RESOURCE_READ_MAX (ABX_BOUND_MCP_RESULT / 2)

char *mcp_resource_uri(const char *id, const char *path)
{
    if (!id || !*id || !path || path[0] != '/')
        return NULL;
    size_t room = strlen(MCP_RESOURCE_SCHEME) + 3 * (strlen(id) + strlen(path)) + 1;
    char *uri = malloc(room);
    if (!uri)
        return NULL;
    size_t o = strlen(MCP_RESOURCE_SCHEME);
    memcpy(uri, MCP_RESOURCE_SCHEME, o);
    size_t n = abx__percent_encode(uri + o, room - o, id, false);
    size_t m = n == (size_t)-1 ? n : abx__percent_encode(uri + o + n, room - o - n, path, true);
    if (m == (size_t)-1) {
        free(uri);
        return NULL;
    }
    return uri;
}

/* Decodes [s, end) into out (len bytes with its NUL). False on a bad
 * escape, a %00, or when it does not fit. */
static bool decode(const char *s, const char *end, char *out, size_t len)
{
    size_t o = 0;
    while (s < end) {
        int c = (unsigned char)*s;
        if (c == '%') {
            int hi = end - s > 2 ? abx__hex_digit(s[1]) : -1, lo = end - s > 2 ? abx__hex_digit(s[2]) : -1;
            if (hi < 0 || lo < 0)
                return false;
            c = hi * 16 + lo;
            s += 3;
        } else {
            s++;
        }
        if (c == 0 || o + 1 >= len)
            return false;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return true;
}

bool mcp_resource_parse(const char *uri, char *id, size_t id_len, char *path, size_t path_len)
{
    size_t scheme = strlen(MCP_RESOURCE_SCHEME);
    if (!uri || strncmp(uri, MCP_RESOURCE_SCHEME, scheme) != 0)
        return false;
    const char *host = uri + scheme, *slash = strchr(host, '/');
    if (!slash || slash == host || strpbrk(uri, "?#"))
        return false;
    return decode(host, slash, id, id_len) && decode(slash, slash + strlen(slash), path, path_len);
}

json_t *mcp_resource_link(const char *id, const char *path, const char *name, const char *description,
                          const char *mime, long long size)
{
    char *uri = mcp_resource_uri(id, path);
    if (!uri)
        return NULL;
    json_t *link = json_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri", uri, "name", name);
    free(uri);
    if (link && description)
        json_object_set_new(link, "description", json_string(description));
    if (link && mime)
        json_object_set_new(link, "mimeType", json_string(mime));
    if (link && size >= 0)
        json_object_set_new(link, "size", json_integer(size));
    return link;
}

static json_t *rpc_error(mcp_call *c, int code, const char *message)
{
    c->rpc_error = json_pack("{s:i, s:s}", "code", code, "message", message);
    return NULL;
}

/* -32002 until 2025-11-25; -32602 (invalid params) from 2026-07-28; the
 * URI asked for (the client's own, bounded by the server) in data. */
static json_t *not_found(mcp_call *c, const char *uri)
{
    c->rpc_error = json_pack("{s:i, s:s, s:{s:s}}", "code", c->modern ? -32602 : -32002, "message",
                             "Resource not found", "data", "uri", uri ? uri : "");
    return NULL;
}

/* The contents entry for DATA: text when it is text, else base64. */
static json_t *contents_of(const char *uri, const char *data, size_t len)
{
    if (!mcp_looks_binary(data, len))
        return json_pack("{s:s, s:s, s:o}", "uri", uri, "mimeType", "text/plain", "text",
                         mcp_text(data, len, len, NULL));
    char *b64 = mcp_b64(data, len);
    if (!b64)
        return NULL;
    json_t *c = json_pack("{s:s, s:s, s:s}", "uri", uri, "mimeType", "application/octet-stream", "blob", b64);
    free(b64);
    return c;
}

json_t *mcp_resources_read(mcp_call *c, const char *uri)
{
    char id[128], path[4096];
    if (!mcp_resource_parse(uri, id, sizeof id, path, sizeof path))
        return not_found(c, uri);
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = mcp_session_use(c->session, id, false, false, &b, NULL, NULL, &err);
    if (rc < 0) {
        abx_error_free(err);
        return not_found(c, uri);
    }
    char *data = NULL;
    size_t len = 0;
    unsigned long long size = 0;
    rc = abx_sandbox_read_file_range(b->handle, path, NULL, 0, RESOURCE_READ_MAX, &data, &len, &size, &err);
    mcp_session_release(c->session, b);
    int code = rc < 0 ? (err ? (int)abx_error_code(err) : -rc) : 0;
    abx_error_free(err);
    if (rc < 0) {
        abx_free(data);
        if (code == ABX_ENOTFOUND || code == ABX_ENOENT || code == ABX_EINVAL)
            return not_found(c, uri);
        char message[200];
        snprintf(message, sizeof message, "Internal error: E%d %s", code, abx_strerror(code));
        return rpc_error(c, -32603, message);
    }
    if (size > RESOURCE_READ_MAX) {
        abx_free(data);
        char message[300];
        snprintf(message, sizeof message,
                 "the file is %llu bytes, over the %u bytes one resources/read returns: read it in parts "
                 "with the read_file tool (offset, length)",
                 size, (unsigned)RESOURCE_READ_MAX);
        return rpc_error(c, -32602, message);
    }
    json_t *contents = contents_of(uri, data, len);
    abx_free(data);
    if (!contents)
        return rpc_error(c, -32603, "Internal error: out of memory");
    return json_pack("{s:[o]}", "contents", contents);
}

json_t *mcp_resource_templates(void)
{
    return json_pack("[{s:s, s:s, s:s}]", "uriTemplate", MCP_RESOURCE_SCHEME "{sandbox_id}{+path}", "name",
                     "sandbox-file", "description",
                     "A file in a sandbox this session can reach, by its absolute path (resource_link blocks "
                     "of run_command and run_code name whole outputs and produced files this way).");
}
