/* random_id.c: unguessable ids (an MCP session's, a task's) from
 * getrandom(2), the kernel CSPRNG, as hex. The one place such ids are made. */
#include "random_id.h"
#include "abx/abx.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

int abx__random_id(char *out, size_t len)
{
    unsigned char raw[ABX_RANDOM_ID_BYTES];
    if (len < ABX_RANDOM_ID_LEN + 1)
        return -ABX_EINVAL;
    out[0] = '\0';
    ssize_t n;
    do
        n = getrandom(raw, sizeof raw, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof raw)
        return -ABX_ESYS;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}
