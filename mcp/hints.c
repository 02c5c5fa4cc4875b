/* hints.c: the MCP server's hint for each error code (hints.h).
 *
 * Owns the one table saying, per E8xxx code, what a model should do next
 * with the tools it has. The CLI's hints (abx_errors.def) name CLI verbs
 * and flags that a model cannot run; these name tools and arguments, or,
 * where no argument can help (the host, the server's own configuration),
 * say to tell the user. tests/unit/test-mcp-text.c checks that every code
 * has one and that none names a CLI verb.
 */
#include "hints.h"
#include "abx/abx.h"

#include <stddef.h>

typedef struct mcp_hint_row {
    int code;
    const char *hint;
} mcp_hint_row;

#define TELL_USER " No argument changes it: tell the user."

static const mcp_hint_row rows[] = {
    {ABX_EINVAL, "Fix the argument named in field as the message says; the tool's inputSchema gives every "
                 "argument's type and range."},
    {ABX_ENOTFOUND, "list_sandboxes shows the live sandboxes; omit sandbox_id to use (or create) the default "
                    "one. The id may have timed out or been killed."},
    {ABX_ENOMEM,
     "The server's host is out of memory: kill sandboxes you no longer need (kill_sandbox), or ask "
     "for less memory in create_sandbox, then retry."},
    {ABX_ENOTSUP, "This server's provider cannot do this operation: do without it, or use another provider "
                  "(create_sandbox provider)."},
    {ABX_ETIMEOUT, "Raise the call's timeout argument or make the work finish sooner; run long work with "
                   "start_background_task and poll it with get_background_task."},
    {ABX_EHOSTSUPPORT, "The machine running the server cannot isolate sandboxes (namespaces or seccomp are "
                       "missing)." TELL_USER},
    {ABX_ECGROUP, "The server could not limit a sandbox's resources on its machine." TELL_USER},
    {ABX_EJAIL, "The sandbox could not be built on the server's machine: retry once; if it fails again, tell "
                "the user (the server's log names the failing step)."},
    {ABX_ECMDNOTFOUND,
     "The program is not installed in the sandbox: install it with run_command (user \"root\" "
     "for apt-get; pip and npm work as the user), or call it by a path that exists inside."},
    {ABX_EPERM, "The sandbox's user may not do this: run system changes with run_command or "
                "start_background_task and user \"root\", or work under /app, /home/user or /tmp."},
    {ABX_EPLUGINCHANGED, "The server's provider plugin changed since it was installed." TELL_USER},
    {ABX_EIO, "Reading or writing failed: check the path and free space (run_command: df -h), then retry."},
    {ABX_ESYS, "Retry the call; if it fails again, tell the user (the server's log has the detail)."},
    {ABX_EUSAGE, "Call one of the tools tools/list names, with the arguments of its inputSchema."},
    {ABX_EPROVIDER, "The provider is unavailable: omit provider to use the server's own, or retry later."},
    {ABX_ENOTRUNNING,
     "The sandbox ended (timed out or killed) and cannot be revived: omit sandbox_id to get a "
     "new default sandbox, or call create_sandbox."},
    {ABX_EPATHOUTSIDE, "Use an absolute path inside the sandbox (under /app, /home/user or /tmp); '..' and "
                       "symlinks cannot leave it."},
    {ABX_ETOOBIG,
     "Send or ask for less than the limit the message names: read a file in parts with read_file "
     "offset and length, split data across several calls, or save large output to a file."},
    {ABX_EISDIR, "Name a regular file; list_files lists a directory."},
    {ABX_EAUTH, "The server's credentials for its provider were refused." TELL_USER},
    {ABX_ECONFIG, "The server's configuration is invalid (the message names the setting)." TELL_USER},
    {ABX_ELIMIT, "Kill sandboxes you no longer need (list_sandboxes, kill_sandbox) or stop background tasks "
                 "(stop_background_task), then retry."},
    {ABX_ENOENT, "Check the path with list_files; a relative path is relative to /home/user."},
    {ABX_ECANCELLED, "The request was cancelled; call the tool again if the work is still wanted."},
    {ABX_EUNSAFEHOME, "The server's state directory is not safe to use." TELL_USER},
    {ABX_ENOTASK, "Use a task_id that start_background_task returned, with the same sandbox_id."},
    {ABX_EROFS,
     "Write under /app, /home/user or /tmp: the system directories of this sandbox are read-only."},
    {ABX_ENOEXEC, "Make the file executable (run_command: chmod +x FILE) or run it through its interpreter "
                  "(sh FILE, python3 FILE)."},
    {ABX_EBUILD, "A template build step failed; the message has its output."},
    {ABX_EQUOTA, "This account's sandbox quota (the operator's [limits] sandboxes_per_tenant) is reached: "
                 "kill sandboxes you no longer need (list_sandboxes, kill_sandbox) and retry, or ask the "
                 "user to raise it."},
    {ABX_ENETPOLICY, "Ask for public addresses or domain names in network.allow_out: the server's host, its "
                     "private ranges and metadata addresses stay closed unless its operator opens them."},
    {ABX_ESERVICE, "The server cannot reach its machine's abx service." TELL_USER},
    {ABX_ENOTALLOWED, "The server's operator does not allow this: ask for what it allows (fewer resources, "
                      "another network mode), or tell the user."},
    {ABX_EBUSY, "Something still uses it (a volume a sandbox mounts): kill that sandbox first, or tell the "
                "user."},
};

const char *mcp_hint(int code)
{
    if (code < 0)
        code = -code;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].code == code)
            return rows[i].hint;
    return "Retry the call; if it fails again, tell the user.";
}
