/* render.h: the text block of a tool result, written for a model.
 *
 * Clients differ in what they hand the model: some the text content, some
 * (Copilot CLI) only structuredContent. So the text carries the same facts
 * as structuredContent, but as lines a model reads, never as escaped JSON
 * (mcp/render.c says how each kind of value is shown).
 */
#ifndef ABX_MCP_RENDER_H
#define ABX_MCP_RENDER_H

#include <jansson.h>
#include <stdbool.h>

/* The text of structured (borrowed), a JSON object: a new string the
 * caller frees, or NULL without memory. image_sent: the result's image
 * content already holds content_base64's bytes, which the text then only
 * names. */
char *mcp_render_text(json_t *structured, bool image_sent);

#endif
