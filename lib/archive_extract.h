/* archive_extract.h: unpacking a plugin archive safely (lib/archive_extract.c). */
#ifndef ABX_ARCHIVE_EXTRACT_H
#define ABX_ARCHIVE_EXTRACT_H

#include <stddef.h>

/* Unpacks the tar archive (compressed or not) at archive_path into the
 * empty directory dest; 0, or -1 with the reason in why (and dest holding
 * what was unpacked before it: the caller removes it). */
int abx__archive_extract(const char *archive_path, const char *dest, char *why, size_t why_len);

#endif
