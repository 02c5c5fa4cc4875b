/* code.h: abx_sandbox_run_code's pieces (lib/code.c). */
#ifndef ABX_CODE_H
#define ABX_CODE_H

#include "abx/abx.h"
#include <jansson.h>

/* The /execute request for code and o (a new reference), or NULL with *rc
 * set and *err filled when o is out of range. */
json_t *abx__code_request(const char *code, const abx_code_options *o, abx_error **err, int *rc);
/* Reads an /execute answer (NDJSON) into *r; 0 or -ABX_ENOMEM. Lines that
 * are not JSON objects, and types it does not know, are skipped. */
int abx__code_parse_answer(const char *data, size_t len, abx_code_result *r);

#endif
