/* service_client.c: a host user without root reaches sandboxes through
 * the machine's abx service (`abx serve --socket`, DESIGN.md "Users
 * without root").
 *
 * Owns: when a client of the local provider goes through the service (this
 * process is not root, and the socket is there: $ABX_SOCKET, else
 * /run/abx/abx.sock), and the one-shot run through it (abx_run as a
 * create, an exec with this process's stdin, stdout and stderr, and a
 * kill). The protocol on the socket is abx serve's (lib/provider_e2b.c
 * speaks it); the service takes the caller's uid from the kernel, so the
 * client sends no secret and names no host path.
 */
#include "service_client.h"
#include "error_internal.h"
#include "provider.h"
#include "netlibs.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/mman.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define RUN_LIFETIME_S 120 /* a run's sandbox outlives a vanished client by at most this */
#define RUN_RENEW_S 30
#define SERVICE_BUILD_TIMEOUT_S                                                                              \
    86400L /* a build or import answers when it is done: minutes, for FROM debian */

bool abx_service_socket(char *out, size_t len)
{
    const char *env = getenv("ABX_SOCKET");
    bool named = env && *env;
    snprintf(out, len, "%s", named ? env : ABX_SERVICE_SOCKET);
    if (geteuid() == 0)
        return false;
    struct stat st;
    return named || (stat(out, &st) == 0 && S_ISSOCK(st.st_mode));
}

static size_t drop(char *data, size_t size, size_t n, void *ud)
{
    (void)data;
    (void)ud;
    return size * n;
}

bool abx_service_reachable(const char *socket_path)
{
    struct stat st;
    if (stat(socket_path, &st) < 0 || !S_ISSOCK(st.st_mode) || !abx__curl())
        return false;
    CURL *c = curl_easy_init();
    if (!c)
        return false;
    curl_easy_setopt(c, CURLOPT_URL, "http://localhost/health");
    curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_path);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 3L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop);
    long status = 0;
    bool ok = curl_easy_perform(c) == CURLE_OK &&
              curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 204;
    curl_easy_cleanup(c);
    return ok;
}

int abx__service_hint(int rc, abx_error **err)
{
    bool for_root = rc == -ABX_EPERM || rc == -ABX_ECGROUP || rc == -ABX_EHOSTSUPPORT || rc == -ABX_EJAIL;
    char sock[108];
    if (!for_root || geteuid() == 0 || abx_service_socket(sock, sizeof sock))
        return rc;
    return abx__error_wrap(
        err, rc,
        "no abx service here (%s): a user without root makes sandboxes through it (ask root "
        "for 'abx service install', or 'abx service start' without systemd)",
        sock);
}

/* ---- abx_run through the service ------------------------------------------------------------ */

typedef struct run_through {
    abx_sandbox *sandbox;
    int sigfd;         /* SIGINT, SIGTERM, SIGHUP: end the command */
    int signal_number; /* the one that came, or 0 */
    time_t renewed;    /* the sandbox's lifetime, last pushed on */
} run_through;

static void write_out(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* a closed stdout: the command runs on, as it would under a shell */
        data += n;
        len -= (size_t)n;
    }
}

static void to_stdout(const char *data, size_t len, void *ud)
{
    (void)ud;
    write_out(STDOUT_FILENO, data, len);
}

static void to_stderr(const char *data, size_t len, void *ud)
{
    (void)ud;
    write_out(STDERR_FILENO, data, len);
}

/* Polled by the exec: a stop signal ends the command; the sandbox's
 * lifetime is pushed on while it runs. */
static bool run_should_stop(void *ud)
{
    run_through *r = ud;
    struct signalfd_siginfo si;
    if (r->sigfd >= 0 && read(r->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        r->signal_number = (int)si.ssi_signo;
    time_t now = time(NULL);
    if (now - r->renewed >= RUN_RENEW_S) {
        r->renewed = now;
        abx_sandbox_set_timeout(r->sandbox, RUN_LIFETIME_S, NULL);
    }
    return r->signal_number != 0;
}

static void create_options_of(const abx_run_options *o, abx_create_options *co)
{
    memset(co, 0, sizeof *co);
    co->template_id = o->template_id;
    co->timeout_s = RUN_LIFETIME_S;
    co->envs = o->envs;
    co->cpu_count = o->limits.cpu_count;
    co->memory_mb = o->limits.memory_mb;
    co->network = o->network;
    co->allow_out = o->allow_out;
    co->deny_out = o->deny_out;
}

int abx__run_through_service(const abx_run_options *o, int *exit_status, abx_error **err)
{
    *exit_status = 125;
    if (o->limits.pids != ABX_DEFAULT_PIDS || o->limits.disk_mb != ABX_DEFAULT_DISK_MB)
        return abx__error_set(
            err, ABX_ENOTSUP,
            "--pids and --disk: through the abx service a sandbox has the defaults (%u tasks, "
            "%u MiB); leave them out",
            ABX_DEFAULT_PIDS, ABX_DEFAULT_DISK_MB);
    abx_client_options opts = {.provider = "local"};
    abx_client *c = NULL;
    int rc = abx_client_new(&opts, &c, err);
    abx_create_options co;
    create_options_of(o, &co);
    run_through r = {.sigfd = -1, .renewed = time(NULL)};
    if (rc == 0)
        rc = abx_sandbox_create(c, &co, &r.sandbox, err);
    if (rc < 0) {
        abx_client_free(c);
        return rc;
    }
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &old_mask);
    r.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    abx_exec_options eo = {.cwd = o->cwd,
                           .user = o->as_root ? "root" : "user",
                           .timeout_s = o->timeout_s,
                           .on_stdout = to_stdout,
                           .on_stderr = to_stderr,
                           .userdata = &r,
                           .should_cancel = run_should_stop,
                           .with_stdin = true,
                           .stdin_fd = STDIN_FILENO,
                           .default_cwd = "/app"};
    /* a terminal on both ends: the command gets one of its own, as abx run
     * gives it on the direct path; ours is raw meanwhile (Ctrl-C reaches it) */
    struct termios saved, raw;
    bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (terminal) {
        raw = saved;
        cfmakeraw(&raw);
        eo.pty = true;
        eo.pty_fd = STDIN_FILENO;
        terminal = tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
    }
    abx_exec_result res;
    memset(&res, 0, sizeof res);
    rc = abx_sandbox_exec_argv(r.sandbox, o->argv, &eo, &res, err);
    if (terminal)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
    if (rc == 0)
        *exit_status = res.exit_code;
    else if (rc == -ABX_ECANCELLED && r.signal_number) {
        abx_error_free(err ? *err : NULL);
        if (err)
            *err = NULL;
        *exit_status = 128 + r.signal_number;
        rc = 0;
    } else if (rc == -ABX_ECMDNOTFOUND)
        *exit_status = 127;
    else if (rc == -ABX_ENOEXEC)
        *exit_status = 126;
    if (o->timed_out)
        *o->timed_out = rc == 0 && res.timed_out;
    if (o->oom_killed)
        *o->oom_killed = false; /* the service does not say (yet): 137 is all the caller sees */
    abx_exec_result_clear(&res);
    abx_sandbox_kill(r.sandbox, NULL);
    abx_sandbox_free(r.sandbox);
    abx_client_free(c);
    if (r.sigfd >= 0)
        close(r.sigfd);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    return rc;
}

/* ---- templates through the service ------------------------------------------------------------ */

static bool name_plain(const char *name)
{
    return name && *name && strlen(name) < 64 &&
           strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(name);
}

/* The service's answer {info, events}: events replayed to on_event, info as text. */
static int build_answer(json_t *doc, const abx_template_build_options *o, char **info, abx_error **err)
{
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(doc, "events"), i, ev)
    {
        char *text = o->on_event ? json_dumps(ev, JSON_COMPACT) : NULL;
        if (text)
            o->on_event(text, o->userdata);
        free(text);
    }
    json_t *made = json_object_get(doc, "info");
    if (info && !(*info = json_dumps(json_is_object(made) ? made : json_object(), JSON_COMPACT)))
        return abx__error_set(err, ABX_ENOMEM, "template");
    return 0;
}

int abx__service_template_build(abx_client *c, const abx_template_build_options *o, char **info,
                                abx_error **err)
{
    if (o->builtin)
        return abx__error_set(err, ABX_ENOTALLOWED, "--builtin: the built-in templates are root's to build");
    if (!name_plain(o->name))
        return abx__error_set(err, ABX_EINVAL,
                              "template name '%.64s': lower-case letters, digits, '.', '_', '-'",
                              o->name ? o->name : "");
    json_t *args = json_array();
    for (size_t i = 0; o->build_args && o->build_args[i]; i++)
        json_array_append_new(args, json_string(o->build_args[i]));
    char *args_text = json_dumps(args, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(args);
    char header[8300];
    if (!args_text || strlen(args_text) > 8192) {
        free(args_text);
        return abx__error_set(err, ABX_ETOOBIG, "--build-arg: at most 8 KiB of them through the service");
    }
    snprintf(header, sizeof header, "X-Abx-Build-Args: %s", args_text);
    free(args_text);
    int fd = memfd_create("abx-context", MFD_CLOEXEC);
    int rc = fd < 0 ? abx__error_errno(err, ABX_ESYS, errno, "memfd_create")
                    : abx_template_pack_context(o->dockerfile, o->context, fd, err);
    char path[256];
    snprintf(path, sizeof path, "/abx/templates/build?name=%s%s%s%s", o->name,
             o->no_cache ? "&no_cache=1" : "", o->network ? "&network=" : "",
             o->network && name_plain(o->network) ? o->network : "");
    json_t *doc = NULL;
    if (rc == 0 && lseek(fd, 0, SEEK_SET) < 0)
        rc = abx__error_errno(err, ABX_ESYS, errno, "the packed context");
    if (rc == 0)
        rc = abx__provider_service_call(c, "POST", path, fd, header, SERVICE_BUILD_TIMEOUT_S, &doc, err);
    if (fd >= 0)
        close(fd);
    if (rc == 0)
        rc = build_answer(doc, o, info, err);
    json_decref(doc);
    return rc;
}

int abx__service_template_import(abx_client *c, const char *name, const char *source, char **info,
                                 abx_error **err)
{
    if (!name_plain(name))
        return abx__error_set(err, ABX_EINVAL,
                              "template name '%.64s': lower-case letters, digits, '.', '_', '-'",
                              name ? name : "");
    int fd = open(source, O_RDONLY | O_CLOEXEC | O_NOCTTY); /* this user's rights, never the service's */
    struct stat st;
    if (fd < 0)
        return abx__error_set(err, ABX_EIO, "cannot open %s: %s", source, strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return abx__error_set(err, ABX_ENOTSUP,
                              "%s: through the abx service a template is imported from a root filesystem "
                              "archive (docker export, .tar[.gz|.zst]); an OCI layout directory is root's",
                              source);
    }
    char path[160];
    snprintf(path, sizeof path, "/abx/templates/import?name=%s", name);
    json_t *doc = NULL;
    int rc = abx__provider_service_call(c, "POST", path, fd, NULL, SERVICE_BUILD_TIMEOUT_S, &doc, err);
    close(fd);
    if (rc == 0 && info && !(*info = json_dumps(json_object_get(doc, "info") ?: json_object(), JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "template");
    json_decref(doc);
    return rc;
}

int abx__service_template_call(abx_client *c, const char *method, const char *name, char **json,
                               abx_error **err)
{
    if (!name_plain(name))
        return abx__error_set(err, ABX_EINVAL, "template %.64s: no such template (abx template list)",
                              name ? name : "");
    bool force = strcmp(method, "DELETE-FORCE") == 0;
    char path[160];
    snprintf(path, sizeof path, "/abx/templates/%s%s", name, force ? "?force=1" : "");
    json_t *doc = NULL;
    int rc = abx__provider_service_call(c, force ? "DELETE" : method, path, -1, NULL, 0, &doc, err);
    if (rc == 0 && json && !(*json = json_dumps(doc ? doc : json_object(), JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "template");
    json_decref(doc);
    return rc;
}

/* ---- TCP to a sandbox's port through the service (abx expose) ---------------------------------- */

/* The answer's head, read one byte at a time so that nothing after it (what
 * the sandbox's server says first) is taken from the stream. */
static int read_head(int fd, char *head, size_t len)
{
    size_t n = 0;
    while (n + 1 < len) {
        ssize_t got = read(fd, head + n, 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        n++;
        head[n] = '\0';
        if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
            return 0;
    }
    return -1;
}

int abx__service_tunnel(const char *socket_path, const char *id, unsigned port, int *out, abx_error **err)
{
    *out = -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return abx__error_set(err, ABX_ESERVICE, "the abx service at %s is not reachable (not running)",
                              socket_path);
    }
    char req[512], head[8192];
    snprintf(req, sizeof req,
             "GET /abx/tunnel?sandbox=%s&port=%u HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\n"
             "Upgrade: abx-tcp\r\nX-Abx-Peer: 1\r\n\r\n",
             id, port);
    struct timeval tv = {.tv_sec = 30};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (abx__write_all_nosigpipe(fd, req, strlen(req)) < 0 || read_head(fd, head, sizeof head) < 0) {
        close(fd);
        return abx__error_set(err, ABX_ESERVICE, "the abx service at %s did not answer", socket_path);
    }
    if (strncmp(head, "HTTP/1.1 101", 12) != 0) {
        const char *m = strstr(head, "\r\n\r\n"); /* an error's body follows: read what came */
        char body[1024] = "";
        ssize_t got = m ? read(fd, body, sizeof body - 1) : -1;
        close(fd);
        unsigned code = 0;
        const char *msg = got > 0 ? strstr(body, "\"message\":") : NULL;
        if (msg && sscanf(msg, "\"message\": \"E%4u: ", &code) != 1)
            sscanf(msg, "\"message\":\"E%4u: ", &code);
        return code > 8000 && code < 9000
                   ? abx__error_set(err, (int)code, "port %u: %s", port, abx_strerror((int)code))
                   : abx__error_set(err, ABX_EPROVIDER, "port %u: the service refused", port);
    }
    tv.tv_sec = 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    *out = fd;
    return 0;
}
