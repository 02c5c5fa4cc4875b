/* oci_layout.h: reading an OCI image layout (lib/local/oci_layout.c). */
#ifndef ABX_OCI_LAYOUT_H
#define ABX_OCI_LAYOUT_H

#include <jansson.h>
#include <stddef.h>

#define ABX_OCI_LAYERS_MAX 1000

typedef struct abx_oci_image {
    char layout[1024];
    char **layers; /* the layers' blob paths, in order (each checked against its digest) */
    size_t nlayers;
    json_t *config; /* the template config: env, workdir, uid, entrypoint, cmd */
} abx_oci_image;

/* Reads the image of layout (tag NULL, or the ref name DIR:TAG gave):
 * 0 with *out filled (abx__oci_image_clear), or -1 with why. */
int abx__oci_read(const char *layout, const char *tag, abx_oci_image *out, char *why, size_t whylen);
void abx__oci_image_clear(abx_oci_image *img);

#endif
