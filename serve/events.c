/* events.c: GET /events of abx serve and the service: the host's event
 * log (abx_events_read) as the caller's client may see it.
 *
 * Owns: the two answers. By default a stream of server-sent events
 * (text/event-stream: "id: SEQ", "event: TYPE", "data: JSON" per event,
 * from ?after=N (end: from now on) or the Last-Event-ID an EventSource
 * sends when it reconnects, then the new ones as they come; a comment every
 * KEEPALIVE_MS so that proxies and the client know the stream lives);
 * with ?format=json one page, {"events": [...], "next": N}, which the
 * service's clients read (abx events as a user without root). The stream
 * holds its connection's thread, polling the log every POLL_MS, and ends
 * when the server stops or the client goes.
 */
#include "serve.h"
#include "netlibs.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_MS 200
#define KEEPALIVE_MS 15000
#define STREAM_PAGE 200

typedef struct sse_stream {
    abx_client *who;             /* borrowed: the server's, alive as long as it serves */
    const atomic_bool *stopping; /* the server's */
    unsigned long long after;
    char *pending; /* what is still to send (malloc'd), from off */
    size_t len, off;
    unsigned idle_ms;
} sse_stream;

/* "N" as a number; false for anything else. */
static bool seq_of(const char *text, unsigned long long *out)
{
    if (!text || !*text || strlen(text) > 20 || strspn(text, "0123456789") != strlen(text))
        return false;
    *out = strtoull(text, NULL, 10);
    return true;
}

/* The events over st->after as SSE frames in st->pending; false when
 * there were none (or they could not be read). */
static bool sse_fill(sse_stream *st)
{
    char *text = NULL;
    unsigned long long next = st->after;
    if (abx_events_read(st->who, st->after, STREAM_PAGE, &text, &next, NULL) < 0)
        return false;
    json_t *arr = json_loads(text, 0, NULL);
    abx_free(text);
    st->after = next;
    size_t n = json_array_size(arr), i;
    json_t *ev;
    char *out = NULL;
    size_t len = 0;
    FILE *f = n ? open_memstream(&out, &len) : NULL;
    json_array_foreach(f ? arr : NULL, i, ev)
    {
        char *data = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fprintf(f, "id: %lld\nevent: %s\ndata: %s\n\n",
                (long long)json_integer_value(json_object_get(ev, "seq")),
                json_string_value(json_object_get(ev, "type")) ?: "event", data ? data : "{}");
        free(data);
    }
    json_decref(arr);
    if (!f)
        return false;
    fclose(f);
    st->pending = out;
    st->len = len;
    st->off = 0;
    return len > 0;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse_stream *st = cls;
    for (;;) {
        if (st->off < st->len) {
            size_t n = st->len - st->off < max ? st->len - st->off : max;
            memcpy(buf, st->pending + st->off, n);
            st->off += n;
            return (ssize_t)n;
        }
        free(st->pending);
        st->pending = NULL;
        st->len = st->off = 0;
        if (atomic_load(st->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (sse_fill(st)) {
            st->idle_ms = 0;
            continue;
        }
        if (st->idle_ms >= KEEPALIVE_MS) { /* a write to a client that left ends the stream */
            st->idle_ms = 0;
            st->pending = strdup(": keep-alive\n\n");
            st->len = st->pending ? strlen(st->pending) : 0;
            continue;
        }
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        st->idle_ms += POLL_MS;
    }
}

static void sse_done(void *cls)
{
    sse_stream *st = cls;
    free(st->pending);
    free(st);
}

/* ?format=json: one page and the number to go on from. */
static int answer_page(struct MHD_Connection *c, abx_client *who, unsigned long long after)
{
    const char *max_text = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "max");
    unsigned long long max = ABX_EVENTS_READ_MAX;
    if (max_text && (!seq_of(max_text, &max) || max < 1 || max > ABX_EVENTS_READ_MAX))
        return serve_send_error(c, 400, "max: a number from 1 to 1000");
    char *text = NULL;
    unsigned long long next = after;
    abx_error *err = NULL;
    int rc = abx_events_read(who, after, (unsigned)max, &text, &next, &err);
    if (rc < 0) {
        char why[200];
        snprintf(why, sizeof why, "%s: %s", abx_err_name(rc), abx_strerror(rc));
        abx_error_free(err);
        return serve_send_error(c, (unsigned)abx_err_http_status(rc), why);
    }
    json_t *events = json_loads(text, 0, NULL);
    abx_free(text);
    json_t *doc = json_pack("{s:o, s:I}", "events", events ? events : json_array(), "next", (json_int_t)next);
    char *body = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    struct MHD_Response *r =
        body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) {
        free(body);
        return -1;
    }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}

/* The number of the last event who may see (0: none): ?after=end, for a
 * stream of what happens from now on. */
static unsigned long long last_seq(abx_client *who)
{
    unsigned long long after = 0, next = 0;
    for (int pages = 0; pages < 64; pages++) { /* the log holds a few thousand: a handful of pages */
        char *text = NULL;
        if (abx_events_read(who, after, ABX_EVENTS_READ_MAX, &text, &next, NULL) < 0)
            break;
        abx_free(text);
        if (next == after)
            break;
        after = next;
    }
    return after;
}

int serve_events_answer(struct MHD_Connection *c, abx_client *who, const atomic_bool *stopping)
{
    const char *after_text = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
    const char *last_id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
    const char *format = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
    unsigned long long after = 0;
    bool at_end = after_text && strcmp(after_text, "end") == 0;
    if ((after_text && !at_end && !seq_of(after_text, &after)) ||
        (!after_text && last_id && !seq_of(last_id, &after)))
        return serve_send_error(c, 400, "after (or Last-Event-ID): an event number, or end");
    if (at_end)
        after = last_seq(who);
    if (format && strcmp(format, "json") != 0)
        return serve_send_error(c, 400, "format: json, or none for server-sent events");
    if (format)
        return answer_page(c, who, after);
    char *probe = NULL; /* a provider without a log says so now, not in a stream that stays empty */
    unsigned long long next = 0;
    abx_error *err = NULL;
    int rc = abx_events_read(who, after, 1, &probe, &next, &err);
    abx_free(probe);
    abx_error_free(err);
    if (rc < 0) {
        char why[120];
        snprintf(why, sizeof why, "%s: this provider keeps no event log", abx_err_name(rc));
        return serve_send_error(c, (unsigned)abx_err_http_status(rc), why);
    }
    sse_stream *st = calloc(1, sizeof *st);
    if (!st)
        return -1;
    st->who = who;
    st->stopping = stopping;
    st->after = after;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, st, sse_done);
    if (!r) {
        sse_done(st);
        return -1;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Accel-Buffering", "no");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok == MHD_YES ? 0 : -1;
}
