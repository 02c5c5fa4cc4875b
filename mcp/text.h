/* text.h: turning sandbox bytes into JSON-safe text. */
#ifndef ABX_MCP_TEXT_H
#define ABX_MCP_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* A JSON string of data as UTF-8: invalid sequences become U+FFFD. When
 * len exceeds max, keeps the last max bytes behind a marker naming the
 * total, and sets *truncated. */
json_t *mcp_text(const char *data, size_t len, size_t max, int *truncated);
/* The same for a command's kept output (lib/bounds.h): data holds the
 * stream's first cut bytes and its last len - cut; when total > len, a
 * marker at the cut says how many bytes were dropped there, and
 * *truncated is set. */
json_t *mcp_output_text(const char *data, size_t len, size_t cut, unsigned long long total, int *truncated);
/* The top-level "id" of a JSON-RPC message too long to parse, from its
 * first bytes (an id before any large member) or its last (an id as the
 * last member, as the MCP SDKs write it): a new integer or string, or NULL
 * when it cannot be told. Bounded, no recursion. */
json_t *mcp_rpc_id_of_long(const char *head, size_t head_len, const char *tail, size_t tail_len);
/* Base64 of data (caller frees), and its decoding (-1 on invalid input). */
char *mcp_b64(const void *data, size_t len);
long mcp_unb64(const char *text, char **out);

#endif
