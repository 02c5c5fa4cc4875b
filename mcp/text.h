/* text.h: turning sandbox bytes into JSON-safe text. */
#ifndef ABX_MCP_TEXT_H
#define ABX_MCP_TEXT_H

#include "abx/abx.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A JSON string of data as UTF-8: invalid sequences become U+FFFD. When
 * len exceeds max, keeps the last max bytes behind a marker naming the
 * total, and sets *truncated. */
json_t *mcp_text(const char *data, size_t len, size_t max, int *truncated);
/* Whether data (the start of a file) is binary rather than text: it holds
 * a NUL byte, or over a quarter of its bytes (and more than 8) are not
 * UTF-8, so that Latin-1 text with a few accents still reads as text (a
 * sequence cut by the window's end does not count). Looks at the first
 * 8 KiB. */
bool mcp_looks_binary(const char *data, size_t len);
/* The output policy every tool follows (docs/mcp-tools.md): a stream of at
 * most `limit` bytes is shown whole; a longer one as its first limit/2 and
 * last limit/2 bytes around a marker saying how many bytes were left out
 * and where the whole stream can be read. The limit is configurable
 * (config.toml [mcp] output_limit, ABX_MCP_OUTPUT_LIMIT). */
#define MCP_OUTPUT_LIMIT_DEFAULT (32u << 10)
#define MCP_OUTPUT_LIMIT_MIN 1024u
#define MCP_OUTPUT_LIMIT_MAX (1u << 20)
/* A limit from text, or 0 when text is not a number in range. */
size_t mcp_output_limit_parse(const char *text);
/* The configured limit: ABX_MCP_OUTPUT_LIMIT, else config.toml [mcp]
 * output_limit, else the default; a value out of range is ABX_ECONFIG. */
int mcp_output_limit_get(size_t *limit, abx_error **err);

typedef struct mcp_output_view {
    size_t limit;                /* 0: MCP_OUTPUT_LIMIT_DEFAULT */
    const char *saved_path;      /* where the whole stream is in the sandbox, or NULL/"" */
    const char *how_to_read_all; /* said when there is no saved_path; NULL: a default */
} mcp_output_view;

/* The view of a stream's kept output (base/bounds.h): data holds its first
 * cut bytes and its last len - cut, and total bytes were written in all.
 * Sets *truncated when bytes were left out. */
json_t *mcp_output_text(const char *data, size_t len, size_t cut, unsigned long long total,
                        const mcp_output_view *view, int *truncated);
/* The top-level "id" of a JSON-RPC message too long to parse, from its
 * first bytes (an id before any large member) or its last (an id as the
 * last member, as the MCP SDKs write it): a new integer or string, or NULL
 * when it cannot be told. Bounded, no recursion. */
json_t *mcp_rpc_id_of_long(const char *head, size_t head_len, const char *tail, size_t tail_len);
/* Base64 of data (caller frees), and its decoding (-1 on invalid input). */
char *mcp_b64(const void *data, size_t len);
long mcp_unb64(const char *text, char **out);

#endif
