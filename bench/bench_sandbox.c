/* bench_sandbox.c: issue 3's benchmarks, through libabx's public API.
 *
 *   create     create-to-ready latency (median of N creates; each killed after),
 *              interleaved with bubblewrap's start (the floor)
 *   exec       `true` round trip in a live sandbox vs a plain host fork+exec of /bin/true
 *   idle       host memory (PSS and RSS of shim + init) per idle sandbox with N alive,
 *              and of N idle bubblewrap sandboxes (the floor)
 *   concurrent N creates started at once from N threads: wall time
 *   transfer   upload + download of M MiB: throughput and this process's peak RSS
 *
 * Usage: bench-sandbox WHAT [N]. Prints a Markdown table row per figure.
 */
#include "abx/abx.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

static void die(const char *what, abx_error *err)
{
    fprintf(stderr, "bench-sandbox: %s: %s %s\n", what, abx_err_name(abx_error_code(err)),
            abx_error_message(err));
    exit(1);
}

static abx_sandbox *create(abx_client *c, unsigned memory_mb)
{
    abx_create_options o = {.timeout_s = 600, .memory_mb = memory_mb};
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    if (abx_sandbox_create(c, &o, &s, &err) < 0)
        die("create", err);
    return s;
}

static void kill_free(abx_sandbox *s)
{
    abx_sandbox_kill(s, NULL);
    abx_sandbox_free(s);
}

/* bubblewrap --unshare-all running /bin/true (or sleeping, for idle): the
 * floor the issue-29 figures are measured against */
static const char *const bwrap_true[] = {
    "bwrap",     "--ro-bind", "/usr", "/usr",      "--symlink", "usr/bin",       "/bin",
    "--symlink", "usr/lib",   "/lib", "--symlink", "usr/lib64", "/lib64",        "--proc",
    "/proc",     "--dev",     "/dev", "--tmpfs",   "/tmp",      "--unshare-all", "--die-with-parent",
    "/bin/true", NULL};

static bool have_bwrap(void)
{
    return access("/usr/bin/bwrap", X_OK) == 0;
}

/* Runs argv to its end; its wall time in ms (-1: it failed). */
static double run_timed(const char *const *argv)
{
    double t0 = now_ms();
    pid_t p = fork();
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? now_ms() - t0 : -1;
}

/* create-to-ready through libabx, interleaved with bubblewrap's start
 * (the floor) when it is installed */
static void bench_create(abx_client *c, int n)
{
    double *t = calloc((size_t)n, sizeof *t), *f = calloc((size_t)n, sizeof *f);
    bool floor = have_bwrap();
    for (int i = 0; i < n; i++) {
        if (floor)
            f[i] = run_timed(bwrap_true);
        double t0 = now_ms();
        abx_sandbox *s = create(c, 0);
        t[i] = now_ms() - t0;
        kill_free(s);
    }
    double med = median(t, n); /* sorts t */
    if (floor) {
        double mf = median(f, n);
        printf("| create-to-ready (libabx) | %d | median %.2f ms | p90 %.2f ms | %.2fx bubblewrap (%.2f ms; "
               "goal "
               "<= 1.3x) |\n",
               n, med, t[(int)(n * 0.9)], med / mf, mf);
    } else {
        printf("| create-to-ready (libabx) | %d | median %.2f ms | p90 %.2f ms | (no bubblewrap here) |\n", n,
               med, t[(int)(n * 0.9)]);
    }
    free(t);
    free(f);
}

static double host_fork_exec_true(void)
{
    double t0 = now_ms();
    pid_t p = fork();
    if (p == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(p, NULL, 0);
    return now_ms() - t0;
}

static void bench_exec(abx_client *c, int n)
{
    abx_sandbox *s = create(c, 0);
    const char *argv[] = {"/bin/true", NULL};
    double *t = calloc((size_t)n, sizeof *t), *h = calloc((size_t)n, sizeof *h);
    for (int i = 0; i < n + 20; i++) { /* 20 warm-up rounds */
        abx_exec_result r;
        abx_error *err = NULL;
        double t0 = now_ms();
        if (abx_sandbox_exec_argv(s, argv, NULL, &r, &err) < 0 || r.exit_code != 0)
            die("exec", err);
        double dt = now_ms() - t0;
        abx_exec_result_clear(&r);
        double dh = host_fork_exec_true();
        if (i >= 20) {
            t[i - 20] = dt;
            h[i - 20] = dh;
        }
    }
    double mt = median(t, n), mh = median(h, n);
    printf("| exec `true` via libabx | %d | median %.2f ms | host fork+exec %.2f ms | ratio %.2f (targets <= "
           "2 ms, <= 4x) |\n",
           n, mt, mh, mt / mh);
    kill_free(s);
    free(t);
    free(h);
}

/* Sums a field of /proc/<pid>/smaps_rollup in KiB. */
static long smaps_kb(int pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    FILE *f = fopen(path, "r");
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0)
            kb = strtol(line + strlen(field), NULL, 10);
    if (f)
        fclose(f);
    return kb;
}

/* The pids of abx-shim processes: the shims and, forked from them, the
 * sandboxes' inits (which keep the name). */
static int sandbox_pids(int *pids, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < cap) {
        int pid = (int)strtol(e->d_name, NULL, 10);
        if (pid <= 0)
            continue;
        char path[64], comm[64] = "";
        snprintf(path, sizeof path, "/proc/%d/comm", pid);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = 0;
            fclose(f);
        }
        if (strncmp(comm, "abx-shim", 8) == 0)
            pids[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

/* PSS and RSS (KiB) summed over pid and its descendants' processes */
static void tree_kb(int pid, long *pss, long *rss)
{
    *pss += smaps_kb(pid, "Pss:");
    *rss += smaps_kb(pid, "Rss:");
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(line, sizeof line, f)) {
        char *save = NULL;
        for (char *tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
            tree_kb((int)strtol(tok, NULL, 10), pss, rss);
    }
    fclose(f);
}

/* n idle bubblewrap sandboxes (sleeping), their PSS per sandbox: the floor */
static double bwrap_idle_pss(int n)
{
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    const char *argv[64];
    int k = 0;
    for (; bwrap_true[k + 1]; k++) /* all but /bin/true */
        argv[k] = bwrap_true[k];
    argv[k++] = "/bin/sleep";
    argv[k++] = "600";
    argv[k] = NULL;
    for (int i = 0; i < n; i++)
        if ((pids[i] = fork()) == 0) {
            execvp(argv[0], (char *const *)argv);
            _exit(127);
        }
    sleep(1);
    long pss = 0, rss = 0;
    for (int i = 0; i < n; i++)
        tree_kb(pids[i], &pss, &rss);
    for (int i = 0; i < n; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }
    free(pids);
    return (double)pss / n;
}

static void bench_idle(abx_client *c, int n)
{
    abx_sandbox **s = calloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++)
        s[i] = create(c, 0);
    sleep(1);
    int pids[4096];
    int np = sandbox_pids(pids, 4096);
    long pss = 0, rss = 0;
    for (int i = 0; i < np; i++) {
        pss += smaps_kb(pids[i], "Pss:");
        rss += smaps_kb(pids[i], "Rss:");
    }
    for (int i = 0; i < n; i++)
        kill_free(s[i]);
    free(s);
    /* every abx-shim process on the host: an idle sandbox is two (shim and init) */
    double per = (double)pss / (np / 2 > n ? np / 2 : n);
    if (have_bwrap()) {
        double floor = bwrap_idle_pss(n);
        printf("| idle sandboxes alive | %d | %d processes | PSS %.0f KiB per sandbox (%.2fx bubblewrap's "
               "tree, %.0f "
               "KiB) | RSS %.0f KiB per sandbox | goal <= 1024 KiB |\n",
               n, np, per, per / floor, floor, (double)rss / n);
    } else {
        printf("| idle sandboxes alive | %d | %d processes | PSS %.0f KiB per sandbox | RSS %.0f KiB per "
               "sandbox "
               "| goal <= 1024 KiB |\n",
               n, np, per, (double)rss / n);
    }
}

typedef struct create_job {
    abx_client *c;
    abx_sandbox *s;
} create_job;

static void *create_thread(void *arg)
{
    create_job *j = arg;
    j->s = create(j->c, 0);
    return NULL;
}

static void bench_concurrent(abx_client *c, int n)
{
    create_job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        jobs[i].c = c;
        pthread_create(&th[i], NULL, create_thread, &jobs[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double wall = now_ms() - t0;
    printf("| concurrent creates | %d | wall %.0f ms | target <= 3000 ms |\n", n, wall);
    for (int i = 0; i < n; i++)
        kill_free(jobs[i].s);
    free(jobs);
    free(th);
}

static void bench_transfer(abx_client *c, int mib)
{
    abx_sandbox *s = create(c, (unsigned)mib * 4);
    char path[] = "/tmp/abx-bench-XXXXXX";
    int fd = mkstemp(path);
    static char block[1 << 20];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)(i * 31);
    for (int i = 0; i < mib; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            die("write", NULL);
    lseek(fd, 0, SEEK_SET);
    abx_error *err = NULL;
    unsigned long long n = 0;
    double t0 = now_ms();
    if (abx_sandbox_write_file_from_fd(s, "/tmp/big.bin", fd, NULL, &n, &err) < 0)
        die("upload", err);
    double up = now_ms() - t0;
    int out = open("/dev/null", O_WRONLY);
    t0 = now_ms();
    if (abx_sandbox_read_file_to_fd(s, "/tmp/big.bin", out, NULL, &n, &err) < 0)
        die("download", err);
    double down = now_ms() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double mb = (double)mib * 1048576.0 / 1e6;
    printf("| %d MiB upload + download | upload %.0f MB/s | download %.0f MB/s | both %.0f MB/s | peak RSS "
           "%ld KiB | targets >= 300 MB/s, <= 32768 KiB |\n",
           mib, mb / (up / 1e3), mb / (down / 1e3), 2 * mb / ((up + down) / 1e3), ru.ru_maxrss);
    close(out);
    close(fd);
    unlink(path);
    kill_free(s);
}

/* abx_sandbox_exec(s, "true") with its output kept: the call the Python
 * SDK's commands.run("true") makes (bench/bench_python.py compares them). */
static void bench_shell(abx_client *c, int n)
{
    abx_sandbox *s = create(c, 0);
    double *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n + 20; i++) {
        abx_exec_options o = {.keep_output = true, .timeout_s = 60, .stdin_fd = -1, .pty_fd = -1};
        abx_exec_result r;
        abx_error *err = NULL;
        double t0 = now_ms();
        if (abx_sandbox_exec(s, "true", &o, &r, &err) < 0 || r.exit_code != 0)
            die("exec", err);
        double dt = now_ms() - t0;
        abx_exec_result_clear(&r);
        if (i >= 20)
            t[i - 20] = dt;
    }
    printf("| exec \"true\" through the shell via libabx (C) | %d | median %.3f ms |\n", n, median(t, n));
    free(t);
    kill_free(s);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-sandbox create|exec|shell|idle|concurrent|transfer [N]\n");
        return 2;
    }
    int n = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 0;
    abx_client *c = NULL;
    abx_error *err = NULL;
    if (abx_client_new(NULL, &c, &err) < 0)
        die("client", err);
    if (strcmp(argv[1], "create") == 0)
        bench_create(c, n ? n : 50);
    else if (strcmp(argv[1], "exec") == 0)
        bench_exec(c, n ? n : 200);
    else if (strcmp(argv[1], "shell") == 0)
        bench_shell(c, n ? n : 200);
    else if (strcmp(argv[1], "idle") == 0)
        bench_idle(c, n ? n : 100);
    else if (strcmp(argv[1], "concurrent") == 0)
        bench_concurrent(c, n ? n : 100);
    else if (strcmp(argv[1], "transfer") == 0)
        bench_transfer(c, n ? n : 256);
    abx_client_free(c);
    return 0;
}
