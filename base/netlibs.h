/* netlibs.h: libcurl and libmicrohttpd, loaded on first use.
 *
 * abx is one binary for every verb; linking these two would make every
 * `abx run` map some thirty shared libraries first (their own dependencies:
 * Kerberos, LDAP, GnuTLS, ...), tripling its start-up time and RSS. So
 * their functions are looked up with dlopen/dlsym the first time a verb
 * needs HTTP, and files that use them include this header instead, which
 * maps the usual names onto the loaded functions.
 */
#ifndef ABX_NETLIBS_H
#define ABX_NETLIBS_H

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <microhttpd.h>
#include <stdbool.h>

typedef struct abx_curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_reset)(CURL *c);
    CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *c);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
    const char *(*easy_strerror)(CURLcode code);
    char *(*easy_escape)(CURL *c, const char *s, int len);
    void (*free)(void *p);
} abx_curl_api;

typedef struct abx_mhd_api {
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                       void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *d);
    struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
                                                        enum MHD_ResponseMemoryMode mode);
    struct MHD_Response *(*create_response_from_callback)(uint64_t size, size_t block_size,
                                                          MHD_ContentReaderCallback crc, void *crc_cls,
                                                          MHD_ContentReaderFreeCallback crfc);
    struct MHD_Response *(*create_response_from_fd)(size_t size, int fd);
    enum MHD_Result (*add_response_header)(struct MHD_Response *r, const char *header, const char *content);
    enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r);
    void (*destroy_response)(struct MHD_Response *r);
    const char *(*lookup_connection_value)(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                           const char *key);
    struct MHD_PostProcessor *(*create_post_processor)(struct MHD_Connection *c, size_t buffer_size,
                                                       MHD_PostDataIterator iter, void *iter_cls);
    enum MHD_Result (*post_process)(struct MHD_PostProcessor *pp, const char *data, size_t len);
    enum MHD_Result (*destroy_post_processor)(struct MHD_PostProcessor *pp);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *c,
                                                           enum MHD_ConnectionInfoType type, ...);
    int (*get_connection_values)(struct MHD_Connection *c, enum MHD_ValueKind kind, MHD_KeyValueIterator it,
                                 void *it_cls);
    struct MHD_Response *(*create_response_for_upgrade)(MHD_UpgradeHandler upgrade_handler, void *cls);
    enum MHD_Result (*upgrade_action)(struct MHD_UpgradeResponseHandle *urh, enum MHD_UpgradeAction action,
                                      ...);
} abx_mhd_api;

/* The first of sonames (NULL-terminated) that dlopen loads (RTLD_NOW,
 * RTLD_LOCAL), or NULL: the one way abx loads a library on first use
 * (here, base/evp_api.c, runtime/ldns_api.c). Kept for the process's life. */
void *abx__dlopen_first(const char *const *sonames);

/* The loaded library, or NULL when it cannot be loaded (callers report
 * E8006: the host lacks a library abx needs). Thread-safe; loads once. */
const abx_curl_api *abx__curl(void);
const abx_mhd_api *abx__mhd(void);

#ifndef ABX_NETLIBS_IMPL
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init (abx__curl()->global_init)
#define curl_easy_init (abx__curl()->easy_init)
#define curl_easy_reset (abx__curl()->easy_reset)
#define curl_easy_setopt (abx__curl()->easy_setopt)
#define curl_easy_perform (abx__curl()->easy_perform)
#define curl_easy_getinfo (abx__curl()->easy_getinfo)
#define curl_easy_cleanup (abx__curl()->easy_cleanup)
#define curl_slist_append (abx__curl()->slist_append)
#define curl_slist_free_all (abx__curl()->slist_free_all)
#define curl_easy_strerror (abx__curl()->easy_strerror)
#define curl_easy_escape (abx__curl()->easy_escape)
#define curl_free (abx__curl()->free)
#define MHD_start_daemon (abx__mhd()->start_daemon)
#define MHD_stop_daemon (abx__mhd()->stop_daemon)
#define MHD_create_response_from_buffer (abx__mhd()->create_response_from_buffer)
#define MHD_create_response_from_callback (abx__mhd()->create_response_from_callback)
#define MHD_create_response_from_fd (abx__mhd()->create_response_from_fd)
#define MHD_add_response_header (abx__mhd()->add_response_header)
#define MHD_queue_response (abx__mhd()->queue_response)
#define MHD_destroy_response (abx__mhd()->destroy_response)
#define MHD_lookup_connection_value (abx__mhd()->lookup_connection_value)
#define MHD_create_post_processor (abx__mhd()->create_post_processor)
#define MHD_post_process (abx__mhd()->post_process)
#define MHD_destroy_post_processor (abx__mhd()->destroy_post_processor)
#define MHD_get_connection_info (abx__mhd()->get_connection_info)
#define MHD_get_connection_values (abx__mhd()->get_connection_values)
#define MHD_create_response_for_upgrade (abx__mhd()->create_response_for_upgrade)
#define MHD_upgrade_action (abx__mhd()->upgrade_action)
#endif

#endif
