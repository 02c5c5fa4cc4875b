/* shim_code.c: E2B's code-interpreter API (../shared/e2b-protocol.md §3)
 * served by the shim: /execute (NDJSON) and /contexts.
 *
 * Owns: contexts (one kernel process each: mcp/kernels/python_kernel.py or
 * node_kernel.js, started through the shim's own process table with stdin
 * open), the default context per language, and turning a kernel's reply
 * into E2B's NDJSON lines (number_of_executions, stdout, stderr, result,
 * error, end_of_execution). Executions are serialised (code_mu): a kernel
 * runs one cell at a time. A cell past EXEC_TIMEOUT_S gets SIGINT; a kernel
 * that still does not answer is killed and its context restarted.
 */
#include "shim_code.h"
#include "b64.h"
#include "error_internal.h"
#include "kernel_sources.h"
#include "shim_files.h"
#include "sysutil.h"
#include "reply_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define EXEC_TIMEOUT_S 300
#define KILL_GRACE_MS 3000

typedef struct code_context {
    char id[40];
    char language[16];
    char cwd[256];
    unsigned uid;
    int pid;
    uint64_t out_off;     /* where the next reply is read from in the kernel's stdout */
    unsigned executions;
    bool is_default;
} code_context;

static bool language_ok(const char *l)
{
    return strcmp(l, "python") == 0 || strcmp(l, "javascript") == 0;
}

static const char *normalise(const char *l)
{
    if (!l)
        return "python";
    if (strcmp(l, "js") == 0)
        return "javascript";
    return l;
}

/* Writes the kernel's source into the sandbox (/tmp/.abx-<uid>/, as the
 * kernel's own user) so that it starts from a file: its command line stays
 * one line in `ps`, not the whole source. Returns the path in *path. */
static int write_kernel_file(shim *sh, const code_context *c, char *path, size_t len, abx_error **err)
{
    bool python = strcmp(c->language, "python") == 0;
    snprintf(path, len, "/tmp/.abx-%u/%s", c->uid, python ? "python_kernel.py" : "node_kernel.js");
    const char *src = python ? python_kernel : node_kernel;
    int fd = -1;
    int rc = abx__fs_open_file(sh, c->uid, path, O_WRONLY | O_CREAT | O_TRUNC, &fd, err);
    if (rc < 0)
        return rc;
    rc = abx__write_all(fd, src, strlen(src)) < 0 ? abx__error_errno(err, ABX_EIO, errno, "writing the kernel") : 0;
    close(fd);
    return rc;
}

static int spawn_kernel(shim *sh, code_context *c, abx_error **err)
{
    char file[96];
    int rc = write_kernel_file(sh, c, file, sizeof file, err);
    if (rc < 0)
        return rc;
    json_t *args = strcmp(c->language, "python") == 0 ? json_pack("[s, s]", "-u", file) : json_pack("[s]", file);
    char tag[64];
    snprintf(tag, sizeof tag, "abx-context-%s", c->id);
    shim_start_request r = {.cmd = strcmp(c->language, "python") == 0 ? "python3" : "node", .args = args,
                            .cwd = c->cwd, .tag = tag, .uid = c->uid, .stdin_open = true};
    int pid = abx__shim_proc_start(sh, &r, err);
    json_decref(args);
    if (pid < 0)
        return pid;
    c->pid = pid;
    c->out_off = 0;
    return 0;
}

/* Lock held (code_mu). */
static code_context *find(shim *sh, const char *id)
{
    for (int i = 0; i < sh->ncontexts; i++)
        if (strcmp(sh->contexts[i]->id, id) == 0)
            return sh->contexts[i];
    return NULL;
}

static int context_new(shim *sh, const char *language, const char *cwd, unsigned uid, bool is_default,
                       code_context **out, abx_error **err)
{
    if (sh->ncontexts >= (int)(sizeof sh->contexts / sizeof sh->contexts[0]))
        return abx__error_set(err, ABX_ELIMIT, "too many contexts (16): delete one");
    code_context *c = calloc(1, sizeof *c);
    if (!c)
        return abx__error_set(err, ABX_ENOMEM, "context");
    unsigned char raw[8];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        free(c);
        return abx__error_set(err, ABX_ESYS, "no randomness");
    }
    for (int i = 0; i < 8; i++)
        snprintf(c->id + 2 * i, 3, "%02x", raw[i]);
    snprintf(c->language, sizeof c->language, "%s", language);
    snprintf(c->cwd, sizeof c->cwd, "%s", cwd ? cwd : "/home/user");
    c->uid = uid;
    c->is_default = is_default;
    int rc = spawn_kernel(sh, c, err);
    if (rc < 0) {
        free(c);
        return rc;
    }
    sh->contexts[sh->ncontexts++] = c;
    *out = c;
    return 0;
}

static json_t *context_json(const code_context *c)
{
    return json_pack("{s:s, s:s, s:s}", "id", c->id, "language", c->language, "cwd", c->cwd);
}

int abx__code_context_create(shim *sh, json_t *req, unsigned uid, json_t **out, abx_error **err)
{
    const char *lang = normalise(json_string_value(json_object_get(req, "language")));
    if (!language_ok(lang))
        return abx__error_set(err, ABX_EINVAL, "language: python or javascript");
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = NULL;
    int rc = context_new(sh, lang, json_string_value(json_object_get(req, "cwd")), uid, false, &c, err);
    if (rc == 0)
        *out = context_json(c);
    pthread_mutex_unlock(&sh->code_mu);
    return rc;
}

json_t *abx__code_contexts_list(shim *sh)
{
    json_t *list = json_array();
    pthread_mutex_lock(&sh->code_mu);
    for (int i = 0; i < sh->ncontexts; i++)
        json_array_append_new(list, context_json(sh->contexts[i]));
    pthread_mutex_unlock(&sh->code_mu);
    return list;
}

int abx__code_context_delete(shim *sh, const char *id, abx_error **err)
{
    pthread_mutex_lock(&sh->code_mu);
    int rc = 0;
    code_context *c = find(sh, id);
    if (!c) {
        rc = abx__error_set(err, ABX_ENOENT, "context not found");
    } else {
        abx__shim_proc_signal(sh, c->pid, SIGKILL);
        for (int i = 0; i < sh->ncontexts; i++)
            if (sh->contexts[i] == c)
                sh->contexts[i] = sh->contexts[--sh->ncontexts];
        free(c);
    }
    pthread_mutex_unlock(&sh->code_mu);
    return rc;
}

int abx__code_context_restart(shim *sh, const char *id, abx_error **err)
{
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = find(sh, id);
    int rc = c ? 0 : abx__error_set(err, ABX_ENOENT, "context not found");
    if (c) {
        abx__shim_proc_signal(sh, c->pid, SIGKILL);
        rc = spawn_kernel(sh, c, err);
    }
    pthread_mutex_unlock(&sh->code_mu);
    return rc;
}

/* ---- execute ---------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    return abx__shim_now_ms();
}

/* Waits for the reply to id in c's kernel stdout; NULL on timeout or death.
 * The channel is read through a bounded scanner (reply_scan.h): a kernel
 * or cell that floods it costs the shim at most ABX_BOUND_KERNEL_LINE.
 * Lock: code_mu held; takes sh->mu while reading. */
static json_t *await_reply(shim *sh, code_context *c, unsigned id, bool *interrupted)
{
    uint64_t deadline = now_ms() + EXEC_TIMEOUT_S * 1000u;
    abx_reply_scan scan;
    abx__reply_scan_init(&scan, 0, 0); /* bytes outside replies are not kept */
    json_t *reply = NULL;
    char *buf = malloc(65536);
    pthread_mutex_lock(&sh->mu);
    while (buf) {
        shim_proc *p = abx__shim_proc_find_locked(sh, c->pid, NULL);
        if (!p)
            break;
        bool trunc = false, got = false;
        size_t n;
        while (!reply && (n = abx__outbuf_read_locked(&p->out, &c->out_off, buf, 65536, &trunc)) > 0) {
            size_t used = 0;
            reply = abx__reply_scan_feed(&scan, buf, n, id, &used);
            c->out_off -= n - used; /* what follows the reply is the next call's */
            got = true;
        }
        if (reply)
            break;
        if (got)
            abx__shim_wake(sh); /* the kernel may be paused on a full ring */
        if (p->exited || sh->ending)
            break;
        uint64_t now = now_ms();
        if (now >= deadline) {
            if (*interrupted)
                break;
            *interrupted = true;
            pthread_mutex_unlock(&sh->mu);
            abx__shim_proc_signal(sh, c->pid, SIGINT);
            pthread_mutex_lock(&sh->mu);
            deadline = now + KILL_GRACE_MS;
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
    }
    pthread_mutex_unlock(&sh->mu);
    free(buf);
    abx__reply_scan_free(&scan);
    return reply;
}

static void line(json_t *lines, json_t *obj)
{
    json_array_append_new(lines, obj);
}

static json_t *decoded(json_t *reply, const char *field)
{
    char *out = NULL;
    long n = abx__b64_decode(json_string_value(json_object_get(reply, field)) ?: "", &out);
    json_t *s = n > 0 ? json_stringn(out, (size_t)n) : NULL; /* invalid UTF-8 -> dropped */
    free(out);
    return s;
}

/* E2B's error event from a traceback: name and value from its last line
 * ("ZeroDivisionError: division by zero"). */
static json_t *error_event(json_t *stderr_text)
{
    const char *tb = json_string_value(stderr_text) ?: "";
    size_t n = strlen(tb);
    while (n > 0 && tb[n - 1] == '\n')
        n--;
    size_t start = n;
    while (start > 0 && tb[start - 1] != '\n')
        start--;
    char last[1200];
    snprintf(last, sizeof last, "%.*s", (int)(n - start), tb + start);
    char *sep = strstr(last, ": ");
    const char *value = "";
    if (sep) {
        *sep = '\0';
        value = sep + 2;
    }
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", last[0] ? last : "Error", "value", value,
                     "traceback", tb);
}

int abx__code_execute(shim *sh, json_t *req, unsigned uid, char **ndjson, abx_error **err)
{
    const char *code = json_string_value(json_object_get(req, "code"));
    const char *ctx_id = json_string_value(json_object_get(req, "context_id"));
    const char *lang_in = json_string_value(json_object_get(req, "language"));
    if (!code)
        return abx__error_set(err, ABX_EINVAL, "code: a string is required");
    if (ctx_id && lang_in)
        return abx__error_set(err, ABX_EINVAL, "context_id and language: give one, not both");
    const char *lang = normalise(lang_in);
    if (!ctx_id && !language_ok(lang))
        return abx__error_set(err, ABX_EINVAL, "language: python or javascript");
    pthread_mutex_lock(&sh->code_mu);
    code_context *c = NULL;
    int rc = 0;
    if (ctx_id) {
        c = find(sh, ctx_id);
        if (!c)
            rc = abx__error_set(err, ABX_ENOENT, "context not found");
    } else {
        for (int i = 0; i < sh->ncontexts && !c; i++)
            if (sh->contexts[i]->is_default && strcmp(sh->contexts[i]->language, lang) == 0 &&
                sh->contexts[i]->uid == uid)
                c = sh->contexts[i];
        if (!c)
            rc = context_new(sh, lang, "/home/user", uid, true, &c, err);
    }
    if (rc == 0) { /* a kernel that died (OOM, a kill) is started again */
        pthread_mutex_lock(&sh->mu);
        shim_proc *p = abx__shim_proc_find_locked(sh, c->pid, NULL);
        bool dead = !p || p->exited;
        pthread_mutex_unlock(&sh->mu);
        if (dead)
            rc = spawn_kernel(sh, c, err);
    }
    json_t *lines = json_array();
    if (rc == 0) {
        unsigned id = ++c->executions;
        json_t *msg = json_pack("{s:i, s:s, s:s, s:i}", "id", (int)id, "code", code, "cwd", c->cwd, "timeout",
                                EXEC_TIMEOUT_S);
        json_t *env = json_object_get(req, "env_vars"); /* for this cell only */
        if (json_is_object(env))
            json_object_set(msg, "env", env);
        char *text = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        size_t n = text ? strlen(text) : 0;
        if (text) {
            text[n] = '\n';
            rc = abx__shim_proc_write_stdin(sh, c->pid, text, n + 1);
            free(text);
        }
        bool interrupted = false;
        json_t *reply = rc == 0 ? await_reply(sh, c, id, &interrupted) : NULL;
        line(lines, json_pack("{s:s, s:i}", "type", "number_of_executions", "execution_count", (int)id));
        if (!reply) {
            abx__shim_proc_signal(sh, c->pid, SIGKILL);
            line(lines, json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", "TimeoutError", "value",
                                  "the cell did not finish and was stopped; the context was restarted", "traceback",
                                  ""));
            spawn_kernel(sh, c, NULL);
        } else {
            json_t *out = decoded(reply, "stdout"), *errs = decoded(reply, "stderr");
            if (out && json_string_length(out))
                line(lines, json_pack("{s:s, s:O}", "type", "stdout", "text", out));
            if (errs && json_string_length(errs) && json_integer_value(json_object_get(reply, "exit_code")) == 0)
                line(lines, json_pack("{s:s, s:O}", "type", "stderr", "text", errs));
            const char *result = json_string_value(json_object_get(reply, "result"));
            if (result)
                line(lines, json_pack("{s:s, s:s, s:b}", "type", "result", "text", result, "is_main_result", 1));
            if (json_integer_value(json_object_get(reply, "exit_code")) != 0)
                line(lines, error_event(errs));
            json_decref(out);
            json_decref(errs);
            json_decref(reply);
        }
        line(lines, json_pack("{s:s}", "type", "end_of_execution"));
        rc = 0;
    }
    pthread_mutex_unlock(&sh->code_mu);
    if (rc < 0) {
        json_decref(lines);
        return rc;
    }
    size_t cap = 1024, len = 0;
    char *buf = malloc(cap);
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l) {
        char *t = json_dumps(l, JSON_COMPACT);
        size_t tl = t ? strlen(t) : 0;
        if (buf && len + tl + 2 > cap) {
            while (len + tl + 2 > cap)
                cap *= 2;
            char *g = realloc(buf, cap);
            if (!g) {
                free(buf);
                buf = NULL;
            }
            buf = g;
        }
        if (buf && t) {
            memcpy(buf + len, t, tl);
            len += tl;
            buf[len++] = '\n';
            buf[len] = '\0';
        }
        free(t);
    }
    json_decref(lines);
    if (!buf)
        return abx__error_set(err, ABX_ENOMEM, "answer");
    *ndjson = buf;
    return 0;
}
