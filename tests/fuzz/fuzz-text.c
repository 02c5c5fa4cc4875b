/* fuzz-text.c: what turns sandbox bytes into JSON text and back, with its
 * properties checked on every input:
 *   - mcp_text / mcp_output_text always give a JSON string (valid UTF-8),
 *     non-empty for non-empty input, bounded by 3 bytes per input byte;
 *   - base64 round-trips: decode(encode(x)) == x; and whatever decodes,
 *     re-encodes to something that decodes the same;
 *   - the JSON depth guard never under-counts what jansson parses;
 *   - the capped buffer and the kernel reply scanner give the same result
 *     however the input is split into chunks.
 */
#include "b64.h"
#include "bounds.h"
#include "capbuf.h"
#include "parse.h"
#include "reply_scan.h"
#include "text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *p, size_t n)
{
    json_t *a = mcp_text(p, n, n / 2 + 1, NULL);
    if (!json_is_string(a) || (n > 0 && json_string_length(a) == 0) || json_string_length(a) > 3 * n + 128)
        abort();
    json_decref(a);
    size_t cut = n ? (unsigned char)p[0] % (n + 1) : 0;
    /* the model-sized view never shows more than its limit (3 bytes per
     * byte at worst: U+FFFD) plus the marker */
    mcp_output_view view = {.limit = n ? (size_t)(unsigned char)p[n / 2] * 8 + 2 : 0,
                            .saved_path = n & 1 ? "/tmp/x" : NULL};
    json_t *b =
        mcp_output_text(p, n, cut, (unsigned long long)n + (n ? (unsigned char)p[n - 1] : 0), &view, NULL);
    size_t limit = view.limit ? view.limit : MCP_OUTPUT_LIMIT_DEFAULT;
    if (!json_is_string(b) || (n > 0 && json_string_length(b) == 0) ||
        json_string_length(b) > 3 * limit + 600)
        abort();
    json_decref(b);
}

static void check_b64(const char *p, size_t n)
{
    char *enc = abx__b64_encode(p, n), *dec = NULL;
    long m = enc ? abx__b64_decode(enc, &dec) : -1;
    if (!enc || m != (long)n || (n && memcmp(dec, p, n) != 0))
        abort();
    free(enc);
    free(dec);
    char *text = malloc(n + 1);
    memcpy(text, p, n);
    text[n] = '\0';
    char *once = NULL;
    long k = abx__b64_decode(text, &once);
    if (k >= 0) {
        char *again = abx__b64_encode(once, (size_t)k), *twice = NULL;
        if (!again || abx__b64_decode(again, &twice) != k || (k && memcmp(once, twice, (size_t)k) != 0))
            abort();
        free(again);
        free(twice);
    }
    free(once);
    free(text);
}

static unsigned json_depth(json_t *j)
{
    unsigned deepest = 0;
    if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v) if (json_depth(v) > deepest) deepest = json_depth(v);
        return deepest + 1;
    }
    if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) if (json_depth(v) > deepest) deepest = json_depth(v);
        return deepest + 1;
    }
    return 0;
}

static void check_depth(const char *p, size_t n)
{
    if (!abx__json_depth_ok(p, n, ABX_BOUND_JSON_DEPTH))
        return; /* never handed to jansson */
    json_t *j = json_loadb(p, n, JSON_DECODE_ANY, NULL);
    if (j && !abx__json_depth_ok(p, n, json_depth(j)))
        abort(); /* the guard counted less than jansson built */
    json_decref(j);
}

/* Feeds p to a scanner whole, and in chunks cut where the input says. */
static void check_scan(const char *p, size_t n)
{
    abx_reply_scan whole, parts;
    abx__reply_scan_init(&whole, 64, 64);
    abx__reply_scan_init(&parts, 64, 64);
    size_t used = 0;
    json_t *a = abx__reply_scan_feed(&whole, p, n, 7, &used);
    size_t a_used = used, off = 0;
    json_t *b = NULL;
    for (size_t i = 0; off < n && !b; i++) {
        size_t chunk = 1 + (n ? (unsigned char)p[i % n] % 17 : 0);
        if (chunk > n - off)
            chunk = n - off;
        b = abx__reply_scan_feed(&parts, p + off, chunk, 7, &used);
        off += used;
    }
    if ((a == NULL) != (b == NULL) || (a && (off != a_used || !json_equal(a, b))))
        abort();
    if (whole.other.total != parts.other.total)
        abort();
    size_t la, lb, ca, cb;
    char *ka = abx__capbuf_take(&whole.other, &la, &ca), *kb = abx__capbuf_take(&parts.other, &lb, &cb);
    if (la != lb || ca != cb || memcmp(ka, kb, la) != 0 || la > 128)
        abort();
    free(ka);
    free(kb);
    json_decref(a);
    json_decref(b);
    abx__reply_scan_free(&whole);
    abx__reply_scan_free(&parts);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    check_text(p, size);
    check_b64(p, size);
    check_depth(p, size);
    check_scan(p, size);
    return 0;
}
