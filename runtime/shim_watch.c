/* shim_watch.c: envd's filesystem.Filesystem/WatchDir, a server stream of
 * what happens in a sandbox directory (E2B SDK: files.watchDir).
 *
 * Owns: one inotify instance per stream, its watches (the directory, and
 * with recursive each directory under it, new ones included, up to
 * WATCH_MAX_DIRS), and turning inotify events into envd's events
 * {filesystem: {name (relative to the watched directory), type
 * (EVENT_TYPE_CREATE|WRITE|REMOVE|RENAME|CHMOD)}} after a first
 * {start: {}}, with keepalives (WatchDirResponse's oneof is at its top
 * level, unlike a process's events). Every directory is resolved inside the
 * sandbox root with the user's credentials (shim_files.c). Events queue up
 * to WATCH_MAX_QUEUED; past that they are dropped. The stream ends when the
 * client goes, the directory is removed, its deadline passes, or the
 * sandbox ends.
 *
 * Also the watchers of the non-streaming RPCs (CreateWatcher,
 * GetWatcherEvents, RemoveWatcher: E2B's Python SDK): at most
 * WATCHERS_MAX per sandbox, each the same watch, owned by the user who made
 * it (another user's id answers as an unknown one), its events drained by
 * each GetWatcherEvents.
 */
#include "shim_watch.h"
#include "error_internal.h"
#include "shim_files.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <unistd.h>

#define WATCH_MAX_DIRS 1024
#define WATCH_MAX_QUEUED 1024
#define WATCH_MASK                                                                                           \
    (IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |          \
     IN_DELETE_SELF | IN_MOVE_SELF)

typedef struct watched_dir {
    int wd;
    char rel[512]; /* "" for the watched directory itself */
} watched_dir;

struct abx_watch {
    shim *sh;
    unsigned uid;
    int ino;
    bool recursive;
    char root[2048];
    watched_dir dirs[WATCH_MAX_DIRS];
    int ndirs;
    json_t *queue; /* events not sent yet */
    bool ended;
};

static void add_dir(abx_watch *w, const char *rel, int depth);

/* Records wd as root/rel and, with recursive, watches what is under it. */
static void record(abx_watch *w, int wd, const char *rel, int depth)
{
    for (int i = 0; i < w->ndirs; i++)
        if (w->dirs[i].wd == wd)
            return; /* already watched (a directory reached twice) */
    w->dirs[w->ndirs].wd = wd;
    snprintf(w->dirs[w->ndirs].rel, sizeof w->dirs[0].rel, "%s", rel);
    w->ndirs++;
    if (!w->recursive)
        return;
    char path[2600];
    snprintf(path, sizeof path, "%s%s%s", w->root, rel[0] ? "/" : "", rel);
    json_t *entries = NULL;
    if (abx__fs_list(w->sh, w->uid, path, 1, &entries, NULL) < 0)
        return;
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!type || !name || strcmp(type, "FILE_TYPE_DIRECTORY") != 0 || json_object_get(e, "symlinkTarget"))
            continue;
        char child[512];
        int n = snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", name);
        if (n > 0 && (size_t)n < sizeof child)
            add_dir(w, child, depth + 1);
    }
    json_decref(entries);
}

/* Watches root/rel (and, recursively, what is under it). */
static void add_dir(abx_watch *w, const char *rel, int depth)
{
    if (w->ndirs >= WATCH_MAX_DIRS || depth > 32)
        return;
    char path[2600];
    snprintf(path, sizeof path, "%s/%s", w->root, rel);
    int wd = abx__fs_watch_dir(w->sh, w->uid, path, w->ino, WATCH_MASK, NULL);
    if (wd >= 0)
        record(w, wd, rel, depth);
}

int abx__watch_open(shim *sh, unsigned uid, const char *path, bool recursive, abx_watch **out,
                    abx_error **err)
{
    *out = NULL;
    abx_watch *w = calloc(1, sizeof *w);
    if (!w)
        return abx__error_set(err, ABX_ENOMEM, "watch");
    w->sh = sh;
    w->uid = uid;
    w->recursive = recursive;
    w->queue = json_array();
    w->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ino < 0) {
        int e = errno;
        abx__watch_close(w);
        return abx__error_errno(err, ABX_ELIMIT, e, "inotify");
    }
    if (abx__fs_absolute(uid, path, w->root, sizeof w->root) < 0) {
        abx__watch_close(w);
        return abx__error_set(err, ABX_EINVAL, "path: must be a non-empty path inside the sandbox");
    }
    size_t n = strlen(w->root);
    while (n > 1 && w->root[n - 1] == '/')
        w->root[--n] = '\0';
    /* the directory itself must be watchable: its error is the caller's */
    int wd = abx__fs_watch_dir(sh, uid, w->root, w->ino, WATCH_MASK, err);
    if (wd < 0) {
        abx__watch_close(w);
        return wd;
    }
    record(w, wd, "", 0);
    *out = w;
    return 0;
}

void abx__watch_close(abx_watch *w)
{
    if (!w)
        return;
    if (w->ino >= 0)
        close(w->ino);
    json_decref(w->queue);
    free(w);
}

static const char *event_type(uint32_t mask)
{
    if (mask & (IN_CREATE | IN_MOVED_TO))
        return "EVENT_TYPE_CREATE";
    if (mask & IN_DELETE)
        return "EVENT_TYPE_REMOVE";
    if (mask & IN_MOVED_FROM)
        return "EVENT_TYPE_RENAME";
    if (mask & (IN_MODIFY | IN_CLOSE_WRITE))
        return "EVENT_TYPE_WRITE";
    if (mask & IN_ATTRIB)
        return "EVENT_TYPE_CHMOD";
    return NULL;
}

static watched_dir *dir_of(abx_watch *w, int wd)
{
    for (int i = 0; i < w->ndirs; i++)
        if (w->dirs[i].wd == wd)
            return &w->dirs[i];
    return NULL;
}

/* One inotify event into the queue (or the stream's end). */
static void take_event(abx_watch *w, const struct inotify_event *ev)
{
    watched_dir *d = dir_of(w, ev->wd);
    if (!d)
        return;
    if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) && d->rel[0] == '\0') {
        w->ended = true; /* the watched directory is gone */
        return;
    }
    const char *type = event_type(ev->mask);
    if (!type || ev->len == 0)
        return;
    char rel[1100];
    snprintf(rel, sizeof rel, "%s%s%s", d->rel, d->rel[0] ? "/" : "", ev->name);
    if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && strlen(rel) < 512)
        add_dir(w, rel, 1);
    if (json_array_size(w->queue) < WATCH_MAX_QUEUED)
        json_array_append_new(w->queue, json_pack("{s:{s:s, s:s}}", "filesystem", "name", rel, "type", type));
}

static void read_events(abx_watch *w)
{
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(w->ino, buf, sizeof buf);
        if (n <= 0)
            return;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            take_event(w, ev);
            p += sizeof *ev + ev->len;
        }
    }
}

json_t *abx__watch_next(abx_watch *w, unsigned wait_ms, bool *ended)
{
    *ended = false;
    if (json_array_size(w->queue) == 0 && !w->ended) {
        struct pollfd p = {.fd = w->ino, .events = POLLIN};
        if (poll(&p, 1, (int)wait_ms) > 0)
            read_events(w);
    }
    if (json_array_size(w->queue) > 0) {
        json_t *ev = json_incref(json_array_get(w->queue, 0));
        json_array_remove(w->queue, 0);
        return ev;
    }
    *ended = w->ended;
    return NULL;
}

/* ---- watchers by id ------------------------------------------------------------------ */

#define WATCHERS_MAX 64
#define WATCHER_EVENTS_MAX 1024

typedef struct watcher_slot {
    char id[33];
    unsigned uid;
    abx_watch *w;
} watcher_slot;

struct abx_watchers {
    pthread_mutex_t mu;
    watcher_slot slots[WATCHERS_MAX];
};

static abx_watchers *registry(shim *sh)
{
    pthread_mutex_lock(&sh->mu);
    if (!sh->watchers && (sh->watchers = calloc(1, sizeof *sh->watchers)))
        pthread_mutex_init(&sh->watchers->mu, NULL);
    abx_watchers *r = sh->watchers;
    pthread_mutex_unlock(&sh->mu);
    return r;
}

static watcher_slot *slot_of(abx_watchers *r, const char *id, unsigned uid)
{
    for (size_t i = 0; id && i < WATCHERS_MAX; i++)
        if (r->slots[i].w && strcmp(r->slots[i].id, id) == 0 && r->slots[i].uid == uid)
            return &r->slots[i];
    return NULL;
}

int abx__watchers_create(shim *sh, unsigned uid, const char *path, bool recursive, char id[33],
                         abx_error **err)
{
    abx_watchers *r = registry(sh);
    if (!r)
        return abx__error_set(err, ABX_ENOMEM, "watcher");
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return abx__error_set(err, ABX_ESYS, "no randomness for the watcher id");
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(id + i * 2, 3, "%02x", raw[i]);
    pthread_mutex_lock(&r->mu);
    watcher_slot *free_slot = NULL;
    for (size_t i = 0; i < WATCHERS_MAX && !free_slot; i++)
        if (!r->slots[i].w)
            free_slot = &r->slots[i];
    int rc = free_slot ? abx__watch_open(sh, uid, path, recursive, &free_slot->w, err)
                       : abx__error_set(err, ABX_ELIMIT, "at most %d watchers per sandbox", WATCHERS_MAX);
    if (rc == 0) {
        memcpy(free_slot->id, id, 33);
        free_slot->uid = uid;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int abx__watchers_events(shim *sh, unsigned uid, const char *id, json_t **events, abx_error **err)
{
    abx_watchers *r = registry(sh);
    if (!r)
        return abx__error_set(err, ABX_ENOMEM, "watcher");
    pthread_mutex_lock(&r->mu);
    watcher_slot *slot = slot_of(r, id, uid);
    int rc = slot ? 0 : abx__error_set(err, ABX_ENOENT, "no such watcher");
    *events = slot ? json_array() : NULL;
    bool ended = false;
    for (size_t n = 0; slot && n < WATCHER_EVENTS_MAX; n++) {
        json_t *ev = abx__watch_next(slot->w, 0, &ended);
        if (!ev)
            break;
        json_t *fs = json_object_get(ev, "filesystem");
        if (fs)
            json_array_append(*events, fs);
        json_decref(ev);
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int abx__watchers_remove(shim *sh, unsigned uid, const char *id, abx_error **err)
{
    abx_watchers *r = registry(sh);
    if (!r)
        return abx__error_set(err, ABX_ENOMEM, "watcher");
    pthread_mutex_lock(&r->mu);
    watcher_slot *slot = slot_of(r, id, uid);
    if (slot) {
        abx__watch_close(slot->w);
        memset(slot, 0, sizeof *slot);
    }
    pthread_mutex_unlock(&r->mu);
    return slot ? 0 : abx__error_set(err, ABX_ENOENT, "no such watcher");
}
