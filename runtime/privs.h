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

/* Root inside a sandbox made from a template, and a template build's
 * step, keeps what Docker leaves a container's root, so that apt-get and
 * dpkg work: CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID,
 * SETPCAP, SETFCAP, NET_BIND_SERVICE, SYS_CHROOT. They act within the
 * sandbox's user namespace only: on its own ids, never on the host's. */
#define ABX_ROOT_CAPS_COUNT 11
extern const int abx__root_caps[ABX_ROOT_CAPS_COUNT];
/* As abx__privs_drop_all for uid 0, keeping abx__root_caps (the bounding
 * set is cut to them; no_new_privs is set). */
int abx__privs_drop_to_root_caps(bool may_setgroups, const char **step);

/* Core dumps off, open files bounded. Returns 0 or -1 with errno. */
int abx__privs_set_rlimits(void);

#endif
