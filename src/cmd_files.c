/* cmd_files.c: `abx files ls|cat|put|get|mkdir|rm|mv`. */
#include "cli.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_files_help[] =
    "Usage: abx files ls ID [PATH] [--depth N]   list a directory (default /app)\n"
    "       abx files cat ID PATH                 print a file\n"
    "       abx files put ID LOCAL REMOTE         upload (LOCAL '-' = stdin)\n"
    "       abx files get ID REMOTE LOCAL         download (LOCAL '-' = stdout)\n"
    "       abx files mkdir ID PATH               create a directory and its parents\n"
    "       abx files rm ID PATH                  remove a file or a directory tree\n"
    "       abx files mv ID FROM TO               move or rename\n"
    "\n"
    "Paths are inside the sandbox (relative ones are relative to the user's\n"
    "home); '..' and symlinks never leave it. Transfers stream: files of any\n"
    "size move without being held in memory.\n"
    "\n"
    "  --user U    user (default) or root: whose permissions apply\n"
    "  --depth N   ls: levels to descend, 1-32 (default 1)\n"
    "  --json      machine output (cat: {path, size, content} as UTF-8 text,\n"
    "              up to 16 MiB)\n";

typedef struct files_args {
    const char *user;
    unsigned depth;
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos;
} files_args;

static int need(cli_ctx *ctx, const files_args *a, size_t n, const char *usage)
{
    if (a->npos != n) {
        cli_fail(ctx, ABX_EUSAGE, "usage: abx files %s", usage);
        return -1;
    }
    return 0;
}

static int print_entries(cli_ctx *ctx, const char *json)
{
    json_t *list = json_loads(json, 0, NULL);
    if (ctx->json) {
        cli_print_json(list ? list : json_array());
        return 0;
    }
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *target = json_string_value(json_object_get(e, "symlink_target"));
        printf("%s %10lld %s %s%s%s\n", json_string_value(json_object_get(e, "permissions")) ?: "?",
               (long long)json_integer_value(json_object_get(e, "size")),
               json_string_value(json_object_get(e, "modified_time")) ?: "",
               json_string_value(json_object_get(e, "path")) ?: "", target ? " -> " : "",
               target ? target : "");
    }
    json_decref(list);
    return 0;
}

static int files_do(cli_ctx *ctx, abx_sandbox *s, const char *op, files_args *a)
{
    abx_error *err = NULL;
    int rc = 0;
    if (strcmp(op, "ls") == 0) {
        char *json = NULL;
        rc = abx_sandbox_list_files(s, a->npos > 1 ? a->pos[1] : "/app", a->depth, a->user, &json, &err);
        if (rc == 0) {
            print_entries(ctx, json);
            abx_free(json);
        }
    } else if (strcmp(op, "cat") == 0 && ctx->json) {
        char *data = NULL;
        size_t len = 0;
        rc = abx_sandbox_read_file(s, a->pos[1], a->user, 16u << 20, &data, &len, &err);
        if (rc == 0) {
            cli_print_json(json_pack("{s:s, s:I, s:o}", "path", a->pos[1], "size", (json_int_t)len, "content",
                                     mcp_text(data, len, (size_t)-1, NULL)));
            abx_free(data);
        }
    } else if (strcmp(op, "cat") == 0) {
        unsigned long long n = 0;
        fflush(stdout);
        rc = abx_sandbox_read_file_to_fd(s, a->pos[1], STDOUT_FILENO, a->user, &n, &err);
    } else if (strcmp(op, "get") == 0) {
        const char *local = a->pos[2];
        bool to_stdout = strcmp(local, "-") == 0;
        int fd = to_stdout ? STDOUT_FILENO : open(local, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return cli_fail(ctx, ABX_EIO, "cannot open %.200s for writing: %s", local, strerror(errno));
        unsigned long long n = 0;
        rc = abx_sandbox_read_file_to_fd(s, a->pos[1], fd, a->user, &n, &err);
        if (!to_stdout && close(fd) < 0 && rc == 0)
            return cli_fail(ctx, ABX_EIO, "writing %.200s: %s", local, strerror(errno));
        if (rc < 0 && !to_stdout)
            unlink(local);
        if (rc == 0 && ctx->json && !to_stdout)
            cli_print_json(json_pack("{s:s, s:I}", "path", a->pos[1], "bytes", (json_int_t)n));
    } else if (strcmp(op, "put") == 0) {
        const char *local = a->pos[1];
        int fd = strcmp(local, "-") == 0 ? STDIN_FILENO : open(local, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return cli_fail(ctx, ABX_EIO, "cannot open %.200s: %s", local, strerror(errno));
        unsigned long long n = 0;
        rc = abx_sandbox_write_file_from_fd(s, a->pos[2], fd, a->user, &n, &err);
        if (fd != STDIN_FILENO)
            close(fd);
        if (rc == 0 && ctx->json)
            cli_print_json(json_pack("{s:s, s:I}", "path", a->pos[2], "bytes_written", (json_int_t)n));
    } else if (strcmp(op, "mkdir") == 0) {
        bool created = false;
        rc = abx_sandbox_mkdir(s, a->pos[1], a->user, &created, &err);
        if (rc == 0 && ctx->json)
            cli_print_json(json_pack("{s:s, s:b}", "path", a->pos[1], "created", created));
    } else if (strcmp(op, "rm") == 0) {
        rc = abx_sandbox_remove(s, a->pos[1], a->user, &err);
        if (rc == 0 && ctx->json)
            cli_print_json(json_pack("{s:b}", "success", 1));
    } else {
        rc = abx_sandbox_move(s, a->pos[1], a->pos[2], a->user, &err);
        if (rc == 0 && ctx->json)
            cli_print_json(json_pack("{s:b}", "success", 1));
    }
    return rc < 0 ? cli_fail_error(ctx, err, rc) : 0;
}

int cmd_files(cli_ctx *ctx, int argc, char **argv)
{
    if (argc < 2 || cli_is_help(argv[1])) {
        fputs(cmd_files_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    const char *op = argv[1];
    static const struct {
        const char *op;
        size_t min, max;
        const char *usage;
    } ops[] = {
        {"ls", 1, 2, "ls ID [PATH]"},         {"cat", 2, 2, "cat ID PATH"},
        {"put", 3, 3, "put ID LOCAL REMOTE"}, {"get", 3, 3, "get ID REMOTE LOCAL"},
        {"mkdir", 2, 2, "mkdir ID PATH"},     {"rm", 2, 2, "rm ID PATH"},
        {"mv", 3, 3, "mv ID FROM TO"},
    };
    size_t k = 0;
    while (k < sizeof ops / sizeof ops[0] && strcmp(ops[k].op, op) != 0)
        k++;
    if (k == sizeof ops / sizeof ops[0])
        return cli_fail(ctx, ABX_EUSAGE,
                        "unknown 'abx files' operation '%.32s' (ls, cat, put, get, mkdir, rm, mv)", op);
    files_args a = {.depth = 1};
    const cli_flag flags[] = {
        {"--user", CLI_STRING, &a.user, 0, 0, NULL, 0, NULL},
        {"--depth", CLI_UINT, &a.depth, 1, 32, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "files", cmd_files_help, argc - 1, argv + 1, flags, 2, a.pos, &a.npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (a.npos < ops[k].min || a.npos > ops[k].max)
        return need(ctx, &a, ops[k].max, ops[k].usage) < 0 ? CLI_EXIT_USAGE : 0;
    if (a.user && strcmp(a.user, "root") != 0 && strcmp(a.user, "user") != 0)
        return cli_fail(ctx, ABX_EINVAL, "--user: expected 'root' or 'user'");
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, a.pos[0], &status);
    if (!s)
        return status;
    rc = files_do(ctx, s, op, &a);
    abx_sandbox_free(s);
    return rc;
}
