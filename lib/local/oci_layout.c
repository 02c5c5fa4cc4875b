/* oci_layout.c: an OCI image layout read and checked (oci_layout.h):
 * oci-layout, index.json (a nested index followed once), the image
 * manifest for linux/amd64 (or without a platform; DIR:TAG by its
 * org.opencontainers.image.ref.name), the image config, and every blob
 * checked against its sha256 digest. JSON documents of at most 4 MiB.
 * The layers themselves are applied by the caller
 * (abx__archive_extract_layer). Fuzzed by tests/fuzz/fuzz-oci.c.
 */
#include "oci_layout.h"
#include "digest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OCI_JSON_MAX (4u << 20)

/* A blob of an OCI layout, by digest ("sha256:<64 hex>"): its path, checked
 * against the digest. */
static int oci_blob(const char *layout, const char *digest, char *path, size_t len, char *why, size_t whylen)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
        strspn(digest + 7, "0123456789abcdef") != 64) {
        snprintf(why, whylen, "OCI layout: a digest that is not sha256:<hex>");
        return -1;
    }
    snprintf(path, len, "%s/blobs/sha256/%s", layout, digest + 7);
    char hex[ABX_DIGEST_HEX];
    if (abx__sha256_file_hex(path, hex) < 0) {
        snprintf(why, whylen, "OCI layout: blob %.19s... is missing or unreadable", digest);
        return -1;
    }
    if (strcmp(hex, digest + 7) != 0) {
        snprintf(why, whylen, "OCI layout: blob %.19s... does not match its digest", digest);
        return -1;
    }
    return 0;
}

static json_t *oci_json(const char *path, char *why, size_t whylen)
{
    struct stat st;
    json_t *doc =
        stat(path, &st) == 0 && st.st_size <= (off_t)OCI_JSON_MAX ? json_load_file(path, 0, NULL) : NULL;
    if (!json_is_object(doc)) {
        json_decref(doc);
        snprintf(why, whylen, "OCI layout: %s is not a JSON object (of at most 4 MiB)",
                 strrchr(path, '/') + 1);
        return NULL;
    }
    return doc;
}

/* The image manifest an index names: linux/amd64 (or no platform), through
 * at most one nested index. */
static json_t *oci_manifest(const char *layout, json_t *index, const char *tag, int depth, char *why,
                            size_t whylen)
{
    json_t *list = json_object_get(index, "manifests"), *m, *pick = NULL;
    size_t i;
    json_array_foreach(list, i, m)
    {
        json_t *plat = json_object_get(m, "platform");
        const char *os = json_string_value(json_object_get(plat, "os"));
        const char *arch = json_string_value(json_object_get(plat, "architecture"));
        const char *ref = json_string_value(
            json_object_get(json_object_get(m, "annotations"), "org.opencontainers.image.ref.name"));
        if ((!plat || (os && arch && strcmp(os, "linux") == 0 && strcmp(arch, "amd64") == 0)) &&
            (!tag || depth > 0 || (ref && strcmp(ref, tag) == 0))) {
            pick = m;
            break;
        }
    }
    if (!pick) {
        snprintf(why, whylen,
                 tag && depth == 0 ? "OCI layout: no manifest tagged '%.100s' for linux/amd64"
                                   : "OCI layout: no manifest for linux/amd64",
                 tag);
        return NULL;
    }
    char path[1024];
    if (oci_blob(layout, json_string_value(json_object_get(pick, "digest")), path, sizeof path, why, whylen) <
        0)
        return NULL;
    json_t *doc = oci_json(path, why, whylen);
    if (doc && json_is_array(json_object_get(doc, "manifests"))) {
        json_t *inner = depth < 1 ? oci_manifest(layout, doc, tag, depth + 1, why, whylen) : NULL;
        if (depth >= 1)
            snprintf(why, whylen, "OCI layout: indexes nested too deep");
        json_decref(doc);
        return inner;
    }
    return doc;
}

/* The image's Env, WorkingDir, User, Cmd and Entrypoint as a template's config. */
static json_t *config_from_image(json_t *image)
{
    json_t *c = json_object_get(image, "config"), *config = json_object(), *env = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(c, "Env"), i, v)
    {
        const char *pair = json_string_value(v);
        const char *eq = pair ? strchr(pair, '=') : NULL;
        if (eq && eq != pair && eq - pair < 256) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - pair), pair);
            json_object_set_new(env, name, json_string(eq + 1));
        }
    }
    json_object_set_new(config, "env", env);
    const char *wd = json_string_value(json_object_get(c, "WorkingDir"));
    if (wd && wd[0] == '/')
        json_object_set_new(config, "workdir", json_string(wd));
    const char *user = json_string_value(json_object_get(c, "User"));
    if (user && (strcmp(user, "root") == 0 || strcmp(user, "0") == 0 || strncmp(user, "0:", 2) == 0))
        json_object_set_new(config, "uid", json_integer(0));
    else if (user &&
             (strcmp(user, "user") == 0 || strcmp(user, "1000") == 0 || strncmp(user, "1000:", 5) == 0))
        json_object_set_new(config, "uid", json_integer(1000));
    if (json_is_array(json_object_get(c, "Entrypoint")))
        json_object_set(config, "entrypoint", json_object_get(c, "Entrypoint"));
    if (json_is_array(json_object_get(c, "Cmd")))
        json_object_set(config, "cmd", json_object_get(c, "Cmd"));
    return config;
}

/* The layers' blobs, in order, checked against their digests. */
static int layer_paths(const char *layout, json_t *layers, abx_oci_image *out, char *why, size_t whylen)
{
    size_t n = json_array_size(layers);
    if (n > ABX_OCI_LAYERS_MAX) {
        snprintf(why, whylen, "OCI layout: more than %d layers", ABX_OCI_LAYERS_MAX);
        return -1;
    }
    out->layers = calloc(n ? n : 1, sizeof *out->layers);
    if (!out->layers) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    size_t i;
    json_t *layer;
    json_array_foreach(layers, i, layer)
    {
        const char *type = json_string_value(json_object_get(layer, "mediaType"));
        if (type && !strstr(type, "tar")) {
            snprintf(why, whylen, "OCI layout: layer %zu is %.100s, not a tar", i + 1, type);
            return -1;
        }
        char path[1024];
        if (oci_blob(layout, json_string_value(json_object_get(layer, "digest")), path, sizeof path, why,
                     whylen) < 0 ||
            !(out->layers[i] = strdup(path))) {
            return -1;
        }
        out->nlayers++;
    }
    return 0;
}

int abx__oci_read(const char *layout, const char *tag, abx_oci_image *out, char *why, size_t whylen)
{
    memset(out, 0, sizeof *out);
    snprintf(out->layout, sizeof out->layout, "%s", layout);
    char path[1024];
    snprintf(path, sizeof path, "%s/oci-layout", layout);
    json_t *marker = oci_json(path, why, whylen);
    json_decref(marker);
    if (!marker)
        return -1;
    snprintf(path, sizeof path, "%s/index.json", layout);
    json_t *index = oci_json(path, why, whylen);
    json_t *manifest = index ? oci_manifest(layout, index, tag, 0, why, whylen) : NULL;
    json_decref(index);
    if (!manifest)
        return -1;
    int rc =
        oci_blob(layout, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")),
                 path, sizeof path, why, whylen);
    json_t *image = rc == 0 ? oci_json(path, why, whylen) : NULL;
    json_t *layers = json_object_get(manifest, "layers");
    if (image && !json_is_array(layers))
        snprintf(why, whylen, "OCI layout: the manifest lists no layers");
    rc = image && json_is_array(layers) ? layer_paths(layout, layers, out, why, whylen) : -1;
    if (rc == 0)
        out->config = config_from_image(image);
    json_decref(image);
    json_decref(manifest);
    if (rc < 0)
        abx__oci_image_clear(out);
    return rc;
}

void abx__oci_image_clear(abx_oci_image *img)
{
    for (size_t i = 0; i < img->nlayers; i++)
        free(img->layers[i]);
    free(img->layers);
    json_decref(img->config);
    memset(img, 0, sizeof *img);
}
