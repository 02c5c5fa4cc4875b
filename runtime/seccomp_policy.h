/* seccomp_policy.h: the sandbox's system-call deny list. */
#ifndef ABX_SECCOMP_POLICY_H
#define ABX_SECCOMP_POLICY_H

#include <seccomp.h>

/* Builds the filter (not yet loaded). Returns NULL with errno set on
 * failure. The caller owns it: seccomp_release(). */
scmp_filter_ctx abx__seccomp_policy_new(void);

#endif
