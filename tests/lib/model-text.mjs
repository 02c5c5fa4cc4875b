// model-text.mjs: what a tool result's text block must be (mcp/render.c):
// written for a model (not JSON), and carrying every fact of
// structuredContent: each number, boolean and string in it appears in the
// text (strings over 64 KiB are named instead, an image's base64 is sent
// once as the image).
import assert from 'node:assert/strict';

const LONG = 65536;

function facts(v, key, out, imageSent) {
  if (typeof v === 'string') {
    if (imageSent && key === 'content_base64') return out;
    out.push(Buffer.byteLength(v) > LONG ? `${key}: (${Buffer.byteLength(v)} bytes` : v === '' ? '(empty)' : v);
  } else if (typeof v === 'number' || typeof v === 'boolean') out.push(String(v));
  else if (v === null) out.push('null');
  else if (Array.isArray(v)) { if (v.length === 0) out.push(`${key}: (none)`); for (const x of v) facts(x, key, out, imageSent); }
  else if (typeof v === 'object') for (const [k, x] of Object.entries(v)) facts(x, k, out, imageSent);
  return out;
}

// r: a CallToolResult. Returns its text block.
export function assertModelText(r) {
  const block = r.content.filter((c) => c.type === 'text').at(-1);
  assert.ok(block, 'no text block');
  const text = block.text;
  let parsed = null;
  try { parsed = JSON.parse(text); } catch { /* as it should be */ }
  assert.ok(parsed === null || typeof parsed !== 'object', `the text block is JSON: ${text.slice(0, 200)}`);
  const imageSent = r.content.some((c) => c.type === 'image');
  for (const f of facts(r.structuredContent, '', [], imageSent)) {
    assert.ok(text.includes(f), `the text leaves out ${JSON.stringify(f.slice(0, 120))}:\n${text.slice(0, 1500)}`);
  }
  return text;
}
