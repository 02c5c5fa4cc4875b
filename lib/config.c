/* config.c: .env files, the TOML subset of config.toml, provider resolution.
 *
 * Debian has no C TOML library, so this is a small parser for the subset abx
 * writes and documents (tests/unit/test-config.c checks it; tests/fuzz/
 * fuzzes it): tables [a] and [a.b], `key = value` where value is a basic
 * "string" (escapes \" \\ \n \t \uXXXX of ASCII), a literal 'string', an
 * integer, true/false, or a one-line array of strings without commas (held
 * as "a, b"); comments and blank lines. Anything else is an
 * error naming the line, never a guess. abx__toml_parse_json reads the
 * same subset into typed JSON, plus one-line arrays of strings (provider
 * manifests).
 */
#include "config.h"
#include "buf.h"
#include "error_internal.h"
#include "netpolicy.h"
#include "parse.h"
#include "plugin_store.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE (1u << 20)

static bool key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

bool abx__config_key_valid(const char *key)
{
    if (!key || !*key || strlen(key) >= sizeof((abx_kv *)0)->key)
        return false;
    bool part_start = true;
    for (const char *p = key; *p; p++) {
        if (*p == '.') {
            if (part_start)
                return false;
            part_start = true;
        } else if (key_char(*p)) {
            part_start = false;
        } else {
            return false;
        }
    }
    return !part_start;
}

const char *abx__kvs_get(const abx_kvs *kvs, const char *key)
{
    for (size_t i = 0; i < kvs->n; i++)
        if (strcmp(kvs->items[i].key, key) == 0)
            return kvs->items[i].value;
    return NULL;
}

int abx__kvs_set(abx_kvs *kvs, const char *key, const char *value)
{
    if (!abx__config_key_valid(key) || strlen(value) >= sizeof kvs->items[0].value)
        return -ABX_EINVAL;
    for (size_t i = 0; i < kvs->n; i++) {
        if (strcmp(kvs->items[i].key, key) == 0) {
            snprintf(kvs->items[i].value, sizeof kvs->items[i].value, "%s", value);
            kvs->items[i].system = false; /* the user's own from now on */
            return 0;
        }
    }
    if (kvs->n >= ABX_CONFIG_MAX_ENTRIES)
        return -ABX_ELIMIT;
    snprintf(kvs->items[kvs->n].key, sizeof kvs->items[0].key, "%s", key);
    snprintf(kvs->items[kvs->n].value, sizeof kvs->items[0].value, "%s", value);
    kvs->items[kvs->n].system = false;
    kvs->n++;
    return 0;
}

int abx__kvs_unset(abx_kvs *kvs, const char *key)
{
    for (size_t i = 0; i < kvs->n; i++) {
        if (strcmp(kvs->items[i].key, key) == 0) {
            memmove(&kvs->items[i], &kvs->items[i + 1], (kvs->n - i - 1) * sizeof kvs->items[0]);
            kvs->n--;
            return 0;
        }
    }
    return -ABX_ENOTFOUND;
}

/* ---- line scanning ------------------------------------------------------ */

typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static bool at_line_end(cursor *c)
{
    skip_ws(c);
    return c->p >= c->end || *c->p == '#';
}

/* The next line of text at *p (without its \n or \r\n) in *c; advances
 * *p. False at the end of the text. */
static bool next_line(const char **p, cursor *c)
{
    if (!**p)
        return false;
    const char *nl = strchr(*p, '\n');
    c->p = *p;
    c->end = nl ? nl : *p + strlen(*p);
    *p = nl ? nl + 1 : c->end; /* before trimming: a last line may end in a lone \r */
    if (c->end > c->p && c->end[-1] == '\r')
        c->end--;
    return true;
}

/* Reads a bare key into out; returns its length or -1. */
static int read_bare_key(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    while (c->p < c->end && key_char(*c->p)) {
        if (n + 1 >= cap)
            return -1;
        out[n++] = *c->p++;
    }
    out[n] = '\0';
    return n ? (int)n : -1;
}

/* Reads a dotted key (a.b.c, spaces allowed around dots). */
static int read_dotted_key(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    for (;;) {
        skip_ws(c);
        char part[128];
        if (read_bare_key(c, part, sizeof part) < 0)
            return -1;
        size_t len = strlen(part);
        if (n + len + 2 > cap)
            return -1;
        if (n)
            out[n++] = '.';
        memcpy(out + n, part, len);
        n += len;
        out[n] = '\0';
        skip_ws(c);
        if (c->p < c->end && *c->p == '.') {
            c->p++;
            continue;
        }
        return (int)n;
    }
}

static int put_char(char *out, size_t cap, size_t *n, char ch)
{
    if (*n + 1 >= cap)
        return -1;
    out[(*n)++] = ch;
    out[*n] = '\0';
    return 0;
}

static int read_basic_string(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    c->p++; /* opening quote */
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if ((unsigned char)ch < 0x20 && ch != '\t')
            return -1;
        if (ch != '\\') {
            if (put_char(out, cap, &n, ch) < 0)
                return -1;
            continue;
        }
        if (c->p >= c->end)
            return -1;
        char e = *c->p++;
        char lit = e == 'n'    ? '\n'
                   : e == 't'  ? '\t'
                   : e == 'r'  ? '\r'
                   : e == '"'  ? '"'
                   : e == '\\' ? '\\'
                               : 0;
        if (lit) {
            if (put_char(out, cap, &n, lit) < 0)
                return -1;
            continue;
        }
        if (e != 'u' || c->end - c->p < 4)
            return -1;
        int v = 0;
        for (int i = 0; i < 4; i++) {
            int h = abx__hex_digit(*c->p++);
            if (h < 0)
                return -1;
            v = v * 16 + h;
        }
        if (v == 0 || v > 0x7f || put_char(out, cap, &n, (char)v) < 0)
            return -1; /* only ASCII escapes: values are ids, keys and URLs */
    }
    if (c->p >= c->end)
        return -1;
    c->p++; /* closing quote */
    return 0;
}

static int read_literal_string(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    c->p++;
    while (c->p < c->end && *c->p != '\'') {
        if ((unsigned char)*c->p < 0x20 && *c->p != '\t')
            return -1;
        if (put_char(out, cap, &n, *c->p++) < 0)
            return -1;
    }
    if (c->p >= c->end)
        return -1;
    c->p++;
    return 0;
}

static int read_scalar(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    bool digits = true;
    const char *start = c->p;
    while (c->p < c->end && (isalnum((unsigned char)*c->p) || *c->p == '-' || *c->p == '+' || *c->p == '_')) {
        if (!isdigit((unsigned char)*c->p) && !(c->p == start && (*c->p == '-' || *c->p == '+')))
            digits = false;
        if (put_char(out, cap, &n, *c->p++) < 0)
            return -1;
    }
    if (n == 0)
        return -1;
    if (strcmp(out, "true") == 0 || strcmp(out, "false") == 0)
        return 0;
    if (digits && (isdigit((unsigned char)out[0]) || n > 1))
        return 0;
    return -1;
}

/* ["a", 'b', ...] on one line, as "a, b": strings without commas only. */
static int read_joined_list(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    c->p++; /* [ */
    for (bool first = true;; first = false) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return 0;
        }
        char item[1024];
        if (c->p >= c->end ||
            (*c->p == '"'    ? read_basic_string(c, item, sizeof item)
             : *c->p == '\'' ? read_literal_string(c, item, sizeof item)
                             : -1) < 0 ||
            strchr(item, ','))
            return -1;
        for (const char *q = first ? "" : ", "; *q; q++)
            if (put_char(out, cap, &n, *q) < 0)
                return -1;
        for (const char *q = item; *q; q++)
            if (put_char(out, cap, &n, *q) < 0)
                return -1;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',')
            c->p++;
        else if (c->p >= c->end || *c->p != ']')
            return -1;
    }
}

static int read_value(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end)
        return -1;
    if (*c->p == '[')
        return read_joined_list(c, out, cap);
    if (*c->p == '"')
        return read_basic_string(c, out, cap);
    if (*c->p == '\'')
        return read_literal_string(c, out, cap);
    return read_scalar(c, out, cap);
}

int abx__toml_parse(const char *text, abx_kvs *out, int *bad_line)
{
    out->n = 0;
    char table[128] = "";
    int line_no = 0;
    const char *p = text;
    cursor c;
    while (next_line(&p, &c)) {
        line_no++;
        if (at_line_end(&c))
            continue;
        if (*c.p == '[') {
            c.p++;
            if (read_dotted_key(&c, table, sizeof table) < 0 || c.p >= c.end || *c.p != ']')
                goto bad;
            c.p++;
            if (!at_line_end(&c))
                goto bad;
            continue;
        }
        char key[128], full[256], value[1024];
        if (read_dotted_key(&c, key, sizeof key) < 0)
            goto bad;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '=')
            goto bad;
        c.p++;
        if (read_value(&c, value, sizeof value) < 0 || !at_line_end(&c))
            goto bad;
        snprintf(full, sizeof full, "%s%s%s", table, *table ? "." : "", key);
        if (abx__kvs_get(out, full) || abx__kvs_set(out, full, value) < 0)
            goto bad; /* duplicate keys are an error in TOML */
        continue;
    bad:
        *bad_line = line_no;
        return -ABX_ECONFIG;
    }
    return 0;
}

/* ---- TOML into JSON (manifests: typed values, arrays of strings) -------- */

/* The object at dotted key path under root, made when missing; NULL when
 * a part is already something else than a table. */
static json_t *table_at(json_t *root, const char *path)
{
    json_t *t = root;
    char part[128];
    while (*path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof part)
            return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        json_t *next = json_object_get(t, part);
        if (!next) {
            next = json_object();
            json_object_set_new(t, part, next);
        } else if (!json_is_object(next)) {
            return NULL;
        }
        t = next;
        path += n + (dot ? 1 : 0);
    }
    return t;
}

/* ["a", 'b', ...] on one line: strings only, a trailing comma allowed. */
static json_t *read_string_array(cursor *c)
{
    json_t *arr = json_array();
    c->p++; /* [ */
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return arr;
        }
        char item[1024];
        if (c->p >= c->end || json_array_size(arr) >= 256 ||
            (*c->p == '"'    ? read_basic_string(c, item, sizeof item)
             : *c->p == '\'' ? read_literal_string(c, item, sizeof item)
                             : -1) < 0)
            break;
        json_array_append_new(arr, json_string(item));
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return arr;
        }
        break;
    }
    json_decref(arr);
    return NULL;
}

static json_t *read_typed_value(cursor *c)
{
    skip_ws(c);
    if (c->p >= c->end)
        return NULL;
    if (*c->p == '[')
        return read_string_array(c);
    char value[1024];
    if (*c->p == '"' || *c->p == '\'')
        return (*c->p == '"' ? read_basic_string(c, value, sizeof value)
                             : read_literal_string(c, value, sizeof value)) < 0
                   ? NULL
                   : json_string(value);
    if (read_scalar(c, value, sizeof value) < 0)
        return NULL;
    if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0)
        return json_boolean(value[0] == 't');
    errno = 0;
    long long v = strtoll(value, NULL, 10);
    return errno ? NULL : json_integer(v);
}

int abx__toml_parse_json(const char *text, json_t **out, int *bad_line)
{
    json_t *root = json_object(), *table = root;
    json_t *headers = json_object(); /* tables named in [..]: each only once */
    int line_no = 0;
    const char *p = text;
    cursor c;
    while (next_line(&p, &c)) {
        line_no++;
        if (at_line_end(&c))
            continue;
        if (*c.p == '[') {
            char name[256];
            c.p++;
            if (read_dotted_key(&c, name, sizeof name) < 0 || c.p >= c.end || *c.p != ']')
                goto bad;
            c.p++;
            if (!at_line_end(&c) || json_object_get(headers, name) || !(table = table_at(root, name)))
                goto bad;
            json_object_set_new(headers, name, json_true());
            continue;
        }
        char key[256];
        if (read_dotted_key(&c, key, sizeof key) < 0)
            goto bad;
        skip_ws(&c);
        if (c.p >= c.end || *c.p != '=')
            goto bad;
        c.p++;
        json_t *value = read_typed_value(&c);
        if (!value || !at_line_end(&c)) {
            json_decref(value);
            goto bad;
        }
        char *last = strrchr(key, '.');
        json_t *parent = table;
        if (last) {
            *last = '\0';
            parent = table_at(table, key);
        }
        const char *name = last ? last + 1 : key;
        if (!parent || json_object_get(parent, name)) {
            json_decref(value);
            goto bad; /* duplicate keys are an error in TOML */
        }
        json_object_set_new(parent, name, value);
        continue;
    bad:
        *bad_line = line_no;
        json_decref(root);
        json_decref(headers);
        return -ABX_ECONFIG;
    }
    json_decref(headers);
    *out = root;
    return 0;
}

int abx__env_parse(const char *text, abx_kvs *out, int *bad_line)
{
    out->n = 0;
    int line_no = 0;
    const char *p = text;
    cursor c;
    while (next_line(&p, &c)) {
        line_no++;
        if (at_line_end(&c))
            continue;
        if ((size_t)(c.end - c.p) > 7 && strncmp(c.p, "export ", 7) == 0)
            c.p += 7;
        skip_ws(&c);
        char key[128], value[1024];
        size_t n = 0;
        while (c.p < c.end && (isalnum((unsigned char)*c.p) || *c.p == '_') && n + 1 < sizeof key)
            key[n++] = *c.p++;
        key[n] = '\0';
        skip_ws(&c);
        if (n == 0 || isdigit((unsigned char)key[0]) || c.p >= c.end || *c.p != '=')
            goto bad;
        c.p++;
        skip_ws(&c);
        value[0] = '\0';
        if (c.p < c.end && *c.p == '"') {
            if (read_basic_string(&c, value, sizeof value) < 0 || !at_line_end(&c))
                goto bad;
        } else if (c.p < c.end && *c.p == '\'') {
            if (read_literal_string(&c, value, sizeof value) < 0 || !at_line_end(&c))
                goto bad;
        } else {
            size_t m = 0;
            while (c.p < c.end && *c.p != '#' && m + 1 < sizeof value)
                value[m++] = *c.p++;
            while (m > 0 && (value[m - 1] == ' ' || value[m - 1] == '\t'))
                m--;
            value[m] = '\0';
        }
        if (abx__kvs_set(out, key, value) < 0)
            goto bad;
        continue;
    bad:
        *bad_line = line_no;
        return -ABX_ECONFIG;
    }
    return 0;
}

/* A failed append (no memory, past MAX_FILE) empties the buffer and closes
 * it (max 0): the whole result is then NULL. */
static void append(abx_buf *b, const char *s)
{
    if (b->max && abx__buf_append_str(b, s) < 0) {
        abx__buf_free(b);
        b->max = 0;
    }
}

static void append_quoted(abx_buf *buf, const char *v)
{
    append(buf, "\"");
    for (const char *p = v; *p; p++) {
        char one[8];
        if (*p == '"' || *p == '\\')
            snprintf(one, sizeof one, "\\%c", *p);
        else if (*p == '\n')
            snprintf(one, sizeof one, "\\n");
        else if (*p == '\t')
            snprintf(one, sizeof one, "\\t");
        else if ((unsigned char)*p < 0x20)
            snprintf(one, sizeof one, "\\u%04x", (unsigned char)*p);
        else
            snprintf(one, sizeof one, "%c", *p);
        append(buf, one);
    }
    append(buf, "\"");
}

char *abx__toml_format(const abx_kvs *kvs)
{
    abx_buf buf;
    abx__buf_init(&buf, MAX_FILE);
    append(&buf, "# abx configuration (written by `abx config set`)\n");
    bool done[ABX_CONFIG_MAX_ENTRIES] = {false};
    for (size_t i = 0; i < kvs->n; i++)
        done[i] = kvs->items[i].system; /* the operator's file keeps those */
    /* keys outside any table come first: after a [table] header they would
     * belong to it */
    for (size_t i = 0; i < kvs->n; i++) {
        if (strchr(kvs->items[i].key, '.'))
            continue;
        done[i] = true;
        append(&buf, kvs->items[i].key);
        append(&buf, " = ");
        append_quoted(&buf, kvs->items[i].value);
        append(&buf, "\n");
    }
    for (size_t i = 0; i < kvs->n; i++) {
        if (done[i])
            continue;
        const char *dot = strrchr(kvs->items[i].key, '.');
        size_t tlen = dot ? (size_t)(dot - kvs->items[i].key) : 0;
        char table[128];
        snprintf(table, sizeof table, "%.*s", (int)tlen, kvs->items[i].key);
        if (tlen) {
            append(&buf, "\n[");
            append(&buf, table);
            append(&buf, "]\n");
        }
        for (size_t j = i; j < kvs->n; j++) {
            const char *k = kvs->items[j].key;
            const char *d = strrchr(k, '.');
            size_t l = d ? (size_t)(d - k) : 0;
            if (done[j] || l != tlen || strncmp(k, table, tlen) != 0)
                continue;
            done[j] = true;
            append(&buf, d ? d + 1 : k);
            append(&buf, " = ");
            append_quoted(&buf, kvs->items[j].value);
            append(&buf, "\n");
        }
    }
    return buf.max ? abx__buf_take(&buf, NULL) : NULL;
}

/* ---- files -------------------------------------------------------------- */

int abx__home(char *out, size_t len)
{
    const char *h = getenv("ABX_HOME");
    int n;
    if (h && *h) {
        n = snprintf(out, len, "%s", h);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            struct passwd *pw = getpwuid(geteuid());
            home = pw ? pw->pw_dir : NULL;
        }
        if (!home)
            return -ABX_ECONFIG;
        n = snprintf(out, len, "%s/.abx", home);
    }
    return n < 0 || (size_t)n >= len ? -ABX_ECONFIG : 0;
}

/* One directory on the way to $ABX_HOME: owned by us or root, and not
 * writable by group or others (a root-owned sticky directory such as /tmp
 * is fine: nobody else can replace what we put in it). */
static int check_component(const char *path, bool is_home, abx_error **err)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return abx__error_errno(err, ABX_EUNSAFEHOME, errno, path);
    uid_t me = geteuid();
    if (!S_ISDIR(st.st_mode))
        return abx__error_set(err, ABX_EUNSAFEHOME, "%s is not a directory", path);
    if (is_home && st.st_uid != me)
        return abx__error_set(err, ABX_EUNSAFEHOME, "%s belongs to uid %u, not to you (uid %u)", path,
                              (unsigned)st.st_uid, (unsigned)me);
    if (!is_home && st.st_uid != me && st.st_uid != 0)
        return abx__error_set(err, ABX_EUNSAFEHOME, "%s (a parent of ABX_HOME) belongs to uid %u", path,
                              (unsigned)st.st_uid);
    bool sticky_root = (st.st_mode & S_ISVTX) && st.st_uid == 0 && !is_home;
    if ((st.st_mode & 022) && !sticky_root)
        return abx__error_set(err, ABX_EUNSAFEHOME, "%s is writable by group or others", path);
    return 0;
}

int abx__home_check(const char *home, abx_error **err)
{
    char real[PATH_MAX];
    if (!realpath(home, real))
        return errno == ENOENT ? 0 : abx__error_errno(err, ABX_EUNSAFEHOME, errno, home);
    int rc = check_component(real, true, err);
    /* then each parent, up to / */
    for (char *slash = strrchr(real, '/'); rc == 0 && slash; slash = strrchr(real, '/')) {
        if (slash == real) {
            rc = check_component("/", false, err);
            break;
        }
        *slash = '\0';
        rc = check_component(real, false, err);
    }
    return rc;
}

/* Reads path into a new NUL-terminated buffer; NULL with errno if absent. */
static char *slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = malloc(MAX_FILE + 1);
    ssize_t n = buf ? read(fd, buf, MAX_FILE) : -1;
    int e = errno;
    close(fd);
    if (n < 0) {
        free(buf);
        errno = e;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int load_env_file(const char *path, abx_kvs *kvs, abx_error **err)
{
    char *text = slurp(path);
    if (!text) {
        kvs->n = 0;
        return 0;
    }
    int line = 0;
    int rc = abx__env_parse(text, kvs, &line);
    free(text);
    if (rc < 0)
        return abx__error_set(err, ABX_ECONFIG, "%s: line %d is not KEY=VALUE",
                              path[0] == '.' ? ".env" : "~/.abx/.env", line);
    return 0;
}

/* The operator's file, its entries marked system; none when it cannot be
 * read (a user's file mode may keep it from them). */
static int load_system(abx_kvs *kvs, abx_error **err)
{
    const char *path = getenv("ABX_SYSTEM_CONFIG");
    char *text = slurp(path && *path ? path : ABX_SYSTEM_CONFIG_PATH);
    kvs->n = 0;
    if (!text)
        return 0;
    int line = 0;
    int rc = abx__toml_parse(text, kvs, &line);
    free(text);
    if (rc < 0)
        return abx__error_set(err, ABX_ECONFIG, "%s: line %d is not valid (abx reads a TOML subset)",
                              path && *path ? "$ABX_SYSTEM_CONFIG" : ABX_SYSTEM_CONFIG_PATH, line);
    for (size_t i = 0; i < kvs->n; i++)
        kvs->items[i].system = true;
    return 0;
}

int abx__config_load(abx_kvs *kvs, abx_error **err)
{
    char home[512], path[600];
    kvs->n = 0;
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    int rc = abx__home_check(home, err);
    if (rc == 0)
        rc = load_system(kvs, err);
    if (rc < 0)
        return rc;
    snprintf(path, sizeof path, "%s/config.toml", home);
    char *text = slurp(path);
    abx_kvs *own = text ? malloc(sizeof *own) : NULL;
    if (!own) {
        free(text);
        return text ? abx__error_set(err, ABX_ENOMEM, "config") : 0;
    }
    int line = 0;
    own->n = 0;
    rc = abx__toml_parse(text, own, &line);
    free(text);
    for (size_t i = 0; rc == 0 && i < own->n; i++)
        if (abx__kvs_set(kvs, own->items[i].key, own->items[i].value) < 0)
            rc = abx__error_set(err, ABX_ECONFIG, "config.toml: more than %d keys with the operator's",
                                ABX_CONFIG_MAX_ENTRIES);
    explicit_bzero(own, sizeof *own);
    free(own);
    if (rc == -ABX_ECONFIG && line)
        return abx__error_set(err, ABX_ECONFIG, "config.toml: line %d is not valid (abx reads a TOML subset)",
                              line);
    return rc;
}

int abx__config_save(const abx_kvs *kvs, abx_error **err)
{
    char home[512], path[600], tmp[620];
    if (abx__home(home, sizeof home) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set");
    if (mkdir(home, 0700) < 0 && errno != EEXIST)
        return abx__error_errno(err, ABX_EIO, errno, "creating ABX_HOME");
    int checked = abx__home_check(home, err);
    if (checked < 0)
        return checked;
    snprintf(path, sizeof path, "%s/config.toml", home);
    snprintf(tmp, sizeof tmp, "%s/config.toml.tmp", home);
    char *text = abx__toml_format(kvs);
    if (!text)
        return abx__error_set(err, ABX_ENOMEM, "config");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = fd < 0 ? -1 : 0;
    size_t n = strlen(text);
    if (rc == 0 && (write(fd, text, n) != (ssize_t)n || fsync(fd) < 0))
        rc = -1;
    int e = errno;
    if (fd >= 0)
        close(fd);
    free(text);
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0) {
        unlink(tmp);
        return abx__error_errno(err, ABX_EIO, e, "writing config.toml");
    }
    return 0;
}

static int pick(const char *value, const char *src, char *out, size_t len, const char **source)
{
    if (!value || !*value)
        return 0;
    snprintf(out, len, "%s", value);
    *source = src;
    return 1;
}

int abx__resolve_provider(const char *arg, const char *cli_flag, char *out, size_t len, const char **source,
                          abx_error **err)
{
    abx_kvs *kvs = malloc(sizeof *kvs);
    if (!kvs)
        return abx__error_set(err, ABX_ENOMEM, "config");
    int rc = 0;
    char home[512], path[600];
    if (pick(arg, "argument", out, len, source) || pick(cli_flag, "--provider", out, len, source) ||
        pick(getenv("ABX_PROVIDER"), "ABX_PROVIDER", out, len, source))
        goto done;
    if ((rc = load_env_file(".env", kvs, err)) < 0)
        goto done;
    if (pick(abx__kvs_get(kvs, "ABX_PROVIDER"), "./.env", out, len, source))
        goto done;
    if (abx__home(home, sizeof home) == 0) {
        snprintf(path, sizeof path, "%s/.env", home);
        if ((rc = load_env_file(path, kvs, err)) < 0)
            goto done;
        if (pick(abx__kvs_get(kvs, "ABX_PROVIDER"), "~/.abx/.env", out, len, source))
            goto done;
    }
    if ((rc = abx__config_load(kvs, err)) < 0)
        goto done;
    if (pick(abx__kvs_get(kvs, "core.provider"), "config.toml", out, len, source))
        goto done;
    snprintf(out, len, "local");
    *source = "default";
done:
    free(kvs);
    return rc;
}

int abx__config_network_default(char *out, size_t len, abx_error **err)
{
    snprintf(out, len, "none");
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    const char *v = kvs && abx__config_load(kvs, NULL) == 0 ? abx__kvs_get(kvs, "network.default") : NULL;
    int rc = 0;
    if (v && strcmp(v, "none") != 0 && strcmp(v, "internet") != 0 && strcmp(v, "allowlist") != 0)
        rc = abx__error_set(err, ABX_ECONFIG,
                            "config.toml [network] default '%.40s': expected none, internet or allowlist", v);
    else if (v)
        snprintf(out, len, "%s", v);
    free(kvs);
    return rc;
}

int abx__config_net_walls(json_t *policy, const char *pool, abx_error **err)
{
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    if (!kvs)
        return abx__error_set(err, ABX_ENOMEM, "config.toml");
    int rc = abx__config_load(kvs, err);
    const char *list = rc == 0 ? abx__kvs_get(kvs, "network.client_may_allow") : NULL;
    abx_net_rule may[64];
    size_t nmay = 0;
    char item[128];
    for (const char *p = list; rc == 0 && p && *p;) {
        size_t len = strcspn(p, ",");
        const char *start = p;
        p += len + (p[len] == ',');
        while (len && (*start == ' ' || *start == '\t'))
            start++, len--;
        while (len && (start[len - 1] == ' ' || start[len - 1] == '\t'))
            len--;
        if (!len)
            continue;
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), start);
        if (nmay == sizeof may / sizeof may[0] || abx__net_rule_parse(item, &may[nmay], NULL) < 0 ||
            (may[nmay].kind != ABX_NET_CIDR4 && may[nmay].kind != ABX_NET_CIDR6))
            rc = abx__error_set(err, ABX_ECONFIG,
                                "config.toml [network] client_may_allow '%.60s': at most %zu CIDRs "
                                "(10.99.0.0/16, fd00:1::/64)",
                                item, sizeof may / sizeof may[0]);
        else
            nmay++;
    }
    if (rc == 0)
        rc = abx__net_policy_walls(policy, may, nmay, pool, err);
    free(kvs);
    return rc;
}

/* ---- the public face of config.toml (abx.h "configuration") ------------------------------- */

static abx_kvs *config_read(abx_error **err, int *rc)
{
    abx_kvs *kvs = calloc(1, sizeof *kvs);
    *rc = kvs ? abx__config_load(kvs, err) : abx__error_set(err, ABX_ENOMEM, "config");
    if (*rc < 0) {
        free(kvs);
        return NULL;
    }
    return kvs;
}

/* Frees kvs, which may hold secrets. */
static void config_drop(abx_kvs *kvs)
{
    if (kvs)
        explicit_bzero(kvs, sizeof *kvs);
    free(kvs);
}

int abx_config_get(const char *key, char **value, abx_error **err)
{
    *value = NULL;
    int rc;
    abx_kvs *kvs = config_read(err, &rc);
    const char *v = kvs ? abx__kvs_get(kvs, key ? key : "") : NULL;
    if (v && !(*value = strdup(v)))
        rc = abx__error_set(err, ABX_ENOMEM, "config");
    config_drop(kvs);
    return rc;
}

int abx_config_set(const char *key, const char *value, abx_error **err)
{
    int rc;
    abx_kvs *kvs = config_read(err, &rc);
    if (kvs && (!key || !value || (rc = abx__kvs_set(kvs, key, value)) < 0))
        rc = rc == -ABX_ELIMIT ? abx__error_set(err, ABX_ELIMIT, "config.toml holds at most %d keys",
                                                ABX_CONFIG_MAX_ENTRIES)
                               : abx__error_set(err, ABX_EINVAL,
                                                "key: expected section.name of letters, digits, '_' and '-'");
    if (rc == 0)
        rc = abx__config_save(kvs, err);
    config_drop(kvs);
    return rc;
}

int abx_config_unset(const char *key, bool *was_set, abx_error **err)
{
    int rc;
    abx_kvs *kvs = config_read(err, &rc);
    bool had = kvs && key && abx__kvs_unset(kvs, key) == 0;
    if (was_set)
        *was_set = had;
    if (rc == 0)
        rc = abx__config_save(kvs, err);
    config_drop(kvs);
    return rc;
}

int abx_config_entries(char **json, abx_error **err)
{
    *json = NULL;
    int rc;
    abx_kvs *kvs = config_read(err, &rc);
    json_t *all = kvs ? json_array() : NULL;
    for (size_t i = 0; all && i < kvs->n; i++)
        json_array_append_new(all, json_pack("[s, s]", kvs->items[i].key, kvs->items[i].value));
    if (all && !(*json = json_dumps(all, JSON_COMPACT)))
        rc = abx__error_set(err, ABX_ENOMEM, "config");
    json_decref(all);
    config_drop(kvs);
    return rc;
}

int abx_config_key_secret(const char *key)
{
    if (!key)
        return 0;
    /* providers.<id>.<key> that its plugin's manifest marks secret */
    const char *id = strncmp(key, "providers.", 10) == 0 ? key + 10 : NULL;
    const char *dot = id ? strchr(id, '.') : NULL;
    char plugin[64];
    if (dot && (size_t)(dot - id) < sizeof plugin && !strchr(dot + 1, '.')) {
        snprintf(plugin, sizeof plugin, "%.*s", (int)(dot - id), id);
        if (abx__plugin_config_secret(plugin, dot + 1))
            return ABX_SECRET_BY_PLUGIN;
    }
    static const char *const words[] = {"key", "token", "secret", "password", "credential"};
    char lower[256];
    size_t n = 0;
    for (; key[n] && n + 1 < sizeof lower; n++)
        lower[n] = (char)(key[n] >= 'A' && key[n] <= 'Z' ? key[n] - 'A' + 'a' : key[n]);
    lower[n] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(lower, words[i]))
            return ABX_SECRET_BY_NAME;
    return 0;
}

int abx_home(char *out, size_t len, abx_error **err)
{
    if (abx__home(out, len) < 0)
        return abx__error_set(err, ABX_ECONFIG, "neither ABX_HOME nor HOME is set (or the path is too long)");
    return 0;
}
