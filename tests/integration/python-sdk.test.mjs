// python-sdk.test.mjs: `python -m agent_sandbox.agent.mcp` (python/) is
// abx's own MCP server, driven here by the official MCP SDK client over
// STDIO and over Streamable HTTP (--http / --listen). The SDK's own tests
// (python/tests, unittest) run from `sh abx.sh test` against the release
// build: an ASan-built libabx cannot load into a plain python3.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { abx, root, privateHome, stateIds, startHttpServer, stopServer, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-pysdk');
const env = { ...H.env, ABX_BIN: abx, PYTHONPATH: path.join(root, 'python') };
after(() => H.cleanup());

async function exercise(client) {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  assert.equal(tools.length, 15);
  for (const t of ['create_sandbox', 'run_command', 'run_code', 'write_file', 'kill_sandbox']) assert.ok(tools.includes(t), t);
  const made = await client.callTool({ name: 'create_sandbox', arguments: { template: 'base' } });
  assert.ok(!made.isError, JSON.stringify(made.content));
  const id = made.structuredContent.sandbox_id;
  const r = await client.callTool({ name: 'run_command', arguments: { sandbox_id: id, command: 'echo from python' } });
  assert.equal(r.structuredContent.stdout, 'from python\n');
  return id;
}

test('python -m agent_sandbox.agent.mcp: the STDIO server, its sandboxes gone when the session ends', async () => {
  const transport = new StdioClientTransport({ command: 'python3', args: ['-m', 'agent_sandbox.agent.mcp', '--template', 'base'], env, stderr: 'pipe' });
  const client = new Client({ name: 'py-entry', version: '1' });
  await client.connect(transport);
  let id;
  try {
    id = await exercise(client);
    assert.ok(stateIds(H.home).includes(id.split(':')[1]));
  } finally {
    await client.close();
  }
  await waitFor(() => !stateIds(H.home).includes(id.split(':')[1]), 10000);
});

test('python -m agent_sandbox.agent.mcp --http ADDR:PORT: the Streamable HTTP server', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env, bin: 'python3', serveArgs: ['-m', 'agent_sandbox.agent.mcp'] });
  try {
    const client = new Client({ name: 'py-entry-http', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
    const id = await exercise(client);
    await client.callTool({ name: 'kill_sandbox', arguments: { sandbox_id: id } });
    await client.close();
  } finally {
    await stopServer(srv);
  }
});
