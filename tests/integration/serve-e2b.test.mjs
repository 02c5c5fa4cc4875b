// serve-e2b.test.mjs: `abx serve` as an E2B-protocol host, driven by E2B's
// own SDKs (npm e2b and @e2b/code-interpreter), unmodified and configured
// only through their environment, plus raw HTTP for what the SDKs hide:
// keys as tenants, E2B's error shapes, bad input.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { abx, privateHome, startHttpServer, stopServer, runAbx } from '../lib/harness.mjs';

const H = privateHome('abx-serve');
const KEY = `e2b_${'a1'.repeat(20)}`;
const OTHER = `e2b_${'b2'.repeat(20)}`;
let srv, base;

before(async () => {
  srv = await startHttpServer([], { env: { ...H.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  base = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = KEY;
});
after(async () => {
  if (srv) await stopServer(srv);
  H.cleanup();
});

const api = (path, { key = KEY, method = 'GET', body, headers = {} } = {}) => fetch(`${base}${path}`, {
  method, headers: { ...(key ? { 'X-API-Key': key } : {}), ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
  body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
});

test('E2B SDK: create with metadata and envs, commands (streaming, exit codes, background, stdin), files, info, timeout, kill', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ metadata: { suite: 'serve' }, envs: { GREETING: 'hi' }, timeoutMs: 120000 });
  assert.match(sbx.sandboxId, /^i[a-z0-9]{20}$/);
  try {
    const seen = [];
    const r = await sbx.commands.run('echo $GREETING; id -un; echo err >&2', { onStdout: (d) => seen.push(d) });
    assert.deepEqual([r.exitCode, r.stdout, r.stderr], [0, 'hi\nuser\n', 'err\n']);
    assert.equal(seen.join(''), 'hi\nuser\n');
    await assert.rejects(sbx.commands.run('exit 3'), (e) => e.exitCode === 3);
    const bg = await sbx.commands.run('read line; echo got $line', { background: true, stdin: true });
    await sbx.commands.sendStdin(bg.pid, 'abc\n');
    const done = await bg.wait();
    assert.equal(done.stdout, 'got abc\n');
    const long = await sbx.commands.run('sleep 60', { background: true });
    assert.ok((await sbx.commands.list()).some((p) => p.pid === long.pid));
    assert.equal(await sbx.commands.kill(long.pid), true);
    await sbx.files.write('/app/t.txt', 'text here');
    assert.equal(await sbx.files.read('/app/t.txt'), 'text here');
    const bytes = Uint8Array.from({ length: 300000 }, (_, i) => (i * 13) & 255);
    await sbx.files.write('/app/b.bin', bytes.buffer);
    assert.deepEqual(Buffer.from(await sbx.files.read('/app/b.bin', { format: 'bytes' })), Buffer.from(bytes));
    assert.equal(await sbx.files.exists('/app/t.txt'), true);
    await sbx.files.makeDir('/app/d');
    await sbx.files.rename('/app/t.txt', '/app/d/t.txt');
    assert.deepEqual((await sbx.files.list('/app/d')).map((e) => e.name), ['t.txt']);
    await sbx.files.remove('/app/d');
    assert.equal(await sbx.files.exists('/app/d'), false);
    const info = await sbx.getInfo();
    assert.deepEqual([info.sandboxId, info.metadata, info.state], [sbx.sandboxId, { suite: 'serve' }, 'running']);
    await sbx.setTimeout(300000);
    const again = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await again.commands.run('echo same')).stdout, 'same\n');
  } finally {
    await sbx.kill();
  }
  assert.equal(await sbx.isRunning(), false);
  assert.equal(await Sandbox.kill(sbx.sandboxId), false); // gone: the SDK reads 404 as false
});

test('E2B code interpreter: runCode keeps state in the sandbox; contexts', async () => {
  const { Sandbox } = await import('@e2b/code-interpreter');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    await sbx.runCode('x = 6 * 7');
    const r = await sbx.runCode('print(x); x + 1');
    assert.deepEqual([r.logs.stdout.join(''), r.text], ['42\n', '43']);
    const ctx = await sbx.createCodeContext({ language: 'python' });
    const other = await sbx.runCode('print("x" in globals())', { context: ctx });
    assert.equal(other.logs.stdout.join(''), 'False\n');
  } finally {
    await sbx.kill();
  }
});

test('Sandbox.list: the key\'s own sandboxes, state and metadata filters, paging', async () => {
  const { Sandbox } = await import('e2b');
  const made = [];
  for (const tag of ['a', 'b', 'c']) made.push(await Sandbox.create({ metadata: { group: 'list', tag }, timeoutMs: 120000 }));
  try {
    const mine = (await Sandbox.list({ query: { metadata: { group: 'list' } } }).nextItems()).map((s) => s.sandboxId).sort();
    assert.deepEqual(mine, made.map((s) => s.sandboxId).sort());
    const one = await Sandbox.list({ query: { metadata: { group: 'list', tag: 'b' } } }).nextItems();
    assert.deepEqual(one.map((s) => s.sandboxId), [made[1].sandboxId]);
    const pager = Sandbox.list({ query: { metadata: { group: 'list' } }, limit: 2 });
    const first = await pager.nextItems();
    assert.equal(first.length, 2);
    assert.equal(pager.hasNext, true);
    const second = await pager.nextItems();
    assert.equal(second.length, 1);
    assert.equal(pager.hasNext, false);
    // another key sees none of them and cannot touch them: 404 as for an unknown id
    const r = await api('/v2/sandboxes?metadata=group%3Dlist', { key: OTHER });
    assert.deepEqual(await r.json(), []);
    for (const [method, path] of [['GET', ''], ['DELETE', ''], ['POST', '/timeout'], ['POST', '/connect']]) {
      const theirs = await api(`/sandboxes/${made[0].sandboxId}${path}`, { key: OTHER, method, body: method === 'POST' ? { timeout: 60 } : undefined });
      const unknown = await api(`/sandboxes/i00000000000000000000${path}`, { key: OTHER, method, body: method === 'POST' ? { timeout: 60 } : undefined });
      assert.equal(theirs.status, 404, `${method} ${path}`);
      assert.deepEqual(await theirs.json(), await unknown.json());
    }
    assert.equal(await made[0].isRunning(), true);
  } finally {
    for (const s of made) await s.kill();
  }
});

test('bad input gets E2B\'s error shapes; other sandboxes keep working', async () => {
  const { Sandbox } = await import('e2b');
  const keep = await Sandbox.create({ timeoutMs: 120000 });
  try {
    let r = await api('/v2/sandboxes', { key: null });
    assert.equal(r.status, 401);
    assert.deepEqual(Object.keys(await r.json()).sort(), ['code', 'message']);
    r = await api('/v2/sandboxes', { key: 'e2b_wrong' });
    assert.equal(r.status, 401);
    for (const body of ['{not json', { timeout: '10' }, { timeout: 0 }, { timeout: 86401 }, { templateID: 7 }, { metadata: { a: 1 } }, { envVars: [] }]) {
      r = await api('/v2/sandboxes', { method: 'POST', body });
      assert.equal(r.status, 400, JSON.stringify(body));
      const e = await r.json();
      assert.equal(e.code, 400);
    }
    r = await api('/v2/sandboxes', { method: 'POST', body: { templateID: 'no-such-template' } });
    assert.equal(r.status, 400);
    r = await api('/v2/sandboxes', { method: 'POST', body: 'x'.repeat(2 << 20) });
    assert.equal(r.status, 413);
    r = await api('/sandboxes/../../etc/passwd');
    assert.equal(r.status, 404);
    r = await api('/v2/sandboxes?limit=1000');
    assert.equal(r.status, 400);
    // the data plane: a gone sandbox is 502 (the SDK reads it as not running); a wrong token is the shim's 401
    r = await fetch(`${base}/health`, { headers: { 'E2b-Sandbox-Id': 'i00000000000000000000', 'E2b-Sandbox-Port': '49983' } });
    assert.equal(r.status, 502);
    r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': keep.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'wrong' } });
    assert.equal(r.status, 401);
    // the Host form routes too
    r = await fetch(`${base}/health`, { headers: { Host: `49983-${keep.sandboxId}.localhost:${srv.port}` } });
    assert.ok(r.status === 200 || r.status === 204, String(r.status));
    assert.equal((await keep.commands.run('echo alive')).stdout, 'alive\n');
  } finally {
    await keep.kill();
  }
});

test('a non-loopback listen without keys is refused; bad keys are refused at start, never printed', () => {
  let r = spawnSync(abx, ['serve', '--listen', '0.0.0.0:0'], { env: H.env, encoding: 'utf8', timeout: 10000 });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /without API keys/);
  r = spawnSync(abx, ['serve', '--listen', '127.0.0.1:0'], { env: { ...H.env, ABX_SERVE_API_KEYS: 'sk-secret-not-a-key' }, encoding: 'utf8', timeout: 10000 });
  assert.notEqual(r.status, 0);
  assert.ok(!r.stderr.includes('sk-secret-not-a-key'));
  assert.ok(!srv.stderr().includes(KEY));
  assert.equal(runAbx(['serve', '--help']).status, 0);
});
