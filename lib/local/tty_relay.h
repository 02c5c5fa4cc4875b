/* tty_relay.h: `abx run` never hands the caller's terminal to a sandbox. */
#ifndef ABX_TTY_RELAY_H
#define ABX_TTY_RELAY_H

#include "abx/abx.h"
#include <stdbool.h>
#include <termios.h>

/* When stdin is a terminal the sandbox gets a pseudo-terminal of its own
 * (its slave as stdin, stdout and stderr, and as its controlling terminal)
 * and the supervisor relays between it and the caller's terminal, which is
 * in raw mode meanwhile and restored afterwards (as `docker run -t`).
 * (abx in the foreground only: in the background its stdin is /dev/null.)
 * Otherwise a stdout or stderr that is a terminal is replaced by a pipe
 * the supervisor copies from: code inside never holds the caller's
 * terminal, so it cannot change its modes or line discipline. */
typedef struct abx_tty_relay {
    bool pty;              /* pty mode (stdin is a terminal) */
    int master;            /* pty mode: our side of the pseudo-terminal */
    int pipe_out[3];       /* pipe mode: read ends for fds 1 and 2 (-1: not relayed) */
    int saved[3];          /* the caller's fds 0-2 while the sandbox's stand in them */
    struct termios caller; /* pty mode: the caller's terminal modes, restored at the end */
    bool raw;
    bool stdin_done, master_done;
} abx_tty_relay;

/* Before the jail starts: puts the sandbox's ends in fds 0-2. */
int abx__tty_relay_begin(abx_tty_relay *t, abx_error **err);
/* After the jail started: our own fds 0-2 back; raw mode in pty mode. */
void abx__tty_relay_started(abx_tty_relay *t);
/* The fds to poll for input (up to 3) and what to do when one is ready. */
int abx__tty_relay_fds(const abx_tty_relay *t, int fds[3]);
void abx__tty_relay_ready(abx_tty_relay *t, int fd);
/* SIGWINCH: the caller's window size to the sandbox's terminal. */
void abx__tty_relay_resize(abx_tty_relay *t);
/* The sandbox ended: copies what is left, restores the caller's terminal. */
void abx__tty_relay_end(abx_tty_relay *t);

#endif
