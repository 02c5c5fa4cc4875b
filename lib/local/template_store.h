/* template_store.h: templates on this machine (lib/local/template_store.c).
 *
 * $ABX_HOME/templates/NAME/ holds rootfs/ (the tree, owned as in its
 * source) and template.json. "base" (the host's view) and
 * "code-interpreter-v1" are built in and live nowhere.
 */
#ifndef ABX_TEMPLATE_STORE_H
#define ABX_TEMPLATE_STORE_H

#include "abx/abx.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

bool abx__template_builtin(const char *name);
/* A name a template may take: [a-z0-9][a-z0-9._-]{0,62}, not a built-in one. */
bool abx__template_name_valid(const char *name);
/* The tree of an imported template, complete and usable; -1 when there is none. */
int abx__template_root(const char *name, char *out, size_t len);
/* Unpacks a root filesystem archive (.tar, .tar.gz, .tar.zst, docker
 * export) as template name; *info (the caller's, may be NULL) describes it.
 * The template appears whole or not at all. */
int abx__template_import(const char *name, const char *source, json_t **info, abx_error **err);
/* Every template: the built-in ones, then the imported ones by name. */
int abx__template_list(json_t **out, abx_error **err);
int abx__template_inspect(const char *name, json_t **out, abx_error **err);
/* Removes an imported template; refused (E8001) while a live sandbox uses
 * it, unless force (those sandboxes keep their view until they end). */
int abx__template_remove(const char *name, bool force, abx_error **err);

#endif
