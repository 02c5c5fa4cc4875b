/* tools.c: the fifteen MCP tools.
 *
 * Owns: the tool list (built once from mcp/tools.json: descriptions, input
 * schemas, output schemas, annotations), argument validation, and the
 * handlers, each a thin layer over the session (session.c), run_code
 * (kernel.c) and libabx. A newcomer changing how run_command times out
 * starts at tool_run_command below, then lib/sandbox_envd.c
 * (abx_sandbox_exec: the deadline travels as Connect-Timeout-Ms), then
 * runtime/shim_http.c (where the stream's deadline is enforced).
 *
 * Rules (spec/mcp-lifecycle-tools.zh.md): every argument is validated before
 * any sandbox is touched; integers reject booleans, strings and reals;
 * ranges are enforced; an explicit empty sandbox_id is an error; envs map
 * strings to strings. A failure is a result with isError and
 * {error: {code, category, http_status, message, hint, field?}}: static
 * texts only, never a provider's message, a URL, a token, a host path or a
 * stack trace, and a validation error names its field without echoing it.
 */
#include "tools.h"
#include "resources.h"
#include "parse.h"
#include "bounds.h"
#include "kernel.h"
#include "text.h"
#include "render.h"
#include "hints.h"
#include "tools_json.h"
#include "netpolicy.h"
#include "volume_spec.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#define PROGRESS_EVERY_MS 250
#define FILE_MAX ABX_BOUND_TRANSFER
#define TRANSFER_MAX ABX_BOUND_TRANSFER
#define IMAGE_INLINE_MAX (2u << 20)
#define MAX_ENVS 256
#define RESULT_FIELDS_MAX (16u << 10) /* a result's fields and notes beside its streams */

/* ---- the tool list -------------------------------------------------------- */

static pthread_once_t tools_once = PTHREAD_ONCE_INIT;
static json_t *tools_cache; /* built once, read-only afterwards */

/* Replaces {"$ref": "#/$defs/x"} by a copy of defs.x, recursively. */
static json_t *resolve_refs(json_t *node, json_t *defs)
{
    if (json_is_object(node)) {
        const char *ref = json_string_value(json_object_get(node, "$ref"));
        if (ref && strncmp(ref, "#/$defs/", 8) == 0)
            return json_deep_copy(json_object_get(defs, ref + 8));
        json_t *out = json_object();
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v) json_object_set_new(out, k, resolve_refs(v, defs));
        return out;
    }
    if (json_is_array(node)) {
        json_t *out = json_array();
        size_t i;
        json_t *v;
        json_array_foreach(node, i, v) json_array_append_new(out, resolve_refs(v, defs));
        return out;
    }
    return json_incref(node);
}

/* A success shape, or {"error": ...}: structuredContent of either kind
 * validates (the SDK checks it on errors too). The error's shape and a
 * default sandbox's sandbox_replaced are the same for every tool: they are
 * documented once (docs/mcp-tools.md), not repeated fifteen times here. */
static json_t *output_schema(json_t *declared, json_t *defs)
{
    json_t *success = resolve_refs(declared, defs);
    json_t *required = json_object_get(success, "required");
    json_t *schema = json_pack("{s:s, s:O, s:[{s:O}, {s:[s]}]}", "type", "object", "properties",
                               json_object_get(success, "properties"), "anyOf", "required",
                               required ? required : json_array(), "required", "error");
    json_decref(success);
    return schema;
}

/* ---- what a description tells a model about its sandbox ------------------- */

/* Whether the local sandbox has program name: its sandboxes see the host's
 * /usr read-only (runtime/rootfs.c), so the host's /usr/bin and
 * /usr/local/bin are theirs. */
static bool sandbox_has(const char *name)
{
    char path[96];
    snprintf(path, sizeof path, "/usr/bin/%s", name);
    if (access(path, X_OK) == 0)
        return true;
    snprintf(path, sizeof path, "/usr/local/bin/%s", name);
    return access(path, X_OK) == 0;
}

/* "(This host: ...)": the languages run_code runs here and the main tools
 * the sandbox has. docs/mcp-tools.md shows the parenthesis as a
 * placeholder (tests/lib/mcp-docs.mjs): it differs between hosts. */
static void describe_languages(char *out, size_t len)
{
    bool ts = sandbox_has("tsx") || sandbox_has("ts-node") || sandbox_has("deno") || sandbox_has("bun");
    const struct {
        const char *lang;
        bool here;
    } l[] = {
        {"python", sandbox_has("python3")}, {"javascript", sandbox_has("node")},
        {"shell", sandbox_has("bash")},     {"typescript", ts},
        {"r", sandbox_has("Rscript")},
    };
    char yes[96] = "", no[96] = "";
    for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
        char *to = l[i].here ? yes : no;
        size_t used = strlen(to);
        snprintf(to + used, sizeof yes - used, "%s%s", used ? ", " : "", l[i].lang);
    }
    snprintf(out, len, "(On base, this host runs %s%s%s.)", yes[0] ? yes : "none",
             no[0] ? "; not installed: " : "", no);
}

static void describe_tools(char *out, size_t len)
{
    static const char *const tools[] = {"python3", "pip3", "node", "npm",     "git", "curl", "wget",  "make",
                                        "gcc",     "g++",  "jq",   "sqlite3", "rg",  "zip",  "unzip", "tar"};
    size_t used = (size_t)snprintf(out, len, "(This host has bash, coreutils");
    for (size_t i = 0; i < sizeof tools / sizeof tools[0] && used < len; i++)
        if (sandbox_has(tools[i]))
            used += (size_t)snprintf(out + used, len - used, ", %s", tools[i]);
    if (used < len)
        snprintf(out + used, len - used, "; no network.)");
}

/* Replaces every {name} in text with value; returns a new string. */
static json_t *with_value(json_t *text, const char *name, const char *value)
{
    const char *t = json_string_value(text);
    const char *at = t ? strstr(t, name) : NULL;
    if (!at)
        return json_incref(text);
    size_t n = strlen(t) - strlen(name) + strlen(value) + 1;
    char *s = malloc(n);
    if (!s)
        return json_incref(text);
    snprintf(s, n, "%.*s%s%s", (int)(at - t), t, value, at + strlen(name));
    json_t *next = json_string(s), *done = with_value(next, name, value);
    json_decref(next);
    free(s);
    return done;
}

static json_t *described(json_t *description)
{
    size_t limit = MCP_OUTPUT_LIMIT_DEFAULT;
    if (mcp_output_limit_get(&limit, NULL) < 0)
        limit = MCP_OUTPUT_LIMIT_DEFAULT;
    char policy[512], limit_text[24], langs[256], tools[512];
    snprintf(limit_text, sizeof limit_text, "%zu", limit);
    snprintf(policy, sizeof policy,
             "A stream over %zu bytes shows its first and last halves; stdout_path or stderr_path then "
             "holds all of it.",
             limit);
    describe_languages(langs, sizeof langs);
    describe_tools(tools, sizeof tools);
    json_t *a = with_value(description, "{output_policy}", policy);
    json_t *b = with_value(a, "{output_limit}", limit_text);
    json_t *c = with_value(b, "{languages}", langs);
    json_t *d = with_value(c, "{sandbox_has}", tools);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    return d;
}

/* The schema's bounds come from the one constant of each (abx.h,
 * bounds.h), whatever tools.json says: every timeout, a list's page, a
 * read's length. */
static void bounds_from_constants(json_t *tool)
{
    json_t *props = json_object_get(json_object_get(tool, "inputSchema"), "properties");
    json_t *timeout = json_object_get(props, "timeout"), *limit = json_object_get(props, "limit");
    json_t *length = json_object_get(props, "length");
    if (json_is_object(timeout)) {
        json_object_set_new(timeout, "minimum", json_integer(ABX_TIMEOUT_MIN_S));
        json_object_set_new(timeout, "maximum", json_integer(ABX_TIMEOUT_MAX_S));
    }
    if (json_is_object(limit))
        json_object_set_new(limit, "maximum", json_integer(ABX_LIST_LIMIT_MAX));
    if (json_is_object(length))
        json_object_set_new(length, "maximum", json_integer(ABX_BOUND_TRANSFER));
}

/* Claude Code's anthropic/maxResultSizeChars for a tool whose output the
 * output limit bounds (outputLimited in tools.json): both streams at the
 * limit, in structuredContent and in the text, with room for the notes and
 * the other fields. Other tools' results are small, or (download_file,
 * read_file with length) as large as ABX_BOUND_MCP_RESULT, which a client
 * should keep out of a model's context. */
static json_t *result_size_meta(json_t *t)
{
    if (!json_is_true(json_object_get(t, "outputLimited")))
        return NULL;
    size_t limit = MCP_OUTPUT_LIMIT_DEFAULT;
    if (mcp_output_limit_get(&limit, NULL) < 0)
        limit = MCP_OUTPUT_LIMIT_DEFAULT;
    return json_pack("{s:I}", "anthropic/maxResultSizeChars", (json_int_t)(4 * limit + RESULT_FIELDS_MAX));
}

static void build_tools(void)
{
    json_t *doc = json_loads(tools_json, 0, NULL);
    json_t *defs = json_object_get(doc, "$defs");
    json_t *list = json_array();
    size_t i;
    json_t *t;
    abx_limit_maxima max;
    abx_limit_maxima_get(&max);
    json_array_foreach(json_object_get(doc, "tools"), i, t)
    {
        bounds_from_constants(t);
        /* arguments_known refuses any other: the schema says so */
        json_object_set_new(json_object_get(t, "inputSchema"), "additionalProperties", json_false());
        if (strcmp(json_string_value(json_object_get(t, "name")), "create_sandbox") == 0) {
            /* this host's bounds (lib/limits.c) */
            json_t *props = json_object_get(json_object_get(t, "inputSchema"), "properties");
            json_object_set_new(json_object_get(props, "cpu"), "maximum", json_integer(max.cpu_count));
            json_object_set_new(json_object_get(props, "memory"), "maximum", json_integer(max.memory_mb));
        }
        /* no title: the name says it, and every byte here is a model's context */
        json_t *tool = json_pack("{s:O, s:o, s:O, s:o, s:O}", "name", json_object_get(t, "name"),
                                 "description", described(json_object_get(t, "description")), "inputSchema",
                                 json_object_get(t, "inputSchema"), "outputSchema",
                                 output_schema(json_object_get(t, "outputSchema"), defs), "annotations",
                                 json_object_get(t, "annotations"));
        json_t *meta = result_size_meta(t);
        if (meta)
            json_object_set_new(tool, "_meta", meta);
        if (json_object_get(t, "execution")) /* a call that may outlive a request: a task */
            json_object_set(tool, "execution", json_object_get(t, "execution"));
        json_array_append_new(list, tool);
    }
    json_decref(doc);
    tools_cache = list;
}

json_t *mcp_tools_list(void)
{
    pthread_once(&tools_once, build_tools);
    return json_deep_copy(tools_cache);
}

/* The tool named name in the cache (borrowed), or NULL. */
static json_t *find_tool(const char *name)
{
    pthread_once(&tools_once, build_tools);
    size_t i;
    json_t *t;
    json_array_foreach(tools_cache, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return t;
    }
    return NULL;
}

bool mcp_tool_exists(const char *name)
{
    return find_tool(name) != NULL;
}

/* ---- results --------------------------------------------------------------- */

static json_t *tool_error(int code, const char *field);
static json_t *too_big(const char *field, const char *what, size_t limit, const char *instead);

/* structuredContent and its text for a model (render.c: the same facts,
 * without repeating long strings), after optional extra blocks (images,
 * whose bytes the text then only names) and before optional resource_link
 * blocks. A result too large for a client to take (ABX_BOUND_MCP_RESULT)
 * is an E8018 tool error instead. Takes all three; blocks and links are
 * arrays or NULL. */
static json_t *result_linked(json_t *structured, json_t *blocks, json_t *links)
{
    char *text = mcp_render_text(structured, blocks != NULL);
    size_t size = json_dumpb(structured, NULL, 0, JSON_COMPACT) + (text ? strlen(text) : 0);
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b) size += json_string_length(json_object_get(b, "data"));
    if (size > ABX_BOUND_MCP_RESULT) {
        free(text);
        json_decref(structured);
        json_decref(blocks);
        json_decref(links);
        return too_big("result", "the result", ABX_BOUND_MCP_RESULT,
                       "read the file in parts (read_file offset and length) or make the output smaller");
    }
    json_t *content = blocks ? blocks : json_array();
    json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text ? text : "{}"));
    free(text);
    if (links)
        json_array_extend(content, links);
    json_decref(links);
    return json_pack("{s:o, s:o}", "content", content, "structuredContent", structured);
}

static json_t *result_with(json_t *structured, json_t *blocks)
{
    return result_linked(structured, blocks, NULL);
}

/* Appends a resource_link to the whole of an output stream the result
 * shows in part (links: an array, created when NULL). */
static void link_output(json_t **links, const char *id, const char *stream, const char *path,
                        unsigned long long total)
{
    char description[160];
    snprintf(description, sizeof description, "The whole %s (%llu bytes); the result shows a part of it.",
             stream, total);
    json_t *link = mcp_resource_link(id, path, stream, description, "text/plain", (long long)total);
    if (!link)
        return;
    if (!*links)
        *links = json_array();
    json_array_append_new(*links, link);
}

/* The resource_links of a run: each stream saved whole, each file the code
 * produced (output_files). NULL when there are none. */
static json_t *run_links(const char *id, json_t *out, const char *stdout_path, const char *stderr_path,
                         json_t *files)
{
    json_t *links = NULL;
    if (stdout_path && *stdout_path)
        link_output(&links, id, "stdout", stdout_path,
                    (unsigned long long)json_integer_value(json_object_get(out, "stdout_bytes")));
    if (stderr_path && *stderr_path)
        link_output(&links, id, "stderr", stderr_path,
                    (unsigned long long)json_integer_value(json_object_get(out, "stderr_bytes")));
    size_t i;
    json_t *f;
    json_array_foreach(files, i, f)
    {
        const char *path = json_string_value(json_object_get(f, "path"));
        const char *name = json_string_value(json_object_get(f, "name"));
        json_t *size = json_object_get(f, "size");
        json_t *link = path ? mcp_resource_link(id, path, name ? name : path, "A file the code wrote.", NULL,
                                                json_is_integer(size) ? json_integer_value(size) : -1)
                            : NULL;
        if (!link)
            continue;
        if (!links)
            links = json_array();
        json_array_append_new(links, link);
    }
    return links;
}

static json_t *ok(json_t *structured)
{
    return result_with(structured, NULL);
}

/* message, hint: NULL for the code's own texts, else this file's static
 * sentences (never a provider's words, never a client's value). */
static json_t *tool_error_hinted(int code, const char *field, const char *message, const char *hint)
{
    if (code < 0)
        code = -code;
    json_t *e = json_pack("{s:s, s:s, s:i, s:s, s:s}", "code", abx_err_name(code), "category",
                          abx_err_category(code), "http_status", abx_err_http_status(code), "message",
                          message ? message : abx_strerror(code), "hint", hint ? hint : mcp_hint(code));
    if (field)
        json_object_set_new(e, "field", json_string(field));
    json_t *r = result_with(json_pack("{s:o}", "error", e), NULL);
    json_object_set_new(r, "isError", json_true());
    return r;
}

static json_t *tool_error_with(int code, const char *field, const char *message)
{
    return tool_error_hinted(code, field, message, NULL);
}

static json_t *tool_error(int code, const char *field)
{
    return tool_error_with(code, field, NULL);
}

/* Whether result r is a tool error of code. */
static bool is_code(json_t *r, int code)
{
    if (!json_is_true(json_object_get(r, "isError")))
        return false;
    const char *name = json_string_value(
        json_object_get(json_object_get(json_object_get(r, "structuredContent"), "error"), "code"));
    return name && strcmp(name, abx_err_name(code)) == 0;
}

/* E8018 naming the limit: "WHAT is over the N bytes (M MiB) LIMIT; INSTEAD". */
static json_t *too_big(const char *field, const char *what, size_t limit, const char *instead)
{
    char message[400];
    snprintf(message, sizeof message, "%s is over the limit of %zu bytes (%.1f MiB) one call takes", what,
             limit, (double)limit / (1u << 20));
    char hint[300];
    snprintf(hint, sizeof hint, "Send or ask for less: %s.", instead);
    return tool_error_hinted(ABX_ETOOBIG, field, message, hint);
}

/* A libabx failure. To a session with a tenant (an HTTP token) only its code
 * crosses, never its message (which may name this host's paths); on STDIO,
 * the machine's own user gets the code's sentence with the detail the CLI
 * would print after it (libabx's own words: a provider's never reach it),
 * so that "mmdebstrap is missing" is not told as the code's sentence alone. */
static json_t *failure_of(mcp_call *c, abx_error *err, int rc)
{
    int code = err ? (int)abx_error_code(err) : -rc;
    code = code ? code : ABX_ESYS;
    bool own_user = c && c->session && !c->session->tenant[0];
    const char *detail = own_user && err ? abx_error_message(err) : NULL;
    bool detailed = detail && *detail && strcmp(detail, abx_strerror(code)) != 0;
    char message[1024];
    if (detailed)
        snprintf(message, sizeof message, "%s (%s)", abx_strerror(code), detail);
    json_t *r = tool_error_with(code, NULL, detailed ? message : NULL);
    abx_error_free(err);
    return r;
}

/* ---- argument validation ---------------------------------------------------- */

/* The first argument that failed and the rule it broke, made of static
 * text and the rule's own bounds: never the value the client sent. */
typedef struct arg_fail {
    const char *field;
    char rule[512];
} arg_fail;

static bool fail_arg(arg_fail *f, const char *field, const char *rule)
{
    f->field = field;
    snprintf(f->rule, sizeof f->rule, "%s", rule);
    return false;
}

/* Optional string: absent -> def. Present and not a string -> fail. */
static bool arg_string(mcp_call *c, const char *name, bool required, const char *def, const char **out,
                       arg_fail *f)
{
    json_t *v = json_object_get(c->args, name);
    if (!v || json_is_null(v)) {
        *out = def;
        return required ? fail_arg(f, name, "is required (a string)") : true;
    }
    if (!json_is_string(v))
        return fail_arg(f, name, "must be a string");
    *out = json_string_value(v);
    return true;
}

/* Optional integer in [min, max] (JSON integers only: no booleans, strings
 * or reals). */
static bool arg_int(mcp_call *c, const char *name, long long min, long long max, long long def,
                    long long *out, bool required, arg_fail *f)
{
    json_t *v = json_object_get(c->args, name);
    char rule[96];
    snprintf(rule, sizeof rule, "must be an integer from %lld to %lld", min, max);
    if (!v || json_is_null(v)) {
        *out = def;
        return required ? fail_arg(f, name, rule) : true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
        return fail_arg(f, name, rule);
    *out = json_integer_value(v);
    return true;
}

/* sandbox_id: absent means the default; present must be a non-empty string. */
static bool arg_id(mcp_call *c, const char **out, arg_fail *f)
{
    if (!arg_string(c, "sandbox_id", false, NULL, out, f))
        return false;
    if (*out && !**out)
        return fail_arg(f, "sandbox_id", "must be a non-empty sandbox id (omit it for the default sandbox)");
    return true;
}

/* user: who runs a command inside the sandbox, "user" (the default) or
 * "root" (root of the sandbox's own user namespace, no host user). */
static bool arg_user(mcp_call *c, const char **out, arg_fail *f)
{
    if (!arg_string(c, "user", false, "user", out, f))
        return false;
    if (strcmp(*out, "user") != 0 && strcmp(*out, "root") != 0)
        return fail_arg(f, "user", "must be \"user\" or \"root\"");
    return true;
}

/* envs: {string: string} with variable-name keys, as NULL-terminated
 * "K=V" strings in *pairs (caller frees with free_pairs). */
static bool arg_envs(mcp_call *c, const char *name, char ***pairs, arg_fail *f)
{
    *pairs = NULL;
    json_t *v = json_object_get(c->args, name);
    if (!v || json_is_null(v))
        return true;
    static const char rule[] = "must be an object of at most 256 string values whose keys are variable names "
                               "(letters, digits, _; not starting with a digit)";
    if (!json_is_object(v) || json_object_size(v) > MAX_ENVS)
        return fail_arg(f, name, rule);
    char **p = calloc(json_object_size(v) + 1, sizeof *p);
    if (!p)
        return fail_arg(f, name, rule);
    size_t n = 0;
    const char *k;
    json_t *val;
    json_object_foreach(v, k, val)
    {
        size_t klen = strlen(k);
        bool good = json_is_string(val) && klen > 0 && klen < 256 && (k[0] < '0' || k[0] > '9');
        for (size_t i = 0; good && i < klen; i++)
            good = (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
                   (k[i] >= '0' && k[i] <= '9') || k[i] == '_';
        if (!good) {
            for (size_t i = 0; i < n; i++)
                free(p[i]);
            free(p);
            return fail_arg(f, name, rule);
        }
        size_t len = klen + 1 + strlen(json_string_value(val)) + 1;
        p[n] = malloc(len);
        if (p[n])
            snprintf(p[n++], len, "%s=%s", k, json_string_value(val));
    }
    *pairs = p;
    return true;
}

static void free_pairs(char **p)
{
    for (size_t i = 0; p && p[i]; i++)
        free(p[i]);
    free(p);
}

/* A validation failure: the field, the rule it broke, and a hint for a
 * model (the CLI's --help is no help here). */
static json_t *invalid(arg_fail *f)
{
    char message[640];
    snprintf(message, sizeof message, "%s %s", f->field ? f->field : "arguments",
             f->rule[0] ? f->rule : "is not valid");
    return tool_error_with(ABX_EINVAL, f->field ? f->field : "arguments", message);
}

/* ---- progress, logging, cancellation ----------------------------------------- */

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

int mcp_log_level_from_name(const char *name)
{
    for (int i = 0; name && i < 8; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

static void call_send(mcp_call *c, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return;
    c->sink.send(c->sink.ctx, text, strlen(text));
    free(text);
}

void mcp_call_log(mcp_call *c, int level, const char *text)
{
    if (level < c->log_level)
        return;
    call_send(c,
              json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "jsonrpc", "2.0", "method", "notifications/message",
                        "params", "level", level_names[level], "logger", "abx", "data", text));
}

void mcp_call_progress(mcp_call *c, double value, double total, const char *message)
{
    if (!c->progress_token || atomic_load(&c->cancelled))
        return;
    json_t *params = json_pack("{s:O, s:f, s:s}", "progressToken", c->progress_token, "progress", value,
                               "message", message);
    if (total > 0)
        json_object_set_new(params, "total", json_real(total));
    call_send(c, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", "notifications/progress", "params",
                           params));
}

static void progress(mcp_call *c, const char *message)
{
    c->progress += 1;
    mcp_call_progress(c, c->progress, 0, message);
}

static bool cancelled(void *ud)
{
    mcp_call *c = ud;
    return atomic_load(&c->cancelled) != 0;
}

/* Output callbacks of exec: progress notifications as output arrives, at
 * most one per PROGRESS_EVERY_MS (a flood must not become a flood of
 * notifications). */
static void on_output(const char *data, size_t len, void *ud)
{
    (void)data;
    mcp_call *c = ud;
    c->output_bytes += len;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    if (c->last_progress_ms && now - c->last_progress_ms < PROGRESS_EVERY_MS)
        return;
    c->last_progress_ms = now;
    char msg[64];
    snprintf(msg, sizeof msg, "%llu bytes of output", (unsigned long long)c->output_bytes);
    progress(c, msg);
}

/* ---- sandbox metadata (list_sandboxes, get_sandbox) ------------------------------ */

static json_t *iso_time(long long t)
{
    if (t <= 0)
        return json_null();
    char buf[32];
    abx__rfc3339(t, buf, sizeof buf);
    return json_string(buf);
}

static json_t *nullable_int(unsigned v)
{
    return v ? json_integer(v) : json_null();
}

/* Only these nine fields: no token, envs, metadata, URL. */
static json_t *sandbox_meta(const abx_sandbox_info *i)
{
    return json_pack("{s:s, s:o, s:o, s:n, s:o, s:o, s:o, s:o, s:o}", "sandbox_id", i->sandbox_id, "template",
                     i->template_id[0] ? json_string(i->template_id) : json_null(), "status",
                     i->status[0] ? json_string(i->status) : json_null(), "region", "started_at",
                     iso_time(i->started_at), "end_at", iso_time(i->end_at), "cpu_count",
                     nullable_int(i->cpu_count), "memory_mb", nullable_int(i->memory_mb), "disk_size_mb",
                     nullable_int(i->disk_size_mb));
}

/* ---- handlers ------------------------------------------------------------------ */

/* The sandbox a call addresses (see mcp_session_use); logs a lazy creation. */
static int use_sandbox(mcp_call *c, const char *id, bool create, bool renew, mcp_sandbox **b, abx_error **err)
{
    bool created = false, replaced = false;
    if (create && !id)
        progress(c, "preparing the sandbox");
    int rc = mcp_session_use(c->session, id, create, renew, b, &created, &replaced, err);
    if (rc == 0 && created)
        mcp_call_log(c, 1, "sandbox created");
    if (rc == 0 && !id && create) {
        c->used_default = true;
        snprintf(c->default_id, sizeof c->default_id, "%s", (*b)->id);
    }
    if (rc == 0 && replaced) {
        c->sandbox_replaced = true;
        mcp_call_log(c, 4, "the default sandbox had ended (timed out or killed): a new one replaced it");
    }
    return rc;
}

/* ---- a failure for want of a network ---------------------------------------- */

/* Whether output reads like a name lookup or a connection that failed (as
 * they do in a sandbox without network: curl, wget, pip, npm, apt,
 * Python, Node, git). */
static bool looks_offline(const char *text, size_t len)
{
    static const char *const signs[] = {
        "Temporary failure in name resolution",
        "Temporary failure resolving",
        "Could not resolve host",
        "Name or service not known",
        "Network is unreachable",
        "getaddrinfo EAI_AGAIN",
        "getaddrinfo ENOTFOUND",
        "Failed to establish a new connection",
        "unable to resolve host address",
        "No address associated with hostname",
    };
    for (size_t i = 0; text && i < sizeof signs / sizeof signs[0]; i++)
        if (memmem(text, len, signs[i], strlen(signs[i])))
            return true;
    return false;
}

/* The note (a new string) for a result whose output failed like that
 * (whatever its exit code: a notebook's "!pip install" leaves the cell's
 * at 0), or NULL: whether the sandbox has no network at all or only the
 * hosts its egress lists name, and which create_sandbox arguments give it
 * one. Reads the sandbox's network from libabx (the caller holds b). */
static json_t *offline_note(mcp_sandbox *b, const char *o, size_t olen, const char *e, size_t elen)
{
    if (!(looks_offline(o, olen) || looks_offline(e, elen)))
        return NULL;
    abx_sandbox_info info;
    memset(&info, 0, sizeof info);
    abx_error *err = NULL;
    bool none = true;
    if (abx_sandbox_get_info(b->handle, &info, &err) == 0 && info.network_json) {
        json_t *net = json_loads(info.network_json, 0, NULL);
        const char *mode = json_string_value(json_object_get(net, "mode"));
        none = !mode || strcmp(mode, "none") == 0;
        json_decref(net);
    }
    abx_error_free(err);
    abx_sandbox_info_clear(&info);
    return json_string(
        none ? "This sandbox has no network, so the lookup or connection failed. Create one that "
               "has: create_sandbox with allow_internet_access true (the public internet), or "
               "network.allow_out naming the hosts (e.g. [\"pypi.org\", "
               "\"files.pythonhosted.org\"]); then run this there."
             : "This sandbox reaches only what its egress lists allow, and this host was not "
               "among them. Create a sandbox whose network.allow_out names it (or with "
               "allow_internet_access true); then run this there.");
}

/* create_sandbox's allow_internet_access and network {allow_out, deny_out}
 * (E2B's names) as create options (abx__net_egress_free). */
static bool arg_network(mcp_call *c, abx_net_egress *out, arg_fail *f)
{
    json_t *net = json_object_get(c->args, "network");
    if (net && !json_is_object(net))
        return fail_arg(f, "network", "must be an object {allow_out: [...], deny_out: [...]}");
    abx_error *err = NULL;
    if (abx__net_egress_from_e2b(json_object_get(c->args, "allow_internet_access"),
                                 json_object_get(net, "allow_out"), json_object_get(net, "deny_out"), out,
                                 &err) == 0)
        return true;
    fail_arg(f, "network", abx_error_message(err));
    abx_error_free(err);
    return false;
}

/* create_sandbox's volumes [{name, path, read_only}] as create options'
 * specs (base/volume_spec.c). */
static bool arg_volumes(mcp_call *c, abx_volume_specs *out, arg_fail *f)
{
    if (abx__volume_specs_from_json(json_object_get(c->args, "volumes"), "read_only", out))
        return true;
    return fail_arg(f, "volumes",
                    "must be an array of at most 8 {name, path, read_only?}: a volume's name "
                    "('abx volume list') and an absolute path inside");
}

/* The provider's answer (a remote host's templates, not this machine's). */
static bool template_known(mcp_call *c, const char *name)
{
    return abx_template_exists(c->session->client, name, NULL) == 0;
}

static json_t *tool_create_sandbox(mcp_call *c)
{
    arg_fail f = {0};
    const char *tmpl, *provider, *region;
    long long timeout, cpu, memory;
    char **envs = NULL;
    abx_limit_maxima max;
    abx_limit_maxima_get(&max);
    if (!arg_string(c, "template", false, NULL, &tmpl, &f) ||
        (tmpl && !*tmpl && !fail_arg(&f, "template", "must not be empty")) ||
        !arg_int(c, "timeout", ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, 300, &timeout, false, &f) ||
        !arg_envs(c, "envs", &envs, &f) || !arg_int(c, "cpu", 1, max.cpu_count, 0, &cpu, false, &f) ||
        !arg_int(c, "memory", 16, max.memory_mb, 0, &memory, false, &f) ||
        !arg_string(c, "provider", false, NULL, &provider, &f) ||
        !arg_string(c, "region", false, NULL, &region, &f) ||
        (tmpl && *tmpl && !template_known(c, tmpl) &&
         !fail_arg(&f, "template",
                   "must be a template the provider has: base, code-interpreter-v1 or one "
                   "'abx template list' shows"))) {
        free_pairs(envs); /* envs may have been parsed before a later field failed */
        return invalid(&f);
    }
    if (provider && strcmp(provider, abx_client_provider(c->session->client)) != 0) {
        free_pairs(envs);
        return tool_error(ABX_EPROVIDER, "provider");
    }
    abx_net_egress net = {0};
    abx_volume_specs volumes;
    json_t *persistent = json_object_get(c->args, "persistent");
    if ((persistent && !json_is_boolean(persistent) && !fail_arg(&f, "persistent", "must be a boolean")) ||
        !arg_volumes(c, &volumes, &f) || !arg_network(c, &net, &f)) {
        free_pairs(envs);
        abx__net_egress_free(&net);
        return invalid(&f);
    }
    mcp_create_args a = {.template_name = tmpl,
                         .timeout_s = (unsigned)timeout,
                         .envs = (const char *const *)envs,
                         .cpu = (unsigned)cpu,
                         .memory_mb = (unsigned)memory,
                         .network = net.mode,
                         .allow_out = (const char *const *)net.allow,
                         .deny_out = (const char *const *)net.deny,
                         .volumes = abx__volume_specs_list(&volumes),
                         .persistent = json_is_true(json_object_get(c->args, "persistent"))};
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    progress(c, "creating the sandbox");
    int rc = mcp_session_create(c->session, &a, &b, &err);
    free_pairs(envs);
    abx__net_egress_free(&net);
    if (rc < 0)
        return failure_of(c, err, rc);
    mcp_call_log(c, 1, "sandbox created");
    json_t *r = json_pack("{s:s, s:s, s:n, s:s, s:i}", "sandbox_id", b->id, "status", "running", "url",
                          "template", b->template_name, "timeout", (int)timeout);
    mcp_session_release(c->session, b);
    return ok(r);
}

/* run_code's rich results for structuredContent: each with its text forms
 * (text, html, markdown, svg, latex, json), cut to the output limit's
 * size, and its images sent once, as MCP image content appended to images
 * (the result then says which block: "image": N). */
static json_t *rich_results(json_t *results, json_t *images)
{
    static const char *const text_forms[] = {"text", "html", "markdown", "svg", "latex"};
    static const struct {
        const char *key, *mime;
    } image_forms[] = {{"png", "image/png"}, {"jpeg", "image/jpeg"}};
    json_t *out = json_array();
    size_t i;
    json_t *r;
    json_array_foreach(results, i, r)
    {
        json_t *e = json_pack("{s:b}", "is_main_result", json_is_true(json_object_get(r, "is_main_result")));
        for (size_t k = 0; k < sizeof text_forms / sizeof text_forms[0]; k++) {
            const char *v = json_string_value(json_object_get(r, text_forms[k]));
            if (v)
                json_object_set_new(e, text_forms[k],
                                    mcp_text(v, strlen(v), ABX_BOUND_RESULT_TEXT_STRING, NULL));
        }
        json_t *j = json_object_get(r, "json");
        if (j && !json_is_null(j))
            json_object_set(e, "json", j);
        for (size_t k = 0; k < sizeof image_forms / sizeof image_forms[0]; k++) {
            const char *data = json_string_value(json_object_get(r, image_forms[k].key));
            if (!data || json_object_get(e, "image"))
                continue;
            json_object_set_new(e, "image", json_integer((json_int_t)json_array_size(images)));
            json_object_set_new(e, "mime_type", json_string(image_forms[k].mime));
            json_array_append_new(images, json_pack("{s:s, s:s, s:s}", "type", "image", "data", data,
                                                    "mimeType", image_forms[k].mime));
        }
        json_array_append_new(out, e);
    }
    return out;
}

/* Names the sandbox files that hold whole outputs a result shows only in
 * part (stdout_path, stderr_path). */
static void set_saved_paths(json_t *out, const char *stdout_path, const char *stderr_path)
{
    if (stdout_path && *stdout_path)
        json_object_set_new(out, "stdout_path", json_string(stdout_path));
    if (stderr_path && *stderr_path)
        json_object_set_new(out, "stderr_path", json_string(stderr_path));
}

static json_t *tool_run_code(mcp_call *c)
{
    arg_fail f = {0};
    const char *code, *lang, *id;
    long long timeout;
    if (!arg_string(c, "code", true, NULL, &code, &f) ||
        !arg_string(c, "language", false, "python", &lang, &f) || !arg_id(c, &id, &f) ||
        !arg_int(c, "timeout", ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, 30, &timeout, false, &f))
        return invalid(&f);
    static const char *const langs[] = {"python", "javascript", "shell", "typescript", "r"};
    bool known = false;
    for (size_t i = 0; i < 5; i++)
        known |= strcmp(lang, langs[i]) == 0;
    if (!known)
        return invalid(&(arg_fail){"language", "must be one of python, javascript, shell, typescript, r"});
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    mcp_code_request req = {.language = lang,
                            .code = code,
                            .timeout_s = (unsigned)timeout,
                            .stateful = strcmp(b->template_name, "code-interpreter-v1") == 0,
                            .cwd = "/app",
                            .save_after = c->session->output_limit,
                            .should_cancel = cancelled,
                            .userdata = c};
    mcp_code_result r;
    progress(c, "running");
    rc = mcp_run_code(b, &req, &r, &err);
    json_t *note = rc == 0 ? offline_note(b, r.stdout_data, r.stdout_len, r.stderr_data, r.stderr_len) : NULL;
    char box_id[sizeof b->id];
    snprintf(box_id, sizeof box_id, "%s", b->id);
    mcp_session_release(c->session, b);
    if (rc == -ABX_ECMDNOTFOUND && (strcmp(lang, "typescript") == 0 || strcmp(lang, "r") == 0)) {
        abx_error_free(err);
        bool r_lang = strcmp(lang, "r") == 0;
        return tool_error_hinted(
            ABX_ECMDNOTFOUND, "language",
            r_lang ? "language r needs R (Rscript) in the sandbox, and this sandbox's template has none"
                   : "language typescript needs a TypeScript runtime (tsx, ts-node, deno, bun, or node with "
                     "the typescript module) in the sandbox, and this one has none",
            r_lang
                ? "Install R as root (run_command with user \"root\": apt-get install -y r-base-core, "
                  "which needs network), or run the code as python or javascript."
                : "Use the code-interpreter-v1 template (create_sandbox), which has TypeScript, or install "
                  "one (run_command with user \"root\": npm install -g tsx, which needs network).");
    }
    if (rc < 0)
        return failure_of(c, err, rc);
    if (r.timed_out)
        r.exit_code = 124;
    int t_out = 0, t_err = 0, t_res = 0;
    size_t limit = c->session->output_limit;
    mcp_output_view vo = {.limit = limit, .saved_path = r.stdout_path},
                    ve = {.limit = limit, .saved_path = r.stderr_path},
                    vr = {.limit = limit,
                          .how_to_read_all = "to read it all, assign the value to a variable and "
                                             "print it in parts, or write it to a file"};
    json_t *out = json_pack(
        "{s:o, s:o, s:i, s:O, s:o, s:b}", "stdout",
        mcp_output_text(r.stdout_data, r.stdout_len, r.stdout_cut, r.stdout_total, &vo, &t_out), "stderr",
        mcp_output_text(r.stderr_data, r.stderr_len, r.stderr_cut, r.stderr_total, &ve, &t_err), "exit_code",
        r.exit_code, "output_files", r.output_files, "result",
        r.result
            ? mcp_output_text(r.result, strlen(r.result), strlen(r.result), strlen(r.result), &vr, &t_res)
            : json_null(),
        "timed_out", r.timed_out);
    json_object_set_new(out, "truncated", json_boolean(t_out || t_err || t_res));
    set_saved_paths(out, t_out ? r.stdout_path : NULL, t_err ? r.stderr_path : NULL);
    json_object_set_new(out, "stdout_bytes", json_integer((json_int_t)r.stdout_total));
    json_object_set_new(out, "stderr_bytes", json_integer((json_int_t)r.stderr_total));
    json_t *links = run_links(box_id, out, t_out ? r.stdout_path : NULL, t_err ? r.stderr_path : NULL,
                              json_object_get(out, "output_files"));
    if (r.kernel_died)
        json_object_set_new(out, "kernel_died", json_true());
    if (r.state_reset) {
        char reason[400];
        snprintf(reason, sizeof reason, "%s%svariables, functions and imports from earlier calls are gone",
                 r.state_reset_reason[0] ? r.state_reset_reason
                                         : "the previous kernel for this language died or "
                                           "was stopped",
                 ": ");
        json_object_set_new(out, "state_reset", json_true());
        json_object_set_new(out, "state_reset_reason", json_string(reason));
    }
    if (note)
        json_object_set_new(out, "network_note", note);
    json_t *images = json_array();
    json_object_set_new(out, "results", rich_results(r.results, images));
    mcp_code_result_clear(&r);
    if (json_array_size(images) == 0) {
        json_decref(images);
        images = NULL;
    }
    return result_linked(out, images, links);
}

static json_t *tool_run_command(mcp_call *c)
{
    arg_fail f = {0};
    const char *command, *id, *cwd, *user;
    long long timeout;
    if (!arg_string(c, "command", true, NULL, &command, &f) ||
        (!*command && !fail_arg(&f, "command", "must not be empty")) || !arg_id(c, &id, &f) ||
        !arg_string(c, "cwd", false, NULL, &cwd, &f) ||
        (cwd && !*cwd && !fail_arg(&f, "cwd", "must not be empty")) || !arg_user(c, &user, &f) ||
        !arg_int(c, "timeout", ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, 60, &timeout, false, &f))
        return invalid(&f);
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    abx_exec_options o = {.cwd = cwd,
                          .default_cwd = "/app",
                          .user = user,
                          .timeout_s = (unsigned)timeout,
                          .keep_output = true,
                          .on_stdout = c->progress_token ? on_output : NULL,
                          .on_stderr = c->progress_token ? on_output : NULL,
                          .userdata = c,
                          .should_cancel = cancelled,
                          .save_output_after = c->session->output_limit};
    abx_exec_result r;
    progress(c, "running");
    rc = abx_sandbox_exec(b->handle, command, &o, &r, &err);
    json_t *note = rc == 0 ? offline_note(b, r.stdout_data, r.stdout_len, r.stderr_data, r.stderr_len) : NULL;
    char box_id[sizeof b->id];
    snprintf(box_id, sizeof box_id, "%s", b->id);
    mcp_session_release(c->session, b);
    if (rc < 0)
        return failure_of(c, err, rc);
    int t_out = 0, t_err = 0;
    mcp_output_view vo = {.limit = c->session->output_limit, .saved_path = r.stdout_path},
                    ve = {.limit = c->session->output_limit, .saved_path = r.stderr_path};
    json_t *out = json_pack(
        "{s:o, s:o, s:i, s:b, s:I, s:I}", "stdout",
        mcp_output_text(r.stdout_data, r.stdout_len, r.stdout_cut, r.stdout_total, &vo, &t_out), "stderr",
        mcp_output_text(r.stderr_data, r.stderr_len, r.stderr_cut, r.stderr_total, &ve, &t_err), "exit_code",
        r.exit_code, "timed_out", r.timed_out, "stdout_bytes", (json_int_t)r.stdout_total, "stderr_bytes",
        (json_int_t)r.stderr_total);
    json_object_set_new(out, "truncated", json_boolean(t_out || t_err));
    set_saved_paths(out, t_out ? r.stdout_path : NULL, t_err ? r.stderr_path : NULL);
    if (note)
        json_object_set_new(out, "network_note", note);
    json_t *links = run_links(box_id, out, t_out ? r.stdout_path : NULL, t_err ? r.stderr_path : NULL, NULL);
    abx_exec_result_clear(&r);
    return result_linked(out, NULL, links);
}

/* Reads at most MAX bytes of PATH from the sandbox ID names (the default
 * when ID is NULL). Returns NULL on success, with *DATA (the caller
 * abx_free()s it) and *LEN set; otherwise the tool's error result. */
static json_t *read_bytes(mcp_call *c, const char *id, const char *path, size_t max, char **data, size_t *len)
{
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    rc = abx_sandbox_read_file(b->handle, path, NULL, max, data, len, &err);
    mcp_session_release(c->session, b);
    return rc < 0 ? failure_of(c, err, rc) : NULL;
}

/* read_file: a file's text from offset. Without length, the same policy
 * as every output (text.h): a part longer than the output limit is shown
 * as its first and last halves, with the offsets to read the rest; with
 * length, exactly that part (up to FILE_MAX). */
static json_t *tool_read_file(mcp_call *c)
{
    arg_fail f = {0};
    const char *path, *id, *enc;
    long long offset, length;
    if (!arg_string(c, "path", true, NULL, &path, &f) ||
        (!*path && !fail_arg(&f, "path", "must not be empty")) || !arg_id(c, &id, &f) ||
        !arg_string(c, "encoding", false, "utf-8", &enc, &f) ||
        !arg_int(c, "offset", 0, (1ll << 53), 0, &offset, false, &f) ||
        !arg_int(c, "length", 1, FILE_MAX, 0, &length, false, &f))
        return invalid(&f);
    if (strcmp(enc, "utf-8") != 0 && strcmp(enc, "utf8") != 0 && strcmp(enc, "UTF-8") != 0)
        return invalid(&(arg_fail){"encoding", "must be utf-8 (use download_file for other bytes)"});
    bool explicit_length = length > 0;
    size_t limit = c->session->output_limit;
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    char *head = NULL, *tail = NULL;
    size_t head_len = 0, tail_len = 0;
    unsigned long long size = 0, tail_from = 0;
    rc = abx_sandbox_read_file_range(b->handle, path, NULL, (unsigned long long)offset,
                                     explicit_length ? (size_t)length : limit, &head, &head_len, &size, &err);
    bool cut = rc == 0 && !explicit_length && size > (unsigned long long)offset + limit;
    if (cut) { /* the first half from offset, and the file's last half-limit */
        tail_from = size - (limit - limit / 2);
        head_len = limit / 2;
        rc = abx_sandbox_read_file_range(b->handle, path, NULL, tail_from, limit - limit / 2, &tail,
                                         &tail_len, &size, &err);
    }
    mcp_session_release(c->session, b);
    if (rc < 0) {
        abx_free(head);
        return failure_of(c, err, rc);
    }
    if (mcp_looks_binary(head, head_len)) {
        abx_free(head);
        abx_free(tail);
        return tool_error_hinted(ABX_EINVAL, "path",
                                 "the file is binary, not text (it holds NUL bytes or is not UTF-8)",
                                 "Read its bytes with download_file (base64; an image comes back as one you "
                                 "can see), or convert it first with run_command (xxd, file, strings).");
    }
    json_t *content;
    unsigned long long shown = head_len + tail_len;
    if (cut) {
        char *both = malloc(head_len + tail_len + 1);
        if (both) {
            memcpy(both, head, head_len);
            memcpy(both + head_len, tail, tail_len);
        }
        char how[200];
        snprintf(how, sizeof how,
                 "read the part left out with read_file offset=%llu length=N (up to %u bytes a call)",
                 (unsigned long long)offset + head_len, FILE_MAX);
        mcp_output_view v = {.limit = limit, .how_to_read_all = how};
        content = both ? mcp_output_text(both, head_len + tail_len, head_len,
                                         size - (unsigned long long)offset, &v, NULL)
                       : json_string("");
        free(both);
    } else {
        content = mcp_text(head, head_len, FILE_MAX, NULL);
    }
    json_t *out = json_pack("{s:o, s:I, s:I, s:I, s:b}", "content", content, "size", (json_int_t)size,
                            "offset", (json_int_t)offset, "length",
                            (json_int_t)(cut ? size - (unsigned long long)offset : shown), "truncated", cut);
    abx_free(head);
    abx_free(tail);
    return ok(out);
}

static json_t *write_bytes(mcp_call *c, const char *id, const char *path, const char *data, size_t len)
{
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    rc = abx_sandbox_write_file(b->handle, path, data, len, NULL, &err);
    mcp_session_release(c->session, b);
    if (rc < 0)
        return failure_of(c, err, rc);
    return ok(json_pack("{s:b, s:I}", "success", 1, "bytes_written", (json_int_t)len));
}

static json_t *tool_write_file(mcp_call *c)
{
    arg_fail f = {0};
    const char *path, *content, *id;
    if (!arg_string(c, "path", true, NULL, &path, &f) ||
        (!*path && !fail_arg(&f, "path", "must not be empty")) ||
        !arg_string(c, "content", true, NULL, &content, &f) || !arg_id(c, &id, &f))
        return invalid(&f);
    size_t len = json_string_length(json_object_get(c->args, "content"));
    return write_bytes(c, id, path, content, len);
}

static json_t *tool_list_files(mcp_call *c)
{
    arg_fail f = {0};
    const char *path, *id;
    long long depth;
    if (!arg_string(c, "path", false, "/app", &path, &f) ||
        (!*path && !fail_arg(&f, "path", "must not be empty")) || !arg_id(c, &id, &f) ||
        !arg_int(c, "depth", 1, 5, 1, &depth, false, &f))
        return invalid(&f);
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    char *text = NULL;
    rc = abx_sandbox_list_files(b->handle, path, (unsigned)depth, NULL, &text, &err);
    mcp_session_release(c->session, b);
    if (rc < 0)
        return failure_of(c, err, rc);
    json_t *entries = json_loads(text, 0, NULL), *files = json_array();
    abx_free(text);
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        const char *target = json_string_value(json_object_get(e, "symlink_target"));
        json_t *entry = json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(e, "name"), "path",
                                  json_object_get(e, "path"), "type", json_object_get(e, "type"), "size",
                                  json_object_get(e, "size"));
        if (target)
            json_object_set_new(entry, "target", json_string(target));
        json_array_append_new(files, entry);
    }
    json_decref(entries);
    return ok(json_pack("{s:o}", "files", files));
}

static json_t *tool_kill_sandbox(mcp_call *c)
{
    arg_fail f = {0};
    const char *id;
    if (!arg_id(c, &id, &f))
        return invalid(&f);
    abx_error *err = NULL;
    int rc = mcp_session_kill(c->session, id, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    mcp_call_log(c, 1, "sandbox killed");
    return ok(json_pack("{s:b}", "success", 1));
}

/* Appends to arr a page of the sandboxes the session's client sees (its
 * tenant's only: libabx filters). */
static int list_visible(mcp_session *ses, const char *status, size_t limit, size_t offset, json_t *arr,
                        abx_error **err)
{
    abx_sandbox_info *items = NULL;
    size_t n = 0;
    int rc = abx_list(ses->client, status, (unsigned)limit, (unsigned)offset, &items, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        json_array_append_new(arr, sandbox_meta(&items[i]));
    abx_sandbox_info_list_free(items, n);
    return rc;
}

static json_t *tool_list_sandboxes(mcp_call *c)
{
    arg_fail f = {0};
    const char *status, *provider, *region;
    long long limit, offset;
    if (!arg_string(c, "status", false, NULL, &status, &f) ||
        !arg_int(c, "limit", 1, ABX_LIST_LIMIT_MAX, 100, &limit, false, &f) ||
        !arg_int(c, "offset", 0, 1000000000, 0, &offset, false, &f) ||
        !arg_string(c, "provider", false, NULL, &provider, &f) ||
        !arg_string(c, "region", false, NULL, &region, &f))
        return invalid(&f);
    if (status && strcmp(status, "running") != 0 && strcmp(status, "paused") != 0)
        return invalid(&(arg_fail){"status", "must be running or paused"});
    if (provider && strcmp(provider, abx_client_provider(c->session->client)) != 0)
        return tool_error(ABX_EPROVIDER,
                          "provider"); /* one provider per server: the one it was started with */
    json_t *arr = json_array();
    abx_error *err = NULL;
    int rc = list_visible(c->session, status, (size_t)limit, (size_t)offset, arr, &err);
    if (rc < 0) {
        json_decref(arr);
        return failure_of(c, err, rc);
    }
    return ok(json_pack("{s:o, s:I, s:I}", "sandboxes", arr, "limit", (json_int_t)limit, "offset",
                        (json_int_t)offset));
}

static json_t *tool_get_sandbox(mcp_call *c)
{
    arg_fail f = {0};
    const char *id;
    if (!arg_id(c, &id, &f))
        return invalid(&f);
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    abx_sandbox_info info;
    int rc;
    if (id) {
        rc = abx_get_info_by_id(c->session->client, id, &info, &err); /* another tenant's: E8002 */
    } else {
        rc = use_sandbox(c, NULL, false, false, &b, &err);
        if (rc == 0) {
            rc = abx_sandbox_get_info(b->handle, &info, &err);
            mcp_session_release(c->session, b);
        }
    }
    if (rc < 0)
        return failure_of(c, err, rc);
    json_t *meta = sandbox_meta(&info);
    abx_sandbox_info_clear(&info);
    return ok(meta);
}

static json_t *tool_set_sandbox_timeout(mcp_call *c)
{
    arg_fail f = {0};
    const char *id;
    long long timeout;
    if (!arg_int(c, "timeout", ABX_TIMEOUT_MIN_S, ABX_TIMEOUT_MAX_S, 0, &timeout, true, &f) ||
        !arg_id(c, &id, &f))
        return invalid(&f);
    char qualified[128] = "";
    abx_error *err = NULL;
    int rc = mcp_session_set_timeout(c->session, id, (unsigned)timeout, qualified, sizeof qualified, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    return ok(
        json_pack("{s:b, s:s, s:I}", "success", 1, "sandbox_id", qualified, "timeout", (json_int_t)timeout));
}

static json_t *tool_start_background_task(mcp_call *c)
{
    arg_fail f = {0};
    const char *command, *cwd, *id, *user;
    char **envs = NULL;
    if (!arg_string(c, "command", true, NULL, &command, &f) ||
        (!*command && !fail_arg(&f, "command", "must not be empty")) || !arg_user(c, &user, &f) ||
        !arg_string(c, "cwd", false, NULL, &cwd, &f) ||
        (cwd && !*cwd && !fail_arg(&f, "cwd", "must not be empty")) || !arg_envs(c, "envs", &envs, &f) ||
        !arg_id(c, &id, &f)) {
        free_pairs(envs);
        return invalid(&f);
    }
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0) {
        free_pairs(envs);
        return failure_of(c, err, rc);
    }
    abx_exec_options o = {.cwd = cwd, .default_cwd = "/app", .user = user, .envs = (const char *const *)envs};
    int pid = 0;
    rc = abx_sandbox_start_background(b->handle, command, &o, &pid, &err);
    mcp_session_release(c->session, b);
    free_pairs(envs);
    if (rc < 0)
        return failure_of(c, err, rc);
    char task[16];
    snprintf(task, sizeof task, "%d", pid);
    return ok(json_pack("{s:s, s:i}", "task_id", task, "pid", pid));
}

/* task_id: the decimal pid start_background_task returned, as a string or,
 * as clients such as the MCP Inspector send it, a number. */
static bool arg_task(mcp_call *c, int *pid, arg_fail *f)
{
    static const char rule[] = "must be the task_id start_background_task returned (a positive integer, as a "
                               "string or a number)";
    json_t *v = json_object_get(c->args, "task_id");
    if (json_is_integer(v)) {
        if (json_integer_value(v) <= 0 || json_integer_value(v) > 4194304)
            return fail_arg(f, "task_id", rule);
        *pid = (int)json_integer_value(v);
        return true;
    }
    const char *task;
    if (!json_is_string(v))
        return fail_arg(f, "task_id", rule);
    task = json_string_value(v);
    char *end = NULL;
    long n = strtol(task, &end, 10);
    if (!*task || *end || n <= 0 || n > 4194304)
        return fail_arg(f, "task_id", rule);
    *pid = (int)n;
    return true;
}

static json_t *tool_get_background_task(mcp_call *c)
{
    arg_fail f = {0};
    const char *id;
    int pid;
    long long so, se, wait;
    if (!arg_task(c, &pid, &f) || !arg_id(c, &id, &f) ||
        !arg_int(c, "stdout_offset", 0, (1ll << 53), 0, &so, false, &f) ||
        !arg_int(c, "stderr_offset", 0, (1ll << 53), 0, &se, false, &f) ||
        !arg_int(c, "wait", 0, 300, 0, &wait, false, &f))
        return invalid(&f);
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    abx_process_output o;
    rc = abx_sandbox_read_output(b->handle, pid, (unsigned long long)so, (unsigned long long)se,
                                 (unsigned)wait * 1000u, &o, &err);
    mcp_session_release(c->session, b);
    if (rc < 0)
        return failure_of(c, err, rc);
    char task[16];
    snprintf(task, sizeof task, "%d", pid);
    /* the same policy: the first and last bytes of what is new since the
     * offsets given; the offsets let a caller read any part the task's
     * buffer still holds */
    char how_out[200], how_err[200];
    snprintf(how_out, sizeof how_out, "to read the part left out, call again with stdout_offset=%llu",
             (unsigned long long)(o.stdout_offset - o.stdout_len) + c->session->output_limit / 2);
    snprintf(how_err, sizeof how_err, "to read the part left out, call again with stderr_offset=%llu",
             (unsigned long long)(o.stderr_offset - o.stderr_len) + c->session->output_limit / 2);
    mcp_output_view vo = {.limit = c->session->output_limit, .how_to_read_all = how_out},
                    ve = {.limit = c->session->output_limit, .how_to_read_all = how_err};
    int t_out = 0, t_err = 0;
    json_t *out = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:I, s:I, s:b}", "task_id", task, "status",
        o.running ? "running" : "exited", "exit_code", o.running ? json_null() : json_integer(o.exit_code),
        "stdout", mcp_output_text(o.stdout_data, o.stdout_len, o.stdout_len, o.stdout_len, &vo, &t_out),
        "stderr", mcp_output_text(o.stderr_data, o.stderr_len, o.stderr_len, o.stderr_len, &ve, &t_err),
        "stdout_offset", (json_int_t)o.stdout_offset, "stderr_offset", (json_int_t)o.stderr_offset,
        "truncated", o.truncated || t_out || t_err);
    abx_process_output_clear(&o);
    return ok(out);
}

static json_t *tool_stop_background_task(mcp_call *c)
{
    arg_fail f = {0};
    const char *id, *sig_name;
    int pid;
    if (!arg_task(c, &pid, &f) || !arg_id(c, &id, &f) ||
        !arg_string(c, "signal", false, "SIGTERM", &sig_name, &f))
        return invalid(&f);
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {
        {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},
        {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
    };
    int sig = -1;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (strcmp(sig_name, sigs[i].name) == 0 || strcmp(sig_name, sigs[i].name + 3) == 0)
            sig = sigs[i].sig;
    if (sig < 0)
        return invalid(
            &(arg_fail){"signal", "must be a signal name such as SIGTERM, SIGKILL, SIGINT or SIGHUP"});
    mcp_sandbox *b = NULL;
    abx_error *err = NULL;
    int rc = use_sandbox(c, id, true, true, &b, &err);
    if (rc < 0)
        return failure_of(c, err, rc);
    rc = abx_sandbox_signal(b->handle, pid, sig, &err);
    abx_process_output o = {0};
    if (rc == 0) /* give it a moment to go, and say whether it did */
        rc = abx_sandbox_read_output(b->handle, pid, ~0ull, ~0ull, 0, &o, &err);
    for (int i = 0; rc == 0 && o.running && i < 20; i++) {
        abx_process_output_clear(&o);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        rc = abx_sandbox_read_output(b->handle, pid, ~0ull, ~0ull, 0, &o, &err);
    }
    mcp_session_release(c->session, b);
    if (rc < 0)
        return failure_of(c, err, rc);
    bool running = o.running;
    abx_process_output_clear(&o);
    return ok(json_pack("{s:b, s:s}", "success", 1, "status", running ? "running" : "exited"));
}

static json_t *tool_upload_file(mcp_call *c)
{
    arg_fail f = {0};
    const char *path, *b64, *id;
    if (!arg_string(c, "path", true, NULL, &path, &f) ||
        (!*path && !fail_arg(&f, "path", "must not be empty")) ||
        !arg_string(c, "content_base64", true, NULL, &b64, &f) || !arg_id(c, &id, &f))
        return invalid(&f);
    /* a cheap bound first (padding aside), the exact size after decoding */
    if (strlen(b64) / 4 * 3 > TRANSFER_MAX + 2)
        return too_big("content_base64", "the decoded content", TRANSFER_MAX,
                       "split the file and upload the parts, then join them with run_command (cat)");
    char *data = NULL;
    long n = mcp_unb64(b64, &data);
    if (n < 0)
        return invalid(&(arg_fail){"content_base64", "must be base64 (RFC 4648)"});
    if ((size_t)n > TRANSFER_MAX) {
        free(data);
        return too_big("content_base64", "the decoded content", TRANSFER_MAX,
                       "split the file and upload the parts, then join them with run_command (cat)");
    }
    json_t *r = write_bytes(c, id, path, data, (size_t)n);
    free(data);
    return r;
}

static const char *image_type(const unsigned char *d, size_t n)
{
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF)
        return "image/jpeg";
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
        return "image/gif";
    if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
        return "image/webp";
    return NULL;
}

static json_t *tool_download_file(mcp_call *c)
{
    arg_fail f = {0};
    const char *path, *id;
    if (!arg_string(c, "path", true, NULL, &path, &f) ||
        (!*path && !fail_arg(&f, "path", "must not be empty")) || !arg_id(c, &id, &f))
        return invalid(&f);
    char *data = NULL;
    size_t len = 0;
    json_t *failure = read_bytes(c, id, path, TRANSFER_MAX, &data, &len);
    if (failure && is_code(failure, ABX_ETOOBIG)) {
        json_decref(failure);
        return too_big("path", "the file", TRANSFER_MAX,
                       "read a part with read_file offset and length, or split it with run_command "
                       "(split -b 7M FILE FILE.part-) and download the parts");
    }
    if (failure)
        return failure;
    char *b64 = mcp_b64(data, len);
    const char *mime = image_type((const unsigned char *)data, len);
    abx_free(data);
    if (!b64)
        return tool_error(ABX_ENOMEM, NULL);
    json_t *out = json_pack("{s:s, s:I, s:s}", "path", path, "size", (json_int_t)len, "content_base64", b64);
    json_t *image = NULL;
    if (mime)
        json_object_set_new(out, "mime_type", json_string(mime));
    if (mime && len <= IMAGE_INLINE_MAX) /* larger images come back as bytes only */
        image = json_pack("[{s:s, s:s, s:s}]", "type", "image", "data", b64, "mimeType", mime);
    free(b64);
    return result_with(out, image); /* the text copy leaves the bytes to the image and structuredContent */
}

typedef struct tool_entry {
    const char *name;
    json_t *(*fn)(mcp_call *c);
} tool_entry;

static const tool_entry handlers[] = {
    {"create_sandbox", tool_create_sandbox},
    {"run_code", tool_run_code},
    {"run_command", tool_run_command},
    {"read_file", tool_read_file},
    {"write_file", tool_write_file},
    {"list_files", tool_list_files},
    {"kill_sandbox", tool_kill_sandbox},
    {"list_sandboxes", tool_list_sandboxes},
    {"get_sandbox", tool_get_sandbox},
    {"set_sandbox_timeout", tool_set_sandbox_timeout},
    {"start_background_task", tool_start_background_task},
    {"get_background_task", tool_get_background_task},
    {"stop_background_task", tool_stop_background_task},
    {"upload_file", tool_upload_file},
    {"download_file", tool_download_file},
};

/* A tool error saying the sandbox is gone (E8002) or not running (E8016). */
static bool failed_as_gone(json_t *r)
{
    return is_code(r, ABX_ENOTFOUND) || is_code(r, ABX_ENOTRUNNING);
}

/* Re-renders the text block of result r after its structuredContent sc
 * changed. */
static json_t *rerender(json_t *r, json_t *sc)
{
    json_t *content = json_object_get(r, "content");
    size_t i, at = (size_t)-1;
    bool images = false;
    json_t *b;
    json_array_foreach(content, i, b)
    {
        const char *type = json_string_value(json_object_get(b, "type"));
        images |= type && strcmp(type, "image") == 0;
        if (type && strcmp(type, "text") == 0)
            at = i;
    }
    if (at == (size_t)-1)
        return r;
    char *text = mcp_render_text(sc, images);
    json_array_set_new(content, at, json_pack("{s:s, s:s}", "type", "text", "text", text ? text : "{}"));
    free(text);
    return r;
}

/* A result made on a new default sandbox that replaced one which had ended
 * says so, in structuredContent and its text copy. */
static json_t *note_replaced(json_t *r)
{
    json_t *sc = json_object_get(r, "structuredContent");
    if (!sc || json_is_true(json_object_get(r, "isError")))
        return r;
    json_object_set_new(sc, "sandbox_replaced", json_true());
    json_object_set_new(
        sc, "sandbox_replaced_reason",
        json_string("the default sandbox had ended (timed out or killed from outside); this call "
                    "ran in a new one, without the old one's files and state"));
    return rerender(r, sc);
}

/* A stateless (2026-07-28) call that used the default sandbox names it:
 * the handle the client may pass as sandbox_id (omitting it keeps working
 * too: the default is the tenant's on this server). */
static json_t *note_default(mcp_call *c, json_t *r)
{
    json_t *sc = json_object_get(r, "structuredContent");
    if (!sc || json_is_true(json_object_get(r, "isError")) || json_object_get(sc, "sandbox_id"))
        return r;
    json_object_set_new(sc, "sandbox_id", json_string(c->default_id));
    return rerender(r, sc);
}

/* An argument the tool does not take fails the call, naming it and the
 * ones the tool accepts (a misspelt memory_mb must not silently create a
 * sandbox with the default memory). f->field borrows from call->args. */
static bool arguments_known(mcp_call *call, const char *name, arg_fail *f)
{
    json_t *props = json_object_get(json_object_get(find_tool(name), "inputSchema"), "properties");
    const char *key;
    json_t *v;
    json_object_foreach(call->args, key, v)
    {
        if (json_object_get(props, key))
            continue;
        char accepted[400] = "";
        size_t used = 0;
        const char *p;
        json_t *x;
        json_object_foreach(props, p, x)
        {
            int n = snprintf(accepted + used, sizeof accepted - used, "%s%s", used ? ", " : "", p);
            if (n < 0 || (size_t)n >= sizeof accepted - used)
                break;
            used += (size_t)n;
        }
        char rule[sizeof f->rule];
        snprintf(rule, sizeof rule, "is not an argument of %s; it accepts: %s", name,
                 used ? accepted : "no arguments");
        return fail_arg(f, key, rule);
    }
    return true;
}

json_t *mcp_tools_call(mcp_call *call, const char *name)
{
    arg_fail unknown = {0};
    if (find_tool(name) && !arguments_known(call, name, &unknown))
        return invalid(&unknown);
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
        if (strcmp(handlers[i].name, name) == 0) {
            json_t *r = handlers[i].fn(call);
            /* a call on the default that found it gone (between renewals)
             * runs once more, on a new default, if it has indeed ended */
            if (r && call->used_default && !call->sandbox_replaced && failed_as_gone(r) &&
                mcp_session_check_default(call->session)) {
                json_decref(r);
                call->used_default = false;
                r = handlers[i].fn(call);
                call->sandbox_replaced = r != NULL;
                mcp_call_log(call, 4,
                             "the default sandbox had ended (timed out or killed): a new one replaced it");
            }
            if (r && call->sandbox_replaced)
                r = note_replaced(r);
            if (r && call->modern && call->used_default && call->default_id[0])
                r = note_default(call, r);
            return r;
        }
    return NULL;
}

/* run_code and run_command: execution.taskSupport optional in tools.json. */
static bool runs_as_task(const char *name)
{
    json_t *execution = json_object_get(find_tool(name), "execution");
    const char *support = json_string_value(json_object_get(execution, "taskSupport"));
    return support && (strcmp(support, "optional") == 0 || strcmp(support, "required") == 0);
}

const mcp_toolset mcp_abx_tools = {.list = mcp_tools_list,
                                   .exists = mcp_tool_exists,
                                   .call = mcp_tools_call,
                                   .read_resource = mcp_resources_read,
                                   .resource_templates = mcp_resource_templates,
                                   .runs_as_task = runs_as_task};
