/* digest.h: SHA-256 of bytes, files and the build cache's keys, as hex
 * (lib/digest.c, over OpenSSL's libcrypto). */
#ifndef ABX_DIGEST_H
#define ABX_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#define ABX_DIGEST_HEX 65 /* 64 hex characters and the NUL */

typedef struct abx_digest abx_digest; /* an open SHA-256: new, add, finish (which frees it) */

abx_digest *abx__digest_new(void);
void abx__digest_add(abx_digest *d, const void *data, size_t len);
void abx__digest_add_str(abx_digest *d, const char *s); /* with its NUL: "a","b" differs from "ab" */
/* Adds a file's bytes (never following a link at its end); -1 when it cannot be read. */
int abx__digest_add_file(abx_digest *d, int dirfd, const char *path);
/* Writes the hex digest and frees d; -1 (d freed) on a libcrypto failure. */
int abx__digest_finish(abx_digest *d, char hex[ABX_DIGEST_HEX]);

int abx__sha256_file_hex(const char *path, char hex[ABX_DIGEST_HEX]);

/* A whole tree's digest: every path below dir (sorted, symbolic links not
 * followed) with its mode, and owners when asked, a regular file's bytes,
 * a link's target. Without owners a device, fifo or socket fails it (a
 * plugin has none); with owners it counts by its mode. -1 with errno:
 * E2BIG past max_entries, ELOOP past max_depth, or the failing call's. */
typedef struct abx_tree_digest_rules {
    size_t max_entries;
    int max_depth;
    bool owners;
    /* NULL, or an empty directory into which each entry is copied in the
     * pass that hashes it (a file's bytes as they were read, its mode as it
     * was hashed; directories 0700), so that the digest describes exactly
     * what the copy holds, whatever changes in dir meanwhile. A file that
     * is replaced while it is read fails the digest (ESTALE). */
    const char *copy_to;
} abx_tree_digest_rules;
int abx__digest_tree(const char *dir, const abx_tree_digest_rules *rules, char hex[ABX_DIGEST_HEX]);

#endif
