/* fuzz-toml.c: the TOML 1.0 checker (base/toml.c) on any bytes, with its
 * properties checked on every input:
 *   - it ends, and answers 0 or -1 with a line within the input's lines;
 *   - every item it reports lies inside the input, at a line's start;
 *   - a valid document stays valid after an appended table of abx's own
 *     (what abx mcp install does to ~/.codex/config.toml), or the file
 *     had something we refuse to edit anyway (a table of that name).
 */
#include "toml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct span {
    size_t size;
    const char *text;
    bool ours;
} span;

static void visit(const abx_toml_item *item, void *ud)
{
    span *s = ud;
    if (item->offset > s->size || (item->offset > 0 && s->text[item->offset - 1] != '\n'))
        abort();
    if (item->header && strcmp(item->name, "mcp_servers.agent-sandbox") == 0)
        s->ours = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    span s = {size, text, false};
    int line = 0;
    int rc = abx__toml_check(text, size, visit, &s, &line);
    if (rc != 0 && rc != -1)
        abort();
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (rc == -1 && (line < 1 || line > lines))
        abort();
    if (rc == 0 && !s.ours) {
        static const char table[] = "\n[mcp_servers.agent-sandbox]\ncommand = \"/usr/bin/abx\"\n"
                                    "args = [\"mcp\", \"start\"]\n";
        char *both = malloc(size + sizeof table);
        if (!both)
            return 0;
        memcpy(both, data, size);
        memcpy(both + size, table, sizeof table - 1);
        /* the appended table is valid unless the input ends inside a line
         * that the newline completes badly, which a valid file cannot */
        if (abx__toml_check(both, size + sizeof table - 1, NULL, NULL, NULL) != 0) {
            /* only a file that already defines mcp_servers.agent-sandbox by
             * dotted keys or an inline table may refuse it */
            if (!memmem(data, size, "agent-sandbox", 13) && !memmem(data, size, "mcp_servers", 11))
                abort();
        }
        free(both);
    }
    return 0;
}
