/* utf8.c: bytes from a sandbox are anything; JSON strings must be UTF-8.
 * Owns telling valid UTF-8 from the rest and copying bytes with every
 * invalid sequence (and NUL) replaced by U+FFFD. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t abx__utf8_seq(const unsigned char *p, size_t n)
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

void abx__utf8_copy(char *out, size_t *o, const char *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len;) {
        size_t n = abx__utf8_seq(p + i, len - i);
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

char *abx__utf8_clean(const char *data, size_t len, size_t *out_len)
{
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    abx__utf8_copy(out, &o, data, len);
    out[o] = '\0';
    *out_len = o;
    return out;
}
