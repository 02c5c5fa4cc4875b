/* test-dockerfile.c: the Dockerfile subset as data (lib/dockerfile.c):
 * instructions and their arguments, continuations and comments, the JSON
 * array form, ENV's two forms, flags, what is refused (with the line), the
 * bounds, and the build-time variable expansion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "dockerfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static abx_dockerfile parse_ok(const char *text)
{
    abx_dockerfile df;
    char why[300] = "";
    int rc = abx__dockerfile_parse(text, strlen(text), &df, why, sizeof why);
    if (rc != 0)
        fail_msg("parse failed: %s", why);
    return df;
}

static void assert_refused(const char *text, const char *want)
{
    abx_dockerfile df;
    char why[300] = "";
    assert_int_equal(abx__dockerfile_parse(text, strlen(text), &df, why, sizeof why), -1);
    if (!strstr(why, want))
        fail_msg("'%s' does not say '%s'", why, want);
    assert_int_equal(df.n, 0);
    assert_null(df.steps);
}

static void test_instructions(void **state)
{
    (void)state;
    abx_dockerfile df =
        parse_ok("# syntax=docker/dockerfile:1\n"
                 "from debian:bookworm-slim AS base\n"
                 "\n"
                 "RUN apt-get update && \\\n"
                 "    # a comment inside\n"
                 "    apt-get install -y python3\n"
                 "CMD [\"python3\", \"-m\", \"http.server\"]\n"
                 "ENTRYPOINT echo hi\n"
                 "COPY --chown=user:user a b /dst/\n"
                 "ADD [\"x y.tar\", \"/opt/\"]\n"
                 "WORKDIR \"/opt/my app\"\n"
                 "USER root\n"
                 "ARG V=1\n"
                 "HEALTHCHECK --interval=2s --start-period=1m CMD curl -f http://localhost/\n");
    assert_int_equal(df.n, 10);
    assert_int_equal(df.steps[0].kind, DF_FROM);
    assert_int_equal(df.steps[0].nargs, 1);
    assert_string_equal(df.steps[0].args[0], "debian:bookworm-slim");
    assert_int_equal(df.steps[1].kind, DF_RUN);
    assert_int_equal(df.steps[1].line, 4);
    assert_false(df.steps[1].exec_form);
    assert_string_equal(df.steps[1].args[0], "apt-get update &&     apt-get install -y python3");
    assert_true(df.steps[2].exec_form);
    assert_int_equal(df.steps[2].nargs, 3);
    assert_string_equal(df.steps[2].args[2], "http.server");
    assert_false(df.steps[3].exec_form);
    assert_string_equal(df.steps[4].chown, "user:user");
    assert_int_equal(df.steps[4].nargs, 3);
    assert_string_equal(df.steps[5].args[0], "x y.tar");
    assert_string_equal(df.steps[6].args[0], "/opt/my app");
    assert_string_equal(df.steps[8].args[1], "1");
    assert_true(df.steps[8].has_default);
    assert_int_equal(df.steps[9].interval_ms, 2000);
    assert_int_equal(df.steps[9].timeout_ms, 60000);
    assert_string_equal(df.steps[9].args[0], "curl -f http://localhost/");
    assert_string_equal(abx__dockerfile_keyword(df.steps[9].kind), "HEALTHCHECK");
    abx__dockerfile_free(&df);
}

static void test_env_forms(void **state)
{
    (void)state;
    abx_dockerfile df = parse_ok("FROM scratch\nENV A=1 B=\"two words\" C='$lit'\nENV OLD the rest  of it\n");
    assert_int_equal(df.steps[1].nargs, 6);
    assert_string_equal(df.steps[1].args[0], "A");
    assert_string_equal(df.steps[1].args[3], "two words");
    assert_string_equal(df.steps[1].args[5], "\\$lit"); /* single quotes: never expanded */
    assert_string_equal(df.steps[2].args[0], "OLD");
    assert_string_equal(df.steps[2].args[1], "the rest  of it");
    abx__dockerfile_free(&df);
}

/* The instructions recorded in the config, and SHELL. */
static void test_recorded(void **state)
{
    (void)state;
    abx_dockerfile df = parse_ok(
        "FROM scratch\nEXPOSE 80 53/udp\nLABEL a=1 \"b c\"=\"d e\"\nMAINTAINER Jo Doe\n"
        "STOPSIGNAL SIGINT\nSHELL [\"/bin/bash\", \"-c\"]\nVOLUME [\"/data\", \"/logs\"]\nVOLUME /x /y\n");
    assert_int_equal(df.n, 8);
    assert_int_equal(df.steps[1].kind, DF_EXPOSE);
    assert_int_equal(df.steps[1].nargs, 2);
    assert_string_equal(df.steps[1].args[1], "53/udp");
    assert_int_equal(df.steps[2].kind, DF_LABEL);
    assert_int_equal(df.steps[2].nargs, 4);
    assert_string_equal(df.steps[2].args[2], "b c");
    assert_string_equal(df.steps[2].args[3], "d e");
    assert_string_equal(df.steps[3].args[0], "Jo Doe");
    assert_int_equal(df.steps[4].kind, DF_STOPSIGNAL);
    assert_true(df.steps[5].exec_form);
    assert_string_equal(df.steps[5].args[1], "-c");
    assert_int_equal(df.steps[6].nargs, 2);
    assert_int_equal(df.steps[7].nargs, 2);
    assert_string_equal(df.steps[7].args[1], "/y");
    abx__dockerfile_free(&df);
}

/* Several FROMs: stages, their names, COPY --from. */
static void test_stages(void **state)
{
    (void)state;
    abx_dockerfile df = parse_ok("FROM debian AS build\nRUN make\nFROM scratch\nCOPY --from=build /out /app\n"
                                 "COPY --from=0 --chown=user /x /y\nCOPY --chmod=0755 a /b\n");
    assert_int_equal(df.n, 6);
    assert_string_equal(df.steps[5].chmod, "0755");
    assert_string_equal(df.steps[0].stage, "build");
    assert_null(df.steps[2].stage);
    assert_string_equal(df.steps[3].from, "build");
    assert_string_equal(df.steps[4].from, "0");
    assert_string_equal(df.steps[4].chown, "user");
    assert_null(df.steps[4].chmod);
    abx__dockerfile_free(&df);
}

static void test_refused(void **state)
{
    (void)state;
    assert_refused("FROM scratch\nFETCH 80\n", "line 2: 'FETCH' is not an instruction abx supports");
    assert_refused("FROM scratch\nONBUILD RUN x\n", "line 2: ONBUILD is not supported");
    assert_refused("FROM scratch\nSHELL sh -c\n", "line 2: SHELL: the JSON array form is required");
    assert_refused("FROM scratch\nLABEL =x\n", "line 2: LABEL: '=x' is not KEY=value");
    assert_refused("FROM scratch\nEXPOSE\n", "line 2: EXPOSE: an argument is required");
    assert_refused("RUN true\n", "line 1: RUN before FROM");
    assert_refused("FROM a AS b/c\n", "line 1: FROM ... AS NAME");
    assert_refused("", "no FROM");
    assert_refused("FROM scratch\nADD --from=x a b\n", "the flag '--from=x' is not supported");
    assert_refused("FROM scratch\nCOPY --link a b\n", "not supported");
    assert_refused("FROM scratch\nCOPY onlyone\n", "SOURCE... DESTINATION");
    assert_refused("FROM scratch\nADD https://example.com/x /x\n", "URLs");
    assert_refused("FROM scratch\nENV 1A=b\n", "NAME=value");
    assert_refused("FROM scratch\nRUN [\"a\", 1]\n", "strings only");
    assert_refused("FROM scratch\nRUN\n", "a command is required");
    assert_refused("FROM scratch\nWORKDIR a b\n", "one argument");
    assert_refused("FROM scratch\nENV A=\"open\n", "unterminated quote");
    assert_refused("FROM scratch\nHEALTHCHECK --bogus=1 CMD x\n", "HEALTHCHECK");
    assert_refused("FROM --platform=linux/arm64 x\n", "flags");
    assert_refused("# escape=`\nFROM scratch\n", "escape");
    abx_dockerfile df;
    char why[200] = "";
    static const char nul[] = "FROM scratch\nRUN a\0b\n";
    assert_int_equal(abx__dockerfile_parse(nul, sizeof nul - 1, &df, why, sizeof why), -1);
    assert_non_null(strstr(why, "NUL"));
}

static void test_bounds(void **state)
{
    (void)state;
    size_t n = ABX_DOCKERFILE_MAX_STEPS + 2;
    char *text = malloc(n * 8 + 16);
    memcpy(text, "FROM scratch\n", 13);
    for (size_t i = 0; i < n; i++)
        memcpy(text + 13 + i * 8, "ENV A=1\n", 8);
    text[13 + n * 8] = '\0';
    assert_refused(text, "too many instructions");
    free(text);
    char *big = malloc(ABX_DOCKERFILE_MAX_BYTES + 2);
    memset(big, '#', ABX_DOCKERFILE_MAX_BYTES + 1);
    big[ABX_DOCKERFILE_MAX_BYTES + 1] = '\0';
    abx_dockerfile df;
    char why[200];
    assert_int_equal(abx__dockerfile_parse(big, ABX_DOCKERFILE_MAX_BYTES + 1, &df, why, sizeof why), -1);
    assert_non_null(strstr(why, "over"));
    free(big);
    /* a line that only continues: the file ends inside it */
    df = parse_ok("FROM scratch\nRUN echo \\");
    assert_int_equal(df.n, 2);
    abx__dockerfile_free(&df);
}

static void test_expand(void **state)
{
    (void)state;
    const char *pairs[] = {"A=one", "B=", "PATH=/usr/bin", NULL};
    df_vars vars = {.pairs = pairs};
    struct {
        const char *in, *want;
    } cases[] = {
        {"$A", "one"},        {"${A}x", "onex"},           {"${B:-dflt}", "dflt"}, {"${A:-dflt}", "one"},
        {"${A:+alt}", "alt"}, {"${B:+alt}", ""},           {"\\$A", "$A"},         {"$MISSING.", "."},
        {"a $ b", "a $ b"},   {"$PATH:/x", "/usr/bin:/x"}, {"$1", "$1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = abx__dockerfile_expand(cases[i].in, &vars);
        assert_non_null(out);
        assert_string_equal(out, cases[i].want);
        free(out);
    }
    assert_null(abx__dockerfile_expand("${A", &vars));
    assert_null(abx__dockerfile_expand("${A:?x}", &vars));
    assert_null(abx__dockerfile_expand("${}", &vars));
    /* a result over 64 KiB is refused, not truncated */
    char *big = malloc(40000);
    memset(big, 'x', 39999);
    big[39999] = '\0';
    const char *huge[] = {NULL, NULL};
    char *pair = malloc(40003);
    snprintf(pair, 40003, "X=%s", big);
    huge[0] = pair;
    df_vars hv = {.pairs = huge};
    assert_null(abx__dockerfile_expand("$X$X", &hv));
    free(pair);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instructions), cmocka_unit_test(test_env_forms), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_recorded),     cmocka_unit_test(test_stages),    cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_expand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
