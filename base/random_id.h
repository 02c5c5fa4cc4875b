/* random_id.h: unguessable ids (sessions, tasks) from the kernel CSPRNG. */
#ifndef ABX_RANDOM_ID_H
#define ABX_RANDOM_ID_H

#include <stddef.h>

#define ABX_RANDOM_ID_BYTES 16 /* 128 bits */
#define ABX_RANDOM_ID_LEN (2 * ABX_RANDOM_ID_BYTES)

/* Writes ABX_RANDOM_ID_LEN lowercase hex digits of fresh randomness and a
 * NUL to out (len at least ABX_RANDOM_ID_LEN + 1). 0, or -ABX_ESYS when
 * the kernel gives no randomness (out is then ""). */
int abx__random_id(char *out, size_t len);

#endif
