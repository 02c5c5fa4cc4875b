/* parse.c: pure parsers for user-supplied values. See parse.h. */
#include "parse.h"
#include "abx/abx.h"

#include <limits.h>
#include <string.h>
#include <time.h>

int abx__parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
    if (!s || !*s)
        return -ABX_EINVAL;
    if (s[0] == '0' && s[1] != '\0')
        return -ABX_EINVAL;
    unsigned long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -ABX_EINVAL;
        v = v * 10 + (unsigned)(*p - '0');
        if (v > UINT_MAX)
            return -ABX_EINVAL;
    }
    if (v < min || v > max)
        return -ABX_EINVAL;
    *out = (unsigned)v;
    return 0;
}

/* RFC 3986's unreserved bytes, and "/" when slash_ok. */
static bool uri_unreserved(unsigned char c, bool slash_ok)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~' || (slash_ok && c == '/');
}

size_t abx__percent_encode(char *out, size_t len, const char *s, bool slash_ok)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = uri_unreserved(*p, slash_ok);
        if (o + (plain ? 1 : 3) >= len)
            return (size_t)-1;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (len == 0)
        return (size_t)-1;
    out[o] = '\0';
    return o;
}

int abx__hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool abx__env_name_valid(const char *name, size_t len)
{
    if (len == 0 || len > 255)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        bool digit = c >= '0' && c <= '9';
        if (!alpha && !(digit && i > 0))
            return false;
    }
    return true;
}

int abx__parse_env_pair(const char *s, size_t *key_len)
{
    if (!s)
        return -ABX_EINVAL;
    size_t n = 0;
    while (s[n] && s[n] != '=')
        n++;
    if (s[n] != '=' || !abx__env_name_valid(s, n))
        return -ABX_EINVAL;
    *key_len = n;
    return 0;
}

int abx__parse_u64(const char *s, unsigned long long *out)
{
    if (!s || !*s || (s[0] == '0' && s[1] != '\0'))
        return -ABX_EINVAL;
    unsigned long long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -ABX_EINVAL;
        unsigned d = (unsigned)(*p - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return -ABX_EINVAL;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

bool abx__json_depth_ok(const char *text, size_t len, unsigned max)
{
    unsigned depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (in_string) {
            if (ch == '\\')
                i++; /* the escaped character cannot end the string */
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > max)
                return false;
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
    }
    return true;
}

void abx__rfc3339(long long t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (len == 0)
        return;
    out[0] = '\0';
    if (gmtime_r(&tt, &tm))
        strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

long long abx__parse_rfc3339(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
        return 0;
    return (long long)timegm(&tm);
}
