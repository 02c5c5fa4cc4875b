// tenants.test.mjs: one door into libabx, and the tenants behind it. Every
// route of `abx serve` (control plane, data plane by headers and by Host,
// envd, the code interpreter, a user port, abx's own /abx/ routes) tried
// against sandboxes that are not the caller's (one the CLI made, one an
// `abx mcp serve` session made, another key's), with no key and with a
// wrong key: each answers exactly as an id that does not exist, and none
// of them is touched. Then what a host user without root can learn of
// sandbox ids, the warm pool's standbys (nothing reaches them; a claim
// leaves nothing of before), the pre-authentication limits and request
// targets that are not a path.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { privateHome, runAbx, startHttpServer, stopServer, sleep, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-tenants-serve');
const KEY = `e2b_${'c3'.repeat(20)}`;
const OTHER = `e2b_${'d4'.repeat(20)}`;
const TOKEN = 'mcp-tenant-token-0123456789abcdef';
const UNKNOWN = 'i00000000000000000000';
let srv, mcp, base;
const ids = {};

const api = async (p, { key = KEY, method = 'GET', body, headers = {} } = {}) => {
  const r = await fetch(`${base}${p}`, {
    method,
    headers: { ...(key ? { 'X-API-Key': key } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
};

before(async () => {
  srv = await startHttpServer(['--warm', '2'], { env: { ...H.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  base = `http://127.0.0.1:${srv.port}`;
  mcp = await startHttpServer([], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: TOKEN } });
  // a sandbox of the CLI (the machine's administrator, no tenant)
  const cli = runAbx(['create', '--timeout', '600'], { env: H.env });
  assert.equal(cli.status, 0, cli.stderr);
  ids.cli = cli.stdout.trim().replace(/^local:/, '');
  // one an abx mcp serve session made (the tenant of its token)
  const c = new Client({ name: 'tenants', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
  const made = await c.callTool({ name: 'create_sandbox', arguments: { timeout: 600 } });
  assert.ok(!made.isError, JSON.stringify(made));
  ids.mcp = made.structuredContent.sandbox_id.replace(/^local:/, '');
  ids.mcpClient = c;
  // another key's, and the caller's own
  let r = await api('/v2/sandboxes', { key: OTHER, method: 'POST', body: { timeout: 600 } });
  assert.equal(r.status, 201, r.text);
  ids.other = JSON.parse(r.text).sandboxID;
  r = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 600 } });
  assert.equal(r.status, 201, r.text);
  ids.own = JSON.parse(r.text).sandboxID;
  ids.ownToken = JSON.parse(r.text).envdAccessToken;
});

after(async () => {
  await ids.mcpClient?.close().catch(() => {});
  if (mcp) await stopServer(mcp);
  if (srv) await stopServer(srv);
  H.cleanup();
});

const endAt = (id) => JSON.parse(runAbx(['info', id, '--json'], { env: H.env }).stdout).end_at;

test('control plane: another tenant\'s id (CLI, MCP session, other key) answers as an unknown id, with the key and without', async () => {
  const routes = [
    ['GET', ''], ['DELETE', ''], ['POST', '/timeout', { timeout: 86400 }], ['POST', '/connect', { timeout: 86400 }],
    ['POST', '/pause', {}], ['POST', '/resume', { timeout: 60 }], ['GET', '/metrics'],
    ['PUT', '/network', { allow_internet_access: true }],
  ];
  const before = { cli: endAt(ids.cli), mcp: endAt(ids.mcp) };
  for (const key of [KEY, null, 'e2b_wrong']) {
    for (const [method, suffix, body] of routes) {
      for (const prefix of ['/sandboxes/', '/v2/sandboxes/']) {
        const unknown = await api(`${prefix}${UNKNOWN}${suffix}`, { key, method, body });
        for (const who of ['cli', 'mcp', 'other']) {
          const r = await api(`${prefix}${ids[who]}${suffix}`, { key, method, body });
          assert.deepEqual(r, unknown, `${method} ${prefix}ID${suffix} (${who}, key ${key ? key.slice(0, 8) : 'none'})`);
        }
        assert.ok([401, 404].includes(unknown.status), `${method} ${suffix}: ${unknown.status}`);
      }
    }
  }
  // none of them was touched: same lifetime, still running, still networkless
  assert.deepEqual({ cli: endAt(ids.cli), mcp: endAt(ids.mcp) }, before);
  for (const who of ['cli', 'mcp']) {
    const info = JSON.parse(runAbx(['info', ids[who], '--json'], { env: H.env }).stdout);
    assert.equal(info.status, 'running', who);
    assert.equal((info.network || { mode: 'none' }).mode, 'none', who);
  }
  const listed = JSON.parse((await api('/v2/sandboxes')).text).map((s) => s.sandboxID);
  assert.deepEqual(listed, [ids.own], 'a key lists its own sandboxes only');
});

test('data plane: every port, by headers and by Host, reaches no sandbox that is not one of this server\'s keys\'', async () => {
  const tries = [
    ['GET', '/health', 49983], ['POST', '/process.Process/List', 49983, '{}'], ['GET', '/files?path=/etc/hostname', 49983],
    ['GET', '/abx/info', 49983], ['POST', '/abx/timeout', 49983, '{"timeout":86400}'], ['POST', '/abx/claim', 49983, '{}'],
    ['GET', '/contexts', 49999], ['POST', '/execute', 49999, '{"code":"1"}'], ['GET', '/abx/info', 49999],
    ['GET', '/', 8000], ['GET', '/abx/info', 8000],
  ];
  // node:http, since fetch does not let a caller set Host
  const send = (method, p, headers, body) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, path: p, method, headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
  for (const key of [null, KEY, 'e2b_wrong']) {
    for (const [method, p, port, body] of tries) {
      for (const form of ['headers', 'host']) {
        const route = (id) => ({
          ...(form === 'headers' ? { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': String(port) } : { Host: `${port}-${id}.localhost:${srv.port}` }),
          ...(key ? { 'X-API-Key': key } : {}),
          'X-Access-Token': 'f'.repeat(64),
        });
        const unknown = await send(method, p, route(UNKNOWN), body);
        assert.equal(unknown.status, 502, `${method} ${p} :${port} ${form}: ${unknown.text}`);
        const whose = key === KEY ? ['cli', 'mcp', 'other'] : ['cli', 'mcp'];
        for (const who of whose) {
          const r = await send(method, p, route(ids[who]), body);
          assert.deepEqual(r, unknown, `${method} ${p} :${port} ${form} (${who}, key ${key ? key.slice(0, 8) : 'none'})`);
        }
      }
    }
  }
  assert.equal(runAbx(['exec', ids.cli, 'echo alive'], { env: H.env }).stdout, 'alive\n');
});

test('data plane of the caller\'s own sandbox: /abx/ is never relayed, envd needs the access token, each port only its routes', async () => {
  const own = (port, extra = {}) => ({ 'E2b-Sandbox-Id': ids.own, 'E2b-Sandbox-Port': String(port), ...extra });
  for (const port of [49983, 49999, 8000]) {
    for (const p of ['/abx/info', '/abx/timeout', '/abx/claim', '/abx/kill', '/abx/network']) {
      const r = await fetch(`${base}${p}`, { method: 'POST', body: '{}', headers: own(port, { 'X-Access-Token': ids.ownToken }) });
      assert.equal(r.status, 404, `${p} on ${port}`);
    }
  }
  let r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: own(49983, { 'Content-Type': 'application/json' }) });
  assert.equal(r.status, 401, 'envd without the access token');
  r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: own(49983, { 'Content-Type': 'application/json', 'X-Access-Token': ids.ownToken }) });
  assert.equal(r.status, 200, 'envd with it');
  r = await fetch(`${base}/execute`, { method: 'POST', body: '{"code":"1+1"}', headers: own(49999, { 'Content-Type': 'application/json' }) });
  assert.equal(r.status, 401, '/execute without the token: none is added for it');
  r = await fetch(`${base}/contexts`, { headers: own(49999) });
  assert.equal(r.status, 200, '/contexts as E2B\'s SDK sends it, without a token');
  r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: own(49999, { 'Content-Type': 'application/json', 'X-Access-Token': ids.ownToken }) });
  assert.equal(r.status, 404, 'envd\'s API is not on the code interpreter\'s port');
  r = await fetch(`${base}/execute`, { method: 'POST', body: '{"code":"1"}', headers: own(49983, { 'Content-Type': 'application/json', 'X-Access-Token': ids.ownToken }) });
  assert.equal(r.status, 404, 'the code interpreter is not on envd\'s port');
  // a GET or DELETE with a body gets an answer, not a closed connection
  for (const method of ['GET', 'DELETE']) {
    const res = await rawRequest(`${method} /health HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${ids.own}\r\nE2b-Sandbox-Port: 49983\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello`);
    assert.match(res, /^HTTP\/1\.1 (200|204|404|405)/, `${method} with a body: ${res.slice(0, 80)}`);
  }
});

test('malformed routing is 400; a request target that is not a path is 400, never a relay', async () => {
  for (const id of ['../../etc', 'x'.repeat(100), 'i$(id)', '']) {
    const r = await fetch(`${base}/health`, { headers: { 'E2b-Sandbox-Id': id, 'E2b-Sandbox-Port': '49983' } });
    assert.equal(r.status, 400, `id ${JSON.stringify(id)}`);
  }
  for (const host of ['99999-iabc.localhost', 'x-iabc.localhost', '8000-i$$.localhost', '-iabc.localhost', '8000-.localhost']) {
    const res = await rawRequest(`GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 400/, `Host ${host}: ${res.slice(0, 60)}`);
  }
  // a dot segment would take a route past the port's check once resolved (/contexts/../abx/kill)
  for (const [port, target] of [[49999, '/contexts/../abx/info'], [49999, '/contexts/%2e%2e/abx/info'], [49983, '/process.Process/../abx/kill'],
    [49999, '/contexts/./x'], [49983, '/files/..'], [8000, '/a/../../abx/info']]) {
    const res = await rawRequest(`GET ${target} HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: ${ids.own}\r\nE2b-Sandbox-Port: ${port}\r\nX-Access-Token: ${ids.ownToken}\r\nConnection: close\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 400/, `${target} on ${port}: ${res.slice(0, 80)}`);
  }
  assert.equal((await api(`/sandboxes/${ids.own}`)).status, 200, 'the sandbox lives on');
  for (const target of [`@127.0.0.1:${srv.port}/health`, `http://127.0.0.1:${srv.port}/health`, '127.0.0.1:80', '*']) {
    const res = await rawRequest(`GET ${target} HTTP/1.1\r\nHost: 49983-${ids.own}.localhost\r\nConnection: close\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 400/, `target ${target}: ${res.slice(0, 80)}`);
  }
});

function rawRequest(text) {
  return new Promise((resolve) => {
    const s = net.connect(srv.port, '127.0.0.1', () => s.end(text));
    let out = '';
    s.on('data', (d) => { out += d; });
    s.on('close', () => resolve(out));
    s.on('error', () => resolve(out));
  });
}

test('a host user without root learns no sandbox id: /proc, /run/abx, /sys/fs/cgroup, root\'s ABX_HOME', async () => {
  const standbys = fs.readdirSync(path.join(H.home, 'sandboxes')).filter((d) => fs.existsSync(path.join(H.home, 'sandboxes', d, 'standby')));
  assert.ok(standbys.length >= 1, 'the warm pool has standbys');
  const all = [ids.cli, ids.mcp, ids.other, ids.own, ...standbys];
  // everything an unprivileged user may read of them, gathered by a shell
  // whose own command line names no id (system binaries only: the checkout
  // may sit where that user cannot reach, such as root's home)
  const script = `
    cat /proc/net/unix /proc/net/tcp 2>/dev/null
    for p in /proc/[0-9]*; do
      for f in cmdline cgroup mountinfo environ status comm; do cat "$p/$f" 2>/dev/null; echo; done
      for l in cwd root exe; do readlink "$p/$l" 2>/dev/null; done
      for fd in "$p"/fd/*; do readlink "$fd" 2>/dev/null; done
    done
    ls -laR /run/abx /sys/fs/cgroup/memory /sys/fs/cgroup/pids "$0" 2>/dev/null
    exit 0`;
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '/bin/sh', '-c', script, H.home], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(r.stdout.length > 10000, 'the unprivileged reader read nothing');
  for (const id of all) assert.ok(!r.stdout.includes(id), `an unprivileged user can read the sandbox id ${id}`);
});

test('standbys answer nothing; a claim leaves nothing of before it: a planted process is gone, the token is new', async () => {
  const dir = path.join(H.home, 'sandboxes');
  const standby = fs.readdirSync(dir).find((d) => fs.existsSync(path.join(dir, d, 'standby')));
  assert.ok(standby, 'a standby sandbox');
  // nothing reaches it through serve (control and data plane), nor through the CLI
  assert.equal((await api(`/sandboxes/${standby}`)).status, 404);
  let r = await fetch(`${base}/abx/claim`, { method: 'POST', body: '{"timeout":60,"envs":{},"metadata":{}}', headers: { 'E2b-Sandbox-Id': standby, 'E2b-Sandbox-Port': '49983' } });
  assert.equal(r.status, 502);
  assert.notEqual(runAbx(['info', standby], { env: H.env }).status, 0);
  // root plants a process in it (its token from its state directory, as only root can)
  const oldToken = fs.readFileSync(path.join(dir, standby, 'token'), 'utf8').trim();
  const sock = path.join(dir, standby, 'envd.sock');
  const body = Buffer.from(JSON.stringify({ process: { cmd: '/bin/sh', args: ['-c', 'sleep 1000 & echo planted > /tmp/planted; wait'] } }));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  fs.writeFileSync(path.join(H.home, 'frame.bin'), frame);
  spawnSync('curl', ['-s', '-m', '2', '--unix-socket', sock, '-H', `X-Access-Token: ${oldToken}`, '-H', 'Content-Type: application/connect+json',
    '--data-binary', `@${path.join(H.home, 'frame.bin')}`, 'http://localhost/process.Process/Start'], { encoding: 'utf8' });
  await sleep(300);
  const seen = spawnSync('curl', ['-s', '--unix-socket', sock, '-H', `X-Access-Token: ${oldToken}`, 'http://localhost/files?path=/tmp/planted&username=root'], { encoding: 'utf8' });
  assert.equal(seen.stdout, 'planted\n', 'the planted process ran in the standby');
  // a create through serve claims a standby (the pool's shape: base, defaults)
  const claimed = [];
  for (let i = 0; i < 3 && !claimed.includes(standby); i++) {
    const c = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } });
    assert.equal(c.status, 201, c.text);
    claimed.push(JSON.parse(c.text).sandboxID);
    if (JSON.parse(c.text).sandboxID === standby) ids.claimedToken = JSON.parse(c.text).envdAccessToken;
  }
  assert.ok(claimed.includes(standby), `the planted standby was not claimed: ${claimed}`);
  assert.notEqual(ids.claimedToken, oldToken, 'the claim kept the standby\'s token');
  const h = { 'E2b-Sandbox-Id': standby, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': ids.claimedToken };
  r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: { ...h, 'Content-Type': 'application/json' } });
  assert.equal(r.status, 200);
  assert.deepEqual((await r.json()).processes || [], [], 'a process from before the claim is still listed');
  // no process of before survives: the sleep is gone from the sandbox
  const ps = runAbx(['exec', standby, 'ps -eo args'], { env: H.env });
  assert.equal(ps.status, 0, ps.stderr);
  assert.ok(!/^sleep 1000/m.test(ps.stdout), `the planted process outlived the claim:\n${ps.stdout}`);
  r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: { ...h, 'X-Access-Token': oldToken, 'Content-Type': 'application/json' } });
  assert.equal(r.status, 401, 'the standby\'s old token still works');
  for (const id of claimed) await api(`/sandboxes/${id}`, { method: 'DELETE' });
});

test('a slow-header flood before authentication leaves a keyed client working', async () => {
  const held = [];
  const flood = Number(process.env.ABX_TEST_FLOOD || 400);
  for (let i = 0; i < flood; i++) {
    const s = net.connect(srv.port, '127.0.0.1');
    s.on('error', () => {});
    s.write('GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n');
    held.push(s);
  }
  await sleep(500);
  try {
    // the per-address limit turns the flood away; a keyed client from
    // another address (127.0.0.2) still works, and from the same one once
    // the header deadline has cut the flood
    const other = await new Promise((resolve) => {
      const s = net.connect({ port: srv.port, host: '127.0.0.1', localAddress: '127.0.0.2' }, () => s.end(`GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: ${KEY}\r\nConnection: close\r\n\r\n`));
      let out = '';
      s.on('data', (d) => { out += d; });
      s.on('close', () => resolve(out));
      s.on('error', (e) => resolve(String(e)));
    });
    assert.match(other, /^HTTP\/1\.1 200/, other.slice(0, 80));
    await waitFor(async () => (await api('/v2/sandboxes')).status === 200, 30000, 500);
  } finally {
    for (const s of held) s.destroy();
  }
});
