/* error_internal.h: helpers for making abx_error values inside libabx. */
#ifndef ABX_ERROR_INTERNAL_H
#define ABX_ERROR_INTERNAL_H

#include "abx/abx.h"
#include <stddef.h>

/* Sets *err (allocating it if NULL; err itself may be NULL) to code with a
 * printf-style message. Returns -code (negative) for `return abx__error_set(...)`. */
int abx__error_set(abx_error **err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Same, message "what: strerror(saved_errno)". */
int abx__error_errno(abx_error **err, int code, int saved_errno, const char *what);

/* Gives an error on its way up the context of the caller (as crun's
 * crun_error_wrap): *err's message becomes "context: message", its code
 * stays. rc is the failing call's (negative) return, returned as it is;
 * with no *err yet, one is made with code -rc. rc >= 0 changes nothing. */
int abx__error_wrap(abx_error **err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The Connect RPC error code ("not_found", ...) and HTTP status for an
 * abx code (positive): the one mapping every envd-speaking server uses
 * (the shim, abx serve's envd front). */
const char *abx__connect_code(int code, unsigned *status);

/* For the unit test that checks docs/errors.md against the table. */
size_t abx__error_table_size(void);
int abx__error_table_code(size_t i);

#endif
