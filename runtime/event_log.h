/* event_log.h: the host's event log (runtime/event_log.c): what happened
 * to the sandboxes of one ABX_HOME (created, killed, timed out, paused,
 * resumed, network changed, OOM kills, supervisors that died, quota
 * refusals), one JSON object per line, numbered.
 *
 * On disk, in $ABX_HOME/events/ (0700): `current.jsonl`, `previous.jsonl`
 * (the one before, when current grew past ABX_EVENT_FILE_MAX: so the log
 * holds at most twice that) and `seq` (the next number; its flock orders
 * the writers of every process: libabx's callers and the shims). Every
 * line begins `{"seq":N,"time":"...",` so a reader skips old lines without
 * parsing them.
 *
 * Ownership: append takes the event; read hands each event to the caller's
 * function, which keeps what it wants (a reference of its own).
 */
#ifndef ABX_EVENT_LOG_H
#define ABX_EVENT_LOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_EVENT_FILE_MAX (1u << 20) /* bytes of one file: the log is at most two */
#define ABX_EVENT_LINE_MAX 4096       /* an event longer than this is dropped */

/* Appends event (taken; an object with "type") under home, numbered and
 * timed now. Best effort: 0, or -1 when it could not be written (the
 * operation it records goes on regardless). */
int abx__event_log_append(const char *home, json_t *event);

/* each(event, ud) for every event numbered over after, oldest first,
 * until each returns false. *last: the number of the last event given to
 * each (after when none). 0, or -1 when there is no log to read. */
typedef bool (*abx_event_each)(json_t *event, unsigned long long seq, void *ud);
int abx__event_log_read(const char *home, unsigned long long after, abx_event_each each, void *ud,
                        unsigned long long *last);

/* An event of the sandbox whose state directory (HOME/sandboxes/ID) is
 * state_dir, appended to HOME's log: type, "sandbox_id" local:ID, its
 * "tenant" (the directory's tenant file) and detail's members (taken; may
 * be NULL). Best effort, as append. */
void abx__event_log_sandbox(const char *state_dir, const char *type, json_t *detail);

/* The ABX_HOME of a sandbox's state directory (HOME/sandboxes/ID). 0 or -1. */
int abx__event_log_home_of(const char *state_dir, char *out, size_t len);

#endif
