/* ldns_api.c: loads libldns on first use (see ldns_api.h). Owns the soname
 * and the lookup of each function named in ABX_LDNS_FUNCTIONS; nothing else. */
#define ABX_LDNS_API_IMPL
#include "ldns_api.h"

#include "netlibs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>

static pthread_once_t ldns_once = PTHREAD_ONCE_INIT;
static abx_ldns_api ldns_api; /* filled once, read-only afterwards */
static bool ldns_ok;

static void load_ldns(void)
{
    static const char *const sonames[] = {"libldns.so.3", "libldns.so", NULL};
    void *h = abx__dlopen_first(sonames);
    if (!h)
        return;
    bool all = true;
#define ABX_LDNS_LOOKUP(name)                                                                                \
    *(void **)&ldns_api.name = dlsym(h, #name);                                                              \
    all = all && ldns_api.name != NULL;
    ABX_LDNS_FUNCTIONS(ABX_LDNS_LOOKUP)
#undef ABX_LDNS_LOOKUP
    ldns_ok = all; /* h stays loaded for the process's life */
}

const abx_ldns_api *abx__ldns(void)
{
    pthread_once(&ldns_once, load_ldns);
    return ldns_ok ? &ldns_api : NULL;
}
