// mcp-stdio.test.mjs: `abx mcp start` driven by the official MCP TypeScript
// SDK client (@modelcontextprotocol/sdk), plus raw-wire tests for the
// JSON-RPC error cases the SDK hides. Each test checks what a user (or the
// host) would see: results, session rules, what is left on the host.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { assertModelText } from '../lib/model-text.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { abx, runAbx, privateHome, stateIds, hostProcesses, sleep, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-mcp');
after(() => H.cleanup());
const SECRET = 'sk-abx-test-secret-9f8e7d6c5b4a';
fs.writeFileSync(path.join(H.home, 'config.toml'), `[providers.e2b]\napi_key = "${SECRET}"\n`);
const env = { ...H.env, ABX_SANDBOX_API_KEY: SECRET };

const EXPECTED_TOOLS = ['create_sandbox', 'run_code', 'run_command', 'read_file', 'write_file', 'list_files',
  'kill_sandbox', 'list_sandboxes', 'get_sandbox', 'set_sandbox_timeout', 'start_background_task',
  'get_background_task', 'stop_background_task', 'upload_file', 'download_file'];

const transcripts = []; // every result and stderr line, for the secret-leak check

async function connect(args = []) {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', ...args], env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'abx-tests', version: '1.0.0' });
  await client.connect(transport);
  const call = async (name, args2 = {}, opts) => {
    const r = await client.callTool({ name, arguments: args2 }, undefined, opts);
    transcripts.push(JSON.stringify(r));
    return r;
  };
  return {
    client, call, transport,
    stderr: () => stderr,
    async close() { await client.close(); transcripts.push(stderr); },
  };
}

function ok(r) {
  assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 2000));
  assertModelText(r); // the text block: written for a model, the same facts
  return r.structuredContent;
}

function failed(r, code, field) {
  assert.equal(r.isError, true, JSON.stringify(r));
  const e = r.structuredContent.error;
  assert.equal(e.code, code, JSON.stringify(e));
  assert.ok(e.category && e.hint);
  if (field) assert.equal(e.field, field);
  return e;
}

const running = () => JSON.parse(runAbx(['list', '--json'], { env: H.env }).stdout).map((s) => s.sandbox_id);

test('initialize, capabilities and the fifteen tools with schemas and annotations', async () => {
  const s = await connect();
  try {
    assert.equal(s.client.getServerVersion().name, 'agent-sandbox');
    assert.ok(s.client.getServerCapabilities().tools);
    const { tools } = await s.client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
    for (const t of tools) {
      assert.ok(t.description.length > 40, t.name);
      assert.equal(t.inputSchema.type, 'object');
      assert.equal(t.outputSchema.type, 'object');
      assert.equal(typeof t.annotations.readOnlyHint, 'boolean');
    }
    const ro = Object.fromEntries(tools.map((t) => [t.name, t.annotations.readOnlyHint]));
    assert.equal(ro.list_sandboxes, true);
    assert.equal(ro.run_command, false);
    await s.client.ping();
  } finally {
    await s.close();
  }
});

test('session rules: lazy single default under concurrency, create moves it, explicit ids do not, cleanup on EOF', async () => {
  const before = stateIds(H.home).length;
  const s = await connect();
  // no sandbox yet: list and get neither create nor select
  ok(await s.call('list_sandboxes'));
  failed(await s.call('get_sandbox'), 'E8002');
  failed(await s.call('kill_sandbox'), 'E8002');
  assert.equal(stateIds(H.home).length, before);
  // five concurrent first calls: exactly one sandbox
  const outs = await Promise.all([1, 2, 3, 4, 5].map(() => s.call('run_command', { command: 'hostname' })));
  const hosts = new Set(outs.map((r) => ok(r).stdout.trim()));
  assert.equal(hosts.size, 1, `several defaults: ${[...hosts]}`);
  assert.equal(stateIds(H.home).length, before + 1);
  const first = ok(await s.call('get_sandbox')).sandbox_id;
  // create_sandbox moves the default; the old one lives on
  const second = ok(await s.call('create_sandbox', { template: 'base', timeout: 120 })).sandbox_id;
  assert.notEqual(first, second);
  assert.equal(ok(await s.call('get_sandbox')).sandbox_id, second);
  assert.ok(running().includes(first));
  // an explicit id addresses that sandbox and leaves the default alone
  assert.equal(ok(await s.call('run_command', { command: 'hostname', sandbox_id: first })).stdout.trim(), hosts.values().next().value);
  assert.equal(ok(await s.call('get_sandbox')).sandbox_id, second);
  // kill without id kills the default; the next call creates a new one
  ok(await s.call('kill_sandbox'));
  assert.ok(!running().includes(second));
  const third = ok(await s.call('run_command', { command: 'true' })) && ok(await s.call('get_sandbox')).sandbox_id;
  assert.notEqual(third, second);
  await s.close();
  // the session's end destroyed everything it created
  await waitFor(() => stateIds(H.home).length === before, 5000);
  assert.equal(stateIds(H.home).length, before);
  for (const id of [first, second, third]) assert.ok(!running().includes(id));
});

test('external ids are used and re-timed but never adopted or destroyed at session end', async () => {
  const ext = runAbx(['create', '--timeout', '120'], { env: H.env }).stdout.trim();
  const s = await connect();
  assert.equal(ok(await s.call('run_command', { command: 'echo hi', sandbox_id: ext })).stdout, 'hi\n');
  const t = ok(await s.call('set_sandbox_timeout', { sandbox_id: ext, timeout: 600 }));
  assert.deepEqual([t.success, t.sandbox_id, t.timeout], [true, ext, 600]);
  const meta = ok(await s.call('get_sandbox', { sandbox_id: ext }));
  assert.deepEqual(Object.keys(meta).sort(), ['cpu_count', 'disk_size_mb', 'end_at', 'memory_mb', 'region', 'sandbox_id', 'started_at', 'status', 'template'].sort());
  const life = (Date.parse(meta.end_at) - Date.now()) / 1000;
  assert.ok(life > 500, `re-timed lifetime ${life}`);
  failed(await s.call('get_sandbox'), 'E8002'); // still no default
  await s.close();
  await sleep(300);
  assert.ok(running().includes(ext), 'the session destroyed a sandbox it did not create');
  runAbx(['kill', ext], { env: H.env });
});

test('renewal: each use renews by the creation timeout, then by set_sandbox_timeout', async () => {
  const s = await connect();
  try {
    ok(await s.call('create_sandbox', { timeout: 30, template: 'base' }));
    const t0 = Date.parse(ok(await s.call('get_sandbox')).end_at);
    await sleep(1500);
    ok(await s.call('run_command', { command: 'true' }));
    const t1 = Date.parse(ok(await s.call('get_sandbox')).end_at);
    assert.ok(t1 > t0, 'a use renewed the lifetime');
    ok(await s.call('set_sandbox_timeout', { timeout: 900 }));
    ok(await s.call('run_command', { command: 'true' }));
    const life = (Date.parse(ok(await s.call('get_sandbox')).end_at) - Date.now()) / 1000;
    assert.ok(life > 800, `renewed by the new timeout: ${life}`);
  } finally {
    await s.close();
  }
});

test('run_code on code-interpreter-v1: state persists; errors keep the kernel; timeouts stop loops; output_files', async () => {
  const s = await connect();
  try {
    let r = ok(await s.call('run_code', { code: 'import math\nx = 41\ndef f(v):\n    return v + 1\nprint("hi")' }));
    assert.equal(r.stdout, 'hi\n');
    assert.equal(r.exit_code, 0);
    r = ok(await s.call('run_code', { code: 'f(x)' }));
    assert.equal(r.result, '42');
    r = ok(await s.call('run_code', { code: '1/0' }));
    assert.notEqual(r.exit_code, 0);
    assert.match(r.stderr, /ZeroDivisionError/);
    r = ok(await s.call('run_code', { code: 'def broken(:\n  pass' }));
    assert.notEqual(r.exit_code, 0);
    assert.match(r.stderr, /SyntaxError/);
    assert.equal(ok(await s.call('run_code', { code: 'print(x)' })).stdout, '41\n', 'the kernel survived');
    const t0 = Date.now();
    r = ok(await s.call('run_code', { code: 'while True:\n    pass', timeout: 2 }));
    assert.ok(Date.now() - t0 < 9000);
    assert.notEqual(r.exit_code, 0);
    assert.equal(r.timed_out, true);
    assert.equal(ok(await s.call('run_code', { code: 'print(x + 1)' })).stdout, '42\n', 'the next call works');
    r = ok(await s.call('run_code', { code: 'open("/app/out.txt", "w").write("abc")\nimport subprocess; subprocess.run(["echo", "from a child"])' }));
    assert.deepEqual(r.output_files, [{ name: 'out.txt', path: '/app/out.txt', size: 3 }]);
    assert.equal(r.stdout, 'from a child\n');
    // javascript keeps its own state
    ok(await s.call('run_code', { language: 'javascript', code: 'let counter = 1; function inc() { return ++counter; }' }));
    r = ok(await s.call('run_code', { language: 'javascript', code: 'console.log("n", inc()); inc()' }));
    assert.equal(r.stdout, 'n 2\n');
    assert.equal(r.result, '3');
    r = ok(await s.call('run_code', { language: 'javascript', code: 'while (true) {}', timeout: 1 }));
    assert.notEqual(r.exit_code, 0);
    assert.equal(ok(await s.call('run_code', { language: 'javascript', code: 'counter' })).result, '3');
    r = ok(await s.call('run_code', { language: 'shell', code: 'echo $((6*7)); pwd' }));
    assert.equal(r.stdout, '42\n/app\n');
    for (const [language, runtime] of [['typescript', /TypeScript runtime/], ['r', /Rscript/]]) {
      r = await s.call('run_code', { language, code: '1' });
      if (r.isError) assert.match(failed(r, 'E8009', 'language').message, runtime); // else the runtime exists here
    }
  } finally {
    await s.close();
  }
});

test('run_code on base runs each snippet in a fresh interpreter', async () => {
  const s = await connect(['--template', 'base']);
  try {
    ok(await s.call('run_code', { code: 'x = 1' }));
    const r = ok(await s.call('run_code', { code: 'print(x)' }));
    assert.match(r.stderr, /NameError/);
    assert.equal(ok(await s.call('run_code', { code: 'print(6*7)' })).stdout, '42\n');
  } finally {
    await s.close();
  }
});

test('run_command, files, list_files, background tasks, upload and download', async () => {
  const s = await connect(['--template', 'base']);
  try {
    let r = ok(await s.call('run_command', { command: 'pwd; echo err >&2; exit 3' }));
    assert.deepEqual([r.stdout, r.stderr, r.exit_code], ['/app\n', 'err\n', 3]);
    r = ok(await s.call('run_command', { command: 'sleep 30', timeout: 1 }));
    assert.equal(r.exit_code, 124);
    assert.equal(ok(await s.call('run_command', { command: 'pwd', cwd: '/tmp' })).stdout, '/tmp\n');
    r = ok(await s.call('run_command', { command: 'head -c 3000000 /dev/zero | tr "\\0" x' }));
    assert.equal(r.truncated, true);
    assert.equal(r.stdout_bytes, 3000000);
    // the first and last 16 KiB are shown (mcp/text.h), the middle is left out, counted and saved
    assert.match(r.stdout, /^x{16384}\n\[abx: output truncated: 2967232 bytes left out here; showing the first 16384 and the last 16384 of 3000000 bytes; the whole output is in \/tmp\/\.abx-output\/\d+\.stdout inside the sandbox: read it with read_file \(offset, length\) or run_command \(grep, sed -n\)\]\nx{16384}$/);
    r = ok(await s.call('run_command', { command: 'printf "\\377\\376 ok"' }));
    assert.equal(r.stdout, '\uFFFD\uFFFD ok');
    assert.deepEqual(ok(await s.call('write_file', { path: '/app/dir/hello.txt', content: 'héllo' })), { success: true, bytes_written: 6 });
    assert.equal(ok(await s.call('read_file', { path: '/app/dir/hello.txt' })).content, 'héllo');
    const files = ok(await s.call('list_files', { path: '/app/dir' })).files;
    assert.deepEqual(files, [{ name: 'hello.txt', path: '/app/dir/hello.txt', type: 'file', size: 6 }]);
    assert.ok(ok(await s.call('list_files')).files.some((f) => f.name === 'dir' && f.type === 'dir'));
    failed(await s.call('read_file', { path: '/app/missing' }), 'E8023');
    failed(await s.call('read_file', { path: '/app/dir' }), 'E8019');
    // background
    const bg = ok(await s.call('start_background_task', { command: 'echo started; sleep 0.5; echo $GREETING; sleep 300', envs: { GREETING: 'hey' } }));
    let g = ok(await s.call('get_background_task', { task_id: bg.task_id, wait: 5 }));
    assert.equal(g.status, 'running');
    await sleep(800);
    g = ok(await s.call('get_background_task', { task_id: bg.task_id, stdout_offset: 0 }));
    assert.equal(g.stdout, 'started\nhey\n');
    const next = ok(await s.call('get_background_task', { task_id: bg.task_id, stdout_offset: g.stdout_offset }));
    assert.equal(next.stdout, '');
    const stop = ok(await s.call('stop_background_task', { task_id: bg.task_id }));
    assert.deepEqual(stop, { success: true, status: 'exited' });
    g = ok(await s.call('get_background_task', { task_id: bg.task_id }));
    assert.deepEqual([g.status, g.exit_code], ['exited', 143]);
    failed(await s.call('get_background_task', { task_id: '999999' }), 'E8026'); // a task, not the sandbox, is unknown
    // binary transfer; an image also comes back as image content
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex');
    assert.deepEqual(ok(await s.call('upload_file', { path: '/app/pixel.png', content_base64: png.toString('base64') })), { success: true, bytes_written: png.length });
    const dl = await s.call('download_file', { path: '/app/pixel.png' });
    const d = dl.structuredContent;
    // the bytes are sent once: as the image; the text mirrors the rest
    assertModelText(dl);
    assert.ok(!dl.content.find((c) => c.type === 'text').text.includes(png.toString('base64')), 'the image was sent twice');
    assert.equal(Buffer.from(d.content_base64, 'base64').compare(png), 0);
    assert.equal(d.size, png.length);
    const image = dl.content.find((c) => c.type === 'image');
    assert.equal(image.mimeType, 'image/png');
    assert.equal(image.data, png.toString('base64'));
  } finally {
    await s.close();
  }
});

const invalid = [
  ['create_sandbox', { timeout: true }, 'timeout'],
  ['create_sandbox', { timeout: '10' }, 'timeout'],
  ['create_sandbox', { timeout: 0 }, 'timeout'],
  ['create_sandbox', { timeout: 86401 }, 'timeout'],
  ['create_sandbox', { timeout: 1.5 }, 'timeout'],
  ['create_sandbox', { cpu: 0 }, 'cpu'],
  ['create_sandbox', { memory: -1 }, 'memory'],
  ['create_sandbox', { envs: { A: 1 } }, 'envs'],
  ['create_sandbox', { envs: ['A=1'] }, 'envs'],
  ['create_sandbox', { envs: { 'BAD-KEY': 'x' } }, 'envs'],
  ['list_sandboxes', { limit: 0 }, 'limit'],
  ['list_sandboxes', { limit: 101 }, 'limit'],
  ['list_sandboxes', { limit: false }, 'limit'],
  ['list_sandboxes', { offset: -1 }, 'offset'],
  ['set_sandbox_timeout', {}, 'timeout'],
  ['set_sandbox_timeout', { timeout: '60' }, 'timeout'],
  ['get_sandbox', { sandbox_id: '' }, 'sandbox_id'],
  ['run_command', { command: 'true', sandbox_id: '' }, 'sandbox_id'],
  ['run_command', { command: 'true', timeout: 'soon' }, 'timeout'],
  ['run_command', {}, 'command'],
  ['run_code', { code: 'x', language: 'cobol' }, 'language'],
  ['write_file', { path: '/app/x' }, 'content'],
  ['upload_file', { path: '/app/x', content_base64: 'not base64!' }, 'content_base64'],
  ['get_background_task', { task_id: 'abc' }, 'task_id'],
];

test('validation: each bad argument is a tool error naming the field, before any sandbox is touched', async () => {
  const before = stateIds(H.home).length;
  const s = await connect();
  try {
    for (const [tool, args, field] of invalid) {
      const e = failed(await s.call(tool, args), 'E8001', field);
      const echoed = JSON.stringify(Object.values(args).filter((v) => typeof v === 'string' && v.length > 3));
      for (const v of JSON.parse(echoed)) assert.ok(!JSON.stringify(e).includes(v), `${tool} echoed ${v}`);
    }
    assert.equal(stateIds(H.home).length, before, 'validation created a sandbox');
    failed(await s.call('get_sandbox', { sandbox_id: 'e2b:iabcdefghij0123456789' }), 'E8015');
    failed(await s.call('get_sandbox', { sandbox_id: 'local:iabcdefghij0123456789' }), 'E8002');
    await assert.rejects(s.client.callTool({ name: 'no_such_tool', arguments: {} }), (e) => e.code === -32602);
  } finally {
    await s.close();
  }
});

test('validation: an argument a tool does not take is refused, naming it and the ones it accepts', async () => {
  const before = stateIds(H.home).length;
  const s = await connect();
  try {
    const { tools } = await s.client.listTools();
    for (const t of tools) assert.equal(t.inputSchema.additionalProperties, false, `${t.name} allows any argument`);
    const create = tools.find((t) => t.name === 'create_sandbox');
    const e = failed(await s.call('create_sandbox', { memory_mb: 256 }), 'E8001', 'memory_mb');
    assert.match(e.message, /memory_mb is not an argument of create_sandbox/);
    for (const k of Object.keys(create.inputSchema.properties)) assert.ok(e.message.includes(k), `${k} not listed: ${e.message}`);
    failed(await s.call('run_command', { command: 'true', cmd: 'rm -rf /' }), 'E8001', 'cmd');
    failed(await s.call('list_sandboxes', { limit: 5, page: 2 }), 'E8001', 'page');
    assert.equal(stateIds(H.home).length, before, 'an unknown argument created a sandbox');
  } finally {
    await s.close();
  }
});

test('a session holds at most 64 sandboxes: the 65th create_sandbox is refused with E8022, and the session goes on', { timeout: 600000 }, async () => {
  // the tenant quota is raised past the session's table, so that the table's own bound is what answers
  fs.writeFileSync(path.join(H.home, 'config.toml'), '[limits]\nsandboxes_per_tenant = 200\ntenant_pool_share = 100\n');
  const before = stateIds(H.home).length;
  const s = await connect();
  try {
    const made = [];
    for (let i = 0; i < 64; i++) made.push(ok(await s.call('create_sandbox', { timeout: 300 })).sandbox_id);
    assert.equal(new Set(made).size, 64);
    const e = failed(await s.call('create_sandbox', { timeout: 300 }), 'E8022');
    assert.match(e.message, /limit|at most|64/i);
    assert.equal(stateIds(H.home).length, before + 64, 'the refused create left a sandbox');
    // the session still works, and a kill makes room
    ok(await s.call('kill_sandbox', { sandbox_id: made[0] }));
    ok(await s.call('create_sandbox', { timeout: 300 }));
  } finally {
    await s.close();
    fs.rmSync(path.join(H.home, 'config.toml'), { force: true });
  }
  for (let i = 0; i < 600 && stateIds(H.home).length > before; i++) await new Promise((r) => setTimeout(r, 100));
  assert.equal(stateIds(H.home).length, before, 'the session\'s sandboxes outlived it');
});

test('concurrency: a slow call does not block ping or another call; cancellation stops the process', async () => {
  const s = await connect(['--template', 'base']);
  try {
    ok(await s.call('run_command', { command: 'true' }));
    const slow = s.call('run_command', { command: 'sleep 3; echo slow' });
    const t0 = Date.now();
    await s.client.ping();
    assert.equal(ok(await s.call('run_command', { command: 'echo fast' })).stdout, 'fast\n');
    assert.ok(Date.now() - t0 < 2500, 'blocked behind the slow call');
    assert.equal(ok(await slow).stdout, 'slow\n');
    // cancellation: the SDK sends notifications/cancelled on abort
    const ac = new AbortController();
    const tag = `sleep ${7000 + Math.floor(Math.random() * 2999)}1`;
    const p = s.client.callTool({ name: 'run_command', arguments: { command: tag } }, undefined, { signal: ac.signal });
    await waitFor(() => hostProcesses(tag).length > 0, 5000);
    ac.abort();
    await assert.rejects(p);
    assert.ok(await waitFor(() => hostProcesses(tag).length === 0, 5000), 'the cancelled command still runs');
    // a cancel that lands before the start event names the pid (the process may
    // already be spawned) still stops it
    for (const ms of [0, 4, 8, 12, 16]) {
      const early = `sleep ${6000 + Math.floor(Math.random() * 999)}${ms}2`;
      const ac2 = new AbortController();
      const p2 = s.client.callTool({ name: 'run_command', arguments: { command: early } }, undefined, { signal: ac2.signal });
      setTimeout(() => ac2.abort(), ms);
      await assert.rejects(p2);
      await sleep(1000); // time for a process the cancel missed to show up
      assert.ok(await waitFor(() => hostProcesses(early).length === 0, 5000), 'a command cancelled early still runs');
    }
    await s.client.ping();
  } finally {
    await s.close();
  }
});

test('progress notifications while a long call runs, and log messages at the set level', async () => {
  const s = await connect(['--template', 'base']);
  try {
    const logs = [];
    s.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
    await s.client.setLoggingLevel('debug');
    const progress = [];
    const r = await s.client.request({ method: 'tools/call', params: { name: 'run_command', arguments: { command: 'for i in 1 2 3; do echo $i; sleep 0.2; done' } } },
      CallToolResultSchema, { onprogress: (p) => progress.push(p) });
    transcripts.push(JSON.stringify(r));
    assert.equal(r.structuredContent.stdout, '1\n2\n3\n');
    assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
    assert.ok(logs.some((l) => l.level === 'info' && /sandbox created/.test(l.data)), JSON.stringify(logs));
  } finally {
    await s.close();
  }
});

test('no secret reaches a tool result or stderr', async () => {
  const s = await connect();
  try {
    transcripts.push(JSON.stringify(await s.call('run_command', { command: 'env; cat /proc/1/environ 2>&1; cat ~/.abx/config.toml 2>&1' })));
    transcripts.push(JSON.stringify(await s.call('list_sandboxes')));
    transcripts.push(JSON.stringify(await s.call('get_sandbox')));
    transcripts.push(JSON.stringify(await s.call('read_file', { path: path.join(H.home, 'config.toml') })));
  } finally {
    await s.close();
  }
  const status = runAbx(['--json', 'mcp', 'status'], { env });
  transcripts.push(status.stdout, status.stderr);
  assert.equal(JSON.parse(status.stdout).api_key_configured, true);
  for (const t of transcripts) assert.ok(!t.includes(SECRET), `secret leaked in: ${t.slice(0, 300)}`);
});

// ---- raw wire ------------------------------------------------------------------

function rawServer() {
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let buf = '';
  const waiters = [];
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiters.shift();
      if (w) w(line);
    }
  });
  const next = (ms = 5000) => new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no reply')), ms);
    waiters.push((l) => { clearTimeout(t); resolve(JSON.parse(l)); });
  });
  const send = (line) => child.stdin.write(line + '\n');
  return { child, send, next };
}

test('raw wire: an unknown protocol version is answered with the newest', async () => {
  const w = rawServer();
  try {
    w.send('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}');
    assert.equal((await w.next()).result.protocolVersion, '2025-11-25');
  } finally {
    w.child.stdin.end();
    await new Promise((r) => w.child.on('close', r));
  }
});

test('raw wire: JSON-RPC errors are right ("id": null where the id could not be read), and the server keeps serving', async () => {
  const w = rawServer();
  try {
    w.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}');
    assert.equal((await w.next()).result.protocolVersion, '2024-11-05');
    // a second initialize in the same session is refused; the session keeps its version
    w.send('{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}');
    const again = await w.next();
    assert.equal(again.error?.code, -32600, JSON.stringify(again));
    assert.equal(again.id, 2);
    w.send('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    const cases = [
      ['{not json', -32700, null],
      ['[{"jsonrpc":"2.0","id":3,"method":"ping"}]', -32600, null],
      ['{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, null],
      ['['.repeat(100000) + ']'.repeat(100000), -32600, null], // nested past the bound: refused before parsing
      ['{"jsonrpc":"1.0","id":4,"method":"ping"}', -32600, 4],
      ['{"jsonrpc":"2.0","id":5,"method":42}', -32600, 5],
      ['{"jsonrpc":"2.0","id":6,"method":"no/such/method"}', -32601, 6],
      ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}', -32602, 7],
      ['{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}', -32602, 8],
      ['{"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"loud"}}', -32602, 9],
      ['"just a string"', -32600, null],
    ];
    for (const [line, code, id] of cases) {
      w.send(line);
      const r = await w.next();
      assert.equal(r.error?.code, code, `${line.slice(0, 80)} -> ${JSON.stringify(r)}`);
      assert.ok('id' in r, `JSON-RPC 2.0: an error reply always has an id (null when unreadable): ${JSON.stringify(r)}`);
      assert.equal(r.id, id);
      w.send('{"jsonrpc":"2.0","id":"p","method":"ping"}');
      assert.deepEqual((await w.next()).result, {});
    }
    // notifications get no reply: the next line answered is the ping
    w.send('{"jsonrpc":"2.0","method":"notifications/whatever"}');
    w.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}');
    w.send('{"jsonrpc":"2.0","id":"q","method":"ping"}');
    assert.equal((await w.next()).id, 'q');
    // an oversized message
    w.child.stdin.write('{"jsonrpc":"2.0","id":10,"method":"ping","params":{"pad":"' + 'x'.repeat(17 << 20) + '"}}\n');
    const big = await w.next(20000);
    assert.equal(big.error.code, -32600);
    assert.equal(big.id, 10, "the id of an over-long request is read and answered");
    w.send('{"jsonrpc":"2.0","id":"r","method":"ping"}');
    assert.equal((await w.next()).id, 'r');
  } finally {
    w.child.stdin.end();
    await new Promise((r) => w.child.on('close', r));
  }
});

test('piped input: calls still running at end of input are answered, a last line without newline counts, then cleanup', async () => {
  const before = stateIds(H.home).length;
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stdin.end([
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"0"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"sleep 1; echo piped-ok"}}}',
    '{"jsonrpc":"2.0","id":3,"method":"ping"}',
  ].join('\n')); // no newline after the last message
  const code = await new Promise((res) => child.on('close', res));
  assert.equal(code, 0);
  const replies = out.trim().split('\n').map((l) => JSON.parse(l));
  const byId = Object.fromEntries(replies.map((r) => [r.id, r]));
  assert.deepEqual(byId[3].result, {});
  assert.equal(byId[2].result.structuredContent.stdout, 'piped-ok\n');
  assert.equal(stateIds(H.home).length, before, 'the lazily created sandbox is destroyed after the answer');
});

test('SIGTERM ends the session and destroys its sandboxes', async () => {
  const before = stateIds(H.home).length;
  const w = rawServer();
  w.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}');
  await w.next();
  w.send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_sandbox","arguments":{}}}');
  const r = await w.next(10000);
  assert.equal(r.result.isError, undefined);
  assert.equal(stateIds(H.home).length, before + 1);
  w.child.kill('SIGTERM');
  const code = await new Promise((res) => w.child.on('close', res));
  assert.equal(code, 0);
  assert.equal(stateIds(H.home).length, before);
});

test('mcp install merges into IDE configs, keeps other entries, refuses non-JSON; status reports it', () => {
  const fakeHome = fs.mkdtempSync(path.join(H.home, 'ide-'));
  const ws = fs.mkdtempSync(path.join(H.home, 'ws-'));
  const e = { ...env, HOME: fakeHome, XDG_CONFIG_HOME: path.join(fakeHome, '.config') };
  fs.mkdirSync(path.join(fakeHome, '.cursor'));
  fs.writeFileSync(path.join(fakeHome, '.cursor', 'mcp.json'), JSON.stringify({ mcpServers: { other: { command: 'x' } }, extra: 1 }), { mode: 0o644 });
  fs.chmodSync(path.join(fakeHome, '.cursor', 'mcp.json'), 0o644);
  let r = runAbx(['mcp', 'install', '--target', 'cursor'], { env: e, cwd: ws });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.statSync(path.join(fakeHome, '.cursor', 'mcp.json')).mode & 0o777, 0o644, 'the config kept its mode');
  assert.match(r.stdout, /MCP Server config written to .*\.cursor\/mcp\.json/);
  assert.match(r.stdout, /Please restart Cursor/);
  assert.ok(!r.stdout.includes(SECRET));
  const cursor = JSON.parse(fs.readFileSync(path.join(fakeHome, '.cursor', 'mcp.json'), 'utf8'));
  assert.deepEqual(cursor.mcpServers.other, { command: 'x' });
  assert.equal(cursor.extra, 1);
  assert.equal(cursor.mcpServers['agent-sandbox'].command, abx);
  assert.deepEqual(cursor.mcpServers['agent-sandbox'].args, ['mcp', 'start']);
  assert.equal(cursor.mcpServers['agent-sandbox'].env.ABX_SANDBOX_API_KEY, SECRET);
  r = runAbx(['mcp', 'install', '--target', 'claude'], { env: e, cwd: ws });
  assert.equal(r.status, 0, r.stderr);
  const claude = JSON.parse(fs.readFileSync(path.join(fakeHome, '.config', 'Claude', 'claude_desktop_config.json'), 'utf8'));
  assert.equal(claude.mcpServers['agent-sandbox'].env.ABX_SANDBOX_API_KEY, SECRET);
  r = runAbx(['mcp', 'install', '--target', 'vscode'], { env: e, cwd: ws });
  assert.equal(r.status, 0, r.stderr);
  const vscode = JSON.parse(fs.readFileSync(path.join(ws, '.vscode', 'mcp.json'), 'utf8'));
  assert.deepEqual(vscode.servers['agent-sandbox'], { command: abx, args: ['mcp', 'start'], type: 'stdio' });
  // Claude Code: the project's .mcp.json, never with the key
  r = runAbx(['mcp', 'install', '--target', 'claude-code'], { env: e, cwd: ws });
  assert.equal(r.status, 0, r.stderr);
  const cc = JSON.parse(fs.readFileSync(path.join(ws, '.mcp.json'), 'utf8'));
  assert.deepEqual(cc.mcpServers['agent-sandbox'], { command: abx, args: ['mcp', 'start'], type: 'stdio' });
  // Gemini CLI, Windsurf, Copilot CLI: the user's own files, with the key
  for (const [target, file, extra] of [['gemini', '.gemini/settings.json', {}], ['windsurf', '.codeium/windsurf/mcp_config.json', {}],
    ['copilot', '.copilot/mcp-config.json', { type: 'local', tools: ['*'] }]]) {
    r = runAbx(['mcp', 'install', '--target', target], { env: e, cwd: ws });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!r.stdout.includes(SECRET));
    const doc = JSON.parse(fs.readFileSync(path.join(fakeHome, file), 'utf8'));
    assert.deepEqual(doc.mcpServers['agent-sandbox'],
      { command: abx, args: ['mcp', 'start'], ...extra, env: { ABX_SANDBOX_API_KEY: SECRET } }, target);
    assert.equal(fs.statSync(path.join(fakeHome, file)).mode & 0o777, 0o600, `${target}: a new file holding the key is 0600`);
  }
  // without a configured key, no env block
  const noKey = { ...e, ABX_SANDBOX_API_KEY: '', ABX_HOME: path.join(fakeHome, 'abxhome') };
  fs.rmSync(path.join(fakeHome, '.cursor', 'mcp.json'));
  assert.equal(runAbx(['mcp', 'install', '--target', 'cursor'], { env: noKey, cwd: ws }).status, 0);
  assert.equal(JSON.parse(fs.readFileSync(path.join(fakeHome, '.cursor', 'mcp.json'), 'utf8')).mcpServers['agent-sandbox'].env, undefined);
  // a file that is not strict JSON is left as it was
  const broken = '{ "mcpServers": { // comment\n } }';
  fs.writeFileSync(path.join(fakeHome, '.cursor', 'mcp.json'), broken);
  r = runAbx(['mcp', 'install', '--target', 'cursor'], { env: e, cwd: ws });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /^abx: E8021: .*not strict JSON \(line 1:/);
  assert.equal(fs.readFileSync(path.join(fakeHome, '.cursor', 'mcp.json'), 'utf8'), broken);
  assert.match(runAbx(['mcp', 'install', '--target', 'emacs'], { env: e }).stderr, /^abx: E8001: /);
  const st = JSON.parse(runAbx(['--json', 'mcp', 'status'], { env: e, cwd: ws }).stdout);
  assert.equal(st.server, 'agent-sandbox');
  assert.equal(st.transport, 'stdio');
  assert.equal(st.tool_count, 15);
  assert.deepEqual(st.tools.sort(), [...EXPECTED_TOOLS].sort());
  assert.equal(st.installations.claude.installed, true);
  assert.equal(st.installations.vscode.installed, true);
  assert.equal(st.installations.cursor.installed, false);
  for (const target of ['gemini', 'windsurf', 'copilot']) assert.equal(st.installations[target].installed, true, target);
  const table = runAbx(['mcp', 'status'], { env: e, cwd: ws });
  assert.match(table.stdout, /transport\s+stdio/);
  assert.ok(!table.stdout.includes(SECRET));
});

test('docs/mcp-tools.md matches the schemas the server sends', async () => {
  const { listTools, render } = await import('../lib/mcp-docs.mjs');
  const { root } = await import('../lib/harness.mjs');
  const page = fs.readFileSync(path.join(root, 'docs', 'mcp-tools.md'), 'utf8');
  assert.equal(page, render(await listTools(abx, H.env)), 'regenerate with: node scripts/gen-mcp-docs.mjs > docs/mcp-tools.md');
});
