/* utf8.h: valid UTF-8 from arbitrary bytes (base/utf8.c). */
#ifndef ABX_UTF8_H
#define ABX_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when it
 * is invalid (overlong, a surrogate, out of range, cut short). */
size_t abx__utf8_seq(const unsigned char *p, size_t n);
/* Appends data to out at *o with every invalid sequence and NUL replaced
 * by U+FFFD; out needs room for 3 bytes per input byte. */
void abx__utf8_copy(char *out, size_t *o, const char *data, size_t len);
/* The same into a new NUL-terminated string (the caller frees it), its
 * length in *out_len; NULL without memory. */
char *abx__utf8_clean(const char *data, size_t len, size_t *out_len);

#endif
