// serve-e2b.test.mjs: `abx serve` as an E2B-protocol host, driven by E2B's
// own SDKs (npm e2b and @e2b/code-interpreter), unmodified and configured
// only through their environment, plus raw HTTP for what the SDKs hide:
// keys as tenants, E2B's error shapes, bad input.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, root, privateHome, startHttpServer, stopServer, runAbx, runAbxAsync } from '../lib/harness.mjs';

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
  assert.ok(!fs.existsSync(path.join(H.home, 'sandboxes', sbx.sandboxId)), 'the killed sandbox left its state directory');
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

test('E2B code interpreter: every language E2B accepts runs (python, js, ts, bash), or answers an execution error naming those that do', async () => {
  const { Sandbox } = await import('@e2b/code-interpreter');
  const sbx = await Sandbox.create({ timeoutMs: 300000 });
  try {
    let r = await sbx.runCode('echo $((6 * 7)); echo warn >&2; pwd', { language: 'bash' });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.deepEqual([r.logs.stdout.join(''), r.logs.stderr.join('')], ['42\n/home/user\n', 'warn\n']);
    r = await sbx.runCode('interface P { x: number }\nconst p: P = { x: 41 };\np.x + 1', { language: 'ts' });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.text, '42');
    r = await sbx.runCode('let k: number = 5', { language: 'typescript' });
    r = await sbx.runCode('k * 2', { language: 'typescript' });
    assert.equal(r.text, '10', 'a typescript context keeps its state');
    r = await sbx.runCode('[1, 2].map((n) => n * 2)', { language: 'js' });
    assert.equal(r.text, '[ 2, 4 ]');
    const ctx = await sbx.createCodeContext({ language: 'bash' });
    assert.equal(ctx.language, 'bash');
    r = await sbx.runCode('echo in a context', { context: ctx });
    assert.equal(r.logs.stdout.join(''), 'in a context\n');
    for (const language of ['r', 'java', 'cobol']) {
      r = await sbx.runCode('1 + 1', { language });
      assert.equal(r.error?.name, 'UnsupportedLanguage', language);
      assert.match(r.error.value, new RegExp(`^language ${language} has no kernel in this sandbox; it runs python, javascript, typescript and bash$`));
    }
  } finally {
    await sbx.kill();
  }
});

test('lifecycle onTimeout "pause": at its timeout the sandbox is paused, not killed; connect resumes it with its files and processes', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 3000, lifecycle: { onTimeout: 'pause' } });
  try {
    await sbx.files.write('/home/user/kept.txt', 'kept');
    await sbx.commands.run('sleep 600', { background: true });
    const state = async () => (await (await api(`/sandboxes/${sbx.sandboxId}`)).json()).state;
    let st = await state();
    for (let i = 0; i < 100 && st !== 'paused'; i++) { await new Promise((r) => setTimeout(r, 100)); st = await state(); }
    assert.equal(st, 'paused', 'paused at its timeout');
    const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60000 });
    assert.equal(await state(), 'running');
    assert.equal(await again.files.read('/home/user/kept.txt'), 'kept');
    assert.ok((await again.commands.list()).some((p) => p.cmd.includes('sleep') || (p.args || []).join(' ').includes('600')), 'the process is still there');
  } finally {
    await sbx.kill();
  }
  // without it, the timeout kills
  const gone = await Sandbox.create({ timeoutMs: 2000 });
  await new Promise((r) => setTimeout(r, 4000));
  assert.equal((await api(`/sandboxes/${gone.sandboxId}`)).status, 404);
});

test('signed URLs: downloadUrl and uploadUrl work with plain HTTP (they name no sandbox: the signature finds it); tampered or expired ones are refused', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  const other = await Sandbox.create({ timeoutMs: 120000 });
  try {
    await sbx.files.write('/home/user/d.txt', 'download me');
    await other.files.write('/home/user/d.txt', 'the other one');
    const durl = await sbx.downloadUrl('/home/user/d.txt');
    const u = new URL(durl);
    assert.equal(u.origin, base, 'E2B_SANDBOX_URL: the URL names no sandbox');
    assert.match(u.searchParams.get('signature'), /^v1_/);
    let r = await fetch(durl);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'download me');
    const form = new FormData();
    form.append('file', new Blob(['uploaded through a signed URL']), 'u.txt');
    r = await fetch(await sbx.uploadUrl('/home/user/u.txt'), { method: 'POST', body: form });
    assert.equal(r.status, 200, await r.text());
    assert.equal(await sbx.files.read('/home/user/u.txt'), 'uploaded through a signed URL');
    assert.equal(await other.files.exists('/home/user/u.txt'), false);
    // a download URL does not upload; another path, a forged signature, an expired one: refused
    const up = new FormData();
    up.append('file', new Blob(['x']), 'x');
    r = await fetch(durl, { method: 'POST', body: up });
    assert.ok(r.status >= 400, `upload with a download signature: ${r.status}`);
    const moved = new URL(durl);
    moved.searchParams.set('path', '/etc/passwd');
    r = await fetch(moved);
    assert.ok(r.status === 401 || r.status === 403, `tampered path: ${r.status}`);
    const forged = new URL(durl);
    forged.searchParams.set('signature', `v1_${'A'.repeat(43)}`);
    assert.ok([401, 403].includes((await fetch(forged)).status));
    const soon = await sbx.downloadUrl('/home/user/d.txt', { useSignatureExpiration: 1 });
    assert.equal((await fetch(soon)).status, 200);
    await new Promise((res) => setTimeout(res, 2100));
    assert.ok([401, 403].includes((await fetch(soon)).status), 'an expired signature');
  } finally {
    await sbx.kill();
    await other.kill();
  }
});

test('pause freezes the sandbox (processes stopped, memory and files kept); connect resumes it', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    const counter = await sbx.commands.run('i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done', { background: true });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await sbx.pause(), true);
    assert.equal(await Sandbox.pause(sbx.sandboxId), false); // already paused: 409
    assert.equal((await sbx.getInfo()).state, 'paused');
    const paused = (await Sandbox.list({ query: { state: ['paused'] } }).nextItems()).map((x) => x.sandboxId);
    assert.ok(paused.includes(sbx.sandboxId));
    const r = await api(`/sandboxes/${sbx.sandboxId}`);
    const token = (await r.json()).envdAccessToken;
    // the count read twice while paused (the data plane answers; the sandbox's processes do not run)
    const read = async () => Number(await (await fetch(`${base}/files?path=/tmp/count&username=root`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token } })).text());
    const before = await read();
    await new Promise((res) => setTimeout(res, 600));
    const stillPaused = await read();
    assert.equal(stillPaused, before, `it ran while paused: ${before} then ${stillPaused}`);
    const again = await Sandbox.connect(sbx.sandboxId); // resumes
    assert.equal((await again.getInfo()).state, 'running');
    const atResume = Number(await again.files.read('/tmp/count'));
    await new Promise((res) => setTimeout(res, 500));
    assert.ok(Number(await again.files.read('/tmp/count')) > atResume + 3, 'it did not run again after resume');
    assert.ok((await again.commands.list()).some((p) => p.pid === counter.pid), 'the process did not survive the pause');
  } finally {
    await sbx.kill();
  }
});

test('getHost: a web server on the sandbox\'s own loopback, reached at http://${getHost(port)} (PORT-ID.DOMAIN:LISTEN_PORT); getMetrics', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    await sbx.files.write('/tmp/site/index.html', 'page from inside\n');
    await sbx.commands.run('cd /tmp/site && exec python3 -m http.server 8000 --bind 127.0.0.1', { background: true });
    // a URL's authority as E2B's docs use it: `http://${getHost(p)}`, the listener's port included;
    // the name resolved to loopback as browsers and systemd-resolved resolve *.localhost
    const host = sbx.getHost(8000);
    assert.equal(host, `8000-${sbx.sandboxId}.localhost:${srv.port}`);
    const loopback = (name, opts, cb) => (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4));
    let status = 0, body = '';
    for (let i = 0; i < 50 && status !== 200; i++) {
      ({ status, body } = await new Promise((resolve) => {
        const req = http.get(`http://${host}/index.html`, { lookup: loopback }, (res) => {
          let b = '';
          res.on('data', (d) => { b += d; });
          res.on('end', () => resolve({ status: res.statusCode, body: b }));
        });
        req.on('error', () => resolve({ status: 0, body: '' }));
      }));
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual([status, body], [200, 'page from inside\n']);
    // a port nothing listens on: E2B's 502
    const closed = await fetch(`${base}/`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8001' } });
    assert.equal(closed.status, 502);
    const metrics = await sbx.getMetrics();
    assert.ok(metrics.length >= 1);
    const m = metrics.at(-1);
    assert.equal(m.memTotal, 512 * 1024 * 1024);
    assert.ok(m.memUsed > 0 && m.memUsed < m.memTotal, JSON.stringify(m));
    assert.ok(m.diskTotal > 0 && m.cpuCount >= 1);
  } finally {
    await sbx.kill();
  }
});

test('watchers: watchDir streams; CreateWatcher, GetWatcherEvents and RemoveWatcher (E2B\'s Python SDK) poll', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    const seen = [];
    const handle = await sbx.files.watchDir('/app', (e) => seen.push(`${e.type}:${e.name}`));
    const token = (await (await api(`/sandboxes/${sbx.sandboxId}`)).json()).envdAccessToken;
    const rpc = (name, body) => fetch(`${base}/filesystem.Filesystem/${name}`, { method: 'POST', body: JSON.stringify(body), headers: {
      'Content-Type': 'application/json', 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token,
      Authorization: `Basic ${Buffer.from('user:').toString('base64')}` } });
    let r = await rpc('CreateWatcher', { path: '/app', recursive: false });
    assert.equal(r.status, 200);
    const { watcherId } = await r.json();
    assert.match(watcherId, /^[0-9a-f]{32}$/);
    await sbx.files.write('/app/new.txt', 'x');
    await new Promise((res) => setTimeout(res, 300));
    r = await rpc('GetWatcherEvents', { watcherId });
    const events = (await r.json()).events;
    assert.ok(events.some((e) => e.name === 'new.txt' && e.type === 'EVENT_TYPE_CREATE'), JSON.stringify(events));
    r = await rpc('GetWatcherEvents', { watcherId });
    assert.deepEqual((await r.json()).events, []); // drained
    assert.equal((await rpc('RemoveWatcher', { watcherId })).status, 200);
    assert.notEqual((await rpc('GetWatcherEvents', { watcherId })).status, 200);
    assert.ok(seen.includes('create:new.txt') || seen.some((x) => x.endsWith(':new.txt')), seen.join(','));
    await handle.stop();
  } finally {
    await sbx.kill();
  }
});

test('allowPublicTraffic false: the sandbox\'s ports need its traffic access token; runCode still works (the SDK sends it)', async () => {
  const { Sandbox } = await import('@e2b/code-interpreter');
  const sbx = await Sandbox.create({ timeoutMs: 120000, network: { allowPublicTraffic: false } });
  try {
    assert.match(sbx.trafficAccessToken || '', /^[0-9a-f]{32}$/);
    assert.equal((await sbx.runCode('print(40 + 2)')).logs.stdout.join(''), '42\n');
    await sbx.files.write('/tmp/site/index.html', 'private page\n');
    await sbx.commands.run('cd /tmp/site && exec python3 -m http.server 8000 --bind 127.0.0.1', { background: true });
    const get = (headers) => fetch(`${base}/index.html`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '8000', ...headers } });
    let r;
    for (let i = 0; i < 50; i++) {
      r = await get({ 'e2b-traffic-access-token': sbx.trafficAccessToken });
      if (r.status === 200) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(r.status, 200);
    assert.equal(await r.text(), 'private page\n');
    assert.equal((await get({})).status, 403);
    assert.equal((await get({ 'e2b-traffic-access-token': '0'.repeat(32) })).status, 403);
    // compared whole: empty, a prefix, the token with more after it, another case
    const t = sbx.trafficAccessToken;
    for (const wrong of ['', t.slice(0, 1), t.slice(0, 31), `${t}0`, t.toUpperCase()]) assert.equal((await get({ 'e2b-traffic-access-token': wrong })).status, 403, JSON.stringify(wrong));
    // and by Host: the same rule
    const byHost = (token) => new Promise((resolve, reject) => {
      const q = http.request(`${base}/index.html`, { headers: { Host: `8000-${sbx.sandboxId}.localhost:${srv.port}`, 'e2b-traffic-access-token': token } }, (res) => { res.resume(); resolve(res.statusCode); });
      q.on('error', reject);
      q.end();
    });
    assert.equal(await byHost(''), 403);
    assert.equal(await byHost(t.slice(0, 16)), 403);
    assert.equal(await byHost(t), 200);
  } finally {
    await sbx.kill();
  }
});

test('a create that names no timeout lives 300 s, as on E2B\'s cloud (the SDK\'s Sandbox.create() and the raw API); --default-timeout changes it', async () => {
  const { Sandbox } = await import('e2b');
  const life = async (id, b = base, key = KEY) => {
    const info = await (await fetch(`${b}/sandboxes/${id}`, { headers: { 'X-API-Key': key } })).json();
    return Math.round((new Date(info.endAt) - new Date(info.startedAt)) / 1000);
  };
  const sbx = await Sandbox.create();
  try {
    assert.ok(Math.abs((await life(sbx.sandboxId)) - 300) <= 2, `${await life(sbx.sandboxId)} s`);
    assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n');
  } finally {
    await sbx.kill();
  }
  const raw = await (await api('/sandboxes', { method: 'POST', body: { templateID: 'base' } })).json();
  try {
    assert.ok(Math.abs((await life(raw.sandboxID)) - 300) <= 2);
  } finally {
    await api(`/sandboxes/${raw.sandboxID}`, { method: 'DELETE' });
  }
  const other = await startHttpServer(['--default-timeout', '42'], { env: { ...H.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['serve'] });
  try {
    const b = `http://127.0.0.1:${other.port}`;
    const made = await (await fetch(`${b}/sandboxes`, { method: 'POST', headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: '{"templateID":"base"}' })).json();
    assert.ok(Math.abs((await life(made.sandboxID, b)) - 42) <= 2);
    await fetch(`${b}/sandboxes/${made.sandboxID}`, { method: 'DELETE', headers: { 'X-API-Key': KEY } });
  } finally {
    await stopServer(other);
  }
  const r = runAbx(['serve', '--default-timeout', '0'], { env: H.env });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--default-timeout/);
});

test('connect never shortens a sandbox\'s life: created for 120 s, a connect for 10 s keeps endAt; a longer one extends it', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    const endAt = async () => new Date((await (await api(`/sandboxes/${sbx.sandboxId}`)).json()).endAt).getTime();
    const before = await endAt();
    let r = await api(`/sandboxes/${sbx.sandboxId}/connect`, { method: 'POST', body: { timeout: 10 } });
    assert.ok(r.status === 200 || r.status === 201, String(r.status));
    assert.equal(await endAt(), before);
    await Sandbox.connect(sbx.sandboxId, { timeoutMs: 10000 });
    assert.equal(await endAt(), before);
    r = await api(`/sandboxes/${sbx.sandboxId}/connect`, { method: 'POST', body: { timeout: 600 } });
    assert.ok(r.status === 200 || r.status === 201, String(r.status));
    assert.ok(await endAt() > before + 400000);
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
    assert.equal(r.status, 404); // as E2B's API: 404, "template '…' not found"
    assert.deepEqual(await r.json(), { code: 404, message: "template 'no-such-template' not found" });
    r = await api('/v2/sandboxes', { method: 'POST', body: 'x'.repeat(2 << 20) });
    assert.equal(r.status, 413);
    r = await api('/sandboxes/../../etc/passwd');
    assert.equal(r.status, 404);
    r = await api('/v2/sandboxes?limit=1000');
    assert.equal(r.status, 400);
    for (const state of ['bogus', 'running,bogus', 'x'.repeat(100)]) {
      r = await api(`/v2/sandboxes?state=${state}`);
      assert.equal(r.status, 400, state);
    }
    r = await api('/v2/sandboxes?state=running,paused');
    assert.equal(r.status, 200);
    // the data plane: a gone sandbox is 502 (the SDK reads it as not running); a wrong token is the shim's 401
    r = await fetch(`${base}/health`, { headers: { 'E2b-Sandbox-Id': 'i00000000000000000000', 'E2b-Sandbox-Port': '49983' } });
    assert.equal(r.status, 502);
    for (const port of [undefined, 'x', '0', '70000']) {
      r = await fetch(`${base}/health`, { headers: { 'E2b-Sandbox-Id': keep.sandboxId, ...(port ? { 'E2b-Sandbox-Port': port } : {}) } });
      assert.equal(r.status, 400, String(port));
      assert.equal((await r.json()).code, 400);
    }
    r = await fetch(`${base}/process.Process/List`, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', 'E2b-Sandbox-Id': keep.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'wrong' } });
    assert.equal(r.status, 401);
    // a GET or DELETE that carries a body (fetch will not send one) still gets its answer, on both planes
    const token = (await (await api(`/sandboxes/${keep.sandboxId}`)).json()).envdAccessToken;
    const withBody = (method, url, headers) => new Promise((resolve, reject) => {
      const body = 'x'.repeat(300000);
      const q = http.request(`${base}${url}`, { method, headers: { ...headers, 'Content-Length': body.length } }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
      q.on('error', reject);
      q.end(body);
    });
    const plane = { 'E2b-Sandbox-Id': keep.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token };
    for (const method of ['GET', 'DELETE']) {
      for (const url of ['/health', '/files?path=/app/nothing']) assert.ok(await withBody(method, url, plane) >= 200, `${method} ${url}`);
      assert.ok(await withBody(method, `/sandboxes/${keep.sandboxId}/nothing`, { 'X-API-Key': KEY }) >= 400);
    }
    assert.equal(await withBody('GET', '/v2/sandboxes', { 'X-API-Key': KEY }), 200);
    // the Host form routes too
    r = await fetch(`${base}/health`, { headers: { Host: `49983-${keep.sandboxId}.localhost:${srv.port}` } });
    assert.ok(r.status === 200 || r.status === 204, String(r.status));
    assert.equal((await keep.commands.run('echo alive')).stdout, 'alive\n');
    // network settings are accepted and kept (abx acts on them with issue 12)
    r = await api('/v2/sandboxes', { method: 'POST', body: { templateID: 'base', allow_internet_access: false, network: { allowOut: ['203.0.113.7'] }, autoPause: true } });
    assert.equal(r.status, 201);
    const made = await r.json();
    const detail = await (await api(`/sandboxes/${made.sandboxID}`)).json();
    assert.deepEqual([detail.allowInternetAccess, detail.network, detail.lifecycle.onTimeout], [false, { allowOut: ['203.0.113.7'] }, 'pause']);
    assert.equal((await api(`/sandboxes/${made.sandboxID}`, { method: 'DELETE' })).status, 204);
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

// the other side: abx as a client of an E2B-protocol host (here, abx serve)
const C = privateHome('abx-serve-client');
after(() => C.cleanup());

test('abx --provider e2b: every CLI verb against abx serve; a wrong key is E8020; nothing of the key is printed', () => {
  const env = { ...C.env, ABX_SANDBOX_API_KEY: KEY, ABX_SANDBOX_BASE_URL: base };
  const run = (args, opts = {}) => runAbx(args, { env, ...opts });
  let r = run(['--provider', 'e2b', 'create', '--timeout', '120']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  assert.match(id, /^e2b:i[a-z0-9]{20}$/);
  try {
    r = run(['exec', id, 'echo $((6*7)); echo e >&2; exit 4']);
    assert.deepEqual([r.status, r.stdout, r.stderr], [4, '42\n', 'e\n']);
    assert.equal(run(['exec', id, 'cat'], { input: 'piped' }).stdout, 'piped');
    assert.ok(JSON.parse(run(['--provider', 'e2b', '--json', 'list']).stdout).some((s) => s.sandbox_id === id));
    assert.equal(JSON.parse(run(['--json', 'info', id]).stdout).sandbox_id, id);
    assert.equal(run(['timeout', id, '300']).status, 0);
    assert.equal(run(['files', 'mkdir', id, '/app/d']).status, 0);
    r = run(['--json', 'files', 'ls', id, '/app']);
    assert.ok(JSON.parse(r.stdout).some((e) => e.name === 'd'), r.stdout);
    r = run(['--json', 'exec', '--background', id, 'sleep 30']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(run(['ps', id]).stdout, /sleep 30/);
  } finally {
    assert.equal(run(['kill', id]).status, 0);
  }
  r = run(['--json', 'info', id]);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8002');
  r = run(['--json', '--provider', 'e2b', 'create', '--template', 'no-such-template']);
  assert.equal(r.status, 1);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8002');
  assert.match(JSON.parse(r.stderr).error.message, /no template 'no-such-template'/);
  r = runAbx(['--json', '--provider', 'e2b', 'list'], { env: { ...env, ABX_SANDBOX_API_KEY: `e2b_${'0'.repeat(40)}` } });
  const e = JSON.parse(r.stderr).error;
  assert.equal(e.code, 'E8020');
  assert.ok(!r.stderr.includes(base) && !r.stderr.includes('e2b_0000'), r.stderr);
});

test('abx --provider e2b against a hostile API: an endless answer is cut at 8 MiB, a 500 says nothing of its body or URL', async () => {
  const fake = http.createServer((req, res) => {
    if (req.url.startsWith('/v2/sandboxes')) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(1 << 20, 0x20);
      let sent = 0;
      const more = () => { while (sent++ < 64) if (!res.write(chunk)) return res.once('drain', more); res.end(); };
      return more();
    }
    res.writeHead(500, { 'Content-Type': 'application/json' });
    res.end('{"code":500,"message":"secret-upstream-detail at /srv/internal"}');
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  try {
    const env = { ...C.env, ABX_SANDBOX_API_KEY: KEY, ABX_SANDBOX_BASE_URL: `http://127.0.0.1:${fake.address().port}` };
    let r = await runAbxAsync(['--json', '--provider', 'e2b', 'list'], { env });
    let e = JSON.parse(r.stderr).error;
    assert.equal(e.code, 'E8015');
    assert.match(e.message, /more than 8 MiB/);
    r = await runAbxAsync(['--json', 'info', 'e2b:i00000000000000000000'], { env });
    e = JSON.parse(r.stderr).error;
    assert.equal(e.code, 'E8015');
    assert.ok(!r.stderr.includes('secret-upstream-detail') && !r.stderr.includes('127.0.0.1') && !r.stderr.includes(KEY), r.stderr);
  } finally {
    fake.close();
  }
});

test('abx --provider e2b mcp start: the fifteen tools through abx serve, background tasks followed by the session', async () => {
  const env = { ...C.env, ABX_SANDBOX_API_KEY: KEY, ABX_SANDBOX_BASE_URL: base };
  const transport = new StdioClientTransport({ command: abx, args: ['--provider', 'e2b', 'mcp', 'start'], env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-serve-test', version: '1' });
  await c.connect(transport);
  const call = async (name, args = {}) => {
    const r = await c.callTool({ name, arguments: args });
    assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 500));
    return r.structuredContent;
  };
  try {
    assert.equal((await call('run_command', { command: 'echo hi' })).stdout, 'hi\n');
    await call('run_code', { code: 'x = 20' });
    assert.equal((await call('run_code', { code: 'print(x + 22)' })).stdout, '42\n');
    await call('write_file', { path: '/app/a.txt', content: 'abc' });
    assert.equal((await call('read_file', { path: '/app/a.txt' })).content, 'abc');
    const t = await call('start_background_task', { command: 'echo one; sleep 0.3; echo two; sleep 100' });
    let g, seen = '', at = 0;
    for (let i = 0; i < 20 && !seen.includes('two'); i++) { // new output by offset, waiting for it
      g = await call('get_background_task', { task_id: t.task_id, wait: 1, stdout_offset: at });
      seen += g.stdout;
      at = g.stdout_offset;
    }
    assert.equal(seen, 'one\ntwo\n');
    assert.equal(g.status, 'running');
    assert.equal((await call('get_background_task', { task_id: t.task_id, stdout_offset: 0 })).stdout, 'one\ntwo\n');
    assert.deepEqual(await call('stop_background_task', { task_id: t.task_id }), { success: true, status: 'exited' });
    const sid = (await call('get_sandbox')).sandbox_id;
    assert.match(sid, /^e2b:/);
  } finally {
    await c.close();
  }
});

test('a rest plugin (providers/abx-serve): installed, its key from stdin, provider doctor and test pass against abx serve', () => {
  const run = (args, opts = {}) => runAbx(args, { env: C.env, ...opts });
  let r = run(['provider', 'install', path.join(root, 'providers/abx-serve'), '--yes']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(run(['config', 'set', 'providers.abx-serve.api_key'], { input: `${KEY}\n` }).status, 0);
  assert.equal(run(['config', 'set', 'providers.abx-serve.base_url', base]).status, 0);
  r = run(['--json', 'provider', 'doctor', 'abx-serve']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.equal(JSON.parse(r.stdout).checks.find((x) => x.check === 'api').status, 'ok');
  r = run(['--json', 'provider', 'test', 'abx-serve']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const steps = JSON.parse(r.stdout).results.map((x) => `${x.capability}/${x.step}=${x.status}`);
  for (const want of ['sandbox.lifecycle/create=pass', 'exec.run/exit status=pass', 'files.rw/read (binary)=pass', 'sandbox.lifecycle/get after kill=pass'])
    assert.ok(steps.includes(want), `${want} in ${steps}`);
  r = run(['--provider', 'abx-serve', 'create']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  assert.match(id, /^abx-serve:i[a-z0-9]{20}$/);
  assert.equal(run(['exec', id, 'echo rest']).stdout, 'rest\n');
  assert.equal(run(['kill', id]).status, 0);
  assert.ok(!run(['config', 'get']).stdout.includes(KEY));
  // a changed manifest: E8011, nothing sent
  fs.appendFileSync(path.join(C.home, 'providers/abx-serve/abx-provider.toml'), '\n');
  r = run(['--json', '--provider', 'abx-serve', 'list']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8011');
});

test('two hosts: abx serve in one network namespace; the abx CLI and abx mcp start with --provider e2b in another', async (t) => {
  const tag = Math.random().toString(16).slice(2, 8);
  const ip = (...args) => { const r = spawnSync('ip', args, { encoding: 'utf8' }); assert.equal(r.status, 0, `ip ${args.join(' ')}: ${r.stderr}`); };
  // the test's own small world: two namespaces joined by one veth pair, nothing else reachable from either;
  // held by two processes (no `ip netns add`: its mounts would change the host's mount table other tests watch)
  const holders = [0, 1].map(() => spawn('unshare', ['--net', '--', 'sleep', '3600'], { stdio: 'ignore' }));
  t.after(() => { for (const h of holders) h.kill('SIGKILL'); });
  const self = fs.readlinkSync('/proc/self/ns/net');
  for (let i = 0; i < 100 && holders.some((h) => fs.readlinkSync(`/proc/${h.pid}/ns/net`) === self); i++) await new Promise((r) => setTimeout(r, 20));
  const [A, B] = holders.map((h) => `/proc/${h.pid}/ns/net`);
  ip('link', 'add', `va${tag}`, 'type', 'veth', 'peer', 'name', `vb${tag}`);
  ip('link', 'set', `va${tag}`, 'netns', String(holders[0].pid));
  ip('link', 'set', `vb${tag}`, 'netns', String(holders[1].pid));
  const inA = (...args) => { const r = spawnSync('nsenter', [`--net=${A}`, 'ip', ...args], { encoding: 'utf8' }); assert.equal(r.status, 0, r.stderr); };
  const inBip = (...args) => { const r = spawnSync('nsenter', [`--net=${B}`, 'ip', ...args], { encoding: 'utf8' }); assert.equal(r.status, 0, r.stderr); };
  inA('addr', 'add', '10.213.77.1/30', 'dev', `va${tag}`);
  inBip('addr', 'add', '10.213.77.2/30', 'dev', `vb${tag}`);
  for (const [run, dev] of [[inA, `va${tag}`], [inBip, `vb${tag}`]]) {
    run('link', 'set', 'lo', 'up');
    run('link', 'set', dev, 'up');
  }
  const S = privateHome('abx-serve-nsA');
  const srvA = await new Promise((resolve, reject) => {
    const child = spawn('nsenter', [`--net=${A}`, abx, 'serve', '--listen', '10.213.77.1:0'], { env: { ...S.env, ABX_SERVE_API_KEYS: KEY }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err); if (m && !child.port) { child.port = Number(m[1]); resolve(child); } });
    child.on('exit', (code) => { if (!child.port) reject(new Error(`serve exited ${code}: ${err}`)); });
  });
  t.after(async () => { // serve first (it ends its standby sandboxes, and refills no more), then its home
    const gone = new Promise((r) => srvA.on('exit', r));
    srvA.kill('SIGTERM');
    await gone;
    S.cleanup();
  });
  const env = { ...C.env, ABX_SANDBOX_API_KEY: KEY, ABX_SANDBOX_BASE_URL: `http://10.213.77.1:${srvA.port}` };
  const inB = (args, opts = {}) => spawnSync('nsenter', [`--net=${B}`, abx, ...args], { env, encoding: 'utf8', timeout: 60000, ...opts });
  let r = inB(['--provider', 'e2b', 'create', '--timeout', '120']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  r = inB(['exec', id, 'echo made on the other host; cat /etc/hostname']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^made on the other host\n/);
  // the sandbox lives on host A: its state is there, not here
  assert.ok(fs.existsSync(path.join(S.home, 'sandboxes', id.slice(4))), 'the sandbox is not on host A');
  assert.ok(!fs.existsSync(path.join(C.home, 'sandboxes', id.slice(4))));
  const transport = new StdioClientTransport({ command: 'nsenter', args: [`--net=${B}`, abx, '--provider', 'e2b', 'mcp', 'start'], env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-two-hosts', version: '1' });
  await c.connect(transport);
  try {
    const out = await c.callTool({ name: 'run_command', arguments: { command: 'echo via mcp', sandbox_id: id } });
    assert.equal(out.structuredContent.stdout, 'via mcp\n', JSON.stringify(out));
    const made = await c.callTool({ name: 'run_code', arguments: { code: 'print(2 ** 10)' } });
    assert.equal(made.structuredContent.stdout, '1024\n', JSON.stringify(made));
  } finally {
    await c.close();
  }
  assert.equal(inB(['kill', id]).status, 0);
});
