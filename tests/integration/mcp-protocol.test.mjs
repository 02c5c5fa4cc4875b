// mcp-protocol.test.mjs: the protocol features around the tools (issue 26),
// through the official SDK client over STDIO and HTTP and the raw wire:
// resource_link blocks for whole outputs and produced files, read back with
// resources/read (sandbox://ID/PATH) under the tenant rule (another
// tenant's sandbox reads as one that does not exist); tasks for run_code
// and run_command calls that outlive a client's request timeout; the
// stateless 2026-07-28 revision (server/discover, per-request _meta, no
// session id, the default sandbox kept and named) beside 2025-11-25
// sessions on both transports.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { abx, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-protocol');
after(() => H.cleanup());
const LIMIT = 4096;

async function stdioClient() {
  const c = new Client({ name: 'abx-protocol', version: '1' });
  await c.connect(new StdioClientTransport({
    command: abx, args: ['mcp', 'start', '--template', 'base'],
    env: { ...H.env, ABX_MCP_OUTPUT_LIMIT: String(LIMIT) }, stderr: 'pipe',
  }));
  return c;
}

async function httpClient(url, token) {
  const c = new Client({ name: 'abx-protocol', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return c;
}

const links = (r) => r.content.filter((b) => b.type === 'resource_link');

// Prints 20000 numbered lines (108,894 bytes) on stdout and a little on stderr.
const BIG = 'seq 1 20000; echo done >&2';
const SEQ = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');

async function assertWholeOutputLinked(c) {
  const r = await c.callTool({ name: 'run_command', arguments: { command: BIG } });
  assert.equal(r.isError, undefined, JSON.stringify(r));
  assert.equal(r.structuredContent.truncated, true);
  assert.ok(r.structuredContent.stdout.length < SEQ.length, 'the inline part is bounded');
  const [link, ...more] = links(r);
  assert.equal(more.length, 0, 'only the truncated stream is linked');
  assert.equal(link.name, 'stdout');
  assert.equal(link.mimeType, 'text/plain');
  assert.equal(link.size, SEQ.length);
  assert.match(link.uri, /^sandbox:\/\/[^/:]+\/.+/, 'the id is percent-encoded (a URL parser reads no port)');
  const url = new URL(link.uri);
  assert.equal(url.protocol, 'sandbox:');
  assert.equal(decodeURIComponent(url.pathname), r.structuredContent.stdout_path);
  const read = await c.readResource({ uri: link.uri });
  assert.equal(read.contents.length, 1);
  assert.equal(read.contents[0].uri, link.uri);
  assert.equal(read.contents[0].text, SEQ, 'the whole output, byte for byte');
  return link;
}

test('a truncated run_command output comes back whole through its resource_link and resources/read (STDIO)', async () => {
  const c = await stdioClient();
  try {
    assert.ok(c.getServerCapabilities().resources, 'the resources capability is offered');
    const link = await assertWholeOutputLinked(c);
    // an output that fits has no link
    const small = await c.callTool({ name: 'run_command', arguments: { command: 'echo hi' } });
    assert.equal(links(small).length, 0);
    // a file the agent wrote is a resource too; binary bytes come back as a blob
    await c.callTool({ name: 'run_command', arguments: { command: "printf 'a\\0b\\377' > '/tmp/bin file'; echo text > /tmp/t.txt" } });
    const id = decodeURIComponent(new URL(link.uri).host);
    const base = `sandbox://${encodeURIComponent(id)}`;
    const bin = await c.readResource({ uri: `${base}/tmp/bin%20file` });
    assert.equal(Buffer.from(bin.contents[0].blob, 'base64').toString('latin1'), 'a\0b\xff');
    assert.equal(bin.contents[0].mimeType, 'application/octet-stream');
    assert.equal((await c.readResource({ uri: `${base}/tmp/t.txt` })).contents[0].text, 'text\n');
    const templates = await c.listResourceTemplates();
    assert.equal(templates.resourceTemplates[0].uriTemplate, 'sandbox://{sandbox_id}{+path}');
    assert.deepEqual((await c.listResources()).resources, []);
    // not found: a missing file, a sandbox that does not exist, another scheme, a bad escape, a relative path
    for (const uri of [`${base}/tmp/nope`, 'sandbox://local%3Anosuchsandbox/tmp/t.txt', 'file:///etc/passwd',
      `${base}/tmp/%zz`, `${base}/tmp/a%00b`, `sandbox://${encodeURIComponent(id)}`, 'sandbox:///etc/passwd']) {
      await assert.rejects(c.readResource({ uri }), (e) => e.code === -32002 && /Resource not found/.test(e.message), uri);
    }
  } finally {
    await c.close();
  }
});

test('run_code: a produced file and a truncated output are resource_links (STDIO)', async () => {
  const c = await stdioClient();
  try {
    const r = await c.callTool({ name: 'run_code', arguments: { language: 'shell', code: 'seq 1 20000' } });
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const [link] = links(r);
    assert.equal(link.name, 'stdout');
    assert.equal((await c.readResource({ uri: link.uri })).contents[0].text, SEQ);
  } finally {
    await c.close();
  }
});

test('over HTTP, another tenant reads a link exactly as one that does not exist', async () => {
  const tokA = 'a'.repeat(40), tokB = 'b'.repeat(40);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: `${tokA},${tokB}`, ABX_MCP_OUTPUT_LIMIT: String(LIMIT) } });
  const a = await httpClient(srv.url, tokA);
  const b = await httpClient(srv.url, tokB);
  try {
    const link = await assertWholeOutputLinked(a);
    const gone = link.uri.replace(/^sandbox:\/\/[^/]+/, 'sandbox://local%3Anosuchsandbox');
    const errors = [];
    for (const uri of [link.uri, gone]) {
      errors.push(await b.readResource({ uri }).then(() => null, (e) => ({ code: e.code, message: e.message })));
    }
    assert.deepEqual(errors[0], errors[1]);
    assert.equal(errors[0].code, -32002);
  } finally {
    await a.close();
    await b.close();
    assert.equal(await stopServer(srv), 0);
  }
});

// ---- tasks (2025-11-25): a call that outlives the client's request timeout --------------------

test('a run_command task outlives the request timeout that a plain call hits, and is fetched afterwards (STDIO)', async () => {
  const c = await stdioClient();
  try {
    const caps = c.getServerCapabilities();
    assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await c.listTools();
    const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
    assert.equal(support.run_command, 'optional');
    assert.equal(support.run_code, 'optional');
    assert.equal(support.list_files, 'forbidden');
    const build = { name: 'run_command', arguments: { command: 'sleep 3; echo built; echo warn >&2' } };
    // the plain call gives up at the client's 1 s request timeout
    await assert.rejects(c.callTool(build, undefined, { timeout: 1000 }), (e) => e.code === -32001);
    // as a task, every request is short: the task answers at once, tasks/get polls, tasks/result fetches
    const seen = [];
    let result;
    for await (const m of c.experimental.tasks.callToolStream(build, undefined, { task: { ttl: 60000 }, timeout: 1000 })) {
      seen.push(m.type === 'result' || m.type === 'error' ? m.type : `${m.type}:${m.task.status}`);
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') throw m.error;
    }
    assert.equal(seen[0], 'taskCreated:working');
    assert.ok(seen.includes('taskStatus:working'), seen.join(' '));
    assert.deepEqual(seen.slice(-2), ['taskStatus:completed', 'result']);
    assert.equal(result.structuredContent.stdout, 'built\n');
    assert.equal(result.structuredContent.stderr, 'warn\n');
    assert.equal(result._meta['io.modelcontextprotocol/related-task'].taskId.length, 32);
    // fetched again afterwards: the task and its result are kept for its TTL
    const { tasks } = await c.experimental.tasks.listTasks();
    assert.equal(tasks.length, 1);
    const [task] = tasks;
    assert.equal(task.status, 'completed');
    assert.equal(task.ttl, 60000);
    assert.ok(Date.parse(task.createdAt) <= Date.parse(task.lastUpdatedAt));
    const again = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(again.structuredContent.stdout, 'built\n');
    // a finished task cannot be cancelled; an unknown id is not found
    await assert.rejects(c.experimental.tasks.cancelTask(task.taskId), (e) => e.code === -32602);
    await assert.rejects(c.experimental.tasks.getTask('0'.repeat(32)), (e) => e.code === -32602 && /Task not found/.test(e.message));
  } finally {
    await c.close();
  }
});

test('tasks: cancel stops a working run_code; a tool without task support refuses; tasks are the session\'s own (HTTP)', async () => {
  const tokA = 'c'.repeat(40);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: tokA } });
  const a = await httpClient(srv.url, tokA);
  const other = await httpClient(srv.url, tokA); // the same tenant, another session
  try {
    const create = (params) => a.request({ method: 'tools/call', params }, CreateTaskResultSchema);
    const { task } = await create({ name: 'run_code', arguments: { language: 'shell', code: 'sleep 30; echo never' }, task: {} });
    assert.equal(task.status, 'working');
    assert.ok(task.pollInterval > 0);
    assert.equal(task.ttl, 3600000, 'the default TTL when none is asked');
    // another session does not see it
    await assert.rejects(other.experimental.tasks.getTask(task.taskId), (e) => e.code === -32602);
    assert.deepEqual((await other.experimental.tasks.listTasks()).tasks, []);
    const t0 = Date.now();
    const cancelled = await a.experimental.tasks.cancelTask(task.taskId);
    assert.equal(cancelled.status, 'cancelled');
    const r = await a.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    assert.equal(r.isError, true);
    assert.ok(Date.now() - t0 < 10000);
    assert.equal((await a.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    // a tool whose taskSupport is forbidden
    await assert.rejects(create({ name: 'list_files', arguments: { path: '/' }, task: {} }), (e) => e.code === -32601);
    await assert.rejects(create({ name: 'run_code', arguments: { code: '1' }, task: 5 }), (e) => e.code === -32602);
  } finally {
    await a.close();
    await other.close();
    assert.equal(await stopServer(srv), 0);
  }
});

// ---- the stateless revision (2026-07-28) beside 2025-11-25 sessions ----------------------------

const MODERN = '2026-07-28';
const meta = (extra = {}) => ({
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
  ...extra,
});

// One stateless POST: headers mirror the body, as the revision requires.
async function modernPost(url, token, id, method, params = {}, headers = {}) {
  const name = params.name ?? params.uri;
  const h = {
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${token}`,
    'MCP-Protocol-Version': MODERN, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}), ...headers,
  };
  const r = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: meta(), ...params } }) });
  const text = await r.text();
  const line = r.headers.get('content-type')?.includes('text/event-stream')
    ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).find((m) => m.id === id)
    : JSON.parse(text);
  return { status: r.status, sessionId: r.headers.get('mcp-session-id'), body: line };
}

test('2026-07-28 over HTTP: server/discover and tools/call with _meta, no initialize and no session id, beside a 2025-11-25 session', async () => {
  const tokA = 'd'.repeat(40), tokB = 'e'.repeat(40);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: `${tokA},${tokB}` } });
  const legacy = await httpClient(srv.url, tokA); // the SDK speaks 2025-11-25 with a session
  try {
    const d = await modernPost(srv.url, tokA, 1, 'server/discover');
    assert.equal(d.status, 200);
    assert.equal(d.sessionId, null, 'no Mcp-Session-Id in this revision');
    assert.deepEqual(d.body.result.supportedVersions.slice(0, 2), [MODERN, '2025-11-25']);
    assert.ok(d.body.result.capabilities.tools);
    assert.equal(d.body.result.capabilities.tasks, undefined, 'tasks are an extension here, not offered');
    assert.equal(d.body.result.resultType, 'complete');
    assert.equal(d.body.result._meta['io.modelcontextprotocol/serverInfo'].name, 'agent-sandbox');
    const list = await modernPost(srv.url, tokA, 2, 'tools/list');
    assert.equal(list.body.result.tools.length, 15);
    assert.equal(typeof list.body.result.ttlMs, 'number');
    assert.equal(list.body.result.cacheScope, 'private');
    // omit sandbox_id: the first call makes the default and names it; the next one finds it
    const call = (id, args, tok = tokA) => modernPost(srv.url, tok, id, 'tools/call', { name: 'run_command', arguments: args });
    const first = await call(3, { command: 'hostname; echo one > /tmp/state' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const handle = first.body.result.structuredContent.sandbox_id;
    assert.match(handle, /^local:/);
    assert.match(first.body.result.content[0].text, new RegExp(`sandbox_id: ${handle}`));
    const second = await call(4, { command: 'hostname; cat /tmp/state' });
    assert.equal(second.body.result.structuredContent.stdout, `${first.body.result.structuredContent.stdout}one\n`);
    assert.equal(second.body.result.structuredContent.sandbox_id, handle);
    const byHandle = await call(5, { command: 'cat /tmp/state', sandbox_id: handle });
    assert.equal(byHandle.body.result.structuredContent.stdout, 'one\n');
    // the 2025-11-25 session on the same server has a default of its own
    const own = await legacy.callTool({ name: 'run_command', arguments: { command: 'cat /tmp/state 2>&1 || true' } });
    assert.match(own.structuredContent.stdout, /No such file/);
    // another token's stateless calls neither see nor reach tokA's
    const other = await call(6, { command: 'cat /tmp/state 2>&1 || true' }, tokB);
    assert.match(other.body.result.structuredContent.stdout, /No such file/);
    const reach = await call(7, { command: 'true', sandbox_id: handle }, tokB);
    assert.equal(reach.body.result.isError, true);
    assert.match(reach.body.result.structuredContent.error.code, /E8002/);
    // the revision's errors and their HTTP statuses
    let r = await modernPost(srv.url, tokA, 8, 'tools/call', { name: 'run_command', arguments: { command: 'true' } }, { 'Mcp-Name': 'list_files' });
    assert.deepEqual([r.status, r.body.error.code, r.body.id], [400, -32020, 8]);
    r = await modernPost(srv.url, tokA, 9, 'tools/list', {}, { 'MCP-Protocol-Version': '2025-11-25' });
    assert.deepEqual([r.status, r.body.error.code], [400, -32020]);
    r = await fetch(srv.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${tokA}`, 'MCP-Protocol-Version': '2099-01-01', 'Mcp-Method': 'tools/list' }, body: JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: meta({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }) } }) });
    const unsupported = await r.json();
    assert.equal(r.status, 400);
    assert.equal(unsupported.error.code, -32022);
    assert.equal(unsupported.error.data.requested, '2099-01-01');
    assert.ok(unsupported.error.data.supported.includes(MODERN));
    r = await modernPost(srv.url, tokA, 11, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } });
    assert.deepEqual([r.status, r.body.error.code], [400, -32602], 'clientCapabilities is required');
    for (const m of ['initialize', 'ping', 'logging/setLevel', 'tasks/list']) {
      r = await modernPost(srv.url, tokA, 12, m);
      assert.deepEqual([r.status, r.body.error.code], [404, -32601], m);
    }
    // closing a tools/call's stream cancels the call: its command is stopped
    const ac = new AbortController();
    const pending = fetch(srv.url, {
      method: 'POST', signal: ac.signal,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${tokA}`, 'MCP-Protocol-Version': MODERN, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_command' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 20, method: 'tools/call', params: { _meta: meta(), name: 'run_command', arguments: { command: 'sleep 47' } } }),
    }).then((res) => res.text()).catch(() => 'aborted');
    const running = async () => (await call(21, { command: 'pgrep -x sleep >/dev/null && echo yes || echo no' })).body.result.structuredContent.stdout;
    for (let i = 0; i < 50 && (await running()) !== 'yes\n'; i++) await new Promise((res) => setTimeout(res, 100));
    assert.equal(await running(), 'yes\n');
    ac.abort();
    assert.equal(await pending, 'aborted');
    let still = 'yes\n';
    for (let i = 0; i < 50 && still === 'yes\n'; i++) { await new Promise((res) => setTimeout(res, 100)); still = await running(); }
    assert.equal(still, 'no\n', 'the cancelled command still runs');
    // a resource not found is -32602 in this revision
    r = await modernPost(srv.url, tokA, 13, 'resources/read', { uri: `sandbox://${encodeURIComponent(handle)}/nope` });
    assert.deepEqual([r.status, r.body.error.code], [400, -32602]);
  } finally {
    await legacy.close();
    assert.equal(await stopServer(srv), 0);
  }
});

test('2026-07-28 over STDIO: server/discover, then tools/call with _meta, no initialize; the default stays across calls', async () => {
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'ignore'] });
  const answers = new Map();
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const m = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      answers.get(m.id)?.(m);
    }
  });
  const ask = (id, method, params = {}) => new Promise((resolve) => {
    answers.set(id, resolve);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: { _meta: meta(), ...params } })}\n`);
  });
  try {
    const d = await ask(1, 'server/discover');
    assert.ok(d.result.supportedVersions.includes(MODERN));
    const a = await ask(2, 'tools/call', { name: 'run_command', arguments: { command: 'echo x > /tmp/s; hostname' } });
    const b = await ask(3, 'tools/call', { name: 'run_command', arguments: { command: 'cat /tmp/s; hostname' } });
    assert.equal(b.result.structuredContent.stdout, `x\n${a.result.structuredContent.stdout}`);
    assert.equal(a.result.structuredContent.sandbox_id, b.result.structuredContent.sandbox_id);
    assert.equal(b.result.resultType, 'complete');
    const bad = await ask(4, 'tools/list', { _meta: meta({ 'io.modelcontextprotocol/protocolVersion': '1.0' }) });
    assert.equal(bad.error.code, -32022);
  } finally {
    child.stdin.end();
    await new Promise((r) => child.on('close', r));
  }
});
