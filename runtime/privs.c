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

#define SANDBOX_NOFILE_SOFT 1024
#define SANDBOX_NOFILE_HARD 4096

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

int abx__privs_set_rlimits(void)
{
    struct rlimit core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &core) < 0)
        return -1;
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) < 0)
        return -1;
    if (files.rlim_max > SANDBOX_NOFILE_HARD)
        files.rlim_max = SANDBOX_NOFILE_HARD;
    files.rlim_cur = files.rlim_max < SANDBOX_NOFILE_SOFT ? files.rlim_max : SANDBOX_NOFILE_SOFT;
    return setrlimit(RLIMIT_NOFILE, &files);
}
