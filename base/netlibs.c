/* netlibs.c: loads libcurl and libmicrohttpd on first use (see netlibs.h).
 * Owns the soname list and the symbol tables; nothing else. */
#define ABX_NETLIBS_IMPL
#include "netlibs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT, mhd_once = PTHREAD_ONCE_INIT;
static abx_curl_api curl_api; /* filled once, read-only afterwards */
static abx_mhd_api mhd_api;
static bool curl_ok, mhd_ok;

void *abx__dlopen_first(const char *const *sonames)
{
    void *h = NULL;
    for (size_t i = 0; sonames[i] && !h; i++)
        h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
    return h;
}

/* Resolves names[i] into slots[i]; false if the library or any symbol is missing. */
static bool load(const char *const *sonames, const char *const *names, void **slots, size_t n)
{
    void *h = abx__dlopen_first(sonames);
    if (!h)
        return false;
    for (size_t i = 0; i < n; i++) {
        slots[i] = dlsym(h, names[i]);
        if (!slots[i])
            return false;
    }
    return true; /* kept loaded for the process's life */
}

static void load_curl(void)
{
    static const char *const sonames[] = {"libcurl.so.4", "libcurl.so", NULL};
    static const char *const names[] = {"curl_global_init",   "curl_easy_init",    "curl_easy_reset",
                                        "curl_easy_setopt",   "curl_easy_perform", "curl_easy_getinfo",
                                        "curl_easy_cleanup",  "curl_slist_append", "curl_slist_free_all",
                                        "curl_easy_strerror", "curl_easy_escape",  "curl_free"};
    void *slots[sizeof names / sizeof names[0]];
    if (!load(sonames, names, slots, sizeof names / sizeof names[0]))
        return;
    *(void **)&curl_api.global_init = slots[0];
    *(void **)&curl_api.easy_init = slots[1];
    *(void **)&curl_api.easy_reset = slots[2];
    *(void **)&curl_api.easy_setopt = slots[3];
    *(void **)&curl_api.easy_perform = slots[4];
    *(void **)&curl_api.easy_getinfo = slots[5];
    *(void **)&curl_api.easy_cleanup = slots[6];
    *(void **)&curl_api.slist_append = slots[7];
    *(void **)&curl_api.slist_free_all = slots[8];
    *(void **)&curl_api.easy_strerror = slots[9];
    *(void **)&curl_api.easy_escape = slots[10];
    *(void **)&curl_api.free = slots[11];
    curl_ok = curl_api.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static void load_mhd(void)
{
    static const char *const sonames[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", NULL};
    static const char *const names[] = {"MHD_start_daemon",
                                        "MHD_stop_daemon",
                                        "MHD_create_response_from_buffer",
                                        "MHD_create_response_from_callback",
                                        "MHD_create_response_from_fd",
                                        "MHD_add_response_header",
                                        "MHD_queue_response",
                                        "MHD_destroy_response",
                                        "MHD_lookup_connection_value",
                                        "MHD_create_post_processor",
                                        "MHD_post_process",
                                        "MHD_destroy_post_processor",
                                        "MHD_get_connection_info",
                                        "MHD_get_connection_values",
                                        "MHD_create_response_for_upgrade",
                                        "MHD_upgrade_action"};
    void *slots[sizeof names / sizeof names[0]];
    if (!load(sonames, names, slots, sizeof names / sizeof names[0]))
        return;
    *(void **)&mhd_api.start_daemon = slots[0];
    *(void **)&mhd_api.stop_daemon = slots[1];
    *(void **)&mhd_api.create_response_from_buffer = slots[2];
    *(void **)&mhd_api.create_response_from_callback = slots[3];
    *(void **)&mhd_api.create_response_from_fd = slots[4];
    *(void **)&mhd_api.add_response_header = slots[5];
    *(void **)&mhd_api.queue_response = slots[6];
    *(void **)&mhd_api.destroy_response = slots[7];
    *(void **)&mhd_api.lookup_connection_value = slots[8];
    *(void **)&mhd_api.create_post_processor = slots[9];
    *(void **)&mhd_api.post_process = slots[10];
    *(void **)&mhd_api.destroy_post_processor = slots[11];
    *(void **)&mhd_api.get_connection_info = slots[12];
    *(void **)&mhd_api.get_connection_values = slots[13];
    *(void **)&mhd_api.create_response_for_upgrade = slots[14];
    *(void **)&mhd_api.upgrade_action = slots[15];
    mhd_ok = true;
}

const abx_curl_api *abx__curl(void)
{
    pthread_once(&curl_once, load_curl);
    return curl_ok ? &curl_api : NULL;
}

const abx_mhd_api *abx__mhd(void)
{
    pthread_once(&mhd_once, load_mhd);
    return mhd_ok ? &mhd_api : NULL;
}
