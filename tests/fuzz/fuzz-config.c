/* fuzz-config.c: fuzzes the TOML-subset and .env parsers, the TOML
 * formatter (what a parse accepts must format and parse back the same),
 * the typed TOML reader and the provider manifest checks on top of it.
 *
 * Built with tests/fuzz/driver.c (a deterministic mutation loop over the
 * seeds in tests/fuzz/corpus, what `meson test` runs under ASan+UBSan), or
 * with clang's libFuzzer by hand (tests/fuzz/README.md).
 */
#include "config.h"
#include "manifest.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    abx_kvs *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    int line = 0;
    if (a && b && abx__toml_parse(text, a, &line) == 0) {
        char *again = abx__toml_format(a);
        if (again) {
            if (abx__toml_parse(again, b, &line) != 0 || b->n != a->n)
                abort();
            for (size_t i = 0; i < a->n; i++) {
                const char *v = abx__kvs_get(b, a->items[i].key);
                if (!v || strcmp(v, a->items[i].value) != 0)
                    abort();
            }
            free(again);
        }
    }
    if (a)
        abx__env_parse(text, a, &line);
    json_t *doc = NULL;
    if (abx__toml_parse_json(text, &doc, &line) == 0 && !json_is_object(doc))
        abort();
    json_decref(doc);
    abx_manifest m;
    abx_error *err = NULL;
    if (abx__manifest_parse(text, &m, &err) == 0) {
        if (!abx__provider_id_valid(m.id) || (strcmp(m.kind, "exec") == 0 && json_array_size(m.command) == 0))
            abort();
        abx__manifest_clear(&m);
    }
    abx_error_free(err);
    free(a);
    free(b);
    free(text);
    return 0;
}
