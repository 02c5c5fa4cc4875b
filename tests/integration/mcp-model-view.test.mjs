// mcp-model-view.test.mjs: what a model and today's clients get from the
// MCP server (issue 26), through the official SDK client over STDIO and
// HTTP and the raw wire: a lean tools/list (at most 16 KiB as sent),
// annotations and result-size hints, every structuredContent valid against
// its outputSchema by the SDK's own validator in a realistic session, a
// text block written for a model, errors addressed to a model (tools and
// arguments, limits with their values, binary files named), `user: "root"`,
// and a missing network that says so.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { abx, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';
import { assertModelText } from '../lib/model-text.mjs';

const H = privateHome('abx-model');
after(() => H.cleanup());
const LIST_MAX = 16 * 1024;

async function stdioClient(args = ['--template', 'base']) {
  const c = new Client({ name: 'abx-model', version: '1' });
  await c.connect(new StdioClientTransport({ command: abx, args: ['mcp', 'start', ...args], env: H.env, stderr: 'pipe' }));
  return c;
}

async function httpClient(url) {
  const c = new Client({ name: 'abx-model', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

// The tools/list answer's bytes as a STDIO client reads them (one line).
function toolsListBytesStdio() {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const lines = out.split('\n').slice(0, -1); // whole lines only: a pipe delivers a long one in parts
      const line = lines.find((l) => l.includes('"id":2'));
      if (line) { child.stdin.end(); resolve(Buffer.byteLength(line)); }
    });
    child.on('error', reject);
    const send = (m) => child.stdin.write(`${JSON.stringify(m)}\n`);
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  });
}

const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-11-25' };

// The same over HTTP: the JSON-RPC message's bytes (an SSE event's data, or the body).
async function toolsListBytesHttp(url) {
  let r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }) });
  const sid = r.headers.get('mcp-session-id');
  await r.text();
  const h = { ...headers, 'Mcp-Session-Id': sid };
  await (await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  r = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  const body = await r.text();
  const data = body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).find((l) => l.includes('"tools"'));
  await fetch(url, { method: 'DELETE', headers: h });
  return Buffer.byteLength(data || body);
}

test('tools/list costs at most 16 KiB as sent, over STDIO and HTTP; descriptions are short; annotations and result-size hints', async (t) => {
  const stdio = await toolsListBytesStdio();
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  let http;
  try {
    http = await toolsListBytesHttp(srv.url);
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
  t.diagnostic(`tools/list: ${stdio} bytes on STDIO, ${http} on HTTP (bound ${LIST_MAX}; about ${Math.round(stdio / 4)} tokens at 4 bytes a token)`);
  assert.ok(stdio <= LIST_MAX, `tools/list is ${stdio} bytes on STDIO`);
  assert.ok(http <= LIST_MAX, `tools/list is ${http} bytes on HTTP`);

  const c = await stdioClient();
  try {
    const { tools } = await c.listTools();
    assert.equal(tools.length, 15);
    const by = Object.fromEntries(tools.map((x) => [x.name, x]));
    for (const x of tools) {
      assert.ok(x.description.length <= 700, `${x.name}'s description is ${x.description.length} characters`);
      // the first sentence says what the tool is for
      assert.ok(x.description.split(/(?<=\.)\s/)[0].length <= 200, `${x.name}'s first sentence is long-winded`);
      assert.equal(x.annotations.openWorldHint, false, x.name);
      assert.equal(x.outputSchema.type, 'object', x.name);
    }
    for (const n of ['list_sandboxes', 'get_sandbox', 'read_file', 'list_files', 'get_background_task', 'download_file']) assert.equal(by[n].annotations.readOnlyHint, true, n);
    for (const n of ['kill_sandbox', 'run_command', 'run_code', 'write_file']) {
      assert.equal(by[n].annotations.readOnlyHint, false, n);
      assert.equal(by[n].annotations.destructiveHint, true, n);
    }
    for (const n of ['write_file', 'set_sandbox_timeout', 'upload_file']) assert.equal(by[n].annotations.idempotentHint, true, n);
    // the result-size hint a client honours is the output bound's: both streams at the limit, twice, and the fields
    for (const n of ['run_code', 'run_command', 'get_background_task']) {
      assert.equal(by[n]._meta['anthropic/maxResultSizeChars'], 4 * 32768 + 16384, n);
    }
    assert.deepEqual(by.run_command.inputSchema.properties.user.enum, ['user', 'root']);
    assert.deepEqual(by.start_background_task.inputSchema.properties.user.enum, ['user', 'root']);
  } finally {
    await c.close();
  }
});

test('a flood of output stays inside the result-size hint the tool declares', async () => {
  const c = await stdioClient();
  try {
    const { tools } = await c.listTools();
    const hint = tools.find((x) => x.name === 'run_command')._meta['anthropic/maxResultSizeChars'];
    const r = await c.callTool({ name: 'run_command', arguments: { command: 'head -c 3000000 /dev/zero | tr "\\0" a; head -c 3000000 /dev/zero | tr "\\0" b >&2' } }, undefined, { timeout: 120000 });
    assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 500));
    assert.equal(r.structuredContent.truncated, true);
    assert.equal(r.structuredContent.stdout_bytes, 3000000);
    const text = assertModelText(r);
    const size = text.length + JSON.stringify(r.structuredContent).length;
    assert.ok(size <= hint, `the result is ${size} characters, over its hint ${hint}`);
  } finally {
    await c.close();
  }
});

// A realistic session: every tool, a few failures; each structuredContent
// checked by the SDK's validator against the tool's outputSchema, each text
// block checked for a model.
async function realisticSession(c) {
  const { tools } = await c.listTools();
  const validator = new AjvJsonSchemaValidator();
  const schemas = Object.fromEntries(tools.map((x) => [x.name, validator.getValidator(x.outputSchema)]));
  const seen = new Set();
  const call = async (name, args = {}, { error } = {}) => {
    const r = await c.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    assert.equal(r.isError === true, Boolean(error), `${name}: ${JSON.stringify(r).slice(0, 800)}`);
    const v = schemas[name](r.structuredContent);
    assert.ok(v.valid, `${name}'s structuredContent does not match its outputSchema: ${v.errorMessage}`);
    assertModelText(r);
    if (error) assert.equal(r.structuredContent.error.code, error, JSON.stringify(r.structuredContent));
    seen.add(name);
    return r.structuredContent;
  };
  const created = await call('create_sandbox', { template: 'base', timeout: 300 });
  await call('run_command', { command: 'echo "a \\"quoted\\" line"; echo oops >&2; exit 3' });
  await call('run_code', { code: 'print("hi")\n6*7' });
  await call('run_code', { code: '1/0' });
  await call('write_file', { path: '/app/notes.txt', content: 'line one\nline two\n' });
  assert.equal((await call('read_file', { path: '/app/notes.txt' })).content, 'line one\nline two\n');
  await call('list_files', { path: '/app', depth: 2 });
  await call('upload_file', { path: '/app/b.bin', content_base64: Buffer.from([0, 1, 2, 3]).toString('base64') });
  await call('download_file', { path: '/app/b.bin' });
  const bg = await call('start_background_task', { command: 'echo started; sleep 30' });
  await call('get_background_task', { task_id: bg.task_id, wait: 1 });
  await call('stop_background_task', { task_id: bg.task_id });
  await call('get_sandbox', { sandbox_id: created.sandbox_id });
  await call('list_sandboxes', { limit: 10 });
  await call('set_sandbox_timeout', { timeout: 120 });
  await call('read_file', { path: '/app/missing' }, { error: 'E8023' });
  await call('run_command', { command: 'true', timeout: 'soon' }, { error: 'E8001' });
  await call('kill_sandbox');
  await call('get_sandbox', {}, { error: 'E8002' });
  assert.equal(seen.size, 15, `tools not called: ${tools.map((x) => x.name).filter((n) => !seen.has(n))}`);
}

test('a realistic session over STDIO: every structuredContent validates (SDK validator), every text is for a model', async () => {
  const c = await stdioClient();
  try {
    await realisticSession(c);
  } finally {
    await c.close();
  }
});

test('the same over HTTP', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const c = await httpClient(srv.url);
    await realisticSession(c);
    await c.close();
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
});

test('errors address a model: tool hints, limits with their values, a binary file named as one', async () => {
  const c = await stdioClient();
  try {
    const call = (name, args) => c.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    const errors = [];
    const failed = async (name, args, code) => {
      const r = await call(name, args);
      assert.equal(r.isError, true, JSON.stringify(r).slice(0, 500));
      const e = r.structuredContent.error;
      assert.equal(e.code, code, JSON.stringify(e));
      errors.push(e);
      return e;
    };
    await failed('get_sandbox', { sandbox_id: 'local:nosuchsandbox000000' }, 'E8002');
    await failed('read_file', { path: '/app/none' }, 'E8023');
    await failed('read_file', { path: '/app' }, 'E8019');
    await failed('get_background_task', { task_id: '999999' }, 'E8026');
    await failed('run_command', { command: 'x', user: 'admin' }, 'E8001');
    // a limit names its value
    const big = Buffer.alloc((7 << 20) + 1).toString('base64');
    const e = await failed('upload_file', { path: '/app/big', content_base64: big }, 'E8018');
    assert.match(e.message, /7340032 bytes \(7\.0 MiB\)/);
    const made = await call('run_command', { command: 'head -c 8000000 /dev/zero > /app/big.bin' });
    assert.notEqual(made.isError, true);
    const d = await failed('download_file', { path: '/app/big.bin' }, 'E8018');
    assert.match(d.message, /7340032 bytes/);
    assert.match(d.hint, /read_file offset and length/);
    // a binary file: said so, with download_file as the way to read it
    await call('run_command', { command: 'head -c 4096 /bin/sh > /app/prog' });
    const b = await failed('read_file', { path: '/app/prog' }, 'E8001');
    assert.match(b.message, /binary/);
    assert.match(b.hint, /download_file/);
    // text that is merely long or has a stray byte still reads
    await call('run_command', { command: 'printf "caf\\351 ok\\n" > /app/latin.txt' });
    assert.match((await call('read_file', { path: '/app/latin.txt' })).structuredContent.content, /ok/);
    for (const x of errors) {
      assert.doesNotMatch(x.hint, /'abx |abx <verb>|--help|sudo|as root/, `a CLI hint reached a model: ${x.hint}`);
    }
  } finally {
    await c.close();
  }
});

test('user "root" runs as root inside the sandbox for run_command and start_background_task; the default is the user', async () => {
  const c = await stdioClient();
  try {
    const run = async (args) => (await c.callTool({ name: 'run_command', arguments: args })).structuredContent;
    assert.equal((await run({ command: 'id -u' })).stdout.trim(), '1000');
    assert.equal((await run({ command: 'id -u', user: 'root' })).stdout.trim(), '0');
    assert.equal((await run({ command: 'id -un', user: 'user' })).stdout.trim(), 'user');
    const bg = (await c.callTool({ name: 'start_background_task', arguments: { command: 'id -u', user: 'root' } })).structuredContent;
    const g = (await c.callTool({ name: 'get_background_task', arguments: { task_id: bg.task_id, wait: 10 } })).structuredContent;
    assert.equal(g.stdout.trim(), '0');
  } finally {
    await c.close();
  }
});

test('a command that fails for want of a network says so and names the arguments that give one', async () => {
  const c = await stdioClient();
  try {
    const r = (await c.callTool({ name: 'run_command', arguments: { command: 'python3 -c "import urllib.request; urllib.request.urlopen(\'http://pypi.org/simple/\')"' } }, undefined, { timeout: 60000 })).structuredContent;
    assert.notEqual(r.exit_code, 0);
    assert.match(r.network_note, /no network/);
    assert.match(r.network_note, /allow_internet_access/);
    assert.match(r.network_note, /network\.allow_out/);
    // an ordinary failure carries no such note
    const f = (await c.callTool({ name: 'run_command', arguments: { command: 'ls /nowhere' } })).structuredContent;
    assert.equal(f.network_note, undefined);
  } finally {
    await c.close();
  }
});
