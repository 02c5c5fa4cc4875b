/* privs.h: dropping privileges inside the sandbox. */
#ifndef ABX_PRIVS_H
#define ABX_PRIVS_H

#include <stdbool.h>
#include <sys/types.h>

#define ABX_SANDBOX_USER_UID 1000u
#define ABX_SANDBOX_USER_GID 1000u

/* In this order: empties the capability bounding set, switches to uid/gid
 * (with no supplementary groups when may_setgroups), clears every
 * capability set (ambient, inheritable, permitted, effective) and sets
 * no_new_privs. Returns 0, or -1 with errno and *step naming what failed. */
int abx__privs_drop_all(uid_t uid, gid_t gid, bool may_setgroups, const char **step);

/* Core dumps off, open files bounded. Returns 0 or -1 with errno. */
int abx__privs_set_rlimits(void);

#endif
