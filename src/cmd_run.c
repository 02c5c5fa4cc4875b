/* cmd_run.c: `abx run`, a one-shot sandbox (create, run, destroy).
 * Owns the flags of the verb; the work is abx_run() in libabx. */
#include "cli.h"
#include "parse.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUN_ENVS 256

const char cmd_run_help[] =
    "Usage: abx run [FLAGS] -- CMD [ARG...]\n"
    "\n"
    "Runs CMD in a fresh sandbox on the local provider and destroys the sandbox\n"
    "when CMD exits (like `docker run --rm`). stdin, stdout and stderr pass\n"
    "through. The exit status is CMD's: 128+N if a signal N ended it, 124 if\n"
    "--timeout killed it, 125 if the sandbox could not be made, 126 if CMD is\n"
    "not executable, 127 if CMD does not exist inside.\n"
    "\n"
    "Flags:\n"
    "  --memory MB     memory limit, 16-1048576 (default 512)\n"
    "  --cpu N         CPU quota in CPUs, 1-1024 (default 1)\n"
    "  --pids N        process limit, 8-4194304 (default 256)\n"
    "  --disk MB       size of the writable layer, 1-1048576 (default 256;\n"
    "                  it is memory-backed and counts against --memory)\n"
    "  --timeout S     kill the sandbox after S seconds, 1-" ABX_STRINGIFY(
        ABX_TIMEOUT_MAX_S) " (default: none)\n"
                           "  --env K=V       set an environment variable inside (repeatable); nothing\n"
                           "                  of the caller's environment is passed but TERM\n"
                           "  --template T    a template's root filesystem (abx template list) instead\n"
                           "                  of the host's /usr, with its ENV and WORKDIR; needs root\n"
                           "  --cwd DIR       working directory inside (default: the template's\n"
                           "                  WORKDIR, else /app)\n"
                           "  --user U        root or user (default user, uid 1000); both are\n"
                           "                  unprivileged on the host\n"
                           "  --network M     none (default; config.toml [network] default), internet\n"
                           "                  (public addresses less --deny-out) or allowlist (only\n"
                           "                  --allow-out); needs root (docs/network.md)\n"
                           "  --allow-out X   an address, CIDR, domain or *.domain it may reach "
                           "(repeatable)\n"
                           "  --deny-out X    one it may not (repeatable)\n"
                           "  --json          errors as JSON on stderr\n"
                           "  -h, --help      this help\n"
                           "\n"
                           "Inside: the host's /usr read-only, a curated /etc, writable /app,\n"
                           "/home/user and /tmp, a fresh /proc, a minimal /dev, loopback only unless\n"
                           "--network or a list gives it a policed network,\n"
                           "hostname = sandbox id. Errors print one line: code, message, hint.\n"
                           "\n"
                           "Example:\n"
                           "  abx run --memory 256 --timeout 10 -- python3 -c 'print(42)'\n";

typedef struct run_flags {
    abx_run_options opts;
    const char *envs[MAX_RUN_ENVS + 1];
    int nenvs;
    const char *allow[4097], *deny[4097];
    size_t nallow, ndeny;
} run_flags;

static int take_uint(cli_ctx *ctx, const char *flag, const char *value, unsigned min, unsigned max,
                     unsigned *out)
{
    if (abx__parse_uint(value, min, max, out) < 0) {
        cli_fail(ctx, ABX_EINVAL, "%s: expected a whole number from %u to %u", flag, min, max);
        return -1;
    }
    return 0;
}

/* Parses one flag at argv[*i]. Returns 1 if consumed, 0 if argv[*i] is not
 * a flag of this verb, -1 after printing an error. */
static int take_run_flag(cli_ctx *ctx, run_flags *f, int argc, char **argv, int *i)
{
    const char *v;
    int rc;
    static const struct {
        const char *name;
        unsigned min, max;
        size_t offset;
    } numeric[] = {
        {"--memory", 16, 1048576, offsetof(abx_run_options, limits.memory_mb)},
        {"--cpu", 1, 1024, offsetof(abx_run_options, limits.cpu_count)},
        {"--pids", 8, 4194304, offsetof(abx_run_options, limits.pids)},
        {"--disk", 1, 1048576, offsetof(abx_run_options, limits.disk_mb)},
        {"--timeout", ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, offsetof(abx_run_options, timeout_s)},
    };
    for (size_t k = 0; k < sizeof numeric / sizeof numeric[0]; k++) {
        rc = cli_take_value(ctx, argc, argv, i, numeric[k].name, &v);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            unsigned *field = (unsigned *)((char *)&f->opts + numeric[k].offset);
            return take_uint(ctx, numeric[k].name, v, numeric[k].min, numeric[k].max, field) < 0 ? -1 : 1;
        }
    }
    if ((rc = cli_take_value(ctx, argc, argv, i, "--env", &v)) != 0) {
        if (rc < 0)
            return -1;
        size_t key_len;
        if (abx__parse_env_pair(v, &key_len) < 0) {
            cli_fail(ctx, ABX_EINVAL, "--env: expected KEY=VALUE with KEY of [A-Za-z_][A-Za-z0-9_]*");
            return -1;
        }
        if (f->nenvs >= MAX_RUN_ENVS) {
            cli_fail(ctx, ABX_EINVAL, "--env: at most %d variables", MAX_RUN_ENVS);
            return -1;
        }
        f->envs[f->nenvs++] = v;
        return 1;
    }
    if ((rc = cli_take_value(ctx, argc, argv, i, "--template", &v)) != 0) {
        f->opts.template_id = v;
        return rc;
    }
    if ((rc = cli_take_value(ctx, argc, argv, i, "--network", &v)) != 0) {
        f->opts.network = v;
        return rc;
    }
    const char **lists[] = {f->allow, f->deny};
    size_t *counts[] = {&f->nallow, &f->ndeny};
    const char *names[] = {"--allow-out", "--deny-out"};
    for (size_t l = 0; l < 2; l++) {
        if ((rc = cli_take_value(ctx, argc, argv, i, names[l], &v)) == 0)
            continue;
        if (rc > 0 && *counts[l] >= 4096) {
            cli_fail(ctx, ABX_EINVAL, "%s: at most 4096 entries", names[l]);
            return -1;
        }
        if (rc > 0)
            lists[l][(*counts[l])++] = v;
        return rc;
    }
    if ((rc = cli_take_value(ctx, argc, argv, i, "--cwd", &v)) != 0) {
        if (rc > 0 && v[0] != '/') {
            cli_fail(ctx, ABX_EINVAL, "--cwd: expected an absolute path inside the sandbox");
            return -1;
        }
        f->opts.cwd = v;
        return rc;
    }
    if ((rc = cli_take_value(ctx, argc, argv, i, "--user", &v)) != 0) {
        if (rc < 0)
            return -1;
        if (strcmp(v, "root") != 0 && strcmp(v, "user") != 0) {
            cli_fail(ctx, ABX_EINVAL, "--user: expected 'root' or 'user'");
            return -1;
        }
        f->opts.as_root = strcmp(v, "root") == 0;
        return 1;
    }
    return 0;
}

int cmd_run(cli_ctx *ctx, int argc, char **argv)
{
    run_flags f;
    memset(&f, 0, sizeof f);
    abx_limits_default(&f.opts.limits);
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (cli_is_help(arg)) {
            fputs(cmd_run_help, stdout);
            return 0;
        }
        if (arg[0] != '-')
            break; /* the command starts here */
        int rc = cli_take_global(ctx, argc, argv, &i);
        if (rc == 0)
            rc = take_run_flag(ctx, &f, argc, argv, &i);
        if (rc < 0)
            return CLI_EXIT_FAILED;
        if (rc == 0) {
            cli_fail(ctx, ABX_EUSAGE, "unknown flag '%.64s' for 'abx run'", arg);
            return CLI_EXIT_FAILED;
        }
    }
    if (i >= argc) {
        cli_fail(ctx, ABX_EUSAGE, "abx run needs a command: abx run [FLAGS] -- CMD [ARG...]");
        return CLI_EXIT_FAILED;
    }
    /* One-shot sandboxes exist only on the local provider. */
    if (ctx->provider && strcmp(ctx->provider, "local") != 0) {
        cli_fail(ctx, ABX_EPROVIDER, "abx run supports only the local provider");
        return CLI_EXIT_FAILED;
    }
    f.envs[f.nenvs] = NULL;
    f.opts.envs = f.envs;
    f.opts.allow_out = f.allow;
    f.opts.deny_out = f.deny;
    f.opts.argv = (const char *const *)&argv[i];
    int status = 0;
    bool timed_out = false, oom_killed = false;
    f.opts.timed_out = &timed_out;
    f.opts.oom_killed = &oom_killed;
    abx_error *err = NULL;
    int rc = abx_run(&f.opts, &status, &err);
    if (rc < 0)
        cli_fail_error(ctx, err, rc);
    /* an ending the command did not choose is said, once, on stderr */
    else if (timed_out)
        fprintf(stderr,
                "abx: %s: the command ran past --timeout (%u s) and the sandbox was killed (exit 124)\n",
                abx_err_name(ABX_ETIMEOUT), f.opts.timeout_s);
    else if (oom_killed)
        fprintf(stderr,
                "abx: a process inside was killed by the memory limit (--memory %u MB): raise --memory or "
                "use less\n",
                f.opts.limits.memory_mb);
    return status;
}
