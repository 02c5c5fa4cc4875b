// mcp-http-tenants.test.mjs: `abx mcp serve` separates its clients. A token
// is a tenant: its sessions see and touch only the sandboxes its sessions
// created; another tenant's id, or a CLI sandbox's, is answered exactly as
// an id that does not exist. With no token configured the server still
// authenticates (a generated token in a 0600 file); --no-auth is explicit.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runAbx, privateHome, stateIds, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-tenants');
after(() => H.cleanup());

const init = (v = '2025-11-25') => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: v, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
const post = (url, body, headers = {}) => fetch(url, {
  method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body),
  headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
});

async function client(url, token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const c = new Client({ name: 'abx-tenants', version: '1.0.0' });
  await c.connect(transport);
  return { c, call: (name, args = {}) => c.callTool({ name, arguments: args }) };
}

test('no token configured: a generated one in a 0600 file, its path printed and never its value', async () => {
  const file = path.join(H.home, 'mcp-token');
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: '' } });
  let token;
  try {
    const st = fs.statSync(file);
    assert.equal(st.mode & 0o777, 0o600);
    token = fs.readFileSync(file, 'utf8').trim();
    assert.match(token, /^[0-9a-f]{64}$/, '256 bits from the CSPRNG, hex');
    assert.ok(srv.stderr().includes(file), srv.stderr());
    assert.ok(!srv.stderr().includes(token), 'the token value was printed');
    assert.equal((await post(srv.url, init())).status, 401);
    assert.equal((await post(srv.url, init(), { Authorization: `Bearer ${token}` })).status, 200);
  } finally {
    await stopServer(srv);
  }
  // the next start uses the same file
  const srv2 = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: '' } });
  try {
    assert.equal((await post(srv2.url, init(), { Authorization: `Bearer ${token}` })).status, 200);
  } finally {
    await stopServer(srv2);
  }
  // --no-auth is loopback-only, and says so
  const srv3 = await startHttpServer(['--no-auth'], { env: H.env });
  assert.match(srv3.stderr(), /WARNING: --no-auth/);
  assert.equal((await post(srv3.url, init())).status, 200);
  await stopServer(srv3);
  const r = runAbx(['mcp', 'serve', '--no-auth', '--listen', '0.0.0.0:0'], { env: H.env, timeout: 10000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /E8020/);
});

test('Bearer: the empty string, a prefix, a longer string and another case are all refused', async () => {
  const tok = 'tenant-token-' + 'k'.repeat(24);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: `${tok},,` } });
  try {
    for (const h of ['Bearer ', 'Bearer', `Bearer ${tok.slice(0, -1)}`, `Bearer ${tok.slice(0, 1)}`, `Bearer ${tok}k`,
      `Bearer ${tok.toUpperCase()}`, `Basic ${tok}`, tok, `Bearer  ${tok}`]) {
      assert.equal((await post(srv.url, init(), { Authorization: h })).status, 401, h);
    }
    assert.equal((await post(srv.url, init(), { Authorization: `Bearer ${tok}` })).status, 200);
  } finally {
    await stopServer(srv);
  }
});

test('tenants: another token\'s sandboxes and CLI sandboxes answer exactly as ids that do not exist', async () => {
  const tokA = 'tenant-a-' + 'a'.repeat(32), tokB = 'tenant-b-' + 'b'.repeat(32);
  const cli = runAbx(['create', '--timeout', '300', '--env', 'CLI_SECRET=cli-s3cret'], { env: H.env }).stdout.trim();
  assert.match(cli, /^local:i/);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: `${tokA},${tokB}` } });
  try {
    const a = await client(srv.url, tokA), a2 = await client(srv.url, tokA), b = await client(srv.url, tokB);
    const created = await a.call('create_sandbox', { envs: { A_SECRET: 'a-s3cret' } });
    const idA = created.structuredContent.sandbox_id;
    await a.call('write_file', { path: '/app/secret.txt', content: 'a-file-s3cret' });
    // the same tenant's other session sees and uses it
    const listA2 = (await a2.call('list_sandboxes')).structuredContent.sandboxes.map((x) => x.sandbox_id);
    assert.deepEqual(listA2, [idA]);
    assert.equal((await a2.call('run_command', { command: 'echo $A_SECRET', sandbox_id: idA })).structuredContent.stdout, 'a-s3cret\n');
    // B sees nothing of A's, nor the CLI's
    const listB = (await b.call('list_sandboxes')).structuredContent.sandboxes;
    assert.deepEqual(listB, []);
    const ghost = 'local:i' + '0'.repeat(20);
    const calls = [
      ['get_sandbox', {}], ['run_command', { command: 'echo $A_SECRET $CLI_SECRET' }], ['read_file', { path: '/app/secret.txt' }],
      ['list_files', { path: '/app' }], ['write_file', { path: '/app/x', content: 'x' }], ['run_code', { code: 'print(1)' }],
      ['set_sandbox_timeout', { timeout: 60 }], ['start_background_task', { command: 'sleep 1' }],
      ['download_file', { path: '/app/secret.txt' }], ['kill_sandbox', {}],
    ];
    for (const [name, args] of calls) {
      const none = await b.call(name, { ...args, sandbox_id: ghost });
      assert.equal(none.isError, true, name);
      for (const other of [idA, cli, cli.replace('local:', '')]) {
        const r = await b.call(name, { ...args, sandbox_id: other });
        assert.deepEqual(r, none, `${name} on ${other} differs from an unknown id`);
      }
    }
    // a tenant gets the code's sentence only, never libabx's detail (it may name the host's paths)
    const task = (await a.call('get_background_task', { task_id: '999999' })).structuredContent.error;
    assert.equal(task.code, 'E8026');
    assert.equal(task.message, 'no such background task in this sandbox');
    // nothing B did reached A's sandbox or the CLI's
    assert.equal((await a.call('read_file', { path: '/app/secret.txt' })).structuredContent.content, 'a-file-s3cret');
    assert.ok(stateIds(H.home).includes(idA.replace('local:', '')));
    assert.ok(stateIds(H.home).includes(cli.replace('local:', '')));
    for (const k of [a, a2, b]) await k.c.close();
  } finally {
    await stopServer(srv);
    runAbx(['kill', cli], { env: H.env });
  }
  assert.deepEqual(stateIds(H.home), [], 'the server left sandboxes');
});

test('a JSON-RPC batch nested 100000 deep is refused; the server lives on', async () => {
  const tok = 'tenant-deep-' + 'd'.repeat(24);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: tok } });
  try {
    const auth = { Authorization: `Bearer ${tok}` };
    const r = await post(srv.url, init('2025-03-26'), auth);
    const h = { ...auth, 'Mcp-Session-Id': r.headers.get('mcp-session-id'), 'MCP-Protocol-Version': '2025-03-26' };
    for (const depth of [1000, 100000]) {
      const deep = await post(srv.url, '['.repeat(depth) + ']'.repeat(depth), h);
      assert.equal(deep.status, 400);
      const body = await deep.json();
      assert.equal(body.id, null);
    }
    assert.equal((await post(srv.url, { jsonrpc: '2.0', id: 9, method: 'ping' }, h)).status, 200);
    assert.equal(srv.child.exitCode, null, 'the server died');
  } finally {
    await stopServer(srv);
  }
});

test('1100 unauthenticated connections trickling headers do not lock out a token holder', { timeout: 60000 }, async () => {
  const net = await import('node:net');
  const tok = 'tenant-flood-' + 'f'.repeat(24);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: tok, ABX_MCP_HEADER_TIMEOUT: '3' } });
  const socks = [];
  let closedByServer = 0, trickle;
  try {
    // the attacker: another loopback address, 1100 connections, a byte now and then
    for (let i = 0; i < 1100; i++) {
      const sk = net.connect({ host: '127.0.0.1', port: srv.port, localAddress: '127.0.0.2' });
      sk.on('error', () => {});
      sk.on('close', () => { closedByServer++; });
      sk.on('connect', () => sk.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '));
      socks.push(sk);
    }
    trickle = setInterval(() => { for (const sk of socks) if (!sk.destroyed) sk.write('a'); }, 500);
    await new Promise((r) => setTimeout(r, 1000));
    // the token holder, meanwhile, on the usual address: served, end to end
    const k = await client(srv.url, tok);
    const t0 = Date.now();
    const r = await k.call('run_command', { command: 'echo still-served' });
    assert.equal(r.structuredContent.stdout, 'still-served\n');
    assert.ok(Date.now() - t0 < 20000);
    await k.c.close();
    // connections past the per-address limit were refused at once, and those
    // held open by trickling were cut at the header deadline
    await new Promise((r) => setTimeout(r, 4500));
    assert.equal(closedByServer, 1100, `${closedByServer} of 1100 attacker connections closed`);
  } finally {
    clearInterval(trickle);
    for (const sk of socks) sk.destroy();
    await stopServer(srv);
  }
});

test('ambiguous requests are refused: two Content-Lengths, two Hosts, userinfo in Host or Origin', async () => {
  const net = await import('node:net');
  const tok = 'tenant-headers-' + 'h'.repeat(24);
  const srv = await startHttpServer(['--template', 'base'], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: tok } });
  const raw = (head, body = '') => new Promise((resolve) => {
    const sk = net.connect({ host: '127.0.0.1', port: srv.port });
    let got = '';
    sk.on('data', (d) => { got += d; });
    sk.on('close', () => resolve(Number((/^HTTP\/1\.1 (\d+)/.exec(got) || [])[1] || 0)));
    sk.on('error', () => {});
    sk.end(head.join('\r\n') + '\r\n\r\n' + body);
  });
  const body = JSON.stringify(init());
  const base = ['POST /mcp HTTP/1.1', 'Content-Type: application/json', 'Accept: application/json, text/event-stream',
    `Authorization: Bearer ${tok}`, 'Connection: close'];
  try {
    assert.equal(await raw([...base, 'Host: 127.0.0.1', `Content-Length: ${body.length}`], body), 200);
    assert.equal(await raw([...base, 'Host: 127.0.0.1', `Content-Length: ${body.length}`, 'Content-Length: 5'], body), 400);
    assert.equal(await raw([...base, 'Host: 127.0.0.1', 'Host: evil.example', `Content-Length: ${body.length}`], body), 400);
    for (const host of ['localhost:80@evil.example', 'localhost@evil.example', 'localhost:80/x', 'localhost:abc', 'localhost:123456']) {
      assert.equal(await raw([...base, `Host: ${host}`, `Content-Length: ${body.length}`], body), 403, host);
    }
    for (const origin of ['http://localhost:80@evil.example', 'http://localhost@evil.example', 'http://evil.example']) {
      assert.equal(await raw([...base, 'Host: 127.0.0.1', `Origin: ${origin}`, `Content-Length: ${body.length}`], body), 403, origin);
    }
    assert.equal(await raw([...base, 'Host: localhost:8080', 'Origin: http://localhost:8080', `Content-Length: ${body.length}`], body), 200);
  } finally {
    await stopServer(srv);
  }
});
