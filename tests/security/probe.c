/* probe.c: escape attempts, run inside abx sandboxes by tests/security/.
 *
 * Usage: abx-probe ATTACK [ARG...]
 *
 * Each attack really tries to break out (mount, unshare, ptrace, keyctl,
 * TIOCSTI, foreign syscall ABIs, ...). It prints one line and exits:
 *   0  "BLOCKED: ..."  every attempt failed as the sandbox intends
 *   1  "ESCAPED: ..."  an attempt succeeded
 *   3  "REFUSED: ..."  this process is not inside an abx sandbox
 *   4  "USAGE: ..."
 * Because an attack that works changes whatever machine it runs on, the probe
 * first checks that it is inside a sandbox (a non-initial user namespace,
 * seccomp filtering, no_new_privs, and a sandbox-id hostname) and refuses to
 * run any attack otherwise.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif

static int failures;
static char detail[4096];

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    size_t len = strlen(detail);
    if (len + 2 >= sizeof detail)
        return;
    if (len)
        detail[len++] = ';', detail[len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail + len, sizeof detail - len, fmt, ap);
    va_end(ap);
}

/* Records an attempt: `worked` means the attack got through. */
static void attempt(const char *what, bool worked, int err)
{
    if (worked) {
        failures++;
        note("%s SUCCEEDED", what);
    } else {
        note("%s: %s", what, err ? strerror(err) : "refused");
    }
}

#define TRY(what, expr)                                                                                      \
    do {                                                                                                     \
        errno = 0;                                                                                           \
        long try_rc_ = (long)(expr);                                                                         \
        attempt(what, try_rc_ >= 0, errno);                                                                  \
    } while (0)

/* ---- the guard ---------------------------------------------------------- */

static bool status_field_is(const char *field, const char *value)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return false;
    char line[256];
    bool ok = false;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            char *v = line + n + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            ok = strncmp(v, value, strlen(value)) == 0;
        }
    fclose(f);
    return ok;
}

static bool inside_sandbox(const char **why)
{
    char map[256] = "";
    FILE *f = fopen("/proc/self/uid_map", "r");
    if (f) {
        if (!fgets(map, sizeof map, f))
            map[0] = '\0';
        fclose(f);
    }
    unsigned a = 0, b = 0, c = 0;
    if (sscanf(map, "%u %u %u", &a, &b, &c) != 3 || (a == 0 && b == 0 && c == 4294967295u)) {
        *why = "the initial user namespace";
        return false;
    }
    if (!status_field_is("Seccomp", "2")) {
        *why = "no seccomp filter";
        return false;
    }
    if (!status_field_is("NoNewPrivs", "1")) {
        *why = "no_new_privs is not set";
        return false;
    }
    char host[128] = "";
    gethostname(host, sizeof host);
    if (host[0] != 'i' || strlen(host) != 21) {
        *why = "the hostname is not a sandbox id";
        return false;
    }
    return true;
}

/* ---- helpers ------------------------------------------------------------ */

/* Runs fn in a child; returns its wait status. */
static int in_child(void (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static bool path_exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* ---- attacks ------------------------------------------------------------ */

static void a_read_host_file(int argc, char **argv)
{
    const char *marker = argc > 0 ? argv[0] : "/root/.bash_history";
    char p[4096];
    int fd = open(marker, O_RDONLY);
    attempt("open marker", fd >= 0, errno);
    snprintf(p, sizeof p, "/proc/1/root%s", marker);
    fd = open(p, O_RDONLY);
    attempt("open via /proc/1/root", fd >= 0, errno);
    snprintf(p, sizeof p, "/app/../../../../../../..%s", marker);
    fd = open(p, O_RDONLY);
    attempt("open via ..", fd >= 0, errno);
    DIR *d = opendir("/home");
    int entries = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "user"))
            entries++;
    if (d)
        closedir(d);
    attempt("see host home directories", entries > 0, 0);
    attempt("see /root/.ssh", path_exists("/root/.ssh"), ENOENT);
}

static void a_write_base(int argc, char **argv)
{
    const char *name = argc > 0 ? argv[0] : "abx-escape";
    char p[512];
    const char *dirs[] = {"/usr", "/usr/bin", "/usr/local/bin", "/usr/lib", "/etc/ssl"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dirs[i], name);
        int fd = open(p, O_WRONLY | O_CREAT, 0644);
        attempt(p, fd >= 0, errno);
    }
    TRY("open /usr/bin/env for writing", open("/usr/bin/env", O_WRONLY));
    TRY("chmod /usr/bin/env", chmod("/usr/bin/env", 0777));
    TRY("utime /usr/bin/env", utimensat(AT_FDCWD, "/usr/bin/env", NULL, 0));
    TRY("remount /usr rw", mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL));
    struct statvfs sv;
    bool ro = statvfs("/usr", &sv) == 0 && (sv.f_flag & ST_RDONLY) && (sv.f_flag & ST_NOSUID) &&
              (sv.f_flag & ST_NODEV);
    attempt("/usr is not ro,nosuid,nodev", !ro, 0);
}

/* Markers the probe searches for arrive reversed, so that its own command
 * line (which it can see) does not contain them. */
static const char *unreverse(const char *rev)
{
    static char out[256];
    size_t n = strlen(rev) < sizeof out - 1 ? strlen(rev) : sizeof out - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = rev[n - 1 - i];
    out[n] = '\0';
    return out;
}

static void a_host_process(int argc, char **argv)
{
    const char *marker = unreverse(argc > 0 ? argv[0] : "lenitnes-tsoh-xba");
    pid_t host_pid = argc > 1 ? (pid_t)strtol(argv[1], NULL, 10) : 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    int seen = 0, count = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        count++;
        char p[300], buf[4096];
        snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
        int fd = open(p, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        for (ssize_t i = 0; i < n; i++)
            if (!buf[i])
                buf[i] = ' ';
        if (n > 0) {
            buf[n] = 0;
            if (strstr(buf, marker))
                seen++;
        }
    }
    if (d)
        closedir(d);
    attempt("see the host sentinel in /proc", seen > 0, 0);
    attempt("see more than a handful of processes", count > 8, 0);
    if (host_pid > 0) {
        /* the number may name a process of the sandbox; it must not be the sentinel */
        char p[64], buf[256] = "";
        snprintf(p, sizeof p, "/proc/%d/cmdline", (int)host_pid);
        int fd = open(p, O_RDONLY);
        bool same = false;
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf - 1);
            close(fd);
            same = n > 0 && memmem(buf, (size_t)n, marker, strlen(marker)) != NULL;
        }
        attempt("host pid names the sentinel", same, 0);
        if (!same) {
            int r = kill(host_pid, SIGKILL);
            note("kill(host pid %d) = %d (%s): any process it reached is the sandbox's own", (int)host_pid, r,
                 r < 0 ? strerror(errno) : "sent");
        }
    }
    /* every process we may signal; the host's sentinel must survive it */
    kill(-1, SIGKILL);
    note("kill(-1, SIGKILL) sent");
}

static void a_ptrace(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("ptrace attach to pid 1", ptrace(PTRACE_ATTACH, 1, 0, 0));
    char buf[16];
    struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
    TRY("process_vm_readv pid 1", process_vm_readv(1, &local, 1, &remote, 1, 0));
    char target[256];
    TRY("readlink /proc/1/exe", readlink("/proc/1/exe", target, sizeof target));
    TRY("open /proc/1/environ", open("/proc/1/environ", O_RDONLY));
    TRY("open /proc/1/mem", open("/proc/1/mem", O_RDONLY));
    TRY("open /proc/1/root", open("/proc/1/root/", O_RDONLY | O_DIRECTORY));
    TRY("pidfd_open pid 1 + getfd", ({
            int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
            pfd < 0 ? -1 : (long)syscall(SYS_pidfd_getfd, pfd, 0, 0);
        }));
}

static void a_network(int argc, char **argv)
{
    const char *host_ip = argc > 0 ? argv[0] : NULL;
    int port = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 0;
    struct ifaddrs *ifa = NULL, *i;
    int non_lo = 0;
    if (getifaddrs(&ifa) == 0) {
        for (i = ifa; i; i = i->ifa_next)
            if (strcmp(i->ifa_name, "lo") != 0)
                non_lo++;
        freeifaddrs(ifa);
    }
    attempt("interfaces other than lo", non_lo > 0, 0);
    if (host_ip && port > 0) {
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, host_ip, &sa.sin_addr);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        TRY("TCP connect to the host's address", connect(s, (struct sockaddr *)&sa, sizeof sa));
        close(s);
        s = socket(AF_INET, SOCK_DGRAM, 0);
        TRY("UDP send to the host's address", sendto(s, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa));
        close(s);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s = socket(AF_INET, SOCK_STREAM, 0);
        TRY("TCP connect to the host's loopback listener", connect(s, (struct sockaddr *)&sa, sizeof sa));
        close(s);
    }
    /* loopback inside works: the sandbox has its own */
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool lo_ok = srv >= 0 && bind(srv, (struct sockaddr *)&lo, sizeof lo) == 0 && listen(srv, 1) == 0;
    attempt("own loopback is unusable (expected usable)", !lo_ok, 0);
    close(srv);
}

static void a_raw_socket(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("raw ICMP socket", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
    TRY("raw IP socket", socket(AF_INET, SOCK_RAW, IPPROTO_RAW));
    TRY("packet socket", socket(AF_PACKET, SOCK_RAW, 0));
    TRY("vsock socket", socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
}

static void a_mount(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("mount tmpfs", mount("none", "/mnt", "tmpfs", 0, NULL));
    TRY("bind mount", mount("/usr", "/mnt", NULL, MS_BIND, NULL));
    TRY("remount / ", mount(NULL, "/", NULL, MS_REMOUNT, NULL));
    TRY("umount /usr", umount2("/usr", MNT_DETACH));
    TRY("umount /proc/sys", umount2("/proc/sys", MNT_DETACH));
    TRY("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
    TRY("chroot", chroot("/tmp"));
    TRY("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
    TRY("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/usr", 1 /* OPEN_TREE_CLONE */));
    TRY("move_mount", syscall(SYS_move_mount, AT_FDCWD, "/usr", AT_FDCWD, "/mnt", 0));
    TRY("mount proc", mount("proc", "/mnt", "proc", 0, NULL));
}

static void a_userns(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("unshare(CLONE_NEWUSER)", unshare(CLONE_NEWUSER));
    TRY("unshare(CLONE_NEWNS)", unshare(CLONE_NEWNS));
    TRY("unshare(CLONE_NEWNET)", unshare(CLONE_NEWNET));
    long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    attempt("clone(CLONE_NEWUSER)", pid >= 0, errno);
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_NEWUSER;
    ca.exit_signal = SIGCHLD;
    pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        waitpid((pid_t)pid, NULL, 0);
    attempt("clone3(CLONE_NEWUSER)", pid >= 0, errno);
    int fd = open("/proc/1/ns/user", O_RDONLY);
    TRY("setns into init's user namespace", fd < 0 ? -1 : setns(fd, 0));
}

static void a_kernel_module(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("init_module", syscall(SYS_init_module, "\0asm", 4, ""));
    int fd = open("/usr/bin/true", O_RDONLY);
    TRY("finit_module", syscall(SYS_finit_module, fd, "", 0));
    TRY("delete_module", syscall(SYS_delete_module, "loop", O_NONBLOCK));
    TRY("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
}

static void a_keyctl(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("add_key", syscall(SYS_add_key, "user", "abx", "x", 1, KEY_SPEC_SESSION_KEYRING));
    TRY("keyctl get session keyring",
        syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
    TRY("request_key", syscall(SYS_request_key, "user", "abx", NULL, 0));
}

static void a_bpf(int argc, char **argv)
{
    (void)argc, (void)argv;
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    TRY("bpf map create", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
    struct bpf_insn prog[2] = {{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
                               {.code = BPF_JMP | BPF_EXIT}};
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    attr.insns = (uint64_t)(uintptr_t)prog;
    attr.insn_cnt = 2;
    attr.license = (uint64_t)(uintptr_t) "GPL";
    TRY("bpf prog load", syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr));
}

static void a_perf(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct perf_event_attr pe;
    memset(&pe, 0, sizeof pe);
    pe.type = PERF_TYPE_SOFTWARE;
    pe.size = sizeof pe;
    pe.config = PERF_COUNT_SW_CPU_CLOCK;
    TRY("perf_event_open self", syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0));
    TRY("perf_event_open all cpus", syscall(SYS_perf_event_open, &pe, -1, 0, -1, 0));
}

static void a_userfaultfd(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("userfaultfd", syscall(SYS_userfaultfd, O_CLOEXEC));
    TRY("/dev/userfaultfd", open("/dev/userfaultfd", O_RDWR));
    TRY("io_uring_setup", syscall(SYS_io_uring_setup, 4, NULL));
}

static int open_pty_slave(void)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
        return -1;
    char *name = ptsname(m);
    return name ? open(name, O_RDWR | O_NOCTTY) : -1;
}

static void a_tiocsti(int argc, char **argv)
{
    (void)argc, (void)argv;
    /* no controlling terminal: the command runs in a new session */
    TRY("open /dev/tty (a controlling terminal)", open("/dev/tty", O_RDWR));
    char c = 'x';
    TRY("TIOCSTI on stdin", ioctl(0, TIOCSTI, &c));
    int s = open_pty_slave();
    attempt("a pty to test on (expected to exist)", s < 0, errno);
    TRY("TIOCSTI on a pty", ioctl(s, TIOCSTI, &c));
    TRY("TIOCSTI with high bits (CVE-2019-10063)", syscall(SYS_ioctl, s, (1UL << 32) | TIOCSTI, &c));
}

static void a_tioclinux(int argc, char **argv)
{
    (void)argc, (void)argv;
    int s = open_pty_slave();
    char sub[2] = {2, 0}; /* TIOCL_SETSEL */
    TRY("TIOCLINUX", ioctl(s, TIOCLINUX, sub));
    TRY("TIOCLINUX with high bits", syscall(SYS_ioctl, s, (1UL << 32) | TIOCLINUX, sub));
}

static void a_host_device(int argc, char **argv)
{
    (void)argc, (void)argv;
    const char *allowed[] = {".",   "..",   "null", "zero", "full",  "random", "urandom", "tty",
                             "pts", "ptmx", "shm",  "fd",   "stdin", "stdout", "stderr"};
    DIR *d = opendir("/dev");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        bool ok = false;
        for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
            ok |= strcmp(e->d_name, allowed[i]) == 0;
        if (!ok)
            attempt(e->d_name, true, 0);
    }
    if (d)
        closedir(d);
    TRY("mknod block device", mknod("/tmp/vda", S_IFBLK | 0600, makedev(254, 0)));
    TRY("mknod char device /dev/mem", mknod("/tmp/mem", S_IFCHR | 0600, makedev(1, 1)));
    TRY("mknod /dev/kvm", mknod("/tmp/kvm", S_IFCHR | 0600, makedev(10, 232)));
    TRY("open /dev/vda", open("/dev/vda", O_RDONLY));
    TRY("open /dev/kmsg", open("/dev/kmsg", O_RDONLY));
}

static void a_proc_writes(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("open /proc/sysrq-trigger", open("/proc/sysrq-trigger", O_WRONLY));
    TRY("write /proc/sys/kernel/hostname", open("/proc/sys/kernel/hostname", O_WRONLY));
    TRY("write /proc/sys/kernel/core_pattern", open("/proc/sys/kernel/core_pattern", O_WRONLY));
    TRY("write /proc/sys/vm/drop_caches", open("/proc/sys/vm/drop_caches", O_WRONLY));
    TRY("write /proc/sys/net/ipv4/ip_forward", open("/proc/sys/net/ipv4/ip_forward", O_WRONLY));
    int fd = open("/proc/kcore", O_RDONLY);
    char b[8];
    attempt("read /proc/kcore", fd >= 0 && read(fd, b, sizeof b) > 0, errno);
    attempt("/sys is visible", path_exists("/sys/kernel") || path_exists("/sys/fs"), 0);
}

static void a_setuid(int argc, char **argv)
{
    (void)argc, (void)argv;
    const char *candidates[] = {"/usr/bin/su",     "/usr/bin/passwd", "/usr/bin/chsh",
                                "/usr/bin/newgrp", "/usr/bin/mount",  "/usr/bin/gpasswd"};
    int tried = 0;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        struct stat st;
        if (stat(candidates[i], &st) < 0 || !(st.st_mode & S_ISUID))
            continue;
        tried++;
        int out[2];
        if (pipe(out) < 0)
            continue;
        pid_t pid = fork();
        if (pid == 0) {
            int in[2];
            if (pipe(in) < 0)
                _exit(9);
            dup2(in[0], 0);
            dup2(out[1], 1);
            dup2(out[1], 2);
            execl(candidates[i], candidates[i], (char *)NULL);
            _exit(9);
        }
        close(out[1]);
        /* while it runs, read its credentials */
        char p[64], line[256];
        snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
        bool euid0 = false;
        for (int k = 0; k < 50; k++) {
            FILE *f = fopen(p, "r");
            if (!f)
                break;
            while (fgets(line, sizeof line, f)) {
                unsigned r, e;
                if (sscanf(line, "Uid: %u %u", &r, &e) == 2 && e != r)
                    euid0 = true;
            }
            fclose(f);
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(out[0]);
        attempt(candidates[i], euid0, 0);
    }
    note("%d setuid binaries tried", tried);
    attempt("no_new_privs is off", !status_field_is("NoNewPrivs", "1"), 0);
    attempt("a capability is effective or bounded",
            !status_field_is("CapEff", "0000000000000000") || !status_field_is("CapBnd", "0000000000000000"),
            0);
}

static void a_proc_exe(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("open /proc/1/exe for writing", open("/proc/1/exe", O_WRONLY));
    TRY("open /proc/1/exe O_PATH", open("/proc/1/exe", O_PATH));
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/exe", (int)getppid());
    TRY("open parent exe for writing", open(p, O_WRONLY));
    TRY("open /proc/self/exe for writing (busy)", open("/proc/self/exe", O_WRONLY));
    /* the usual path to the runtime inside the sandbox does not exist */
    attempt("runtime binary visible at its host path", argc > 0 && path_exists(argv[0]), 0);
}

static void x32_call(void *arg)
{
    (void)arg;
    long r = syscall(__X32_SYSCALL_BIT | SYS_getpid);
    _exit(r > 0 ? 42 : 0);
}

static void i386_call(void *arg)
{
    (void)arg;
    long r;
    __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); /* i386 getpid */
    _exit(r > 0 ? 42 : 0);
}

static void a_foreign_abi(int argc, char **argv)
{
    (void)argc, (void)argv;
    int st = in_child(x32_call, NULL);
    attempt("x32 getpid", WIFEXITED(st) && WEXITSTATUS(st) == 42, 0);
    note("x32 child %s %d", WIFSIGNALED(st) ? "killed by signal" : "exited",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    st = in_child(i386_call, NULL);
    attempt("i386 int 0x80 getpid", WIFEXITED(st) && WEXITSTATUS(st) == 42, 0);
    note("i386 child %s %d", WIFSIGNALED(st) ? "killed by signal" : "exited",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    TRY("personality(READ_IMPLIES_EXEC)", syscall(SYS_personality, 0x0400000));
}

static void a_fork_bomb(int argc, char **argv)
{
    long limit = argc > 0 ? strtol(argv[0], NULL, 10) : 256;
    int made = 0, last_err = 0;
    pid_t pids[70000];
    for (;;) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            last_err = errno;
            break;
        }
        pids[made++] = p;
        if (made >= (int)(sizeof pids / sizeof pids[0]))
            break;
    }
    attempt("fork beyond the pids limit", made >= limit, last_err);
    note("%d forks before %s", made, strerror(last_err));
    for (int i = 0; i < made; i++)
        kill(pids[i], SIGKILL);
    while (wait(NULL) > 0)
        ;
}

static void hog(void *arg)
{
    size_t total = (size_t)(uintptr_t)arg;
    for (size_t got = 0; got < total; got += 16u << 20) {
        char *p = mmap(NULL, 16u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            _exit(3);
        memset(p, 1, 16u << 20);
    }
    _exit(42);
}

static void a_memory_bomb(int argc, char **argv)
{
    long mb = argc > 0 ? strtol(argv[0], NULL, 10) : 2048;
    int st = in_child(hog, (void *)(uintptr_t)((size_t)mb << 20));
    attempt("allocate beyond the memory limit", WIFEXITED(st) && WEXITSTATUS(st) == 42, 0);
    note("hog %s %d", WIFSIGNALED(st) ? "killed by signal" : "exited",
         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void a_disk_fill(int argc, char **argv)
{
    const char *path = argc > 0 ? argv[0] : "/tmp/fill";
    long max_mb = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    long written = 0;
    int err = 0;
    while (written < max_mb) {
        ssize_t n = write(fd, block, sizeof block);
        if (n < (ssize_t)sizeof block) {
            err = n < 0 ? errno : ENOSPC;
            break;
        }
        written++;
    }
    attempt("write past the disk limit", written >= max_mb, err);
    note("wrote %ld MiB then %s", written, strerror(err));
    attempt("error was not ENOSPC", err != ENOSPC, 0);
    close(fd);
    unlink(path);
}

static void a_fd_leak(int argc, char **argv)
{
    (void)argc, (void)argv;
    DIR *d = opendir("/proc/self/fd");
    int dfd = d ? dirfd(d) : -1;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        int fd = (int)strtol(e->d_name, NULL, 10);
        if (fd > 2 && fd != dfd) {
            char p[64], t[256] = "";
            snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(p, t, sizeof t - 1);
            t[n > 0 ? n : 0] = 0;
            note("fd %d -> %s", fd, t);
            attempt("inherited fd", true, 0);
        }
    }
    if (d)
        closedir(d);
    for (int fd = 3; fd < 64; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            attempt("an fd above 2 is open", true, 0);
    }
}

/* The secret arrives reversed (see unreverse). */
static void a_env_secret(int argc, char **argv)
{
    const char *secret = unreverse(argc > 0 ? argv[0] : "");
    extern char **environ;
    for (char **e = environ; *e; e++)
        if (*secret && strstr(*e, secret))
            attempt("secret in own environment", true, 0);
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        const char *files[] = {"environ", "cmdline"};
        for (int k = 0; k < 2; k++) {
            char p[300];
            static char buf[1 << 16];
            snprintf(p, sizeof p, "/proc/%s/%s", e->d_name, files[k]);
            int fd = open(p, O_RDONLY);
            if (fd < 0)
                continue;
            ssize_t got = read(fd, buf, sizeof buf);
            close(fd);
            if (got > 0 && *secret && memmem(buf, (size_t)got, secret, strlen(secret)))
                attempt(p, true, 0);
        }
    }
    if (d)
        closedir(d);
    attempt("SSH_AUTH_SOCK set", getenv("SSH_AUTH_SOCK") != NULL, 0);
    note("environment checked");
}

static void a_symlink_cwd(int argc, char **argv)
{
    const char *marker = argc > 0 ? argv[0] : "/root/marker";
    char cwd[512] = "";
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    char link[600];
    snprintf(link, sizeof link, "%s/escape-link", cwd);
    unlink(link);
    TRY("plant a symlink in the working directory (expected to work)", symlink(marker, link) == 0 ? -1 : 0);
    TRY("read the host marker through it", open(link, O_RDONLY));
    snprintf(link, sizeof link, "%s/escape-dotdot", cwd);
    unlink(link);
    if (symlink("../../../../../../../../../", link) == 0) {
        char p[700];
        snprintf(p, sizeof p, "%s%s", link, marker);
        TRY("read the marker through a ../ symlink", open(p, O_RDONLY));
    }
    snprintf(link, sizeof link, "%s/escape-proc", cwd);
    unlink(link);
    if (symlink("/proc/1/root", link) == 0) {
        char p[700];
        snprintf(p, sizeof p, "%s%s", link, marker);
        TRY("read the marker through /proc/1/root", open(p, O_RDONLY));
    }
}

static void a_cgroup(int argc, char **argv)
{
    (void)argc, (void)argv;
    char id[128] = "";
    gethostname(id, sizeof id);
    attempt("/sys/fs/cgroup visible", path_exists("/sys/fs/cgroup"), 0);
    TRY("mount cgroup v1 memory", mount("cgroup", "/mnt", "cgroup", 0, "memory"));
    TRY("mount cgroup2", mount("cgroup2", "/mnt", "cgroup2", 0, NULL));
    char p[512];
    snprintf(p, sizeof p, "/sys/fs/cgroup/memory/abx/%s/memory.limit_in_bytes", id);
    TRY("open own memory limit", open(p, O_WRONLY));
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[512];
    bool leaks_path = false;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "abx"))
            leaks_path = true;
    if (f)
        fclose(f);
    attempt("/proc/self/cgroup shows the host cgroup path", leaks_path, 0);
    TRY("release_agent", open("/sys/fs/cgroup/memory/release_agent", O_WRONLY));
}

static void a_uts_ipc(int argc, char **argv)
{
    (void)argc, (void)argv;
    TRY("sethostname", sethostname("evil", 4));
    TRY("setdomainname", setdomainname("evil", 4));
    FILE *f = fopen("/proc/sysvipc/shm", "r");
    char line[512];
    int rows = 0;
    while (f && fgets(line, sizeof line, f))
        rows++;
    if (f)
        fclose(f);
    attempt("host SysV shared memory visible", rows > 1, 0);
}

static void a_abstract_socket(int argc, char **argv)
{
    const char *name = argc > 0 ? argv[0] : "abx-test";
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n > sizeof sa.sun_path - 2)
        n = sizeof sa.sun_path - 2;
    memcpy(sa.sun_path + 1, name, n);
    TRY("connect to the host's abstract socket",
        connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
    const char *paths[] = {"/run/docker.sock", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
                           "/tmp/.X11-unix", "/run/systemd"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        attempt(paths[i], path_exists(paths[i]), ENOENT);
}

static void a_file_handle(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct {
        unsigned int handle_bytes;
        int handle_type;
        unsigned char f_handle[64];
    } h = {.handle_bytes = 8, .handle_type = 1};
    TRY("open_by_handle_at (shocker)", syscall(SYS_open_by_handle_at, AT_FDCWD, &h, O_RDONLY));
    int mount_id;
    h.handle_bytes = 64;
    TRY("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "/usr", &h, &mount_id, 0));
}

static void a_rlimits(int argc, char **argv)
{
    (void)argc, (void)argv;
    struct rlimit r;
    getrlimit(RLIMIT_CORE, &r);
    attempt("core dumps enabled", r.rlim_max != 0, 0);
    getrlimit(RLIMIT_NOFILE, &r);
    attempt("open files unbounded", r.rlim_max > 65536, 0);
    r.rlim_max = 1 << 20;
    r.rlim_cur = 1 << 20;
    TRY("raise RLIMIT_NOFILE", setrlimit(RLIMIT_NOFILE, &r));
}

typedef struct attack {
    const char *name;
    void (*fn)(int argc, char **argv);
} attack;

static const attack attacks[] = {
    {"read_host_file", a_read_host_file},
    {"write_base", a_write_base},
    {"host_process", a_host_process},
    {"ptrace", a_ptrace},
    {"network", a_network},
    {"raw_socket", a_raw_socket},
    {"mount", a_mount},
    {"userns", a_userns},
    {"kernel_module", a_kernel_module},
    {"keyctl", a_keyctl},
    {"bpf", a_bpf},
    {"perf", a_perf},
    {"userfaultfd", a_userfaultfd},
    {"tiocsti", a_tiocsti},
    {"tioclinux", a_tioclinux},
    {"host_device", a_host_device},
    {"proc_writes", a_proc_writes},
    {"setuid", a_setuid},
    {"proc_exe", a_proc_exe},
    {"foreign_abi", a_foreign_abi},
    {"fork_bomb", a_fork_bomb},
    {"memory_bomb", a_memory_bomb},
    {"disk_fill", a_disk_fill},
    {"fd_leak", a_fd_leak},
    {"env_secret", a_env_secret},
    {"symlink_cwd", a_symlink_cwd},
    {"cgroup", a_cgroup},
    {"uts_ipc", a_uts_ipc},
    {"abstract_socket", a_abstract_socket},
    {"file_handle", a_file_handle},
    {"rlimits", a_rlimits},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("USAGE: abx-probe ATTACK [ARG...]\n");
        return 4;
    }
    const char *why = "";
    if (!inside_sandbox(&why)) {
        printf("REFUSED: not inside an abx sandbox (%s); no attack was run\n", why);
        return 3;
    }
    for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
        if (strcmp(argv[1], attacks[i].name) != 0)
            continue;
        char host[128] = "";
        gethostname(host, sizeof host);
        printf("sandbox %s\n", host);
        fflush(stdout);
        attacks[i].fn(argc - 2, argv + 2);
        printf("%s: %s: %s\n", failures ? "ESCAPED" : "BLOCKED", attacks[i].name, detail);
        fflush(stdout);
        return failures ? 1 : 0;
    }
    printf("USAGE: unknown attack %s\n", argv[1]);
    return 4;
}
