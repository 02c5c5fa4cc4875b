/* tty_relay.c: the terminal relay of `abx run` (tty_relay.h). */
#include "tty_relay.h"
#include "error_internal.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void init_relay(abx_tty_relay *t)
{
    memset(t, 0, sizeof *t);
    t->master = -1;
    for (int i = 0; i < 3; i++)
        t->pipe_out[i] = t->saved[i] = -1;
}

/* Saves fd i and puts sandbox_fd in its place. */
static int stand_in(abx_tty_relay *t, int i, int sandbox_fd)
{
    if (t->saved[i] < 0 && (t->saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 3)) < 0)
        return -1;
    return dup2(sandbox_fd, i) < 0 ? -1 : 0;
}

static int begin_pty(abx_tty_relay *t, abx_error **err)
{
    t->pty = true;
    t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[64];
    if (t->master < 0 || grantpt(t->master) < 0 || unlockpt(t->master) < 0 ||
        ptsname_r(t->master, name, sizeof name))
        return abx__error_errno(err, ABX_ESYS, errno, "a pseudo-terminal for the sandbox");
    int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "opening the pseudo-terminal");
    struct winsize ws;
    if (ioctl(0, TIOCGWINSZ, &ws) == 0)
        ioctl(slave, TIOCSWINSZ, &ws);
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = stand_in(t, i, slave);
    close(slave);
    return rc < 0 ? abx__error_errno(err, ABX_ESYS, errno, "giving the sandbox its terminal") : 0;
}

int abx__tty_relay_begin(abx_tty_relay *t, abx_error **err)
{
    init_relay(t);
    /* only a foreground abx relays its terminal: one started in the
     * background (`abx run ... &`) would be stopped by SIGTTIN/SIGTTOU on
     * its first read or mode change; its command reads nothing instead */
    if (isatty(0) && tcgetpgrp(0) == getpgrp())
        return begin_pty(t, err);
    if (isatty(0)) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int rc = null < 0 ? -1 : stand_in(t, 0, null);
        if (null >= 0)
            close(null);
        if (rc < 0)
            return abx__error_errno(err, ABX_ESYS, errno, "an empty stdin for the sandbox");
    }
    for (int i = 1; i < 3; i++) {
        if (!isatty(i))
            continue;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0 || stand_in(t, i, p[1]) < 0)
            return abx__error_errno(err, ABX_ESYS, errno, "a pipe for the sandbox's output");
        close(p[1]);
        t->pipe_out[i] = p[0];
    }
    return 0;
}

void abx__tty_relay_started(abx_tty_relay *t)
{
    for (int i = 0; i < 3; i++) {
        if (t->saved[i] >= 0) {
            dup2(t->saved[i], i);
            close(t->saved[i]);
            t->saved[i] = -1;
        }
    }
    if (t->pty && tcgetattr(0, &t->caller) == 0) {
        struct termios raw = t->caller;
        cfmakeraw(&raw);
        t->raw = tcsetattr(0, TCSANOW, &raw) == 0;
    }
}

int abx__tty_relay_fds(const abx_tty_relay *t, int fds[3])
{
    int n = 0;
    if (t->pty && !t->master_done)
        fds[n++] = t->master;
    if (t->pty && !t->stdin_done)
        fds[n++] = 0;
    for (int i = 1; i < 3; i++)
        if (t->pipe_out[i] >= 0)
            fds[n++] = t->pipe_out[i];
    return n;
}

/* Copies one read's worth from `from` to `to`; false at end or error. */
static bool copy_once(int from, int to)
{
    char buf[16384];
    ssize_t n;
    do
        n = read(from, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return false;
    return abx__write_all(to, buf, (size_t)n) == 0;
}

void abx__tty_relay_ready(abx_tty_relay *t, int fd)
{
    if (t->pty && fd == t->master) {
        t->master_done = !copy_once(t->master, 1); /* EIO: every slave fd is closed */
    } else if (t->pty && fd == 0) {
        t->stdin_done = !copy_once(0, t->master);
    } else {
        for (int i = 1; i < 3; i++) {
            if (t->pipe_out[i] == fd && !copy_once(fd, i)) {
                close(fd);
                t->pipe_out[i] = -1;
            }
        }
    }
}

void abx__tty_relay_resize(abx_tty_relay *t)
{
    struct winsize ws;
    if (t->pty && ioctl(0, TIOCGWINSZ, &ws) == 0)
        ioctl(t->master, TIOCSWINSZ, &ws);
}

void abx__tty_relay_end(abx_tty_relay *t)
{
    /* what the sandbox wrote before it ended is still buffered */
    for (int i = 1; i < 3; i++) {
        while (t->pipe_out[i] >= 0) {
            struct pollfd p = {.fd = t->pipe_out[i], .events = POLLIN};
            if (poll(&p, 1, 0) <= 0 || !copy_once(t->pipe_out[i], i)) {
                close(t->pipe_out[i]);
                t->pipe_out[i] = -1;
            }
        }
    }
    if (t->master >= 0) {
        struct pollfd p = {.fd = t->master, .events = POLLIN};
        while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN) && copy_once(t->master, 1))
            ;
        close(t->master);
        t->master = -1;
    }
    if (t->raw)
        tcsetattr(0, TCSAFLUSH, &t->caller);
    t->raw = false;
    for (int i = 0; i < 3; i++)
        if (t->saved[i] >= 0) {
            dup2(t->saved[i], i);
            close(t->saved[i]);
            t->saved[i] = -1;
        }
}
