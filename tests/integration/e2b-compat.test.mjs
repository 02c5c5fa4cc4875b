// e2b-compat.test.mjs: E2B's JS SDKs (the pinned `e2b` and
// `@e2b/code-interpreter`), unmodified, against `abx serve`: one row per
// public call, each ok, differs (how) or unsupported (why), every row run.
// An ok row must work as on E2B's cloud; a differs row must show exactly
// the documented difference; an unsupported row must still fail (so that a
// row that starts working is noticed). docs/e2b-compatibility.md is this
// table rendered: the test fails when they disagree;
// `ABX_UPDATE_COMPAT=1 sh abx.sh test` (or this file alone) rewrites it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { root, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-compat');
const KEY = `e2b_${'c3'.repeat(20)}`;
const DOC = path.join(root, 'docs/e2b-compatibility.md');
let srv;

before(async () => {
  srv = await startHttpServer([], { env: { ...H.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['serve'] });
  process.env.E2B_API_URL = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_SANDBOX_URL = process.env.E2B_API_URL;
  process.env.E2B_API_KEY = KEY;
});
after(async () => {
  if (srv) await stopServer(srv);
  H.cleanup();
});

const version = (pkg) => JSON.parse(fs.readFileSync(path.join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// [area, call, status, note, run(ctx)]: run throws when the row does not hold.
const rows = [
  ['Sandbox', 'Sandbox.create({metadata, envs, timeoutMs})', 'ok', '', async ({ sbx }) => {
    assert.equal((await sbx.commands.run('echo $COMPAT')).stdout, 'yes\n');
  }],
  ['Sandbox', 'Sandbox.create() without timeoutMs', 'ok', 'lives 300 s (`--default-timeout`)', async ({ E2B }) => {
    const s = await E2B.Sandbox.create();
    const info = await s.getInfo();
    await s.kill();
    assert.ok(Math.abs((info.endAt - info.startedAt) / 1000 - 300) <= 2);
  }],
  ['Sandbox', 'Sandbox.connect(id)', 'ok', '', async ({ E2B, sbx }) => {
    const again = await E2B.Sandbox.connect(sbx.sandboxId);
    assert.equal((await again.commands.run('echo $COMPAT')).stdout, 'yes\n');
  }],
  ['Sandbox', 'sandbox.getInfo()', 'ok', '', async ({ sbx }) => {
    const i = await sbx.getInfo();
    assert.equal(i.sandboxId, sbx.sandboxId);
    assert.equal(i.metadata.suite, 'compat');
  }],
  ['Sandbox', 'sandbox.isRunning()', 'ok', '', async ({ sbx }) => assert.equal(await sbx.isRunning(), true)],
  ['Sandbox', 'sandbox.setTimeout(ms)', 'ok', '', async ({ sbx }) => {
    await sbx.setTimeout(200000);
    const i = await sbx.getInfo();
    assert.ok(Math.abs((i.endAt - Date.now()) / 1000 - 200) <= 5);
  }],
  ['Sandbox', 'sandbox.getMetrics()', 'differs', 'one sample, taken now (E2B keeps a history)', async ({ sbx }) => {
    const m = await sbx.getMetrics();
    assert.equal(m.length, 1);
    assert.ok(m[0].memTotal > 0);
  }],
  ['Sandbox', 'sandbox.getHost(port)', 'ok', '`PORT-ID.DOMAIN:LISTEN_PORT`', async ({ sbx }) => {
    assert.equal(sbx.getHost(8000), `8000-${sbx.sandboxId}.localhost:${srv.port}`);
  }],
  ['Sandbox', 'sandbox.uploadUrl() / downloadUrl()', 'ok', 'signed URLs, plain HTTP', async ({ sbx }) => {
    await sbx.files.write('/home/user/dl.txt', 'signed');
    assert.equal(await (await fetch(await sbx.downloadUrl('/home/user/dl.txt'))).text(), 'signed');
  }],
  ['Sandbox', 'sandbox.pause() / Sandbox.connect() resumes', 'differs', 'memory stays resident while paused (E2B snapshots it)', async ({ E2B }) => {
    const s = await E2B.Sandbox.create({ timeoutMs: 120000 });
    await s.files.write('/home/user/p.txt', 'kept');
    await s.pause();
    assert.equal((await s.getInfo()).state, 'paused');
    const r = await E2B.Sandbox.connect(s.sandboxId);
    assert.equal(await r.files.read('/home/user/p.txt'), 'kept');
    await r.kill();
  }],
  ['Sandbox', 'Sandbox.create({lifecycle: {onTimeout: "pause"}})', 'ok', '', async ({ E2B }) => {
    const s = await E2B.Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } });
    let st = '';
    for (let i = 0; i < 80 && st !== 'paused'; i++) { await sleep(100); st = (await s.getInfo()).state; }
    await s.kill();
    assert.equal(st, 'paused');
  }],
  ['Sandbox', 'Sandbox.list({query: {metadata}})', 'ok', '', async ({ E2B, sbx }) => {
    const items = await E2B.Sandbox.list({ query: { metadata: { suite: 'compat' } } }).nextItems();
    assert.ok(items.some((i) => i.sandboxId === sbx.sandboxId));
  }],
  ['Sandbox', 'Sandbox.list({limit}): nextItems / hasNext / nextToken', 'ok', '', async ({ E2B }) => {
    const made = await Promise.all([0, 1].map(() => E2B.Sandbox.create({ timeoutMs: 60000, metadata: { paged: 'yes' } })));
    try {
      const pages = E2B.Sandbox.list({ limit: 1, query: { metadata: { paged: 'yes' } } });
      const first = await pages.nextItems();
      assert.equal(first.length, 1);
      assert.equal(pages.hasNext, true);
      assert.ok(pages.nextToken);
      const second = await pages.nextItems();
      assert.equal(second.length, 1);
      assert.notEqual(second[0].sandboxId, first[0].sandboxId);
      assert.deepEqual(new Set([first[0].sandboxId, second[0].sandboxId]), new Set(made.map((m) => m.sandboxId)));
    } finally {
      await Promise.all(made.map((m) => m.kill()));
    }
  }],
  ['Sandbox', 'Sandbox.list({query: {state: ["paused"]}})', 'ok', '', async ({ E2B, sbx }) => {
    const p = await E2B.Sandbox.create({ timeoutMs: 60000 });
    await p.pause();
    const paused = await E2B.Sandbox.list({ query: { state: ['paused'] } }).nextItems();
    await E2B.Sandbox.kill(p.sandboxId);
    assert.ok(paused.some((i) => i.sandboxId === p.sandboxId));
    assert.ok(!paused.some((i) => i.sandboxId === sbx.sandboxId));
  }],
  ['Sandbox', 'Sandbox.getFullInfo(id)', 'ok', '', async ({ E2B, sbx }) => {
    const i = await E2B.Sandbox.getFullInfo(sbx.sandboxId);
    assert.equal(i.sandboxId, sbx.sandboxId);
    assert.equal(i.state, 'running');
  }],
  ['Sandbox', 'Sandbox.getMetrics(id)', 'differs', 'one sample, taken now (E2B keeps a history)', async ({ E2B, sbx }) => {
    const m = await E2B.Sandbox.getMetrics(sbx.sandboxId);
    assert.equal(m.length, 1);
    assert.ok(m[0].cpuCount >= 1 && m[0].diskTotal > 0);
  }],
  ['Sandbox', 'Sandbox.pause(id) / sandbox.betaPause() / Sandbox.betaPause(id)', 'differs', 'memory stays resident while paused (E2B snapshots it)', async ({ E2B }) => {
    for (const how of ['pause(id)', 'betaPause()', 'betaPause(id)']) {
      const s = await E2B.Sandbox.create({ timeoutMs: 60000 });
      const r = how === 'pause(id)' ? await E2B.Sandbox.pause(s.sandboxId)
        : how === 'betaPause()' ? await s.betaPause() : await E2B.Sandbox.betaPause(s.sandboxId);
      const st = (await s.getInfo()).state;
      await s.kill();
      assert.deepEqual([how, r, st], [how, true, 'paused']);
    }
  }],
  ['Sandbox', 'sandbox.updateNetwork({allowOut, denyOut}) / Sandbox.updateNetwork(id)', 'ok', '', async ({ E2B }) => {
    const s = await E2B.Sandbox.create({ timeoutMs: 60000, allowInternetAccess: true });
    try {
      await s.updateNetwork({ allowOut: ['1.1.1.1'], denyOut: ['0.0.0.0/0'] });
      const net = (await s.getInfo()).network;
      assert.deepEqual([net.allowOut, net.denyOut], [['1.1.1.1/32'], ['0.0.0.0/0']]);
      await E2B.Sandbox.updateNetwork(s.sandboxId, {});
      assert.equal((await s.getInfo()).network, undefined);
    } finally {
      await s.kill();
    }
  }],
  ['Sandbox', 'Sandbox.kill(unknown id) → false; Sandbox.connect(unknown id) throws', 'ok', '', async ({ E2B }) => {
    assert.equal(await E2B.Sandbox.kill('inothere0000000000000'), false);
    await assert.rejects(E2B.Sandbox.connect('inothere0000000000000'), (e) => e instanceof E2B.SandboxNotFoundError || /not found/i.test(e.message));
  }],
  ['Sandbox', 'Sandbox.getInfo(id) / Sandbox.setTimeout(id) / Sandbox.kill(id)', 'ok', '', async ({ E2B }) => {
    const s = await E2B.Sandbox.create({ timeoutMs: 60000 });
    assert.equal((await E2B.Sandbox.getInfo(s.sandboxId)).sandboxId, s.sandboxId);
    await E2B.Sandbox.setTimeout(s.sandboxId, 90000);
    assert.equal(await E2B.Sandbox.kill(s.sandboxId), true);
  }],
  ['Sandbox', 'sandbox.kill()', 'ok', '', async ({ E2B }) => {
    const s = await E2B.Sandbox.create({ timeoutMs: 60000 });
    await s.kill();
    await assert.rejects(E2B.Sandbox.connect(s.sandboxId));
  }],
  ['commands', 'commands.run(cmd, {onStdout, envs, cwd})', 'ok', '', async ({ sbx }) => {
    const seen = [];
    const r = await sbx.commands.run('pwd; echo $X', { envs: { X: 'x' }, cwd: '/tmp', onStdout: (d) => seen.push(d) });
    assert.equal(r.stdout, '/tmp\nx\n');
    assert.equal(seen.join(''), r.stdout);
  }],
  ['commands', 'commands.run(cmd) exit code ≠ 0 throws CommandExitError', 'ok', '', async ({ sbx }) => {
    await assert.rejects(sbx.commands.run('exit 7'), (e) => e.exitCode === 7);
  }],
  ['commands', 'commands.run({background}) / wait / sendStdin / list / kill', 'ok', '', async ({ sbx }) => {
    const h = await sbx.commands.run('read l; echo got $l', { background: true, stdin: true });
    await sbx.commands.sendStdin(h.pid, 'a\n');
    assert.equal((await h.wait()).stdout, 'got a\n');
    const long = await sbx.commands.run('sleep 60', { background: true });
    assert.ok((await sbx.commands.list()).some((p) => p.pid === long.pid));
    assert.equal(await sbx.commands.kill(long.pid), true);
  }],
  ['commands', 'commands.connect(pid)', 'ok', '', async ({ sbx }) => {
    const h = await sbx.commands.run('sleep 1; echo late', { background: true });
    const c = await sbx.commands.connect(h.pid);
    assert.equal((await c.wait()).stdout, 'late\n');
  }],
  ['commands', 'handle.disconnect() / commands.connect(pid) / handle.kill()', 'ok', '', async ({ sbx }) => {
    const h = await sbx.commands.run('sleep 1; echo after', { background: true });
    await h.disconnect();
    assert.equal((await (await sbx.commands.connect(h.pid)).wait()).stdout, 'after\n');
    const long = await sbx.commands.run('sleep 60', { background: true });
    assert.equal(await long.kill(), true);
  }],
  ['commands', 'commands.closeStdin(pid)', 'ok', '', async ({ sbx }) => {
    const h = await sbx.commands.run('cat; echo eof', { background: true, stdin: true });
    await sbx.commands.sendStdin(h.pid, 'abc\n');
    await sbx.commands.closeStdin(h.pid);
    assert.equal((await h.wait()).stdout, 'abc\neof\n');
  }],
  ['commands', 'commands.run(cmd, {user: "root", timeoutMs})', 'ok', '', async ({ sbx }) => {
    assert.equal((await sbx.commands.run('id -u', { user: 'root' })).stdout, '0\n');
    assert.equal((await sbx.commands.run('id -u')).stdout, '1000\n');
    const t = Date.now();
    await assert.rejects(sbx.commands.run('sleep 10', { timeoutMs: 500 }), (e) => e.name === 'TimeoutError');
    assert.ok(Date.now() - t < 5000);
  }],
  ['files', 'files.write / read (text, bytes)', 'ok', '', async ({ sbx }) => {
    await sbx.files.write('/home/user/f.bin', new Uint8Array([0, 1, 255]).buffer);
    assert.deepEqual([...(await sbx.files.read('/home/user/f.bin', { format: 'bytes' }))], [0, 1, 255]);
  }],
  ['files', 'files.write(path, data) → one WriteInfo', 'ok', '', async ({ sbx }) => {
    const w = await sbx.files.write('/home/user/one.txt', 'one');
    assert.deepEqual([w.path, w.name, w.type], ['/home/user/one.txt', 'one.txt', 'file']);
  }],
  ['files', 'files.write([{path, data}, ...]) / writeFiles → a WriteInfo each', 'ok', '', async ({ sbx }) => {
    const w = await sbx.files.write([{ path: '/home/user/m/a.txt', data: 'a' }, { path: '/home/user/m/sub/b.txt', data: 'bb' }]);
    assert.deepEqual(w.map((x) => x.path), ['/home/user/m/a.txt', '/home/user/m/sub/b.txt']);
    assert.equal(await sbx.files.read('/home/user/m/sub/b.txt'), 'bb');
    const one = await sbx.files.writeFiles([{ path: '/home/user/m/c.txt', data: 'c' }]);
    assert.deepEqual(one.map((x) => x.name), ['c.txt']);
  }],
  ['files', 'files.read(path, {format: "stream" | "blob"})', 'ok', '', async ({ sbx }) => {
    await sbx.files.write('/home/user/s.txt', 'streamed');
    assert.equal(await new Response(await sbx.files.read('/home/user/s.txt', { format: 'stream' })).text(), 'streamed');
    assert.equal(await (await sbx.files.read('/home/user/s.txt', { format: 'blob' })).text(), 'streamed');
  }],
  ['files', 'files.list(path, {depth: 2})', 'ok', '', async ({ sbx }) => {
    await sbx.files.write('/home/user/deep/x/y.txt', 'y');
    const paths = (await sbx.files.list('/home/user/deep', { depth: 2 })).map((e) => e.path).sort();
    assert.deepEqual(paths, ['/home/user/deep/x', '/home/user/deep/x/y.txt']);
  }],
  ['files', 'files.write / read {user: "root"}', 'ok', '', async ({ sbx }) => {
    await sbx.files.write('/root/r.txt', 'r', { user: 'root' });
    assert.equal(await sbx.files.read('/root/r.txt', { user: 'root' }), 'r');
    await assert.rejects(sbx.files.read('/root/r.txt'));
  }],
  ['files', 'files.list / exists / getInfo / makeDir / rename / remove', 'ok', '', async ({ sbx }) => {
    await sbx.files.makeDir('/home/user/d');
    await sbx.files.write('/home/user/d/a.txt', 'a');
    assert.ok((await sbx.files.list('/home/user/d')).some((e) => e.name === 'a.txt' && e.type === 'file'));
    assert.equal((await sbx.files.getInfo('/home/user/d/a.txt')).size, 1);
    await sbx.files.rename('/home/user/d/a.txt', '/home/user/d/b.txt');
    assert.equal(await sbx.files.exists('/home/user/d/b.txt'), true);
    await sbx.files.remove('/home/user/d');
    assert.equal(await sbx.files.exists('/home/user/d'), false);
  }],
  ['files', 'files.watchDir(path, onEvent)', 'ok', '', async ({ sbx }) => {
    await sbx.files.makeDir('/home/user/w');
    const events = [];
    const h = await sbx.files.watchDir('/home/user/w', (e) => events.push(e));
    await sbx.files.write('/home/user/w/n.txt', 'n');
    for (let i = 0; i < 50 && !events.length; i++) await sleep(100);
    await h.stop();
    assert.ok(events.some((e) => e.name.includes('n.txt')));
  }],
  ['pty', 'pty.create / sendInput / resize / kill', 'ok', '', async ({ sbx }) => {
    let out = '';
    const p = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += new TextDecoder().decode(d); } });
    await sbx.pty.resize(p.pid, { cols: 100, rows: 30 });
    await sbx.pty.sendInput(p.pid, new TextEncoder().encode('echo pty-$((40+2))\n'));
    for (let i = 0; i < 50 && !out.includes('pty-42'); i++) await sleep(100);
    await sbx.pty.kill(p.pid);
    assert.match(out, /pty-42/);
  }],
  ['pty', 'pty.create / disconnect / pty.connect(pid)', 'ok', '', async ({ sbx }) => {
    let out = '';
    const p = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} });
    await p.disconnect();
    await sbx.pty.connect(p.pid, { onData: (d) => { out += new TextDecoder().decode(d); } });
    await sbx.pty.sendInput(p.pid, new TextEncoder().encode('echo again-$((20+1))\n'));
    for (let i = 0; i < 50 && !out.includes('again-21'); i++) await sleep(100);
    await sbx.pty.kill(p.pid);
    assert.match(out, /again-21/);
  }],
  ['git', 'git.init / configureUser / add / commit / status / branches / createBranch / checkoutBranch / deleteBranch', 'ok', 'the template\'s own git (base: the host\'s)', async ({ sbx }) => {
    const repo = '/home/user/repo';
    await sbx.git.init(repo, { initialBranch: 'main' });
    await sbx.git.configureUser('A Dev', 'dev@example.com');
    await sbx.files.write(`${repo}/a.txt`, 'a');
    assert.equal((await sbx.git.status(repo)).hasUntracked, true);
    await sbx.git.add(repo);
    await sbx.git.commit(repo, 'first');
    assert.equal((await sbx.git.status(repo)).isClean, true);
    await sbx.git.createBranch(repo, 'feature');
    assert.deepEqual((await sbx.git.branches(repo)).branches.sort(), ['feature', 'main']);
    await sbx.git.checkoutBranch(repo, 'main');
    await sbx.git.deleteBranch(repo, 'feature');
    assert.equal((await sbx.git.branches(repo)).currentBranch, 'main');
  }],
  ['git', 'git.remoteAdd / remoteGet / setConfig / getConfig / push / clone / reset / restore', 'ok', 'to a remote in the sandbox (file://)', async ({ sbx }) => {
    const repo = '/home/user/repo';
    await sbx.commands.run('git init --bare --initial-branch=main /home/user/bare.git');
    await sbx.git.remoteAdd(repo, 'origin', 'file:///home/user/bare.git');
    assert.equal(await sbx.git.remoteGet(repo, 'origin'), 'file:///home/user/bare.git');
    await sbx.git.setConfig('core.editor', 'vi', { scope: 'local', path: repo });
    assert.equal(await sbx.git.getConfig('core.editor', { scope: 'local', path: repo }), 'vi');
    await sbx.git.push(repo, { remote: 'origin', branch: 'main', setUpstream: true });
    await sbx.git.clone('file:///home/user/bare.git', { path: '/home/user/clone' });
    assert.equal(await sbx.files.read('/home/user/clone/a.txt'), 'a');
    await sbx.files.write(`${repo}/a.txt`, 'changed');
    await sbx.git.restore(repo, { paths: ['a.txt'] });
    assert.equal(await sbx.files.read(`${repo}/a.txt`), 'a');
    await sbx.git.reset(repo, { mode: 'hard' });
  }],
  ['code interpreter', 'runCode (python): state, logs, results', 'ok', '', async ({ ci }) => {
    await ci.runCode('x = 41');
    const r = await ci.runCode('print("p"); x + 1');
    assert.deepEqual([r.logs.stdout.join(''), r.text], ['p\n', '42']);
  }],
  ['code interpreter', 'runCode({language: "js" | "ts" | "bash"})', 'ok', '', async ({ ci }) => {
    assert.equal((await ci.runCode('1 + 1', { language: 'js' })).text, '2');
    assert.equal((await ci.runCode('const n: number = 3; n', { language: 'ts' })).text, '3');
    assert.equal((await ci.runCode('echo hi', { language: 'bash' })).logs.stdout.join(''), 'hi\n');
  }],
  ['code interpreter', 'runCode({language: "r" | "java"})', 'differs', 'an execution error `UnsupportedLanguage` (no kernel in the template)', async ({ ci }) => {
    assert.equal((await ci.runCode('1', { language: 'r' })).error.name, 'UnsupportedLanguage');
  }],
  ['code interpreter', 'runCode: an error', 'ok', '', async ({ ci }) => {
    const r = await ci.runCode('1/0');
    assert.equal(r.error.name, 'ZeroDivisionError');
  }],
  ['code interpreter', 'createCodeContext / listCodeContexts / restartCodeContext / removeCodeContext', 'ok', '', async ({ ci }) => {
    const c = await ci.createCodeContext({ language: 'python' });
    assert.ok((await ci.listCodeContexts()).some((x) => x.id === c.id));
    await ci.restartCodeContext(c);
    await ci.removeCodeContext(c);
    assert.ok(!(await ci.listCodeContexts()).some((x) => x.id === c.id));
  }],
  ['code interpreter', 'runCode: a matplotlib figure as a png result', 'ok', '', async ({ ci }) => {
    const r = await ci.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()');
    assert.ok(r.results.some((x) => x.png), JSON.stringify(r.error));
  }],
  ['Volume', 'Volume.create(name) / list() / getInfo(id) / destroy(id)', 'ok', 'the key\'s own volumes (a tenant\'s: 1024 MiB, ext4); destroy of a mounted one refused', async ({ E2B }) => {
    const v = await E2B.Volume.create('compat-vol');
    assert.ok((await E2B.Volume.list()).some((x) => x.volumeId === v.volumeId && x.name === 'compat-vol'));
    assert.equal((await E2B.Volume.getInfo(v.volumeId)).name, 'compat-vol');
    assert.equal(await E2B.Volume.destroy(v.volumeId), true);
    assert.equal(await E2B.Volume.destroy(v.volumeId), false);
  }],
  ['Volume', 'Sandbox.create({volumeMounts: {path: volume}}) / getInfo().volumeMounts', 'ok', 'id-mapped: files keep their owner across sandboxes', async ({ E2B }) => {
    const v = await E2B.Volume.create('compat-mount');
    const a = await E2B.Sandbox.create({ volumeMounts: { '/mnt/v': v } });
    await a.files.write('/mnt/v/x', 'kept');
    assert.deepEqual((await a.getInfo()).volumeMounts, [{ name: 'compat-mount', path: '/mnt/v' }]);
    await a.kill();
    const b = await E2B.Sandbox.create({ volumeMounts: { '/w': 'compat-mount' } });
    assert.equal(await b.files.read('/w/x'), 'kept');
    await b.kill();
    for (let i = 0; i < 50 && !(await E2B.Volume.destroy(v.volumeId).catch(() => false)); i++) await sleep(100);
  }],
  ['Volume', 'volume.list / readFile / writeFile (the content API, with the volume\'s token)', 'unsupported', 'not served: mount the volume in a sandbox', async ({ E2B }) => {
    const v = await E2B.Volume.create('compat-content');
    try { await v.list('/'); } finally { await E2B.Volume.destroy(v.volumeId); }
  }],
  ['Snapshot', 'sandbox.createSnapshot({name}) / Sandbox.create(snapshotId)', 'differs', 'the filesystem only (no memory): a sandbox from it starts from its files', async ({ E2B, sbx }) => {
    await sbx.files.write('/home/user/snap.txt', 'in the snapshot');
    const snap = await sbx.createSnapshot({ name: 'compat-snap' });
    assert.equal(snap.snapshotId, 'compat-snap');
    assert.deepEqual(snap.names, ['compat-snap']);
    const from = await E2B.Sandbox.create(snap.snapshotId);
    assert.equal(await from.files.read('/home/user/snap.txt'), 'in the snapshot');
    await from.kill();
  }],
  ['Snapshot', 'sandbox.listSnapshots() / Sandbox.listSnapshots() / deleteSnapshot(id)', 'ok', 'the key\'s own snapshots', async ({ E2B, sbx }) => {
    const mine = await sbx.listSnapshots().nextItems();
    assert.ok(mine.some((x) => x.snapshotId === 'compat-snap'), JSON.stringify(mine));
    const all = await E2B.Sandbox.listSnapshots().nextItems();
    assert.ok(all.some((x) => x.snapshotId === 'compat-snap'));
    assert.equal(await E2B.Sandbox.deleteSnapshot('compat-snap'), true);
    assert.equal(await E2B.Sandbox.deleteSnapshot('compat-snap'), false);
  }],
  ['Snapshot', 'sandbox.fork({count})', 'differs', 'each child starts from the parent\'s files now (its processes from the template\'s start command), with its own network and lifetime', async ({ sbx }) => {
    await sbx.files.write('/home/user/parent.txt', 'parent');
    const kids = await sbx.fork({ count: 2 });
    assert.equal(kids.length, 2);
    for (const k of kids) {
      assert.equal(await k.files.read('/home/user/parent.txt'), 'parent');
      await k.kill();
    }
  }],
  ['Sandbox', 'sandbox.getMcpUrl() / getMcpToken()', 'unsupported', 'no MCP gateway inside a sandbox: `abx mcp serve` is the MCP server', async ({ sbx }) => {
    await sbx.getMcpToken();
  }],
];

function render(results) {
  const head = `# E2B SDK compatibility

What E2B's own SDKs do against \`abx serve\`, unmodified, configured only by
\`E2B_API_URL\`, \`E2B_SANDBOX_URL\` and \`E2B_API_KEY\`. Generated by
\`tests/integration/e2b-compat.test.mjs\`, which runs every row in CI (an ok
row must work as on E2B's cloud, a differs row must show the difference
named, an unsupported row must still fail) and fails when this page and the
run disagree. SDKs: \`e2b\` ${version('e2b')}, \`@e2b/code-interpreter\` ${version('@e2b/code-interpreter')}.
E2B's Python SDKs (\`e2b\`, \`e2b_code_interpreter\`) are not in this
table: they install from PyPI, which this project's machines cannot reach;
abx's own Python SDK (docs/python.md) takes their shapes.

| Area | Call | Status | Note |
| --- | --- | --- | --- |
`;
  return head + results.map(([area, call, status, note]) => `| ${area} | \`${call}\` | ${status} | ${note} |`).join('\n') + '\n';
}

test('every row of the compatibility table holds, and docs/e2b-compatibility.md is that table', { timeout: 900000 }, async () => {
  const E2B = await import('e2b');
  const CI = await import('@e2b/code-interpreter');
  const sbx = await E2B.Sandbox.create({ metadata: { suite: 'compat' }, envs: { COMPAT: 'yes' }, timeoutMs: 600000 });
  const ci = await CI.Sandbox.create({ timeoutMs: 600000 });
  const failures = [];
  try {
    for (const [area, call, status, , run] of rows) {
      let error = null;
      try { await run({ E2B, sbx, ci }); } catch (e) { error = e; }
      if (status === 'unsupported' ? !error : error) failures.push(`${area} ${call} (${status}): ${error ? error.message : 'works now'}`);
    }
  } finally {
    await sbx.kill();
    await ci.kill();
  }
  assert.deepEqual(failures, []);
  const text = render(rows);
  if (process.env.ABX_UPDATE_COMPAT === '1') fs.writeFileSync(DOC, text);
  assert.equal(fs.existsSync(DOC) ? fs.readFileSync(DOC, 'utf8') : '', text,
    'docs/e2b-compatibility.md is not the table this run checked: ABX_UPDATE_COMPAT=1 rewrites it');
});
