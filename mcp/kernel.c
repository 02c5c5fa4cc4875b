/* kernel.c: run_code.
 *
 * Owns: how code runs in a sandbox for MCP. python and javascript go to the
 * sandbox's own code interpreter through libabx (abx_sandbox_run_code: the
 * shim's /execute, runtime/shim_code.c), so the notebook state belongs to
 * the sandbox and every client sees it: on code-interpreter-v1 the cell
 * runs in the language's default context; on base in a fresh interpreter
 * for the call alone. A sandbox without a code interpreter (an exec
 * plugin's) runs python and javascript as one-shot interpreters (python3
 * -c, node -e) through its commands: no state between calls. shell runs
 * through bash; typescript and r run when their runtime exists inside and
 * fail with E8009 naming what is missing otherwise.
 */
#include "kernel.h"
#include "error_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mcp_code_result_clear(mcp_code_result *r)
{
    free(r->stdout_data);
    free(r->stderr_data);
    free(r->result);
    json_decref(r->output_files);
    json_decref(r->results);
    memset(r, 0, sizeof *r);
}

static bool is_kernel_language(const char *lang)
{
    return strcmp(lang, "python") == 0 || strcmp(lang, "javascript") == 0;
}

/* ---- languages without a kernel ------------------------------------------ */

/* 1 when check (a shell command) succeeds in the sandbox, 0 when not, or
 * the error of a sandbox that cannot run it at all (E8004 from a provider
 * that runs no commands: not "not installed"). */
static int sandbox_succeeds(mcp_sandbox *b, const char *cmd, abx_error **err)
{
    abx_exec_result r;
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    abx_error *e = NULL;
    int rc = abx_sandbox_exec_argv(b->handle, argv, NULL, &r, &e);
    int found = rc == 0 && r.exit_code == 0;
    abx_exec_result_clear(&r);
    if (rc < 0 && rc != -ABX_ECMDNOTFOUND) {
        if (err)
            *err = e;
        else
            abx_error_free(e);
        return rc;
    }
    abx_error_free(e);
    return found;
}

static int has_program(mcp_sandbox *b, const char *name, abx_error **err)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return sandbox_succeeds(b, cmd, err);
}

/* TypeScript on node with the typescript module (Debian's node-typescript,
 * in code-interpreter-v1): the cell is transpiled (types erased, ES2022,
 * ES modules: import and top-level await work) to a hidden module in the
 * working directory, so that imports resolve from there, and run. */
static const char ts_on_node[] =
    "const "
    "ts=require('typescript'),fs=require('fs'),path=require('path'),os=require('os'),url=require('url');"
    "const "
    "out=ts.transpileModule(process.argv[1],{fileName:'cell.ts',compilerOptions:{target:ts.ScriptTarget."
    "ES2022,module:ts.ModuleKind.ESNext,esModuleInterop:true}}).outputText;"
    "let file=path.join(process.cwd(),`.abx-cell-${process.pid}.mjs`);"
    "try{fs.writeFileSync(file,out,{mode:0o600,flag:'wx'})}catch{file=path.join(os.tmpdir(),"
    "`.abx-cell-${process.pid}.mjs`);fs.writeFileSync(file,out,{mode:0o600,flag:'wx'})}"
    "import(url.pathToFileURL(file).href).catch((e)=>{console.error(e&&e.stack||String(e));process.exitCode="
    "1})"
    ".finally(()=>{try{fs.unlinkSync(file)}catch{}});";

static int run_oneshot(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out, abx_error **err)
{
    const char *argv[6] = {NULL};
    const char *lang = req->language;
    if (strcmp(lang, "python") == 0 || strcmp(lang, "javascript") == 0) {
        bool py = lang[0] == 'p';
        int found = has_program(b, py ? "python3" : "node", err);
        if (found < 0)
            return found;
        if (!found)
            return abx__error_set(err, ABX_ECMDNOTFOUND, "language %s: %s is not installed in the sandbox",
                                  lang, py ? "python3" : "node");
        argv[0] = py ? "python3" : "node";
        argv[1] = py ? "-c" : "-e";
        argv[2] = req->code;
    } else if (strcmp(lang, "shell") == 0) {
        argv[0] = "/bin/bash";
        argv[1] = "-c";
        argv[2] = req->code;
    } else if (strcmp(lang, "r") == 0) {
        int found = has_program(b, "Rscript", err);
        if (found < 0)
            return found;
        if (!found)
            return abx__error_set(err, ABX_ECMDNOTFOUND,
                                  "language r: Rscript is not installed in the sandbox");
        argv[0] = "Rscript";
        argv[1] = "-e";
        argv[2] = req->code;
    } else {
        static const char *const ts_runners[] = {"tsx", "ts-node", "deno", "bun"};
        const char *runner = NULL;
        for (size_t i = 0; i < 4 && !runner; i++) {
            int found = has_program(b, ts_runners[i], err);
            if (found < 0)
                return found;
            runner = found ? ts_runners[i] : NULL;
        }
        int on_node =
            runner ? 0 : sandbox_succeeds(b, "node -e \"require.resolve('typescript')\" 2>/dev/null", err);
        if (on_node < 0)
            return on_node;
        if (!runner && !on_node)
            return abx__error_set(
                err, ABX_ECMDNOTFOUND,
                "language typescript: no TypeScript runtime (tsx, ts-node, deno, bun, or node "
                "with the typescript module) in the sandbox");
        argv[0] = runner ? runner : "node";
        argv[1] = runner && strcmp(runner, "deno") == 0 ? "eval" : "-e";
        argv[2] = runner ? req->code : ts_on_node;
        argv[3] = runner ? NULL : req->code;
    }
    abx_exec_options o = {.cwd = req->cwd,
                          .timeout_s = req->timeout_s,
                          .keep_output = true,
                          .should_cancel = req->should_cancel,
                          .userdata = req->userdata,
                          .save_output_after = req->save_after};
    abx_exec_result r;
    int rc = abx_sandbox_exec_argv(b->handle, argv, &o, &r, err);
    if (rc < 0)
        return rc;
    out->exit_code = r.exit_code;
    out->timed_out = r.timed_out;
    out->stdout_data = r.stdout_data ? r.stdout_data : calloc(1, 1);
    out->stdout_len = r.stdout_len;
    out->stdout_total = r.stdout_total;
    out->stdout_cut = r.stdout_cut;
    out->stderr_data = r.stderr_data ? r.stderr_data : calloc(1, 1);
    out->stderr_len = r.stderr_len;
    out->stderr_total = r.stderr_total;
    out->stderr_cut = r.stderr_cut;
    snprintf(out->stdout_path, sizeof out->stdout_path, "%s", r.stdout_path);
    snprintf(out->stderr_path, sizeof out->stderr_path, "%s", r.stderr_path);
    out->output_files = json_array();
    out->results = json_array();
    return 0;
}

/* stderr, then the error's traceback (or "Name: value"), as one stream:
 * what a model reads as "the code's errors". Takes r's stderr. */
static void stderr_with_error(abx_code_result *r, mcp_code_result *out)
{
    const char *tb = r->traceback && *r->traceback ? r->traceback : NULL;
    char line[600] = "";
    if (!tb && r->error_name)
        snprintf(line, sizeof line, "%s: %s\n", r->error_name, r->error_value ? r->error_value : "");
    const char *extra = tb ? tb : line;
    size_t extra_len = strlen(extra);
    bool nl = extra_len && extra[extra_len - 1] != '\n';
    char *joined = malloc(r->stderr_len + extra_len + 2);
    if (!joined) {
        out->stderr_data = r->stderr_data;
        out->stderr_len = r->stderr_len;
        r->stderr_data = NULL;
    } else {
        memcpy(joined, r->stderr_data, r->stderr_len);
        memcpy(joined + r->stderr_len, extra, extra_len);
        if (nl)
            joined[r->stderr_len + extra_len] = '\n';
        out->stderr_len = r->stderr_len + extra_len + nl;
        joined[out->stderr_len] = '\0';
        out->stderr_data = joined;
    }
    /* the traceback belongs to the kept tail */
    out->stderr_cut = r->stderr_total > r->stderr_len ? r->stderr_cut : out->stderr_len;
    out->stderr_total = (size_t)r->stderr_total + (out->stderr_len - r->stderr_len);
}

static int run_in_interpreter(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out,
                              abx_error **err)
{
    abx_code_options o = {.language = req->language,
                          .cwd = req->cwd,
                          .timeout_s = req->timeout_s,
                          .fresh = !req->stateful,
                          .save_output_after = req->save_after,
                          .should_cancel = req->should_cancel,
                          .userdata = req->userdata};
    abx_code_result r;
    int rc = abx_sandbox_run_code(b->handle, req->code, &o, &r, err);
    if (rc < 0)
        return rc;
    out->exit_code = r.exit_code;
    out->timed_out = r.timed_out;
    out->kernel_died = r.kernel_died;
    out->state_reset = r.state_reset;
    snprintf(out->state_reset_reason, sizeof out->state_reset_reason, "%s", r.state_reset_reason);
    out->stdout_data = r.stdout_data;
    out->stdout_len = r.stdout_len;
    out->stdout_cut = r.stdout_cut;
    out->stdout_total = (size_t)r.stdout_total;
    r.stdout_data = NULL;
    stderr_with_error(&r, out);
    snprintf(out->stdout_path, sizeof out->stdout_path, "%s", r.stdout_path);
    snprintf(out->stderr_path, sizeof out->stderr_path, "%s", r.stderr_path);
    out->result = r.text;
    r.text = NULL;
    out->results = json_loads(r.results_json, 0, NULL);
    out->output_files = json_loads(r.files_json, 0, NULL);
    if (!out->results)
        out->results = json_array();
    if (!out->output_files)
        out->output_files = json_array();
    abx_code_result_clear(&r);
    return 0;
}

int mcp_run_code(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out, abx_error **err)
{
    memset(out, 0, sizeof *out);
    bool kernel = is_kernel_language(req->language) && abx_sandbox_has_code_interpreter(b->handle);
    int rc = kernel ? run_in_interpreter(b, req, out, err) : run_oneshot(b, req, out, err);
    if (rc < 0)
        mcp_code_result_clear(out);
    return rc;
}
