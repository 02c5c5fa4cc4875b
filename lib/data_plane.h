/* data_plane.h: a sandbox's data plane (its processes and files), the
 * second table of the provider seam (provider.h holds the control plane).
 * A provider chooses one per sandbox when it makes the handle
 * (abx_sandbox.data), and abx.h's process and file calls check their
 * arguments once (lib/sandbox_envd.c) and go through it:
 *
 *   abx__data_shim    envd's protocol to abx's own shim (the local
 *                     provider): background output from the shim's rings
 *   abx__data_envd    envd's protocol to any other envd (E2B hosts, plugins
 *                     that hand over an envd URL): background tasks
 *                     followed by this process (lib/epp_exec.c's table)
 *   abx__data_plugin  an exec plugin's own methods (lib/provider_epp.c:
 *                     exec.*, process.*, files.*), for a sandbox without envd
 *
 * A slot left NULL is E8004 (the plane cannot).
 */
#ifndef ABX_DATA_PLANE_H
#define ABX_DATA_PLANE_H

#include "abx/abx.h"
#include "envd_client.h"

#include <jansson.h>
#include <stdbool.h>

typedef struct abx_data_plane {
    const char *name;
    bool code_interpreter;     /* /execute and /contexts: run_code */
    bool tasks_outlive_client; /* background tasks and their output stay with the sandbox */
    /* A command, either argv (no shell) or a shell command line (argv NULL). */
    int (*exec)(abx_sandbox *s, const char *const *argv, const char *command, const abx_exec_options *o,
                abx_exec_result *out, abx_error **err);
    int (*start)(abx_sandbox *s, const char *const *argv, const char *command, const abx_exec_options *o,
                 int *pid, abx_error **err);
    int (*read_output)(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                       unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                       abx_error **err);
    int (*signal)(abx_sandbox *s, int pid, int signal_number, abx_error **err);
    /* Bytes to the process's stdin; eof: then its end. */
    int (*send_input)(abx_sandbox *s, int pid, const void *data, size_t len, bool eof, abx_error **err);
    int (*pty_resize)(abx_sandbox *s, int pid, unsigned rows, unsigned cols, abx_error **err);
    int (*list_processes)(abx_sandbox *s, char **json, abx_error **err);
    /* Files: what fn gives into path (size -1: unknown); (a range of) path
     * into fn; envd's filesystem.Filesystem calls (req taken, *resp the
     * caller's). user is "root", "user" or NULL (the sandbox's default). */
    int (*upload)(abx_sandbox *s, const char *path, const char *user, abx_envd_read_fn fn, void *ud,
                  long long size, abx_error **err);
    int (*download)(abx_sandbox *s, const char *path, const char *user, abx_envd_range *range,
                    abx_envd_write_fn fn, void *ud, abx_error **err);
    int (*fs)(abx_sandbox *s, const char *method, const char *user, json_t *req, json_t **resp,
              abx_error **err);
} abx_data_plane;

extern const abx_data_plane abx__data_shim;
extern const abx_data_plane abx__data_envd;
extern const abx_data_plane abx__data_plugin;

/* Background output this process follows (the provider's task table,
 * lib/epp_exec.c): the read_output of abx__data_envd and abx__data_plugin. */
int abx__data_followed_output(abx_sandbox *s, int pid, unsigned long long stdout_offset,
                              unsigned long long stderr_offset, unsigned wait_ms, abx_process_output *out,
                              abx_error **err);
/* argv as one shell command line, each word single-quoted (the caller frees). */
char *abx__quoted_command(const char *const *argv);

#endif
