/* template_store.h: templates on this machine (lib/local/template_store.c).
 *
 * $ABX_HOME/templates/NAME/ holds rootfs/ (the tree, owned as in its
 * source) and template.json: name, source, kind (archive, oci, build),
 * created_at, size_bytes, files and config (env {NAME: value}, workdir,
 * uid 0|1000, entrypoint, cmd, healthcheck {cmd, shell, interval_ms,
 * timeout_ms}: what each sandbox made from it starts with). "base" (the
 * host's view) is built in and lives nowhere; "code-interpreter-v1" is
 * built in and stored here once built (lib/local/template_build.c).
 */
#ifndef ABX_TEMPLATE_STORE_H
#define ABX_TEMPLATE_STORE_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_TEMPLATE_CODE_INTERPRETER "code-interpreter-v1"

bool abx__template_builtin(const char *name);
/* A name a template may take: [a-z0-9][a-z0-9._-]{0,62}, not a built-in one. */
bool abx__template_name_valid(const char *name);
/* A host user's own templates (a tenant "uid:N" of the abx service) are
 * stored as "~N.NAME": a '~' no asked-for name can hold, so one user's
 * NAME is never another's, nor a shared one. abx__template_own: the
 * stored name of tenant's NAME into out (true), or NAME itself when the
 * tenant is not a host user (false). abx__template_resolve: what tenant's
 * NAME means: their own when they have one, else the shared one.
 * abx__template_shown: the name a stored one is shown as (its NAME). */
bool abx__template_own(const char *tenant, const char *name, char *out, size_t len);
void abx__template_resolve(const char *tenant, const char *name, char *out, size_t len);
const char *abx__template_shown(const char *stored);
/* A name a template may be stored under: a valid one, or a host user's own. */
bool abx__template_storable(const char *name);
/* The tree of an imported or built template (code-interpreter-v1 once
 * built), complete and usable; -1 when there is none. */
int abx__template_root(const char *name, char *out, size_t len);
/* Unpacks a root filesystem archive (.tar, .tar.gz, .tar.zst, docker
 * export) as template name; *info (the caller's, may be NULL) describes it.
 * The template appears whole or not at all. */
int abx__template_import(const char *name, const char *source, json_t **info, abx_error **err);
/* The template's config (template.json's "config", the caller's
 * reference), or NULL when it has none. */
json_t *abx__template_config(const char *name);
/* The whole template.json of name (a new reference), or NULL. */
json_t *abx__template_document(const char *name);
/* A staging directory for template name (templates/.partial-PID-NAME-X/,
 * with rootfs/ in it, empty): fill rootfs, then abx__template_install or
 * abx__template_discard. Leftovers of dead processes are removed here. */
int abx__template_stage(const char *name, char *staging, size_t len, abx_error **err);
void abx__template_discard(const char *staging);
/* Makes staging template name, whole or not at all: doc (consumed) gets
 * name, created_at, sizes and is written as template.json. An existing
 * template of that name is replaced when replace and no live sandbox uses
 * it; otherwise refused. On failure staging is removed. *info (may be NULL)
 * gets the description. */
int abx__template_install(const char *name, const char *staging, json_t *doc, bool replace, json_t **info,
                          abx_error **err);
/* Every template: the built-in ones, then the imported ones by name
 * (abx__template_list: all of them, host users' own as stored;
 * abx__template_list_for: what tenant sees: the shared ones, and a host
 * user's own by the names they gave; "" or NULL: all). */
int abx__template_list(json_t **out, abx_error **err);
int abx__template_list_for(const char *tenant, json_t **out, abx_error **err);
int abx__template_inspect(const char *name, json_t **out, abx_error **err);
/* Removes an imported template; refused (E8001) while a live sandbox uses
 * it, unless force (those sandboxes keep their view until they end). */
int abx__template_remove(const char *name, bool force, abx_error **err);

/* Removes the entries of dir named PREFIX<pid>... (a prefix of the
 * NULL-terminated list) whose process is gone: what an import, build or
 * removal that died left. */
void abx__tree_reap_dead(const char *dir, const char *const *prefixes);

#endif
