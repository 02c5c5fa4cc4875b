/* error.c: the error tables and the abx_error object.
 *
 * Owns: abx_strerror()/abx_err_*() (generated from abx_errors.def) and the
 * creation of abx_error values with context (abx__error_set). Does not own
 * how errors are shown to users: the CLI and the MCP server format them.
 */
#include "abx/abx.h"
#include "error_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct abx_error {
    abx_code code;
    char message[512];
};

typedef struct error_row {
    int num;
    const char *name;
    const char *category;
    int http_status;
    const char *message;
    const char *hint;
} error_row;

static const error_row error_rows[] = {
#define ABX_ERR(n, num, cat, http, msg, hint) {num, "E" #num, cat, http, msg, hint},
#include "abx/abx_errors.def"
#undef ABX_ERR
};

static const error_row unknown_row = {
    8000, "E8000",         "internal",
    500,  "unknown error", "Retry; if it persists, report it with the output of 'ABX_LOG=debug abx ...'."};

static const error_row *find_row(int code)
{
    if (code < 0)
        code = -code;
    for (size_t i = 0; i < sizeof error_rows / sizeof error_rows[0]; i++)
        if (error_rows[i].num == code)
            return &error_rows[i];
    return &unknown_row;
}

const char *abx_strerror(int code)
{
    if (code == 0)
        return "success";
    return find_row(code)->message;
}

const char *abx_err_name(int code)
{
    return find_row(code)->name;
}
const char *abx_err_hint(int code)
{
    return find_row(code)->hint;
}
const char *abx_err_category(int code)
{
    return find_row(code)->category;
}
int abx_err_http_status(int code)
{
    return find_row(code)->http_status;
}

abx_code abx_error_code(const abx_error *err)
{
    return err ? err->code : ABX_OK;
}
const char *abx_error_message(const abx_error *err)
{
    return err ? err->message : "";
}
void abx_error_free(abx_error *err)
{
    free(err);
}
void abx_free(void *p)
{
    free(p);
}
const char *abx_version(void)
{
    return "0.1.0";
}

size_t abx__error_table_size(void)
{
    return sizeof error_rows / sizeof error_rows[0];
}
int abx__error_table_code(size_t i)
{
    return error_rows[i].num;
}

int abx__error_set(abx_error **err, int code, const char *fmt, ...)
{
    if (code > 0)
        code = -code;
    if (!err)
        return code;
    abx_error *e = *err;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e)
            return code; /* the code still reaches the caller */
        *err = e;
    }
    e->code = (abx_code)-code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return code;
}

int abx__error_wrap(abx_error **err, int rc, const char *fmt, ...)
{
    if (rc >= 0 || !err)
        return rc;
    char context[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    if (!*err)
        return abx__error_set(err, -rc, "%s", context);
    /* "context: message", cut to the message's size */
    char joined[sizeof context + 2 + sizeof(*err)->message];
    size_t cl = strlen(context), ml = strnlen((*err)->message, sizeof(*err)->message - 1);
    memcpy(joined, context, cl);
    memcpy(joined + cl, ": ", 2);
    memcpy(joined + cl + 2, (*err)->message, ml);
    size_t total = cl + 2 + ml, keep = total < sizeof(*err)->message ? total : sizeof(*err)->message - 1;
    memcpy((*err)->message, joined, keep);
    (*err)->message[keep] = '\0';
    return rc;
}

int abx__error_errno(abx_error **err, int code, int saved_errno, const char *what)
{
    return abx__error_set(err, code, "%s: %s", what, strerror(saved_errno));
}

/* ---- Connect RPC's error codes --------------------------------------------- */

const char *abx__connect_code(int code, unsigned *status)
{
    switch (code) {
    case ABX_ENOENT:
    case ABX_ENOTFOUND:
    case ABX_ECMDNOTFOUND:
    case ABX_ENOTASK:
        *status = 404;
        return "not_found";
    case ABX_EINVAL:
    case ABX_EISDIR:
    case ABX_EUSAGE:
        *status = 400;
        return "invalid_argument";
    case ABX_EPERM:
    case ABX_EPATHOUTSIDE:
    case ABX_EROFS:
    case ABX_ENOEXEC:
    case ABX_ENETPOLICY:
        *status = 403;
        return "permission_denied";
    case ABX_ELIMIT:
    case ABX_ETOOBIG:
    case ABX_EQUOTA:
        *status = 429;
        return "resource_exhausted";
    case ABX_ENOTRUNNING:
        *status = 503;
        return "unavailable";
    case ABX_EAUTH:
        *status = 401;
        return "unauthenticated";
    case ABX_ETIMEOUT:
        *status = 504;
        return "deadline_exceeded";
    case ABX_ENOTSUP:
        *status = 501;
        return "unimplemented";
    default:
        *status = 500;
        return "internal";
    }
}
