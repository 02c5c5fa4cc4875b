/* epp_exec.h: the exec streams of one plugin process (lib/epp_exec.c). */
#ifndef ABX_EPP_EXEC_H
#define ABX_EPP_EXEC_H

#include "abx/abx.h"
#include <jansson.h>
#include <stddef.h>

typedef struct abx_epp_execs abx_epp_execs;

/* NULL without memory; freed with abx__epp_execs_free. */
abx_epp_execs *abx__epp_execs_new(void);
void abx__epp_execs_free(abx_epp_execs *x);

/* From the plugin's reader: an exec.output or exec.exit notification
 * (params borrowed). Returns 0, or -1 with why filled when the plugin broke
 * the protocol (an event without exec_id, bad base64, output after the
 * exit, a second exec.exit). */
int abx__epp_execs_notify(abx_epp_execs *x, const char *method, json_t *params, char *why, size_t why_len);
/* The plugin is gone: every exec not yet ended ends with why. */
void abx__epp_execs_lost(abx_epp_execs *x, const char *why);

/* One exec ended without its exit (a stream that broke): why. */
void abx__epp_execs_end(abx_epp_execs *x, const char *exec_id, const char *why);
/* After exec.start answered: exec_id's process id (0: none given) and tag
 * (may be NULL). -ABX_ELIMIT when the table is full of running execs. */
int abx__epp_execs_claim(abx_epp_execs *x, const char *exec_id, int pid, const char *tag);
/* A foreground exec is done with: its record may be reused. */
void abx__epp_execs_release(abx_epp_execs *x, const char *exec_id);

/* Output from the given offsets of the exec named by exec_id (or, when it
 * is NULL, by pid), waiting up to wait_ms for more or its end. *out is the
 * caller's (abx_process_output_clear). -ABX_ENOTASK for an unknown one;
 * -ABX_EPROVIDER when the plugin went away or broke the protocol before
 * the exec ended (why filled). */
int abx__epp_execs_read(abx_epp_execs *x, const char *exec_id, int pid, unsigned long long stdout_offset,
                        unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                        char *why, size_t why_len);
/* The tag given at claim for pid, copied into buf ("" when none). */
void abx__epp_execs_tag(abx_epp_execs *x, int pid, char *buf, size_t len);

#endif
