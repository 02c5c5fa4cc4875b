/* text.c: bytes from a sandbox (command output, file contents) are anything;
 * JSON strings must be UTF-8. Owns the replacement of invalid sequences,
 * output bounds with an explicit marker, and base64 (OpenSSL's codec). */
#include "text.h"
#include "b64.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at p (max n bytes), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    unsigned cp = len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t i = 1; i < len; i++)
        cp = (cp << 6) | (p[i] & 0x3Fu);
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0; /* overlong, out of range, or a surrogate */
    return len;
}

/* Appends data as UTF-8 to out at *o (room: 3 bytes per input byte). */
static void utf8_copy(char *out, size_t *o, const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq(p + i, len - i);
        if (n == 0 || (n == 1 && p[i] == 0)) {
            memcpy(out + *o, "\xEF\xBF\xBD", 3); /* U+FFFD (NUL too: C strings end there) */
            *o += 3;
            i++;
            continue;
        }
        memcpy(out + *o, p + i, n);
        *o += n;
        i += n;
    }
}

/* Builds the string head + marker + tail (each part may be empty). */
static json_t *text_parts(const char *head, size_t head_len, const char *marker, const char *tail, size_t tail_len)
{
    size_t mlen = strlen(marker);
    char *out = malloc(mlen + (head_len + tail_len) * 3 + 1);
    if (!out)
        return json_string("");
    size_t o = 0;
    utf8_copy(out, &o, head, head_len);
    memcpy(out + o, marker, mlen);
    o += mlen;
    utf8_copy(out, &o, tail, tail_len);
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
        snprintf(marker, sizeof marker, "[abx: output truncated: showing the last %zu of %zu bytes]\n", max, len);
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

json_t *mcp_output_text(const char *data, size_t len, size_t cut, unsigned long long total, int *truncated)
{
    if (!data)
        data = "";
    if (cut > len)
        cut = len;
    if (truncated)
        *truncated = total > len;
    if (total <= len)
        return text_parts(data, len, "", "", 0);
    char marker[192];
    snprintf(marker, sizeof marker,
             "\n[abx: output truncated: %llu bytes dropped here; showing the first %zu and the last %zu of %llu "
             "bytes]\n",
             total - len, cut, len - cut, total);
    /* neither part starts or ends inside a multi-byte character */
    size_t head_len = cut, start = cut;
    while (start > 0 && cut - start < 4 && ((unsigned char)data[start - 1] & 0xC0) == 0x80)
        start--;
    if (start > 0 && ((unsigned char)data[start - 1] & 0xC0) == 0xC0 &&
        utf8_seq((const unsigned char *)data + start - 1, cut - start + 1) == 0)
        head_len = start - 1; /* the head ends inside a character: drop its start */
    const char *tail = data + cut;
    size_t tail_len = len - cut;
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
