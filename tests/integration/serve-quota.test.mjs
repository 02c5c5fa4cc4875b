// serve-quota.test.mjs: quotas per tenant, in libabx, met through every
// door: `abx serve` answers 429 (E2B's status for its concurrency limit)
// with the code E8030, `abx mcp serve` a tool error with it; another
// tenant still creates; a kill makes room again; and no tenant takes more
// than its share of the host's uid ranges (a small pool of its own here).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { privateHome, runAbx, startHttpServer, stopServer } from '../lib/harness.mjs';

const KEY = `e2b_${'e5'.repeat(20)}`;
const OTHER = `e2b_${'f6'.repeat(20)}`;
const homes = [];
after(() => { for (const h of homes) h.cleanup(); });

async function serve(env) {
  const srv = await startHttpServer(['--warm', '0'], { env: { ...env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  const base = `http://127.0.0.1:${srv.port}`;
  const api = async (p, { key = KEY, method = 'GET', body } = {}) => {
    const r = await fetch(`${base}${p}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
    return { status: r.status, json: await r.json().catch(() => null) };
  };
  return { srv, api };
}

test('sandboxes_per_tenant = 3: a key\'s 4th create is 429 E8030 while another key still creates; a kill makes room', async () => {
  const H = privateHome('abx-quota');
  homes.push(H);
  const set = runAbx(['config', 'set', 'limits.sandboxes_per_tenant', '3'], { env: H.env });
  assert.equal(set.status, 0, set.stderr);
  assert.equal(runAbx(['config', 'get', 'limits.sandboxes_per_tenant'], { env: H.env }).stdout.trim(), '3');
  const { srv, api } = await serve(H.env);
  try {
    const mine = [];
    for (let i = 0; i < 3; i++) {
      const r = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } });
      assert.equal(r.status, 201, JSON.stringify(r.json));
      mine.push(r.json.sandboxID);
    }
    const over = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } });
    assert.equal(over.status, 429);
    assert.equal(over.json.code, 429);
    assert.match(over.json.message, /^E8030: .*sandboxes_per_tenant/);
    const theirs = await api('/v2/sandboxes', { key: OTHER, method: 'POST', body: { timeout: 120 } });
    assert.equal(theirs.status, 201, 'another key could not create');
    assert.equal((await api(`/sandboxes/${mine[0]}`, { method: 'DELETE' })).status, 204);
    const again = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } });
    assert.equal(again.status, 201, 'after a kill the key could not create again');
    // the machine's administrator (the CLI, no tenant) has no such quota
    for (let i = 0; i < 4; i++) assert.equal(runAbx(['create', '--timeout', '60'], { env: H.env }).status, 0);
  } finally {
    await stopServer(srv);
  }
});

test('an MCP token over its quota gets a tool error with E8030 and a hint', async () => {
  const H = privateHome('abx-quota-mcp');
  homes.push(H);
  assert.equal(runAbx(['config', 'set', 'limits.sandboxes_per_tenant', '2'], { env: H.env }).status, 0);
  const srv = await startHttpServer([], { env: { ...H.env, ABX_MCP_AUTH_TOKEN: 'quota-token-0123456789' } });
  const c = new Client({ name: 'quota', version: '1' });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(srv.url), { requestInit: { headers: { Authorization: 'Bearer quota-token-0123456789' } } }));
    for (let i = 0; i < 2; i++) assert.ok(!(await c.callTool({ name: 'create_sandbox', arguments: {} })).isError);
    const r = await c.callTool({ name: 'create_sandbox', arguments: {} });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.error.code, 'E8030');
    assert.match(r.structuredContent.error.hint, /sandboxes_per_tenant/);
  } finally {
    await c.close().catch(() => {});
    await stopServer(srv);
  }
});

test('a tenant holds at most its share of the uid pool (4 ranges, 50 %): the third create is refused, another key\'s pass', async () => {
  const H = privateHome('abx-quota-pool');
  homes.push(H);
  // a pool of its own, clear of the one the other tests share
  const env = { ...H.env, ABX_UID_POOL_BASE: String(2000000000 + 65536 * 64 * Math.floor(Math.random() * 100)), ABX_UID_POOL_SLOTS: '4' };
  const { srv, api } = await serve(env);
  try {
    for (let i = 0; i < 2; i++) assert.equal((await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } })).status, 201);
    const over = await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } });
    assert.equal(over.status, 429);
    assert.match(over.json.message, /^E8030: .*uid ranges.*tenant_pool_share/);
    for (let i = 0; i < 2; i++) {
      const r = await api('/v2/sandboxes', { key: OTHER, method: 'POST', body: { timeout: 120 } });
      assert.equal(r.status, 201, `the other key's create ${i + 1}: ${JSON.stringify(r.json)}`);
    }
  } finally {
    await stopServer(srv);
  }
});

test('a tenant holds at most its share of the network addresses (a pool of 4, 50 %): its third networked create is refused, not a networkless one', async () => {
  const H = privateHome('abx-quota-net');
  homes.push(H);
  const env = { ...H.env, ABX_NET_POOL: '198.19.255.0/28' }; // 4 sandboxes' addresses, clear of other tests' pools
  const { srv, api } = await serve(env);
  try {
    const body = { timeout: 120, allow_internet_access: true };
    for (let i = 0; i < 2; i++) {
      const r = await api('/v2/sandboxes', { method: 'POST', body });
      assert.equal(r.status, 201, JSON.stringify(r.json));
    }
    const over = await api('/v2/sandboxes', { method: 'POST', body });
    assert.equal(over.status, 429);
    assert.match(over.json.message, /^E8030: .*network addresses/);
    assert.equal((await api('/v2/sandboxes', { method: 'POST', body: { timeout: 120 } })).status, 201, 'a sandbox without a network');
    for (let i = 0; i < 2; i++) {
      const r = await api('/v2/sandboxes', { key: OTHER, method: 'POST', body });
      assert.equal(r.status, 201, `the other key's networked create ${i + 1}: ${JSON.stringify(r.json)}`);
    }
  } finally {
    await stopServer(srv);
  }
});
