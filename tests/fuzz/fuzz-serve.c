/* fuzz-serve.c: `abx serve`'s request handling end to end: a real
 * serve_run (local provider, one API key) in this process on loopback, and
 * each input one HTTP request to it. An input is text:
 *
 *   METHOD TARGET            (the request line; TARGET is path and query)
 *   Header: value            (any number, until an empty line)
 *
 *   body                     (the rest)
 *
 * with placeholders filled in: @KEY@ the server's API key, @ID@ a live
 * sandbox of that key's tenant (made here when this host can make
 * sandboxes, made again when an input killed it), @NEXT@ the last paging
 * token the server gave, @PORT@ the listener's port, @TOKEN@ the live
 * sandbox's envd access token. So the inputs reach the
 * control plane's JSON bodies and query strings, paging tokens, and the
 * data plane's routing headers and Host forms, relayed to a real sandbox.
 *
 * Checked on every input: an HTTP status comes back; an error answer of the
 * control plane is E2B's {code, message}; the API key is never in an
 * answer; the server answers GET /health afterwards. The sandboxes made
 * here and through the inputs are killed at exit, and the home removed.
 */
#include "abx/abx.h"
#include "serve.h"

#include "fuzz_port.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
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

#define KEY "e2b_00112233445566778899aabbccddeeff00112233"
#define REQUEST_MAX (64u << 10)
#define REPLY_MAX (1u << 20)

static int port;
static char home[] = "/tmp/abx-fuzz-serve-XXXXXX";
static char live_id[128] = "i0000000000000000none"; /* a sandbox id no provider has, until one is made */
static bool can_make;                               /* this host makes sandboxes: keep one alive */
static char next_token[256] = "none";
static char live_token[128] = "none"; /* its envd's X-Access-Token */
static unsigned long statuses[6];

static void *serve_main(void *arg)
{
    (void)arg;
    static char listen[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    static const char *const keys[] = {KEY, NULL};
    serve_config cfg = {.listen = listen, .api_keys = keys, .provider = "local"};
    abx_error *err = NULL;
    if (serve_run(&cfg, &err) < 0) {
        fprintf(stderr, "fuzz-serve: serve: %s\n", abx_error_message(err));
        abort();
    }
    return NULL;
}

typedef struct reply {
    int status;
    char *head; /* headers, NUL-terminated */
    char *body; /* NUL-terminated; body_len bytes */
    size_t body_len;
    char storage[REPLY_MAX + 1];
} reply;

/* Sends request (len bytes) on a new connection and reads the answer until
 * the server closes it (Connection: close); status 0: none came. */
static void exchange(const char *request, size_t len, reply *r)
{
    r->status = 0;
    r->head = r->body = r->storage;
    r->body_len = 0;
    r->storage[0] = '\0';
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        send(fd, request, len, MSG_NOSIGNAL) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    size_t got = 0;
    ssize_t n;
    while (got < REPLY_MAX && (n = recv(fd, r->storage + got, REPLY_MAX - got, 0)) > 0)
        got += (size_t)n;
    close(fd);
    r->storage[got] = '\0';
    if (sscanf(r->storage, "HTTP/1.%*[01] %d", &r->status) != 1)
        r->status = 0;
    char *end = strstr(r->storage, "\r\n\r\n");
    if (end) {
        *end = '\0';
        r->body = end + 4;
        r->body_len = got - (size_t)(r->body - r->storage);
    }
}

/* The value of header name in r's head (copied into out), or false. */
static bool header(const reply *r, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(r->head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, nl) == 0 && p[2 + nl] == ':') {
            const char *v = p + 3 + nl;
            v += strspn(v, " ");
            snprintf(out, len, "%.*s", (int)strcspn(v, "\r\n"), v);
            return true;
        }
    return false;
}

/* Appends s (n bytes) to the request being built; false: it is full. */
static bool put(char *req, size_t *len, const char *s, size_t n)
{
    if (*len + n >= REQUEST_MAX)
        return false;
    memcpy(req + *len, s, n);
    *len += n;
    return true;
}

/* Appends input bytes [p, end) with the placeholders filled in; @KEY@ only
 * where key (the request line and headers: a body could hand the key to a
 * sandbox, whose files would then give it back). */
static void put_filled(char *req, size_t *len, const char *p, const char *end, bool key)
{
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    const struct {
        const char *mark, *value;
    } fills[] = {{"@KEY@", key ? KEY : "@KEY@"},
                 {"@ID@", live_id},
                 {"@NEXT@", next_token},
                 {"@PORT@", port_s},
                 {"@TOKEN@", live_token}};
    while (p < end) {
        bool filled = false;
        for (size_t i = 0; i < sizeof fills / sizeof fills[0] && !filled; i++) {
            size_t ml = strlen(fills[i].mark);
            if ((size_t)(end - p) >= ml && memcmp(p, fills[i].mark, ml) == 0) {
                put(req, len, fills[i].value, strlen(fills[i].value));
                p += ml;
                filled = true;
            }
        }
        if (!filled)
            put(req, len, p++, 1);
    }
}

/* The request an input stands for: its request line made one (a method of
 * letters, a target without spaces or control bytes), its header lines
 * those holding a colon (no Content-Length or Transfer-Encoding of their
 * own: the length is the body's), Host added when it has none. */
static size_t build(const char *in, size_t n, char *req)
{
    const char *end = in + n, *eol = memchr(in, '\n', n);
    const char *line_end = eol ? eol : end;
    size_t len = 0;
    const char *sp = memchr(in, ' ', (size_t)(line_end - in));
    const char *m = in;
    size_t ml = sp ? (size_t)(sp - in) : 0;
    for (size_t i = 0; i < ml; i++)
        if (!isupper((unsigned char)m[i]))
            ml = 0;
    if (ml == 0 || ml > 10)
        put(req, &len, "GET", 3);
    else
        put(req, &len, m, ml);
    put(req, &len, " ", 1);
    const char *t = sp ? sp + 1 : in;
    char target[REQUEST_MAX / 2];
    size_t tl = 0;
    for (const char *p = t; p < line_end && tl + 4 < sizeof target; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch <= ' ' || ch == 0x7f)
            tl += (size_t)snprintf(target + tl, sizeof target - tl, "%%%02X", ch);
        else
            target[tl++] = (char)ch;
    }
    if (tl == 0)
        target[tl++] = '/';
    put_filled(req, &len, target, target + tl, true);
    put(req, &len, " HTTP/1.1\r\n", 11);
    bool host = false;
    const char *p = eol ? eol + 1 : end;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        const char *le = e ? e : end;
        if (le == p || (le == p + 1 && *p == '\r')) { /* the empty line: the body follows */
            p = e ? e + 1 : end;
            break;
        }
        char line[4096];
        size_t ll = 0;
        for (const char *q = p; q < le && ll < sizeof line - 1; q++)
            if ((unsigned char)*q >= ' ' || *q == '\t')
                line[ll++] = *q;
        line[ll] = '\0';
        const char *colon = strchr(line, ':');
        if (colon && colon > line && strncasecmp(line, "Content-Length:", 15) != 0 &&
            strncasecmp(line, "Transfer-Encoding:", 18) != 0 && strncasecmp(line, "Connection:", 11) != 0) {
            host |= strncasecmp(line, "Host:", 5) == 0;
            put_filled(req, &len, line, line + ll, true);
            put(req, &len, "\r\n", 2);
        }
        p = e ? e + 1 : end;
    }
    char tail[128];
    if (!host) {
        int hl = snprintf(tail, sizeof tail, "Host: 127.0.0.1:%d\r\n", port);
        put(req, &len, tail, (size_t)hl);
    }
    char body[REQUEST_MAX / 2];
    size_t bl = 0;
    if (p < end) {
        size_t start = len;
        put_filled(req, &len, p, end, false);
        bl = len - start;
        if (bl >= sizeof body)
            bl = sizeof body - 1;
        memcpy(body, req + start, bl);
        len = start;
    }
    int tl2 = snprintf(tail, sizeof tail, "Connection: close\r\nContent-Length: %zu\r\n\r\n", bl);
    put(req, &len, tail, (size_t)tl2);
    put(req, &len, body, bl);
    return len;
}

/* Kills every sandbox in the run's home (the live one and what inputs
 * made), then removes the home. */
static void cleanup(void)
{
    fprintf(stderr, "fuzz-serve: answers 1xx-5xx: %lu %lu %lu %lu %lu\n", statuses[1], statuses[2],
            statuses[3], statuses[4], statuses[5]);
    abx_client *c = NULL;
    abx_client_options o = {.provider = "local"};
    if (abx_client_new(&o, &c, NULL) == 0) {
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        for (unsigned round = 0; round < 10 && abx_list(c, NULL, 100, 0, &items, &n, NULL) == 0 && n;
             round++) {
            for (size_t i = 0; i < n; i++)
                abx_kill_by_id(c, items[i].sandbox_id, NULL);
            abx_sandbox_info_list_free(items, n);
            items = NULL;
        }
        abx_client_free(c);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz-serve: could not remove %s\n", home);
}

/* Makes the live sandbox again if an input ended it (or there is none). */
static void keep_live(void)
{
    if (!can_make)
        return;
    char tenant[34];
    abx_tenant_from_secret(KEY, tenant);
    abx_client_options o = {.provider = "local", .tenant = tenant};
    abx_client *c = NULL;
    if (abx_client_new(&o, &c, NULL) < 0)
        abort();
    abx_sandbox_info info;
    if (abx_get_info_by_id(c, live_id, &info, NULL) == 0) {
        bool running = strcmp(info.status, "running") == 0;
        abx_sandbox_info_clear(&info);
        if (running) {
            abx_client_free(c);
            return;
        }
        abx_kill_by_id(c, live_id, NULL); /* paused: made anew */
    }
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    abx_create_options co = {.timeout_s = 600};
    int rc = abx_sandbox_create(c, &co, &s, &err);
    if (rc == -ABX_EQUOTA) { /* the tenant's quota, filled by the inputs' creates: those go first */
        abx_error_free(err);
        err = NULL;
        abx_sandbox_info *items = NULL;
        size_t n = 0;
        if (abx_list(c, NULL, 100, 0, &items, &n, NULL) == 0) {
            for (size_t i = 0; i < n; i++)
                abx_kill_by_id(c, items[i].sandbox_id, NULL);
            abx_sandbox_info_list_free(items, n);
        }
        rc = abx_sandbox_create(c, &co, &s, &err);
    }
    if (rc < 0) {
        if (getenv("FUZZ_SERVE_VERBOSE"))
            fprintf(stderr, "fuzz-serve: live sandbox: %s\n", abx_error_message(err));
        abx_error_free(err);
        abx_client_free(c);
        return;
    }
    const char *id = abx_sandbox_id(s), *colon = strchr(id, ':'); /* E2B's ids are unqualified */
    snprintf(live_id, sizeof live_id, "%s", colon ? colon + 1 : id);
    abx_endpoint ep;
    if (abx_sandbox_endpoint(s, ABX_PORT_ENVD, &ep, NULL) == 0 && ep.token[0])
        snprintf(live_token, sizeof live_token, "%s", ep.token);
    explicit_bzero(&ep, sizeof ep);
    abx_sandbox_free(s);
    abx_client_free(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    if (port)
        return 0;
    if (!mkdtemp(home))
        abort();
    setenv("ABX_HOME", home, 1);
    unsetenv("ABX_PROVIDER");
    char exe[512];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 16);
    if (el > 0 && !getenv("ABX_SHIM")) { /* the build's shim: BUILD/tests/fuzz-serve -> BUILD/abx-shim */
        exe[el] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            snprintf(slash, sizeof exe - (size_t)(slash - exe), "/../abx-shim");
            setenv("ABX_SHIM", exe, 1);
        }
    }
    /* a tenant holds at most 4 sandboxes: the inputs' creates stay cheap */
    char path[128];
    snprintf(path, sizeof path, "%s/config.toml", home);
    FILE *f = fopen(path, "we");
    if (!f || fputs("[limits]\nsandboxes_per_tenant = 4\n", f) < 0 || fclose(f) != 0)
        abort();
    atexit(cleanup);
    port = fuzz_free_loopback_port();
    pthread_t t;
    if (pthread_create(&t, NULL, serve_main, NULL) != 0)
        abort();
    pthread_detach(t);
    static reply r;
    static const char health[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    for (int i = 0; i < 250 && r.status != 204; i++) {
        exchange(health, sizeof health - 1, &r);
        if (r.status != 204)
            nanosleep(&(struct timespec){0, 20 * 1000000}, NULL);
    }
    if (r.status != 204) {
        fprintf(stderr, "fuzz-serve: the server did not start on port %d\n", port);
        abort();
    }
    abx_client *c = NULL;
    abx_client_options o = {.provider = "local"};
    can_make = geteuid() == 0 && abx_client_new(&o, &c, NULL) == 0;
    abx_client_free(c);
    keep_live();
    can_make = strncmp(live_id, "i0000000000000000none", 21) != 0;
    fprintf(stderr, "fuzz-serve: serving on port %d; live sandbox: %s\n", port, can_make ? live_id : "none");
    return 0;
}

/* An answer of the control plane (no routing header or sandbox Host) that
 * is an error must be E2B's {code, message}. */
static bool control_error_shaped(const char *req, const reply *r)
{
    if (r->status < 400 || strcasestr(req, "\r\nE2b-Sandbox-Id:") || strstr(req, ".localhost"))
        return true;
    if (r->body_len == 0)
        return r->status == 413 || r->status == 400; /* libmicrohttpd's own refusals have no JSON */
    json_t *j = json_loadb(r->body, r->body_len, 0, NULL);
    bool ok =
        !j || (json_is_integer(json_object_get(j, "code")) && json_is_string(json_object_get(j, "message")));
    if (!j) /* libmicrohttpd's own HTML refusal of a malformed request */
        ok = strncmp(r->body, "<html>", 6) == 0 || r->status == 400 || r->status == 413 || r->status == 431;
    json_decref(j);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    LLVMFuzzerInitialize(NULL, NULL);
    static char req[REQUEST_MAX];
    static reply r;
    keep_live();
    size_t len = build((const char *)data, size, req);
    req[len < REQUEST_MAX ? len : REQUEST_MAX - 1] = '\0';
    exchange(req, len, &r);
    if (r.status < 100 || r.status > 599) {
        fprintf(stderr, "fuzz-serve: no answer to:\n%.*s\n", (int)(len > 2000 ? 2000 : len), req);
        abort();
    }
    statuses[r.status / 100]++;
    if (getenv("FUZZ_SERVE_VERBOSE"))
        fprintf(stderr, "%d %.*s | %.120s\n", r.status, (int)strcspn(req, "\r"), req, r.body);
    if (memmem(r.storage, strlen(r.head) + 4 + r.body_len, KEY, strlen(KEY))) {
        fprintf(stderr, "fuzz-serve: the API key came back in an answer to:\n%.*s\n", (int)len, req);
        abort();
    }
    if (!control_error_shaped(req, &r)) {
        fprintf(stderr, "fuzz-serve: %d without {code, message}: %.200s\nto:\n%.*s\n", r.status, r.body,
                (int)(len > 2000 ? 2000 : len), req);
        abort();
    }
    char token[256];
    if (header(&r, "x-next-token", token, sizeof token) && strlen(token) < sizeof next_token)
        snprintf(next_token, sizeof next_token, "%s", token);
    static const char health[] = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    exchange(health, sizeof health - 1, &r);
    if (r.status != 204) {
        fprintf(stderr, "fuzz-serve: /health answered %d after:\n%.*s\n", r.status,
                (int)(len > 2000 ? 2000 : len), req);
        abort();
    }
    return 0;
}
