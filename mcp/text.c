/* text.c: bytes from a sandbox (command output, file contents) are anything;
 * JSON strings must be UTF-8. Owns the replacement of invalid sequences,
 * output bounds with an explicit marker, and base64 (OpenSSL's codec). */
#include "text.h"
#include "b64.h"
#include "utf8.h"
#include "error_internal.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Builds the string head + marker + tail (each part may be empty). */
static json_t *text_parts(const char *head, size_t head_len, const char *marker, const char *tail,
                          size_t tail_len)
{
    size_t mlen = strlen(marker);
    char *out = malloc(mlen + (head_len + tail_len) * 3 + 1);
    if (!out)
        return json_string("");
    size_t o = 0;
    abx__utf8_copy(out, &o, head, head_len);
    memcpy(out + o, marker, mlen);
    o += mlen;
    abx__utf8_copy(out, &o, tail, tail_len);
    json_t *s = json_stringn(out, o);
    free(out);
    return s ? s : json_string("");
}

json_t *mcp_text(const char *data, size_t len, size_t max, int *truncated)
{
    char marker[128] = "";
    if (truncated)
        *truncated = 0;
    if (len > max) {
        snprintf(marker, sizeof marker, "[abx: output truncated: showing the last %zu of %zu bytes]\n", max,
                 len);
        data += len - max;
        len = max;
        if (truncated)
            *truncated = 1;
        /* do not start inside a multi-byte character */
        while (len > 0 && ((unsigned char)*data & 0xC0) == 0x80) {
            data++;
            len--;
        }
    }
    return text_parts("", 0, marker, data, len);
}

/* ---- the model-sized view of an output ---------------------------------- */

size_t mcp_output_limit_parse(const char *text)
{
    char *end = NULL;
    unsigned long long v = text && *text ? strtoull(text, &end, 10) : 0;
    if (!text || !*text || *end || v < MCP_OUTPUT_LIMIT_MIN || v > MCP_OUTPUT_LIMIT_MAX)
        return 0;
    return (size_t)v;
}

/* The output limit from the environment, then config.toml; a value out of
 * range is an error (said at start, not silently replaced). */
int mcp_output_limit_get(size_t *limit, abx_error **err)
{
    *limit = MCP_OUTPUT_LIMIT_DEFAULT;
    const char *env = getenv("ABX_MCP_OUTPUT_LIMIT");
    const char *from = "ABX_MCP_OUTPUT_LIMIT";
    char *configured = NULL;
    if (!env || !*env) {
        if (abx_config_get("mcp.output_limit", &configured, NULL) == 0)
            env = configured;
        from = "config.toml [mcp] output_limit";
    }
    int rc = 0;
    if (env && *env) {
        size_t v = mcp_output_limit_parse(env);
        if (v)
            *limit = v;
        else
            rc = abx__error_set(err, ABX_ECONFIG, "%s: must be a number of bytes from %u to %u", from,
                                MCP_OUTPUT_LIMIT_MIN, MCP_OUTPUT_LIMIT_MAX);
    }
    abx_free(configured);
    return rc;
}

/* data holds a stream's first cut bytes and its last len - cut (all of it
 * when total == len). Picks the first `head` and last `tail` bytes of the
 * stream that data still has. */
static void pick_ends(size_t len, size_t cut, unsigned long long total, size_t head, size_t tail,
                      size_t *head_n, size_t *tail_from)
{
    size_t head_avail = total > len ? cut : len;
    *head_n = head < head_avail ? head : head_avail;
    size_t from = len > tail ? len - tail : 0;
    size_t floor = total > len ? cut : *head_n;
    *tail_from = from > floor ? from : floor;
}

json_t *mcp_output_text(const char *data, size_t len, size_t cut, unsigned long long total,
                        const mcp_output_view *view, int *truncated)
{
    if (!data)
        data = "";
    if (cut > len)
        cut = len;
    if (total < len)
        total = len;
    size_t limit = view && view->limit ? view->limit : MCP_OUTPUT_LIMIT_DEFAULT;
    if (truncated)
        *truncated = total > limit;
    if (total <= limit)
        return text_parts(data, len, "", "", 0);
    size_t head_n, tail_from;
    pick_ends(len, cut, total, limit / 2, limit - limit / 2, &head_n, &tail_from);
    unsigned long long shown = head_n + (len - tail_from);
    char where[320];
    if (view && view->saved_path && *view->saved_path)
        snprintf(where, sizeof where,
                 "the whole output is in %s inside the sandbox: read it with read_file (offset, length) or "
                 "run_command (grep, sed -n)",
                 view->saved_path);
    else
        snprintf(where, sizeof where, "%s",
                 view && view->how_to_read_all ? view->how_to_read_all
                                               : "to read it all, run the command again with its output "
                                                 "redirected to a file and read that file in parts");
    char marker[512];
    snprintf(
        marker, sizeof marker,
        "\n[abx: output truncated: %llu bytes left out here; showing the first %zu and the last %zu of %llu "
        "bytes; %s]\n",
        total - shown, head_n, len - tail_from, total, where);
    /* neither part starts or ends inside a multi-byte character */
    size_t head_len = head_n, start = head_n;
    while (start > 0 && head_n - start < 4 && ((unsigned char)data[start - 1] & 0xC0) == 0x80)
        start--;
    if (start > 0 && ((unsigned char)data[start - 1] & 0xC0) == 0xC0 &&
        abx__utf8_seq((const unsigned char *)data + start - 1, head_n - start + 1) == 0)
        head_len = start - 1; /* the head ends inside a character: drop its start */
    const char *tail = data + tail_from;
    size_t tail_len = len - tail_from;
    while (tail_len > 0 && ((unsigned char)*tail & 0xC0) == 0x80) {
        tail++;
        tail_len--;
    }
    return text_parts(data, head_len, marker, tail, tail_len);
}

/* ---- the id of a message too long to parse --------------------------- */

static size_t skip_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return i;
}

/* Index just past the string starting at p[i] == '"', or n if it does not end. */
static size_t skip_string(const char *p, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            return i + 1;
    }
    return n;
}

/* An id value (integer or plain string) in p[from, to), or NULL. */
static json_t *id_value(const char *p, size_t from, size_t to)
{
    json_t *v = to > from && to - from <= 256 ? json_loadb(p + from, to - from, JSON_DECODE_ANY, NULL) : NULL;
    if (v && (json_is_integer(v) || json_is_string(v)))
        return v;
    json_decref(v);
    return NULL;
}

/* Forward: members of the top-level object until one is "id" or a value
 * runs past the head. */
static json_t *id_from_head(const char *p, size_t n)
{
    size_t i = skip_ws(p, 0, n);
    if (i >= n || p[i++] != '{')
        return NULL;
    for (;;) {
        i = skip_ws(p, i, n);
        if (i >= n || p[i] != '"')
            return NULL;
        size_t k = i, kend = skip_string(p, i, n);
        bool is_id = kend - k == 4 && memcmp(p + k, "\"id\"", 4) == 0;
        i = skip_ws(p, kend, n);
        if (i >= n || p[i++] != ':')
            return NULL;
        i = skip_ws(p, i, n);
        size_t v = i;
        int depth = 0;
        while (i < n) {
            char ch = p[i];
            if (ch == '"') {
                i = skip_string(p, i, n);
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if (ch == '}' || ch == ']')
                depth--;
            if (depth < 0 || (depth == 0 && ch == ','))
                break;
            i++;
        }
        if (i >= n)
            return NULL; /* the value runs past what we kept */
        if (is_id)
            return id_value(p, v, i);
        if (p[i] != ',')
            return NULL;
        i++;
    }
}

/* Backward: the top-level object's last member, if it is "id". */
static json_t *id_from_tail(const char *p, size_t n)
{
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    if (n == 0 || p[--n] != '}')
        return NULL;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    size_t end = n, start;
    if (n > 0 && p[n - 1] == '"') { /* a string value: back to its opening quote */
        size_t q = n - 1;
        for (;;) {
            while (q > 0 && p[q - 1] != '"')
                q--;
            if (q == 0)
                return NULL;
            size_t slashes = 0;
            while (q - 1 > slashes && p[q - 2 - slashes] == '\\')
                slashes++;
            q--;
            if (slashes % 2 == 0)
                break;
        }
        start = q;
    } else {
        start = n;
        while (start > 0 && strchr("0123456789-+.eE", p[start - 1]))
            start--;
    }
    size_t i = start;
    while (i > 0 && (p[i - 1] == ' ' || p[i - 1] == '\t'))
        i--;
    if (i == 0 || p[--i] != ':')
        return NULL;
    while (i > 0 && (p[i - 1] == ' ' || p[i - 1] == '\t'))
        i--;
    if (i < 4 || memcmp(p + i - 4, "\"id\"", 4) != 0)
        return NULL;
    i -= 4;
    while (i > 0 && (p[i - 1] == ' ' || p[i - 1] == '\t'))
        i--;
    if (i == 0 || (p[i - 1] != ',' && p[i - 1] != '{'))
        return NULL;
    return id_value(p, start, end);
}

json_t *mcp_rpc_id_of_long(const char *head, size_t head_len, const char *tail, size_t tail_len)
{
    json_t *id = head ? id_from_head(head, head_len) : NULL;
    return id ? id : tail ? id_from_tail(tail, tail_len) : NULL;
}

char *mcp_b64(const void *data, size_t len)
{
    return abx__b64_encode(data, len);
}

long mcp_unb64(const char *text, char **out)
{
    return abx__b64_decode(text, out);
}

bool mcp_looks_binary(const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    size_t n = len < 8192 ? len : 8192, invalid = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] == 0)
            return true;
        size_t seq = abx__utf8_seq(p + i, n - i);
        if (seq == 0 && n - i < 4 && n < len) /* cut by the window, not by the file */
            break;
        if (seq == 0)
            invalid++;
        i += seq ? seq : 1;
    }
    return invalid > 8 && invalid * 4 > n;
}
