/* event_log.c: the host's event log, appended by every process of one
 * ABX_HOME and read by libabx (event_log.h).
 *
 * Owns: the files of $ABX_HOME/events/, their bound (a file past
 * ABX_EVENT_FILE_MAX becomes previous.jsonl, whatever previous was is
 * dropped), the numbering (the next number in `seq`, read and written
 * under its exclusive flock together with the append, so that numbers
 * follow the order of the lines), and the reading of numbered lines
 * (under the shared flock, so never a file half rotated).
 */
#include "event_log.h"
#include "sysutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVENTS_DIR "events"

/* home/events/name into out; false when it does not fit. */
static bool event_path(const char *home, const char *name, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/" EVENTS_DIR "%s%s", home, name ? "/" : "", name ? name : "");
    return n > 0 && (size_t)n < len;
}

/* The seq file, open and flocked (op: LOCK_EX or LOCK_SH); -1 on failure. */
static int seq_lock(const char *home, int op, bool create)
{
    char dir[700], path[760];
    if (!event_path(home, NULL, dir, sizeof dir) || !event_path(home, "seq", path, sizeof path))
        return -1;
    if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    int fd = open(path, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (flock(fd, op) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static unsigned long long seq_next(int fd)
{
    char text[32] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    unsigned long long v = strtoull(text, NULL, 10);
    return v ? v : 1;
}

/* "2026-12-07T23:01:02.123Z" */
static void now_rfc3339_ms(char out[80])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    /* by hand: strftime reads the time zone's file, which UTC does not need */
    snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ts.tv_nsec / 1000000) % 1000);
}

/* The line for event numbered seq: {"seq":N,"time":"T", then the rest of
 * the event's own members. NULL when it is over ABX_EVENT_LINE_MAX. */
static char *event_line(json_t *event, unsigned long long seq, size_t *len)
{
    json_object_del(event, "seq");
    json_object_del(event, "time");
    char *body = json_dumps(event, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!body || body[0] != '{') {
        free(body);
        return NULL;
    }
    char when[80], *line = malloc(ABX_EVENT_LINE_MAX + 1);
    now_rfc3339_ms(when);
    bool empty = strcmp(body, "{}") == 0;
    int n = line ? snprintf(line, ABX_EVENT_LINE_MAX + 1, "{\"seq\":%llu,\"time\":\"%s\"%s%s\n", seq, when,
                            empty ? "}" : ",", empty ? "" : body + 1)
                 : -1;
    free(body);
    if (n < 0 || n > ABX_EVENT_LINE_MAX) {
        free(line);
        return NULL;
    }
    *len = (size_t)n;
    return line;
}

/* current.jsonl ready for len more bytes: moved to previous.jsonl when it
 * would pass the bound. The caller holds the exclusive lock. */
static int current_open(const char *home, size_t len)
{
    char cur[760], prev[760];
    if (!event_path(home, "current.jsonl", cur, sizeof cur) ||
        !event_path(home, "previous.jsonl", prev, sizeof prev))
        return -1;
    struct stat st;
    if (lstat(cur, &st) == 0 && (size_t)st.st_size + len > ABX_EVENT_FILE_MAX && rename(cur, prev) < 0)
        return -1;
    return open(cur, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int abx__event_log_append(const char *home, json_t *event)
{
    if (!json_is_object(event) || !home || !*home) {
        json_decref(event);
        return -1;
    }
    int lock = seq_lock(home, LOCK_EX, true);
    if (lock < 0) {
        json_decref(event);
        return -1;
    }
    unsigned long long seq = seq_next(lock);
    size_t len = 0;
    char *line = event_line(event, seq, &len);
    json_decref(event);
    int fd = line ? current_open(home, len) : -1;
    int rc = fd >= 0 && abx__write_all(fd, line, len) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    free(line);
    if (rc == 0) { /* fixed width, written in place: no truncate (a journaled size change) per event */
        char text[32];
        int n = snprintf(text, sizeof text, "%020llu\n", seq + 1);
        rc = pwrite(lock, text, (size_t)n, 0) == n ? 0 : -1;
    }
    close(lock); /* and its flock */
    return rc;
}

/* The number a line begins with ({"seq":N,), 0 when it does not. */
static unsigned long long line_seq(const char *line)
{
    static const char head[] = "{\"seq\":";
    if (strncmp(line, head, sizeof head - 1) != 0)
        return 0;
    return strtoull(line + sizeof head - 1, NULL, 10);
}

/* One file's events over *after, in order; false when each said stop. */
static bool read_file(const char *path, unsigned long long *after, abx_event_each each, void *ud)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return true;
    char *line = malloc(ABX_EVENT_LINE_MAX + 2);
    bool go = line != NULL;
    while (go && fgets(line, ABX_EVENT_LINE_MAX + 2, f)) {
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n') { /* over the bound (never written so): skipped to its end */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        unsigned long long seq = line_seq(line);
        if (seq <= *after)
            continue;
        json_t *ev = json_loadb(line, n, JSON_REJECT_DUPLICATES, NULL);
        if (json_is_object(ev)) {
            *after = seq;
            go = each(ev, seq, ud);
        }
        json_decref(ev);
    }
    free(line);
    fclose(f);
    return go;
}

int abx__event_log_read(const char *home, unsigned long long after, abx_event_each each, void *ud,
                        unsigned long long *last)
{
    *last = after;
    int lock = home && *home ? seq_lock(home, LOCK_SH, false) : -1;
    if (lock < 0)
        return -1;
    if (seq_next(lock) - 1 <=
        after) { /* nothing numbered past after: no file to read (a follower's usual poll) */
        close(lock);
        return 0;
    }
    char prev[760], cur[760];
    if (event_path(home, "previous.jsonl", prev, sizeof prev) &&
        event_path(home, "current.jsonl", cur, sizeof cur) && read_file(prev, last, each, ud))
        read_file(cur, last, each, ud);
    close(lock);
    return 0;
}

int abx__event_log_home_of(const char *state_dir, char *out, size_t len)
{
    const char *slash = strrchr(state_dir, '/');
    size_t n = slash ? (size_t)(slash - state_dir) : 0;
    static const char tail[] = "/sandboxes";
    if (n < sizeof tail || strncmp(state_dir + n - (sizeof tail - 1), tail, sizeof tail - 1) != 0)
        return -1;
    n -= sizeof tail - 1;
    if (n + 1 > len)
        return -1;
    memcpy(out, state_dir, n);
    out[n] = '\0';
    return 0;
}

void abx__event_log_sandbox(const char *state_dir, const char *type, json_t *detail)
{
    char home[512], path[600], tenant[129] = "", qualified[64];
    const char *id = strrchr(state_dir, '/');
    if (abx__event_log_home_of(state_dir, home, sizeof home) < 0 || !id || strlen(id + 1) > 32) {
        json_decref(detail);
        return;
    }
    snprintf(path, sizeof path, "%s/tenant", state_dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, tenant, sizeof tenant - 1) : -1;
    if (fd >= 0)
        close(fd);
    tenant[n > 0 ? n : 0] = '\0';
    tenant[strcspn(tenant, "\n")] = '\0';
    snprintf(qualified, sizeof qualified, "local:%s", id + 1);
    json_t *ev = json_pack("{s:s, s:s}", "type", type, "sandbox_id", qualified);
    if (ev && *tenant)
        json_object_set_new(ev, "tenant", json_string(tenant));
    if (ev && json_is_object(detail))
        json_object_update_missing(ev, detail);
    json_decref(detail);
    abx__event_log_append(home, ev);
}
