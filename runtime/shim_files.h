/* shim_files.h: filesystem operations inside a sandbox, from the shim. */
#ifndef ABX_SHIM_FILES_H
#define ABX_SHIM_FILES_H

#include "shim.h"

/* Every path is resolved inside the sandbox root (openat2 RESOLVE_IN_ROOT,
 * no magic links, never procfs), with the file-system credentials of the
 * sandbox user uid (0 or 1000): a relative path is relative to that user's
 * home. Each returns 0 or -ABX_E* with *err set. */

/* Opens a regular file: flags O_RDONLY, or O_WRONLY|O_CREAT|O_TRUNC
 * (creating missing parent directories). *fd is the caller's. */
int abx__fs_open_file(shim *sh, unsigned uid, const char *path, int flags, int *fd, abx_error **err);
int abx__fs_stat(shim *sh, unsigned uid, const char *path, json_t **entry, abx_error **err);
int abx__fs_list(shim *sh, unsigned uid, const char *path, unsigned depth, json_t **entries, abx_error **err);
/* Creates path and its parents; -ABX_EINVAL with *exists set when it was there. */
int abx__fs_mkdir(shim *sh, unsigned uid, const char *path, bool *exists, json_t **entry, abx_error **err);
int abx__fs_move(shim *sh, unsigned uid, const char *from, const char *to, json_t **entry, abx_error **err);
/* Adds an inotify watch (mask) on the directory path to inotify_fd; the
 * watch descriptor, or -ABX_E*. */
int abx__fs_watch_dir(shim *sh, unsigned uid, const char *path, int inotify_fd, uint32_t mask,
                      abx_error **err);
/* Removes a file, or a directory with everything in it. */
int abx__fs_remove(shim *sh, unsigned uid, const char *path, abx_error **err);
/* The absolute sandbox path of path for uid (home-relative when relative). */
int abx__fs_absolute(unsigned uid, const char *path, char *out, size_t len);

#endif
