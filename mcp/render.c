/* render.c: a tool result as text for a model (render.h).
 *
 * Owns how each value of structuredContent is shown:
 *   - a failure is one line "Error CODE (category, status N): message",
 *     then its field and hint;
 *   - a number, boolean, null or one-line string is "key: value", all of
 *     them first, in structuredContent's order;
 *   - an empty string is "key: (empty)", an empty list "key: (none)";
 *   - a string with newlines or over SHORT_MAX bytes is the text itself
 *     between <key> and </key> lines, verbatim (stdout, a file's content);
 *   - a string over ABX_BOUND_RESULT_TEXT_STRING is named, not repeated
 *     (it is in structuredContent), and so is a base64 image already sent
 *     as image content;
 *   - a list of objects is one "- k: v, k: v" line per item (an item with
 *     long strings as nested lines), a nested object indented.
 * The text is bounded by ABX_BOUND_MCP_RESULT like the result around it.
 */
#include "render.h"
#include "bounds.h"
#include "buf.h"

#include <stdio.h>
#include <string.h>

#define SHORT_MAX 160u
#define DEPTH_MAX 4

static void put(abx_buf *b, const char *s)
{
    (void)abx__buf_append_str(b, s); /* past the bound: the text ends short */
}

static void put_indent(abx_buf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        put(b, "  ");
}

/* A value shown on the line of its key. */
static bool is_short(json_t *v)
{
    if (json_is_string(v))
        return json_string_length(v) <= SHORT_MAX &&
               !memchr(json_string_value(v), '\n', json_string_length(v));
    return !json_is_object(v) && !json_is_array(v);
}

/* A top-level value shown on its key's line: short, and not an image's
 * base64 that the image content already carries. */
static bool is_inline(const char *key, json_t *v, bool image_sent)
{
    return is_short(v) && !(image_sent && strcmp(key, "content_base64") == 0);
}

/* A list of scalars one line can hold. */
static bool is_short_list(json_t *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) if (!is_short(x)) return false;
    return json_array_size(v) <= 32;
}

static void put_scalar(abx_buf *b, json_t *v)
{
    char n[48];
    if (json_is_string(v))
        put(b, json_string_length(v) ? json_string_value(v) : "(empty)");
    else if (json_is_integer(v)) {
        snprintf(n, sizeof n, "%lld", (long long)json_integer_value(v));
        put(b, n);
    } else if (json_is_real(v)) {
        snprintf(n, sizeof n, "%g", json_real_value(v));
        put(b, n);
    } else
        put(b, json_is_true(v) ? "true" : json_is_false(v) ? "false" : "null");
}

static void put_value(abx_buf *b, const char *key, json_t *v, int depth, bool image_sent);

/* One list item: its short fields on the "- " line, the rest beneath. */
static void put_item(abx_buf *b, json_t *item, int depth, bool image_sent)
{
    put_indent(b, depth);
    put(b, "- ");
    if (!json_is_object(item)) {
        if (is_short(item))
            put_scalar(b, item);
        put(b, "\n");
        if (!is_short(item))
            put_value(b, "item", item, depth + 1, image_sent);
        return;
    }
    const char *k;
    json_t *x;
    bool first = true;
    json_object_foreach(item, k, x)
    {
        if (!is_short(x))
            continue;
        put(b, first ? "" : ", ");
        put(b, k);
        put(b, ": ");
        put_scalar(b, x);
        first = false;
    }
    put(b, "\n");
    json_object_foreach(item, k, x) if (!is_short(x)) put_value(b, k, x, depth + 1, image_sent);
}

static void put_long_string(abx_buf *b, const char *key, json_t *v, int depth, bool image_sent)
{
    char note[128];
    size_t n = json_string_length(v);
    if (image_sent && strcmp(key, "content_base64") == 0) {
        snprintf(note, sizeof note, ": (%zu bytes of base64, sent once as the image content)\n", n);
    } else if (n > ABX_BOUND_RESULT_TEXT_STRING) {
        snprintf(note, sizeof note, ": (%zu bytes, in structuredContent only)\n", n);
    } else {
        put_indent(b, depth);
        put(b, "<");
        put(b, key);
        put(b, ">\n");
        put(b, json_string_value(v));
        if (n == 0 || json_string_value(v)[n - 1] != '\n')
            put(b, "\n");
        put_indent(b, depth);
        put(b, "</");
        put(b, key);
        put(b, ">\n");
        return;
    }
    put_indent(b, depth);
    put(b, key);
    put(b, note);
}

/* key and a value that is not short. */
static void put_value(abx_buf *b, const char *key, json_t *v, int depth, bool image_sent)
{
    if (json_is_string(v)) {
        put_long_string(b, key, v, depth, image_sent);
        return;
    }
    put_indent(b, depth);
    put(b, key);
    if (depth >= DEPTH_MAX) {
        char *json = json_dumps(v, JSON_COMPACT);
        put(b, ": ");
        put(b, json ? json : "(nested too deep)");
        put(b, "\n");
        free(json);
        return;
    }
    if (json_is_array(v) && json_array_size(v) == 0) {
        put(b, ": (none)\n");
        return;
    }
    if (json_is_array(v) && is_short_list(v)) {
        put(b, ": ");
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            put(b, i ? ", " : "");
            put_scalar(b, x);
        }
        put(b, "\n");
        return;
    }
    put(b, ":\n");
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) put_item(b, x, depth + 1, image_sent);
        return;
    }
    const char *k;
    json_object_foreach(v, k, x)
    {
        if (is_short(x)) {
            put_indent(b, depth + 1);
            put(b, k);
            put(b, ": ");
            put_scalar(b, x);
            put(b, "\n");
        }
    }
    json_object_foreach(v, k, x) if (!is_short(x)) put_value(b, k, x, depth + 1, image_sent);
}

/* "Error E8002 (not_found, status 404): message", its field and its hint. */
static void put_error(abx_buf *b, json_t *e)
{
    const char *field = json_string_value(json_object_get(e, "field"));
    put(b, "Error ");
    put(b, json_string_value(json_object_get(e, "code")));
    put(b, " (");
    put(b, json_string_value(json_object_get(e, "category")));
    char status[32];
    snprintf(status, sizeof status,
             ", status %lld): ", (long long)json_integer_value(json_object_get(e, "http_status")));
    put(b, status);
    put(b, json_string_value(json_object_get(e, "message")));
    put(b, "\n");
    if (field) {
        put(b, "field: ");
        put(b, field);
        put(b, "\n");
    }
    put(b, "hint: ");
    put(b, json_string_value(json_object_get(e, "hint")));
    put(b, "\n");
}

char *mcp_render_text(json_t *structured, bool image_sent)
{
    abx_buf b;
    abx__buf_init(&b, ABX_BOUND_MCP_RESULT);
    json_t *error = json_object_get(structured, "error");
    if (json_is_object(error))
        put_error(&b, error);
    const char *k;
    json_t *x;
    json_object_foreach(structured, k, x)
    {
        if (x == error || !is_inline(k, x, image_sent))
            continue;
        put(&b, k);
        put(&b, ": ");
        put_scalar(&b, x);
        put(&b, "\n");
    }
    json_object_foreach(structured, k, x) if (x != error && !is_inline(k, x, image_sent))
        put_value(&b, k, x, 0, image_sent);
    if (b.len == 0)
        put(&b, "(no fields)\n");
    return abx__buf_take(&b, NULL);
}
