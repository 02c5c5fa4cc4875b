/* fuzz-epp.c: abx's EPP host (lib/epp.c, lib/epp_exec.c,
 * lib/provider_epp.c) against a plugin that answers with the fuzz input.
 * The plugin (installed once into a private ABX_HOME, digest and all)
 * answers initialize, then answers each request with the input's next
 * part (its lines up to a "---" line), and exits at the input's end. The input's first byte picks what abx
 * asks through its public API: info, list, exec (streamed), create, a file read, a new timeout, the
 * processes; the rest are the plugin's lines (wrong ids, duplicate and unsolicited answers, exec.output for
 * execs nobody started, huge lines, deep nesting, garbage). Properties: every call ends (the plugin's exit
 * ends what waits) with 0 or an E8xxx error that has a message; under ASan, nothing leaks and memory stays
 * bounded.
 */
#include "abx/abx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char home[128], input_path[300];
static unsigned long answered, failed;

/* The plugin (sh: reads a pipe a byte at a time, so each request as it
 * comes): initialize answered, then for each request the input's next
 * part (lines up to a "---" line); at the input's end it exits. */
static const char plugin_sh[] =
    "exec 3< \"$ABX_PROVIDER_DATA_DIR/input\"\n"
    "IFS= read -r req || exit 0\n"
    "printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"protocol_version\":\"1\",\"features\":"
    "[\"sandbox.lifecycle\",\"sandbox.timeout\",\"exec.run\",\"exec.stream\",\"process.manage\","
    "\"files.rw\",\"ports.url\"]}}'\n"
    "while IFS= read -r req; do\n"
    "  done=1\n"
    "  while IFS= read -r l <&3; do\n"
    "    if [ \"$l\" = \"---\" ]; then done=0; break; fi\n"
    "    printf '%s\\n' \"$l\"\n"
    "  done\n"
    "  [ $done = 1 ] && exit 0\n"
    "done\n";

static void put(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || (len && write(fd, text, len) != (ssize_t)len)) {
        perror(path);
        abort();
    }
    close(fd);
}

static void cleanup(void)
{
    fprintf(stderr, "fuzz-epp: %lu calls answered, %lu refused with a code\n", answered, failed);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz-epp: could not remove %s\n", home);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(home, sizeof home, "/tmp/abx-fuzz-epp-XXXXXX");
    if (!mkdtemp(home))
        abort();
    setenv("ABX_HOME", home, 1);
    unsetenv("ABX_PROVIDER");
    char dir[200], path[300];
    snprintf(dir, sizeof dir, "%s/src", home);
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s/src/fz", home);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/abx-provider.toml", dir);
    const char manifest[] = "[provider]\nid = \"fz\"\nkind = \"exec\"\nversion = \"1\"\n"
                            "[runtime]\ncommand = [\"/bin/sh\", \"plugin.sh\"]\n";
    put(path, manifest, strlen(manifest));
    snprintf(path, sizeof path, "%s/plugin.sh", dir);
    put(path, plugin_sh, strlen(plugin_sh));
    abx_plugin_install_options o = {.source = dir, .force = true};
    char *info = NULL;
    abx_error *err = NULL;
    if (abx_plugin_install(&o, &info, &err) < 0) {
        fprintf(stderr, "fuzz-epp: install: %s\n", abx_error_message(err));
        abort();
    }
    abx_free(info);
    snprintf(path, sizeof path, "%s/provider-data", home);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/provider-data/fz", home);
    mkdir(path, 0700);
    snprintf(input_path, sizeof input_path, "%s/provider-data/fz/input", home);
    /* a call the plugin answers wrongly waits 1 s, not 30 */
    snprintf(path, sizeof path, "%s/config.toml", home);
    const char config[] = "[providers.fz]\nrequest_timeout = \"1\"\n";
    put(path, config, strlen(config));
    atexit(cleanup);
    return 0;
}

static void judge(int rc, abx_error *err)
{
    if (rc == 0) {
        answered++;
    } else {
        int code = -rc;
        if (code < 8001 || code > 8099 || !err || !abx_error_message(err) ||
            (int)abx_error_code(err) != code) {
            fprintf(stderr, "fuzz-epp: rc %d, error %s: %s\n", rc,
                    err ? abx_err_name(abx_error_code(err)) : "none", err ? abx_error_message(err) : "");
            abort();
        }
        failed++;
    }
    abx_error_free(err);
}

static void on_output(const char *data, size_t len, void *ud)
{
    (void)data;
    *(size_t *)ud += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    put(input_path, (const char *)data + 1, size - 1);
    abx_client_options co = {.provider = "fz"};
    abx_client *c = NULL;
    abx_error *err = NULL;
    if (abx_client_new(&co, &c, &err) < 0) {
        fprintf(stderr, "fuzz-epp: client: %s\n", abx_error_message(err));
        abort();
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    abx_sandbox *s = NULL;
    int rc = 0;
    switch (data[0] % 7) {
    case 0: {
        abx_sandbox_info info;
        rc = abx_get_info_by_id(c, "fz:box1", &info, &err);
        if (rc == 0)
            abx_sandbox_info_clear(&info);
        break;
    }
    case 1: {
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        rc = abx_list(c, NULL, 100, 0, &items, &n, &err);
        if (rc == 0)
            abx_sandbox_info_list_free(items, n);
        break;
    }
    case 3:
        rc = abx_sandbox_create(c, NULL, &s, &err);
        break;
    default:
        /* the first call is connect (the plugin answers it): what follows goes to a plugin that is gone */
        rc = abx_sandbox_connect(c, "fz:box1", &s, &err);
        break;
    }
    if (rc == 0 && s && data[0] % 7 >= 2 && data[0] % 7 != 3) {
        abx_error_free(err);
        err = NULL;
        size_t seen = 0;
        abx_exec_result r;
        char *text = NULL;
        size_t len = 0;
        switch (data[0] % 7) {
        case 2: {
            /* a command without a timeout waits for its end as long as the plugin lives: one is given */
            abx_exec_options eo = {
                .on_stdout = on_output, .on_stderr = on_output, .userdata = &seen, .timeout_s = 1};
            rc = abx_sandbox_exec(s, "echo hi", &eo, &r, &err);
            if (rc == 0)
                abx_exec_result_clear(&r);
            break;
        }
        case 4:
            rc = abx_sandbox_read_file(s, "/app/x", NULL, 1 << 20, &text, &len, &err);
            abx_free(text);
            break;
        case 5:
            rc = abx_sandbox_set_timeout(s, 60, &err);
            break;
        default:
            rc = abx_sandbox_list_processes(s, &text, &err);
            abx_free(text);
        }
    }
    judge(rc, err);
    abx_sandbox_free(s);
    abx_client_free(c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (t1.tv_sec - t0.tv_sec > 15)
        abort(); /* a call that waited past its timeout and the plugin's end */
    return 0;
}
