/* cmd_service.c: `abx service`: the abx service (`abx serve --socket`),
 * through which every user of the machine makes sandboxes without root.
 *
 * Owns: running it detached where there is no systemd (start: a child
 * in its own session, its pid in a pid file, its output in a log, ready
 * when the socket answers; stop: SIGTERM, then SIGKILL after 10 s; its
 * sandboxes live on), status, and installing it for systemd (the units
 * abx.socket and abx.service, a tmpfiles entry for /run/abx, the group
 * abx), into --destdir for packaging. The service itself is serve/.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PID_FILE "/run/abx/abx.pid"
#define DEFAULT_LOG_FILE "/run/abx/service.log"
#define READY_WAIT_MS 15000
#define STOP_WAIT_MS 10000

const char cmd_service_help[] =
    "Usage: abx service start [--socket PATH] [--pid-file F] [--log F] [--warm N]\n"
    "       abx service stop [--pid-file F]\n"
    "       abx service status [--socket PATH] [--pid-file F] [--json]\n"
    "       abx service install [--destdir D] [--bindir DIR] [--no-start]\n"
    "       abx service uninstall [--destdir D]\n"
    "\n"
    "The abx service is `abx serve --socket /run/abx/abx.sock` run as root:\n"
    "every user of the machine without root makes sandboxes through it, each\n"
    "user a tenant who sees and touches only their own, with the machine's\n"
    "whole isolation. A non-root abx (CLI, `abx mcp start`, libabx, the\n"
    "Python SDK) uses it by itself when the socket exists ($ABX_SOCKET names\n"
    "another). Who may connect and what they may ask for is the operator's\n"
    "/etc/abx/config.toml [service]: allow_groups (default abx; root always),\n"
    "admin_groups (may list and kill everyone's: abx list --all),\n"
    "network_modes (default none, allowlist, internet), template_builds.\n"
    "\n"
    "  start      run it detached (where there is no systemd): returns once the\n"
    "             socket answers; its output goes to --log (default\n"
    "             " DEFAULT_LOG_FILE "), its pid to --pid-file (default\n"
    "             " DEFAULT_PID_FILE ")\n"
    "  stop       end it (SIGTERM; SIGKILL after 10 s): its sandboxes live on\n"
    "             until their timeout, and a started service finds them again\n"
    "  status     whether it runs and answers (exit 0 when it answers, 1 when not)\n"
    "  install    the systemd units abx.socket (socket activation) and\n"
    "             abx.service, a tmpfiles entry for /run/abx and the group abx;\n"
    "             with systemd running, enables and starts abx.socket (not with\n"
    "             --no-start). --destdir writes them under D for a package;\n"
    "             --bindir is where abx is installed (default: this abx's)\n"
    "  uninstall  stops it and removes what install wrote (not the group)\n"
    "  --json     machine output\n";

/* ---- the running service ------------------------------------------------------------------ */

static void default_socket(char *out, size_t len)
{
    const char *env = getenv("ABX_SOCKET");
    snprintf(out, len, "%s", env && *env ? env : "/run/abx/abx.sock");
}

static bool socket_answers(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return false;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* The pid in the pid file, when that process lives (a zombie is dead); else 0. */
static pid_t live_pid(const char *pid_file)
{
    FILE *f = fopen(pid_file, "re");
    long pid = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
        pid = 0;
    fclose(f);
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    f = pid ? fopen(path, "re") : NULL;
    if (!f)
        return 0;
    bool ok = fgets(stat, sizeof stat, f) != NULL;
    fclose(f);
    const char *end = strrchr(stat, ')');
    return ok && end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X' ? (pid_t)pid : 0;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The child: its own session, the log as stdout and stderr, then abx serve --socket. */
static void exec_service(const cli_ctx *ctx, const char *sock, const char *log, unsigned warm)
{
    setsid();
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(125);
    char warm_s[16];
    snprintf(warm_s, sizeof warm_s, "%u", warm);
    const char *argv[12];
    int n = 0;
    argv[n++] = "abx";
    if (ctx->provider) {
        argv[n++] = "--provider";
        argv[n++] = ctx->provider;
    }
    argv[n++] = "serve";
    argv[n++] = "--socket";
    argv[n++] = sock;
    argv[n++] = "--warm";
    argv[n++] = warm_s;
    argv[n] = NULL;
    execv("/proc/self/exe", (char *const *)argv);
    _exit(127);
}

static int write_pid(const char *pid_file, pid_t pid)
{
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", pid_file);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -1;
    fprintf(f, "%ld\n", (long)pid);
    if (fclose(f) != 0 || rename(tmp, pid_file) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int service_start(cli_ctx *ctx, const char *sock, const char *pid_file, const char *log, unsigned warm)
{
    pid_t running = live_pid(pid_file);
    if (running && socket_answers(sock)) {
        if (ctx->json)
            cli_print_json(json_pack("{s:b, s:i, s:s, s:b}", "running", 1, "pid", (int)running, "socket",
                                     sock, "already", 1));
        else
            printf("abx service: already running (pid %ld) on %s\n", (long)running, sock);
        return 0;
    }
    mkdir("/run/abx", 0755);
    pid_t pid = fork();
    if (pid < 0)
        return cli_fail(ctx, ABX_ESYS, "abx service start: fork: %s", strerror(errno));
    if (pid == 0)
        exec_service(ctx, sock, log, warm);
    if (write_pid(pid_file, pid) < 0) {
        kill(pid, SIGTERM);
        return cli_fail(ctx, ABX_EIO, "abx service start: cannot write %s", pid_file);
    }
    for (unsigned waited = 0; waited < READY_WAIT_MS; waited += 20) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            unlink(pid_file);
            return cli_fail(ctx, ABX_EPROVIDER,
                            "abx service start: the service ended at once (exit %d): see %s",
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), log);
        }
        if (socket_answers(sock)) {
            if (ctx->json)
                cli_print_json(json_pack("{s:b, s:i, s:s, s:s}", "running", 1, "pid", (int)pid, "socket",
                                         sock, "log", log));
            else
                printf("abx service: started (pid %ld) on %s; log %s\n", (long)pid, sock, log);
            return 0;
        }
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    unlink(pid_file);
    return cli_fail(ctx, ABX_ETIMEOUT, "abx service start: the socket did not answer within %d s: see %s",
                    READY_WAIT_MS / 1000, log);
}

static int service_stop(cli_ctx *ctx, const char *pid_file)
{
    pid_t pid = live_pid(pid_file);
    if (!pid) {
        unlink(pid_file);
        if (ctx->json)
            cli_print_json(json_pack("{s:b, s:b}", "stopped", 1, "was_running", 0));
        else
            printf("abx service: not running\n");
        return 0;
    }
    kill(pid, SIGTERM);
    unsigned waited = 0;
    for (; waited < STOP_WAIT_MS && live_pid(pid_file) == pid; waited += 20)
        sleep_ms(20);
    if (live_pid(pid_file) == pid)
        kill(pid, SIGKILL);
    unlink(pid_file);
    if (ctx->json)
        cli_print_json(json_pack("{s:b, s:b, s:i}", "stopped", 1, "was_running", 1, "pid", (int)pid));
    else
        printf("abx service: stopped (pid %ld); its sandboxes live on until their timeout\n", (long)pid);
    return 0;
}

static int service_status(cli_ctx *ctx, const char *sock, const char *pid_file)
{
    pid_t pid = live_pid(pid_file);
    bool answers = socket_answers(sock);
    struct stat st;
    bool units = stat("/etc/systemd/system/abx.socket", &st) == 0;
    if (ctx->json) {
        json_t *o = json_pack("{s:b, s:s, s:b}", "running", answers, "socket", sock, "systemd_units", units);
        if (pid)
            json_object_set_new(o, "pid", json_integer(pid));
        cli_print_json(o);
    } else if (answers) {
        printf("abx service: running on %s%s%s\n", sock, pid ? " (started by abx service start)" : "",
               units ? " (systemd units installed)" : "");
    } else {
        printf("abx service: not running (%s does not answer): 'abx service start' as root%s\n", sock,
               units ? ", or 'systemctl start abx.socket'" : "");
    }
    return answers ? 0 : CLI_EXIT_ERROR;
}

/* ---- installing for systemd -------------------------------------------------------------- */

static int write_file(const char *destdir, const char *path, const char *text)
{
    char full[1024], dir[1024];
    snprintf(full, sizeof full, "%s%s", destdir, path);
    snprintf(dir, sizeof dir, "%s", full);
    for (char *p = dir + 1; *p; p++) { /* mkdir -p of its directory */
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    FILE *f = fopen(full, "we");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}

static bool systemd_runs(void)
{
    struct stat st;
    return stat("/run/systemd/system", &st) == 0 && S_ISDIR(st.st_mode);
}

static int run_quiet(const char *const *argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char socket_unit[] = "[Unit]\n"
                                  "Description=abx service socket: sandboxes for every user of this machine\n"
                                  "\n"
                                  "[Socket]\n"
                                  "ListenStream=/run/abx/abx.sock\n"
                                  "SocketMode=0666\n"
                                  "DirectoryMode=0755\n"
                                  "\n"
                                  "[Install]\n"
                                  "WantedBy=sockets.target\n";

static const char tmpfiles[] = "# the abx service's socket, pid file and log\n"
                               "d /run/abx 0755 root root -\n";

static int service_install(cli_ctx *ctx, const char *destdir, const char *bindir, bool no_start)
{
    char self[512] = "";
    if (!bindir) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return cli_fail(ctx, ABX_ESYS, "abx service install: cannot find this abx (give --bindir)");
        self[n] = '\0';
    } else {
        snprintf(self, sizeof self, "%s/abx", bindir);
    }
    char service[2048];
    snprintf(service, sizeof service,
             "[Unit]\n"
             "Description=abx service: sandboxes for every user of this machine\n"
             "Documentation=https://github.com/abx-sandbox/abx/blob/main/docs/security.md\n"
             "Requires=abx.socket\n"
             "After=network.target abx.socket\n"
             "\n"
             "[Service]\n"
             "Type=simple\n"
             "User=root\n"
             "ExecStart=%s serve --socket /run/abx/abx.sock\n"
             "# the sandboxes' supervisors outlive a restart of the service\n"
             "KillMode=process\n"
             "Restart=on-failure\n"
             "\n"
             "[Install]\n"
             "WantedBy=multi-user.target\n",
             self);
    if (write_file(destdir, "/etc/systemd/system/abx.socket", socket_unit) < 0 ||
        write_file(destdir, "/etc/systemd/system/abx.service", service) < 0 ||
        write_file(destdir, "/usr/lib/tmpfiles.d/abx.conf", tmpfiles) < 0)
        return cli_fail(ctx, ABX_EIO, "abx service install: writing under %s: %s", *destdir ? destdir : "/",
                        strerror(errno));
    bool started = false;
    if (!*destdir) {
        const char *groupadd[] = {"groupadd", "--system", "-f", "abx", NULL};
        run_quiet(groupadd);
        if (systemd_runs() && !no_start) {
            const char *reload[] = {"systemctl", "daemon-reload", NULL};
            const char *enable[] = {"systemctl", "enable", "--now", "abx.socket", NULL};
            started = run_quiet(reload) == 0 && run_quiet(enable) == 0;
        }
    }
    if (ctx->json) {
        cli_print_json(json_pack("{s:b, s:s, s:b, s:b}", "installed", 1, "abx", self, "started", started,
                                 "systemd", systemd_runs()));
    } else {
        printf("abx service: installed %s/etc/systemd/system/abx.socket and abx.service (%s)\n", destdir,
               self);
        if (started)
            printf("abx service: abx.socket enabled and listening on /run/abx/abx.sock\n");
        else if (!*destdir && !systemd_runs())
            printf("abx service: no systemd runs here: 'abx service start' runs the service detached\n");
        if (!*destdir)
            printf("abx service: add users with 'usermod -aG abx USER' (they log in again)\n");
    }
    return 0;
}

static int service_uninstall(cli_ctx *ctx, const char *destdir)
{
    if (!*destdir && systemd_runs()) {
        const char *disable[] = {"systemctl", "disable", "--now", "abx.socket", "abx.service", NULL};
        run_quiet(disable);
    }
    static const char *const files[] = {"/etc/systemd/system/abx.socket", "/etc/systemd/system/abx.service",
                                        "/usr/lib/tmpfiles.d/abx.conf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char full[1024];
        snprintf(full, sizeof full, "%s%s", destdir, files[i]);
        unlink(full);
    }
    if (ctx->json)
        cli_print_json(json_pack("{s:b}", "uninstalled", 1));
    else
        printf("abx service: uninstalled (the group abx is left)\n");
    return 0;
}

int cmd_service(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    const char *sock = NULL, *pid_file = DEFAULT_PID_FILE, *log = DEFAULT_LOG_FILE, *destdir = "",
               *bindir = NULL;
    unsigned warm = 8;
    bool no_start = false;
    const cli_flag flags[] = {
        {"--socket", CLI_STRING, &sock, 0, 0, NULL, 0, NULL},
        {"--pid-file", CLI_STRING, &pid_file, 0, 0, NULL, 0, NULL},
        {"--log", CLI_STRING, &log, 0, 0, NULL, 0, NULL},
        {"--warm", CLI_UINT, &warm, 0, 16, NULL, 0, NULL},
        {"--destdir", CLI_STRING, &destdir, 0, 0, NULL, 0, NULL},
        {"--bindir", CLI_STRING, &bindir, 0, 0, NULL, 0, NULL},
        {"--no-start", CLI_BOOL, &no_start, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "service", cmd_service_help, argc, argv, flags, sizeof flags / sizeof flags[0],
                       pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    static const char usage[] = "usage: abx service start|stop|status|install|uninstall (abx service --help)";
    if (npos != 1)
        return cli_fail(ctx, ABX_EUSAGE, "%s", usage);
    char sock_buf[108];
    if (!sock) {
        default_socket(sock_buf, sizeof sock_buf);
        sock = sock_buf;
    }
    if (strcmp(pos[0], "status") == 0)
        return service_status(ctx, sock, pid_file);
    bool known = strcmp(pos[0], "start") == 0 || strcmp(pos[0], "stop") == 0 ||
                 strcmp(pos[0], "install") == 0 || strcmp(pos[0], "uninstall") == 0;
    if (!known)
        return cli_fail(ctx, ABX_EUSAGE, "%s", usage);
    if (geteuid() != 0 && !(*destdir && strcmp(pos[0], "start") != 0 && strcmp(pos[0], "stop") != 0))
        return cli_fail(ctx, ABX_EPERM, "abx service %s: root's to do (the service runs as root)", pos[0]);
    if (strcmp(pos[0], "start") == 0)
        return service_start(ctx, sock, pid_file, log, warm);
    if (strcmp(pos[0], "stop") == 0)
        return service_stop(ctx, pid_file);
    if (strcmp(pos[0], "install") == 0)
        return service_install(ctx, destdir, bindir, no_start);
    return service_uninstall(ctx, destdir);
}
