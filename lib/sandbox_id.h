/* sandbox_id.h: sandbox id generation and checking. */
#ifndef ABX_SANDBOX_ID_H
#define ABX_SANDBOX_ID_H

#include <stdbool.h>
#include <stddef.h>

#define ABX_SANDBOX_ID_LEN 21 /* 'i' + 20 of [a-z0-9] */

/* Writes a fresh random id (E2B style) and a NUL into out[ABX_SANDBOX_ID_LEN+1].
 * Returns 0 or -ABX_ESYS if the kernel's CSPRNG is unavailable. */
int abx__sandbox_id_new(char out[ABX_SANDBOX_ID_LEN + 1]);
/* True if s is exactly an id of that shape. */
bool abx__sandbox_id_valid(const char *s);

#endif
