/* peers.c: who calls the abx service (`abx serve --socket`): each caller
 * is a host user, named by the kernel (SO_PEERCRED), never by anything it
 * sends.
 *
 * Owns: the service's socket (made 0666 in a 0755 directory: who may use
 * it is decided here, with an answer that names the group, not by a bare
 * EACCES; or the one systemd passes, LISTEN_FDS), a connection's host
 * user, whether that user may use the service (root always; otherwise a
 * member of one of the operator's [service] allow_groups, default "abx")
 * and administer it (root, or a member of [service] admin_groups, default
 * none). The operator's configuration is read at each decision, so a
 * change holds at the next connection.
 */
#include "serve.h"
#include "error_internal.h"
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_GROUPS 1024

/* ---- the socket ------------------------------------------------------------------------------- */

/* systemd's socket activation: fd 3 when LISTEN_PID is this process. */
static int activated_fd(void)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    unsigned p = 0, n = 0;
    if (!pid || !fds || abx__parse_uint(pid, 1, 4194304, &p) < 0 || p != (unsigned)getpid() ||
        abx__parse_uint(fds, 1, 1, &n) < 0)
        return -1;
    int fd = 3;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return fd;
}

/* Whether something answers on path (a live service). */
static bool answered(const struct sockaddr_un *sa)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0;
    if (fd >= 0)
        close(fd);
    return live;
}

int serve_socket_open(const char *path, int *out, bool *activated, abx_error **err)
{
    *out = activated_fd();
    *activated = *out >= 0;
    if (*activated)
        return 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!path || path[0] != '/' || strlen(path) >= sizeof sa.sun_path)
        return abx__error_set(err, ABX_EINVAL, "--socket: an absolute path of at most %zu bytes",
                              sizeof sa.sun_path - 1);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    char dir[sizeof sa.sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return abx__error_set(err, ABX_EIO, "--socket: creating %s: %s", dir, strerror(errno));
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return abx__error_set(err, ABX_EINVAL, "--socket: %s exists and is not a socket", path);
        if (answered(&sa))
            return abx__error_set(err, ABX_EINVAL, "--socket: another abx service listens on %s", path);
        unlink(path); /* a dead service's */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "socket");
    mode_t old = umask(0);
    int rc = bind(fd, (const struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc == 0)
        rc = chmod(path, 0666);
    if (rc == 0)
        rc = listen(fd, 256);
    if (rc < 0) {
        int e = errno;
        close(fd);
        return abx__error_set(err, ABX_EIO, "--socket: listening on %s: %s", path, strerror(e));
    }
    *out = fd;
    return 0;
}

/* ---- the caller ------------------------------------------------------------------------------- */

int serve_peer_uid(int fd, unsigned *uid)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred)
        return -1;
    *uid = (unsigned)cred.uid;
    return 0;
}

/* The operator's [service] key (comma-separated names) into out; def when unset. */
static void service_list(const char *key, const char *def, char *out, size_t len)
{
    char *v = NULL;
    if (abx_config_get(key, &v, NULL) < 0)
        v = NULL;
    snprintf(out, len, "%s", v ? v : def);
    abx_free(v);
}

/* Whether uid belongs to one of the groups named in list (primary or supplementary). */
static bool member_of_any(unsigned uid, const char *list)
{
    char buf[16384];
    struct passwd pw, *pwp = NULL;
    if (getpwuid_r((uid_t)uid, &pw, buf, sizeof buf, &pwp) != 0 || !pwp)
        return false;
    gid_t gids[MAX_GROUPS];
    int n = MAX_GROUPS;
    if (getgrouplist(pw.pw_name, pw.pw_gid, gids, &n) < 0)
        n = MAX_GROUPS; /* more than that: the first MAX_GROUPS */
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", list);
    char *save = NULL;
    for (char *name = strtok_r(copy, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        char gbuf[16384];
        struct group g, *gp = NULL;
        if (getgrnam_r(name, &g, gbuf, sizeof gbuf, &gp) != 0 || !gp)
            continue;
        for (int i = 0; i < n; i++)
            if (gids[i] == g.gr_gid)
                return true;
    }
    return false;
}

int serve_peer_admit(unsigned uid, bool *admin, char *why, size_t why_len)
{
    *admin = uid == 0;
    if (uid == 0)
        return 0;
    char allow[1024], admins[1024];
    service_list("service.allow_groups", "abx", allow, sizeof allow);
    service_list("service.admin_groups", "", admins, sizeof admins);
    *admin = admins[0] && member_of_any(uid, admins);
    if (*admin || member_of_any(uid, allow))
        return 0;
    snprintf(why, why_len,
             "host user %u may not use this abx service: it serves root and the members of the group%s "
             "%.200s ([service] allow_groups)",
             uid, strchr(allow, ',') ? "s" : "", allow);
    return -ABX_ENOTALLOWED;
}
