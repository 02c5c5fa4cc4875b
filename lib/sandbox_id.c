/* sandbox_id.c: random sandbox ids.
 *
 * Randomness comes from getrandom(2), the kernel CSPRNG that OpenSSL's
 * RAND_bytes itself seeds from; using it directly keeps libcrypto's
 * initialisation (about a millisecond) off the sandbox start path.
 * Rejection sampling keeps the 36 symbols uniform.
 */
#include "sandbox_id.h"
#include "abx/abx.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

static const char id_alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";

int abx__sandbox_id_new(char out[ABX_SANDBOX_ID_LEN + 1])
{
    size_t filled = 1;
    out[0] = 'i';
    while (filled < ABX_SANDBOX_ID_LEN) {
        unsigned char rnd[32];
        ssize_t n = getrandom(rnd, sizeof rnd, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -ABX_ESYS;
        }
        for (ssize_t i = 0; i < n && filled < ABX_SANDBOX_ID_LEN; i++)
            if (rnd[i] < 252) /* 252 = 7 * 36: keeps the draw uniform */
                out[filled++] = id_alphabet[rnd[i] % 36];
    }
    out[ABX_SANDBOX_ID_LEN] = '\0';
    return 0;
}

bool abx__sandbox_id_valid(const char *s)
{
    if (!s || strlen(s) != ABX_SANDBOX_ID_LEN || s[0] != 'i')
        return false;
    for (size_t i = 1; i < ABX_SANDBOX_ID_LEN; i++)
        if (!strchr(id_alphabet, s[i]) || s[i] == '\0')
            return false;
    return true;
}
