/* evp_api.h: libcrypto's SHA-256 (EVP digests), loaded on first use
 * (evp_api.c).
 *
 * Linked statically, EVP's digests bring OpenSSL's whole provider machinery
 * (3.4 MB of code, 350 KiB of data relocated at every start) into the abx
 * binary, whose every command paid for it (some 0.6 ms of each start),
 * while only template builds, the tenant of an API key and signed URLs
 * hash anything. So the files that hash include this header, which maps
 * the EVP names they use onto functions looked up in libcrypto.so.3 the
 * first time one is called. Base64 and CRYPTO_memcmp stay linked (they
 * pull in nothing). Without the library every digest call fails, as a
 * libcrypto failure would (callers check).
 */
#ifndef ABX_EVP_API_H
#define ABX_EVP_API_H

#include <openssl/evp.h>
#include <stdbool.h>

typedef struct abx_evp_api {
    EVP_MD_CTX *(*md_ctx_new)(void);
    void (*md_ctx_free)(EVP_MD_CTX *ctx);
    int (*digest_init_ex)(EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl);
    int (*digest_update)(EVP_MD_CTX *ctx, const void *d, size_t cnt);
    int (*digest_final_ex)(EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s);
    const EVP_MD *(*sha256)(void);
    int (*digest)(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type,
                  ENGINE *impl);
} abx_evp_api;

/* The loaded functions, or stand-ins that fail (NULL, 0) when libcrypto
 * cannot be loaded. Thread-safe; loads once, kept for the process's life. */
const abx_evp_api *abx__evp(void);
/* Whether libcrypto's digests could be loaded (abx doctor). */
bool abx__evp_loaded(void);

#ifndef ABX_EVP_API_IMPL
#define EVP_MD_CTX_new (abx__evp()->md_ctx_new)
#define EVP_MD_CTX_free (abx__evp()->md_ctx_free)
#define EVP_DigestInit_ex (abx__evp()->digest_init_ex)
#define EVP_DigestUpdate (abx__evp()->digest_update)
#define EVP_DigestFinal_ex (abx__evp()->digest_final_ex)
#define EVP_sha256 (abx__evp()->sha256)
#define EVP_Digest (abx__evp()->digest)
#endif

#endif
