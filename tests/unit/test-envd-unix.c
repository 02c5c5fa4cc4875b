/* test-envd-unix.c: the envd client's Unix-socket transport (lib/envd_unix.c)
 * against a scripted HTTP server on a real socket: kept-alive connections,
 * a kept connection the server closed, chunked answers and uploads, an
 * answer cut short, a malformed one, a header flood, a body past the
 * bound, and cancel while the server says nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "envd_client.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* ---- the scripted server ---------------------------------------------------- */

typedef enum script {
    SCRIPT_KEEP,        /* answers every request on a connection, kept alive */
    SCRIPT_CLOSE_AFTER, /* answers one request per connection, then closes without saying so */
    SCRIPT_CHUNKED,     /* a chunked answer in small pieces */
    SCRIPT_CUT,         /* a Content-Length answer cut short */
    SCRIPT_GARBAGE,     /* not HTTP */
    SCRIPT_HEADER_FLOOD,
    SCRIPT_BODY_FLOOD, /* a body past the client's 64 MiB bound */
    SCRIPT_SILENT,     /* reads the request, never answers */
    SCRIPT_ECHO_BODY,  /* answers with the request's body, de-chunked */
} script;

typedef struct server {
    char path[108];
    int listen_fd;
    script what;
    int accepts;
    int requests;
    size_t body_len;   /* the last request's body, de-chunked */
    bool body_pattern; /* it was 0, 1, 2, ... (mod 256) */
    pthread_t thread;
    volatile int stop;
} server;

/* Reads one request (head and body, chunked or sized) into req; its body
 * into body. Returns -1 at EOF. */
static int read_request(int fd, char *req, size_t cap, char *body, size_t *body_len)
{
    size_t n = 0;
    while (!strstr(req, "\r\n\r\n")) {
        ssize_t r = read(fd, req + n, 1);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        req[n] = '\0';
        if (n + 1 >= cap)
            return -1;
    }
    *body_len = 0;
    const char *cl = strcasestr(req, "Content-Length: ");
    if (cl) {
        size_t want = strtoul(cl + 16, NULL, 10);
        while (*body_len < want) {
            ssize_t r = read(fd, body + *body_len, want - *body_len);
            if (r <= 0)
                return -1;
            *body_len += (size_t)r;
        }
    } else if (strcasestr(req, "Transfer-Encoding: chunked")) {
        for (;;) {
            char line[32];
            size_t l = 0;
            while (l < sizeof line - 1 && read(fd, line + l, 1) == 1 && line[l] != '\n')
                l++;
            line[l] = '\0';
            size_t size = strtoul(line, NULL, 16);
            size_t got = 0;
            while (got < size + 2) { /* the bytes and their CRLF */
                char tmp[4096];
                size_t want = size + 2 - got < sizeof tmp ? size + 2 - got : sizeof tmp;
                ssize_t r = read(fd, tmp, want);
                if (r <= 0)
                    return -1;
                size_t keep = got < size ? (size - got < (size_t)r ? size - got : (size_t)r) : 0;
                memcpy(body + *body_len, tmp, keep);
                *body_len += keep;
                got += (size_t)r;
            }
            if (size == 0)
                break;
        }
    }
    return 0;
}

static void say(int fd, const char *s)
{
    if (send(fd, s, strlen(s), MSG_NOSIGNAL) < 0)
        return;
}

static void answer(server *sv, int fd, const char *body, size_t body_len)
{
    char head[256];
    switch (sv->what) {
    case SCRIPT_KEEP:
    case SCRIPT_CLOSE_AFTER:
        say(fd,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}");
        return;
    case SCRIPT_CHUNKED:
        say(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (const char *p = "{\"ok\":\"chunked\"}"; *p; p += 2) {
            char piece[32];
            snprintf(piece, sizeof piece, "2\r\n%.2s\r\n", p);
            say(fd, piece);
        }
        say(fd, "0\r\n\r\n");
        return;
    case SCRIPT_CUT:
        say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ok\":");
        return;
    case SCRIPT_GARBAGE:
        say(fd, "SSH-2.0-OpenSSH\r\n\r\n");
        return;
    case SCRIPT_HEADER_FLOOD:
        say(fd, "HTTP/1.1 200 OK\r\n");
        for (int i = 0; i < 20000 && !sv->stop; i++)
            if (send(fd, "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 52, MSG_NOSIGNAL) < 0)
                return;
        return;
    case SCRIPT_BODY_FLOOD: {
        say(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n");
        static char zeros[65536];
        for (size_t sent = 0; sent < 100000000 && !sv->stop; sent += sizeof zeros)
            if (send(fd, zeros, sizeof zeros, MSG_NOSIGNAL) < 0)
                return;
        return;
    }
    case SCRIPT_SILENT:
        while (!sv->stop)
            usleep(10000);
        return;
    case SCRIPT_ECHO_BODY:
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", body_len);
        say(fd, head);
        if (body_len && send(fd, body, body_len, MSG_NOSIGNAL) < 0)
            return;
        return;
    }
}

static void *serve(void *ud)
{
    server *sv = ud;
    static char req[1 << 16], body[1 << 21];
    while (!sv->stop) {
        int fd = accept(sv->listen_fd, NULL, NULL);
        if (fd < 0)
            break;
        sv->accepts++;
        size_t body_len = 0;
        req[0] = '\0';
        while (!sv->stop && read_request(fd, req, sizeof req, body, &body_len) == 0) {
            sv->requests++;
            sv->body_len = body_len;
            sv->body_pattern = true;
            for (size_t i = 0; i < body_len; i++)
                sv->body_pattern = sv->body_pattern && (unsigned char)body[i] == (unsigned char)i;
            answer(sv, fd, body, body_len);
            req[0] = '\0';
            if (sv->what != SCRIPT_KEEP && sv->what != SCRIPT_CHUNKED && sv->what != SCRIPT_ECHO_BODY)
                break;
        }
        close(fd);
    }
    return NULL;
}

static void server_start(server *sv, script what)
{
    memset(sv, 0, sizeof *sv);
    sv->what = what;
    snprintf(sv->path, sizeof sv->path, "/tmp/abx-test-envd-%d.sock", (int)getpid());
    unlink(sv->path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sv->path);
    sv->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(sv->listen_fd >= 0);
    assert_int_equal(bind(sv->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(sv->listen_fd, 8), 0);
    assert_int_equal(pthread_create(&sv->thread, NULL, serve, sv), 0);
}

static void server_stop(server *sv)
{
    sv->stop = 1;
    shutdown(sv->listen_fd, SHUT_RDWR);
    close(sv->listen_fd);
    pthread_join(sv->thread, NULL);
    unlink(sv->path);
}

static int json_get(abx_envd *e, json_t **out, abx_error **err)
{
    return abx__envd_json(e, "GET", "/abx/x", NULL, out, err);
}

/* ---- the tests ------------------------------------------------------------------ */

static void test_kept_alive(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_KEEP);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, "tok");
    for (int i = 0; i < 5; i++) {
        json_t *out = NULL;
        assert_int_equal(json_get(&e, &out, NULL), 0);
        assert_true(json_is_true(json_object_get(out, "ok")));
        json_decref(out);
    }
    assert_int_equal(sv.requests, 5);
    assert_int_equal(sv.accepts, 1); /* one connection for all five */
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

static void test_stale_connection_retried(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_CLOSE_AFTER);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    for (int i = 0; i < 3; i++) {
        json_t *out = NULL;
        abx_error *err = NULL;
        assert_int_equal(json_get(&e, &out, &err), 0);
        json_decref(out);
        abx_error_free(err);
        usleep(20000); /* the server has closed the kept connection */
    }
    assert_int_equal(sv.requests, 3);
    assert_int_equal(sv.accepts, 3);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

static void test_chunked_answer(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_CHUNKED);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    json_t *out = NULL;
    assert_int_equal(json_get(&e, &out, NULL), 0);
    assert_string_equal(json_string_value(json_object_get(out, "ok")), "chunked");
    json_decref(out);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

static void expect_failure(script what, int code)
{
    server sv;
    server_start(&sv, what);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    json_t *out = NULL;
    abx_error *err = NULL;
    assert_int_equal(json_get(&e, &out, &err), -code);
    assert_null(out);
    assert_non_null(err);
    assert_int_equal(abx_error_code(err), code);
    abx_error_free(err);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

static void test_cut_answer(void **state)
{
    (void)state;
    expect_failure(SCRIPT_CUT, ABX_EIO);
}

static void test_garbage_answer(void **state)
{
    (void)state;
    expect_failure(SCRIPT_GARBAGE, ABX_EIO);
}

static void test_header_flood(void **state)
{
    (void)state;
    expect_failure(SCRIPT_HEADER_FLOOD, ABX_EIO); /* http-parser's 80 KiB bound on headers */
}

static void test_body_flood(void **state)
{
    (void)state;
    expect_failure(SCRIPT_BODY_FLOOD, ABX_ETOOBIG);
}

static void test_no_server(void **state)
{
    (void)state;
    abx_envd e;
    abx__envd_init(&e, "http://localhost", "/tmp/abx-test-envd-nobody.sock", NULL);
    abx_error *err = NULL;
    json_t *out = NULL;
    assert_int_equal(json_get(&e, &out, &err), -ABX_ENOTRUNNING);
    abx_error_free(err);
    abx__envd_cleanup(&e);
}

static bool cancel_soon(void *ud)
{
    int *calls = ud;
    return ++*calls > 3;
}

static void test_cancel_while_silent(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_SILENT);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    int calls = 0;
    char *out = NULL;
    size_t len = 0;
    abx_error *err = NULL;
    json_t *body = json_object();
    assert_int_equal(abx__envd_post_raw(&e, "/execute", NULL, body, cancel_soon, &calls, &out, &len, &err),
                     -ABX_ECANCELLED);
    json_decref(body);
    abx_error_free(err);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

typedef struct source {
    size_t left;
    unsigned char next;
} source;

static size_t read_source(char *buf, size_t len, void *ud)
{
    source *s = ud;
    size_t n = len < s->left ? len : s->left;
    n = n > 1000 ? 1000 : n; /* small pieces: many chunks */
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)s->next++;
    s->left -= n;
    return n;
}

/* POST /files with a body of unknown size goes chunked; the server echoes
 * what it de-chunked, which the download below reads back. */
static void test_chunked_upload(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_ECHO_BODY);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    source src = {.left = 100000};
    abx_error *err = NULL;
    assert_int_equal(abx__envd_upload(&e, "/a b/ü", NULL, read_source, &src, -1, &err), 0);
    assert_int_equal(src.left, 0);
    assert_int_equal(sv.body_len, 100000);
    assert_true(sv.body_pattern);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

static size_t fail_source(char *buf, size_t len, void *ud)
{
    (void)buf, (void)len, (void)ud;
    return ABX_ENVD_READ_ABORT;
}

static void test_upload_source_fails(void **state)
{
    (void)state;
    server sv;
    server_start(&sv, SCRIPT_ECHO_BODY);
    abx_envd e;
    abx__envd_init(&e, "http://localhost", sv.path, NULL);
    abx_error *err = NULL;
    assert_true(abx__envd_upload(&e, "/f", NULL, fail_source, NULL, 10, &err) < 0);
    abx_error_free(err);
    abx__envd_cleanup(&e);
    server_stop(&sv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_alive),          cmocka_unit_test(test_stale_connection_retried),
        cmocka_unit_test(test_chunked_answer),      cmocka_unit_test(test_cut_answer),
        cmocka_unit_test(test_garbage_answer),      cmocka_unit_test(test_header_flood),
        cmocka_unit_test(test_body_flood),          cmocka_unit_test(test_no_server),
        cmocka_unit_test(test_cancel_while_silent), cmocka_unit_test(test_chunked_upload),
        cmocka_unit_test(test_upload_source_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
