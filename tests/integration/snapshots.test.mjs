// snapshots.test.mjs: snapshots and forks through build/abx and E2B's SDK:
// a snapshot taken while a process writes holds only complete files; a
// sandbox from it has the files with their owners; 10 forks each see the
// parent's files and not each other's writes; kill -9 of abx (or of the
// sandbox's supervisor) during a snapshot leaves the sandbox running (or a
// durable one at rest) and nothing half-made; bad input; tenants apart.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { abx, privateHome, runAbx, shimPid, sleep, startHttpServer, stopServer, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-snapshots');
after(() => H.cleanup());
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });
function ok(args) {
  const r = abxh(args);
  assert.equal(r.status, 0, `abx ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const sh = (id, cmd) => ok(['exec', id, cmd]);
const bare = (id) => id.replace(/^local:/, '');
const templatesLeft = () => fs.readdirSync(path.join(H.home, 'templates')).filter((n) => n.startsWith('.partial-'));

test('a snapshot taken while a process writes and renames whole files holds only complete ones', async () => {
  ok(['template', 'build', '--builtin', 'code-interpreter-v1']);
  const id = ok(['create', '--template', 'code-interpreter-v1', '--timeout', '600']).trim();
  // each file is written beside, then renamed: complete files end with END
  ok(['exec', '--background', id,
    'mkdir -p /home/user/w && i=0; while true; do i=$((i+1)); for k in $(seq 1 200); do echo "line $k of $i"; done > /home/user/w/.tmp; echo END >> /home/user/w/.tmp; mv /home/user/w/.tmp /home/user/w/f$i; done']);
  await waitFor(() => Number(sh(id, 'ls /home/user/w | wc -l').trim()) > 20, 10000);
  const snaps = [];
  for (let n = 0; n < 4; n++) {
    const r = JSON.parse(ok(['snapshot', 'create', id, '--name', `writer-${n}`, '--json']));
    assert.equal(r.snapshot_id, `writer-${n}`);
    assert.ok(r.snapshot.paused_ms >= 0 && r.snapshot.linked > 1000, JSON.stringify(r.snapshot));
    snaps.push(r.snapshot_id);
    await sleep(100);
  }
  // the writer went on while each snapshot was taken, and after
  const before = Number(sh(id, 'ls /home/user/w | wc -l').trim());
  await sleep(300);
  assert.ok(Number(sh(id, 'ls /home/user/w | wc -l').trim()) > before, 'the sandbox stayed frozen');
  for (const name of snaps) {
    const tree = path.join(H.home, 'templates', name, 'rootfs', 'home/user/w');
    const files = fs.readdirSync(tree).filter((f) => /^f\d+$/.test(f));
    assert.ok(files.length > 10, `${name}: ${files.length} files`);
    for (const f of files) {
      const text = fs.readFileSync(path.join(tree, f), 'utf8');
      assert.ok(text.endsWith('END\n') && text.split('\n').length === 202, `${name}/${f} is not complete`);
    }
    const st = fs.statSync(path.join(tree, files[0]));
    assert.equal(st.uid, 1000, 'owners kept as the store\'s ids');
  }
  // a sandbox from one: the files, owned by user, the template's own programs
  const from = ok(['create', '--template', snaps[0]]).trim();
  assert.match(sh(from, 'tail -1 /home/user/w/f1; stat -c %U /home/user/w/f1; python3 -c "import numpy; print(1)"'), /^END\nuser\n1\n$/);
  ok(['kill', from]);
  ok(['kill', id]);
  // shared with the template store: a link to the template's own file, not a copy
  const pyBin = fs.statSync(path.join(H.home, 'templates', snaps[0], 'rootfs', 'usr/bin/python3.11'));
  assert.ok(pyBin.nlink >= 2, 'an unchanged file was copied, not linked');
  const list = JSON.parse(ok(['snapshot', 'list', '--json'])).map((s) => s.snapshot_id);
  assert.deepEqual(list.sort(), [...snaps].sort());
  for (const name of snaps) ok(['snapshot', 'rm', name]);
  assert.deepEqual(JSON.parse(ok(['snapshot', 'list', '--json'])), []);
});

test('10 forks of one sandbox each see the parent\'s files, and neither the parent\'s later writes nor each other\'s', () => {
  const parent = ok(['create', '--timeout', '300']).trim();
  sh(parent, 'echo from-parent > /home/user/shared && mkdir -p /app/data && echo 42 > /app/data/n');
  const kids = ok(['fork', parent, '--count', '10', '--timeout', '120']).trim().split('\n');
  assert.equal(kids.length, 10);
  assert.equal(new Set(kids).size, 10);
  sh(parent, 'echo after-fork > /home/user/later');
  kids.forEach((k, i) => sh(k, `echo child-${i} > /home/user/mine`));
  const ranges = new Set();
  kids.forEach((k, i) => {
    assert.equal(sh(k, 'cat /home/user/shared /app/data/n /home/user/mine; ls /home/user'), `from-parent\n42\nchild-${i}\nmine\nshared\n`);
    ranges.add(sh(k, 'cat /proc/self/uid_map').trim().split(/\s+/)[1]);
  });
  assert.equal(ranges.size, 10, 'two forks share a host uid range');
  assert.equal(sh(parent, 'ls /home/user'), 'later\nshared\n');
  assert.deepEqual(JSON.parse(ok(['snapshot', 'list', '--json'])), [], 'a fork\'s snapshot is listed');
  assert.equal(JSON.parse(ok(['template', 'list', '--json'])).some((t) => /^fork-/.test(t.name)), false);
  for (const k of [...kids, parent]) ok(['kill', k]);
  assert.match(abxh(['fork', parent]).stderr, /E8002/);
  assert.match(abxh(['fork', 'local:izzzzzzzzzzzzzzzzzzzz', '--count', '2']).stderr, /E8002/);
  assert.match(abxh(['fork', parent, '--count', '65']).stderr, /E8014|64/);
});

test('kill -9 of abx during a snapshot: the sandbox runs on, nothing half-made is listed; of the supervisor: a durable one rests with its files', async () => {
  const id = ok(['create', '--template', 'code-interpreter-v1', '--timeout', '300', '--memory', '2048']).trim();
  sh(id, 'head -c 300000000 /dev/urandom > /home/user/big && echo small > /home/user/small');
  const child = spawn(abx, ['snapshot', 'create', id, '--name', 'killed'], { env: H.env, stdio: 'ignore' });
  const childGone = new Promise((r) => child.on('exit', r)); // listened for at once: it may end before the kill
  await sleep(150);
  child.kill('SIGKILL');
  await childGone;
  await waitFor(() => abxh(['exec', id, 'echo alive']).stdout === 'alive\n', 10000); // thawed, not left frozen
  assert.equal(JSON.parse(ok(['info', id, '--json'])).status, 'running');
  // nothing under the name, or a whole snapshot: never a half one
  const made = JSON.parse(ok(['snapshot', 'list', '--json'])).filter((s) => s.snapshot_id === 'killed');
  if (made.length) ok(['snapshot', 'rm', 'killed']);
  await waitFor(() => { abxh(['template', 'list']); return templatesLeft().length === 0; }, 20000);
  const again = JSON.parse(ok(['snapshot', 'create', id, '--name', 'killed', '--json']));
  assert.equal(again.snapshot.copied_bytes > 300000000, true);
  ok(['snapshot', 'rm', 'killed']);
  ok(['kill', id]);

  const durable = ok(['create', '--persistent', '--timeout', '300', '--memory', '1024']).trim();
  sh(durable, 'head -c 200000000 /dev/urandom > /home/user/big && sha256sum /home/user/big > /home/user/sum && sync');
  const sum = sh(durable, 'cat /home/user/sum');
  const shim = shimPid(H.home, bare(durable));
  assert.ok(shim, 'no supervisor pid recorded');
  const snap = spawn(abx, ['snapshot', 'create', durable, '--name', 'cut'], { env: H.env, stdio: 'ignore' });
  const snapGone = new Promise((r) => snap.on('exit', r));
  await sleep(100);
  try { process.kill(shim, 'SIGKILL'); } catch { /* done already */ }
  await snapGone;
  await waitFor(() => JSON.parse(ok(['info', durable, '--json'])).status === 'paused', 10000);
  ok(['resume', durable]);
  assert.equal(sh(durable, 'sha256sum /home/user/big'), sum);
  ok(['kill', durable]);
  const cut = JSON.parse(ok(['snapshot', 'list', '--json'])).filter((s) => s.snapshot_id === 'cut');
  if (cut.length) ok(['snapshot', 'rm', 'cut']);
});

test('bad input: unknown ids, names taken or malformed, a template that is no snapshot', () => {
  const id = ok(['create']).trim();
  assert.match(abxh(['snapshot', 'create', 'local:izzzzzzzzzzzzzzzzzzzz']).stderr, /E8002/);
  for (const bad of ['Bad', '-x', 'base', 'a/b', 'x'.repeat(64)]) {
    const r = abxh(['snapshot', 'create', id, '--name', bad]);
    assert.notEqual(r.status, 0, bad);
    assert.match(r.stderr, /E8001/, bad);
  }
  ok(['snapshot', 'create', id, '--name', 'taken']);
  assert.match(abxh(['snapshot', 'create', id, '--name', 'taken']).stderr, /E8001: .*exists already/);
  assert.match(abxh(['snapshot', 'rm', 'code-interpreter-v1']).stderr, /E8002: snapshot code-interpreter-v1: no such snapshot/);
  assert.match(abxh(['snapshot', 'rm', 'nothing']).stderr, /E8002/);
  assert.match(abxh(['snapshot', 'frob']).stderr, /E8014/);
  const auto = ok(['snapshot', 'create', id]).trim();
  assert.match(auto, /^snap-[0-9a-f]{16}$/);
  assert.deepEqual(JSON.parse(ok(['snapshot', 'list', '--sandbox', id, '--json'])).map((s) => s.snapshot_id).sort(), [auto, 'taken'].sort());
  ok(['kill', id]);
  ok(['snapshot', 'rm', 'taken']);
  ok(['snapshot', 'rm', auto]);
});

// ---- E2B's SDK: each key its own snapshots -----------------------------------------------------

const KEY = `e2b_${'f6'.repeat(20)}`;
const OTHER = `e2b_${'a7'.repeat(20)}`;
const S = privateHome('abx-snapshots-serve');
after(() => S.cleanup());
let srv;
before(async () => {
  srv = await startHttpServer([], { env: { ...S.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  process.env.E2B_API_URL = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_SANDBOX_URL = process.env.E2B_API_URL;
  process.env.E2B_API_KEY = KEY;
});
after(async () => { if (srv) await stopServer(srv); });

test('E2B SDK: createSnapshot then Sandbox.create(snapshotId); fork; another key sees none of it', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000 });
  try {
    await sbx.files.write('/home/user/e2b-snap.txt', 'snapshotted');
    const snap = await sbx.createSnapshot({ name: 'e2b-snap' });
    const from = await Sandbox.create(snap.snapshotId, { timeoutMs: 60000 });
    assert.equal(await from.files.read('/home/user/e2b-snap.txt'), 'snapshotted');
    await from.kill();
    const kids = await sbx.fork({ count: 3 });
    assert.equal(kids.length, 3);
    for (const k of kids) {
      assert.equal(await k.files.read('/home/user/e2b-snap.txt'), 'snapshotted');
      await k.kill();
    }
    const theirs = { apiKey: OTHER };
    assert.deepEqual(await Sandbox.listSnapshots(theirs).nextItems(), []);
    await assert.rejects(Sandbox.create(snap.snapshotId, theirs), /not found/);
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId, theirs), false);
    // abx serve's warm pool keeps standby sandboxes of the shape last asked
    // for: after a create from the snapshot, some of it. They are nobody's:
    // the snapshot's removal ends them rather than counting them as its users.
    const fromIt = () => fs.readdirSync(path.join(S.home, 'sandboxes')).filter((d) => {
      try { return JSON.parse(fs.readFileSync(path.join(S.home, 'sandboxes', d, 'meta.json'), 'utf8')).template.endsWith('.e2b-snap'); } catch { return false; }
    });
    const again = await Sandbox.create(snap.snapshotId, { timeoutMs: 60000 });
    await again.kill();
    assert.ok(await waitFor(() => fromIt().length > 0, 30000), 'no standby sandbox of the snapshot');
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
    // one still starting then finds its template gone and ends itself
    assert.ok(await waitFor(() => fromIt().length === 0, 15000), `standby sandboxes outlive the snapshot: ${fromIt()}`);
  } finally {
    await sbx.kill();
  }
});
