/* test-snapshot-tree.c: a snapshot's tree from an overlay's layers
 * (runtime/snapshot_tree.c), on directories laid out as overlayfs leaves
 * them: what the upper layer holds is copied with its owners shifted, the
 * template's files the sandbox left alone are hard links to the template's,
 * what it deleted (0:0 whiteouts) or made anew (opaque directories) keeps
 * nothing of the template's, FIFOs and devices are left out. Needs root
 * (a whiteout is a device node). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "snapshot_tree.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define BASE 100000u /* the sandbox's host id of root */

static char top[64];

static void put(const char *rel, const char *text, uid_t uid)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", top, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chown(path, uid, uid), 0);
}

static void dir(const char *rel, uid_t uid)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", top, rel);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(chown(path, uid, uid), 0);
}

static void node(const char *rel, mode_t type)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", top, rel);
    assert_int_equal(mknod(path, type | 0600, makedev(0, 0)), 0);
}

static bool there(const char *rel, struct stat *st)
{
    char path[256];
    snprintf(path, sizeof path, "%s/dest/%s", top, rel);
    return lstat(path, st) == 0;
}

static ino_t inode_of(const char *rel)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", top, rel);
    assert_int_equal(lstat(path, &st), 0);
    return st.st_ino;
}

static int thaws;
static int count_thaw(void *ctx)
{
    (void)ctx;
    thaws++;
    return 0;
}

/* lower: a, d/{x,y}, e/z, o/p, l -> a.  upper (the sandbox's writes, owned
 * by its host ids): a and d/y whited out, d/w and n new, o made anew
 * (opaque) with q, a FIFO f. */
static void layout(void)
{
    snprintf(top, sizeof top, "/var/tmp/abx-test-snap-XXXXXX");
    assert_non_null(mkdtemp(top));
    dir("lower", 0);
    put("lower/a", "A", 0);
    dir("lower/d", 0);
    put("lower/d/x", "X", 0);
    put("lower/d/y", "Y", 0);
    dir("lower/e", 0);
    put("lower/e/z", "Z", 0);
    dir("lower/o", 0);
    put("lower/o/p", "P", 0);
    char path[256];
    snprintf(path, sizeof path, "%s/lower/l", top);
    assert_int_equal(symlink("a", path), 0);
    dir("upper", BASE);
    node("upper/a", S_IFCHR);
    dir("upper/d", BASE);
    node("upper/d/y", S_IFCHR);
    put("upper/d/w", "W", BASE + 1000);
    put("upper/n", "N", BASE + 1000);
    dir("upper/o", BASE);
    snprintf(path, sizeof path, "%s/upper/o", top);
    assert_int_equal(setxattr(path, "user.overlay.opaque", "y", 1, 0), 0);
    put("upper/o/q", "Q", BASE);
    node("upper/f", S_IFIFO);
    dir("dest", 0);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    assert_int_equal(system(cmd), 0);
}

static int open_dir(const char *rel, int flags)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", top, rel);
    int fd = open(path, flags | O_DIRECTORY);
    assert_true(fd >= 0);
    return fd;
}

static void test_layers(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* whiteouts are device nodes */
    layout();
    int upper = open_dir("upper", O_RDONLY), root = open_dir("upper", O_PATH);
    char dest[128], lower[128];
    snprintf(dest, sizeof dest, "%s/dest", top);
    snprintf(lower, sizeof lower, "%s/lower", top);
    abx_snapshot_stats st;
    abx_error *err = NULL;
    thaws = 0;
    int rc = abx__snapshot_tree(upper, root, dest, lower, BASE, count_thaw, NULL, &st, &err);
    if (rc != 0)
        fail_msg("%s", abx_error_message(err));
    assert_int_equal(thaws, 1);
    struct stat s;
    assert_false(there("a", &s));   /* whited out */
    assert_false(there("d/y", &s)); /* whited out inside a directory it has */
    assert_false(there("o/p", &s)); /* under a directory it made anew */
    assert_false(there("f", &s));   /* a FIFO */
    assert_true(there("d/x", &s));
    assert_int_equal(s.st_ino, inode_of("lower/d/x")); /* the template's, linked */
    assert_true(there("e/z", &s));
    assert_int_equal(s.st_ino, inode_of("lower/e/z"));
    assert_true(there("d/w", &s));
    assert_int_equal(s.st_uid, 1000); /* host id BASE+1000: user inside */
    assert_true(there("n", &s));
    assert_int_equal(s.st_uid, 1000);
    assert_int_not_equal(s.st_ino, inode_of("upper/n")); /* copied, not shared with the sandbox */
    assert_true(there("o/q", &s));
    assert_true(there("o", &s));
    assert_int_equal(s.st_uid, 0);
    assert_true(there("l", &s));
    assert_true(S_ISLNK(s.st_mode));
    assert_int_equal(st.linked, 2);
    assert_int_equal(st.copied, 3);
    close(upper);
    close(root);
    cleanup();
}

/* A sandbox's file of three names is copied once (the names linked to the
 * copy), and a 256 MiB sparse file costs the store its one written block
 * (with its holes filled, a sandbox's 1 TiB of nothing would be written). */
static void test_links_and_holes(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    snprintf(top, sizeof top, "/var/tmp/abx-test-snap-XXXXXX");
    assert_non_null(mkdtemp(top));
    dir("upper", BASE);
    dir("upper/sub", BASE);
    put("upper/one", "shared", BASE);
    char from[256], to[256];
    snprintf(from, sizeof from, "%s/upper/one", top);
    snprintf(to, sizeof to, "%s/upper/two", top);
    assert_int_equal(link(from, to), 0);
    snprintf(to, sizeof to, "%s/upper/sub/three", top);
    assert_int_equal(link(from, to), 0);
    put("upper/sparse", "", BASE);
    snprintf(from, sizeof from, "%s/upper/sparse", top);
    int fd = open(from, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "end", 3, (256ll << 20) - 3), 3);
    close(fd);
    dir("dest", 0);
    int upper = open_dir("upper", O_RDONLY), root = open_dir("upper", O_PATH);
    char dest[128];
    snprintf(dest, sizeof dest, "%s/dest", top);
    abx_snapshot_stats st;
    abx_error *err = NULL;
    if (abx__snapshot_tree(upper, root, dest, NULL, BASE, NULL, NULL, &st, &err) != 0)
        fail_msg("%s", abx_error_message(err));
    struct stat a, b, c, sp;
    assert_true(there("one", &a) && there("two", &b) && there("sub/three", &c));
    assert_int_equal(a.st_ino, b.st_ino);
    assert_int_equal(a.st_ino, c.st_ino);
    assert_int_equal(a.st_nlink, 3);
    assert_true(there("sparse", &sp));
    assert_int_equal(sp.st_size, 256ll << 20);
    assert_true(sp.st_blocks * 512 < (1 << 20)); /* its one written block */
    assert_true(st.copied_bytes < (1 << 20));
    close(upper);
    close(root);
    cleanup();
}

static void test_template_needs_its_layer(void **state)
{
    (void)state;
    abx_snapshot_stats st;
    abx_error *err = NULL;
    int root = open("/", O_PATH | O_DIRECTORY);
    assert_int_equal(abx__snapshot_tree(-1, root, "/nonexistent", "/", 0, NULL, NULL, &st, &err),
                     -ABX_EINVAL);
    abx_error_free(err);
    close(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers),
        cmocka_unit_test(test_links_and_holes),
        cmocka_unit_test(test_template_needs_its_layer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
