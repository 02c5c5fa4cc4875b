/* mcp_install.c: `abx mcp install` and the clients part of `abx mcp status`.
 *
 * Owns the table of MCP clients abx installs into: where each keeps its
 * configuration in each scope it has (the user's own file, or a project's
 * in the current directory), in which format (JSON, or TOML for Codex
 * CLI), under which key and with which fields, each as the client's own
 * documentation gives it (docs/mcp-clients.md shows every one). And the
 * edit: one agent-sandbox entry merged in, every other entry and byte kept
 * (the TOML edit replaces only that table's lines), the file replaced
 * atomically with its mode. A file abx cannot read as strict JSON or valid
 * TOML is left byte for byte as it was: the error names its line and the
 * entry to add by hand is printed. The API key goes into a user's own file
 * only, never into a project's (which is often committed), and is never
 * printed: the printed entry holds a placeholder.
 */
#include "mcp_install.h"
#include "server.h"
#include "toml.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX (4u << 20) /* a client configuration abx reads (Claude Code's ~/.claude.json grows) */
#define KEY_VAR "ABX_SANDBOX_API_KEY"
#define KEY_PLACEHOLDER "<your ABX_SANDBOX_API_KEY>"
#define TOML_TABLE "mcp_servers." MCP_SERVER_NAME

typedef enum config_format { FORMAT_JSON, FORMAT_TOML } config_format;
typedef enum config_scope { SCOPE_USER, SCOPE_PROJECT } config_scope;

typedef struct mcp_client {
    const char *name, *label;
    config_format format;
    const char *section;      /* mcpServers, servers, or mcp_servers (TOML) */
    const char *type;         /* the entry's "type" where the client wants one, or NULL */
    bool all_tools;           /* "tools": ["*"] (Copilot CLI offers only the tools it names) */
    const char *user_file;    /* under $HOME, "@name" for a place user_path() works out; NULL: none */
    const char *project_file; /* under the current directory; NULL: none */
    config_scope usual;       /* the scope without --scope */
} mcp_client;

static const mcp_client clients[] = {
    {"cursor", "Cursor", FORMAT_JSON, "mcpServers", NULL, false, ".cursor/mcp.json", ".cursor/mcp.json",
     SCOPE_USER},
    {"claude", "Claude Desktop", FORMAT_JSON, "mcpServers", NULL, false, "@claude-desktop", NULL, SCOPE_USER},
    {"vscode", "VS Code", FORMAT_JSON, "servers", "stdio", false, "@vscode", ".vscode/mcp.json",
     SCOPE_PROJECT},
    {"claude-code", "Claude Code", FORMAT_JSON, "mcpServers", "stdio", false, ".claude.json", ".mcp.json",
     SCOPE_PROJECT},
    {"codex", "Codex CLI", FORMAT_TOML, "mcp_servers", NULL, false, "@codex", ".codex/config.toml",
     SCOPE_USER},
    {"gemini", "Gemini CLI", FORMAT_JSON, "mcpServers", NULL, false, ".gemini/settings.json",
     ".gemini/settings.json", SCOPE_USER},
    {"windsurf", "Windsurf", FORMAT_JSON, "mcpServers", NULL, false, ".codeium/windsurf/mcp_config.json",
     NULL, SCOPE_USER},
    {"copilot", "Copilot CLI", FORMAT_JSON, "mcpServers", "local", true, "@copilot", ".github/mcp.json",
     SCOPE_USER},
};

#define CLIENT_NAMES "cursor, claude, vscode, claude-code, codex, gemini, windsurf or copilot"

static const char *scope_name(config_scope s)
{
    return s == SCOPE_USER ? "user" : "project";
}

/* ---- where each configuration lives --------------------------------------- */

static bool joined(char *out, size_t len, const char *a, const char *b)
{
    int n = snprintf(out, len, "%s/%s", a, b);
    return n > 0 && (size_t)n < len;
}

/* The places of user files that are not simply under $HOME. */
static bool special_user_path(const char *which, const char *home, char *out, size_t len)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    char config[PATH_MAX];
#ifdef __APPLE__
    snprintf(config, sizeof config, "%s/Library/Application Support", home);
    (void)xdg;
#else
    if (xdg && *xdg)
        snprintf(config, sizeof config, "%s", xdg);
    else
        snprintf(config, sizeof config, "%s/.config", home);
#endif
    if (strcmp(which, "@claude-desktop") == 0)
        return joined(out, len, config, "Claude/claude_desktop_config.json");
    if (strcmp(which, "@vscode") == 0)
        return joined(out, len, config, "Code/User/mcp.json");
    if (strcmp(which, "@copilot") == 0) {
        const char *copilot_home = getenv("COPILOT_HOME"); /* Copilot CLI's own variable */
        return copilot_home && *copilot_home ? joined(out, len, copilot_home, "mcp-config.json")
                                             : joined(out, len, home, ".copilot/mcp-config.json");
    }
    const char *codex_home = getenv("CODEX_HOME"); /* @codex: Codex CLI's own variable */
    if (codex_home && *codex_home)
        return joined(out, len, codex_home, "config.toml");
    return joined(out, len, home, ".codex/config.toml");
}

/* The file of t in scope s: 0, or -1 when t has no such scope (or HOME is
 * unset, or the path does not fit). */
static int client_path(const mcp_client *t, config_scope s, char *out, size_t len)
{
    if (s == SCOPE_PROJECT) {
        char cwd[PATH_MAX];
        return t->project_file && getcwd(cwd, sizeof cwd) && joined(out, len, cwd, t->project_file) ? 0 : -1;
    }
    const char *home = getenv("HOME");
    if (!t->user_file || !home || !*home)
        return -1;
    if (t->user_file[0] == '@')
        return special_user_path(t->user_file, home, out, len) ? 0 : -1;
    return joined(out, len, home, t->user_file) ? 0 : -1;
}

/* ---- reading and writing a file ------------------------------------------- */

/* The file's bytes (the caller frees), *exists false and "" when it is
 * absent; NULL with errno when it cannot be read (EFBIG: over CONFIG_MAX). */
static char *read_config(const char *path, size_t *len, bool *exists)
{
    *len = 0;
    *exists = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? strdup("") : NULL;
    *exists = true;
    char *text = malloc(CONFIG_MAX + 1);
    ssize_t n = 0;
    while (text && *len <= CONFIG_MAX && (n = read(fd, text + *len, CONFIG_MAX + 1 - *len)) > 0)
        *len += (size_t)n;
    close(fd);
    if (!text || n < 0 || *len > CONFIG_MAX) {
        int e = !text ? ENOMEM : n < 0 ? errno : EFBIG;
        free(text);
        errno = e;
        return NULL;
    }
    text[*len] = '\0';
    return text;
}

static int mkdir_parents(const char *path)
{
    char dir[PATH_MAX + 96];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* Replaces path with text. A file that exists keeps its mode (a 0644
 * config stays 0644); a new one is 0600 (it may hold an API key). */
static int write_atomically(const char *path, const char *text, size_t len)
{
    char tmp[PATH_MAX + 96];
    snprintf(tmp, sizeof tmp, "%s.abx-tmp", path);
    if (mkdir_parents(path) < 0)
        return -1;
    struct stat st;
    mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : 0600;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    int rc = fchmod(fd, mode) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
    if (close(fd) < 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* ---- the entry -------------------------------------------------------------- */

/* The JSON entry; key may be NULL (no env) or KEY_PLACEHOLDER. */
static json_t *json_entry(const mcp_client *t, const char *self, const char *key)
{
    json_t *entry = json_pack("{s:s, s:[s, s]}", "command", self, "args", "mcp", "start");
    if (t->type)
        json_object_set_new(entry, "type", json_string(t->type));
    if (t->all_tools)
        json_object_set_new(entry, "tools", json_pack("[s]", "*"));
    if (key)
        json_object_set_new(entry, "env", json_pack("{s:s}", KEY_VAR, key));
    return entry;
}

/* The TOML table (Codex CLI's [mcp_servers.NAME]), into out. */
static bool toml_entry(const char *self, const char *key, char *out, size_t len)
{
    snprintf(out, len, "[%s]\ncommand = ", TOML_TABLE);
    if (!abx__toml_quote(self, out, len))
        return false;
    size_t used = strlen(out);
    snprintf(out + used, len - used, "\nargs = [\"mcp\", \"start\"]\n");
    if (!key)
        return true;
    used = strlen(out);
    snprintf(out + used, len - used, "env = { %s = ", KEY_VAR);
    if (!abx__toml_quote(key, out, len))
        return false;
    used = strlen(out);
    return (size_t)snprintf(out + used, len - used, " }\n") < len - used;
}

/* ---- the JSON edit ---------------------------------------------------------- */

/* The line where text stops being strict JSON, or 0 when it is JSON (an
 * object or not: *doc is set when it is an object). */
static int parse_json(const char *text, size_t len, json_t **doc)
{
    *doc = NULL;
    if (len == 0) {
        *doc = json_object();
        return 0;
    }
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v)
        return jerr.line > 0 ? jerr.line : 1;
    if (json_is_object(v))
        *doc = v;
    else
        json_decref(v);
    return 0;
}

/* The new text of a JSON configuration with entry under t->section
 * (takes entry), or NULL with *why saying what stopped it. */
static char *json_edit(const mcp_client *t, const char *text, size_t len, json_t *entry, char *why,
                       size_t wlen)
{
    json_t *doc = NULL;
    int bad_line = parse_json(text, len, &doc);
    if (bad_line)
        snprintf(why, wlen, "is not strict JSON (line %d: comments and trailing commas are not JSON)",
                 bad_line);
    else if (!doc)
        snprintf(why, wlen, "is not a JSON object");
    json_t *section = doc ? json_object_get(doc, t->section) : NULL;
    if (doc && section && !json_is_object(section)) {
        snprintf(why, wlen, "has a \"%s\" that is not an object", t->section);
        json_decref(doc);
        doc = NULL;
    }
    if (!doc) {
        json_decref(entry);
        return NULL;
    }
    if (!section) {
        section = json_object();
        json_object_set_new(doc, t->section, section);
    }
    json_object_set_new(section, MCP_SERVER_NAME, entry);
    char *out = json_dumps(doc, JSON_INDENT(2));
    json_decref(doc);
    if (out) {
        size_t n = strlen(out);
        char *nl = realloc(out, n + 2);
        if (nl) {
            nl[n] = '\n';
            nl[n + 1] = '\0';
        }
        out = nl;
    }
    return out;
}

/* ---- the TOML edit ---------------------------------------------------------- */

typedef struct toml_scan {
    size_t starts[512]; /* offsets of header lines */
    bool ours[512];     /* [mcp_servers.agent-sandbox] or one of its subtables */
    size_t n;
    bool overflow;
    bool elsewhere; /* the entry defined otherwise (dotted keys, an inline table) */
} toml_scan;

static bool is_ours(const char *name)
{
    size_t n = strlen(TOML_TABLE);
    return strncmp(name, TOML_TABLE, n) == 0 && (name[n] == '\0' || name[n] == '.');
}

static void toml_visit(const abx_toml_item *item, void *ud)
{
    toml_scan *s = ud;
    if (item->header) {
        if (s->n == sizeof s->starts / sizeof s->starts[0]) {
            s->overflow = true;
            return;
        }
        s->starts[s->n] = item->offset;
        s->ours[s->n++] = is_ours(item->name);
        return;
    }
    char full[2 * ABX_TOML_NAME_MAX + 2];
    snprintf(full, sizeof full, "%s%s%s", item->table, item->table[0] ? "." : "", item->name);
    if (is_ours(full) && !is_ours(item->table))
        s->elsewhere = true; /* mcp_servers.agent-sandbox.command = ... written as dotted keys */
    if (strcmp(full, "mcp_servers") == 0)
        s->elsewhere = true; /* mcp_servers = { ... }: a table that cannot take a [header] */
}

/* The new text of a TOML configuration: the old one without the lines of
 * [mcp_servers.agent-sandbox] (and its subtables), the new table at the
 * end. NULL with *why when the file is not valid TOML or defines the
 * entry in a way a table cannot replace. */
static char *toml_edit(const char *text, size_t len, const char *table, char *why, size_t wlen)
{
    toml_scan s;
    memset(&s, 0, sizeof s);
    int bad_line = 0;
    if (abx__toml_check(text, len, toml_visit, &s, &bad_line) < 0) {
        snprintf(why, wlen, "is not valid TOML (line %d)", bad_line);
        return NULL;
    }
    if (s.elsewhere || s.overflow) {
        snprintf(why, wlen,
                 "defines mcp_servers in a form abx does not rewrite (dotted keys or an inline table)");
        return NULL;
    }
    char *out = malloc(len + strlen(table) + 3);
    if (!out)
        return NULL;
    size_t n = 0, from = 0;
    for (size_t i = 0; i <= s.n; i++) {
        size_t to = i < s.n ? s.starts[i] : len;
        bool drop = i > 0 && s.ours[i - 1];
        if (!drop) {
            memcpy(out + n, text + from, to - from);
            n += to - from;
        }
        from = to;
    }
    if (n > 0 && out[n - 1] != '\n')
        out[n++] = '\n';
    if (n > 0 && (n < 2 || out[n - 2] != '\n'))
        out[n++] = '\n'; /* a blank line before the table */
    memcpy(out + n, table, strlen(table) + 1);
    n += strlen(table);
    if (abx__toml_check(out, n, NULL, NULL, &bad_line) < 0) { /* never write what does not read back */
        snprintf(why, wlen, "would not be valid TOML after the edit (line %d)", bad_line);
        free(out);
        return NULL;
    }
    return out;
}

/* ---- install ------------------------------------------------------------------ */

/* The configured API key, or NULL. Never printed. */
static char *api_key(void)
{
    const char *env = getenv(KEY_VAR);
    if (env && *env)
        return strdup(env);
    char *v = NULL, *key = NULL;
    if (abx_config_get("core.api_key", &v, NULL) == 0 && v && *v)
        key = strdup(v);
    if (v)
        explicit_bzero(v, strlen(v));
    abx_free(v);
    return key;
}

static void forget(char *secret)
{
    if (secret) {
        explicit_bzero(secret, strlen(secret));
        free(secret);
    }
}

bool mcp_host_problems(char *out, size_t len)
{
    bool works = false;
    json_t *checks = cli_host_checks(&works);
    cli_host_failures(checks, out, len);
    json_decref(checks);
    return !works;
}

/* The entry to add by hand, as text (a placeholder for the key). */
static char *hand_entry(const mcp_client *t, const char *self, bool with_key)
{
    if (t->format == FORMAT_TOML) {
        char table[PATH_MAX * 2 + 256];
        return toml_entry(self, with_key ? KEY_PLACEHOLDER : NULL, table, sizeof table) ? strdup(table)
                                                                                        : NULL;
    }
    json_t *wrap =
        json_pack("{s:o}", MCP_SERVER_NAME, json_entry(t, self, with_key ? KEY_PLACEHOLDER : NULL));
    char *text = json_dumps(wrap, JSON_INDENT(2));
    json_decref(wrap);
    return text;
}

/* A file left untouched: the error, then the entry to add by hand. */
static int left_untouched(cli_ctx *ctx, const mcp_client *t, const char *path, const char *why,
                          const char *self, bool with_key)
{
    char *entry = hand_entry(t, self, with_key);
    if (ctx->json) {
        json_t *out = json_pack("{s:s, s:s, s:b, s:s, s:s, s:s}", "target", t->name, "path", path, "written",
                                0, "reason", why, "section", t->section, "entry_to_add", entry ? entry : "");
        cli_print_json(out);
    }
    int status =
        cli_fail(ctx, ABX_ECONFIG, "the %s configuration %s %s: left untouched", t->label, path, why);
    if (!ctx->json && entry)
        fprintf(stderr, "Add this to %s by hand%s%s%s:\n\n%s\n", path,
                t->format == FORMAT_JSON ? " (under \"" : "", t->format == FORMAT_JSON ? t->section : "",
                t->format == FORMAT_JSON ? "\")" : "", entry);
    free(entry);
    return status;
}

/* The first sentence of a tool's description (to ". " or ";"), cut to
 * fit a line. */
static void short_description(const char *d, char *out, size_t len)
{
    d = d ? d : "";
    const char *stop = strstr(d, ". "), *semi = strchr(d, ';');
    size_t n = stop ? (size_t)(stop - d) : strlen(d);
    if (semi && (size_t)(semi - d) < n)
        n = (size_t)(semi - d);
    bool cut = n >= len;
    if (cut)
        n = len - 4;
    snprintf(out, len, "%.*s%s", (int)n, d, cut ? "..." : "");
}

static void print_installed(cli_ctx *ctx, const mcp_client *t, config_scope scope, const char *path,
                            bool key_written, bool blocked, const char *problems)
{
    json_t *tools = mcp_tools_list();
    size_t i;
    json_t *tool;
    if (ctx->json) {
        json_t *names = json_array();
        json_array_foreach(tools, i, tool) json_array_append(names, json_object_get(tool, "name"));
        json_t *out = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:b, s:b}", "target", t->name, "scope",
                                scope_name(scope), "path", path, "server", MCP_SERVER_NAME, "written", 1,
                                "tools", names, "api_key_written", key_written, "sandboxes_work", !blocked);
        if (blocked)
            json_object_set_new(out, "host_problems", json_string(problems));
        cli_print_json(out);
    } else {
        printf("MCP Server config written to %s (%s scope)\n\nRegistered tools:\n", path, scope_name(scope));
        json_array_foreach(tools, i, tool)
        {
            char line[64];
            short_description(json_string_value(json_object_get(tool, "description")), line, sizeof line);
            printf("  \u2022 %-22s \u2014 %s\n", json_string_value(json_object_get(tool, "name")), line);
        }
        printf("\nPlease restart %s to apply changes.\n", t->label);
    }
    json_decref(tools);
}

static const mcp_client *find_client(const char *name)
{
    for (size_t i = 0; name && i < sizeof clients / sizeof clients[0]; i++)
        if (strcmp(clients[i].name, name) == 0)
            return &clients[i];
    return NULL;
}

int mcp_install(cli_ctx *ctx, const char *target, const char *scope_arg)
{
    const mcp_client *t = find_client(target);
    if (!t)
        return cli_fail(ctx, ABX_EINVAL, "--target: expected " CLIENT_NAMES);
    config_scope scope = t->usual;
    if (scope_arg && strcmp(scope_arg, "user") != 0 && strcmp(scope_arg, "project") != 0)
        return cli_fail(ctx, ABX_EINVAL, "--scope: expected user or project");
    if (scope_arg)
        scope = scope_arg[0] == 'u' ? SCOPE_USER : SCOPE_PROJECT;
    if ((scope == SCOPE_USER && !t->user_file) || (scope == SCOPE_PROJECT && !t->project_file))
        return cli_fail(ctx, ABX_EINVAL, "--scope: %s has no %s configuration; leave --scope out", t->label,
                        scope_name(scope));
    char path[PATH_MAX + 64], self[PATH_MAX];
    if (client_path(t, scope, path, sizeof path) < 0)
        return cli_fail(ctx, ABX_ECONFIG, "cannot tell where the %s configuration lives (HOME unset)",
                        t->label);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return cli_fail(ctx, ABX_ESYS, "cannot find this abx executable's path");
    self[n] = '\0';
    size_t len;
    bool exists;
    char *text = read_config(path, &len, &exists);
    if (!text)
        return cli_fail(ctx, ABX_EIO, "reading the %s configuration %s: %s", t->label, path,
                        errno == EFBIG ? "larger than the 4 MiB abx reads" : strerror(errno));
    char *key = scope == SCOPE_USER ? api_key() : NULL; /* never into a project's file */
    char why[200] = "", *next = NULL;
    if (t->format == FORMAT_JSON) {
        next = json_edit(t, text, len, json_entry(t, self, key), why, sizeof why);
    } else {
        char table[PATH_MAX * 2 + 1024];
        if (toml_entry(self, key, table, sizeof table))
            next = toml_edit(text, len, table, why, sizeof why);
        explicit_bzero(table, sizeof table);
    }
    free(text);
    bool key_written = key != NULL;
    forget(key);
    if (!next)
        return left_untouched(ctx, t, path, why[0] ? why : "could not be edited", self, key_written);
    int rc = write_atomically(path, next, strlen(next));
    explicit_bzero(next, strlen(next));
    free(next);
    if (rc < 0)
        return cli_fail(ctx, ABX_EIO, "writing the %s configuration %s: %s", t->label, path, strerror(errno));
    char problems[1024];
    bool blocked = mcp_host_problems(problems, sizeof problems);
    if (blocked)
        fprintf(stderr,
                "abx mcp install: warning: as this user (uid %u), sandboxes cannot be made on this host: %s. "
                "%s will start abx, but its tool calls will fail (E8007) until this is fixed; `abx doctor` "
                "says more.\n",
                (unsigned)geteuid(), problems, t->label);
    print_installed(ctx, t, scope, path, key_written, blocked, problems);
    return 0;
}

/* ---- status ------------------------------------------------------------------ */

static bool installed_at(const mcp_client *t, const char *path)
{
    size_t len;
    bool exists;
    char *text = read_config(path, &len, &exists);
    bool found = false;
    if (text && exists && t->format == FORMAT_JSON) {
        json_t *doc = NULL;
        if (parse_json(text, len, &doc) == 0 && doc)
            found = json_object_get(json_object_get(doc, t->section), MCP_SERVER_NAME) != NULL;
        json_decref(doc);
    } else if (text && exists) {
        toml_scan s;
        memset(&s, 0, sizeof s);
        if (abx__toml_check(text, len, toml_visit, &s, NULL) == 0)
            for (size_t i = 0; i < s.n; i++)
                found |= s.ours[i];
    }
    free(text);
    return found;
}

json_t *mcp_install_state(void)
{
    json_t *all = json_object();
    for (size_t k = 0; k < sizeof clients / sizeof clients[0]; k++) {
        const mcp_client *t = &clients[k];
        json_t *scopes = json_object();
        const char *where = NULL;
        char usual[PATH_MAX + 64] = "", found[PATH_MAX + 64] = "";
        for (config_scope s = SCOPE_USER; s <= SCOPE_PROJECT; s++) {
            char path[PATH_MAX + 64];
            if (client_path(t, s, path, sizeof path) < 0)
                continue;
            bool in = installed_at(t, path);
            json_object_set_new(scopes, scope_name(s),
                                json_pack("{s:s, s:b}", "path", path, "installed", in));
            if (s == t->usual)
                snprintf(usual, sizeof usual, "%s", path);
            if (in && (!where || s == t->usual)) {
                where = scope_name(s);
                snprintf(found, sizeof found, "%s", path);
            }
        }
        json_object_set_new(all, t->name,
                            json_pack("{s:s, s:b, s:s, s:o}", "path", where ? found : usual, "installed",
                                      where != NULL, "scope", where ? where : scope_name(t->usual), "scopes",
                                      scopes));
    }
    return all;
}
