/* fuzz-dockerignore.c: .dockerignore parsing and matching on any bytes:
 * the input's first line is the path matched, the rest the patterns. A
 * parse either fails with a reason and nothing made, or gives a list that
 * answers for the path, its parents and a deep variant of it (every call
 * ends; ASan checks the table stays in bounds). */
#include "dockerignore.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nl = memchr(text, '\n', size);
    size_t plen = nl ? (size_t)(nl - text) : size;
    char path[600];
    size_t n = plen < 511 ? plen : 511;
    memcpy(path, text, n);
    path[n] = '\0';
    abx_ignore *ig = NULL;
    char why[256] = "";
    size_t rest = nl ? size - plen - 1 : 0;
    if (abx__ignore_parse(nl ? nl + 1 : text + size, rest, &ig, why, sizeof why) < 0) {
        if (!why[0] || ig)
            abort();
        return 0;
    }
    (void)abx__ignore_excluded(ig, path);
    (void)abx__ignore_has_exceptions(ig);
    char *slash = strrchr(path, '/');
    if (slash) {
        *slash = '\0';
        (void)abx__ignore_excluded(ig, path);
    }
    size_t used = strlen(path);
    snprintf(path + used, sizeof path - used, "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z");
    (void)abx__ignore_excluded(ig, path);
    abx__ignore_free(ig);
    return 0;
}
