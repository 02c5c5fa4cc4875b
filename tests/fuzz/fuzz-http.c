/* fuzz-http.c: the Streamable HTTP transport's body handling, end to end:
 * each input is the body of a POST /mcp on a 2025-03-26 session (where
 * batches are answered), sent over loopback to a real `mcp_http_serve`
 * running in this process (sandboxes cannot be made: ABX_SHIM is
 * /bin/false). Checked on every input: an HTTP status comes back within
 * the deadline, and the server still answers a ping afterwards (a batch
 * nested 1000 deep used to kill it). */
#include "transport_http.h"

#include "fuzz_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int port;
static char session_id[64];

static void *serve(void *arg)
{
    static char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", *(int *)arg);
    static mcp_http_config cfg;
    cfg.listen = listen;
    cfg.max_sessions = 64;
    cfg.server.template_name = "base";
    mcp_http_serve(&cfg, NULL);
    return NULL;
}

/* One request on a new connection; returns the HTTP status (0: none) and
 * copies the Mcp-Session-Id header into sid when asked. */
static int request(const char *method, const char *body, size_t len, char *sid, size_t sid_len)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        close(fd);
        return 0;
    }
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
                     "MCP-Protocol-Version: 2025-03-26\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                     method, session_id[0] ? "Mcp-Session-Id: " : "", session_id, session_id[0] ? "\r\n" : "",
                     len);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) < 0 || (len && send(fd, body, len, MSG_NOSIGNAL) < 0)) {
        close(fd);
        return 0;
    }
    static char reply[1 << 16];
    size_t got = 0;
    ssize_t r;
    while ((r = recv(fd, reply + got, sizeof reply - 1 - got, 0)) > 0 && got + (size_t)r < sizeof reply - 1)
        got += (size_t)r;
    close(fd);
    reply[got] = '\0';
    int status = 0;
    if (sscanf(reply, "HTTP/1.1 %d", &status) != 1)
        return 0;
    const char *h = strcasestr(reply, "\r\nMcp-Session-Id: ");
    if (sid && h)
        snprintf(sid, sid_len, "%.*s", (int)strcspn(h + 18, "\r\n"), h + 18);
    return status;
}

/* The run's ABX_HOME: no sandbox is made in it (ABX_SHIM is /bin/false), and
 * it goes at exit. */
static char home[] = "/tmp/abx-fuzz-http-XXXXXX";

static void remove_home(void)
{
    char state[sizeof home + 16];
    snprintf(state, sizeof state, "%s/sandboxes", home); /* made empty by a lookup */
    rmdir(state);
    rmdir(home);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (port)
        return 0;
    if (!mkdtemp(home))
        abort();
    atexit(remove_home);
    setenv("ABX_HOME", home, 1);
    setenv("ABX_SHIM", "/bin/false", 1);
    /* a free port: the kernel picks one, the server binds it right after */
    port = fuzz_free_loopback_port();
    pthread_t t;
    pthread_create(&t, NULL, serve, &port);
    pthread_detach(t);
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"0\"}}}";
    for (int i = 0; i < 200 && !session_id[0]; i++) {
        if (request("POST", init, sizeof init - 1, session_id, sizeof session_id) == 0)
            nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
    }
    if (!session_id[0]) {
        fprintf(stderr, "fuzz-http: the server did not start on port %d\n", port);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    LLVMFuzzerInitialize(NULL, NULL);
    int status = request("POST", (const char *)data, size, NULL, 0);
    if (status < 200 || status > 599)
        abort(); /* no answer: the server hung or died */
    static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":\"alive\",\"method\":\"ping\"}";
    if (request("POST", ping, sizeof ping - 1, NULL, 0) != 200)
        abort();
    return 0;
}
