/* bench_exec.c: times whole commands, interleaved, and reports medians.
 *
 * Usage: bench-exec RUNS WARMUP LABEL -- CMD ARGS... [::: LABEL -- CMD ARGS...]...
 *
 * Runs every command RUNS times (after WARMUP untimed runs), interleaving the
 * commands so that machine noise hits them alike, and prints for each:
 * median, p10, p90 and mean wall time in ms, and the peak RSS in KiB of the
 * process and the descendants it reaped (wait4's ru_maxrss). The first
 * command is the reference: the last column is each median over its median.
 * With BENCH_TSV=1 prints tab-separated values instead of a table.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#define MAX_CMDS 8

typedef struct bench_cmd {
    const char *label;
    char **argv;
    double *ms;
    long max_rss_kb;
    int failures;
} bench_cmd;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double run_once(bench_cmd *c)
{
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        execvp(c->argv[0], c->argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double t = now_ms() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        c->failures++;
    if (ru.ru_maxrss > c->max_rss_kb)
        c->max_rss_kb = ru.ru_maxrss;
    return t;
}

static double pct(const double *sorted, int n, double p)
{
    int i = (int)(p * (n - 1) + 0.5);
    return sorted[i];
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: bench-exec RUNS WARMUP LABEL -- CMD... [::: LABEL -- CMD...]\n");
        return 2;
    }
    int runs = (int)strtol(argv[1], NULL, 10), warmup = (int)strtol(argv[2], NULL, 10);
    bench_cmd cmds[MAX_CMDS];
    int ncmds = 0;
    for (int i = 3; i < argc && ncmds < MAX_CMDS;) {
        bench_cmd *c = &cmds[ncmds++];
        memset(c, 0, sizeof *c);
        c->label = argv[i++];
        if (i < argc && strcmp(argv[i], "--") == 0)
            i++;
        c->argv = &argv[i];
        while (i < argc && strcmp(argv[i], ":::") != 0)
            i++;
        if (i < argc)
            argv[i++] = NULL;
        c->ms = calloc((size_t)runs, sizeof(double));
    }
    for (int w = 0; w < warmup; w++)
        for (int k = 0; k < ncmds; k++)
            run_once(&cmds[k]);
    for (int k = 0; k < ncmds; k++)
        cmds[k].failures = 0;
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < ncmds; k++)
            cmds[k].ms[r] = run_once(&cmds[k]);
    double ref = 0;
    bool tsv = getenv("BENCH_TSV") != NULL;
    if (!tsv)
        printf("| command | runs | median ms | p10 ms | p90 ms | mean ms | peak RSS KiB | ratio to %s |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- |\n",
               cmds[0].label);
    for (int k = 0; k < ncmds; k++) {
        bench_cmd *c = &cmds[k];
        double sum = 0;
        for (int r = 0; r < runs; r++)
            sum += c->ms[r];
        qsort(c->ms, (size_t)runs, sizeof(double), cmp_double);
        double med = pct(c->ms, runs, 0.5);
        if (k == 0)
            ref = med;
        if (tsv)
            printf("%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%ld\t%.2f\t%d\n", c->label, runs, med,
                   pct(c->ms, runs, 0.1), pct(c->ms, runs, 0.9), sum / runs, c->max_rss_kb, med / ref,
                   c->failures);
        else
            printf("| %s | %d | %.2f | %.2f | %.2f | %.2f | %ld | %.2f |%s\n", c->label, runs, med,
                   pct(c->ms, runs, 0.1), pct(c->ms, runs, 0.9), sum / runs, c->max_rss_kb, med / ref,
                   c->failures ? " FAILURES" : "");
    }
    return 0;
}
