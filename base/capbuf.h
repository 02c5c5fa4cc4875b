/* capbuf.h: a byte buffer with a hard cap set at creation, for output from
 * a sandbox. It keeps the first head_max and the last tail_max bytes of
 * everything appended and counts the rest as dropped, so appending never
 * holds more than head_max + tail_max bytes however much arrives.
 *
 * Ownership: the buffer owns its memory until abx__capbuf_take() hands it
 * over or abx__capbuf_free() releases it.
 */
#ifndef ABX_CAPBUF_H
#define ABX_CAPBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct abx_capbuf {
    char *head; /* the first bytes, grown on demand up to head_max */
    size_t head_len, head_alloc, head_max;
    char *tail; /* a ring of tail_max bytes, allocated once head is full */
    size_t tail_len, tail_pos, tail_max;
    uint64_t total; /* every byte appended */
    bool failed;    /* an allocation failed: bytes were dropped early */
} abx_capbuf;

void abx__capbuf_init(abx_capbuf *b, size_t head_max, size_t tail_max);
void abx__capbuf_append(abx_capbuf *b, const void *data, size_t n);
/* Counts n bytes that were dropped before they got here (a ring that
 * wrapped, a cap upstream): they sit at the cut, so the head takes no more
 * bytes after them. */
void abx__capbuf_skip(abx_capbuf *b, uint64_t n);
/* Bytes dropped between head and tail (total - kept). */
uint64_t abx__capbuf_dropped(const abx_capbuf *b);
/* Hands over head + tail as one NUL-terminated block (caller frees; never
 * NULL unless out of memory); *len: its length; *cut: where the dropped
 * bytes were (the head's length). The buffer is empty afterwards. */
char *abx__capbuf_take(abx_capbuf *b, size_t *len, size_t *cut);
void abx__capbuf_free(abx_capbuf *b);

#endif
