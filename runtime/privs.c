/* privs.c: the one place where a sandbox process gives up privilege.
 *
 * Owns: the capability bounding set, uid/gid switch, capability sets,
 * no_new_privs and rlimits. Every step is checked; any failure is fatal for
 * the process that asked (the jail reports it and exits).
 */
#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

static int drop_bounding_set(void)
{
    /* Beyond the kernel's last capability PR_CAPBSET_DROP answers EINVAL. */
    for (int cap = 0; cap < 64; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    }
    return 0;
}

static int clear_capability_sets(void)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -1;
    cap_t none = cap_init(); /* all three sets empty */
    if (!none)
        return -1;
    int rc = cap_set_proc(none);
    int saved = errno;
    cap_free(none);
    errno = saved;
    return rc;
}

const int abx__root_caps[ABX_ROOT_CAPS_COUNT] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER,  CAP_FSETID,           CAP_KILL,      CAP_SETGID,
    CAP_SETUID, CAP_SETPCAP,      CAP_SETFCAP, CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT};

static bool is_root_cap(int cap)
{
    for (int i = 0; i < ABX_ROOT_CAPS_COUNT; i++)
        if (abx__root_caps[i] == cap)
            return true;
    return false;
}

int abx__privs_drop_to_root_caps(bool may_setgroups, const char **step)
{
    *step = "cutting the capability bounding set";
    for (int cap = 0; cap < 64; cap++)
        if (!is_root_cap(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return -1;
    *step = "clearing supplementary groups";
    if (may_setgroups && setgroups(0, NULL) < 0)
        return -1;
    *step = "switching to root";
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
        return -1;
    *step = "setting root's capabilities";
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -1;
    cap_t caps = cap_init();
    cap_value_t list[ABX_ROOT_CAPS_COUNT];
    for (int i = 0; i < ABX_ROOT_CAPS_COUNT; i++)
        list[i] = (cap_value_t)abx__root_caps[i];
    int rc = caps ? cap_set_flag(caps, CAP_PERMITTED, ABX_ROOT_CAPS_COUNT, list, CAP_SET) : -1;
    if (rc == 0)
        rc = cap_set_flag(caps, CAP_EFFECTIVE, ABX_ROOT_CAPS_COUNT, list, CAP_SET);
    if (rc == 0)
        rc = cap_set_proc(caps);
    int saved = errno;
    if (caps)
        cap_free(caps);
    errno = saved;
    if (rc < 0)
        return -1;
    *step = "setting no_new_privs";
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int abx__privs_drop_all(uid_t uid, gid_t gid, bool may_setgroups, const char **step)
{
    *step = "dropping the capability bounding set";
    if (drop_bounding_set() < 0)
        return -1;
    *step = "clearing supplementary groups";
    if (may_setgroups && setgroups(0, NULL) < 0)
        return -1;
    *step = "switching group";
    if (setresgid(gid, gid, gid) < 0)
        return -1;
    *step = "switching user";
    if (setresuid(uid, uid, uid) < 0)
        return -1;
    *step = "clearing capabilities";
    if (clear_capability_sets() < 0)
        return -1;
    *step = "setting no_new_privs";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -1;
    return 0;
}

/* Every rlimit a sandbox process starts with, whatever abx inherited
 * (docs/security.md lists them). Memory, CPU time and file size are left
 * unlimited here: the memory cgroup, the timeout and the size-bounded
 * writable layer bound them. A limit can only be lowered from inside (the
 * hard limits abx inherited cap these), so the table never raises one. */
static const struct {
    int resource;
    rlim_t soft, hard;
} sandbox_rlimits[] = {
    {RLIMIT_CORE, 0, 0},
    {RLIMIT_NOFILE, 1024, 4096},
    {RLIMIT_NPROC, 32768, 32768},
    {RLIMIT_STACK, 8u << 20, RLIM_INFINITY},
    {RLIMIT_MEMLOCK, 8u << 20, 8u << 20},
    {RLIMIT_MSGQUEUE, 819200, 819200},
    {RLIMIT_SIGPENDING, 8192, 8192},
    {RLIMIT_NICE, 0, 0},
    {RLIMIT_RTPRIO, 0, 0},
    {RLIMIT_RTTIME, 0, 0},
    {RLIMIT_LOCKS, RLIM_INFINITY, RLIM_INFINITY},
    {RLIMIT_FSIZE, RLIM_INFINITY, RLIM_INFINITY},
    {RLIMIT_DATA, RLIM_INFINITY, RLIM_INFINITY},
    {RLIMIT_AS, RLIM_INFINITY, RLIM_INFINITY},
    {RLIMIT_RSS, RLIM_INFINITY, RLIM_INFINITY},
    {RLIMIT_CPU, RLIM_INFINITY, RLIM_INFINITY},
};

int abx__privs_set_rlimits(void)
{
    for (size_t i = 0; i < sizeof sandbox_rlimits / sizeof sandbox_rlimits[0]; i++) {
        struct rlimit now;
        if (getrlimit(sandbox_rlimits[i].resource, &now) < 0)
            return -1;
        rlim_t hard = sandbox_rlimits[i].hard < now.rlim_max ? sandbox_rlimits[i].hard : now.rlim_max;
        rlim_t soft = sandbox_rlimits[i].soft < hard ? sandbox_rlimits[i].soft : hard;
        struct rlimit want = {soft, hard};
        if (setrlimit(sandbox_rlimits[i].resource, &want) < 0)
            return -1;
    }
    return 0;
}
