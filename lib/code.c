/* code.c: abx_sandbox_run_code, a cell in one of the sandbox's kernels.
 *
 * Owns: the request to the code interpreter (/execute, E2B's shape plus
 * abx's own fields: timeout, cwd, save_after, fresh) and reading its answer,
 * NDJSON lines (../shared/e2b-protocol.md §3), into an abx_code_result. The
 * answer is read whole (it is bounded by the kernel's reply bound,
 * base/bounds.h); a line of abx's own ({"type":"abx"}) gives exact byte
 * counts, saved outputs and the kernel's fate; without it (another E2B
 * server) the counts are what the lines hold.
 */
#include "code.h"
#include "buf.h"
#include "error_internal.h"
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void abx_code_result_clear(abx_code_result *r)
{
    if (!r)
        return;
    free(r->stdout_data);
    free(r->stderr_data);
    free(r->error_name);
    free(r->error_value);
    free(r->traceback);
    free(r->text);
    free(r->results_json);
    free(r->files_json);
    memset(r, 0, sizeof *r);
}

/* ---- reading the answer ---------------------------------------------------- */

typedef struct text_acc {
    abx_buf text; /* bounded by the answer it comes from */
    size_t first; /* length of the first line's text */
    int lines;
} text_acc;

static void acc_append(text_acc *a, const char *text, size_t n)
{
    if (abx__buf_append(&a->text, text, n) == 0 && a->lines++ == 0)
        a->first = n;
}

static char *dup_or_null(json_t *v)
{
    const char *s = json_string_value(v);
    return s ? strdup(s) : NULL;
}

static void copy_into(char *dst, size_t len, json_t *v)
{
    const char *s = json_string_value(v);
    snprintf(dst, len, "%s", s ? s : "");
}

static void take_abx_line(abx_code_result *r, json_t *l, size_t *out_cut, size_t *err_cut)
{
    r->exit_code = (int)json_integer_value(json_object_get(l, "exit_code"));
    r->timed_out = json_is_true(json_object_get(l, "timed_out"));
    r->kernel_died = json_is_true(json_object_get(l, "kernel_died"));
    r->state_reset = json_is_true(json_object_get(l, "state_reset"));
    copy_into(r->state_reset_reason, sizeof r->state_reset_reason, json_object_get(l, "state_reset_reason"));
    copy_into(r->context_id, sizeof r->context_id, json_object_get(l, "context_id"));
    copy_into(r->stdout_path, sizeof r->stdout_path, json_object_get(l, "stdout_path"));
    copy_into(r->stderr_path, sizeof r->stderr_path, json_object_get(l, "stderr_path"));
    json_t *v;
    if ((v = json_object_get(l, "stdout_bytes")) && json_is_integer(v) && json_integer_value(v) >= 0)
        r->stdout_total = (unsigned long long)json_integer_value(v);
    if ((v = json_object_get(l, "stderr_bytes")) && json_is_integer(v) && json_integer_value(v) >= 0)
        r->stderr_total = (unsigned long long)json_integer_value(v);
    if ((v = json_object_get(l, "stdout_cut")) && json_is_integer(v) && json_integer_value(v) >= 0)
        *out_cut = (size_t)json_integer_value(v);
    if ((v = json_object_get(l, "stderr_cut")) && json_is_integer(v) && json_integer_value(v) >= 0)
        *err_cut = (size_t)json_integer_value(v);
    json_t *files = json_object_get(l, "files");
    if (json_is_array(files)) {
        free(r->files_json);
        r->files_json = json_dumps(files, JSON_COMPACT);
    }
}

/* One NDJSON line. */
static void take_line(abx_code_result *r, json_t *l, text_acc *out, text_acc *err, json_t *results,
                      size_t *out_cut, size_t *err_cut, bool *had_abx)
{
    const char *type = json_string_value(json_object_get(l, "type"));
    json_t *text = json_object_get(l, "text");
    if (!type)
        return;
    if (strcmp(type, "stdout") == 0 && json_is_string(text)) {
        acc_append(out, json_string_value(text), json_string_length(text));
    } else if (strcmp(type, "stderr") == 0 && json_is_string(text)) {
        acc_append(err, json_string_value(text), json_string_length(text));
    } else if (strcmp(type, "result") == 0) {
        json_t *copy = json_deep_copy(l);
        json_object_del(copy, "type");
        if (json_is_true(json_object_get(l, "is_main_result")) && json_is_string(text) && !r->text)
            r->text = strdup(json_string_value(text));
        json_array_append_new(results, copy);
    } else if (strcmp(type, "error") == 0) {
        free(r->error_name);
        free(r->error_value);
        free(r->traceback);
        r->error_name = dup_or_null(json_object_get(l, "name"));
        r->error_value = dup_or_null(json_object_get(l, "value"));
        r->traceback = dup_or_null(json_object_get(l, "traceback"));
    } else if (strcmp(type, "number_of_executions") == 0) {
        r->execution_count = (int)json_integer_value(json_object_get(l, "execution_count"));
    } else if (strcmp(type, "abx") == 0) {
        take_abx_line(r, l, out_cut, err_cut);
        *had_abx = true;
    }
}

int abx__code_parse_answer(const char *data, size_t len, abx_code_result *r)
{
    memset(r, 0, sizeof *r);
    text_acc out = {0}, err = {0};
    abx__buf_init(&out.text, len); /* the texts come out of the answer: never longer */
    abx__buf_init(&err.text, len);
    json_t *results = json_array();
    size_t out_cut = (size_t)-1, err_cut = (size_t)-1;
    bool had_abx = false;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (data + at)) : len - at;
        json_t *l = json_loadb(data + at, n, 0, NULL);
        if (json_is_object(l))
            take_line(r, l, &out, &err, results, &out_cut, &err_cut, &had_abx);
        json_decref(l);
        at += n + 1;
    }
    r->stdout_data = abx__buf_take(&out.text, &r->stdout_len);
    r->stderr_data = abx__buf_take(&err.text, &r->stderr_len);
    size_t out_len = r->stdout_len, err_len = r->stderr_len;
    if (!had_abx) { /* another server: what the lines hold is all there is */
        r->stdout_total = out_len;
        r->stderr_total = err_len;
        r->exit_code = r->error_name ? 1 : 0;
    }
    if (r->stdout_total < out_len)
        r->stdout_total = out_len;
    if (r->stderr_total < err_len)
        r->stderr_total = err_len;
    /* the kept parts: the first line's text, then the last's */
    r->stdout_cut = out_cut <= out_len ? out_cut : out.lines > 1 ? out.first : out_len;
    r->stderr_cut = err_cut <= err_len ? err_cut : err.lines > 1 ? err.first : err_len;
    r->results_json = json_dumps(results, JSON_COMPACT);
    json_decref(results);
    if (!r->files_json)
        r->files_json = strdup("[]");
    if (!r->stdout_data || !r->stderr_data || !r->results_json || !r->files_json) {
        abx_code_result_clear(r);
        return -ABX_ENOMEM;
    }
    return 0;
}

/* ---- the request -------------------------------------------------------------- */

json_t *abx__code_request(const char *code, const abx_code_options *o, abx_error **err, int *rc)
{
    *rc = 0;
    const char *lang = o && o->language && *o->language ? o->language : "python";
    if (strcmp(lang, "python") != 0 && strcmp(lang, "javascript") != 0 && strcmp(lang, "js") != 0) {
        *rc = abx__error_set(err, ABX_EINVAL, "language: python or javascript");
        return NULL;
    }
    if (o && o->timeout_s > ABX_TIMEOUT_MAX_S) {
        *rc = abx__error_set(err, ABX_EINVAL, "timeout: at most %d seconds", ABX_TIMEOUT_MAX_S);
        return NULL;
    }
    if (o && o->cwd && o->cwd[0] != '/') {
        *rc = abx__error_set(err, ABX_EINVAL, "cwd: an absolute path");
        return NULL;
    }
    json_t *req = json_pack("{s:s}", "code", code);
    if (o && o->context_id)
        json_object_set_new(req, "context_id", json_string(o->context_id));
    else
        json_object_set_new(req, "language", json_string(lang));
    if (o && o->cwd)
        json_object_set_new(req, "cwd", json_string(o->cwd));
    if (o && o->timeout_s)
        json_object_set_new(req, "timeout", json_integer(o->timeout_s));
    if (o && o->fresh)
        json_object_set_new(req, "fresh", json_true());
    if (o && o->save_output_after)
        json_object_set_new(req, "save_after", json_integer((json_int_t)o->save_output_after));
    json_t *env = json_object();
    for (size_t i = 0; o && o->envs && o->envs[i]; i++) {
        const char *eq = strchr(o->envs[i], '=');
        size_t klen = eq ? (size_t)(eq - o->envs[i]) : 0;
        if (!eq || klen == 0 || klen >= 256 || !abx__env_name_valid(o->envs[i], klen)) {
            json_decref(env);
            json_decref(req);
            *rc = abx__error_set(err, ABX_EINVAL,
                                 "envs: expected KEY=VALUE with KEY of [A-Za-z_][A-Za-z0-9_]*");
            return NULL;
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)klen, o->envs[i]);
        json_object_set_new(env, key, json_string(eq + 1));
    }
    if (json_object_size(env))
        json_object_set(req, "env_vars", env);
    json_decref(env);
    return req;
}
