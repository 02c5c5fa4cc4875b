/* bounds.h: every bound on what a sandbox or a client can make abx hold,
 * in one place. docs/security.md ("Memory ceilings") lists them; change
 * both together.
 *
 * Sandbox output is hostile: a command can write gigabytes, a kernel can
 * flood its reply channel. abx keeps a bounded amount of each stream (the
 * first and last bytes, with a count of what was dropped) and streams the
 * rest through, so the host memory it holds for one sandbox has a ceiling
 * whatever the sandbox does:
 *
 *   abx-shim, per sandbox  ABX_BOUND_SHIM_RINGS (process output rings)
 *                          + ABX_SHIM_MAX_PROCS * 2 * ABX_BOUND_RING_MIN
 *                          + ABX_BOUND_KERNEL_LINE (one code-interpreter reply)
 *   libabx, per exec call  2 * (ABX_BOUND_KEEP_HEAD + ABX_BOUND_KEEP_TAIL)
 *   MCP, per run_code      the same, + ABX_BOUND_KERNEL_LINE
 */
#ifndef ABX_BOUNDS_H
#define ABX_BOUNDS_H

/* Output a finished command reports (exec results, run_command, run_code):
 * the first HEAD and the last TAIL bytes of each stream; what lies between
 * is dropped and counted. */
#define ABX_BOUND_KEEP_HEAD (128u << 10)
#define ABX_BOUND_KEEP_TAIL (128u << 10)

/* The shim's per-process output rings (background tasks, streams): the
 * last RING bytes of each stream. Rings grow on demand; all rings of one
 * sandbox together grow to at most SHIM_RINGS; past that a ring keeps the
 * size it has (at least RING_MIN) and wraps sooner. */
#define ABX_BOUND_RING (1u << 20)
#define ABX_BOUND_RING_MIN (4u << 10)
#define ABX_BOUND_SHIM_RINGS (32u << 20)

/* One reply line of a code-interpreter kernel (MARKER + JSON). A longer
 * line is not a reply: it is dropped without being held. */
#define ABX_BOUND_KERNEL_LINE (4u << 20)

/* What libabx takes from a data plane (the local shim, or a remote envd):
 * one unary response, and one message of a stream. */
#define ABX_BOUND_ENVD_RESPONSE (64u << 20)
#define ABX_BOUND_ENVD_MESSAGE (16u << 20)

/* MCP: one message from a client, on either transport (a STDIO line, an
 * HTTP body); one result abx sends (the official TypeScript SDK's STDIO
 * client drops any message over 10 MiB, and the connection with it); and the
 * most file content one tool call moves (upload_file, download_file,
 * read_file, write_file): base64 makes TRANSFER 4/3 larger (9.3 MiB),
 * which fits in both. A result's text copy of structuredContent leaves out
 * strings longer than RESULT_TEXT_STRING, so no large text is sent twice. */
#define ABX_BOUND_MCP_MESSAGE (16u << 20)
#define ABX_BOUND_MCP_RESULT ((19u << 20) / 2)
#define ABX_BOUND_TRANSFER (7u << 20)
#define ABX_BOUND_RESULT_TEXT_STRING (64u << 10)
/* A saved whole output (/tmp/.abx-output in the sandbox) stops growing here,
 * or at a quarter of the sandbox's free space when that is less. */
#define ABX_BOUND_SAVED_OUTPUT (32ull << 20)

/* JSON from a client (MCP requests, data-plane bodies) nests at most this
 * deep; deeper input is refused before jansson, which recurses, parses it. */
#define ABX_BOUND_JSON_DEPTH 64

#endif
