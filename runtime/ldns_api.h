/* ldns_api.h: libldns, loaded on first use (ldns_api.c).
 *
 * Only a networked sandbox's resolver (net_dns.c) parses DNS; linking
 * libldns into the shim (statically, as it was) brought its tables and the
 * part of OpenSSL they pull in (DNSSEC) into every shim: some 350 KiB of
 * relocated read-only data, private to each process, in sandboxes that
 * never resolve a name. So net_dns.c includes this header instead of
 * calling libldns directly: each name below is a pointer looked up with
 * dlopen/dlsym the first time a resolver starts.
 */
#ifndef ABX_LDNS_API_H
#define ABX_LDNS_API_H

#include <ldns/ldns.h>

#define ABX_LDNS_FUNCTIONS(X)                                                                                \
    X(ldns_pkt2wire)                                                                                         \
    X(ldns_pkt_additional)                                                                                   \
    X(ldns_pkt_answer)                                                                                       \
    X(ldns_pkt_authority)                                                                                    \
    X(ldns_pkt_free)                                                                                         \
    X(ldns_pkt_qdcount)                                                                                      \
    X(ldns_pkt_qr)                                                                                           \
    X(ldns_pkt_query_new_frm_str)                                                                            \
    X(ldns_pkt_question)                                                                                     \
    X(ldns_pkt_set_additional)                                                                               \
    X(ldns_pkt_set_ancount)                                                                                  \
    X(ldns_pkt_set_answer)                                                                                   \
    X(ldns_pkt_set_arcount)                                                                                  \
    X(ldns_pkt_set_authority)                                                                                \
    X(ldns_pkt_set_id)                                                                                       \
    X(ldns_pkt_set_nscount)                                                                                  \
    X(ldns_pkt_set_qr)                                                                                       \
    X(ldns_pkt_set_ra)                                                                                       \
    X(ldns_pkt_set_rcode)                                                                                    \
    X(ldns_rdf2str)                                                                                          \
    X(ldns_rdf_data)                                                                                         \
    X(ldns_rdf_size)                                                                                         \
    X(ldns_rr_clone)                                                                                         \
    X(ldns_rr_free)                                                                                          \
    X(ldns_rr_get_type)                                                                                      \
    X(ldns_rr_list_deep_free)                                                                                \
    X(ldns_rr_list_new)                                                                                      \
    X(ldns_rr_list_push_rr)                                                                                  \
    X(ldns_rr_list_rr)                                                                                       \
    X(ldns_rr_list_rr_count)                                                                                 \
    X(ldns_rr_owner)                                                                                         \
    X(ldns_rr_rdf)                                                                                           \
    X(ldns_rr_ttl)                                                                                           \
    X(ldns_wire2pkt)

#define ABX_LDNS_SLOT(name) __typeof__(name) *name;
typedef struct abx_ldns_api {
    ABX_LDNS_FUNCTIONS(ABX_LDNS_SLOT)
} abx_ldns_api;
#undef ABX_LDNS_SLOT

/* The loaded library, or NULL when it cannot be loaded (the caller reports
 * E8006). Thread-safe; loads once, kept for the process's life. */
const abx_ldns_api *abx__ldns(void);

#ifndef ABX_LDNS_API_IMPL
#define ldns_pkt2wire (abx__ldns()->ldns_pkt2wire)
#define ldns_pkt_additional (abx__ldns()->ldns_pkt_additional)
#define ldns_pkt_answer (abx__ldns()->ldns_pkt_answer)
#define ldns_pkt_authority (abx__ldns()->ldns_pkt_authority)
#define ldns_pkt_free (abx__ldns()->ldns_pkt_free)
#define ldns_pkt_qdcount (abx__ldns()->ldns_pkt_qdcount)
#define ldns_pkt_qr (abx__ldns()->ldns_pkt_qr)
#define ldns_pkt_query_new_frm_str (abx__ldns()->ldns_pkt_query_new_frm_str)
#define ldns_pkt_question (abx__ldns()->ldns_pkt_question)
#define ldns_pkt_set_additional (abx__ldns()->ldns_pkt_set_additional)
#define ldns_pkt_set_ancount (abx__ldns()->ldns_pkt_set_ancount)
#define ldns_pkt_set_answer (abx__ldns()->ldns_pkt_set_answer)
#define ldns_pkt_set_arcount (abx__ldns()->ldns_pkt_set_arcount)
#define ldns_pkt_set_authority (abx__ldns()->ldns_pkt_set_authority)
#define ldns_pkt_set_id (abx__ldns()->ldns_pkt_set_id)
#define ldns_pkt_set_nscount (abx__ldns()->ldns_pkt_set_nscount)
#define ldns_pkt_set_qr (abx__ldns()->ldns_pkt_set_qr)
#define ldns_pkt_set_ra (abx__ldns()->ldns_pkt_set_ra)
#define ldns_pkt_set_rcode (abx__ldns()->ldns_pkt_set_rcode)
#define ldns_rdf2str (abx__ldns()->ldns_rdf2str)
#define ldns_rdf_data (abx__ldns()->ldns_rdf_data)
#define ldns_rdf_size (abx__ldns()->ldns_rdf_size)
#define ldns_rr_clone (abx__ldns()->ldns_rr_clone)
#define ldns_rr_free (abx__ldns()->ldns_rr_free)
#define ldns_rr_get_type (abx__ldns()->ldns_rr_get_type)
#define ldns_rr_list_deep_free (abx__ldns()->ldns_rr_list_deep_free)
#define ldns_rr_list_new (abx__ldns()->ldns_rr_list_new)
#define ldns_rr_list_push_rr (abx__ldns()->ldns_rr_list_push_rr)
#define ldns_rr_list_rr (abx__ldns()->ldns_rr_list_rr)
#define ldns_rr_list_rr_count (abx__ldns()->ldns_rr_list_rr_count)
#define ldns_rr_owner (abx__ldns()->ldns_rr_owner)
#define ldns_rr_rdf (abx__ldns()->ldns_rr_rdf)
#define ldns_rr_ttl (abx__ldns()->ldns_rr_ttl)
#define ldns_wire2pkt (abx__ldns()->ldns_wire2pkt)
#endif

#endif
