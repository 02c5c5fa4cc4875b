/* cmd_provider.c: `abx provider install|list|remove|doctor|test`: provider
 * plugins (abx_plugin_*: installed into $ABX_HOME/providers/<id>/ with a
 * digest checked before every start; nothing of the plugin's is run at
 * install). Owns what the user is shown and asked, and `test`, which
 * drives a plugin capability by capability through the public API. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_provider_help[] =
    "Usage: abx provider install SOURCE [--link] [--yes] [--force] [--json]\n"
    "       abx provider list [--json]\n"
    "       abx provider remove ID [--purge] [--json]\n"
    "       abx provider doctor ID [--json]\n"
    "       abx provider test ID [--json]\n"
    "\n"
    "Provider plugins: other backends for the same sandbox verbs and tools.\n"
    "\n"
    "install  SOURCE is a plugin directory holding abx-provider.toml, a tar\n"
    "         archive (.tar, .tar.gz, ...: the manifest at its root or in its\n"
    "         one top-level directory), or a git source: URL//subdir (file,\n"
    "         http(s) or ssh URLs) or\n"
    "         owner/repo//subdir (on ABX_PROVIDER_GIT_BASE, default\n"
    "         https://github.com/). The directory's name (the repository's,\n"
    "         without a subdir) must be the manifest's [provider] id. Shows\n"
    "         what the plugin will get (its command, the host variables passed\n"
    "         through, its config keys) and asks unless --yes, then copies it\n"
    "         to ~/.abx/providers/<id>/ and records a SHA-256 digest of its\n"
    "         files, checked before every start (a change is E8011). Nothing\n"
    "         of the plugin's is run. --link installs a symlink instead (for\n"
    "         development: no digest, a warning at every use). --force\n"
    "         replaces an installed plugin of the same id.\n"
    "list     installed plugins: id, kind, version, source, linked, digest\n"
    "         (ok, mismatch or linked).\n"
    "remove   uninstalls; the plugin's data (~/.abx/provider-data/<id>/)\n"
    "         stays unless --purge.\n"
    "doctor   checks an installed plugin, a line each (ok, warn or fail, with what\n"
    "         to do): its manifest, its command, its digest, the initialize\n"
    "         handshake and the features it declares, and config keys not set.\n"
    "         Exits 1 when a check fails.\n"
    "test     drives the plugin capability by capability with real calls\n"
    "         (create, get, list, exec, files, timeout, kill) and prints a table;\n"
    "         exits 1 when one fails. Capabilities this abx does not drive\n"
    "         over EPP yet are listed as untested.\n";

/* ---- install ------------------------------------------------------------------------ */

/* What the plugin will get, on stderr, before the question. */
static void show_grants(json_t *m)
{
    const char *name = json_string_value(json_object_get(m, "name")),
               *id = json_string_value(json_object_get(m, "id"));
    const char *version = json_string_value(json_object_get(m, "version"));
    const char *description = json_string_value(json_object_get(m, "description"));
    const char *base_url = json_string_value(json_object_get(m, "base_url"));
    fprintf(stderr, "provider %s (%s%s%s, kind %s)\n", id, name && *name ? name : id,
            version && *version ? " " : "", version ? version : "",
            json_string_value(json_object_get(m, "kind")));
    if (description && *description)
        fprintf(stderr, "  %s\n", description);
    size_t i;
    json_t *v;
    json_t *command = json_object_get(m, "command"), *env = json_object_get(m, "env"),
           *config = json_object_get(m, "config");
    if (json_is_array(command)) {
        fprintf(stderr, "  runs:");
        json_array_foreach(command, i, v) fprintf(stderr, " %s", json_string_value(v));
        fprintf(stderr, "\n");
    }
    if (base_url && *base_url)
        fprintf(stderr, "  talks to: %s\n", base_url);
    fprintf(stderr, "  host variables passed through:");
    json_array_foreach(env, i, v) fprintf(stderr, " %s", json_string_value(v));
    fprintf(stderr, "%s\n", json_array_size(env) ? "" : " (none)");
    fprintf(stderr, "  config keys:");
    const char *k;
    json_object_foreach(config, k, v)
        fprintf(stderr, " %s%s", k, json_is_true(json_object_get(v, "secret")) ? " (secret)" : "");
    fprintf(stderr, "%s\n", json_object_size(config) ? "" : " (none)");
}

typedef struct install_args {
    bool link, yes, force;
} install_args;

/* Shows the grants, then asks on the terminal unless --yes. */
static bool confirm_install(const char *manifest_json, void *ud)
{
    const install_args *a = ud;
    json_t *m = json_loads(manifest_json, 0, NULL);
    if (m)
        show_grants(m);
    json_decref(m);
    if (a->yes)
        return true;
    if (!isatty(STDIN_FILENO))
        return false;
    fprintf(stderr, "Install it? [y/N] ");
    char line[16];
    return fgets(line, sizeof line, stdin) && (line[0] == 'y' || line[0] == 'Y');
}

static int install(cli_ctx *ctx, const char *source, install_args *a)
{
    abx_plugin_install_options o = {
        .source = source, .link = a->link, .force = a->force, .confirm = confirm_install, .userdata = a};
    char *text = NULL;
    abx_error *err = NULL;
    int rc = abx_plugin_install(&o, &text, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *entry = json_loads(text, 0, NULL);
    abx_free(text);
    const char *id = json_string_value(json_object_get(entry, "id"));
    if (a->link)
        fprintf(stderr,
                "abx provider: warning: %s is a --link install (development): its files are not checked\n",
                id);
    if (ctx->json) {
        cli_print_json(entry);
    } else {
        printf("installed %s into %s%s\n", id, json_string_value(json_object_get(entry, "path")),
               a->link ? " (linked)" : "");
        json_decref(entry);
    }
    return 0;
}

/* ---- list, remove, doctor ----------------------------------------------------------------- */

static int list(cli_ctx *ctx)
{
    char *text = NULL;
    abx_error *err = NULL;
    int rc = abx_plugin_list(&text, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *out = json_loads(text, 0, NULL), *e;
    abx_free(text);
    if (ctx->json) {
        cli_print_json(out);
        return 0;
    }
    printf("%-24s %-5s %-10s %-9s %s\n", "ID", "KIND", "VERSION", "DIGEST", "SOURCE");
    size_t i;
    json_array_foreach(out, i, e) printf(
        "%-24s %-5s %-10s %-9s %s\n", json_string_value(json_object_get(e, "id")),
        json_string_value(json_object_get(e, "kind")), json_string_value(json_object_get(e, "version")),
        json_string_value(json_object_get(e, "digest")), json_string_value(json_object_get(e, "source")));
    json_decref(out);
    return 0;
}

static int remove_plugin(cli_ctx *ctx, const char *id, bool purge)
{
    abx_error *err = NULL;
    int rc = abx_plugin_remove(id, purge, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    if (ctx->json)
        cli_print_json(json_pack("{s:s, s:b, s:b}", "id", id, "removed", 1, "data_purged", purge));
    else
        printf("removed %s%s\n", id, purge ? " and its data" : "");
    return 0;
}

static int doctor(cli_ctx *ctx, const char *id)
{
    char *text = NULL;
    abx_error *err = NULL;
    int rc = abx_plugin_doctor(id, &text, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *doc = json_loads(text, 0, NULL), *c;
    abx_free(text);
    bool failed = !json_is_true(json_object_get(doc, "ok"));
    if (ctx->json) {
        cli_print_json(doc);
        return failed ? CLI_EXIT_ERROR : 0;
    }
    size_t i;
    json_array_foreach(json_object_get(doc, "checks"), i, c) printf(
        "%-5s %-12s %s\n", json_string_value(json_object_get(c, "status")),
        json_string_value(json_object_get(c, "check")), json_string_value(json_object_get(c, "detail")));
    json_decref(doc);
    return failed ? CLI_EXIT_ERROR : 0;
}

/* ---- test ---------------------------------------------------------------------------- */

typedef struct test_table {
    json_t *rows;
    bool failed;
} test_table;

static void row(test_table *t, const char *capability, const char *step, int rc, abx_error *err,
                const char *detail)
{
    const char *status = rc == 1 ? "untested" : rc == 0 ? "pass" : "fail";
    json_array_append_new(t->rows, json_pack("{s:s, s:s, s:s, s:s}", "capability", capability, "step", step,
                                             "status", status, "detail",
                                             err      ? abx_error_message(err)
                                             : detail ? detail
                                                      : ""));
    if (rc < 0)
        t->failed = true;
    abx_error_free(err);
}

/* exec.run: output, exit status. */
static void test_exec(test_table *t, abx_sandbox *s)
{
    abx_exec_options o = {.keep_output = true};
    abx_exec_result r;
    abx_error *err = NULL;
    int rc = abx_sandbox_exec(s, "echo abx-test; echo to-stderr >&2", &o, &r, &err);
    bool ok = rc == 0 && r.exit_code == 0 && r.stdout_data && strcmp(r.stdout_data, "abx-test\n") == 0 &&
              r.stderr_data && strcmp(r.stderr_data, "to-stderr\n") == 0;
    abx_exec_result_clear(&r);
    row(t, "exec.run", "stdout and stderr", ok ? 0 : -1, err, ok ? "" : "unexpected output");
    err = NULL;
    rc = abx_sandbox_exec(s, "exit 3", &o, &r, &err);
    ok = rc == 0 && r.exit_code == 3;
    abx_exec_result_clear(&r);
    row(t, "exec.run", "exit status", ok ? 0 : -1, err, ok ? "" : "not 3");
}

/* files.rw: binary round trip, listing, stat, mkdir, move, remove. */
static void test_files(test_table *t, abx_sandbox *s)
{
    char data[300];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 31);
    abx_error *err = NULL;
    int rc = abx_sandbox_write_file(s, "/app/abx-test/bin", data, sizeof data, NULL, &err);
    row(t, "files.rw", "write", rc, err, "");
    err = NULL;
    char *back = NULL;
    size_t len = 0;
    rc = abx_sandbox_read_file(s, "/app/abx-test/bin", NULL, 4096, &back, &len, &err);
    bool same = rc == 0 && len == sizeof data && memcmp(back, data, len) == 0;
    abx_free(back);
    row(t, "files.rw", "read (binary)",
        rc < 0 ? rc
        : same ? 0
               : -1,
        err, same ? "" : "other bytes came back");
    err = NULL;
    char *json = NULL;
    rc = abx_sandbox_list_files(s, "/app/abx-test", 1, NULL, &json, &err);
    bool listed = rc == 0 && json && strstr(json, "\"bin\"");
    abx_free(json);
    row(t, "files.rw", "list", rc < 0 ? rc : listed ? 0 : -1, err, listed ? "" : "not listed");
    err = NULL;
    rc = abx_sandbox_stat(s, "/app/abx-test/bin", NULL, &json, &err);
    abx_free(rc == 0 ? json : NULL);
    row(t, "files.rw", "stat", rc, err, "");
    err = NULL;
    rc = abx_sandbox_mkdir(s, "/app/abx-test/d", NULL, NULL, &err);
    row(t, "files.rw", "mkdir", rc, err, "");
    err = NULL;
    rc = abx_sandbox_move(s, "/app/abx-test/bin", "/app/abx-test/d/moved", NULL, &err);
    row(t, "files.rw", "move", rc, err, "");
    err = NULL;
    rc = abx_sandbox_remove(s, "/app/abx-test", NULL, &err);
    row(t, "files.rw", "remove", rc, err, "");
}

typedef struct stream_seen {
    char text[256];
    size_t len;
    int chunks;
} stream_seen;

static void seen_output(const char *data, size_t len, void *ud)
{
    stream_seen *seen = ud;
    size_t room = sizeof seen->text - 1 - seen->len;
    memcpy(seen->text + seen->len, data, len < room ? len : room);
    seen->len += len < room ? len : room;
    seen->text[seen->len] = '\0';
    seen->chunks++;
}

/* exec.stream: output as it comes, the exit status; with process.manage,
 * stdin reaches the command. */
static void test_stream(test_table *t, abx_sandbox *s, bool with_stdin)
{
    stream_seen seen = {0};
    abx_exec_options o = {.on_stdout = seen_output, .userdata = &seen};
    abx_exec_result r;
    abx_error *err = NULL;
    int rc = abx_sandbox_exec(s, "echo one; sleep 0.2; echo two; exit 4", &o, &r, &err);
    bool ok = rc == 0 && r.exit_code == 4 && strcmp(seen.text, "one\ntwo\n") == 0;
    abx_exec_result_clear(&r);
    row(t, "exec.stream", "output and exit", ok ? 0 : -1, err, ok ? "" : "unexpected output or exit status");
    if (!with_stdin)
        return;
    int fds[2];
    if (pipe(fds) < 0)
        return;
    ssize_t w = write(fds[1], "abx-stdin", 9);
    close(fds[1]);
    memset(&seen, 0, sizeof seen);
    o.with_stdin = true;
    o.stdin_fd = fds[0];
    err = NULL;
    rc = w == 9 ? abx_sandbox_exec(s, "cat", &o, &r, &err) : -1;
    close(fds[0]);
    ok = rc == 0 && r.exit_code == 0 && strcmp(seen.text, "abx-stdin") == 0;
    if (rc == 0)
        abx_exec_result_clear(&r);
    row(t, "process.manage", "stdin", ok ? 0 : -1, err, ok ? "" : "the command did not read what was sent");
}

/* process.manage: a background task listed, its output read, a signal
 * ending it. */
static void test_processes(test_table *t, abx_sandbox *s)
{
    int pid = 0;
    abx_error *err = NULL;
    int rc = abx_sandbox_start_background(s, "echo started; sleep 30", NULL, &pid, &err);
    row(t, "process.manage", "start (exec.start)", rc, err, "");
    if (rc < 0)
        return;
    char *json = NULL, needle[32];
    err = NULL;
    rc = abx_sandbox_list_processes(s, &json, &err);
    snprintf(needle, sizeof needle, "\"pid\":%d", pid);
    bool listed = rc == 0 && strstr(json, needle);
    abx_free(json);
    row(t, "process.manage", "list",
        rc < 0   ? rc
        : listed ? 0
                 : -1,
        err, listed ? "" : "the task is not listed");
    abx_process_output out;
    err = NULL;
    rc = abx_sandbox_read_output(s, pid, 0, 0, 5000, &out, &err);
    bool said = rc == 0 && out.stdout_data && strcmp(out.stdout_data, "started\n") == 0;
    if (rc == 0)
        abx_process_output_clear(&out);
    row(t, "process.manage", "output", rc < 0 ? rc : said ? 0 : -1, err, said ? "" : "not its output");
    err = NULL;
    rc = abx_sandbox_signal(s, pid, 15, &err);
    row(t, "process.manage", "signal", rc, err, "");
    bool ended = false;
    for (int i = 0; rc == 0 && !ended && i < 50; i++) {
        rc = abx_sandbox_read_output(s, pid, ~0ull, ~0ull, 100, &out, NULL);
        ended = rc == 0 && !out.running;
        if (rc == 0)
            abx_process_output_clear(&out);
    }
    row(t, "process.manage", "ended by the signal", ended ? 0 : -1, NULL,
        ended ? "" : "still running 5 s later");
}

static void test_ports(test_table *t, abx_sandbox *s)
{
    char *url = NULL;
    abx_error *err = NULL;
    int rc = abx_sandbox_port_url(s, 8080, &url, &err);
    abx_free(url);
    row(t, "ports.url", "url of port 8080", rc, err, "");
}

static void test_pause(test_table *t, abx_sandbox *s)
{
    abx_error *err = NULL;
    int rc = abx_sandbox_pause(s, &err);
    row(t, "sandbox.pause", "pause", rc, err, "");
    err = NULL;
    rc = abx_sandbox_resume(s, 120, &err);
    row(t, "sandbox.pause", "resume", rc, err, "");
}

static int test_plugin(cli_ctx *ctx, const char *id)
{
    test_table t = {json_array(), false};
    abx_client_options co = {.provider = id};
    abx_client *c = NULL;
    abx_error *err = NULL;
    int rc = abx_client_new(&co, &c, &err);
    if (rc < 0) {
        json_decref(t.rows);
        return cli_fail_error(ctx, err, rc);
    }
    char *text = NULL;
    rc = abx_client_features(c, &text, &err); /* a rest plugin: what abx's E2B client drives */
    if (rc < 0) {
        abx_client_free(c);
        json_decref(t.rows);
        return cli_fail_error(ctx, err, rc);
    }
    json_t *features = json_loads(text, 0, NULL);
    abx_free(text);
    bool lifecycle = false, timeout_cap = false, exec_cap = false, files_cap = false, stream_cap = false,
         process_cap = false, ports_cap = false, pause_cap = false;
    static const char *const known[] = {"sandbox.lifecycle", "sandbox.timeout", "sandbox.pause", "exec.run",
                                        "exec.stream",       "process.manage",  "files.rw",      "ports.url"};
    size_t i;
    json_t *f;
    json_array_foreach(features, i, f)
    {
        const char *name = json_string_value(f) ? json_string_value(f) : "";
        lifecycle |= strcmp(name, "sandbox.lifecycle") == 0;
        timeout_cap |= strcmp(name, "sandbox.timeout") == 0;
        exec_cap |= strcmp(name, "exec.run") == 0;
        files_cap |= strcmp(name, "files.rw") == 0;
        stream_cap |= strcmp(name, "exec.stream") == 0;
        process_cap |= strcmp(name, "process.manage") == 0;
        ports_cap |= strcmp(name, "ports.url") == 0;
        pause_cap |= strcmp(name, "sandbox.pause") == 0;
        bool is_known = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            is_known |= strcmp(name, known[k]) == 0;
        if (!is_known)
            row(&t, name, "(all)", 1, NULL, "declared, but EPP version 1 has no such capability");
    }
    if (process_cap && !stream_cap)
        row(&t, "process.manage", "(all)", -1, NULL,
            "declared without exec.stream: its processes cannot be started");
    json_decref(features);
    if (!lifecycle) {
        row(&t, "sandbox.lifecycle", "(all)", -1, NULL, "not declared: nothing else can be tested");
    } else {
        abx_sandbox *s = NULL;
        abx_create_options o = {.timeout_s = 120};
        rc = abx_sandbox_create(c, &o, &s, &err);
        row(&t, "sandbox.lifecycle", "create", rc, err, "");
        err = NULL;
        if (rc == 0) {
            abx_sandbox_info info;
            rc = abx_sandbox_get_info(s, &info, &err);
            bool same = rc == 0 && strcmp(info.sandbox_id, abx_sandbox_id(s)) == 0;
            abx_sandbox_info_clear(&info);
            row(&t, "sandbox.lifecycle", "get",
                rc < 0 ? rc
                : same ? 0
                       : -1,
                err, same ? "" : "another id came back");
            err = NULL;
            abx_sandbox_info *items = NULL;
            size_t n = 0;
            rc = abx_list(c, NULL, 100, 0, &items, &n, &err);
            bool listed = false;
            for (size_t k = 0; rc == 0 && k < n; k++)
                listed |= strcmp(items[k].sandbox_id, abx_sandbox_id(s)) == 0;
            abx_sandbox_info_list_free(items, n);
            row(&t, "sandbox.lifecycle", "list",
                rc < 0   ? rc
                : listed ? 0
                         : -1,
                err, listed ? "" : "not listed");
            err = NULL;
            if (timeout_cap) {
                rc = abx_sandbox_set_timeout(s, 600, &err);
                row(&t, "sandbox.timeout", "set_timeout", rc, err, "");
                err = NULL;
            }
            if (exec_cap)
                test_exec(&t, s);
            if (stream_cap)
                test_stream(&t, s, process_cap);
            if (stream_cap && process_cap)
                test_processes(&t, s);
            if (files_cap)
                test_files(&t, s);
            if (ports_cap)
                test_ports(&t, s);
            if (pause_cap)
                test_pause(&t, s);
            rc = abx_sandbox_kill(s, &err);
            row(&t, "sandbox.lifecycle", "kill", rc, err, "");
            err = NULL;
            abx_sandbox_info gone;
            rc = abx_sandbox_get_info(s, &gone, &err);
            if (rc == 0)
                abx_sandbox_info_clear(&gone);
            row(&t, "sandbox.lifecycle", "get after kill",
                rc < 0 && abx_error_code(err) == ABX_ENOTFOUND ? 0 : -1, NULL,
                rc < 0 && abx_error_code(err) == ABX_ENOTFOUND
                    ? ""
                    : "a killed sandbox still answers (want E8002)");
            abx_error_free(err);
            abx_sandbox_free(s);
        }
    }
    abx_client_free(c);
    if (ctx->json) {
        cli_print_json(json_pack("{s:s, s:b, s:o}", "id", id, "ok", !t.failed, "results", t.rows));
    } else {
        printf("%-20s %-20s %-9s %s\n", "CAPABILITY", "STEP", "RESULT", "DETAIL");
        json_t *r;
        json_array_foreach(t.rows, i, r) printf(
            "%-20s %-20s %-9s %s\n", json_string_value(json_object_get(r, "capability")),
            json_string_value(json_object_get(r, "step")), json_string_value(json_object_get(r, "status")),
            json_string_value(json_object_get(r, "detail")));
        json_decref(t.rows);
    }
    return t.failed ? CLI_EXIT_ERROR : 0;
}

int cmd_provider(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    install_args a = {0};
    bool purge = false;
    const cli_flag flags[] = {
        {"--link", CLI_BOOL, &a.link, 0, 0, NULL, 0, NULL},
        {"--yes", CLI_BOOL, &a.yes, 0, 0, NULL, 0, NULL},
        {"--force", CLI_BOOL, &a.force, 0, 0, NULL, 0, NULL},
        {"--purge", CLI_BOOL, &purge, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "provider", cmd_provider_help, argc, argv, flags, sizeof flags / sizeof flags[0],
                       pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    const char *op = npos ? pos[0] : "";
    if (strcmp(op, "install") == 0 && npos == 2)
        return install(ctx, pos[1], &a);
    if (strcmp(op, "list") == 0 && npos == 1)
        return list(ctx);
    if (strcmp(op, "remove") == 0 && npos == 2)
        return remove_plugin(ctx, pos[1], purge);
    if (strcmp(op, "doctor") == 0 && npos == 2)
        return doctor(ctx, pos[1]);
    if (strcmp(op, "test") == 0 && npos == 2)
        return test_plugin(ctx, pos[1]);
    return cli_fail(ctx, ABX_EUSAGE,
                    "usage: abx provider install SOURCE | list | remove ID | doctor ID | test ID");
}
