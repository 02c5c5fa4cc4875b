/* cmd_top.c: `abx top`: the sandboxes' use of the host, live: the figures
 * GET /metrics serves (abx_sandbox_get_stats for each listed sandbox),
 * CPU as a share of a core between two looks, redrawn every interval
 * until interrupted, or one frame (--once, --json). */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOP_MAX 4096 /* sandboxes shown */

const char cmd_top_help[] = "Usage: abx top [--interval S] [--once] [--all] [--json]\n"
                            "\n"
                            "Shows the live sandboxes' use of the host, redrawn every interval until\n"
                            "interrupted: CPU (percent of one core since the last look), memory now\n"
                            "and its limit, processes, network sent and received, packets the\n"
                            "network policy refused, and the writable layer's disk use. The figures\n"
                            "are GET /metrics's (docs/metrics.md). A user without root sees their\n"
                            "own sandboxes; root every one.\n"
                            "\n"
                            "  --interval S  seconds between looks, 1-60 (default 2)\n"
                            "  --once        one look (CPU over its first second) and exit\n"
                            "  --all         every user's (root's, and through the service those of\n"
                            "                [service] admin_groups)\n"
                            "  --json        one look as a JSON array (implies --once)\n";

typedef struct top_row {
    char id[96], template_id[64], status[16];
    bool have;
    abx_sandbox_stats st;
} top_row;

/* Every live sandbox's figures now, into rows (at most TOP_MAX); their count. */
static size_t look(abx_client *c, top_row *rows)
{
    size_t n = 0;
    for (unsigned offset = 0; n < TOP_MAX; offset += ABX_LIST_LIMIT_MAX) {
        abx_sandbox_info *items = NULL;
        size_t got = 0;
        if (abx_list(c, NULL, ABX_LIST_LIMIT_MAX, offset, &items, &got, NULL) < 0)
            break;
        for (size_t i = 0; i < got && n < TOP_MAX; i++, n++) {
            top_row *r = &rows[n];
            memset(r, 0, sizeof *r);
            snprintf(r->id, sizeof r->id, "%s", items[i].sandbox_id);
            snprintf(r->template_id, sizeof r->template_id, "%s", items[i].template_id);
            snprintf(r->status, sizeof r->status, "%s", items[i].status);
            abx_sandbox *sb = NULL;
            if (abx_sandbox_connect(c, items[i].sandbox_id, &sb, NULL) == 0)
                r->have = abx_sandbox_get_stats(sb, &r->st, NULL) == 0;
            abx_sandbox_free(sb);
        }
        abx_sandbox_info_list_free(items, got);
        if (got < ABX_LIST_LIMIT_MAX)
            break;
    }
    return n;
}

/* The CPU a row's sandbox used since the same sandbox's last look, as a
 * percentage of one core over seconds; -1 when there is no last look. */
static double cpu_pct(const top_row *now, const top_row *before, size_t nbefore, double seconds)
{
    for (size_t i = 0; i < nbefore; i++)
        if (strcmp(before[i].id, now->id) == 0 && before[i].have && now->have && seconds > 0 &&
            now->st.cpu_usec >= before[i].st.cpu_usec)
            return (double)(now->st.cpu_usec - before[i].st.cpu_usec) / 1e4 / seconds;
    return -1;
}

/* 1536 -> "1.5K", in out. */
static const char *human(unsigned long long v, char *out, size_t len)
{
    static const char units[] = "BKMGTP";
    double d = (double)v;
    int u = 0;
    while (d >= 1024 && u < 5) {
        d /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f%c" : "%.0f%c", d, units[u]);
    return out;
}

static void print_frame(const top_row *rows, size_t n, const top_row *before, size_t nbefore, double seconds)
{
    printf("%-28s %-14s %-8s %6s %15s %5s %17s %8s %8s\n", "SANDBOX", "TEMPLATE", "STATUS", "CPU%",
           "MEM/LIMIT", "PIDS", "NET TX/RX", "REFUSED", "DISK");
    for (size_t i = 0; i < n; i++) {
        const top_row *r = &rows[i];
        char a[16], b[16], mem[40] = "-", net[40] = "-", refused[24] = "-", disk[16] = "-", cpu[16] = "-",
                           pids[16] = "-";
        if (r->have) {
            double pct = cpu_pct(r, before, nbefore, seconds);
            if (pct >= 0)
                snprintf(cpu, sizeof cpu, "%.1f", pct);
            snprintf(mem, sizeof mem, "%s/%s", human(r->st.mem_bytes, a, sizeof a),
                     r->st.mem_limit_bytes ? human(r->st.mem_limit_bytes, b, sizeof b) : "-");
            snprintf(pids, sizeof pids, "%llu", r->st.pids);
            human(r->st.disk_used_bytes, disk, sizeof disk);
            if (r->st.has_network) {
                snprintf(net, sizeof net, "%s/%s", human(r->st.net_out_bytes, a, sizeof a),
                         human(r->st.net_in_bytes, b, sizeof b));
                snprintf(refused, sizeof refused, "%llu", r->st.net_refused_packets);
            }
        }
        printf("%-28s %-14.14s %-8s %6s %15s %5s %17s %8s %8s\n", r->id, r->template_id, r->status, cpu, mem,
               pids, net, refused, disk);
    }
    if (n == 0)
        printf("(no live sandboxes)\n");
}

static json_t *frame_json(const top_row *rows, size_t n, const top_row *before, size_t nbefore,
                          double seconds)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        const top_row *r = &rows[i];
        json_t *o = json_pack("{s:s, s:s, s:s}", "sandbox_id", r->id, "template", r->template_id, "status",
                              r->status);
        if (r->have) {
            double pct = cpu_pct(r, before, nbefore, seconds);
            json_object_set_new(o, "cpu_pct", pct >= 0 ? json_real(pct) : json_null());
            json_object_set_new(o, "cpu_seconds", json_real((double)r->st.cpu_usec / 1e6));
            json_object_set_new(o, "memory_bytes", json_integer((json_int_t)r->st.mem_bytes));
            json_object_set_new(o, "memory_peak_bytes", json_integer((json_int_t)r->st.mem_peak_bytes));
            json_object_set_new(o, "memory_limit_bytes", json_integer((json_int_t)r->st.mem_limit_bytes));
            json_object_set_new(o, "pids", json_integer((json_int_t)r->st.pids));
            json_object_set_new(o, "disk_used_bytes", json_integer((json_int_t)r->st.disk_used_bytes));
            if (r->st.has_network)
                json_object_set_new(o, "network",
                                    json_pack("{s:I, s:I, s:I, s:I, s:I}", "transmit_bytes",
                                              (json_int_t)r->st.net_out_bytes, "transmit_packets",
                                              (json_int_t)r->st.net_out_packets, "receive_bytes",
                                              (json_int_t)r->st.net_in_bytes, "receive_packets",
                                              (json_int_t)r->st.net_in_packets, "refused_packets",
                                              (json_int_t)r->st.net_refused_packets));
        }
        json_array_append_new(arr, o);
    }
    return arr;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int cmd_top(cli_ctx *ctx, int argc, char **argv)
{
    const char *pos[CLI_MAX_POSITIONAL];
    size_t npos = 0;
    unsigned interval = 2;
    bool once = false;
    const cli_flag flags[] = {
        {"--interval", CLI_UINT, &interval, 1, 60, NULL, 0, NULL},
        {"--once", CLI_BOOL, &once, 0, 0, NULL, 0, NULL},
        {"--all", CLI_BOOL, &ctx->all_tenants, 0, 0, NULL, 0, NULL},
    };
    int rc =
        cli_parse(ctx, "top", cmd_top_help, argc, argv, flags, sizeof flags / sizeof flags[0], pos, &npos);
    if (rc != 0)
        return cli_parse_exit(rc);
    if (npos)
        return cli_fail(ctx, ABX_EUSAGE, "abx top takes no arguments");
    once = once || ctx->json;
    int status = 0;
    abx_client *c = cli_client(ctx, &status);
    if (!c)
        return status;
    top_row *rows = calloc(TOP_MAX, sizeof *rows), *before = calloc(TOP_MAX, sizeof *rows);
    if (!rows || !before) {
        free(rows);
        free(before);
        abx_client_free(c);
        return cli_fail(ctx, ABX_ENOMEM, "abx top");
    }
    bool tty = isatty(STDOUT_FILENO);
    size_t nbefore = look(c, before); /* the CPU of the first frame: over its first second */
    double t_before = now_s();
    sleep(1);
    for (;;) {
        size_t n = look(c, rows);
        double t = now_s();
        if (ctx->json) {
            cli_print_json(frame_json(rows, n, before, nbefore, t - t_before));
        } else {
            if (tty && !once)
                printf("\033[H\033[2J");
            print_frame(rows, n, before, nbefore, t - t_before);
        }
        if (once || fflush(stdout) != 0)
            break;
        top_row *swap = before;
        before = rows;
        rows = swap;
        nbefore = n;
        t_before = t;
        sleep(interval);
    }
    free(rows);
    free(before);
    abx_client_free(c);
    return 0;
}
