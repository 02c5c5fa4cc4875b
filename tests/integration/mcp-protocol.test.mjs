// mcp-protocol.test.mjs: the protocol features around the tools (issue 26),
// through the official SDK client over STDIO and HTTP and the raw wire:
// resource_link blocks for whole outputs and produced files, read back with
// resources/read (sandbox://ID/PATH) under the tenant rule (another
// tenant's sandbox reads as one that does not exist); tasks for run_code
// and run_command calls that outlive a client's request timeout.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
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
