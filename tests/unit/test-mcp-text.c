/* test-mcp-text.c: what a model reads of an MCP result: the text block
 * (mcp/render.c), the hints of tool errors (mcp/hints.c) and the
 * sandbox://ID/PATH URIs of resource links (mcp/resources.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "abx/abx.h"
#include "hints.h"
#include "render.h"
#include "resources.h"
#include "bounds.h"

#include <stdlib.h>
#include <string.h>

static const int codes[] = {
#define ABX_ERR(name, num, cat, http, msg, hint) num,
#include "abx/abx_errors.def"
#undef ABX_ERR
};

/* Every code has a hint of its own for a model, and none sends it to a CLI. */
static void test_every_code_has_a_tool_hint(void **state)
{
    (void)state;
    const char *fallback = mcp_hint(7999);
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *h = mcp_hint(codes[i]);
        assert_non_null(h);
        if (h == fallback)
            fail_msg("E%d has no MCP hint", codes[i]);
        assert_ptr_equal(h, mcp_hint(-codes[i]));
        const char *cli[] = {"'abx ", "`abx ", "abx <verb>", "--", "sudo", "as root", "ABX_", "$ABX"};
        for (size_t j = 0; j < sizeof cli / sizeof cli[0]; j++)
            if (strstr(h, cli[j]))
                fail_msg("E%d's MCP hint names '%s': %s", codes[i], cli[j], h);
    }
}

static char *render(const char *json, bool image_sent)
{
    json_t *v = json_loads(json, 0, NULL);
    assert_non_null(v);
    char *text = mcp_render_text(v, image_sent);
    json_decref(v);
    assert_non_null(text);
    return text;
}

static void test_streams_are_verbatim_blocks_after_the_scalars(void **state)
{
    (void)state;
    char *t = render("{\"stdout\":\"a \\\"quoted\\\"\\nline\\n\",\"stderr\":\"\",\"exit_code\":3,"
                     "\"timed_out\":false,\"stdout_path\":null}",
                     false);
    assert_string_equal(t, "stderr: (empty)\nexit_code: 3\ntimed_out: false\nstdout_path: null\n"
                           "<stdout>\na \"quoted\"\nline\n</stdout>\n");
    free(t);
}

static void test_lists_and_nested_objects(void **state)
{
    (void)state;
    char *t =
        render("{\"files\":[{\"name\":\"a\",\"size\":1},{\"name\":\"b\",\"size\":2}],\"tags\":[\"x\",\"y\"],"
               "\"none\":[],\"o\":{\"k\":1}}",
               false);
    assert_string_equal(
        t, "files:\n  - name: a, size: 1\n  - name: b, size: 2\ntags: x, y\nnone: (none)\no:\n  k: 1\n");
    free(t);
}

static void test_an_error_reads_as_one_sentence_and_its_hint(void **state)
{
    (void)state;
    char *t =
        render("{\"error\":{\"code\":\"E8001\",\"category\":\"validation\",\"http_status\":400,"
               "\"message\":\"timeout must be an integer\",\"hint\":\"Fix it.\",\"field\":\"timeout\"}}",
               false);
    assert_string_equal(
        t,
        "Error E8001 (validation, status 400): timeout must be an integer\nfield: timeout\nhint: Fix it.\n");
    free(t);
}

/* Large text is not sent twice, and an image's base64 only once. */
static void test_long_strings_and_images_are_named_not_repeated(void **state)
{
    (void)state;
    size_t n = ABX_BOUND_RESULT_TEXT_STRING + 1;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = 0;
    json_t *v = json_pack("{s:s, s:s}", "content", big, "content_base64", "iVBORw0K");
    char *t = mcp_render_text(v, true);
    assert_null(strstr(t, "xxxx"));
    assert_null(strstr(t, "iVBORw0K"));
    assert_non_null(strstr(t, "in structuredContent only"));
    assert_non_null(strstr(t, "sent once as the image content"));
    free(t);
    t = mcp_render_text(v, false); /* no image: the base64 is short, so it is shown */
    assert_non_null(strstr(t, "content_base64: iVBORw0K"));
    free(t);
    json_decref(v);
    free(big);
}

/* Deep nesting (a hostile display() payload) ends, bounded. */
static void test_deep_nesting_ends(void **state)
{
    (void)state;
    json_t *v = json_string("leaf");
    for (int i = 0; i < 2000; i++)
        v = json_pack("{s:o, s:s}", "k", v, "s", "line\nline");
    json_t *top = json_pack("{s:o}", "json", v);
    char *t = mcp_render_text(top, false);
    assert_non_null(t);
    assert_true(strlen(t) <= ABX_BOUND_MCP_RESULT);
    free(t);
    json_decref(top);
}

/* A URI encodes the id's ":" and the path's odd bytes, and parses back. */
static void test_resource_uri_round_trip(void **state)
{
    (void)state;
    char *uri = mcp_resource_uri("local:abc", "/tmp/a b/%x\xc3\xa9");
    assert_string_equal(uri, "sandbox://local%3Aabc/tmp/a%20b/%25x%C3%A9");
    char id[32], path[64];
    assert_true(mcp_resource_parse(uri, id, sizeof id, path, sizeof path));
    assert_string_equal(id, "local:abc");
    assert_string_equal(path, "/tmp/a b/%x\xc3\xa9");
    free(uri);
    assert_null(mcp_resource_uri("local:abc", "relative"));
    assert_null(mcp_resource_uri("", "/x"));
}

/* Hostile URIs: another scheme, no id, no path, bad or NUL escapes, a
 * query, parts longer than their buffers. */
static void test_resource_uri_rejects(void **state)
{
    (void)state;
    char id[8], path[8];
    static const char *const bad[] = {"file:///etc/passwd",   "sandbox:///etc",  "sandbox://abc",
                                      "sandbox://a/%zz",      "sandbox://a/%0",  "sandbox://a/%00",
                                      "sandbox://a/x?y",      "sandbox://a/x#y", "sandbox://abcdefgh/x",
                                      "sandbox://a/abcdefgh", "SANDBOX://a/x",   ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(mcp_resource_parse(bad[i], id, sizeof id, path, sizeof path));
    assert_false(mcp_resource_parse(NULL, id, sizeof id, path, sizeof path));
    assert_true(mcp_resource_parse("sandbox://abcdefg/abcdef", id, sizeof id, path, sizeof path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_code_has_a_tool_hint),
        cmocka_unit_test(test_streams_are_verbatim_blocks_after_the_scalars),
        cmocka_unit_test(test_lists_and_nested_objects),
        cmocka_unit_test(test_an_error_reads_as_one_sentence_and_its_hint),
        cmocka_unit_test(test_long_strings_and_images_are_named_not_repeated),
        cmocka_unit_test(test_deep_nesting_ends),
        cmocka_unit_test(test_resource_uri_round_trip),
        cmocka_unit_test(test_resource_uri_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
