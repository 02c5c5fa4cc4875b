// mcp-http.test.mjs: `abx mcp serve` (Streamable HTTP) driven by the official
// SDK's StreamableHTTPClientTransport and by raw fetch for the status codes
// the SDK hides; auth; TTL; graceful shutdown; and a soak of 50 sessions.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runAbx, privateHome, stateIds, startHttpServer, stopServer, sleep, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-http');
after(() => H.cleanup());

async function client(url, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const c = new Client({ name: 'abx-http-tests', version: '1.0.0' });
  await c.connect(transport);
  const call = async (name, args = {}) => {
    const r = await c.callTool({ name, arguments: args });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    return r.structuredContent;
  };
  return { c, transport, call };
}

const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };
const post = (url, body, headers = {}) => fetch(url, {
  method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body),
  headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
});

test('several clients at once, each with its own default sandbox; DELETE destroys only its own', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const clients = await Promise.all([1, 2, 3].map(() => client(srv.url)));
    const hosts = await Promise.all(clients.map(async (k) => (await k.call('run_command', { command: 'hostname' })).stdout.trim()));
    assert.equal(new Set(hosts).size, 3, 'sessions shared a default sandbox');
    assert.equal(stateIds(H.home).length, 3);
    const ids = await Promise.all(clients.map(async (k) => (await k.call('get_sandbox')).sandbox_id));
    // one session's kill_sandbox (no id) kills its own default only
    await clients[0].call('kill_sandbox');
    assert.equal((await clients[1].call('run_command', { command: 'hostname' })).stdout.trim(), hosts[1]);
    // DELETE ends a session and destroys its sandboxes on the host
    await clients[1].transport.terminateSession();
    await waitFor(() => !stateIds(H.home).includes(ids[1].replace('local:', '')), 5000);
    assert.ok(!stateIds(H.home).includes(ids[1].replace('local:', '')));
    assert.ok(stateIds(H.home).includes(ids[2].replace('local:', '')), 'another session lost its sandbox');
    for (const k of clients) await k.c.close();
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
  assert.deepEqual(stateIds(H.home), [], 'shutdown left sandboxes');
});

test('raw wire: every status code the transport promises', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  const u = srv.url;
  try {
    let r = await post(u, init);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /application\/json/);
    const sid = r.headers.get('mcp-session-id');
    assert.match(sid, /^[0-9a-f]{32}$/, 'a 128-bit random session id');
    const h = { 'Mcp-Session-Id': sid };
    assert.equal((await post(u, { jsonrpc: '2.0', method: 'notifications/initialized' }, h)).status, 202);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, h)).status, 200);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' })).status, 400, 'missing session id');
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, { ...h, 'MCP-Protocol-Version': '1999-01-01' })).status, 400);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, { ...h, 'MCP-Protocol-Version': '2025-06-18' })).status, 200);
    r = await post(u, '{"jsonrpc":', h);
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32700);
    r = await post(u, [{ jsonrpc: '2.0', id: 3, method: 'ping' }], h);
    assert.equal(r.status, 400);
    assert.equal((await r.json()).error.code, -32600);
    r = await post(u, { jsonrpc: '2.0', id: 4, method: 'no/such' }, h);
    assert.equal((await r.json()).error.code, -32601);
    assert.equal((await fetch(u, { method: 'POST', body: 'x', headers: { 'Content-Type': 'text/plain', ...h } })).status, 415);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 5, method: 'ping', params: { pad: 'x'.repeat(17 << 20) } }, h)).status, 413);
    assert.equal((await fetch(u, { method: 'GET', headers: { Accept: 'text/event-stream', ...h } })).status, 405);
    assert.equal((await fetch(u, { method: 'PUT', headers: h })).status, 405);
    assert.equal((await fetch(u.replace('/mcp', '/other'))).status, 404);
    assert.equal((await post(u, init, { Origin: 'http://evil.example.com' })).status, 403);
    assert.equal((await post(u, init, { Origin: 'http://localhost:1234' })).status, 200);
    // the server keeps serving the session after all that
    assert.equal((await post(u, { jsonrpc: '2.0', id: 6, method: 'ping' }, h)).status, 200);
    // a bad Host (DNS rebinding): fetch cannot forge Host, so speak raw HTTP
    const net = await import('node:net');
    const status = await new Promise((resolve) => {
      const s = net.connect(srv.port, '127.0.0.1', () => {
        const body = JSON.stringify(init);
        s.write(`POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      });
      s.once('data', (d) => { resolve(Number(/HTTP\/1\.1 (\d+)/.exec(String(d))[1])); s.destroy(); });
    });
    assert.equal(status, 403);
    // batches: refused on 2025-11-25, answered as one array on 2025-03-26
    r = await post(u, { ...init, params: { ...init.params, protocolVersion: '2025-03-26' } });
    const old = { 'Mcp-Session-Id': r.headers.get('mcp-session-id') };
    r = await post(u, [{ jsonrpc: '2.0', id: 'a', method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 'b', method: 'ping' }], old);
    assert.equal(r.status, 200);
    assert.deepEqual((await r.json()).map((m) => m.id).sort(), ['a', 'b']);
    assert.equal((await post(u, [{ jsonrpc: '2.0', method: 'notifications/initialized' }], old)).status, 202);
    assert.equal((await fetch(u, { method: 'DELETE', headers: h })).status, 200);
    assert.equal((await post(u, { jsonrpc: '2.0', id: 7, method: 'ping' }, h)).status, 404, 'a deleted session is gone');
    assert.equal((await fetch(u, { method: 'DELETE', headers: h })).status, 404);
  } finally {
    await stopServer(srv);
  }
});

test('auth: Bearer tokens, 401 with WWW-Authenticate, sessions bound to their token, tokens never logged', async () => {
  const tokA = 'token-a-' + 'x'.repeat(24), tokB = 'token-b-' + 'y'.repeat(24);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: `${tokA},${tokB}` } });
  const u = srv.url;
  try {
    let r = await post(u, init);
    assert.equal(r.status, 401);
    assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    r = await post(u, init, { Authorization: `Bearer ${tokA}x` });
    assert.equal(r.status, 401);
    r = await post(u, init, { Authorization: `Bearer ${tokA}` });
    assert.equal(r.status, 200);
    const sid = r.headers.get('mcp-session-id');
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': sid, Authorization: `Bearer ${tokA}` })).status, 200);
    // another valid token cannot use or end this session
    assert.equal((await post(u, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': sid, Authorization: `Bearer ${tokB}` })).status, 404);
    assert.equal((await fetch(u, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid, Authorization: `Bearer ${tokB}` } })).status, 404);
    assert.equal((await fetch(u, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } })).status, 401);
    // the SDK client with a token works end to end
    const k = await client(u, { Authorization: `Bearer ${tokB}` });
    assert.equal((await k.call('run_command', { command: 'echo ok' })).stdout, 'ok\n');
    await k.c.close();
  } finally {
    await stopServer(srv);
  }
  assert.ok(!srv.stderr().includes(tokA) && !srv.stderr().includes(tokB), 'a token reached the log');
  // a token file works the same way, and a non-loopback address needs one
  const file = path.join(H.home, 'tokens');
  fs.writeFileSync(file, `${tokA}\n`, { mode: 0o600 });
  const srv2 = await startHttpServer(['--auth-token-file', file], { env: H.env });
  assert.equal((await post(srv2.url, init)).status, 401);
  assert.equal((await post(srv2.url, init, { Authorization: `Bearer ${tokA}` })).status, 200);
  await stopServer(srv2);
  const refused = runAbx(['mcp', 'serve', '--no-auth', '--listen', '0.0.0.0:0'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: '' }, timeout: 10000 });
  assert.notEqual(refused.status, 0);
  assert.match(refused.stderr, /^abx: E8020: refusing to serve a non-loopback address without a token/m);
});

test('idle sessions expire after the TTL and their sandboxes are destroyed', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base', '--session-ttl', '2'], { env: H.env });
  try {
    let r = await post(srv.url, init);
    const sid = r.headers.get('mcp-session-id');
    r = await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_sandbox', arguments: {} } }, { 'Mcp-Session-Id': sid });
    assert.equal(r.status, 200);
    assert.equal(stateIds(H.home).length, 1);
    assert.ok(await waitFor(() => stateIds(H.home).length === 0, 8000), 'the idle session kept its sandbox');
    assert.equal((await post(srv.url, { jsonrpc: '2.0', id: 3, method: 'ping' }, { 'Mcp-Session-Id': sid })).status, 404);
  } finally {
    await stopServer(srv);
  }
});

function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

test('soak: 50 concurrent sessions x 40 tool calls, zero errors, nothing left behind', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const fdsBefore = fdCount(srv.child.pid);
    // the clients run in a process of their own, so that when it exits its
    // keep-alive connections close and the server's fd count can be compared
    const script = `
      import { Client } from '@modelcontextprotocol/sdk/client/index.js';
      import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
      let errors = 0, calls = 0;
      await Promise.all(Array.from({ length: 50 }, async (_, i) => {
        const t = new StreamableHTTPClientTransport(new URL(process.argv[1]));
        const c = new Client({ name: 'soak', version: '1' });
        await c.connect(t);
        for (let j = 0; j < 40; j++) {
          try {
            const r = await c.callTool({ name: 'run_command', arguments: { command: 'echo ' + i + '-' + j } });
            if (r.isError || r.structuredContent.stdout !== i + '-' + j + '\\n') errors++;
          } catch { errors++; }
          calls++;
        }
        await t.terminateSession();
        await c.close();
      }));
      console.log(JSON.stringify({ calls, errors }));`;
    const { spawnSync } = await import('node:child_process');
    const { root } = await import('../lib/harness.mjs');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, srv.url], { cwd: root, encoding: 'utf8', timeout: 300000 });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { calls: 2000, errors: 0 });
    assert.ok(await waitFor(() => stateIds(H.home).length === 0, 10000), `sandboxes left: ${stateIds(H.home)}`);
    assert.ok(await waitFor(() => fdCount(srv.child.pid) <= fdsBefore, 5000), `fds grew from ${fdsBefore} to ${fdCount(srv.child.pid)}`);
    assert.equal(runAbx(['list', '--json'], { env: H.env }).stdout.trim(), '[]');
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
});

test('mcp deploy writes the bundle; its bootstrap starts a working, token-protected server', async () => {
  const out = path.join(H.home, 'bundle');
  const r = runAbx(['mcp', 'deploy', '--generate-token', '--output-dir', out, '--name', 'my-mcp', '--memory', '1024'],
    { env: { ...H.env, ALIBABA_CLOUD_REGION_ID: 'cn-shanghai' } });
  assert.equal(r.status, 0, r.stderr);
  const token = fs.readFileSync(path.join(out, 'auth-token'), 'utf8');
  assert.match(token, /^[0-9a-f]{64}$/);
  assert.equal(fs.statSync(path.join(out, 'auth-token')).mode & 0o777, 0o600);
  assert.equal(fs.statSync(path.join(out, 'config.yaml')).mode & 0o777, 0o600);
  assert.ok(!r.stdout.includes(token) && !r.stderr.includes(token), 'the token was printed');
  assert.match(r.stdout, new RegExp(`Bearer ${token.slice(0, 4)}\\*+`));
  assert.match(r.stdout, /Manual deployment steps/);
  const yaml = fs.readFileSync(path.join(out, 'config.yaml'), 'utf8');
  for (const line of ['function_name: "my-mcp"', 'region: "cn-shanghai"', 'memory: 1024', 'timeout: 600', 'methods: [POST, GET, DELETE]', 'enable_session_affinity: true', 'handler: bootstrap']) {
    assert.ok(yaml.includes(line), `config.yaml lacks ${line}`);
  }
  // region precedence: --region beats the environment, which beats the config, which beats the default
  const cfgHome = { ...H.env, ALIBABA_CLOUD_REGION_ID: '' };
  runAbx(['config', 'set', 'region', 'cn-beijing'], { env: cfgHome });
  const regionOf = (args, env) => JSON.parse(runAbx(['--json', 'mcp', 'deploy', '--output-dir', path.join(H.home, 'b2'), ...args], { env: { ...env, ABX_MCP_AUTH_TOKEN: 'x'.repeat(20) } }).stdout).region;
  assert.equal(regionOf(['--region', 'us-west-1'], { ...cfgHome, ALIBABA_CLOUD_REGION_ID: 'cn-shanghai' }), 'us-west-1');
  assert.equal(regionOf([], { ...cfgHome, ALIBABA_CLOUD_REGION_ID: 'cn-shanghai' }), 'cn-shanghai');
  assert.equal(regionOf([], cfgHome), 'cn-beijing');
  runAbx(['config', 'unset', 'region'], { env: cfgHome });
  assert.equal(regionOf([], cfgHome), 'cn-hangzhou');
  const noToken = runAbx(['mcp', 'deploy', '--output-dir', path.join(H.home, 'b3')], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: '' } });
  assert.match(noToken.stderr, /^abx: E8020: /);
  // the bundle's bootstrap, run here, serves MCP and demands the token
  const srv = await startHttpServer([], { bin: path.join(out, 'bootstrap'), serveArgs: [], env: { ...H.env, FC_SERVER_PORT: '0', ABX_MCP_AUTH_TOKEN: token } });
  try {
    assert.equal((await post(srv.url, init)).status, 401);
    const k = await client(srv.url, { Authorization: `Bearer ${token}` });
    assert.equal((await k.call('run_command', { command: 'echo deployed' })).stdout, 'deployed\n');
    await k.transport.terminateSession();
    await k.c.close();
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
});

test('a slow client (slow loris) is cut off while other sessions keep working', async () => {
  const net = await import('node:net');
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: { ...H.env, ABX_MCP_CONNECTION_TIMEOUT: '2' } });
  try {
    const sock = net.connect(srv.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    sock.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl');
    const closed = new Promise((r) => sock.on('close', () => r(true)));
    const k = await client(srv.url);
    assert.equal((await k.call('run_command', { command: 'echo meanwhile' })).stdout, 'meanwhile\n');
    const t0 = Date.now();
    assert.equal(await Promise.race([closed, sleep(8000).then(() => false)]), true, 'the stalled connection stayed open');
    assert.ok(Date.now() - t0 < 8000);
    await k.transport.terminateSession();
    await k.c.close();
  } finally {
    await stopServer(srv);
  }
});

test('the session limit answers a clear error and spares existing sessions', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base', '--max-sessions', '2'], { env: H.env });
  try {
    const a = await post(srv.url, init), b = await post(srv.url, init);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const c = await post(srv.url, init);
    assert.equal(c.status, 503);
    assert.match((await c.json()).error.message, /Too many sessions/);
    assert.equal((await post(srv.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, { 'Mcp-Session-Id': a.headers.get('mcp-session-id') })).status, 200);
    assert.equal((await fetch(srv.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': b.headers.get('mcp-session-id') } })).status, 200);
    assert.equal((await post(srv.url, init)).status, 200, 'a freed slot is usable again');
  } finally {
    await stopServer(srv);
  }
});
