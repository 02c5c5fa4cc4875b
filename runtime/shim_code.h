/* shim_code.h: E2B code-interpreter endpoints served by the shim. */
#ifndef ABX_SHIM_CODE_H
#define ABX_SHIM_CODE_H

#include "shim.h"

/* POST /execute {code, context_id?, language?, env_vars?} and abx's own
 * fields {timeout? (s, default 300), cwd? (this cell's), save_after?
 * (bytes), fresh? (a kernel for this cell alone)}: runs code in a
 * context's kernel; *ndjson gets the answer lines (caller frees).
 * client_fd: the caller's connection (a hang-up interrupts the cell), or -1. */
int abx__code_execute(shim *sh, json_t *req, unsigned uid, int client_fd, char **ndjson, abx_error **err);
/* POST /contexts {language?, cwd?} -> {id, language, cwd}. */
int abx__code_context_create(shim *sh, json_t *req, unsigned uid, json_t **out, abx_error **err);
/* GET /contexts -> [{id, language, cwd}]. */
json_t *abx__code_contexts_list(shim *sh);
int abx__code_context_delete(shim *sh, const char *id, abx_error **err);
int abx__code_context_restart(shim *sh, const char *id, abx_error **err);

#endif
