/* abx.h: the public C API of libabx, the SDK under the abx CLI and MCP server.
 *
 * Owns: the error model (one enum, generated from abx_errors.def), and the
 * one-shot sandbox run. Later: provider resolution, sandbox handles, exec,
 * files, background processes.
 *
 * Conventions:
 *   - Functions that can fail return int: 0 on success, -ABX_E* on failure,
 *     and fill *err (when err is non-NULL) with a message that carries context.
 *     The caller frees *err with abx_error_free().
 *   - Memory the library returns is freed with abx_free().
 *   - Every destroy/free function accepts NULL.
 *   - Only symbols prefixed abx_ are exported.
 */
#ifndef ABX_ABX_H
#define ABX_ABX_H

#include <stddef.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ABX_BUILDING_LIB)
#define ABX_API __attribute__((visibility("default")))
#else
#define ABX_API
#endif

/* ---- errors ------------------------------------------------------------ */

typedef enum abx_code {
    ABX_OK = 0,
#define ABX_ERR(name, num, cat, http, msg, hint) ABX_E##name = num,
#include "abx_errors.def"
#undef ABX_ERR
} abx_code;

/* An error with context. Opaque; created by the library, freed by the caller. */
typedef struct abx_error abx_error;

/* The code of err (positive), or ABX_OK for NULL. */
ABX_API abx_code abx_error_code(const abx_error *err);
/* The message with context; owned by err, valid until abx_error_free(). */
ABX_API const char *abx_error_message(const abx_error *err);
ABX_API void abx_error_free(abx_error *err);

/* Static tables by code; code may be given positive or negated. Unknown codes
 * yield "unknown error" / "E8000" / a generic hint. Never NULL. */
ABX_API const char *abx_strerror(int code);
ABX_API const char *abx_err_name(int code);      /* "E8001" */
ABX_API const char *abx_err_hint(int code);
ABX_API const char *abx_err_category(int code);
ABX_API int abx_err_http_status(int code);

/* Frees memory returned by libabx. NULL is a no-op. */
ABX_API void abx_free(void *p);

ABX_API const char *abx_version(void);

/* ---- one-shot sandbox run (abx run) ------------------------------------ */

#define ABX_DEFAULT_MEMORY_MB 512u
#define ABX_DEFAULT_CPU_COUNT 1u
#define ABX_DEFAULT_PIDS 256u
#define ABX_DEFAULT_DISK_MB 256u

typedef struct abx_limits {
    unsigned memory_mb; /* memory (and memory+swap) ceiling */
    unsigned cpu_count; /* CPU quota in whole CPUs */
    unsigned pids;      /* tasks ceiling */
    unsigned disk_mb;   /* size of the writable layer */
} abx_limits;

/* Fills *limits with the defaults above. */
ABX_API void abx_limits_default(abx_limits *limits);

typedef struct abx_run_options {
    abx_limits limits;
    unsigned timeout_s;       /* 0: none; else the sandbox is killed after it */
    const char *const *argv;  /* command and arguments, NULL-terminated; required */
    const char *const *envs;  /* "K=V" strings added to the sandbox's environment, NULL-terminated; may be NULL */
    const char *cwd;          /* working directory inside; NULL means /app */
    bool as_root;             /* run as root inside (still unprivileged on the host) */
} abx_run_options;

/* Runs opts->argv in a fresh sandbox with this process's stdin, stdout and
 * stderr, waits for it, destroys the sandbox, and stores the command's status
 * in *exit_status as a shell would report it: its exit code, 128+N for
 * signal N, 124 when the timeout killed it. Returns 0 when the command ran
 * (whatever its status), -ABX_E* when the sandbox could not be made or the
 * command could not be started (then *exit_status is 125, or 126/127 for a
 * command that is not executable or not found). Leaves nothing behind. */
ABX_API int abx_run(const abx_run_options *opts, int *exit_status, abx_error **err);

#ifdef __cplusplus
}
#endif
#endif
