/* sysutil.h: small checked wrappers over system calls used across libabx.
 * Every function retries on EINTR, opens fds O_CLOEXEC, and returns 0 or
 * -1 with errno set (the caller turns errno into an abx error with context). */
#ifndef ABX_SYSUTIL_H
#define ABX_SYSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Writes all of buf to fd. */
int abx__write_all(int fd, const void *buf, size_t len);
/* The same into a pipe whose reader may be gone (a plugin that exited):
 * EPIPE without the SIGPIPE that would end a caller that does not ignore
 * it (libabx lives in other programs). */
int abx__write_all_nosigpipe(int fd, const void *buf, size_t len);
/* Reads up to len bytes, stopping early only at EOF. Returns bytes read or -1. */
ssize_t abx__read_full(int fd, void *buf, size_t len);
/* Opens path (relative to dirfd, AT_FDCWD allowed) O_WRONLY and writes s. */
int abx__write_file_at(int dirfd, const char *path, const char *s);
/* Creates path with the given mode and content, failing if it exists;
 * never follows a symlink. */
int abx__create_file(const char *path, const char *content, mode_t mode);
/* Reads a small file into buf (NUL-terminated, truncated to cap-1). */
int abx__read_small_file(const char *path, char *buf, size_t cap);
/* One descriptor over a unix socket (SCM_RIGHTS, with one byte of data):
 * abx__send_fd returns 0 or -1; abx__recv_fd the fd received (O_CLOEXEC)
 * or -1 when the message carries none. */
int abx__send_fd(int sock, int fd);
int abx__recv_fd(int sock);
/* mkdir that treats EEXIST as success. */
int abx__mkdir_exist_ok(const char *path, mode_t mode);
/* *ts = CLOCK_MONOTONIC now + ms (for pthread_cond_timedwait on a
 * condition variable set to that clock). */
struct timespec;
void abx__deadline_after(struct timespec *ts, unsigned ms);
/* The value of PATH in a NULL-terminated "NAME=value" environment (the
 * sandbox's: where a command's name is looked for), or NULL. */
const char *abx__env_path(const char *const *envp);
/* Monotonic clock in nanoseconds. */
unsigned long long abx__now_ns(void);

/* The one signal setup of abx's processes: blocks the signals (a list
 * ending with 0) in the calling thread, and so in every thread it starts
 * afterwards, and returns a signalfd (O_CLOEXEC, with flags such as
 * SFD_NONBLOCK) that reads them; -1 with errno on failure. */
int abx__signalfd_block(const int *signals, int flags);

/* Trees, walked without following a symlink or leaving the root's
 * filesystem (a mount inside is left alone), at most 256 levels deep; the
 * one tree walker of every layer, with no state outside the call.
 * abx__tree_remove removes path and all below it (a missing path is 0);
 * _counted also adds the bytes it held to *bytes; abx__tree_measure sums
 * the bytes (allocated blocks) and the entries of the tree.
 * abx__tree_defang drops every setuid and setgid bit and file capability
 * of the files below path (directories and links left alone); *defanged
 * (may be NULL) gets how many files had one. -1 with errno when one could
 * not be dropped. */
int abx__tree_remove(const char *path);
int abx__tree_remove_counted(const char *path, unsigned long long *bytes);
void abx__tree_measure(const char *path, unsigned long long *bytes, unsigned long long *files);
int abx__tree_defang(const char *path, unsigned long long *defanged);

#endif
