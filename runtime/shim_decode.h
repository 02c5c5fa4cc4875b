/* shim_decode.h: what the shim's data plane reads from a client, decoded
 * without side effects (so it can be fuzzed alone: tests/fuzz/fuzz-shim.c). */
#ifndef ABX_SHIM_DECODE_H
#define ABX_SHIM_DECODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A JSON request body: NULL when it is not JSON or nests deeper than
 * ABX_BOUND_JSON_DEPTH. An empty body is {}. Caller owns the result. */
json_t *abx__shim_json_body(const char *body, size_t len);
/* A Connect streaming request: one envelope (flags 0, 4-byte big-endian
 * length, JSON message) that is the whole body; NULL otherwise. */
json_t *abx__shim_connect_unwrap(const char *body, size_t len);
/* NULL or an object of strings with environment-variable names as keys. */
bool abx__shim_string_map_ok(json_t *m);
/* NULL or an array of strings. */
bool abx__shim_string_array_ok(json_t *a);
/* "Basic base64(user:)" (NULL: the default user) -> 0 (root) or 1000. -1
 * for anything else. */
int abx__shim_user_from_basic(const char *header, unsigned default_uid, unsigned *uid);
/* "user", "root", NULL or "" -> the uid; -1 for anything else. */
int abx__shim_user_from_name(const char *name, unsigned default_uid, unsigned *uid);
/* envd's SIGNAL_* names -> signal number; -1 when unknown. */
int abx__shim_signal_from_name(const char *name);

#endif
