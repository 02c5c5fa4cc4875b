/* template_copy.h: COPY and ADD for template builds: sources opened inside
 * the context, copied into a tree from a child chroot()ed into it
 * (lib/local/template_copy.c). */
#ifndef ABX_TEMPLATE_COPY_H
#define ABX_TEMPLATE_COPY_H

#include "digest.h"
#include "dockerignore.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct abx_copy_src {
    int fd;         /* opened in the context: a file or a directory (the caller closes it) */
    char name[256]; /* its base name */
    char rel[4096]; /* its path in the context ("" for its root): what .dockerignore is matched against */
    bool is_dir;
} abx_copy_src;

typedef struct abx_copy_spec {
    const abx_copy_src *srcs;
    size_t n;
    const char *dest; /* absolute inside the tree */
    bool dest_is_dir; /* several sources, or a destination ending in '/' */
    bool keep_owner;  /* an unpacked archive's owners; else uid:gid for everything made */
    uid_t uid;
    gid_t gid;
    int mode;                 /* COPY --chmod: every file and directory made gets it; -1: the source's */
    const abx_ignore *ignore; /* what of the sources' directories is left out (NULL: nothing) */
} abx_copy_spec;

/* rel (relative, or absolute: from the context's root) opened inside the
 * context ctxfd, links resolved there; -1 with errno. */
int abx__copy_open_in_context(int ctxfd, const char *rel, int flags);
/* Appends what source names (a path, or a pattern in its last component:
 * at most 64 matches) to *srcs (realloc'ed; the caller frees it and closes
 * each fd); what ignore excludes is not there. -1 with the reason in why. */
int abx__copy_open_sources(int ctxfd, const char *source, const abx_ignore *ignore, abx_copy_src **srcs,
                           size_t *n, char *why, size_t len);
/* Adds a source's names, modes, bytes and link targets to d, leaving out
 * what ignore excludes. */
int abx__copy_digest(abx_digest *d, const abx_copy_src *src, const abx_ignore *ignore);
/* Copies spec's sources into tree (docker's COPY rules: a directory's
 * contents; a file into a directory destination, else as it); -1 with why. */
int abx__copy_into_tree(const char *tree, const abx_copy_spec *spec, char *why, size_t len);
/* mkdir -p path inside tree (new directories root's); -1 with why. */
int abx__tree_mkdir_p(const char *tree, const char *path, char *why, size_t len);
/* A name ADD unpacks: .tar, .tar.gz, .tgz, .tar.xz, .txz, .tar.bz2, .tar.zst. */
bool abx__copy_archive_name(const char *name);

#endif
