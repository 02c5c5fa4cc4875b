// mcp-docs.mjs: renders docs/mcp-tools.md from the tools a running server
// sends (tools/list). scripts/gen-mcp-docs.mjs writes the file; a test
// checks that the committed file is exactly what the server sends today.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export async function listTools(abx, env = process.env) {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start'], env, stderr: 'pipe' });
  const client = new Client({ name: 'abx-docs', version: '1.0.0' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  await client.close();
  return tools;
}

function typeOf(schema) {
  if (!schema) return '';
  if (schema.enum) return schema.enum.map((v) => `\`${v}\``).join(' \\| ');
  if (Array.isArray(schema.type)) return schema.type.join(' \\| ');
  if (schema.type === 'array') return `array of ${schema.items?.type || 'object'}`;
  if (schema.type === 'object' && schema.additionalProperties) return `object of ${schema.additionalProperties.type}`;
  return schema.type || 'object';
}

// Maxima the server computes from the host it runs on (lib/limits.c).
const HOST_BOUND = new Set(['create_sandbox.cpu', 'create_sandbox.memory']);

function range(s, key) {
  const parts = [];
  if (s.minimum !== undefined) parts.push(`≥ ${s.minimum}`);
  if (HOST_BOUND.has(key)) parts.push('≤ the host\'s maximum');
  else if (s.maximum !== undefined) parts.push(`≤ ${s.maximum}`);
  return parts.join(', ');
}

export function render(tools) {
  const out = [
    '# abx MCP tools',
    '',
    'Generated from what `abx mcp start` sends in `tools/list` (`node scripts/gen-mcp-docs.mjs > docs/mcp-tools.md`);',
    'a test fails when this page and the server disagree.',
    '',
    'Every tool returns `structuredContent` (described by its `outputSchema`) and a text block written for a model:',
    'the same facts as lines (`key: value`; a stream or a file\'s text verbatim between `<stdout>` and `</stdout>`),',
    'never escaped JSON. A failure is a result with `isError: true` and `structuredContent.error` =',
    '`{code, category, http_status, message, hint, field?}`: a stable `E8xxx` code (see [errors.md](errors.md)),',
    'static texts only, a hint in terms of tools and arguments, and for a validation failure the name of the',
    'argument (never its value). Calls without `sandbox_id` use the session\'s default sandbox (see the session rules',
    'in the README); a result made on a new default because the old one had ended carries `sandbox_replaced: true`',
    'and `sandbox_replaced_reason`. A command that failed for want of a network carries `network_note`, naming the',
    '`create_sandbox` arguments that give one. Tools whose results the output limit bounds say so to clients in',
    '`_meta` (`anthropic/maxResultSizeChars`). `run_code` accepts notebook habits (`!cmd`, `x = !cmd`, `%pip`, `%conda`,',
    '`%timeit`, `%time`, `%cd`, `%env`, `%%bash`, `%%sh`, `%%timeit`, `%%time`, `%%writefile`, `%%capture`, top-level',
    '`await`, JavaScript `import`), and what a cell\'s threads, tasks and timers print up to 0.5 s after its last',
    'statement still comes with that cell (later output, with the next one).',
    '',
  ];
  for (const t of tools) {
    // what the sandbox runs and has differs between hosts: shown as a placeholder
    const description = t.description.replace(/\((?:This host|On base, this host) [^)]*\)/g, '(What this host runs and has, found when the server starts.)');
    out.push(`## ${t.name}`, '', description, '');
    const a = t.annotations || {};
    out.push(`Annotations: read-only ${a.readOnlyHint}, destructive ${a.destructiveHint}, idempotent ${a.idempotentHint}, open-world ${a.openWorldHint}.`, '');
    const props = t.inputSchema.properties || {};
    const required = new Set(t.inputSchema.required || []);
    out.push('| argument | type | required | default | range | meaning |', '| --- | --- | --- | --- | --- | --- |');
    for (const [name, s] of Object.entries(props)) {
      out.push(`| \`${name}\` | ${typeOf(s)} | ${required.has(name) ? 'yes' : 'no'} | ${s.default !== undefined ? `\`${JSON.stringify(s.default)}\`` : ''} | ${range(s, `${t.name}.${name}`)} | ${s.description || ''} |`);
    }
    out.push('');
    const oprops = t.outputSchema.properties || {};
    const success = (t.outputSchema.anyOf || [])[0]?.required || [];
    out.push('| result field | type | always |', '| --- | --- | --- |');
    for (const [name, s] of Object.entries(oprops)) {
      if (name === 'error') continue;
      out.push(`| \`${name}\` | ${typeOf(s)} | ${success.includes(name) ? 'yes' : 'no'} |`);
    }
    out.push('');
  }
  return out.join('\n');
}
