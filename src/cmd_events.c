/* cmd_events.c: `abx events`: the host's event log (abx_events_read),
 * printed as a table or as JSON lines, and followed with --follow. */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FOLLOW_POLL_MS 200
#define PAGE 500

const char cmd_events_help[] =
    "Usage: abx events [--follow] [--json] [--after SEQ] [--sandbox ID] [--type TYPE] [--all]\n"
    "\n"
    "Prints what happened to sandboxes, oldest first: create, kill, timeout,\n"
    "pause, resume, network, denied (a packet the network policy refused:\n"
    "its destination), oom, supervisor_died, quota_refused. Each event\n"
    "has a number (seq), a time, its type, the sandbox and tenant it concerns,\n"
    "and its details. A user sees the events of their own sandboxes; root\n"
    "sees every one's. The log is kept bounded in ABX_HOME/events (the\n"
    "oldest go first: at most 2 MiB).\n"
    "\n"
    "  --follow       then print new events as they come, until interrupted\n"
    "  --json         one JSON object per line (JSON lines), as the log keeps them\n"
    "  --after SEQ    only the events numbered over SEQ (resume where you stopped)\n"
    "  --sandbox ID   only this sandbox's\n"
    "  --type TYPE    only events of this type\n"
    "  --all          every user's (root's, and through the service those of\n"
    "                 [service] admin_groups)\n";

typedef struct events_filter {
    const char *sandbox, *type;
} events_filter;

static bool wanted(const events_filter *f, json_t *ev)
{
    const char *id = json_string_value(json_object_get(ev, "sandbox_id"));
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (f->type && (!type || strcmp(f->type, type) != 0))
        return false;
    if (!f->sandbox)
        return true;
    const char *bare = id && strchr(id, ':') ? strchr(id, ':') + 1 : id;
    return id && (strcmp(f->sandbox, id) == 0 || strcmp(f->sandbox, bare) == 0);
}

/* The event's own details (what is not seq, time, type, sandbox_id,
 * tenant) as "k=v k=v". */
static void details(json_t *ev, char *out, size_t len)
{
    static const char *common[] = {"seq", "time", "type", "sandbox_id", "tenant", NULL};
    const char *key;
    json_t *v;
    size_t used = 0;
    out[0] = '\0';
    json_object_foreach(ev, key, v)
    {
        bool skip = false;
        for (size_t i = 0; common[i] && !skip; i++)
            skip = strcmp(key, common[i]) == 0;
        if (skip || used >= len)
            continue;
        char *text =
            json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        int n = snprintf(out + used, len - used, "%s%s=%s", used ? " " : "", key, text ? text : "?");
        free(text);
        used = n < 0 ? len : used + (size_t)n;
    }
}

static void print_event(cli_ctx *ctx, json_t *ev)
{
    if (ctx->json) {
        char *line = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (line)
            printf("%s\n", line);
        free(line);
        return;
    }
    char more[600];
    details(ev, more, sizeof more);
    const char *id = json_string_value(json_object_get(ev, "sandbox_id"));
    printf("%-7lld %-24s %-16s %-28s %s\n", (long long)json_integer_value(json_object_get(ev, "seq")),
           json_string_value(json_object_get(ev, "time")) ?: "",
           json_string_value(json_object_get(ev, "type")) ?: "", id ? id : "-", more);
}

/* Prints the events over *after (one page); *after moves on. 0 or the
 * error's exit status; *got: how many were read. */
static int print_page(cli_ctx *ctx, abx_client *c, const events_filter *f, unsigned long long *after,
                      size_t *got)
{
    char *text = NULL;
    abx_error *err = NULL;
    int rc = abx_events_read(c, *after, PAGE, &text, after, &err);
    if (rc < 0)
        return cli_fail_error(ctx, err, rc);
    json_t *arr = json_loads(text, 0, NULL);
    abx_free(text);
    size_t i;
    json_t *ev;
    *got = json_array_size(arr);
    json_array_foreach(arr, i, ev) if (wanted(f, ev)) print_event(ctx, ev);
    json_decref(arr);
    return fflush(stdout) == 0 ? 0 : CLI_EXIT_ERROR; /* a reader that went away ends a follow */
}

int cmd_events(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL], *after_text = NULL;
    size_t npos = 0;
    bool follow = false;
    events_filter f = {NULL, NULL};
    const cli_flag flags[] = {
        {"--follow", CLI_BOOL, &follow, 0, 0, NULL, 0, NULL},
        {"--after", CLI_STRING, &after_text, 0, 0, NULL, 0, NULL},
        {"--sandbox", CLI_STRING, &f.sandbox, 0, 0, NULL, 0, NULL},
        {"--type", CLI_STRING, &f.type, 0, 0, NULL, 0, NULL},
        {"--all", CLI_BOOL, &ctx->all_tenants, 0, 0, NULL, 0, NULL},
    };
    int rc = cli_parse(ctx, "events", cmd_events_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos,
                       &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos)
        return cli_fail(ctx, ABX_EUSAGE, "abx events takes no arguments (--sandbox ID for one sandbox's)");
    unsigned long long after = 0;
    if (after_text) {
        char *end = NULL;
        after = strtoull(after_text, &end, 10);
        if (!*after_text || *end || after_text[0] == '-')
            return cli_fail(ctx, ABX_EUSAGE, "--after: expected an event number (seq)");
    }
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    if (!ctx->json)
        printf("%-7s %-24s %-16s %-28s %s\n", "SEQ", "TIME", "TYPE", "SANDBOX", "DETAILS");
    size_t got = 0;
    do /* every page there is now */
        rc = print_page(ctx, c, &f, &after, &got);
    while (rc == 0 && got == PAGE);
    while (rc == 0 && follow) {
        struct timespec ts = {0, FOLLOW_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
        rc = print_page(ctx, c, &f, &after, &got);
    }
    abx_client_free(c);
    return rc;
}
