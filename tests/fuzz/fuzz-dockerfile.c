/* fuzz-dockerfile.c: the Dockerfile parser and the variable expansion on
 * any bytes, with their properties checked:
 *   - a parse either fails with a reason and nothing left, or gives at most
 *     ABX_DOCKERFILE_MAX_STEPS steps, the first a FROM (or ARGs before it),
 *     each with its arguments, every string NUL-terminated;
 *   - expanding any step's argument either fails or stays within 64 KiB.
 */
#include "dockerfile.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    abx_dockerfile df;
    char why[256];
    why[0] = '\0';
    if (abx__dockerfile_parse((const char *)data, size, &df, why, sizeof why) < 0) {
        if (!why[0] || df.n != 0 || df.steps)
            abort();
        return 0;
    }
    if (df.n == 0 || df.n > ABX_DOCKERFILE_MAX_STEPS)
        abort();
    size_t i = 0;
    while (i < df.n && df.steps[i].kind == DF_ARG)
        i++;
    if (i == df.n || df.steps[i].kind != DF_FROM)
        abort();
    const char *pairs[] = {"A=1", "B=two words", NULL};
    df_vars vars = {.pairs = pairs};
    for (i = 0; i < df.n; i++) {
        const df_step *s = &df.steps[i];
        if (!s->text || s->nargs > ABX_DOCKERFILE_MAX_ARGS)
            abort();
        for (size_t k = 0; k < s->nargs; k++) {
            char *out = abx__dockerfile_expand(s->args[k], &vars);
            if (out && strlen(out) >= 64 * 1024)
                abort();
            free(out);
        }
    }
    abx__dockerfile_free(&df);
    return 0;
}
