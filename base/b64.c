/* b64.c: base64 (see b64.h). OpenSSL does the coding; this file owns the
 * strict validation and the padding arithmetic OpenSSL leaves to callers. */
#include "b64.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

char *abx__b64_encode(const void *data, size_t len)
{
    char *out = malloc(4 * ((len + 2) / 3) + 1);
    if (out)
        EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

long abx__b64_decode(const char *text, char **out)
{
    size_t n = text ? strlen(text) : 0;
    *out = NULL;
    if (n % 4)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                  c == '/' || (c == '=' && i + 2 >= n);
        if (!ok)
            return -1;
    }
    *out = malloc(n / 4 * 3 + 1);
    if (!*out)
        return -1;
    int len = n ? EVP_DecodeBlock((unsigned char *)*out, (const unsigned char *)text, (int)n) : 0;
    if (len < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    if (n >= 1 && text[n - 1] == '=')
        len--;
    if (n >= 2 && text[n - 2] == '=')
        len--;
    (*out)[len] = '\0';
    return len;
}

char *abx__b64_decode_or_empty(const char *text, size_t *len)
{
    char *out = NULL;
    long n = abx__b64_decode(text ? text : "", &out);
    if (n < 0) {
        out = calloc(1, 1);
        n = 0;
    }
    *len = (size_t)n;
    return out;
}
