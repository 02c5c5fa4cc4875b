/* http_listener.c: the HTTP listener skeleton shared by abx's servers
 * (http_listener.h).
 *
 * Owns: binding HOST:PORT, the libmicrohttpd daemon (a thread per
 * connection), the per-address connection limit, and the header deadline:
 * each live connection is tracked from its accept (NOTIFY_CONNECTION);
 * until the headers of its current request are in (the access handler has
 * been called) it is on a deadline, and a sweeper thread shuts down the
 * ones past it. The sweeper runs only while there are connections (it
 * ends SWEEPER_IDLE_S after the last one and the next accept starts it
 * again): an idle sandbox's shim is one thread and one wakeup a second
 * fewer, which counts with thousands of them (pid_max, idle CPU). The fd
 * is shut down, not closed: libmicrohttpd's thread
 * sees the end and closes it, and the CLOSED notification (same lock)
 * removes the entry before the fd can be reused. Also the stop signals
 * every server waits for.
 */
#include "http_listener.h"
#include "error_internal.h"
#include "parse.h"
#include "sysutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct tracked_conn {
    int fd;
    bool local; /* a Unix socket's: counted per host user (uid), as TCP's per address by libmicrohttpd */
    unsigned uid;
    uint64_t since_ms; /* accept, or the end of its last request */
    bool headers_in;   /* the handler has seen this request */
    struct tracked_conn *next;
} tracked_conn;

struct abx_http_listener {
    abx_http_service svc;
    struct MHD_Daemon *daemon;
    pthread_mutex_t mu; /* conns, stopping */
    pthread_cond_t cv;
    tracked_conn *conns;
    bool stopping;
    pthread_t sweeper;
    bool sweeping;       /* a sweeper thread was started and is not joined yet */
    bool sweeper_exited; /* it ended for want of connections: join it before the next */
    int port;
    bool loopback;
    char host[256];
};

#define SWEEPER_IDLE_S 10

static void *sweeper_main(void *arg);

/* Starts the sweeper if none runs (lock held); a failure leaves
 * connections without their header deadline until the next accept
 * tries again. */
static void sweeper_ensure_locked(abx_http_listener *l)
{
    if (l->stopping || (l->sweeping && !l->sweeper_exited))
        return;
    if (l->sweeping) /* it has let go of the lock for good: the join is short */
        pthread_join(l->sweeper, NULL);
    l->sweeper_exited = false;
    l->sweeping = pthread_create(&l->sweeper, NULL, sweeper_main, l) == 0;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static unsigned env_or(const char *prefix, const char *suffix, unsigned min, unsigned max, unsigned def)
{
    char name[96];
    snprintf(name, sizeof name, "%s_%s", prefix ? prefix : "ABX", suffix);
    const char *v = getenv(name);
    unsigned out = def;
    if (v && abx__parse_uint(v, min, max, &out) < 0)
        out = def;
    return out;
}

/* ---- connections and their header deadline ------------------------------------------------ */

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    abx_http_listener *l = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        tracked_conn *tc = calloc(1, sizeof *tc);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!tc)
            return;
        tc->fd = ci ? ci->connect_fd : -1;
        tc->since_ms = now_ms();
        struct ucred cred;
        socklen_t len = sizeof cred;
        tc->local = l->svc.per_user && tc->fd >= 0 &&
                    getsockopt(tc->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred &&
                    cred.pid > 0;
        tc->uid = tc->local ? (unsigned)cred.uid : 0;
        unsigned same = 0;
        pthread_mutex_lock(&l->mu);
        for (tracked_conn *o = l->conns; tc->local && o; o = o->next)
            same += o->local && o->uid == tc->uid;
        tc->next = l->conns;
        l->conns = tc;
        sweeper_ensure_locked(l);
        if (tc->local && same >= l->svc.per_client) { /* one user's connections never starve the others' */
            shutdown(tc->fd, SHUT_RDWR);
            tc->fd = -1;
        }
        pthread_mutex_unlock(&l->mu);
        *socket_context = tc;
        return;
    }
    tracked_conn *tc = *socket_context;
    pthread_mutex_lock(&l->mu);
    for (tracked_conn **p = &l->conns; tc && *p; p = &(*p)->next) {
        if (*p == tc) {
            *p = tc->next;
            break;
        }
    }
    pthread_mutex_unlock(&l->mu);
    free(tc);
    *socket_context = NULL;
}

/* The request's headers are in (in), or the next request's clock starts. */
static void headers_in(abx_http_listener *l, struct MHD_Connection *c, bool in)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    tracked_conn *tc = ci ? ci->socket_context : NULL;
    if (!tc)
        return;
    pthread_mutex_lock(&l->mu);
    tc->headers_in = in;
    if (!in)
        tc->since_ms = now_ms();
    pthread_mutex_unlock(&l->mu);
}

static void *sweeper_main(void *arg)
{
    abx_http_listener *l = arg;
    uint64_t limit = (uint64_t)l->svc.header_deadline_s * 1000u;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += l->conns ? 1 : SWEEPER_IDLE_S;
        bool idle = !l->conns;
        int waited = pthread_cond_timedwait(&l->cv, &l->mu, &until);
        if (idle && !l->conns && waited == ETIMEDOUT) {
            l->sweeper_exited = true; /* the next accept starts another */
            break;
        }
        uint64_t now = now_ms();
        for (tracked_conn *tc = l->conns; tc; tc = tc->next) {
            if (!tc->headers_in && tc->fd >= 0 && now - tc->since_ms >= limit) {
                shutdown(tc->fd, SHUT_RDWR);
                tc->fd = -1;
            }
        }
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size,
                                  void **con_cls)
{
    abx_http_listener *l = cls;
    headers_in(l, c, true);
    return l->svc.handler(l->svc.handler_cls, c, url, method, version, upload, upload_size, con_cls);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode t)
{
    abx_http_listener *l = cls;
    headers_in(l, c, false); /* the next request on it is on the clock */
    if (l->svc.completed)
        l->svc.completed(l->svc.handler_cls, c, con_cls, t);
}

/* ---- binding ------------------------------------------------------------------------------ */

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

static int bind_listen(abx_http_listener *l, int *fd_out, abx_error **err)
{
    const char *spec = l->svc.listen;
    char host[256], port[16];
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (!colon || colon == spec || strlen(colon + 1) >= sizeof port || (size_t)(colon - spec) >= sizeof host)
        return abx__error_set(err, ABX_EINVAL, "--listen: expected HOST:PORT");
    size_t hl = (size_t)(colon - spec);
    if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']')
        snprintf(host, sizeof host, "%.*s", (int)(hl - 2), spec + 1);
    else
        snprintf(host, sizeof host, "%.*s", (int)hl, spec);
    snprintf(port, sizeof port, "%s", colon + 1);
    unsigned port_number = 0;
    if (abx__parse_uint(port, 0, 65535, &port_number) < 0)
        return abx__error_set(err, ABX_EINVAL, "--listen: the port must be a number from 0 to 65535");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE},
                    *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
        return abx__error_set(err, ABX_EINVAL, "--listen: cannot resolve the address");
    l->loopback = is_loopback(ai->ai_addr);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 512) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return abx__error_errno(err, e == EADDRINUSE ? ABX_ELIMIT : ABX_ESYS, e, "--listen");
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    bool wildcard = strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || !*host;
    snprintf(l->host, sizeof l->host, "%s", wildcard ? "0.0.0.0" : host);
    *fd_out = fd;
    return 0;
}

int abx__http_start(const abx_http_service *svc, abx_http_listener **out, abx_error **err)
{
    *out = NULL;
    if (!abx__mhd())
        return abx__error_set(err, ABX_EHOSTSUPPORT, "libmicrohttpd could not be loaded");
    abx_http_listener *l = calloc(1, sizeof *l);
    if (!l)
        return abx__error_set(err, ABX_ENOMEM, "listener");
    l->svc = *svc;
    l->svc.idle_s = svc->idle_s == ABX_HTTP_FOREVER ? 0 /* libmicrohttpd's "none" */
                                                    : env_or(svc->env_prefix, "CONNECTION_TIMEOUT", 1, 3600,
                                                             svc->idle_s ? svc->idle_s : 60);
    l->svc.header_deadline_s = env_or(svc->env_prefix, "HEADER_TIMEOUT", 1, 3600,
                                      svc->header_deadline_s ? svc->header_deadline_s : 10);
    l->svc.per_client =
        env_or(svc->env_prefix, "CLIENT_CONNECTIONS", 1, 1024, svc->per_client ? svc->per_client : 256);
    unsigned max = svc->max_connections ? svc->max_connections : 1024;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    int fd = svc->listen ? -1 : svc->listen_fd;
    int rc = svc->listen ? bind_listen(l, &fd, err)
             : fd >= 0   ? 0
                         : abx__error_set(err, ABX_EINVAL, "the listener has no socket");
    if (rc == 0) {
        l->daemon = MHD_start_daemon(
            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_UPGRADE, 0, NULL,
            NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
            MHD_OPTION_CONNECTION_TIMEOUT, l->svc.idle_s, MHD_OPTION_CONNECTION_LIMIT, max,
            MHD_OPTION_PER_IP_CONNECTION_LIMIT, l->svc.per_client, MHD_OPTION_NOTIFY_CONNECTION,
            on_connection, l, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024), MHD_OPTION_END);
        if (!l->daemon) {
            close(fd);
            rc = abx__error_set(err, ABX_ESYS, "starting the HTTP server");
        }
    }
    if (rc < 0) {
        abx__http_stop(l);
        return rc;
    }
    *out = l;
    return 0;
}

int abx__http_port(const abx_http_listener *l)
{
    return l->port;
}
bool abx__http_loopback(const abx_http_listener *l)
{
    return l->loopback;
}
const char *abx__http_host(const abx_http_listener *l)
{
    return l->host;
}

void abx__http_stop(abx_http_listener *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    if (l->sweeping)
        pthread_join(l->sweeper, NULL);
    if (l->daemon)
        MHD_stop_daemon(l->daemon);
    for (tracked_conn *tc = l->conns, *next; tc; tc = next) {
        next = tc->next;
        free(tc);
    }
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

ssize_t abx__http_read_fd(int fd, char *buf, size_t max)
{
    for (;;) {
        ssize_t got = read(fd, buf, max);
        if (got > 0)
            return got;
        if (got == 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (errno != EINTR)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

/* ---- stop signals -------------------------------------------------------------------------- */

int abx__stop_signals_block(void)
{
    static const int stop[] = {SIGTERM, SIGINT, SIGHUP, 0};
    signal(SIGPIPE, SIG_IGN);
    return abx__signalfd_block(stop, 0);
}

void abx__stop_signal_wait(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (fd >= 0 && poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    if (fd >= 0)
        close(fd);
}
