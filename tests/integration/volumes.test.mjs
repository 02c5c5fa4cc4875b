// volumes.test.mjs: volumes as users meet them: `abx volume` and
// `abx create --volume` through build/abx, E2B's JS SDK (Volume,
// volumeMounts) through `abx serve` with two keys as two tenants, and MCP's
// create_sandbox through the official SDK client. Files written by `user`
// survive kill, a SIGKILLed supervisor and a simulated machine restart, with
// their owner; another tenant sees nothing; a full volume keeps what it held.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, privateHome, runAbx, shimPid, stateIds, startHttpServer, stopServer, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-volumes');
after(() => H.cleanup());
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });

function ok(args) {
  const r = abxh(args);
  assert.equal(r.status, 0, `abx ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const create = (args) => ok(['create', '--timeout', '300', ...args]).trim();
const sh = (id, cmd) => ok(['exec', id, cmd]);

/** Every shim of this home, SIGKILLed, and gone: what a crash of abx leaves. */
async function killShims() {
  const dir = path.join(H.home, 'sandboxes');
  const pids = fs.existsSync(dir) ? fs.readdirSync(dir).map((id) => shimPid(H.home, id)).filter(Boolean) : [];
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  await waitFor(() => pids.every((pid) => { try { process.kill(pid, 0); return false; } catch { return true; } }), 10000);
}

/** The loop devices bound to images under this home (a restart leaves none). */
function loopsOfHome() {
  const r = spawnSync('losetup', ['-a'], { encoding: 'utf8' });
  return (r.stdout || '').split('\n').filter((l) => l.includes(H.home));
}

test('abx volume: create, list, inspect, rm; names, sizes and ids checked', () => {
  const made = JSON.parse(ok(['volume', 'create', 'notes', '--json']));
  assert.equal(made.name, 'notes');
  assert.match(made.volume_id, /^vol-[0-9a-f]{24}$/);
  assert.equal(made.size_mb, 0);
  assert.equal(made.in_use, false);
  const sized = JSON.parse(ok(['volume', 'create', 'sized', '--size', '64', '--json']));
  assert.equal(sized.size_mb, 64);
  const list = JSON.parse(ok(['volume', 'list', '--json']));
  assert.deepEqual(list.map((v) => v.name), ['notes', 'sized']);
  assert.equal(JSON.parse(ok(['volume', 'inspect', made.volume_id, '--json'])).name, 'notes'); // by id
  assert.match(ok(['volume', 'list']), /^NAME\s+VOLUME ID\s+SIZE/);
  const twice = abxh(['volume', 'create', 'notes']);
  assert.notEqual(twice.status, 0);
  assert.match(twice.stderr, /E8001: volume notes exists already/);
  for (const bad of ['Upper', '-x', 'a/b', '..', 'x'.repeat(64), '']) {
    const r = abxh(['volume', 'create', bad]);
    assert.notEqual(r.status, 0, bad);
    assert.match(r.stderr, /E80(01|14)/, bad);
  }
  assert.match(abxh(['volume', 'create', 'tiny', '--size', '8']).stderr, /E8014|16/);
  const missing = abxh(['volume', 'inspect', 'nothing-here']);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /E8002: volume nothing-here: no such volume/);
  assert.match(abxh(['volume', 'rm', 'nothing-here']).stderr, /E8002/);
  assert.match(abxh(['volume', 'frobnicate']).stderr, /E8014/);
  ok(['volume', 'rm', 'sized']);
  assert.deepEqual(JSON.parse(ok(['volume', 'list', '--json'])).map((v) => v.name), ['notes']);
  assert.equal(fs.readdirSync(path.join(H.home, 'volumes', '_')).filter((n) => n.startsWith('.')).length, 0,
    'a removal left a trace');
});

test('abx create --volume: bad specs refused before anything starts', () => {
  ok(['volume', 'create', 'specs']);
  const cases = [
    ['specs', /NAME:\/path/], ['specs:data', /plain absolute path/], ['specs:/', /plain absolute path/],
    ['specs:/a/../b', /plain absolute path/], ['specs:/a//b', /plain absolute path/], ['specs:/a/', /plain absolute path/],
    ['specs:/proc/x', /\/proc is the sandbox's own/], ['specs:/etc', /\/etc is the sandbox's own/],
    ['specs:/dev', /\/dev is the sandbox's own/], ['specs:/data:rx', /ro or rw/], ['nosuch:/data', /E8002: volume nosuch/],
  ];
  for (const [spec, want] of cases) {
    const r = abxh(['create', '--volume', spec]);
    assert.notEqual(r.status, 0, spec);
    assert.match(r.stderr, want, spec);
  }
  const twice = abxh(['create', '--volume', 'specs:/a', '--volume', 'specs:/b']);
  assert.match(twice.stderr, /mounted twice/);
  ok(['volume', 'create', 'specs2']);
  assert.match(abxh(['create', '--volume', 'specs:/a', '--volume', 'specs2:/a/b']).stderr, /overlap/);
  const nine = Array.from({ length: 9 }, (_, i) => ['--volume', `specs:/v${i}`]).flat();
  assert.notEqual(abxh(['create', ...nine]).status, 0);
  assert.deepEqual(JSON.parse(ok(['list', '--json'])), [], 'a refused create left a sandbox');
  assert.deepEqual(stateIds(H.home), [], 'a refused create left its state');
  ok(['volume', 'rm', 'specs']);
  ok(['volume', 'rm', 'specs2']);
});

test('files written by user outlive kill, a SIGKILLed supervisor and a restart, with their owner; rm in use refused', async () => {
  ok(['volume', 'create', 'work']);
  ok(['volume', 'create', 'work-img', '--size', '64']);
  const vols = ['--volume', 'work:/data', '--volume', 'work-img:/home/user/img'];
  const a = create(vols);
  sh(a, 'echo one > /data/f && mkdir -p /data/d && echo two > /data/d/g && echo three > /home/user/img/h');
  const info = JSON.parse(ok(['info', a, '--json']));
  assert.deepEqual(info.volumes, [{ name: 'work', path: '/data', read_only: false },
    { name: 'work-img', path: '/home/user/img', read_only: false }]);
  assert.equal(JSON.parse(ok(['volume', 'inspect', 'work', '--json'])).in_use, true);
  const busy = abxh(['volume', 'rm', 'work']);
  assert.equal(busy.status, 1);
  assert.match(busy.stderr, /E8034: volume work is in use by a sandbox/);
  ok(['kill', a]);

  // a new sandbox (its own uid range) sees them, owned by user
  const b = create(vols);
  assert.equal(sh(b, 'cat /data/f /data/d/g /home/user/img/h'), 'one\ntwo\nthree\n');
  assert.equal(sh(b, 'stat -c %U:%G /data/f /data/d /home/user/img/h'), 'user:user\nuser:user\nuser:user\n');
  sh(b, 'echo four > /data/after-kill9 && echo five > /home/user/img/after-kill9');
  await killShims(); // the supervisor dies; what was written stays

  const c = create(vols);
  assert.equal(sh(c, 'cat /data/after-kill9 /home/user/img/after-kill9'), 'four\nfive\n');
  sh(c, 'echo six > /data/before-restart && echo seven > /home/user/img/before-restart');
  // a machine restart: every abx process gone, nothing left mounted or bound
  await killShims();
  await waitFor(() => loopsOfHome().length === 0, 10000);

  // a sandbox from a template (another root, another uid range) sees the same files, same owner
  const d = create(['--template', 'code-interpreter-v1', ...vols]);
  assert.equal(sh(d, 'cat /data/f /data/before-restart /home/user/img/before-restart'), 'one\nsix\nseven\n');
  assert.equal(sh(d, 'stat -c %u /data/before-restart /home/user/img/before-restart'), '1000\n1000\n');
  ok(['kill', d]);
  ok(['volume', 'rm', 'work']); // no sandbox holds it now: a removal waits for an ending one
  ok(['volume', 'rm', 'work-img']);
  await waitFor(() => loopsOfHome().length === 0, 10000);
});

test('read-only mounts, two sandboxes sharing one volume, and a full volume keeping what it held', () => {
  ok(['volume', 'create', 'shared', '--size', '16']);
  const w = create(['--volume', 'shared:/s']);
  const r = create(['--volume', 'shared:/s:ro']);
  sh(w, 'echo from-writer > /s/note');
  assert.equal(sh(r, 'cat /s/note'), 'from-writer\n'); // one filesystem: seen at once
  const ro = abxh(['exec', r, 'touch /s/x']);
  assert.notEqual(ro.status, 0);
  assert.match(ro.stderr, /Read-only file system/);
  // fill it: the write fails, what was there stays whole
  sh(w, 'head -c 4000000 /dev/urandom > /s/keep && sha256sum /s/keep > /tmp/sum');
  const sum = sh(w, 'cat /tmp/sum');
  const full = abxh(['exec', w, 'head -c 40000000 /dev/zero > /s/flood']);
  assert.notEqual(full.status, 0);
  assert.match(full.stderr, /No space left on device/);
  assert.equal(sh(r, 'sha256sum /s/keep'), sum);
  assert.match(sh(w, 'df -k /s | tail -1'), /\s100%\s/);
  sh(w, 'rm /s/flood');
  ok(['kill', w]);
  ok(['kill', r]);
  const again = create(['--volume', 'shared:/s']);
  assert.equal(sh(again, 'sha256sum /s/keep'), sum);
  ok(['kill', again]);
  ok(['volume', 'rm', 'shared']);
});

test('a template cannot send a volume out of the sandbox: the path is made inside, no link followed', () => {
  ok(['volume', 'create', 'linked']);
  // a template whose tree has links where the volume's path goes: to the root and to /proc
  const tree = fs.mkdtempSync(path.join(H.home, 'tree-'));
  fs.mkdirSync(path.join(tree, 'home/user'), { recursive: true });
  fs.symlinkSync('/', path.join(tree, 'escape'));
  fs.symlinkSync('/proc', path.join(tree, 'home/user/p'));
  const tar = path.join(H.home, 'links.tar');
  assert.equal(spawnSync('tar', ['-C', tree, '-cf', tar, '.']).status, 0);
  ok(['template', 'import', 'vol-links', tar]);
  const name = `abx-volume-escape-${process.pid}`;
  for (const spec of [`linked:/escape/${name}`, 'linked:/home/user/p/x', 'linked:/escape']) {
    const r = abxh(['create', '--template', 'vol-links', '--volume', spec]);
    assert.notEqual(r.status, 0, spec);
    assert.match(r.stderr, /E8008: .*volume at \/[^:]+: a component that is not a directory/, spec);
  }
  assert.equal(fs.existsSync(`/${name}`), false, 'a mount point was made on the host');
  assert.deepEqual(JSON.parse(ok(['list', '--json'])), []);
  ok(['template', 'rm', 'vol-links']);
  ok(['volume', 'rm', 'linked']);
});

// ---- E2B's SDK through abx serve: two keys, two tenants ---------------------------------------

const KEY = `e2b_${'c3'.repeat(20)}`;
const OTHER = `e2b_${'d4'.repeat(20)}`;
const S = privateHome('abx-volumes-serve'); // its own: its warm pool is not the CLI tests'
after(() => S.cleanup());
let srv, base;
before(async () => {
  srv = await startHttpServer([], { env: { ...S.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  base = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = KEY;
});
after(async () => { if (srv) await stopServer(srv); });

test('E2B SDK: Volume.create, volumeMounts on create, files kept across sandboxes, list, destroy; tenants apart', async () => {
  const { Sandbox, Volume } = await import('e2b');
  const vol = await Volume.create('e2b-data');
  assert.match(vol.volumeId, /^vol-[0-9a-f]{24}$/);
  assert.equal(vol.name, 'e2b-data');
  const first = await Sandbox.create({ volumeMounts: { '/mnt/data': vol }, timeoutMs: 120000 });
  try {
    await first.files.write('/mnt/data/hello.txt', 'kept');
    const info = await first.getInfo();
    assert.deepEqual(info.volumeMounts, [{ name: 'e2b-data', path: '/mnt/data' }]);
    // in use: a destroy is refused, the volume stays
    await assert.rejects(Volume.destroy(vol.volumeId), /in use/);
  } finally {
    await first.kill();
  }
  const second = await Sandbox.create({ volumeMounts: { '/work': 'e2b-data' }, timeoutMs: 120000 });
  try {
    assert.equal(await second.files.read('/work/hello.txt'), 'kept');
    assert.equal((await second.commands.run('stat -c %U /work/hello.txt')).stdout, 'user\n');
  } finally {
    await second.kill();
  }
  assert.deepEqual((await Volume.list()).map((v) => v.name), ['e2b-data']);
  assert.equal((await Volume.getInfo(vol.volumeId)).name, 'e2b-data');

  // the other key is another tenant: it sees nothing of this one's, and its names are its own
  const theirs = { apiKey: OTHER };
  assert.deepEqual(await Volume.list(theirs), []);
  await assert.rejects(Volume.getInfo(vol.volumeId, theirs), (e) => e.name === 'VolumeNotFoundError');
  assert.equal(await Volume.destroy(vol.volumeId, theirs), false);
  await assert.rejects(Sandbox.create({ apiKey: OTHER, volumeMounts: { '/x': 'e2b-data' } }), /not found/);
  const own = await Volume.create('e2b-data', theirs);
  assert.notEqual(own.volumeId, vol.volumeId);
  const peek = await Sandbox.create({ apiKey: OTHER, volumeMounts: { '/x': own }, timeoutMs: 60000 });
  try {
    assert.equal(await peek.files.exists('/x/hello.txt'), false);
  } finally {
    await peek.kill();
  }
  assert.equal(await Volume.destroy(own.volumeId, theirs), true);
  assert.equal(await Volume.destroy(vol.volumeId), true);
  assert.deepEqual(await Volume.list(), []);
  assert.equal(await Volume.destroy(vol.volumeId), false);
  // bad input answers 400 with E2B's shape
  const bad = await fetch(`${base}/volumes`, { method: 'POST', headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: '{"name": 7}' });
  assert.equal(bad.status, 400);
  const badMounts = await fetch(`${base}/sandboxes`, { method: 'POST', headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ templateID: 'base', volumeMounts: 'x' }) });
  assert.equal(badMounts.status, 400);
});

test('MCP create_sandbox {volumes}: the official SDK client mounts one and reads what another sandbox wrote', async () => {
  ok(['volume', 'create', 'mcp-vol']);
  const a = create(['--volume', 'mcp-vol:/data']);
  sh(a, 'echo via-cli > /data/n');
  ok(['kill', a]);
  const client = new Client({ name: 'volumes-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: abx, args: ['mcp', 'start'], env: H.env, stderr: 'ignore' }));
  try {
    const made = await client.callTool({ name: 'create_sandbox', arguments: { volumes: [{ name: 'mcp-vol', path: '/data', read_only: true }] } });
    assert.ok(!made.isError, JSON.stringify(made.content));
    const r = await client.callTool({ name: 'run_command', arguments: { command: 'cat /data/n; touch /data/m' } });
    assert.match(JSON.stringify(r.structuredContent ?? r.content), /via-cli/);
    assert.match(JSON.stringify(r.structuredContent ?? r.content), /Read-only/);
    const bad = await client.callTool({ name: 'create_sandbox', arguments: { volumes: [{ name: 'mcp-vol' }] } });
    assert.equal(bad.isError, true);
    const unknown = await client.callTool({ name: 'create_sandbox', arguments: { volumes: [{ name: 'nope', path: '/d' }] } });
    assert.equal(unknown.isError, true);
    assert.match(JSON.stringify(unknown.content), /nope/);
  } finally {
    await client.close();
  }
  await waitFor(() => JSON.parse(ok(['volume', 'inspect', 'mcp-vol', '--json'])).in_use === false, 10000);
  ok(['volume', 'rm', 'mcp-vol']);
});
