/* cmd_expose.c: `abx expose ID PORT`: TCP connections to a host address
 * forwarded to a port inside the sandbox (its own loopback included), so a
 * server an agent started there can be opened from the host.
 *
 * Owns: the listener (loopback by default), one relay thread per
 * connection (at most MAX_CONNECTIONS; both directions, half-closes
 * passed on), and the end: SIGINT/SIGTERM, or the sandbox's end (checked
 * every CHECK_MS). Each connection into the sandbox comes from libabx
 * (abx_sandbox_connect_port). */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 256
#define CHECK_MS 1000

const char cmd_expose_help[] = "Usage: abx expose ID PORT [--listen ADDR:PORT] [--json]\n"
                               "\n"
                               "Forwards TCP connections from a host address to PORT inside the\n"
                               "sandbox, where a server bound to the sandbox's own 127.0.0.1 answers\n"
                               "too, so a web app an agent started there opens in a browser. Prints the\n"
                               "address it listens on (--json: {\"listen\": ...}) and forwards until\n"
                               "Ctrl-C or the sandbox's end.\n"
                               "\n"
                               "  --listen ADDR:PORT  where to listen (default 127.0.0.1:0: a free port\n"
                               "                      on loopback; another address exposes the sandbox's\n"
                               "                      port to whoever reaches it)\n"
                               "\n"
                               "The local provider needs root for it (joining the sandbox's network\n"
                               "namespace).\n";

typedef struct relay {
    abx_sandbox *sandbox; /* borrowed: lives until every relay ended */
    unsigned port;
    int client;
    atomic_int *live;
} relay;

/* Copies what one side sends to the other until both are done. */
static void pump(int a, int b)
{
    char buf[65536];
    bool a_open = true, b_open = true;
    while (a_open || b_open) {
        struct pollfd p[2] = {{.fd = a_open ? a : -1, .events = POLLIN},
                              {.fd = b_open ? b : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            if (!p[i].revents)
                continue;
            int from = i == 0 ? a : b, to = i == 0 ? b : a;
            ssize_t n = read(from, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) { /* that side is done sending: say so to the other */
                shutdown(to, SHUT_WR);
                *(i == 0 ? &a_open : &b_open) = false;
                continue;
            }
            for (ssize_t off = 0; off < n;) {
                ssize_t w = write(to, buf + off, (size_t)(n - off));
                if (w < 0 && errno == EINTR)
                    continue;
                if (w <= 0)
                    return;
                off += w;
            }
        }
    }
}

static void *relay_main(void *arg)
{
    relay *r = arg;
    int inside = -1;
    if (abx_sandbox_connect_port(r->sandbox, r->port, &inside, NULL) == 0) {
        pump(r->client, inside);
        close(inside);
    }
    close(r->client);
    atomic_fetch_sub(r->live, 1);
    free(r);
    return NULL;
}

static int listen_on(const char *addr, char *shown, size_t len)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof host)
        return -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 128) < 0) {
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV) !=
            0) {
        close(fd);
        return -1;
    }
    snprintf(shown, len, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, p);
    return fd;
}

static bool still_there(abx_sandbox *s)
{
    abx_sandbox_info info;
    abx_error *err = NULL;
    int rc = abx_sandbox_get_info(s, &info, &err);
    bool gone = rc < 0 && (abx_error_code(err) == ABX_ENOTFOUND || abx_error_code(err) == ABX_ENOTRUNNING);
    if (rc == 0)
        abx_sandbox_info_clear(&info);
    abx_error_free(err);
    return !gone;
}

int cmd_expose(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    const char *listen_addr = "127.0.0.1:0";
    const cli_flag flags[] = {{"--listen", CLI_STRING, &listen_addr, 0, 0, NULL, 0, NULL}};
    int rc = cli_parse(ctx, "expose", cmd_expose_help, argc, argv, flags, 1, pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    char *end = NULL;
    long port = npos == 2 ? strtol(pos[1], &end, 10) : 0;
    if (npos != 2)
        return cli_fail(ctx, ABX_EUSAGE, "usage: abx expose ID PORT [--listen ADDR:PORT]");
    if (!*pos[1] || *end || port < 1 || port > 65535)
        return cli_fail(ctx, ABX_EINVAL, "PORT: expected 1-65535");
    int status = 0;
    abx_sandbox *s = cli_connect(ctx, pos[0], &status);
    if (!s)
        return status;
    int probe = -1;
    abx_error *err = NULL;
    rc = abx_sandbox_connect_port(s, (unsigned)port, &probe, &err); /* can this host reach it at all? */
    if (rc < 0 && rc != -ABX_ENOTRUNNING) {
        abx_sandbox_free(s);
        return cli_fail_error(ctx, err, rc);
    }
    abx_error_free(err);
    if (probe >= 0)
        close(probe);
    char shown[300];
    int lfd = listen_on(listen_addr, shown, sizeof shown);
    if (lfd < 0) {
        abx_sandbox_free(s);
        return cli_fail(ctx, ABX_EINVAL,
                        "--listen %.200s: cannot listen there (expected a numeric ADDR:PORT)", listen_addr);
    }
    /* blocked before the address is printed: a caller may stop us the moment it reads it */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (ctx->json)
        cli_print_json(json_pack("{s:s, s:s, s:i}", "listen", shown, "sandbox_id", abx_sandbox_id(s), "port",
                                 (int)port));
    else
        printf("%s\n", shown);
    fflush(stdout);
    fprintf(stderr, "abx: forwarding %s to port %ld in %s (Ctrl-C to stop)\n", shown, port,
            abx_sandbox_id(s));
    atomic_int live;
    atomic_init(&live, 0);
    for (;;) {
        struct pollfd p[2] = {{.fd = lfd, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        int ready = poll(p, 2, CHECK_MS);
        if (ready < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (ready == 0 && !still_there(s)) {
            fprintf(stderr, "abx: %s has ended\n", abx_sandbox_id(s));
            break;
        }
        if (!p[0].revents)
            continue;
        int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
            continue;
        relay *r = atomic_load(&live) < MAX_CONNECTIONS ? calloc(1, sizeof *r) : NULL;
        pthread_t t;
        if (r) {
            *r = (relay){.sandbox = s, .port = (unsigned)port, .client = cfd, .live = &live};
            atomic_fetch_add(&live, 1);
        }
        if (!r || pthread_create(&t, NULL, relay_main, r) != 0) {
            if (r) {
                atomic_fetch_sub(&live, 1);
                free(r);
            }
            close(cfd);
            continue;
        }
        pthread_detach(t);
    }
    close(lfd);
    if (sigfd >= 0)
        close(sigfd);
    for (int waited = 0; atomic_load(&live) > 0 && waited < 200;
         waited++) { /* let relays finish (2 s at most) */
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&live) == 0) /* else the process ends with the relays still using it */
        abx_sandbox_free(s);
    return 0;
}
