/* dockerignore.c: .dockerignore patterns and matching (dockerignore.h).
 *
 * Owns: reading the file into cleaned patterns, split into segments,
 * matching a context path against them, and whether an excluded
 * directory holds anything an exception keeps. Matching one pattern is a table
 * over (pattern segment, path segment): O(segments^2) fnmatch calls at
 * most, however many "**" a pattern holds, so hostile patterns cannot
 * make it run long. Bounds: ABX_IGNORE_MAX_* (dockerignore.h).
 */
#include "dockerignore.h"
#include "sysutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ignore_pattern {
    bool exception;
    size_t nseg;
    char **seg;
} ignore_pattern;

struct abx_ignore {
    size_t n;
    bool exceptions;
    ignore_pattern *p;
};

void abx__ignore_free(abx_ignore *ig)
{
    if (!ig)
        return;
    for (size_t i = 0; i < ig->n; i++) {
        for (size_t k = 0; k < ig->p[i].nseg; k++)
            free(ig->p[i].seg[k]);
        free(ig->p[i].seg);
    }
    free(ig->p);
    free(ig);
}

/* Splits path (modified) into its cleaned segments: "" and "." dropped,
 * ".." takes the one before it away. Returns the count, or -1 when there
 * are more than max. The segments point into path. */
static int clean_segments(char *path, char **seg, size_t max)
{
    size_t n = 0;
    for (char *save = NULL, *s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (strcmp(s, ".") == 0)
            continue;
        if (strcmp(s, "..") == 0) {
            n -= n > 0;
            continue;
        }
        if (n == max)
            return -1;
        seg[n++] = s;
    }
    return (int)n;
}

static int add_pattern(abx_ignore *ig, char *line, size_t lineno, char *why, size_t whylen)
{
    bool exception = line[0] == '!';
    char *text = exception ? line + 1 : line;
    text += strspn(text, " \t");
    char *seg[ABX_IGNORE_MAX_SEGMENTS];
    int n = clean_segments(text, seg, ABX_IGNORE_MAX_SEGMENTS);
    if (n < 0) {
        snprintf(why, whylen, ".dockerignore line %zu: more than %d path segments", lineno,
                 ABX_IGNORE_MAX_SEGMENTS);
        return -1;
    }
    if (n == 0)
        return 0; /* "/" or ".": Docker matches nothing with it either */
    if (ig->n == ABX_IGNORE_MAX_PATTERNS) {
        snprintf(why, whylen, ".dockerignore: more than %d patterns", ABX_IGNORE_MAX_PATTERNS);
        return -1;
    }
    ignore_pattern p = {.exception = exception, .nseg = (size_t)n, .seg = calloc((size_t)n, sizeof(char *))};
    for (int k = 0; p.seg && k < n; k++)
        if (!(p.seg[k] = strdup(seg[k]))) {
            for (int j = 0; j < k; j++)
                free(p.seg[j]);
            free(p.seg);
            p.seg = NULL;
        }
    if (!p.seg) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    ig->p[ig->n++] = p;
    ig->exceptions |= exception;
    return 0;
}

int abx__ignore_parse(const char *text, size_t len, abx_ignore **out, char *why, size_t whylen)
{
    *out = NULL;
    if (len > ABX_IGNORE_MAX_BYTES || memchr(text, '\0', len)) {
        snprintf(why, whylen, ".dockerignore: %s",
                 len > ABX_IGNORE_MAX_BYTES ? "larger than 1 MiB" : "holds a NUL byte");
        return -1;
    }
    abx_ignore *ig = calloc(1, sizeof *ig);
    char *copy = malloc(len + 1);
    if (ig)
        ig->p = calloc(ABX_IGNORE_MAX_PATTERNS, sizeof *ig->p);
    if (!ig || !ig->p || !copy) {
        abx__ignore_free(ig);
        free(copy);
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    int rc = 0;
    size_t lineno = 0;
    for (char *line = copy, *next; line && rc == 0; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        line += strspn(line, " \t\r");
        size_t n = strlen(line);
        while (n && strchr(" \t\r", line[n - 1]))
            line[--n] = '\0';
        if (n && line[0] != '#')
            rc = add_pattern(ig, line, lineno, why, whylen);
    }
    free(copy);
    if (rc < 0) {
        abx__ignore_free(ig);
        return -1;
    }
    *out = ig;
    return 0;
}

int abx__ignore_read_fd(int fd, abx_ignore **out, char *why, size_t whylen)
{
    *out = NULL;
    char *text = malloc(ABX_IGNORE_MAX_BYTES + 1);
    ssize_t n = text ? abx__read_full(fd, text, ABX_IGNORE_MAX_BYTES + 1) : -1;
    int rc = n < 0 ? (snprintf(why, whylen, ".dockerignore: %s", text ? "unreadable" : "out of memory"), -1)
                   : abx__ignore_parse(text, (size_t)n, out, why, whylen);
    free(text);
    return rc;
}

/* Whether the pattern's segments match the path's first nseg segments
 * exactly (m[i][j]: pattern segments from i on match path segments from j on). */
static bool segments_match(const ignore_pattern *p, char *const *path, size_t nseg)
{
    bool m[ABX_IGNORE_MAX_SEGMENTS + 1][ABX_IGNORE_MAX_DEPTH + 1];
    size_t np = p->nseg;
    for (size_t i = np + 1; i-- > 0;)
        for (size_t j = nseg + 1; j-- > 0;) {
            if (i == np) {
                m[i][j] = j == nseg;
            } else if (strcmp(p->seg[i], "**") == 0) {
                m[i][j] = m[i + 1][j] || (j < nseg && m[i][j + 1]);
            } else {
                m[i][j] = j < nseg && m[i + 1][j + 1] && fnmatch(p->seg[i], path[j], 0) == 0;
            }
        }
    return m[0][0];
}

/* A pattern matches a path or any directory above it. */
static bool pattern_matches(const ignore_pattern *p, char *const *path, size_t nseg)
{
    for (size_t k = 1; k <= nseg; k++)
        if (segments_match(p, path, k))
            return true;
    return false;
}

bool abx__ignore_excluded(const abx_ignore *ig, const char *rel)
{
    if (!ig || ig->n == 0)
        return false;
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", rel) >= (int)sizeof buf)
        return false; /* longer than any path the copy opens */
    char *seg[ABX_IGNORE_MAX_DEPTH];
    int n = clean_segments(buf, seg, ABX_IGNORE_MAX_DEPTH);
    if (n <= 0)
        return false; /* the context's root, or deeper than any copy goes */
    bool excluded = false;
    for (size_t i = 0; i < ig->n; i++)
        if (excluded == ig->p[i].exception && pattern_matches(&ig->p[i], seg, (size_t)n))
            excluded = !ig->p[i].exception;
    return excluded;
}

bool abx__ignore_has_exceptions(const abx_ignore *ig)
{
    return ig && ig->exceptions;
}

static bool dir_keeps(const abx_ignore *ig, int dirfd, const char *rel, int depth)
{
    if (depth > ABX_IGNORE_MAX_DEPTH)
        return false;
    int copy = dup(dirfd);
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    if (!d) {
        if (copy >= 0)
            close(copy);
        return false;
    }
    bool keeps = false;
    struct dirent *e;
    while (!keeps && (e = readdir(d))) {
        char child[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            snprintf(child, sizeof child, "%s/%s", rel, e->d_name) >= (int)sizeof child ||
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (!abx__ignore_excluded(ig, child)) {
            keeps = true;
        } else if (S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            keeps = fd >= 0 && dir_keeps(ig, fd, child, depth + 1);
            if (fd >= 0)
                close(fd);
        }
    }
    closedir(d);
    return keeps;
}

bool abx__ignore_dir_keeps(const abx_ignore *ig, int dirfd, const char *rel)
{
    return !abx__ignore_excluded(ig, rel) || (abx__ignore_has_exceptions(ig) && dir_keeps(ig, dirfd, rel, 0));
}
