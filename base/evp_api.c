/* evp_api.c: libcrypto's EVP digests, loaded on first use (see evp_api.h).
 * Owns the soname, the lookups and the failing stand-ins; nothing else. */
#define ABX_EVP_API_IMPL
#include "evp_api.h"

#include "netlibs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

static EVP_MD_CTX *no_ctx(void)
{
    return NULL;
}
static void no_free(EVP_MD_CTX *ctx)
{
    (void)ctx;
}
static int no_init(EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *impl)
{
    (void)ctx, (void)type, (void)impl;
    return 0;
}
static int no_update(EVP_MD_CTX *ctx, const void *d, size_t cnt)
{
    (void)ctx, (void)d, (void)cnt;
    return 0;
}
static int no_final(EVP_MD_CTX *ctx, unsigned char *md, unsigned int *s)
{
    (void)ctx, (void)md, (void)s;
    return 0;
}
static const EVP_MD *no_md(void)
{
    return NULL;
}
static int no_digest(const void *data, size_t count, unsigned char *md, unsigned int *size,
                     const EVP_MD *type, ENGINE *impl)
{
    (void)data, (void)count, (void)md, (void)size, (void)type, (void)impl;
    return 0;
}

static const abx_evp_api failing = {no_ctx, no_free, no_init, no_update, no_final, no_md, no_digest};
static pthread_once_t evp_once = PTHREAD_ONCE_INIT;
static abx_evp_api evp_api; /* filled once, read-only afterwards */
static bool evp_ok;

static void load_evp(void)
{
    static const char *const sonames[] = {"libcrypto.so.3", "libcrypto.so", NULL};
    void *h = abx__dlopen_first(sonames);
    if (!h)
        return;
    void *slots[] = {dlsym(h, "EVP_MD_CTX_new"),     dlsym(h, "EVP_MD_CTX_free"),
                     dlsym(h, "EVP_DigestInit_ex"),  dlsym(h, "EVP_DigestUpdate"),
                     dlsym(h, "EVP_DigestFinal_ex"), dlsym(h, "EVP_sha256"),
                     dlsym(h, "EVP_Digest")};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (!slots[i])
            return; /* h stays loaded: harmless */
    *(void **)&evp_api.md_ctx_new = slots[0];
    *(void **)&evp_api.md_ctx_free = slots[1];
    *(void **)&evp_api.digest_init_ex = slots[2];
    *(void **)&evp_api.digest_update = slots[3];
    *(void **)&evp_api.digest_final_ex = slots[4];
    *(void **)&evp_api.sha256 = slots[5];
    *(void **)&evp_api.digest = slots[6];
    evp_ok = true;
}

const abx_evp_api *abx__evp(void)
{
    pthread_once(&evp_once, load_evp);
    return evp_ok ? &evp_api : &failing;
}

bool abx__evp_loaded(void)
{
    pthread_once(&evp_once, load_evp);
    return evp_ok;
}
