/* fuzz-oci.c: OCI image layouts read by lib/local/oci_layout.c from any
 * documents. An input is documents separated by "\n===\n": the first is
 * index.json, the others are blobs; "@N" in a document (N from 1 to 9)
 * becomes the digest of document N (documents are written from the last
 * to the first, so a document names those after it). Properties:
 *   - a read either fails with a reason, or gives an object config and at
 *     most ABX_OCI_LAYERS_MAX layers, each an existing blob whose sha256
 *     is its name;
 *   - the config holds only what abx takes from an image: env names
 *     without '=', an absolute workdir, uid 0 or 1000, arrays of
 *     strings or anything for cmd and entrypoint.
 */
#include "digest.h"
#include "oci_layout.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define PARTS_MAX 10
static char layout[256];
static unsigned long read_whole; /* inputs that gave an image: the mutations reach past the checks */

/* At exit: the count, and the layout directory removed. */
static void report(void)
{
    fprintf(stderr, "fuzz-oci: %lu layouts read whole\n", read_whole);
    char path[512];
    const char *files[] = {"oci-layout", "index.json", "blobs/sha256", "blobs", ""};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", layout, files[i]);
        if (unlink(path) < 0)
            rmdir(path);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(layout, sizeof layout, "/tmp/abx-fuzz-oci-XXXXXX");
    if (!mkdtemp(layout))
        abort();
    char path[512];
    snprintf(path, sizeof path, "%s/blobs", layout);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/blobs/sha256", layout);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/oci-layout", layout);
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs("{\"imageLayoutVersion\":\"1.0.0\"}", f);
    fclose(f);
    atexit(report);
    return 0;
}

/* text with "@N" replaced by the digests known so far (caller frees). */
static char *with_digests(const char *text, size_t len, char hex[PARTS_MAX][ABX_DIGEST_HEX], size_t *out_len)
{
    char *out = malloc(len * 36 + 1);
    size_t n = 0;
    for (size_t i = 0; out && i < len; i++) {
        int k = i + 1 < len && text[i] == '@' ? text[i + 1] - '0' : -1;
        if (k >= 1 && k < PARTS_MAX && hex[k][0]) {
            n += (size_t)sprintf(out + n, "sha256:%s", hex[k]);
            i++;
        } else {
            out[n++] = text[i];
        }
    }
    if (out)
        out[n] = '\0';
    *out_len = n;
    return out;
}

static void write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    if (len && write(fd, data, len) != (ssize_t)len)
        abort();
    close(fd);
}

static void check_config(json_t *c)
{
    if (!json_is_object(c) || !json_is_object(json_object_get(c, "env")))
        abort();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(c, "env"), k, v)
    {
        if (!*k || strchr(k, '=') || !json_is_string(v))
            abort();
    }
    json_t *wd = json_object_get(c, "workdir"), *uid = json_object_get(c, "uid");
    if (wd && (!json_is_string(wd) || json_string_value(wd)[0] != '/'))
        abort();
    if (uid && json_integer_value(uid) != 0 && json_integer_value(uid) != 1000)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *parts[PARTS_MAX];
    size_t lens[PARTS_MAX], n = 0;
    const char *p = (const char *)data, *end = p + size;
    while (n < PARTS_MAX) {
        const char *sep = memmem(p, (size_t)(end - p), "\n===\n", 5);
        parts[n] = p;
        lens[n++] = sep ? (size_t)(sep - p) : (size_t)(end - p);
        if (!sep)
            break;
        p = sep + 5;
    }
    char hex[PARTS_MAX][ABX_DIGEST_HEX];
    memset(hex, 0, sizeof hex);
    char blobs[600], path[900];
    snprintf(blobs, sizeof blobs, "%s/blobs/sha256", layout);
    for (size_t i = n; i-- > 0;) {
        size_t len;
        char *text = with_digests(parts[i], lens[i], hex, &len);
        if (!text)
            return 0;
        if (i == 0) {
            snprintf(path, sizeof path, "%s/index.json", layout);
        } else {
            abx_digest *d = abx__digest_new();
            abx__digest_add(d, text, len);
            if (abx__digest_finish(d, hex[i]) < 0)
                abort();
            snprintf(path, sizeof path, "%s/%s", blobs, hex[i]);
        }
        write_file(path, text, len);
        free(text);
    }
    abx_oci_image img;
    char why[400] = "";
    int rc = abx__oci_read(layout, size % 2 ? "latest" : NULL, &img, why, sizeof why);
    if (rc < 0) {
        if (!why[0] || img.layers || img.config)
            abort();
    } else {
        if (img.nlayers > ABX_OCI_LAYERS_MAX)
            abort();
        for (size_t i = 0; i < img.nlayers; i++) {
            char got[ABX_DIGEST_HEX];
            const char *name = strrchr(img.layers[i], '/');
            if (!name || abx__sha256_file_hex(img.layers[i], got) < 0 || strcmp(got, name + 1) != 0)
                abort();
        }
        check_config(img.config);
        abx__oci_image_clear(&img);
        read_whole++;
    }
    for (size_t i = 1; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", blobs, hex[i]);
        unlink(path);
    }
    return 0;
}
