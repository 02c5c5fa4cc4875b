/* parse.h: pure parsers for user-supplied values (numbers, K=V pairs, ids).
 * No allocation, no I/O: each returns 0 or -ABX_EINVAL. Unit-tested in
 * tests/unit/test-parse.c. */
#ifndef ABX_PARSE_H
#define ABX_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* Parses a decimal unsigned integer in [min, max]. Rejects empty strings,
 * signs, spaces, leading zeros beyond "0", and trailing bytes. */
int abx__parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);

/* The same for any unsigned 64-bit value. */
int abx__parse_u64(const char *s, unsigned long long *out);

/* Checks "KEY=VALUE": KEY matches [A-Za-z_][A-Za-z0-9_]* and is at most 255
 * bytes; VALUE may be empty but contains no NUL (by construction). On success
 * *key_len is the length of KEY. */
int abx__parse_env_pair(const char *s, size_t *key_len);

/* The value of hex digit c (either case), or -1. */
int abx__hex_digit(char c);

/* s percent-encoded into out (len bytes with its NUL): every byte outside
 * RFC 3986's unreserved set (and "/" unless slash_ok) as %XX. Returns the
 * length written, or (size_t)-1 when it does not fit (out is then not a
 * string to use). */
size_t abx__percent_encode(char *out, size_t len, const char *s, bool slash_ok);

/* True if name is a valid environment variable name. */
bool abx__env_name_valid(const char *name, size_t len);

/* True when the arrays and objects in text nest at most max deep (strings
 * skipped; text need not be valid JSON). Linear, no recursion. */
bool abx__json_depth_ok(const char *text, size_t len, unsigned max);

/* Unix seconds t as RFC 3339 in UTC ("2026-12-01T21:33:26Z"; out of at
 * least 21 bytes), and back: "YYYY-MM-DDTHH:MM:SS..." as unix seconds, 0
 * when it is not one. The one pair of them for every layer. */
void abx__rfc3339(long long t, char *out, size_t len);
long long abx__parse_rfc3339(const char *s);

#endif
