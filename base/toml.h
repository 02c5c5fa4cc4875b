/* toml.h: checking a TOML 1.0 document another program owns (base/toml.c).
 *
 * abx's own config.toml uses a small subset (lib/config.c). The files of
 * other programs that abx edits (Codex CLI's ~/.codex/config.toml) may use
 * all of TOML: before abx touches one it must know the file is valid TOML,
 * and where each table begins, so that it can replace one table's lines and
 * leave every other byte (comments included) as it was. Debian has no C
 * TOML library; this is a validating scanner, not a parser into values.
 *
 * What it checks: the whole TOML 1.0 syntax (keys bare, quoted and
 * dotted; basic, literal and multi-line strings with their escapes;
 * integers in four bases, floats, booleans, offset and local date-times;
 * arrays over several lines; inline tables; [tables] and [[arrays of
 * tables]]), and two rules of meaning: a [table] header appears once, and
 * a key appears once in its table. Nesting is bounded (TOML_DEPTH_MAX) and
 * every loop ends at the text's end.
 */
#ifndef ABX_TOML_H
#define ABX_TOML_H

#include <stdbool.h>
#include <stddef.h>

#define ABX_TOML_DEPTH_MAX 32
#define ABX_TOML_NAME_MAX 256

/* What the scanner met, in order: a header line ([name] or [[name]]) or a
 * key/value line of the current table. name is the key path with its
 * segments unquoted and joined by '.' (a segment holding '.' or a quote
 * is kept quoted); offset is where the line begins in the text. */
typedef struct abx_toml_item {
    bool header;
    bool array_header; /* [[name]] */
    const char *table; /* the table a key/value is in ("" at the top) */
    const char *name;  /* the header's name, or the key (relative to table) */
    size_t offset;     /* the line's first byte */
} abx_toml_item;

typedef void (*abx_toml_visit)(const abx_toml_item *item, void *userdata);

/* Checks text (len bytes; NUL bytes are invalid in TOML). 0 when it is
 * valid TOML, else -1 with *bad_line the 1-based line of the first error.
 * visit (may be NULL) sees every header and key/value as they come. */
int abx__toml_check(const char *text, size_t len, abx_toml_visit visit, void *userdata, int *bad_line);

/* Appends s to out (room for cap bytes) as a TOML basic string, quotes
 * included; false when it does not fit. */
bool abx__toml_quote(const char *s, char *out, size_t cap);

#endif
