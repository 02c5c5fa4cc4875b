/* reply_scan.h: finds a code-interpreter kernel's reply lines in its output
 * channel without holding more than a bounded amount of it.
 *
 * A kernel writes replies as MARKER + JSON + "\n" on a channel that code in
 * the sandbox can also write to (it is the kernel's stdout). The scanner
 * takes the channel's bytes in chunks of any size: bytes outside reply
 * lines go to a capbuf (head and tail kept, the rest counted), and a reply
 * line longer than ABX_BOUND_KERNEL_LINE is dropped as it streams by. Work
 * is linear in the bytes fed; memory is bounded whatever arrives.
 *
 * Ownership: the scanner owns its buffers; abx__reply_scan_free releases
 * them; a returned reply belongs to the caller.
 */
#ifndef ABX_REPLY_SCAN_H
#define ABX_REPLY_SCAN_H

#include "buf.h"
#include "capbuf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define ABX_KERNEL_MARKER                                                                                    \
    "\x1e\x1f"                                                                                               \
    "abx-result:"

typedef struct abx_reply_scan {
    abx_capbuf other; /* bytes outside reply lines */
    size_t matched;   /* marker bytes matched so far */
    bool in_line;     /* after a marker, before its newline */
    bool overlong;    /* the current line passed the bound: dropped */
    abx_buf line;     /* the current line (after the marker), at most ABX_BOUND_KERNEL_LINE */
    uint64_t dropped_lines;
} abx_reply_scan;

void abx__reply_scan_init(abx_reply_scan *s, size_t head_max, size_t tail_max);
/* Feeds n bytes. Returns the reply whose "id" is want_id, parsed (the caller
 * owns it), or NULL; *used is how many bytes were consumed (all of them
 * unless a reply was found: the rest is the caller's to feed again). */
json_t *abx__reply_scan_feed(abx_reply_scan *s, const char *data, size_t n, long long want_id, size_t *used);
void abx__reply_scan_free(abx_reply_scan *s);

#endif
