/* tenant.h: the one tenant check and the per-tenant quotas of libabx
 * (abx.h "tenants"): who may see a sandbox, what answers when they may
 * not, and how many sandboxes (and how much of each host-wide pool) one
 * tenant may hold. Providers record a sandbox's tenant; they and sandbox.c
 * ask only these functions whether a client may reach it.
 */
#ifndef ABX_TENANT_H
#define ABX_TENANT_H

#include "provider.h"

#include <stdbool.h>

/* The key a remote provider keeps the tenant under in a sandbox's metadata
 * (never shown: its info and list strip it), and the front end's notes. */
#define ABX_TENANT_META_KEY "abx.tenant"
#define ABX_NOTES_META_KEY "abx.notes"

/* Whether c may reach a sandbox recorded for tenant recorded ("" or NULL:
 * none, which only a client without a tenant reaches). Constant time in
 * the strings' contents. */
bool abx__tenant_may_see(const abx_client *c, const char *recorded);
/* The one answer for an id c may not reach and for one that does not
 * exist: E8002 with one message, whatever the reason. */
int abx__tenant_not_found(abx_error **err);
/* The tenant a create through c records: c's own ("" without one); a
 * client of a tenant set creates nothing (E8001). */
int abx__tenant_for_create(const abx_client *c, const char **tenant, abx_error **err);

/* What a host user (a tenant "uid:N": the service's callers) may ask
 * for, as the operator's [service] says. network: mode (none, internet,
 * allowlist) within [service] network_modes (default all three); builds:
 * building or importing templates, unless [service] template_builds is
 * false. E8033 naming the key; anyone else (tenant "" or another kind)
 * may. */
int abx__tenant_may_network(const char *tenant, const char *mode, abx_error **err);
int abx__tenant_may_build(const char *tenant, abx_error **err);

/* Reserves room for one more sandbox of c's tenant (networked: it takes a
 * network address too) against [limits] sandboxes_per_tenant and the
 * tenant's share of the provider's pools, counting the tenant's live
 * sandboxes and its creates in flight in this process. E8030 past it.
 * The live ones are counted from the provider's list at most every two
 * seconds (and always before a refusal), not at every create: a walk of
 * the host's sandboxes per create would grow with them. A client without
 * a tenant reserves nothing. Release it with abx__quota_release once the
 * create has ended, whatever its outcome (made: the sandbox now lives). */
int abx__quota_reserve(abx_client *c, bool networked, abx_error **err);
void abx__quota_release(abx_client *c, bool networked, bool made);

/* Whether tenant (NULL or "": the administrator, unbounded) may have one
 * more volume of add_mb MiB, holding count volumes of mb MiB now, against
 * [limits] volumes_per_tenant and volume_mb_per_tenant. E8030 past them. */
int abx__quota_volume(const char *tenant, unsigned count, unsigned long long mb, unsigned add_mb,
                      abx_error **err);

/* The root client's book of creates in flight (root clients only). */
typedef struct abx_quota_book abx_quota_book;
abx_quota_book *abx__quota_book_new(void);
void abx__quota_book_free(abx_quota_book *b);

#endif
