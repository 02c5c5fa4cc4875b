/* main.c: abx-oci, an OCI runtime with runc's command line.
 *
 * Owns the command line the engines call (containerd's runc shim,
 * Podman's conmon, CRI-O, Docker through containerd): the global flags
 * (--root, --log, --log-format, --systemd-cgroup, --debug), each verb's
 * flags in runc's spellings (long, "=value", single-dash and the short
 * letters), and how an error is told: one line on stderr, and in the
 * --log file as text or as a JSON line ({"level","msg","time"}: the shim
 * reports the last one). Everything else is libabx's (abx_oci_*).
 */
#include "abx/abx.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef ABX_COMMIT
#define ABX_COMMIT "unknown"
#endif

typedef struct oci_cli {
    abx_oci_runtime rt;
    const char *log_path;
    bool log_json;
    bool debug;
} oci_cli;

static const char usage[] =
    "Usage: abx-oci [global flags] COMMAND [flags] ID\n"
    "\n"
    "An OCI runtime with runc's command line: containerd, CRI-O, Podman and Docker run\n"
    "abx containers through it (docs/oci.md).\n"
    "\n"
    "Commands:\n"
    "  create --bundle DIR [--pid-file F] [--console-socket S] [--no-pivot] [--no-new-keyring]\n"
    "         [--preserve-fds N] ID          make the container; its process waits for start\n"
    "  start ID                              start the process of a created container\n"
    "  run [--bundle DIR] [--detach] ...  ID create, start, wait and delete\n"
    "  state ID                              the OCI state as JSON\n"
    "  list [--format table|json] [--quiet]  every container\n"
    "  kill [--all] ID [SIGNAL]              signal it (SIGTERM by default; names or numbers)\n"
    "  delete [--force] ID                   remove it (never its bundle)\n"
    "  exec [--process F | ARGS] [--detach] [--tty] [--cwd D] [--env K=V] [--user U[:G]]\n"
    "       [--pid-file F] [--console-socket S] [--preserve-fds N] ID  another process in it\n"
    "  ps [--format table|json] ID           its processes\n"
    "  pause ID, resume ID                   freeze and thaw it\n"
    "  update --resources FILE|- ID          new cgroup resources (linux.resources' shape)\n"
    "  spec [--bundle DIR]                   write a default config.json\n"
    "  features                              what this runtime supports, as JSON\n"
    "  checkpoint, restore                   not supported\n"
    "\n"
    "Global flags:\n"
    "  --root DIR           state directory (default /run/abx-oci)\n"
    "  --log FILE           also write errors to FILE\n"
    "  --log-format F       text or json (JSON lines: {\"level\",\"msg\",\"time\"})\n"
    "  --systemd-cgroup     cgroupsPath is slice:prefix:name; on this cgroupfs host abx-oci\n"
    "                       makes the path systemd's driver would (no unit is registered)\n"
    "  --debug              more in the log\n"
    "  --version, --help\n";

static void log_line(const oci_cli *cli, const char *level, const char *msg)
{
    if (!cli->log_path || !*cli->log_path)
        return;
    FILE *f = fopen(cli->log_path, "ae");
    if (!f)
        return;
    char when[40];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (cli->log_json) {
        fputs("{\"level\":\"", f);
        fputs(level, f);
        fputs("\",\"msg\":\"", f);
        for (const char *p = msg; *p; p++) {
            if (*p == '"' || *p == '\\')
                fprintf(f, "\\%c", *p);
            else if ((unsigned char)*p < 0x20)
                fprintf(f, "\\u%04x", (unsigned char)*p);
            else
                fputc(*p, f);
        }
        fprintf(f, "\",\"time\":\"%s\"}\n", when);
    } else {
        fprintf(f, "time=\"%s\" level=%s msg=\"%s\"\n", when, level, msg);
    }
    fclose(f);
}

/* The hint for abx-oci's reader (an operator or an engine's log), where
 * the library's names the abx CLI. */
static const char *oci_hint(int code)
{
    switch (code) {
    case ABX_EINVAL:
    case ABX_EUSAGE:
        return "Check the flag, the config.json field or the annotation named in the message; 'abx-oci "
               "--help' "
               "lists the commands and flags, docs/oci.md the annotations.";
    case ABX_ENOTFOUND:
        return "'abx-oci --root DIR list' shows the containers of that state directory; the engine's --root "
               "may differ.";
    case ABX_ENOTRUNNING:
        return "'abx-oci state ID' shows the container's status; start it first, or create it again.";
    default:
        return abx_err_hint(code);
    }
}

/* Tells the error (stderr and the log) and returns the exit status 1. */
static int fail(const oci_cli *cli, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(const oci_cli *cli, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "abx-oci: %s: %s\nhint: %s\n", abx_err_name(code), msg, oci_hint(code));
    log_line(cli, "error", msg);
    return 1;
}

static int fail_err(const oci_cli *cli, abx_error *err)
{
    int code = err ? (int)abx_error_code(err) : ABX_ESYS;
    int rc = fail(cli, code, "%s", err ? abx_error_message(err) : "failed");
    abx_error_free(err);
    return rc;
}

/* ---- flags ---- */

typedef struct flag_spec {
    const char *name; /* long name, without dashes */
    char letter;      /* short letter, or 0 */
    bool takes_value;
} flag_spec;

typedef struct flag_set {
    const flag_spec *specs;
    size_t n;
    const char *values[16];
    bool seen[16];
    const char *multi[64]; /* --env may repeat */
    size_t n_multi;
    char **positional;
    int n_positional;
} flag_set;

/* Parses argv (after the verb): flags anywhere before "--", as runc's
 * library does until the first positional argument for exec (its args
 * follow the id). Returns -1 with a message on an unknown flag. */
static int parse_flags(const oci_cli *cli, const char *verb, flag_set *fs, int argc, char **argv,
                       bool stop_at_id)
{
    fs->positional = argv;
    fs->n_positional = 0;
    int i = 0;
    for (; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (stop_at_id)
                break;
            argv[fs->n_positional++] = a;
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        char key[64];
        const char *eq = strchr(name, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq ? (size_t)(eq - name) : strlen(name)), name);
        int found = -1;
        for (size_t k = 0; k < fs->n; k++)
            if (strcmp(key, fs->specs[k].name) == 0 || (key[1] == '\0' && key[0] == fs->specs[k].letter))
                found = (int)k;
        if (found < 0)
            return fail(cli, ABX_EUSAGE, "flag provided but not defined: -%s (abx-oci %s --help)", key, verb),
                   -1;
        const char *value = "true";
        if (fs->specs[found].takes_value) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc)
                value = argv[++i];
            else
                return fail(cli, ABX_EUSAGE, "flag needs an argument: -%s", key), -1;
        } else if (eq)
            value = eq + 1;
        fs->values[found] = value;
        fs->seen[found] = strcmp(value, "false") != 0;
        if (strcmp(fs->specs[found].name, "env") == 0 && fs->n_multi < 64)
            fs->multi[fs->n_multi++] = value;
    }
    for (; i < argc; i++)
        argv[fs->n_positional++] = argv[i];
    return 0;
}

static const char *flag(const flag_set *fs, const char *name)
{
    for (size_t k = 0; k < fs->n; k++)
        if (strcmp(fs->specs[k].name, name) == 0)
            return fs->values[k];
    return NULL;
}

static bool flag_on(const flag_set *fs, const char *name)
{
    for (size_t k = 0; k < fs->n; k++)
        if (strcmp(fs->specs[k].name, name) == 0)
            return fs->seen[k];
    return false;
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

static int need_id(const oci_cli *cli, const char *verb, const flag_set *fs)
{
    if (fs->n_positional < 1)
        return fail(cli, ABX_EUSAGE, "\"%s\" requires a container id (abx-oci %s --help)", verb, verb), -1;
    return 0;
}

/* ---- verbs ---- */

static const flag_spec create_flags[] = {
    {"bundle", 'b', true},  {"pid-file", 0, true},        {"console-socket", 0, true},
    {"no-pivot", 0, false}, {"no-new-keyring", 0, false}, {"preserve-fds", 0, true},
    {"detach", 'd', false}, {"keep", 0, false},           {"no-subreaper", 0, false},
};

static int fill_create(const oci_cli *cli, const flag_set *fs, abx_oci_create_options *o)
{
    memset(o, 0, sizeof *o);
    o->bundle = flag(fs, "bundle");
    o->pid_file = flag(fs, "pid-file");
    o->console_socket = flag(fs, "console-socket");
    o->no_pivot = flag_on(fs, "no-pivot");
    o->no_new_keyring = flag_on(fs, "no-new-keyring");
    const char *keep = flag(fs, "preserve-fds");
    char *end = NULL;
    long n = keep ? strtol(keep, &end, 10) : 0;
    if (keep && (*end || n < 0 || n > 1024))
        return fail(cli, ABX_EUSAGE, "--preserve-fds must be a number from 0 to 1024"), -1;
    o->preserve_fds = (int)n;
    return 0;
}

static int cmd_create(oci_cli *cli, int argc, char **argv, bool run)
{
    flag_set fs = {.specs = create_flags, .n = sizeof create_flags / sizeof create_flags[0]};
    abx_oci_create_options o;
    if (parse_flags(cli, run ? "run" : "create", &fs, argc, argv, false) < 0 ||
        need_id(cli, run ? "run" : "create", &fs) < 0 || fill_create(cli, &fs, &o) < 0)
        return 1;
    abx_error *err = NULL;
    if (!run)
        return abx_oci_create(&cli->rt, fs.positional[0], &o, &err) < 0 ? fail_err(cli, err) : 0;
    int status = 0;
    if (abx_oci_run(&cli->rt, fs.positional[0], &o, flag_on(&fs, "detach"), &status, &err) < 0)
        return fail_err(cli, err);
    return status;
}

typedef int (*id_verb)(const abx_oci_runtime *, const char *, abx_error **);

static int start_verb(const abx_oci_runtime *rt, const char *id, abx_error **err)
{
    return abx_oci_start(rt, id, err);
}
static int pause_verb(const abx_oci_runtime *rt, const char *id, abx_error **err)
{
    return abx_oci_pause(rt, id, true, err);
}
static int resume_verb(const abx_oci_runtime *rt, const char *id, abx_error **err)
{
    return abx_oci_pause(rt, id, false, err);
}

static int cmd_simple(oci_cli *cli, const char *verb, id_verb fn, int argc, char **argv)
{
    flag_set fs = {.specs = NULL, .n = 0};
    if (parse_flags(cli, verb, &fs, argc, argv, false) < 0 || need_id(cli, verb, &fs) < 0)
        return 1;
    abx_error *err = NULL;
    return fn(&cli->rt, fs.positional[0], &err) < 0 ? fail_err(cli, err) : 0;
}

static int cmd_state(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = NULL, .n = 0};
    if (parse_flags(cli, "state", &fs, argc, argv, false) < 0 || need_id(cli, "state", &fs) < 0)
        return 1;
    abx_error *err = NULL;
    char *json = NULL;
    if (abx_oci_state(&cli->rt, fs.positional[0], &json, &err) < 0)
        return fail_err(cli, err);
    printf("%s\n", json);
    abx_free(json);
    return 0;
}

static const flag_spec list_flags[] = {{"format", 'f', true}, {"quiet", 'q', false}};

static int cmd_list(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = list_flags, .n = 2};
    if (parse_flags(cli, "list", &fs, argc, argv, false) < 0)
        return 1;
    const char *format = flag(&fs, "format");
    if (format && strcmp(format, "json") != 0 && strcmp(format, "table") != 0)
        return fail(cli, ABX_EUSAGE, "--format must be table or json");
    abx_error *err = NULL;
    char *json = NULL;
    if (abx_oci_list(&cli->rt, &json, &err) < 0)
        return fail_err(cli, err);
    if (format && strcmp(format, "json") == 0) {
        printf("%s\n", json);
        abx_free(json);
        return 0;
    }
    /* the table: one line each */
    json_t *list = json_loads(json, 0, NULL);
    bool quiet = flag_on(&fs, "quiet");
    if (!quiet)
        printf("%-24s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED");
    size_t k;
    const json_t *c;
    json_array_foreach(list, k, c)
    {
        const char *id = json_string_value(json_object_get(c, "id"));
        if (quiet)
            printf("%s\n", id ? id : "");
        else
            printf("%-24s %-8lld %-10s %-40s %s\n", id ? id : "",
                   (long long)json_integer_value(json_object_get(c, "pid")),
                   json_string_value(json_object_get(c, "status")) ?: "",
                   json_string_value(json_object_get(c, "bundle")) ?: "",
                   json_string_value(json_object_get(c, "created")) ?: "");
    }
    json_decref(list);
    abx_free(json);
    return 0;
}

static const flag_spec kill_flags[] = {{"all", 'a', false}, {"pid", 'p', true}};

static int cmd_kill(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = kill_flags, .n = 2};
    if (parse_flags(cli, "kill", &fs, argc, argv, false) < 0 || need_id(cli, "kill", &fs) < 0)
        return 1;
    const char *name = fs.n_positional > 1 ? fs.positional[1] : "SIGTERM";
    int sig = abx_oci_signal_parse(name);
    if (sig < 0)
        return fail(cli, ABX_EINVAL, "unknown signal \"%.32s\"", name);
    abx_error *err = NULL;
    return abx_oci_kill(&cli->rt, fs.positional[0], sig, flag_on(&fs, "all"), &err) < 0 ? fail_err(cli, err)
                                                                                        : 0;
}

static const flag_spec delete_flags[] = {{"force", 'f', false}};

static int cmd_delete(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = delete_flags, .n = 1};
    if (parse_flags(cli, "delete", &fs, argc, argv, false) < 0 || need_id(cli, "delete", &fs) < 0)
        return 1;
    abx_error *err = NULL;
    return abx_oci_delete(&cli->rt, fs.positional[0], flag_on(&fs, "force"), &err) < 0 ? fail_err(cli, err)
                                                                                       : 0;
}

static const flag_spec exec_flags[] = {
    {"process", 'p', true},      {"detach", 'd', false}, {"pid-file", 0, true},
    {"console-socket", 0, true}, {"tty", 't', false},    {"cwd", 0, true},
    {"env", 'e', true},          {"user", 'u', true},    {"preserve-fds", 0, true},
    {"no-new-privs", 0, false},  {"cap", 'c', true},     {"additional-gids", 'g', true},
    {"process-label", 0, true},  {"apparmor", 0, true},  {"ignore-paused", 0, false},
    {"cgroup", 0, true},
};

static int cmd_exec(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = exec_flags, .n = sizeof exec_flags / sizeof exec_flags[0]};
    if (parse_flags(cli, "exec", &fs, argc, argv, true) < 0 || need_id(cli, "exec", &fs) < 0)
        return 1;
    abx_oci_exec_options o = {0};
    o.process_path = flag(&fs, "process");
    if (!o.process_path && fs.n_positional < 2)
        return fail(cli, ABX_EUSAGE, "exec needs --process FILE or a command after the container id");
    /* after the id: the command (flags before it were parsed; ones after belong to the command) */
    o.args = (const char *const *)fs.positional + 1;
    fs.positional[fs.n_positional] = NULL;
    fs.multi[fs.n_multi] = NULL;
    o.env = fs.multi;
    o.cwd = flag(&fs, "cwd");
    o.user = flag(&fs, "user");
    o.tty = flag_on(&fs, "tty");
    o.detach = flag_on(&fs, "detach");
    o.pid_file = flag(&fs, "pid-file");
    o.console_socket = flag(&fs, "console-socket");
    const char *keep = flag(&fs, "preserve-fds");
    char *end = NULL;
    long n = keep ? strtol(keep, &end, 10) : 0;
    o.preserve_fds = (int)n;
    if ((keep && *end) || n < 0 || n > 1024)
        return fail(cli, ABX_EUSAGE, "--preserve-fds must be a number from 0 to 1024");
    abx_error *err = NULL;
    int status = 0;
    if (abx_oci_exec(&cli->rt, fs.positional[0], &o, &status, &err) < 0)
        return fail_err(cli, err);
    return o.detach ? 0 : status;
}

static const flag_spec ps_flags[] = {{"format", 'f', true}};

static int cmd_ps(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = ps_flags, .n = 1};
    if (parse_flags(cli, "ps", &fs, argc, argv, false) < 0 || need_id(cli, "ps", &fs) < 0)
        return 1;
    const char *format = flag(&fs, "format");
    if (format && strcmp(format, "json") != 0 && strcmp(format, "table") != 0)
        return fail(cli, ABX_EUSAGE, "--format must be table or json");
    abx_error *err = NULL;
    int *pids = NULL;
    size_t n = 0;
    if (abx_oci_ps(&cli->rt, fs.positional[0], &pids, &n, &err) < 0)
        return fail_err(cli, err);
    if (format && strcmp(format, "json") == 0) {
        printf("[");
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? "," : "", pids[i]);
        printf("]\n");
        abx_free(pids);
        return 0;
    }
    /* the table: ps -ef's header and the container's rows (as runc) */
    FILE *ps = popen("ps -ef", "re");
    char line[4096];
    bool header = true;
    while (ps && fgets(line, sizeof line, ps)) {
        long pid = 0;
        if (!header && sscanf(line, "%*s %ld", &pid) != 1)
            continue;
        bool member = header;
        for (size_t i = 0; !member && i < n; i++)
            member = pids[i] == pid;
        if (member)
            fputs(line, stdout);
        header = false;
    }
    if (ps)
        pclose(ps);
    abx_free(pids);
    return 0;
}

static const flag_spec update_flags[] = {{"resources", 'r', true}, {"memory", 'm', true},
                                         {"pids-limit", 0, true},  {"cpu-quota", 0, true},
                                         {"cpu-period", 0, true},  {"cpu-share", 0, true}};

static int cmd_update(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = update_flags, .n = sizeof update_flags / sizeof update_flags[0]};
    if (parse_flags(cli, "update", &fs, argc, argv, false) < 0 || need_id(cli, "update", &fs) < 0)
        return 1;
    const char *from = flag(&fs, "resources");
    char buf[1 << 16];
    size_t len = 0;
    if (from) {
        FILE *f = strcmp(from, "-") == 0 ? stdin : fopen(from, "re");
        if (!f)
            return fail(cli, ABX_EIO, "--resources %s: %s", from, strerror(errno));
        len = fread(buf, 1, sizeof buf - 1, f);
        bool more = fgetc(f) != EOF;
        if (f != stdin)
            fclose(f);
        if (more)
            return fail(cli, ABX_ETOOBIG, "--resources: more than %zu bytes", sizeof buf - 1);
    } else {
        /* runc's single-value flags as the same JSON */
        static const char *const names[5] = {"memory", "pids-limit", "cpu-quota", "cpu-period", "cpu-share"};
        static const char *const keys[5] = {"limit", "limit", "quota", "period", "shares"};
        char part[3][160] = {"", "", ""};
        for (int k = 0; k < 5; k++) {
            const char *v = flag(&fs, names[k]);
            char *end = NULL;
            if (!v)
                continue;
            long long n = strtoll(v, &end, 10);
            if (*end || end == v)
                return fail(cli, ABX_EUSAGE, "--%s must be a number", names[k]);
            char *to = part[k < 2 ? k : 2];
            size_t at = strlen(to);
            snprintf(to + at, sizeof part[0] - at, "%s\"%s\":%lld", at ? "," : "", keys[k], n);
        }
        len = (size_t)snprintf(buf, sizeof buf, "{\"memory\":{%s},\"pids\":{%s},\"cpu\":{%s}}", part[0],
                               part[1], part[2]);
    }
    buf[len] = '\0';
    abx_error *err = NULL;
    return abx_oci_update(&cli->rt, fs.positional[0], buf, &err) < 0 ? fail_err(cli, err) : 0;
}

static const flag_spec spec_flags[] = {{"bundle", 'b', true}, {"rootless", 0, false}};

static int cmd_spec(oci_cli *cli, int argc, char **argv)
{
    flag_set fs = {.specs = spec_flags, .n = 2};
    if (parse_flags(cli, "spec", &fs, argc, argv, false) < 0)
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", flag(&fs, "bundle") ? flag(&fs, "bundle") : ".");
    if (access(path, F_OK) == 0)
        return fail(cli, ABX_EINVAL, "File %s exists. Remove it first", path);
    char *json = abx_oci_default_spec();
    FILE *f = json ? fopen(path, "wxe") : NULL;
    if (!f) {
        abx_free(json);
        return fail(cli, ABX_EIO, "writing %s: %s", path, strerror(errno));
    }
    fprintf(f, "%s\n", json);
    abx_free(json);
    return fclose(f) == 0 ? 0 : fail(cli, ABX_EIO, "writing %s: %s", path, strerror(errno));
}

static int cmd_features(oci_cli *cli)
{
    char *json = abx_oci_features();
    if (!json)
        return fail(cli, ABX_ENOMEM, "features: out of memory");
    printf("%s\n", json);
    abx_free(json);
    return 0;
}

static const char *const verb_help[][2] = {
    {"create", "Usage: abx-oci create --bundle DIR [--pid-file F] [--console-socket S] [--no-pivot]\n"
               "                      [--no-new-keyring] [--preserve-fds N] ID\n"
               "Makes the container from the bundle's config.json; its process waits for 'start'.\n"},
    {"run", "Usage: abx-oci run [--bundle DIR] [--detach] [--pid-file F] [--console-socket S] ID\n"
            "Creates and starts the container; without --detach waits for it, deletes it and\n"
            "exits with its process's status.\n"},
    {"start", "Usage: abx-oci start ID\nStarts the process of a created container.\n"},
    {"state",
     "Usage: abx-oci state ID\nPrints the OCI state: ociVersion, id, status, pid, bundle, annotations.\n"},
    {"list", "Usage: abx-oci list [--format table|json] [--quiet]\nLists the containers of --root.\n"},
    {"kill",
     "Usage: abx-oci kill [--all] ID [SIGNAL]\nSends SIGNAL (a name or number; SIGTERM by default).\n"},
    {"delete",
     "Usage: abx-oci delete [--force] ID\nRemoves a stopped container (--force: any); never its bundle.\n"},
    {"exec", "Usage: abx-oci exec [--process F] [--detach] [--tty] [--cwd D] [--env K=V]... [--user U[:G]]\n"
             "                    [--pid-file F] [--console-socket S] [--preserve-fds N] ID [COMMAND...]\n"
             "Runs another process in a running container.\n"},
    {"ps", "Usage: abx-oci ps [--format table|json] ID\nLists the container's processes.\n"},
    {"pause", "Usage: abx-oci pause ID\nFreezes every process of the container.\n"},
    {"resume", "Usage: abx-oci resume ID\nThaws a paused container.\n"},
    {"update", "Usage: abx-oci update --resources FILE|- ID\n"
               "       abx-oci update [--memory N] [--pids-limit N] [--cpu-quota N] [--cpu-period N] "
               "[--cpu-share N] ID\n"
               "Writes new cgroup resources.\n"},
    {"spec",
     "Usage: abx-oci spec [--bundle DIR]\nWrites a default config.json (root \"rootfs\") into DIR.\n"},
    {"features", "Usage: abx-oci features\nPrints what this runtime supports (the OCI features document).\n"},
};

static int verb(oci_cli *cli, const char *name, int argc, char **argv)
{
    if (wants_help(argc, argv))
        for (size_t i = 0; i < sizeof verb_help / sizeof verb_help[0]; i++)
            if (strcmp(name, verb_help[i][0]) == 0)
                return fputs(verb_help[i][1], stdout), 0;
    if (strcmp(name, "create") == 0)
        return cmd_create(cli, argc, argv, false);
    if (strcmp(name, "run") == 0)
        return cmd_create(cli, argc, argv, true);
    if (strcmp(name, "start") == 0)
        return cmd_simple(cli, name, start_verb, argc, argv);
    if (strcmp(name, "pause") == 0)
        return cmd_simple(cli, name, pause_verb, argc, argv);
    if (strcmp(name, "resume") == 0)
        return cmd_simple(cli, name, resume_verb, argc, argv);
    if (strcmp(name, "state") == 0)
        return cmd_state(cli, argc, argv);
    if (strcmp(name, "list") == 0)
        return cmd_list(cli, argc, argv);
    if (strcmp(name, "kill") == 0)
        return cmd_kill(cli, argc, argv);
    if (strcmp(name, "delete") == 0)
        return cmd_delete(cli, argc, argv);
    if (strcmp(name, "exec") == 0)
        return cmd_exec(cli, argc, argv);
    if (strcmp(name, "ps") == 0)
        return cmd_ps(cli, argc, argv);
    if (strcmp(name, "update") == 0)
        return cmd_update(cli, argc, argv);
    if (strcmp(name, "spec") == 0)
        return cmd_spec(cli, argc, argv);
    if (strcmp(name, "features") == 0)
        return cmd_features(cli);
    if (strcmp(name, "checkpoint") == 0 || strcmp(name, "restore") == 0)
        return fail(cli, ABX_ENOTSUP, "%s is not supported: abx-oci does not checkpoint processes (no CRIU)",
                    name);
    return fail(cli, ABX_EUSAGE, "unknown command \"%.64s\" (abx-oci --help)", name);
}

int main(int argc, char **argv)
{
    oci_cli cli = {0};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i] + (argv[i][1] == '-' ? 2 : 1);
        char key[32];
        const char *eq = strchr(a, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
        const char *value = eq ? eq + 1 : NULL;
        bool takes = strcmp(key, "root") == 0 || strcmp(key, "log") == 0 || strcmp(key, "log-format") == 0 ||
                     strcmp(key, "criu") == 0 || strcmp(key, "rootless") == 0;
        if (takes && !value) {
            if (i + 1 >= argc)
                return fail(&cli, ABX_EUSAGE, "flag needs an argument: --%s", key);
            value = argv[++i];
        }
        if (strcmp(key, "version") == 0 || strcmp(key, "v") == 0) {
            printf("abx-oci version %s\ncommit: %s\nspec: %s\nlibabx: %s\n", abx_version(), ABX_COMMIT,
                   abx_oci_spec_version(), abx_version());
            return 0;
        }
        if (strcmp(key, "help") == 0 || strcmp(key, "h") == 0)
            return fputs(usage, stdout), 0;
        if (strcmp(key, "root") == 0)
            cli.rt.root = value;
        else if (strcmp(key, "log") == 0)
            cli.log_path = value;
        else if (strcmp(key, "log-format") == 0) {
            if (strcmp(value, "json") != 0 && strcmp(value, "text") != 0)
                return fail(&cli, ABX_EUSAGE, "--log-format must be text or json");
            cli.log_json = strcmp(value, "json") == 0;
        } else if (strcmp(key, "systemd-cgroup") == 0)
            cli.rt.systemd_cgroup = !value || strcmp(value, "false") != 0;
        else if (strcmp(key, "debug") == 0)
            cli.debug = true;
        else if (strcmp(key, "criu") != 0 && strcmp(key, "rootless") != 0)
            return fail(&cli, ABX_EUSAGE, "flag provided but not defined: -%s (abx-oci --help)", key);
    }
    if (i >= argc) {
        fputs(usage, stderr);
        return 1;
    }
    if (cli.debug) { /* the engine's call, as it came */
        char line[1024];
        size_t used = 0;
        for (int k = 0; k < argc && used + 2 < sizeof line; k++) {
            /* an --env value may be a secret: never in the log */
            bool secret = k > 0 && (strcmp(argv[k - 1], "--env") == 0 || strcmp(argv[k - 1], "-e") == 0);
            const char *shown = secret                               ? "(value not logged)"
                                : strncmp(argv[k], "--env=", 6) == 0 ? "--env=(value not logged)"
                                                                     : argv[k];
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s", k ? " " : "", shown);
        }
        log_line(&cli, "debug", line);
    }
    return verb(&cli, argv[i], argc - i - 1, argv + i + 1);
}
