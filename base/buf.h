/* buf.h: the one growable byte buffer of libabx, its shim and its MCP
 * server (base/buf.c). Every buffer has a bound set when it is made: an
 * append past it fails and leaves the buffer as it was, so what a sandbox
 * or a client sends can never grow one without limit. The data is always
 * NUL-terminated (for text), and may hold NULs (for bytes).
 *
 * Ownership: the buffer owns data until abx__buf_take hands it over or
 * abx__buf_free releases it.
 */
#ifndef ABX_BUF_H
#define ABX_BUF_H

#include <stddef.h>

typedef struct abx_buf {
    char *data; /* NULL until the first byte; then NUL-terminated */
    size_t len; /* bytes held */
    size_t cap; /* bytes allocated (len + 1 at least once data is set) */
    size_t max; /* the bound on len */
} abx_buf;

void abx__buf_init(abx_buf *b, size_t max);
/* Appends n bytes: 0, -ABX_ETOOBIG past the bound or -ABX_ENOMEM (nothing
 * appended either way). */
int abx__buf_append(abx_buf *b, const void *data, size_t n);
int abx__buf_append_str(abx_buf *b, const char *s);
/* Room for n more bytes after len, for a read() straight into the buffer:
 * a pointer to it, or NULL (past the bound, no memory). The caller then
 * adds what it wrote with abx__buf_added. */
char *abx__buf_room(abx_buf *b, size_t n);
void abx__buf_added(abx_buf *b, size_t n);
/* Drops the first n bytes (all when n >= len). */
void abx__buf_consume(abx_buf *b, size_t n);
/* Hands the data over (the caller frees it; "" when empty; NULL without
 * memory), *len its length when len is not NULL; the buffer is empty
 * afterwards and keeps its bound. */
char *abx__buf_take(abx_buf *b, size_t *len);
void abx__buf_free(abx_buf *b);

#endif
