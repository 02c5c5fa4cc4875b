/* dockerignore.h: a build context's .dockerignore, as Docker reads it
 * (lib/dockerignore.c: the matching is pure logic;
 * abx__ignore_read_fd and abx__ignore_dir_keeps read what they are given).
 *
 * One pattern a line; blank lines and lines starting with '#' are skipped;
 * surrounding spaces trimmed; a leading '!' makes an exception (what it
 * matches is kept); the path is cleaned ("./a//b/" is "a/b", a leading
 * '/' dropped). A pattern is '/'-separated segments: "**" matches any
 * number of segments (none too), the others fnmatch(3) one segment each
 * ('*', '?', "[a-z]", '\' escapes). A pattern that matches a directory
 * matches everything under it. The last pattern that matches a path
 * decides: excluded, or kept by an exception.
 */
#ifndef ABX_DOCKERIGNORE_H
#define ABX_DOCKERIGNORE_H

#include <stdbool.h>
#include <stddef.h>

#define ABX_IGNORE_MAX_BYTES (1u << 20) /* of a .dockerignore */
#define ABX_IGNORE_MAX_PATTERNS 4096
#define ABX_IGNORE_MAX_SEGMENTS 128 /* of one pattern */
#define ABX_IGNORE_MAX_DEPTH 256    /* of a path matched (a COPY goes no deeper) */

typedef struct abx_ignore abx_ignore;

/* Parses text (len bytes; NUL bytes refused). *out is the caller's to free
 * with abx__ignore_free. -1 with the reason in why (naming the line). */
int abx__ignore_parse(const char *text, size_t len, abx_ignore **out, char *why, size_t whylen);
/* Reads a .dockerignore from fd (at most ABX_IGNORE_MAX_BYTES; the caller
 * opened it and closes it) and parses it into *out; -1 with why. */
int abx__ignore_read_fd(int fd, abx_ignore **out, char *why, size_t whylen);
/* Whether rel (a path relative to the context's root, '/'-separated) is
 * excluded. NULL ig excludes nothing. */
bool abx__ignore_excluded(const abx_ignore *ig, const char *rel);
/* Whether ig has exceptions: an excluded directory must then still be
 * walked, for what an exception keeps under it. */
bool abx__ignore_has_exceptions(const abx_ignore *ig);
/* Whether anything under the directory dirfd (rel: its path in the
 * context) is kept by ig: an excluded directory walked for its exceptions
 * is made only then, as Docker makes it (the one function here that reads
 * the file system: fstatat and readdir, bounded by ABX_IGNORE_MAX_DEPTH). */
bool abx__ignore_dir_keeps(const abx_ignore *ig, int dirfd, const char *rel);
void abx__ignore_free(abx_ignore *ig);

#endif
