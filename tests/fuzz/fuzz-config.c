/* fuzz-config.c: fuzzes the TOML-subset and .env parsers and the TOML
 * formatter (what a parse accepts must format and parse back the same).
 *
 * Two builds: with clang's libFuzzer (-fsanitize=fuzzer, see
 * tests/fuzz/README.md), LLVMFuzzerTestOneInput is the target; otherwise
 * main() below runs a deterministic mutation loop over the seeds in
 * tests/fuzz/corpus, which is what `meson test` runs under ASan+UBSan.
 */
#include "config.h"

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
    free(a);
    free(b);
    free(text);
    return 0;
}

#ifndef ABX_LIBFUZZER
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *const tokens[] = {"[", "]", "=", "\"", "'", "\\", "\\u00", "#", "\n", "\r\n", ".", " ",
                                     "true", "-1", "key", "[a.b]", "\\n", "export ", "\x01", "\xff"};

static size_t mutate(char *buf, size_t len, size_t cap)
{
    int ops = 1 + (int)(rng() % 4);
    for (int k = 0; k < ops; k++) {
        size_t pos = len ? rng() % (len + 1) : 0;
        switch (rng() % 3) {
        case 0: /* insert a token */ {
            const char *t = tokens[rng() % (sizeof tokens / sizeof tokens[0])];
            size_t tl = strlen(t);
            if (len + tl < cap) {
                memmove(buf + pos + tl, buf + pos, len - pos);
                memcpy(buf + pos, t, tl);
                len += tl;
            }
            break;
        }
        case 1: /* delete a run */
            if (len) {
                size_t n = 1 + rng() % 8;
                if (pos + n > len)
                    n = len - pos;
                memmove(buf + pos, buf + pos + n, len - pos - n);
                len -= n;
            }
            break;
        default: /* flip a byte */
            if (len)
                buf[rng() % len] = (char)rng();
        }
    }
    return len;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/fuzz/corpus";
    long iterations = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    static char seeds[64][4096];
    size_t seed_len[64], nseeds = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) && nseeds < 64) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        seed_len[nseeds] = fread(seeds[nseeds], 1, sizeof seeds[0] - 1, f);
        fclose(f);
        LLVMFuzzerTestOneInput((const uint8_t *)seeds[nseeds], seed_len[nseeds]);
        nseeds++;
    }
    if (d)
        closedir(d);
    if (nseeds == 0) {
        fprintf(stderr, "fuzz-config: no seeds in %s\n", dir);
        return 1;
    }
    static char buf[8192];
    for (long i = 0; i < iterations; i++) {
        size_t s = rng() % nseeds;
        memcpy(buf, seeds[s], seed_len[s]);
        size_t len = mutate(buf, seed_len[s], sizeof buf);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    }
    printf("fuzz-config: %zu seeds, %ld mutated inputs, no crash\n", nseeds, iterations);
    return 0;
}
#endif
