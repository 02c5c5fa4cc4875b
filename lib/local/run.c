/* run.c: abx_run(), the one-shot sandbox (create, run, destroy).
 *
 * Owns: validating abx_run_options, the sandbox's environment (a fixed,
 * minimal set plus the caller's --env pairs: nothing of the caller's own
 * environment crosses except TERM), and the supervisor's wait loop: signals
 * are forwarded to the sandbox, the timeout kills it, and the command's
 * status is returned. Does not own isolation (runtime/jail.c).
 */
#include "abx/abx.h"
#include "error_internal.h"
#include "config.h"
#include "jail.h"
#include "net.h"
#include "net_filter.h"
#include "netpolicy.h"
#include "parse.h"
#include "sandbox_env.h"
#include "sandbox_id.h"
#include "service_client.h"
#include "state.h"
#include "template_build.h"
#include "template_store.h"
#include "tty_relay.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

void abx_limits_default(abx_limits *limits)
{
    limits->memory_mb = ABX_DEFAULT_MEMORY_MB;
    limits->cpu_count = ABX_DEFAULT_CPU_COUNT;
    limits->pids = ABX_DEFAULT_PIDS;
    limits->disk_mb = ABX_DEFAULT_DISK_MB;
}

static int validate(const abx_run_options *o, abx_error **err)
{
    if (!o || !o->argv || !o->argv[0] || !o->argv[0][0])
        return abx__error_set(err, ABX_EINVAL, "command: a command to run is required");
    const abx_limits *l = &o->limits;
    if (!l->memory_mb || !l->cpu_count || !l->pids || !l->disk_mb)
        return abx__error_set(err, ABX_EINVAL, "limits: every limit must be set (abx_limits_default)");
    int rc = abx_limits_check(l, err);
    if (rc < 0)
        return rc;
    if (o->timeout_s > ABX_TIMEOUT_MAX_S)
        return abx__error_set(err, ABX_EINVAL, "timeout: must be from %d to %d seconds", ABX_TIMEOUT_MIN_S,
                              ABX_TIMEOUT_MAX_S);
    if (o->cwd && o->cwd[0] != '/')
        return abx__error_set(err, ABX_EINVAL, "cwd: must be an absolute path inside the sandbox");
    return 0;
}

/* Waits for init while forwarding signals and enforcing the timeout.
 * Returns the command's status as a shell reports it. */
static int supervise(abx_jail *jail, int sigfd, unsigned timeout_s, abx_tty_relay *tty)
{
    int timerfd = -1;
    if (timeout_s > 0) {
        timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec its = {.it_value = {.tv_sec = (time_t)timeout_s}};
        if (timerfd >= 0)
            timerfd_settime(timerfd, 0, &its, NULL);
    }
    bool timed_out = false;
    for (;;) {
        struct pollfd pfd[5] = {{.fd = sigfd, .events = POLLIN}, {.fd = timerfd, .events = POLLIN}};
        int relay[3];
        int nrelay = abx__tty_relay_fds(tty, relay);
        for (int i = 0; i < nrelay; i++)
            pfd[2 + i] = (struct pollfd){.fd = relay[i], .events = POLLIN};
        if (poll(pfd, (nfds_t)(2 + nrelay), -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < nrelay; i++)
            if (pfd[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
                abx__tty_relay_ready(tty, relay[i]);
        if (timerfd >= 0 && (pfd[1].revents & POLLIN)) {
            kill(jail->init_pid, SIGKILL);
            timed_out = true;
            close(timerfd);
            timerfd = -1;
        }
        if (!(pfd[0].revents & POLLIN))
            continue;
        struct signalfd_siginfo si;
        if (read(sigfd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo == SIGWINCH) {
            abx__tty_relay_resize(tty);
            continue;
        }
        if (si.ssi_signo != SIGCHLD) {
            kill(jail->init_pid, (int)si.ssi_signo);
            continue;
        }
        int status;
        if (waitpid(jail->init_pid, &status, WNOHANG) == jail->init_pid) {
            jail->reaped = true;
            jail->init_status = status;
            break;
        }
    }
    if (timerfd >= 0)
        close(timerfd);
    if (!jail->reaped)
        abx__jail_destroy(jail);
    return timed_out ? 124 : abx__jail_exit_code(jail->init_status);
}

/* The one-shot sandbox's network: made before init builds anything, so
 * that the command starts with it and its resolv.conf names the resolver. */
typedef struct run_network {
    const char *id;
    json_t *policy; /* normal form */
    abx_net *net;
} run_network;

static int network_before_go(void *ctx, pid_t init_pid, char *resolv, size_t len, abx_error **err)
{
    run_network *r = ctx;
    int rc = abx__net_up(r->id, init_pid, NULL, r->policy, &r->net, err);
    if (rc == 0)
        abx__net_resolv_conf(r->net, resolv, len);
    return rc;
}

static int network_policy(const abx_run_options *opts, json_t **policy, abx_error **err)
{
    char default_mode[32], pool[32];
    int rc = abx__config_network_default(default_mode, sizeof default_mode, err);
    if (rc == 0)
        rc = abx__net_policy_build(opts->network, opts->allow_out, opts->deny_out, default_mode, policy, err);
    if (rc == 0 && (rc = abx__config_net_walls(*policy, abx__netf_pool_cidr(pool), err)) < 0) {
        json_decref(*policy);
        *policy = NULL;
    }
    return rc;
}

/* The template's tree, WORKDIR and environment (its ENV under the
 * caller's --env pairs); tree stays "" for the host's view. */
static int run_template(const abx_run_options *opts, char *tree, size_t len, char *workdir, size_t wlen,
                        abx_sandbox_env *env, const char *id, abx_error **err)
{
    const char *name = opts->template_id;
    int rc = 0;
    if (name && strcmp(name, "base") != 0) {
        if ((rc = abx__template_ensure_builtin(name, err)) < 0)
            return rc;
        if (abx__template_root(name, tree, len) < 0) {
            if (!abx__template_builtin(name))
                return abx__error_set(err, ABX_EINVAL, "template %.64s: unknown ('abx template list')", name);
            tree[0] = '\0'; /* code-interpreter-v1 unbuilt and not to be built: the host's view */
        }
    }
    json_t *config = tree[0] ? abx__template_config(name) : NULL;
    const char *wd = json_string_value(json_object_get(config, "workdir"));
    snprintf(workdir, wlen, "%s", wd && wd[0] == '/' ? wd : "");
    if ((rc = abx__sandbox_env_init(env, id, opts->as_root, NULL, err)) < 0) {
        json_decref(config);
        return rc;
    }
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(config, "env"), k, v)
    {
        char pair[8192];
        snprintf(pair, sizeof pair, "%s=%s", k, json_string_value(v) ? json_string_value(v) : "");
        abx__sandbox_env_put(env, pair, NULL);
    }
    json_decref(config);
    for (size_t i = 0; rc == 0 && opts->envs && opts->envs[i]; i++)
        rc = abx__sandbox_env_put(env, opts->envs[i], err);
    if (rc < 0)
        abx__sandbox_env_free(env);
    return rc;
}

static int run_here(const abx_run_options *opts, int *exit_status, abx_error **err)
{
    *exit_status = 125;
    int rc = validate(opts, err);
    if (rc < 0)
        return rc;
    char service[108];
    if (abx_service_socket(service, sizeof service))
        return abx__run_through_service(opts, exit_status, err);
    abx__state_reconcile_due(); /* stale cgroups of crashed runs, now and then: not a sweep per run */
    char id[ABX_SANDBOX_ID_LEN + 1];
    if ((rc = abx__sandbox_id_new(id)) < 0)
        return abx__error_set(err, ABX_ESYS, "no randomness for the sandbox id");
    run_network network = {.id = id};
    if ((rc = network_policy(opts, &network.policy, err)) < 0)
        return rc;
    bool networked = strcmp(abx__net_policy_mode(network.policy), "none") != 0;
    char tree[4096] = "", workdir[256] = "";
    abx_sandbox_env env;
    if ((rc = run_template(opts, tree, sizeof tree, workdir, sizeof workdir, &env, id, err)) < 0) {
        json_decref(network.policy);
        return rc;
    }

    sigset_t mask, old_mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGWINCH);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sigfd < 0) {
        rc = abx__error_errno(err, ABX_ESYS, errno, "signalfd");
        goto out;
    }
    abx_tty_relay tty;
    if ((rc = abx__tty_relay_begin(&tty, err)) < 0) {
        abx__tty_relay_end(&tty);
        goto out_sigfd;
    }
    abx_jail_config cfg = {
        .id = id,
        .limits = opts->limits,
        .argv = opts->argv,
        .envp = env.vars,
        .cwd = opts->cwd    ? opts->cwd
               : workdir[0] ? workdir
                            : "/app",
        .as_root = opts->as_root,
        .terminal = tty.pty,
        .template_root = tree[0] ? tree : NULL,
        .root_caps = tree[0] != '\0',
        .before_go = networked ? network_before_go : NULL,
        .before_go_ctx = &network,
    };
    abx_jail jail;
    rc = abx__jail_start(&cfg, &jail, err);
    abx__tty_relay_started(&tty); /* our own fds back, whatever happened */
    if (rc < 0) {
        abx__net_down(network.net); /* made, then the start failed after it */
        abx__tty_relay_end(&tty);
        goto out_sigfd;
    }
    if ((rc = abx__jail_wait_started(&jail, exit_status, err)) < 0) {
        abx__net_down(network.net);
        abx__jail_destroy(&jail);
        abx__tty_relay_end(&tty);
        goto out_sigfd;
    }
    *exit_status = supervise(&jail, sigfd, opts->timeout_s, &tty);
    if (opts->timed_out)
        *opts->timed_out = opts->timeout_s && *exit_status == 124;
    if (opts->oom_killed)
        *opts->oom_killed = abx__cgroup_oom_killed(&jail.cgroup);
    abx__net_down(network.net);
    abx__jail_destroy(&jail);
    abx__tty_relay_end(&tty);
out_sigfd:
    close(sigfd);
out:
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    abx__sandbox_env_free(&env);
    json_decref(network.policy);
    return rc;
}

int abx_run(const abx_run_options *opts, int *exit_status, abx_error **err)
{
    return abx__service_hint(run_here(opts, exit_status, err), err);
}
