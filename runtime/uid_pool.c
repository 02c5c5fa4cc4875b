/* uid_pool.c: per-sandbox host id ranges, like Podman's --userns=auto.
 *
 * Owns: the pool's bounds and the claim on one range. A range is claimed by
 * holding an exclusive flock on a file named by its first id in
 * ABX_UID_POOL_DIR (root-only, host-wide, so every abx on the host shares
 * one pool whatever its $ABX_HOME); the kernel drops the claim when its
 * holder dies, so a crashed supervisor never leaks a range. Claims try
 * random slots first, then every slot in turn.
 *
 * Why: kernel counters kept per user (inotify instances, message-queue
 * bytes, pipe buffers, fds in flight) would otherwise be shared by every
 * sandbox; with a range each, one sandbox exhausting them leaves the others
 * and the host untouched. The sandbox's user namespace is owned by the
 * range's first id (jail.c), so what the kernel charges to the owner is
 * the sandbox's too.
 */
#include "uid_pool.h"
#include "error_internal.h"
#include "jail.h"
#include "parse.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static unsigned env_uint(const char *name, unsigned min, unsigned max, unsigned def)
{
    const char *v = getenv(name);
    unsigned out = def;
    if (v && *v && abx__parse_uint(v, min, max, &out) < 0)
        out = def;
    return out;
}

unsigned abx__uid_pool_slots(void)
{
    return env_uint("ABX_UID_POOL_SLOTS", 1, 65535, ABX_UID_POOL_SLOTS_DEFAULT);
}

#define RANDOM_PROBES 32

/* Claims the range of slot: 1 (*base, *lock_fd set), 0 when another holds
 * it, or an error. */
static int try_slot(unsigned pool_base, unsigned slot, uid_t *base, int *lock_fd, abx_error **err)
{
    uid_t first = (uid_t)(pool_base + slot * ABX_HOST_ID_COUNT);
    char path[96];
    snprintf(path, sizeof path, ABX_UID_POOL_DIR "/%u", (unsigned)first);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return abx__error_errno(err, ABX_ESYS, errno, "opening a uid range's lock");
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return 0;
    }
    *base = first;
    *lock_fd = fd;
    return 1;
}

int abx__uid_range_take(uid_t *base, int *lock_fd, abx_error **err)
{
    unsigned pool_base = env_uint("ABX_UID_POOL_BASE", 100000, 4000000000u, ABX_UID_POOL_BASE_DEFAULT);
    unsigned slots = abx__uid_pool_slots();
    if ((unsigned long long)pool_base + (unsigned long long)slots * ABX_HOST_ID_COUNT > 4294967294ull)
        return abx__error_set(err, ABX_ECONFIG,
                              "ABX_UID_POOL_BASE + ABX_UID_POOL_SLOTS ranges pass the last uid");
    if ((mkdir("/run/abx", 0700) < 0 && errno != EEXIST) ||
        (mkdir(ABX_UID_POOL_DIR, 0700) < 0 && errno != EEXIST))
        return abx__error_errno(err, ABX_ESYS, errno, "creating " ABX_UID_POOL_DIR);
    /* random slots first, then every slot in turn: a linear probe alone
     * crowds the taken slots into runs, and a nearly full pool (8000 of
     * 8192) cost a thousand lock attempts per start */
    unsigned picks[RANDOM_PROBES + 1];
    if (getrandom(picks, sizeof picks, 0) != (ssize_t)sizeof picks)
        for (unsigned i = 0; i <= RANDOM_PROBES; i++)
            picks[i] = (unsigned)getpid() * 2654435761u + i;
    for (unsigned i = 0; i < RANDOM_PROBES + slots; i++) {
        unsigned slot = i < RANDOM_PROBES ? picks[i] % slots : (picks[RANDOM_PROBES] + i) % slots;
        int got = try_slot(pool_base, slot, base, lock_fd, err);
        if (got != 0)
            return got < 0 ? got : 0;
    }
    return abx__error_set(err, ABX_ELIMIT, "every host uid range of the pool is in use (%u sandboxes)",
                          slots);
}

static int inode_order(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

/* The inodes of the pool's lock files, sorted, into *out (free()). */
static size_t lock_inodes(unsigned long **out, dev_t *dev)
{
    *out = NULL;
    struct stat st;
    DIR *d = opendir(ABX_UID_POOL_DIR);
    if (!d || fstat(dirfd(d), &st) < 0) {
        if (d)
            closedir(d);
        return 0;
    }
    *dev = st.st_dev;
    /* this pool's ranges only (ABX_UID_POOL_BASE, ABX_UID_POOL_SLOTS): another pool's are not ours to count
     */
    unsigned long long lo = env_uint("ABX_UID_POOL_BASE", 100000, 4000000000u, ABX_UID_POOL_BASE_DEFAULT);
    unsigned long long hi = lo + (unsigned long long)abx__uid_pool_slots() * ABX_HOST_ID_COUNT;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end = NULL;
        unsigned long long first = strtoull(e->d_name, &end, 10);
        if (e->d_name[0] == '.' || *end || first < lo || first >= hi)
            continue;
        if (n == cap) {
            unsigned long *grown = realloc(*out, (cap = cap ? cap * 2 : 256) * sizeof **out);
            if (!grown)
                break;
            *out = grown;
        }
        (*out)[n++] = (unsigned long)e->d_ino;
    }
    closedir(d);
    if (n)
        qsort(*out, n, sizeof **out, inode_order);
    return n;
}

/* Read from /proc/locks, which costs the holders nothing: a probe that
 * took each lock for a moment would turn a concurrent claim away. */
unsigned abx__uid_pool_used(void)
{
    dev_t dev = 0;
    unsigned long *inodes = NULL;
    size_t n = lock_inodes(&inodes, &dev);
    FILE *f = n ? fopen("/proc/locks", "re") : NULL;
    unsigned used = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        unsigned maj, min;
        unsigned long ino;
        char kind[16];
        if (sscanf(line, "%*d: %15s %*s %*s %*d %x:%x:%lu", kind, &maj, &min, &ino) == 4 &&
            strcmp(kind, "FLOCK") == 0 && makedev(maj, min) == dev &&
            bsearch(&ino, inodes, n, sizeof *inodes, inode_order))
            used++;
    }
    if (f)
        fclose(f);
    free(inodes);
    return used;
}
