/* test-toml.c: the TOML 1.0 checker (base/toml.c) on documents as Codex
 * CLI and other programs write them, on every production's edge, and on
 * what TOML forbids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "toml.h"

#include <stdio.h>
#include <string.h>

static int check(const char *text, int *line)
{
    return abx__toml_check(text, strlen(text), NULL, NULL, line);
}

static const char codex_config[] = "# Codex CLI\n"
                                   "model = \"gpt-5-codex\"\n"
                                   "model_reasoning_effort = \"high\"\r\n"
                                   "approval_policy = 'on-request'\n"
                                   "notify = [\"notify-send\", \"Codex\"]\n"
                                   "\n"
                                   "[tui]\n"
                                   "notifications = true\n"
                                   "\n"
                                   "[projects.\"/home/me/work/app\"]\n"
                                   "trust_level = \"trusted\"\n"
                                   "\n"
                                   "[mcp_servers.docs]\n"
                                   "command = \"npx\"\n"
                                   "args = [\n"
                                   "  \"-y\",   # the package\n"
                                   "  \"@acme/docs-mcp\",\n"
                                   "]\n"
                                   "env = { \"API_KEY\" = \"k\", region = 'eu' }\n"
                                   "startup_timeout_sec = 20.5\n"
                                   "tool_timeout_sec = 1_000\n"
                                   "\n"
                                   "[[profiles.list]]\n"
                                   "name = \"fast\"\n"
                                   "[[profiles.list]]\n"
                                   "name = \"slow\"\n";

static void test_valid_documents(void **state)
{
    (void)state;
    const char *valid[] = {
        codex_config,
        "",
        "# only a comment",
        "a = 1\nb = -0\nc = +17\nd = 0xDEAD_beef\ne = 0o755\nf = 0b1010\n",
        "f1 = 3.14\nf2 = -0.01\nf3 = 5e+22\nf4 = 1e06\nf5 = 6.626e-34\nf6 = inf\nf7 = -nan\nf8 = "
        "224_617.445_991\n",
        "d1 = 1979-05-27T07:32:00Z\nd2 = 1979-05-27T00:32:00.999999-07:00\nd3 = 1979-05-27 07:32:00\n"
        "d4 = 1979-05-27\nd5 = 07:32:00\nd6 = 00:32:00.999\n",
        "s = \"tab\\there \\u00e9 \\U0001F600 \\\"q\\\" \\\\\"\nl = 'C:\\Users\\x'\n",
        "m = \"\"\"\nRoses \"are\" red\n  \\\n  joined\"\"\"\nn = '''\nraw \\n ''text''\n'''\no = "
        "\"\"\"\"\"\"\np = \"\"\"a\"\"\"\"\"\n",
        "[a.b.c]\nx = 1\n[ d . \"e.f\" . 'g' ]\ny = 2\n",
        "site.\"google.com\" = true\nfruit.apple.color = \"red\"\n3.14159 = \"pi\"\n\"\" = \"empty key\"\n",
        "arr = [ [ 1, 2 ], [\"a\", 'b'], [ { x = 1 }, {} ], ]\nempty = []\n",
        "point = { x = 1, y = { z = [1, 2] } }\n",
        "\xef\xbb\xbfkey = \"after a byte-order mark\"\n",
        "k = \"caf\xc3\xa9\" # ünïcödé comment\n",
    };
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        int line = 0;
        if (check(valid[i], &line) != 0)
            fail_msg("valid document %zu refused at line %d:\n%s", i, line, valid[i]);
    }
}

static void test_invalid_documents_name_their_line(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int line;
    } invalid[] = {
        {"a = 1\nb =\n", 2},
        {"a = 1\na = 2\n", 2}, /* a key twice */
        {"[t]\n[t]\n", 2},     /* a table twice */
        {"a = 01\n", 1},       /* leading zero */
        {"a = 1__0\n", 1},
        {"a = 1_\n", 1},
        {"a = 0x\n", 1},
        {"a = +0x10\n", 1},
        {"a = 1.\n", 1},
        {"a = .5\n", 1},
        {"a = 1e\n", 1},
        {"a = tru\n", 1},
        {"a = \"open\n", 1},
        {"a = \"bad \\q escape\"\n", 1},
        {"a = \"\\uD800\"\n", 1}, /* a surrogate */
        {"a = '''x''''''\n", 1},  /* six quotes */
        {"a = [1, 2\nb = 3\n", 2},
        {"a = [1 2]\n", 1},
        {"a = { x = 1, }\n", 1}, /* no trailing comma in an inline table */
        {"a = { x = 1\n}\n", 1}, /* an inline table is one line */
        {"a = 1 b = 2\n", 1},
        {"[a\nb = 1\n", 1},
        {"[a]]\n", 1},
        {"a = 1979-13-01\n", 1},
        {"a = 25:00:00\n", 1},
        {"a = 1\rb = 2\n", 1}, /* a lone CR */
        {"x = 1\n# \x01 control\n", 2},
        {"k = \"\xff\"\n", 1},          /* not UTF-8 */
        {"\"\"\"multi\"\"\" = 1\n", 1}, /* a multi-line key */
        {"= 1\n", 1},
        {"a.b = 1\n[x]\nkey = "
         "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
         3},
    };
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
        int line = 0;
        if (check(invalid[i].text, &line) == 0)
            fail_msg("invalid document %zu accepted:\n%s", i, invalid[i].text);
        if (line != invalid[i].line)
            fail_msg("invalid document %zu: line %d, not %d:\n%s", i, line, invalid[i].line, invalid[i].text);
    }
    char nul[] = "a = 1\nb = 2\n";
    nul[8] = '\0';
    int line = 0;
    assert_int_equal(abx__toml_check(nul, sizeof nul - 1, NULL, NULL, &line), -1);
}

typedef struct seen {
    char lines[16][160];
    int n;
} seen;

static void record(const abx_toml_item *item, void *ud)
{
    seen *s = ud;
    if (s->n < 16)
        snprintf(s->lines[s->n++], sizeof s->lines[0], "%s%s|%s|%zu", item->header ? "H:" : "", item->table,
                 item->name, item->offset);
}

static void test_items_name_tables_keys_and_offsets(void **state)
{
    (void)state;
    const char *text = "top = 1\n[mcp_servers.\"agent-sandbox\"]\ncommand = \"x\"\n  [[a.b]]\nk.j = 2\n";
    seen s = {0};
    assert_int_equal(abx__toml_check(text, strlen(text), record, &s, NULL), 0);
    assert_int_equal(s.n, 5);
    assert_string_equal(s.lines[0], "|top|0");
    assert_string_equal(s.lines[1], "H:|mcp_servers.agent-sandbox|8");
    assert_string_equal(s.lines[2], "mcp_servers.agent-sandbox|command|38");
    assert_string_equal(s.lines[3], "H:|a.b|52");
    assert_string_equal(s.lines[4], "a.b|k.j|62");
}

static void test_quote(void **state)
{
    (void)state;
    char out[64] = "command = ";
    assert_true(abx__toml_quote("/opt/a \"b\"\\c\x01", out, sizeof out));
    assert_string_equal(out, "command = \"/opt/a \\\"b\\\"\\\\c\\u0001\"");
    int line = 0;
    assert_int_equal(check(out, &line), 0);
    char small[8] = "";
    assert_false(abx__toml_quote("far too long", small, sizeof small));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_documents),
        cmocka_unit_test(test_invalid_documents_name_their_line),
        cmocka_unit_test(test_items_name_tables_keys_and_offsets),
        cmocka_unit_test(test_quote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
