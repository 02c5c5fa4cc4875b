/* b64.h: base64 for libabx, its shim and its MCP server: one place,
 * OpenSSL's codec underneath. */
#ifndef ABX_B64_H
#define ABX_B64_H

#include <stddef.h>

/* Encodes len bytes; returns a NUL-terminated string (caller frees) or NULL. */
char *abx__b64_encode(const void *data, size_t len);
/* Decodes standard, padded base64 (no whitespace); returns the byte count
 * and a NUL-terminated buffer in *out (caller frees), or -1 (and *out NULL)
 * on invalid input. */
long abx__b64_decode(const char *text, char **out);

/* The same, but invalid input decodes to nothing: never NULL unless out of
 * memory; *len is the byte count. For data from our own peers. */
char *abx__b64_decode_or_empty(const char *text, size_t *len);

#endif
