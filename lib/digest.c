/* digest.c: SHA-256 through libcrypto's EVP interface (digest.h). */
#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct abx_digest {
    EVP_MD_CTX *md;
    int failed;
};

abx_digest *abx__digest_new(void)
{
    static abx_digest none = {NULL, 1}; /* out of memory: every call fails at finish */
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return &none;
    }
    abx_digest *d = OPENSSL_zalloc(sizeof *d);
    if (!d) {
        EVP_MD_CTX_free(md);
        return &none;
    }
    d->md = md;
    return d;
}

void abx__digest_add(abx_digest *d, const void *data, size_t len)
{
    if (!d->failed && EVP_DigestUpdate(d->md, data, len) != 1)
        d->failed = 1;
}

void abx__digest_add_str(abx_digest *d, const char *s)
{
    abx__digest_add(d, s, strlen(s) + 1);
}

int abx__digest_add_file(abx_digest *d, int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0)
            abx__digest_add(d, buf, (size_t)n);
    close(fd);
    return n < 0 ? -1 : 0;
}

int abx__digest_finish(abx_digest *d, char hex[ABX_DIGEST_HEX])
{
    unsigned char sum[32];
    unsigned len = 0;
    int rc = d->md && !d->failed && EVP_DigestFinal_ex(d->md, sum, &len) == 1 && len == 32 ? 0 : -1;
    if (d->md) {
        EVP_MD_CTX_free(d->md);
        OPENSSL_free(d);
    }
    hex[0] = '\0';
    for (int i = 0; rc == 0 && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    return rc;
}

int abx__sha256_file_hex(const char *path, char hex[ABX_DIGEST_HEX])
{
    abx_digest *d = abx__digest_new();
    if (abx__digest_add_file(d, AT_FDCWD, path) < 0) {
        abx__digest_finish(d, hex);
        return -1;
    }
    return abx__digest_finish(d, hex);
}
