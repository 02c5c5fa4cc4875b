/* shim_watch.h: WatchDir streams (runtime/shim_watch.c). */
#ifndef ABX_SHIM_WATCH_H
#define ABX_SHIM_WATCH_H

#include "shim.h"

typedef struct abx_watch abx_watch;

/* Starts watching path (and with recursive, the directories under it) as
 * uid; *out is the caller's (abx__watch_close). */
int abx__watch_open(shim *sh, unsigned uid, const char *path, bool recursive, abx_watch **out,
                    abx_error **err);
void abx__watch_close(abx_watch *w);
/* The next event ({filesystem: {name, type}}, a new reference),
 * waiting up to wait_ms; NULL when there is none yet, with *ended set
 * when the watched directory is gone. */
json_t *abx__watch_next(abx_watch *w, unsigned wait_ms, bool *ended);

/* The non-streaming watchers (CreateWatcher, GetWatcherEvents,
 * RemoveWatcher): id (32 hex + NUL) names a new one; events drains what
 * came since the last call ([{name, type}], the caller's). */
int abx__watchers_create(shim *sh, unsigned uid, const char *path, bool recursive, char id[33],
                         abx_error **err);
int abx__watchers_events(shim *sh, unsigned uid, const char *id, json_t **events, abx_error **err);
int abx__watchers_remove(shim *sh, unsigned uid, const char *id, abx_error **err);

#endif
