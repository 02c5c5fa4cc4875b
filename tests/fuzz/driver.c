/* driver.c: the standalone driver for abx's fuzz targets when they are not
 * built with libFuzzer (-DABX_LIBFUZZER): a deterministic mutation loop
 * (inserted tokens, deleted runs, flipped bytes, spliced seeds) over the
 * seed files in a corpus directory, calling LLVMFuzzerTestOneInput for
 * each input. `meson test --suite fuzz` runs it under ASan+UBSan in CI;
 * the same targets run under libFuzzer by hand (tests/fuzz/README.md).
 *
 * Usage: fuzz-X CORPUS_DIR [ITERATIONS]
 */
#ifndef ABX_LIBFUZZER
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#define FUZZ_MAX_SEEDS 128
#define FUZZ_MAX_INPUT 65536

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static const char *const tokens[] = {
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\\",
    "\\u0000",
    "\\ud800",
    "null",
    "true",
    "-1",
    "1e999",
    "9223372036854775808",
    "\"jsonrpc\":\"2.0\"",
    "\"id\":1",
    "\"method\":\"tools/call\"",
    "\"params\":{",
    "\"arguments\":{",
    "\"sandbox_id\":",
    "\"timeout\":",
    "\n",
    "\r",
    "\x00",
    "\xff",
    "\xc3\xa9",
    "\xe2\x82",
    "\x1e\x1f"
    "abx-result:",
    "====",
    "\"name\":\"run_command\"",
    "[[[[[[[[",
    "}}}}",
    "%00",
    "../",
    /* the config parsers' (TOML subset, .env) */
    "=",
    "'",
    "#",
    "\r\n",
    ".",
    " ",
    "key",
    "[a.b]",
    "\\n",
    "export ",
    "\x01",
};

static size_t mutate(char *buf, size_t len, size_t cap, const char *other, size_t other_len)
{
    int ops = 1 + (int)(rng() % 6);
    for (int k = 0; k < ops; k++) {
        size_t pos = len ? (size_t)(rng() % (len + 1)) : 0;
        switch (rng() % 4) {
        case 0: { /* insert a token */
            const char *t = tokens[rng() % (sizeof tokens / sizeof tokens[0])];
            size_t tl = strlen(t) ? strlen(t) : 1;
            if (len + tl < cap) {
                memmove(buf + pos + tl, buf + pos, len - pos);
                memcpy(buf + pos, t, tl);
                len += tl;
            }
            break;
        }
        case 1: /* delete a run */
            if (len) {
                size_t n = 1 + (size_t)(rng() % 16);
                if (pos + n > len)
                    n = len - pos;
                memmove(buf + pos, buf + pos + n, len - pos - n);
                len -= n;
            }
            break;
        case 2: /* splice in part of another seed */
            if (other_len) {
                size_t from = (size_t)(rng() % other_len), n = 1 + (size_t)(rng() % 64);
                if (from + n > other_len)
                    n = other_len - from;
                if (len + n < cap) {
                    memmove(buf + pos + n, buf + pos, len - pos);
                    memcpy(buf + pos, other + from, n);
                    len += n;
                }
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
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    const char *dir = argc > 1 ? argv[1] : ".";
    long iterations = argc > 2 ? strtol(argv[2], NULL, 10) : 5000;
    static char seeds[FUZZ_MAX_SEEDS][FUZZ_MAX_INPUT];
    static size_t seed_len[FUZZ_MAX_SEEDS];
    size_t nseeds = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) && nseeds < FUZZ_MAX_SEEDS) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        seed_len[nseeds] = fread(seeds[nseeds], 1, FUZZ_MAX_INPUT / 2, f);
        fclose(f);
        LLVMFuzzerTestOneInput((const uint8_t *)seeds[nseeds], seed_len[nseeds]);
        nseeds++;
    }
    if (d)
        closedir(d);
    if (nseeds == 0) {
        fprintf(stderr, "%s: no seeds in %s\n", argv[0], dir);
        return 1;
    }
    static char buf[FUZZ_MAX_INPUT];
    for (long i = 0; i < iterations; i++) {
        size_t s = (size_t)(rng() % nseeds), o = (size_t)(rng() % nseeds);
        memcpy(buf, seeds[s], seed_len[s]);
        size_t len = mutate(buf, seed_len[s], sizeof buf, seeds[o], seed_len[o]);
        LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    }
    printf("%s: %zu seeds, %ld mutated inputs, no crash\n", argv[0], nseeds, iterations);
    return 0;
}
#endif
