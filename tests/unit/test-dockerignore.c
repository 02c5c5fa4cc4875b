/* test-dockerignore.c: .dockerignore as Docker reads it (lib/dockerignore.c):
 * comments and blank lines, cleaning, '*' '?' and classes within a segment,
 * "**" across segments, a directory's pattern covering what is under it,
 * exceptions and "the last match wins", and the bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "dockerignore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static abx_ignore *parse_ok(const char *text)
{
    abx_ignore *ig = NULL;
    char why[300] = "";
    if (abx__ignore_parse(text, strlen(text), &ig, why, sizeof why) != 0)
        fail_msg("parse failed: %s", why);
    return ig;
}

static void expect(const abx_ignore *ig, const char *path, bool excluded)
{
    if (abx__ignore_excluded(ig, path) != excluded)
        fail_msg("%s: expected %s", path, excluded ? "excluded" : "kept");
}

static void test_plain_names_and_directories(void **state)
{
    (void)state;
    abx_ignore *ig = parse_ok("# secrets stay home\n\n  .git  \nsecrets/\n./build//out\n/node_modules\n");
    expect(ig, ".git", true);
    expect(ig, ".git/config", true);
    expect(ig, "secrets", true);
    expect(ig, "secrets/key.pem", true);
    expect(ig, "build/out/a.o", true);
    expect(ig, "build/keep", false);
    expect(ig, "node_modules/x/index.js", true);
    expect(ig, "src/node_modules", false); /* a pattern is anchored at the context's root */
    expect(ig, "# secrets stay home", false);
    expect(ig, "main.py", false);
    assert_false(abx__ignore_has_exceptions(ig));
    abx__ignore_free(ig);
}

static void test_wildcards_within_a_segment(void **state)
{
    (void)state;
    abx_ignore *ig = parse_ok("*.log\ntmp?\n[ab]*.txt\n*/cache\n\\!bang\n");
    expect(ig, "app.log", true);
    expect(ig, ".hidden.log", true);   /* '*' matches a leading dot, as Go's filepath.Match */
    expect(ig, "logs/app.log", false); /* '*' never crosses '/' */
    expect(ig, "tmp1", true);
    expect(ig, "tmp12", false);
    expect(ig, "a-notes.txt", true);
    expect(ig, "c-notes.txt", false);
    expect(ig, "x/cache/blob", true);
    expect(ig, "x/y/cache", false);
    expect(ig, "!bang", true);
    abx__ignore_free(ig);
}

static void test_double_star(void **state)
{
    (void)state;
    abx_ignore *ig = parse_ok("**/*.pyc\ndocs/**/draft*\n**\n!**/keep\n");
    expect(ig, "a.pyc", true);
    expect(ig, "pkg/sub/a.pyc", true);
    expect(ig, "docs/draft1", true);
    expect(ig, "docs/a/b/draft2", true);
    expect(ig, "anything/at/all", true); /* "**" alone: everything */
    expect(ig, "x/keep", false);
    expect(ig, "keep", false);
    assert_true(abx__ignore_has_exceptions(ig));
    abx__ignore_free(ig);
}

static void test_exceptions_last_match_wins(void **state)
{
    (void)state;
    abx_ignore *ig = parse_ok("*.md\n!README.md\nREADME*.md\n!README-keep.md\nlogs\n!logs/important.log\n");
    expect(ig, "NOTES.md", true);
    expect(ig, "README.md", true); /* excluded again by the later README*.md */
    expect(ig, "README-keep.md", false);
    expect(ig, "logs/a.log", true);
    expect(ig, "logs/important.log", false);
    expect(ig, "logs", true); /* walked only for what the exception keeps */
    abx__ignore_free(ig);
}

static void test_cleaning_and_empty(void **state)
{
    (void)state;
    abx_ignore *ig = parse_ok("a/../b\n/\n.\n");
    expect(ig, "b/x", true);
    expect(ig, "a/x", false);
    expect(ig, "", false);
    expect(ig, "./b", true);
    abx__ignore_free(ig);
    assert_false(abx__ignore_excluded(NULL, "anything"));
    ig = parse_ok("");
    expect(ig, "x", false);
    abx__ignore_free(ig);
}

static void test_bounds(void **state)
{
    (void)state;
    abx_ignore *ig = NULL;
    char why[300] = "";
    assert_int_equal(abx__ignore_parse("a\0b", 3, &ig, why, sizeof why), -1);
    assert_non_null(strstr(why, "NUL"));
    assert_null(ig);
    /* too many patterns */
    size_t n = (ABX_IGNORE_MAX_PATTERNS + 1) * 2;
    char *many = malloc(n + 1);
    for (size_t i = 0; i < n; i += 2)
        memcpy(many + i, "x\n", 2);
    many[n] = '\0';
    assert_int_equal(abx__ignore_parse(many, n, &ig, why, sizeof why), -1);
    assert_non_null(strstr(why, "patterns"));
    free(many);
    /* a pattern of too many segments names its line */
    char deep[2 * ABX_IGNORE_MAX_SEGMENTS + 16] = "ok\n";
    for (int i = 0; i <= ABX_IGNORE_MAX_SEGMENTS; i++)
        snprintf(deep + strlen(deep), sizeof deep - strlen(deep), "a/");
    assert_int_equal(abx__ignore_parse(deep, strlen(deep), &ig, why, sizeof why), -1);
    assert_non_null(strstr(why, "line 2"));
    /* hostile "**" chains against a deep path end quickly (a table, no backtracking) */
    char stars[4 * 64 + 8] = "";
    for (int i = 0; i < 60; i++)
        snprintf(stars + strlen(stars), sizeof stars - strlen(stars), "**/");
    snprintf(stars + strlen(stars), sizeof stars - strlen(stars), "z");
    ig = parse_ok(stars);
    char path[2 * ABX_IGNORE_MAX_DEPTH + 8] = "";
    for (int i = 0; i < ABX_IGNORE_MAX_DEPTH - 1; i++)
        snprintf(path + strlen(path), sizeof path - strlen(path), "a/");
    snprintf(path + strlen(path), sizeof path - strlen(path), "y");
    expect(ig, path, false);
    abx__ignore_free(ig);
    /* too large */
    char *big = malloc(ABX_IGNORE_MAX_BYTES + 1);
    memset(big, 'a', ABX_IGNORE_MAX_BYTES + 1);
    assert_int_equal(abx__ignore_parse(big, ABX_IGNORE_MAX_BYTES + 1, &ig, why, sizeof why), -1);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_names_and_directories),
        cmocka_unit_test(test_wildcards_within_a_segment),
        cmocka_unit_test(test_double_star),
        cmocka_unit_test(test_exceptions_last_match_wins),
        cmocka_unit_test(test_cleaning_and_empty),
        cmocka_unit_test(test_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
