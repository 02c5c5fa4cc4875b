/* kernel.h: run_code: code-interpreter kernels and one-shot interpreters. */
#ifndef ABX_MCP_KERNEL_H
#define ABX_MCP_KERNEL_H

#include "session.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct mcp_code_result {
    int exit_code;
    char *stdout_data; /* decoded bytes (NUL-terminated); free with mcp_code_result_clear */
    size_t stdout_len;
    size_t stdout_total; /* bytes the cell wrote in all (> len: some were dropped) */
    size_t stdout_cut;   /* where the dropped bytes were (base/bounds.h: head and tail kept) */
    char *stderr_data;
    size_t stderr_len;
    size_t stderr_total;
    size_t stderr_cut;
    char *result;         /* repr of a final expression, or NULL */
    char stdout_path[96]; /* where the whole stream was saved in the sandbox, or "" */
    char stderr_path[96];
    json_t *output_files; /* [{name, path, size}] */
    bool timed_out;
    /* The kernel died during this call (it exited, or a signal killed it:
     * most often the memory limit); stderr says which. */
    bool kernel_died;
    /* This call started a new kernel because the last one died or timed
     * out: variables and imports from earlier calls are gone. */
    bool state_reset;
    char state_reset_reason[200];
    json_t *results; /* E2B's results in order: [{text?, html?, png?, ..., is_main_result}] */
} mcp_code_result;

typedef struct mcp_code_request {
    const char *language; /* python, javascript, shell, typescript, r */
    const char *code;
    unsigned timeout_s;
    bool stateful;     /* code-interpreter-v1: the language's default context; else a fresh interpreter */
    const char *cwd;   /* "/app" */
    size_t save_after; /* 0, or save a stream longer than this whole (stdout_path) */
    bool (*should_cancel)(void *userdata);
    void *userdata;
} mcp_code_request;

/* Runs the cell; 0 when it ran (an exception, a timeout, a kernel's death
 * are in *out: free with mcp_code_result_clear), else an error. */
int mcp_run_code(mcp_sandbox *b, const mcp_code_request *req, mcp_code_result *out, abx_error **err);
void mcp_code_result_clear(mcp_code_result *r);

#endif
