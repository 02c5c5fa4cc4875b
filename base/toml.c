/* toml.c: a validating scanner for TOML 1.0 (toml.h).
 *
 * Owns the syntax of TOML as the spec (toml.io/en/v1.0.0) writes it, one
 * function per production: a document is lines of expressions; an
 * expression is a key/value, a [table] or an [[array table]]; a value is a
 * string, a number, a boolean, a date-time, an array or an inline table.
 * Every function takes a cursor, moves it past what it accepted, and
 * returns false at the first byte that breaks the grammar (the cursor's
 * line is then the error's). Nothing is allocated but the lists of names
 * the uniqueness rules need.
 */
#include "toml.h"
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NAMES_MAX 4096 /* keys in one table, and [table] headers in a file */

typedef struct cursor {
    const char *p, *end;
    int line;
    int depth;
} cursor;

typedef struct names {
    char **v;
    size_t n;
} names;

static bool at(const cursor *c, char ch)
{
    return c->p < c->end && *c->p == ch;
}

static bool starts(const cursor *c, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(c->end - c->p) >= n && memcmp(c->p, s, n) == 0;
}

static bool is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

static bool is_hex(int ch)
{
    return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

static bool is_bare(int ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || is_digit(ch) || ch == '_' || ch == '-';
}

/* A byte TOML allows in a comment or a string: tab, printable ASCII, or
 * any byte of a non-ASCII character. */
static bool is_text(unsigned char ch)
{
    return ch == '\t' || (ch >= 0x20 && ch != 0x7f);
}

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

/* LF or CRLF. */
static bool newline(cursor *c)
{
    if (at(c, '\n')) {
        c->p++;
        c->line++;
        return true;
    }
    if (starts(c, "\r\n")) {
        c->p += 2;
        c->line++;
        return true;
    }
    return false;
}

static bool comment(cursor *c)
{
    if (!at(c, '#'))
        return true;
    for (c->p++; c->p < c->end && *c->p != '\n' && !starts(c, "\r\n"); c->p++)
        if (!is_text((unsigned char)*c->p))
            return false;
    return true;
}

/* Whitespace, an optional comment, then a newline or the end. */
static bool line_end(cursor *c)
{
    skip_ws(c);
    if (!comment(c))
        return false;
    return c->p == c->end || newline(c);
}

/* Whitespace, comments and newlines (inside an array). */
static bool skip_blank(cursor *c)
{
    for (;;) {
        skip_ws(c);
        if (!comment(c))
            return false;
        if (!newline(c))
            return true;
    }
}

/* Whitespace and newlines (after a line-ending backslash). */
static bool skip_blank_lines(cursor *c)
{
    for (;;) {
        skip_ws(c);
        if (!newline(c))
            return true;
    }
}

/* ---- strings ---------------------------------------------------------- */

/* Appends ch to out (NULL: nothing kept); a name too long is an error. */
static bool keep(char *out, size_t cap, size_t *len, char ch)
{
    if (!out)
        return true;
    if (*len + 1 >= cap)
        return false;
    out[(*len)++] = ch;
    out[*len] = '\0';
    return true;
}

static bool escape(cursor *c, char *out, size_t cap, size_t *len)
{
    c->p++; /* the backslash */
    if (c->p >= c->end)
        return false;
    char ch = *c->p++;
    const char *simple = strchr("btnfr\"\\", ch);
    if (simple && ch)
        return keep(out, cap, len, ch);
    if (ch != 'u' && ch != 'U')
        return false;
    int n = ch == 'u' ? 4 : 8;
    uint32_t v = 0;
    for (int i = 0; i < n; i++, c->p++) {
        if (c->p >= c->end || !is_hex((unsigned char)*c->p))
            return false;
        v = v * 16 + (uint32_t)(is_digit(*c->p) ? *c->p - '0' : (*c->p | 0x20) - 'a' + 10);
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return false;
    return keep(out, cap, len, '?'); /* a name with an escaped character: kept as a placeholder */
}

/* "..." (quote '"') or '...' (quote '\''), one line. */
static bool line_string(cursor *c, char quote, char *out, size_t cap, size_t *len)
{
    c->p++;
    while (c->p < c->end && *c->p != quote) {
        if (quote == '"' && *c->p == '\\') {
            if (!escape(c, out, cap, len))
                return false;
            continue;
        }
        if (!is_text((unsigned char)*c->p) || !keep(out, cap, len, *c->p))
            return false;
        c->p++;
    }
    if (c->p >= c->end)
        return false;
    c->p++;
    return true;
}

/* """...""" or '''...''': newlines allowed, a newline right after the
 * opening delimiter trimmed, up to two quotes of the delimiter inside or
 * right before the closing one; in basic strings escapes and a backslash
 * that ends a line. */
static bool multi_string(cursor *c, char quote)
{
    c->p += 3;
    newline(c);
    while (c->p < c->end) {
        if (*c->p == quote) {
            size_t run = 0;
            while (c->p + run < c->end && c->p[run] == quote)
                run++;
            if (run >= 3) {
                if (run > 5)
                    return false;
                c->p += run;
                return true;
            }
            c->p += run;
            continue;
        }
        if (newline(c))
            continue;
        if (quote == '"' && *c->p == '\\') {
            cursor look = *c;
            look.p++;
            skip_ws(&look);
            if (look.p < look.end && (*look.p == '\n' || *look.p == '\r')) { /* a line-ending backslash */
                *c = look;
                if (!skip_blank_lines(c))
                    return false;
                continue;
            }
            size_t unused = 0;
            if (!escape(c, NULL, 0, &unused))
                return false;
            continue;
        }
        if (!is_text((unsigned char)*c->p))
            return false;
        c->p++;
    }
    return false;
}

static bool string(cursor *c)
{
    size_t unused = 0;
    if (starts(c, "\"\"\""))
        return multi_string(c, '"');
    if (starts(c, "'''"))
        return multi_string(c, '\'');
    return line_string(c, *c->p, NULL, 0, &unused);
}

/* ---- keys ------------------------------------------------------------- */

/* One segment: bare, "basic" or 'literal'; appended to out unquoted, or
 * in quotes when it holds a dot or a quote (so "a.b" stays one segment). */
static bool simple_key(cursor *c, char *out, size_t cap, size_t *len)
{
    char seg[ABX_TOML_NAME_MAX];
    size_t n = 0;
    seg[0] = '\0';
    if (at(c, '"') || at(c, '\'')) {
        if (starts(c, "\"\"\"") || starts(c, "'''"))
            return false; /* a key is never multi-line */
        if (!line_string(c, *c->p, seg, sizeof seg, &n))
            return false;
    } else {
        while (c->p < c->end && is_bare((unsigned char)*c->p))
            if (!keep(seg, sizeof seg, &n, *c->p++))
                return false;
        if (n == 0)
            return false;
    }
    bool quoted = strpbrk(seg, ".\"") != NULL;
    if (quoted && !keep(out, cap, len, '"'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!keep(out, cap, len, seg[i]))
            return false;
    return !quoted || keep(out, cap, len, '"');
}

/* simple-key ( ws "." ws simple-key )* */
static bool key(cursor *c, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (;;) {
        if (!simple_key(c, out, cap, &len))
            return false;
        cursor look = *c;
        skip_ws(&look);
        if (!at(&look, '.'))
            return true;
        look.p++;
        skip_ws(&look);
        *c = look;
        if (!keep(out, cap, &len, '.'))
            return false;
    }
}

/* ---- numbers, booleans, date-times ------------------------------------- */

/* digit ( "_"? digit )*, digits of the base that ok() accepts. */
static bool digits(const char **p, const char *end, bool (*ok)(int))
{
    if (*p >= end || !ok((unsigned char)**p))
        return false;
    for ((*p)++; *p < end; (*p)++) {
        if (**p == '_') {
            if (*p + 1 >= end || !ok((unsigned char)(*p)[1]))
                return false;
            continue;
        }
        if (!ok((unsigned char)**p))
            break;
    }
    return true;
}

static bool is_oct(int ch)
{
    return ch >= '0' && ch <= '7';
}

static bool is_bin(int ch)
{
    return ch == '0' || ch == '1';
}

static bool is_dec(int ch)
{
    return is_digit(ch);
}

/* [+-]? ( 0 | [1-9] digits ) */
static bool dec_int(const char **p, const char *end, bool sign)
{
    if (sign && *p < end && (**p == '+' || **p == '-'))
        (*p)++;
    if (*p < end && **p == '0') {
        (*p)++;
        return *p >= end || !is_digit((unsigned char)**p); /* no leading zeros */
    }
    return digits(p, end, is_dec);
}

static bool integer_or_float(const char *t, const char *end)
{
    const char *p = t;
    if (end - t > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
        p += 2;
        return digits(&p, end, t[1] == 'x' ? is_hex : t[1] == 'o' ? is_oct : is_bin) && p == end;
    }
    const char *q = (*p == '+' || *p == '-') ? p + 1 : p;
    if (strncmp(q, "inf", 3) == 0 || strncmp(q, "nan", 3) == 0)
        return q + 3 == end;
    if (!dec_int(&p, end, true))
        return false;
    if (p < end && *p == '.') {
        p++;
        if (!digits(&p, end, is_dec))
            return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!digits(&p, end, is_dec))
            return false;
    }
    return p == end;
}

/* n digits, as a number in [min, max]. */
static bool fixed(const char **p, const char *end, int n, int min, int max)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (*p >= end || !is_digit((unsigned char)**p))
            return false;
        v = v * 10 + (**p - '0');
    }
    return v >= min && v <= max;
}

static bool full_date(const char **p, const char *end)
{
    return fixed(p, end, 4, 0, 9999) && *p < end && *(*p)++ == '-' && fixed(p, end, 2, 1, 12) && *p < end &&
           *(*p)++ == '-' && fixed(p, end, 2, 1, 31);
}

static bool partial_time(const char **p, const char *end)
{
    if (!(fixed(p, end, 2, 0, 23) && *p < end && *(*p)++ == ':' && fixed(p, end, 2, 0, 59) && *p < end &&
          *(*p)++ == ':' && fixed(p, end, 2, 0, 60)))
        return false;
    if (*p < end && **p == '.') {
        (*p)++;
        if (*p >= end || !is_digit((unsigned char)**p))
            return false;
        while (*p < end && is_digit((unsigned char)**p))
            (*p)++;
    }
    return true;
}

static bool date_time(const char *t, const char *end)
{
    const char *p = t;
    if (end - t >= 3 && t[2] == ':')
        return partial_time(&p, end) && p == end; /* a local time */
    if (!full_date(&p, end))
        return false;
    if (p == end)
        return true; /* a local date */
    if (*p != 'T' && *p != 't' && *p != ' ')
        return false;
    p++;
    if (!partial_time(&p, end))
        return false;
    if (p < end && (*p == 'Z' || *p == 'z'))
        p++;
    else if (p < end && (*p == '+' || *p == '-')) {
        p++;
        if (!(fixed(&p, end, 2, 0, 23) && p < end && *p++ == ':' && fixed(&p, end, 2, 0, 59)))
            return false;
    }
    return p == end;
}

/* A bare value: a boolean, a number or a date-time. A date followed by a
 * space and a time is one value. */
static bool bare_value(cursor *c)
{
    const char *t = c->p;
    while (c->p < c->end && (is_bare((unsigned char)*c->p) || strchr("+.:", *c->p)) && *c->p)
        c->p++;
    if (c->end - c->p >= 3 && c->p - t == 10 && *c->p == ' ' && is_digit((unsigned char)c->p[1]) &&
        is_digit((unsigned char)c->p[2])) {
        c->p++;
        while (c->p < c->end && (is_bare((unsigned char)*c->p) || strchr("+.:", *c->p)) && *c->p)
            c->p++;
    }
    size_t n = (size_t)(c->p - t);
    if (n == 0)
        return false;
    if ((n == 4 && memcmp(t, "true", 4) == 0) || (n == 5 && memcmp(t, "false", 5) == 0))
        return true;
    char tok[64];
    if (n >= sizeof tok)
        return false;
    memcpy(tok, t, n);
    tok[n] = '\0';
    return integer_or_float(tok, tok + n) || date_time(tok, tok + n);
}

/* ---- values ----------------------------------------------------------- */

static bool value(cursor *c);

static bool array(cursor *c)
{
    c->p++;
    for (;;) {
        if (!skip_blank(c))
            return false;
        if (at(c, ']')) {
            c->p++;
            return true;
        }
        if (!value(c) || !skip_blank(c))
            return false;
        if (at(c, ',')) {
            c->p++;
            continue;
        }
        if (!at(c, ']'))
            return false;
    }
}

static bool inline_table(cursor *c)
{
    c->p++;
    skip_ws(c);
    if (at(c, '}')) {
        c->p++;
        return true;
    }
    for (;;) {
        char name[ABX_TOML_NAME_MAX];
        skip_ws(c);
        if (!key(c, name, sizeof name))
            return false;
        skip_ws(c);
        if (!at(c, '='))
            return false;
        c->p++;
        skip_ws(c);
        if (!value(c))
            return false;
        skip_ws(c);
        if (at(c, '}')) {
            c->p++;
            return true;
        }
        if (!at(c, ','))
            return false;
        c->p++;
    }
}

static bool value(cursor *c)
{
    if (c->p >= c->end || c->depth >= ABX_TOML_DEPTH_MAX)
        return false;
    bool ok;
    c->depth++;
    if (*c->p == '"' || *c->p == '\'')
        ok = string(c);
    else if (*c->p == '[')
        ok = array(c);
    else if (*c->p == '{')
        ok = inline_table(c);
    else
        ok = bare_value(c);
    c->depth--;
    return ok;
}

/* ---- the document ------------------------------------------------------ */

/* Adds name to list; false when it is there already or the list is full. */
static bool add_name(names *list, const char *name)
{
    for (size_t i = 0; i < list->n; i++)
        if (strcmp(list->v[i], name) == 0)
            return false;
    if (list->n == NAMES_MAX)
        return false;
    if (list->n % 64 == 0) {
        char **v = realloc(list->v, (list->n + 64) * sizeof *v);
        if (!v)
            return false;
        list->v = v;
    }
    if (!(list->v[list->n] = strdup(name)))
        return false;
    list->n++;
    return true;
}

static void clear_names(names *list)
{
    for (size_t i = 0; i < list->n; i++)
        free(list->v[i]);
    free(list->v);
    list->v = NULL;
    list->n = 0;
}

/* [name] or [[name]] to the line's end. */
static bool header(cursor *c, char *name, size_t cap, bool *array_header)
{
    *array_header = starts(c, "[[");
    c->p += *array_header ? 2 : 1;
    skip_ws(c);
    if (!key(c, name, cap))
        return false;
    skip_ws(c);
    if (*array_header ? !starts(c, "]]") : !at(c, ']'))
        return false;
    c->p += *array_header ? 2 : 1;
    return line_end(c);
}

/* TOML is UTF-8 without NULs; *line is the line of the first bad byte. */
static bool valid_utf8(const char *text, size_t len, int *line)
{
    const unsigned char *p = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t n = p[i] < 0x80 ? 1 : abx__utf8_seq(p + i, len - i);
        if (n == 0 || p[i] == 0)
            return false;
        if (p[i] == '\n')
            (*line)++;
        i += n;
    }
    *line = 1;
    return true;
}

int abx__toml_check(const char *text, size_t len, abx_toml_visit visit, void *userdata, int *bad_line)
{
    cursor c = {.p = text, .end = text + len, .line = 1};
    names tables = {0}, keys = {0};
    char table[ABX_TOML_NAME_MAX] = "";
    bool ok = valid_utf8(text, len, &c.line);
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        c.p += 3; /* a byte-order mark */
    while (ok && c.p < c.end) {
        const char *line = c.p;
        skip_ws(&c);
        if (at(&c, '#') || at(&c, '\n') || at(&c, '\r') || c.p == c.end) {
            ok = line_end(&c);
            continue;
        }
        abx_toml_item item = {.offset = (size_t)(line - text)};
        char name[ABX_TOML_NAME_MAX];
        if (at(&c, '[')) {
            bool array_header;
            int header_line = c.line;
            ok = header(&c, name, sizeof name, &array_header);
            if (ok && !array_header && !add_name(&tables, name)) {
                c.line = header_line; /* a second [name]: the error is this line's */
                ok = false;
            }
            if (!ok)
                break;
            memcpy(table, name, sizeof table);
            clear_names(&keys);
            item.header = true;
            item.array_header = array_header;
            item.table = "";
            item.name = table;
        } else {
            ok = key(&c, name, sizeof name);
            skip_ws(&c);
            ok = ok && at(&c, '=') && add_name(&keys, name);
            if (!ok)
                break;
            c.p++;
            skip_ws(&c);
            ok = value(&c) && line_end(&c);
            item.table = table;
            item.name = name;
        }
        if (ok && visit)
            visit(&item, userdata);
    }
    clear_names(&tables);
    clear_names(&keys);
    if (!ok && bad_line)
        *bad_line = c.line;
    return ok ? 0 : -1;
}

bool abx__toml_quote(const char *s, char *out, size_t cap)
{
    size_t n = strlen(out);
    if (!keep(out, cap, &n, '"'))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        static const char hex[] = "0123456789ABCDEF";
        bool plain = *p >= 0x20 && *p != 0x7f && *p != '"' && *p != '\\';
        if (plain) {
            if (!keep(out, cap, &n, (char)*p))
                return false;
            continue;
        }
        char esc[7] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15], 0};
        if (*p == '"' || *p == '\\') {
            esc[1] = (char)*p;
            esc[2] = 0;
        }
        for (char *e = esc; *e; e++)
            if (!keep(out, cap, &n, *e))
                return false;
    }
    return keep(out, cap, &n, '"');
}
