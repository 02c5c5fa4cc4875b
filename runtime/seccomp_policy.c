/* seccomp_policy.c: the sandbox's seccomp filter, a deny list.
 *
 * Owns the list of system calls a sandboxed process may not make, in the
 * spirit of Docker's default profile and flatpak's list (see
 * ../shared/isolation-notes.md §1 and docs/security.md). Default action is
 * ALLOW; listed calls fail with EPERM (or ENOSYS where callers are expected
 * to fall back, e.g. clone3 and the new mount API); calls from any other
 * architecture (i386 via int 0x80, x32) kill the process.
 *
 * Does not own loading the filter: the jail loads it last, after
 * no_new_privs, in every process it starts.
 */
#include "seccomp_policy.h"

#include <errno.h>
#include <stddef.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Calls that fail with EPERM whatever their arguments. */
static const char *const denied_eperm[] = {
    /* kernel keyring: not namespaced */
    "keyctl",
    "add_key",
    "request_key",
    /* kernel attack surface with a history of escapes */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    /* kernel code and the machine itself */
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "reboot",
    "swapon",
    "swapoff",
    /* filesystem topology, after setup */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    /* namespaces: joining any */
    "setns",
    /* time, accounting, quotas, logs */
    "settimeofday",
    "clock_settime",
    "clock_settime64",
    "clock_adjtime",
    "clock_adjtime64",
    "adjtimex",
    "stime",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    /* file handles bypass path checks (the "shocker" escape) */
    "open_by_handle_at",
    "name_to_handle_at",
    /* hardware and legacy interfaces */
    "iopl",
    "ioperm",
    "modify_ldt",
    "vm86",
    "vm86old",
    "uselib",
    "nfsservctl",
    "lookup_dcookie",
    "vhangup",
    "kcmp",
    "fanotify_init",
    "move_pages",
    "migrate_pages",
};

/* Calls that fail with ENOSYS, so that libraries fall back to older forms. */
static const char *const denied_enosys[] = {
    "clone3", /* flags live in memory and cannot be inspected */
    "open_tree", "move_mount",    "fsopen",         "fsconfig",       "fsmount",
    "fspick",    "mount_setattr", "io_uring_setup", "io_uring_enter", "io_uring_register",
};

static const unsigned long namespace_flags[] = {
    CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP,
#ifdef CLONE_NEWTIME
    CLONE_NEWTIME,
#endif
};

static int deny_by_name(scmp_filter_ctx ctx, const char *name, uint32_t action)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0; /* not a call on this architecture */
    int rc = seccomp_rule_add(ctx, action, nr, 0);
    /* negative pseudo-numbers name calls that do not exist natively */
    return rc == -EDOM ? 0 : rc;
}

static int add_namespace_rules(scmp_filter_ctx ctx)
{
    for (size_t i = 0; i < sizeof namespace_flags / sizeof namespace_flags[0]; i++) {
        unsigned long f = namespace_flags[i];
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
        if (rc < 0)
            return rc;
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, f, f));
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* TIOCSTI (CVE-2017-5226) and TIOCLINUX (CVE-2023-28100): the kernel reads
 * the request as 32 bits, so compare only those (CVE-2019-10063). */
static int add_tty_rules(scmp_filter_ctx ctx)
{
    static const unsigned long requests[] = {TIOCSTI, TIOCLINUX};
    for (size_t i = 0; i < 2; i++) {
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                  SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, requests[i]));
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* personality(2): only PER_LINUX (0), PER_LINUX32 (8) and the UNAME26
 * forms (0x20000, 0x20008) are allowed, as in Docker's profile: a call with
 * any other bit set fails. (libseccomp compares an argument once per rule,
 * so this is one rule per forbidden bit; the query form 0xffffffff is
 * refused too, which only costs gdb its ASLR toggle.) */
static int add_personality_rules(scmp_filter_ctx ctx)
{
    const unsigned long allowed_bits = 0x20008;
    for (int bit = 0; bit < 32; bit++) {
        unsigned long b = 1ul << bit;
        if (b & allowed_bits)
            continue;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, b, b));
        if (rc < 0)
            return rc;
    }
    return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                            SCMP_A0(SCMP_CMP_GT, 0xffffffffu));
}

/* Sockets: AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK only. In particular
 * AF_PACKET (raw frames) and AF_VSOCK (which reaches a VM's host and is not
 * scoped by network namespaces on every kernel) are refused. */
static int add_socket_rules(scmp_filter_ctx ctx)
{
    for (int family = 3; family < AF_NETLINK; family++) {
        if (family == AF_INET6)
            continue;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                  SCMP_A0(SCMP_CMP_EQ, (unsigned long)family));
        if (rc < 0)
            return rc;
    }
    return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                            SCMP_A0(SCMP_CMP_GT, (unsigned long)AF_NETLINK));
}

scmp_filter_ctx abx__seccomp_policy_new(void)
{
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    for (size_t i = 0; rc == 0 && i < sizeof denied_eperm / sizeof denied_eperm[0]; i++)
        rc = deny_by_name(ctx, denied_eperm[i], SCMP_ACT_ERRNO(EPERM));
    for (size_t i = 0; rc == 0 && i < sizeof denied_enosys / sizeof denied_enosys[0]; i++)
        rc = deny_by_name(ctx, denied_enosys[i], SCMP_ACT_ERRNO(ENOSYS));
    if (rc == 0)
        rc = add_namespace_rules(ctx);
    if (rc == 0)
        rc = add_tty_rules(ctx);
    if (rc == 0)
        rc = add_personality_rules(ctx);
    if (rc == 0)
        rc = add_socket_rules(ctx);
    if (rc < 0) {
        seccomp_release(ctx);
        errno = -rc;
        return NULL;
    }
    return ctx;
}
