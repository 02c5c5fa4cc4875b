// service.test.mjs: the abx service (`abx serve --socket`, issue 24): each
// host user a tenant named by the kernel, reached by a non-root abx on its
// own. Two users made here in the group the service allows and one
// outside it run the CLI, `abx mcp start` (driven by the official MCP
// client) and the Python SDK as themselves; root's direct path sees them
// all. The service runs on a socket and a state directory of this test's,
// with an operator's file of its own (ABX_SYSTEM_CONFIG); everything it
// made is killed, the users and the group removed, at the end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, root, privateHome, runAbx, onExit, waitFor } from '../lib/harness.mjs';

const tag = crypto.randomBytes(3).toString('hex');
const GROUP = `abxt${tag}`;
const A = `abxa${tag}`, B = `abxb${tag}`, C = `abxc${tag}`, D = `abxd${tag}`; // D administers
const ADMINS = `abxs${tag}`;
const H = privateHome('abx-service');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-svc-'));
fs.chmodSync(work, 0o755);
const SOCK = path.join(work, 'run', 'abx.sock');
const SYSTEM = path.join(work, 'system.toml');
const bin = path.join(work, 'bin');
let service = null;
const users = [];

function sh(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function uidOf(user) { return Number(sh('id', ['-u', user]).trim()); }

/** The environment a user's abx gets: their own home, the test's socket. */
function userEnv(user, extra = {}) {
  return { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: `${work}/home-${user}`, ABX_SOCKET: SOCK,
    ...(process.env.ASAN_OPTIONS ? { ASAN_OPTIONS: process.env.ASAN_OPTIONS } : {}),
    ...(process.env.UBSAN_OPTIONS ? { UBSAN_OPTIONS: process.env.UBSAN_OPTIONS } : {}), ...extra };
}

/** runuser's argv for user running argv with env. */
function asArgv(user, argv, extra) {
  const env = Object.entries(userEnv(user, extra)).map(([k, v]) => `${k}=${v}`);
  return ['-u', user, '--', 'env', '-i', ...env, ...argv];
}

/** abx as user, through the service. */
function as(user, args, { input, extra, timeout = 60000 } = {}) {
  const r = spawnSync('runuser', asArgv(user, [`${bin}/abx`, ...args], extra), { encoding: 'utf8', input, timeout, maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: 0 };
}

function startService(extraEnv = {}, sock = SOCK) {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, ['serve', '--socket', sock, '--warm', '0'],
      { env: { ...H.env, ABX_SYSTEM_CONFIG: SYSTEM, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    const drop = onExit(() => child.kill('SIGKILL'));
    let err = '';
    const t = setTimeout(() => reject(new Error(`the service did not start: ${err}`)), 15000);
    child.stderr.on('data', (d) => {
      err += d;
      if (/listening on /.test(err) && !child.ready) { child.ready = true; clearTimeout(t); resolve(child); }
    });
    child.on('exit', (code) => { drop(); clearTimeout(t); if (!child.ready) reject(new Error(`the service exited ${code}: ${err}`)); });
  });
}

function stopService(child, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode) return resolve();
    child.on('exit', () => resolve());
    child.kill(signal);
  });
}

/** Every sandbox of the test's state directory, as root sees them. */
function allIds() {
  const r = runAbx(['list', '--all', '--json'], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).map((s) => s.sandbox_id);
}

before(async () => {
  sh('groupadd', [GROUP]);
  sh('groupadd', [ADMINS]);
  for (const [u, groups] of [[A, GROUP], [B, GROUP], [C, null], [D, ADMINS]]) {
    sh('useradd', ['-M', '-N', '-s', '/bin/sh', ...(groups ? ['-G', groups] : []), u]);
    users.push(u);
    fs.mkdirSync(`${work}/home-${u}`, { mode: 0o700 });
    sh('chown', [u, `${work}/home-${u}`]);
  }
  fs.mkdirSync(bin, { mode: 0o755 });
  // the checkout may lie where these users cannot reach; the Python SDK
  // loads the release build's library (an ASan one cannot load into python3)
  for (const src of [abx, path.join(root, 'build', 'libabx.so.0')]) {
    fs.copyFileSync(src, path.join(bin, path.basename(src)));
    fs.chmodSync(path.join(bin, path.basename(src)), 0o755);
  }
  fs.cpSync(path.join(root, 'python'), path.join(work, 'python'), { recursive: true });
  sh('chmod', ['-R', 'a+rX', path.join(work, 'python')]);
  fs.writeFileSync(SYSTEM, `[service]\nallow_groups = "${GROUP}"\nadmin_groups = "${ADMINS}"\nnetwork_modes = ["none", "allowlist"]\n`);
  service = await startService();
});

after(async () => {
  await stopService(service, 'SIGKILL');
  for (const id of (() => { try { return allIds(); } catch { return []; } })()) runAbx(['kill', id], { env: H.env });
  H.cleanup();
  for (const u of users) spawnSync('userdel', [u]);
  spawnSync('groupdel', [GROUP]);
  spawnSync('groupdel', [ADMINS]);
  fs.rmSync(work, { recursive: true, force: true });
});

test('each allowed user runs abx run, create/exec/files/kill through the service, in sandboxes of their own host uid range', () => {
  const maps = [];
  for (const u of [A, B]) {
    const run = as(u, ['run', '--', 'sh', '-c', 'echo hello from $(id -un); cat /proc/self/uid_map; exit 7']);
    assert.equal(run.status, 7, run.stderr);
    assert.match(run.stdout, /^hello from user\n/);
    maps.push(run.stdout.split('\n')[1].trim().split(/\s+/)[1]);
    const made = as(u, ['create', '--timeout', '120']);
    assert.equal(made.status, 0, made.stderr);
    const id = made.stdout.trim();
    assert.match(id, /^local:i[0-9a-z]+$/);
    const put = as(u, ['files', 'put', id, '-', '/home/user/note.txt'], { input: `note of ${u}\n` });
    assert.equal(put.status, 0, put.stderr);
    const ex = as(u, ['exec', id, 'cat /home/user/note.txt; whoami']);
    assert.equal(ex.status, 0, ex.stderr);
    assert.equal(ex.stdout, `note of ${u}\nuser\n`);
    const listed = as(u, ['list', '--json']);
    assert.deepEqual(JSON.parse(listed.stdout).map((s) => s.sandbox_id), [id]);
    assert.equal(as(u, ['kill', id]).status, 0);
    assert.deepEqual(JSON.parse(as(u, ['list', '--json']).stdout), []);
  }
  assert.notEqual(maps[0], maps[1], 'two users\' sandboxes share a host uid range');
  assert.ok(Number(maps[0]) > 65535 && Number(maps[1]) > 65535, `host uids ${maps}`);
});

test('abx events and abx top through the service: each user sees their own sandboxes\' events and figures, never another\'s', () => {
  const a = as(A, ['create', '--timeout', '120']).stdout.trim();
  const b = as(B, ['create', '--timeout', '120']).stdout.trim();
  assert.match(a, /^local:i/);
  assert.match(b, /^local:i/);
  const eventsOf = (u) => {
    const r = as(u, ['events', '--json']);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  };
  const seenA = eventsOf(A);
  assert.ok(seenA.some((e) => e.type === 'create' && e.sandbox_id === a), JSON.stringify(seenA));
  assert.ok(!seenA.some((e) => e.sandbox_id === b), "another user's event");
  assert.ok(!eventsOf(B).some((e) => e.sandbox_id === a), "another user's event");
  const top = as(A, ['top', '--json']);
  assert.equal(top.status, 0, top.stderr);
  const rows = JSON.parse(top.stdout);
  assert.deepEqual(rows.map((r) => r.sandbox_id.replace(/^[a-z]+:/, '')), [a.replace(/^local:/, '')]);
  assert.ok(rows[0].memory_bytes > 0 && rows[0].memory_limit_bytes > 0, top.stdout);
  assert.equal(as(A, ['kill', a]).status, 0);
  assert.equal(as(B, ['kill', b]).status, 0);
  const after = eventsOf(A);
  assert.ok(after.some((e) => e.type === 'kill' && e.sandbox_id === a));
});

test('volumes through the service: each user\'s own names, sized, mounted id-mapped, kept across sandboxes; another user\'s answer as none', () => {
  const made = as(A, ['volume', 'create', 'work', '--json']);
  assert.equal(made.status, 0, made.stderr);
  const vol = JSON.parse(made.stdout);
  assert.equal(vol.size_mb, 1024); // a tenant's volume always has a size
  const first = as(A, ['create', '--timeout', '120', '--volume', 'work:/data']).stdout.trim();
  assert.match(first, /^local:i/);
  assert.equal(as(A, ['exec', first, 'echo mine > /data/f; stat -c %U /data/f']).stdout, 'user\n');
  assert.deepEqual(JSON.parse(as(A, ['info', first, '--json']).stdout).volumes, [{ name: 'work', path: '/data', read_only: false }]);
  const busy = as(A, ['volume', 'rm', 'work']);
  assert.equal(busy.status, 1);
  assert.match(busy.stderr, /E8034/);
  assert.equal(as(A, ['kill', first]).status, 0);
  const second = as(A, ['create', '--timeout', '120', '--volume', 'work:/v:ro']).stdout.trim();
  assert.equal(as(A, ['exec', second, 'cat /v/f']).stdout, 'mine\n');
  assert.equal(as(A, ['kill', second]).status, 0);
  // B: nothing of A's, by name or id; its own of the same name is another volume
  assert.deepEqual(JSON.parse(as(B, ['volume', 'list', '--json']).stdout), []);
  const byId = as(B, ['volume', 'inspect', vol.volume_id]);
  const none = as(B, ['volume', 'inspect', 'vol-000000000000000000000000']);
  assert.equal(byId.status, none.status);
  assert.equal(byId.stderr.replaceAll(vol.volume_id, 'ID'), none.stderr.replaceAll('vol-000000000000000000000000', 'ID'));
  assert.equal(as(B, ['volume', 'rm', vol.volume_id]).status, 1);
  const mount = as(B, ['create', '--volume', 'work:/data']);
  assert.equal(mount.status, 1);
  assert.match(mount.stderr, /E8002/);
  const own = JSON.parse(as(B, ['volume', 'create', 'work', '--json']).stdout);
  assert.notEqual(own.volume_id, vol.volume_id);
  assert.equal(as(B, ['volume', 'rm', 'work']).status, 0);
  // on disk: root's, 0700, each user apart
  const dir = path.join(H.home, 'volumes', `t-uid:${uidOf(A)}`);
  assert.equal(fs.statSync(path.join(H.home, 'volumes')).mode & 0o777, 0o700);
  assert.ok(fs.existsSync(path.join(dir, 'work', 'image.ext4')));
  assert.equal(as(A, ['volume', 'rm', 'work']).status, 0);
  assert.deepEqual(JSON.parse(as(A, ['volume', 'list', '--json']).stdout), []);
});

test('a user\'s --memory is enforced: an allocation over it is killed', () => {
  const r = as(A, ['run', '--memory', '64', '--', 'python3', '-c', 'a = bytearray(300 << 20); print(len(a))']);
  assert.equal(r.status, 137, `${r.status} ${r.stderr}`);
  assert.equal(r.stdout, '');
  const pids = as(A, ['run', '--pids', '64', '--', 'true']); // not carried through the service yet: said, not dropped
  assert.equal(pids.status, 125);
  assert.match(pids.stderr, /E8004: --pids and --disk: through the abx service/);
});

test('user A gives user B\'s sandbox id to every verb: each answers exactly as an unknown id; list --all is root\'s', () => {
  const made = as(B, ['create', '--timeout', '120']);
  assert.equal(made.status, 0, made.stderr);
  const theirs = made.stdout.trim();
  const unknown = 'local:izzzzzzzzzzzzzzzzzzzz';
  const verbs = [
    ['exec', '@', 'true'], ['info', '@'], ['timeout', '@', '60'], ['kill', '@'], ['ps', '@'],
    ['files', 'cat', '@', '/etc/hostname'], ['files', 'ls', '@', '/'], ['logs', '@', '1'], ['signal', '@', '1'],
    ['network', '@'],
  ];
  for (const v of verbs) {
    const mine = as(A, v.map((x) => (x === '@' ? theirs : x)));
    const none = as(A, v.map((x) => (x === '@' ? unknown : x)));
    assert.notEqual(mine.status, 0, `${v[0]} reached another user's sandbox`);
    assert.equal(mine.status, none.status, v.join(' '));
    assert.equal(mine.stderr.replaceAll(theirs, 'ID'), none.stderr.replaceAll(unknown, 'ID'), v.join(' '));
  }
  assert.deepEqual(JSON.parse(as(A, ['list', '--json']).stdout), []);
  const all = as(A, ['list', '--all']);
  assert.equal(all.status, 1);
  assert.match(all.stderr, /E8033/);
  const mineA = as(A, ['create', '--timeout', '120']).stdout.trim();
  const everyone = allIds();
  assert.ok(everyone.includes(theirs) && everyone.includes(mineA), everyone.join(' '));
  assert.equal(as(B, ['exec', theirs, 'echo still here']).stdout, 'still here\n');
  assert.equal(runAbx(['kill', '--all', theirs], { env: H.env }).status, 0);
  assert.equal(as(A, ['kill', mineA]).status, 0);
});

test('a member of [service] admin_groups lists and kills everyone\'s sandboxes with --all, and sees only their own without', () => {
  const a = as(A, ['create', '--timeout', '60']).stdout.trim();
  const d = as(D, ['create', '--timeout', '60']);
  assert.equal(d.status, 0, d.stderr);
  const own = d.stdout.trim();
  assert.deepEqual(JSON.parse(as(D, ['list', '--json']).stdout).map((x) => x.sandbox_id), [own]);
  const all = JSON.parse(as(D, ['list', '--all', '--json']).stdout).map((x) => x.sandbox_id);
  assert.ok(all.includes(a) && all.includes(own), all.join(' '));
  assert.equal(as(D, ['kill', a]).status, 1, 'without --all another user\'s id is unknown');
  assert.equal(as(D, ['kill', '--all', a]).status, 0);
  assert.equal(as(A, ['info', a]).status, 1);
  assert.equal(as(A, ['kill', '--all', own]).status, 1);
  assert.equal(as(D, ['kill', own]).status, 0);
});

test('one user\'s connections never starve another\'s: at most ABX_SERVE_CLIENT_CONNECTIONS per host user', async () => {
  const sock2 = path.join(work, 'run', 'limited.sock');
  const svc = await startService({ ABX_SERVE_CLIENT_CONNECTIONS: '4' }, sock2);
  const open = () => new Promise((resolve, reject) => { const c = net.connect(sock2, () => resolve(c)); c.on('error', reject); });
  const held = [];
  try {
    for (let i = 0; i < 4; i++) held.push(await open()); // this test's (root's), idle
    await new Promise((r) => setTimeout(r, 200));
    const fifth = await open();
    const cut = await new Promise((r) => { fifth.on('close', () => r(true)); setTimeout(() => r(false), 3000); });
    assert.ok(cut, 'a fifth connection of one user was kept');
    const other = as(A, ['list', '--json'], { extra: { ABX_SOCKET: sock2 } });
    assert.equal(other.status, 0, other.stderr);
  } finally {
    for (const c of held) c.destroy();
    await stopService(svc);
  }
});

test('a user outside the allowed group gets the error naming the group, and nothing is created', () => {
  const before = allIds().length;
  for (const args of [['run', '--', 'true'], ['create'], ['list']]) {
    const r = as(C, args);
    assert.notEqual(r.status, 0, args.join(' '));
    assert.match(r.stderr, new RegExp(`E8033: host user ${uidOf(C)} may not use this abx service: .*group ${GROUP}`));
  }
  assert.equal(allIds().length, before);
  const doctor = as(C, ['doctor']);
  assert.match(doctor.stdout, /abx service/);
});

test('networking where the operator allows it (allowlist), refused where it does not (internet)', () => {
  const ok = as(A, ['create', '--timeout', '60', '--network', 'allowlist', '--allow-out', 'example.com']);
  assert.equal(ok.status, 0, ok.stderr);
  const id = ok.stdout.trim();
  const resolv = as(A, ['exec', id, 'cat /etc/resolv.conf']);
  assert.match(resolv.stdout, /the sandbox's own resolver/);
  assert.equal(as(A, ['kill', id]).status, 0);
  const before = allIds().length;
  const no = as(A, ['run', '--network', 'internet', '--', 'true']);
  assert.equal(no.status, 125);
  assert.match(no.stderr, /E8033: .*network_modes allows only none, ?allowlist/);
  assert.equal(allIds().length, before);
});

test('host paths are opened with the user\'s own rights; the service never opens one a client names', () => {
  const planted = path.join(work, 'root-only.txt');
  fs.writeFileSync(planted, 'root only\n', { mode: 0o600 });
  const past = new Date('2020-01-01T00:00:00Z');
  fs.utimesSync(planted, past, past);
  const id = as(A, ['create', '--timeout', '60']).stdout.trim();
  for (const src of ['/etc/shadow', planted]) {
    const r = as(A, ['files', 'put', id, src, '/tmp/x']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /Permission denied/);
  }
  const st = fs.statSync(planted);
  assert.equal(st.atimeMs, past.getTime(), 'the planted file was read');
  assert.notEqual(as(A, ['exec', id, 'test -e /tmp/x']).status, 0);
  // a template build whose context holds a symlink to a root-only file: refused
  const ctxDir = path.join(work, `ctx-${A}`);
  fs.mkdirSync(ctxDir);
  fs.writeFileSync(path.join(ctxDir, 'Dockerfile'), 'FROM base\nCOPY secret /secret\n');
  fs.symlinkSync(planted, path.join(ctxDir, 'secret'));
  sh('chown', ['-h', '-R', A, ctxDir]); // -h: the link itself, never its target
  const build = as(A, ['template', 'build', `evil${tag}`, ctxDir]);
  assert.equal(build.status, 2); // E8001: a validation error
  assert.match(build.stderr, /E8001: context: secret is a symbolic link leaving the context/);
  assert.equal(fs.statSync(planted).uid, 0);
  assert.equal(fs.statSync(planted).atimeMs, past.getTime(), 'the planted file was read by the build');
  assert.ok(!runAbx(['template', 'list'], { env: H.env }).stdout.includes(`evil${tag}`));
  assert.equal(fs.readFileSync(planted, 'utf8'), 'root only\n'); // last: this read is root's own
  assert.equal(as(A, ['kill', id]).status, 0);
});

test('killing the service (SIGKILL) loses no sandbox: clients get E8032 at once meanwhile, a restarted service finds them', async () => {
  const id = as(A, ['create', '--timeout', '120']).stdout.trim();
  assert.equal(as(A, ['exec', id, 'echo before > /tmp/mark']).status, 0);
  await stopService(service, 'SIGKILL');
  const t0 = Date.now();
  const down = as(A, ['list']);
  assert.ok(Date.now() - t0 < 5000, 'a client hung on a dead service');
  assert.equal(down.status, 1);
  assert.match(down.stderr, /E8032: the abx service at .* is not reachable/);
  const run = as(A, ['run', '--', 'true']);
  assert.equal(run.status, 125);
  assert.match(run.stderr, /E8032/);
  service = await startService();
  const back = as(A, ['exec', id, 'cat /tmp/mark']);
  assert.equal(back.stdout, 'before\n', back.stderr);
  assert.equal(as(A, ['kill', id]).status, 0);
});

/** A small root filesystem (the host's sh, cat and their libraries), packed as root. */
function rootfsTar(out) {
  const dir = path.join(work, 'rootfs');
  const r = spawnSync('sh', ['-c', `set -e; d=${dir}; mkdir -p $d/usr/bin $d/etc $d/tmp $d/root $d/home/user
    for t in sh cat echo true; do p=/usr/bin/$t; [ -e $p ] || p=/bin/$t; cp -L $p $d/usr/bin/; for l in $(ldd $p | grep -o '/[^ ]*'); do mkdir -p $d$(dirname $l); cp -L $l $d$l; done; done
    ln -s usr/bin $d/bin
    printf 'root:x:0:0:root:/root:/bin/sh\\nuser:x:1000:1000:user:/home/user:/bin/sh\\n' > $d/etc/passwd
    echo mini > $d/etc/marker
    tar -C $d --numeric-owner -cf ${out} . && chmod 644 ${out}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return out;
}

test('templates a user imports or builds are their own: by their name to them, ~UID.NAME to root, nothing to anyone else', () => {
  const tar = rootfsTar(path.join(work, 'mini.tar'));
  const imp = as(A, ['template', 'import', 'mini', tar]);
  assert.equal(imp.status, 0, imp.stderr);
  const ctxDir = path.join(work, `ctx2-${A}`);
  fs.mkdirSync(ctxDir);
  fs.writeFileSync(path.join(ctxDir, 'Dockerfile'), 'FROM mini\nCOPY note.txt /opt/note.txt\nRUN cat /opt/note.txt /etc/marker > /opt/both.txt\nENV WHO=a\n');
  fs.writeFileSync(path.join(ctxDir, 'note.txt'), 'copied from the context\n');
  sh('chown', ['-h', '-R', A, ctxDir]);
  sh('chmod', ['700', ctxDir]); // only A reads it: the service never does
  const built = as(A, ['template', 'build', 'built', ctxDir], { timeout: 300000 });
  assert.equal(built.status, 0, built.stderr);
  const run = as(A, ['run', '--template', 'built', '--', 'sh', '-c', 'cat /opt/both.txt; echo $WHO']);
  assert.equal(run.stdout, 'copied from the context\nmini\na\n', run.stderr);
  const mine = JSON.parse(as(A, ['template', 'list', '--json']).stdout).map((t) => t.name);
  assert.ok(mine.includes('mini') && mine.includes('built'), mine.join(' '));
  const theirs = JSON.parse(as(B, ['template', 'list', '--json']).stdout).map((t) => t.name);
  assert.ok(!theirs.some((n) => /mini|built/.test(n)), theirs.join(' '));
  const none = as(B, ['run', '--template', 'built', '--', 'true']);
  assert.equal(none.status, 125);
  assert.ok(!none.stderr.includes(`~${uidOf(A)}`), none.stderr);
  for (const name of ['built', `~${uidOf(A)}.built`]) {
    const rm = as(B, ['template', 'rm', name]);
    assert.equal(rm.status, 2);
    assert.match(rm.stderr, /no such template/);
  }
  const all = JSON.parse(runAbx(['template', 'list', '--json'], { env: H.env }).stdout);
  const stored = all.find((t) => t.name === `~${uidOf(A)}.built`);
  assert.ok(stored, all.map((t) => t.name).join(' '));
  assert.equal(stored.owner, `uid:${uidOf(A)}`);
  // a build whose output floods: the service answers at most 4 MiB of it, and says so
  const loud = path.join(work, `ctx3-${A}`);
  fs.mkdirSync(loud);
  fs.writeFileSync(path.join(loud, 'Dockerfile'), 'FROM mini\nCOPY big.txt /big.txt\nRUN cat /big.txt\n');
  fs.writeFileSync(path.join(loud, 'big.txt'), `${'x'.repeat(99)}\n`.repeat(200000)); // 20 MB
  sh('chown', ['-h', '-R', A, loud]);
  const flood = as(A, ['--json', 'template', 'build', '--no-cache', 'loud', loud], { timeout: 300000 });
  assert.equal(flood.status, 0, flood.stderr.slice(-2000));
  assert.ok(flood.stdout.length < (5 << 20), `${flood.stdout.length} bytes of events`);
  assert.match(flood.stdout, /output past 4 MiB was left out/);
  assert.equal(as(A, ['template', 'rm', 'loud']).status, 0);
  const prune = as(A, ['template', 'prune']);
  assert.equal(prune.status, 1);
  assert.match(prune.stderr, /E8033/);
  for (const name of ['built', 'mini']) assert.equal(as(A, ['template', 'rm', name]).status, 0);
  assert.ok(!JSON.parse(runAbx(['template', 'list', '--json'], { env: H.env }).stdout).some((t) => t.name.startsWith('~')));
});

test('abx expose as a user: TCP to the sandbox\'s own port through the service\'s tunnel; another user\'s id is unknown', async () => {
  const id = as(A, ['create', '--timeout', '60']).stdout.trim();
  assert.equal(as(A, ['exec', id, '--background', 'python3 -m http.server 8080 --bind 127.0.0.1']).status, 0);
  await waitFor(() => as(A, ['exec', id, 'python3 -c "import urllib.request as u; u.urlopen(\'http://127.0.0.1:8080/\')"']).status === 0, 15000, 200);
  const child = spawn('runuser', asArgv(A, [`${bin}/abx`, 'expose', id, '8080', '--json']), { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const listen = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => { out += d; const m = /"listen":\s*"([^"]+)"/.exec(out); if (m) resolve(m[1]); });
      child.on('exit', (c) => reject(new Error(`expose exited ${c}`)));
    });
    const page = await (await fetch(`http://${listen}/`)).text();
    assert.match(page, /Directory listing/);
  } finally {
    child.kill('SIGTERM');
  }
  const theirs = as(B, ['expose', id, '8080']);
  assert.equal(theirs.status, 1);
  assert.match(theirs.stderr, /E8002/);
  assert.equal(as(A, ['kill', id]).status, 0);
});

const TOOLS = ['create_sandbox', 'run_code', 'run_command', 'read_file', 'write_file', 'list_files',
  'kill_sandbox', 'list_sandboxes', 'get_sandbox', 'set_sandbox_timeout', 'start_background_task',
  'get_background_task', 'stop_background_task', 'upload_file', 'download_file'];

test('abx mcp start as a user, driven by the official MCP client: all fifteen tools, its sandboxes gone at the end', async () => {
  const transport = new StdioClientTransport({ command: 'runuser', args: asArgv(A, [`${bin}/abx`, 'mcp', 'start', '--template', 'base']), stderr: 'pipe' });
  const client = new Client({ name: 'abx-service-test', version: '1' });
  await client.connect(transport);
  const ok = (r) => { assert.ok(!r.isError, JSON.stringify(r.content)); return r.structuredContent; };
  const call = async (name, args = {}) => ok(await client.callTool({ name, arguments: args }));
  let id;
  try {
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, [...TOOLS].sort());
    id = (await call('create_sandbox', { template: 'base' })).sandbox_id;
    assert.equal((await call('run_command', { command: 'id -un' })).stdout, 'user\n');
    assert.equal((await call('run_code', { code: 'print(6 * 7)' })).stdout, '42\n');
    await call('write_file', { path: '/home/user/a.txt', content: 'written' });
    assert.equal((await call('read_file', { path: '/home/user/a.txt' })).content, 'written');
    assert.ok((await call('list_files', { path: '/home/user' })).files.some((e) => e.name === 'a.txt'));
    await call('upload_file', { path: '/home/user/b.bin', content_base64: Buffer.from('bytes').toString('base64') });
    assert.equal(Buffer.from((await call('download_file', { path: '/home/user/b.bin' })).content_base64, 'base64').toString(), 'bytes');
    const task = await call('start_background_task', { command: 'echo bg; sleep 30' });
    await waitFor(async () => (await call('get_background_task', { task_id: task.task_id })).stdout.includes('bg'), 15000);
    await call('stop_background_task', { task_id: task.task_id });
    assert.ok((await call('list_sandboxes')).sandboxes.some((s) => s.sandbox_id === id));
    assert.equal((await call('get_sandbox', { sandbox_id: id })).sandbox_id, id);
    await call('set_sandbox_timeout', { sandbox_id: id, timeout: 200 });
    assert.deepEqual(JSON.parse(as(B, ['list', '--json']).stdout), [], 'user B sees user A\'s sandbox');
    const other = await client.callTool({ name: 'get_sandbox', arguments: { sandbox_id: 'local:izzzzzzzzzzzzzzzzzzzz' } });
    assert.ok(other.isError);
    await call('kill_sandbox', { sandbox_id: id });
  } finally {
    await client.close();
  }
  await waitFor(() => !allIds().includes(id), 10000);
});

test('the Python SDK as a user goes through the service', () => {
  const code = 'from agent_sandbox import Sandbox\n'
    + 'with Sandbox.create(template="base") as sb:\n'
    + '    print(sb.commands.run("echo py-$(id -un)").stdout, end="")\n';
  const r = spawnSync('runuser', asArgv(A, ['python3', '-c', code],
    { PYTHONPATH: path.join(work, 'python'), ABX_LIBRARY: path.join(bin, 'libabx.so.0') }), { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'py-user\n');
  assert.deepEqual(JSON.parse(as(A, ['list', '--json']).stdout), []);
});

/** systemd-analyze verify of the units staged under dest, in a copy of it
 * that also holds this host's own units (sockets.target and the rest). */
function verifyUnits(dest) {
  const stage = fs.mkdtempSync(path.join(work, 'verify-'));
  fs.cpSync(dest, stage, { recursive: true, verbatimSymlinks: true });
  fs.mkdirSync(path.join(stage, 'usr/lib/systemd'), { recursive: true });
  sh('cp', ['-a', '/usr/lib/systemd/system', path.join(stage, 'usr/lib/systemd/')]);
  const r = spawnSync('systemd-analyze', ['verify', `--root=${stage}`, '/etc/systemd/system/abx.socket',
    '/etc/systemd/system/abx.service'], { encoding: 'utf8' });
  fs.rmSync(stage, { recursive: true, force: true });
  return r;
}

test('sh abx.sh install into a DESTDIR: binaries, library, header, pkg-config, Python SDK, docs, units that systemd-analyze verify accepts', () => {
  const dest = path.join(work, 'destdir');
  const r = spawnSync('sh', [path.join(root, 'abx.sh'), 'install'], { env: { ...process.env, DESTDIR: dest }, encoding: 'utf8', timeout: 300000 });
  assert.equal(r.status, 0, r.stderr);
  const files = fs.readdirSync(dest, { recursive: true });
  for (const want of [/^usr\/local\/bin\/abx$/, /^usr\/local\/bin\/abx-oci$/, /^usr\/local\/libexec\/abx\/abx-shim$/, /^usr\/local\/lib\/.*libabx\.so\.0$/,
    /^usr\/local\/include\/abx\/abx\.h$/, /^usr\/local\/lib\/.*pkgconfig\/abx\.pc$/,
    /^usr\/local\/lib\/python3\.\d+\/dist-packages\/agent_sandbox\/__init__\.py$/, /^usr\/local\/share\/doc\/abx\/security\.md$/,
    /^etc\/systemd\/system\/abx\.socket$/, /^etc\/systemd\/system\/abx\.service$/, /^usr\/lib\/tmpfiles\.d\/abx\.conf$/])
    assert.ok(files.some((f) => want.test(f)), `${want} is not installed`);
  const unit = fs.readFileSync(path.join(dest, 'etc/systemd/system/abx.service'), 'utf8');
  assert.match(unit, /^ExecStart=\/usr\/local\/bin\/abx serve --socket \/run\/abx\/abx.sock$/m);
  assert.match(unit, /^KillMode=process$/m);
  assert.match(fs.readFileSync(path.join(dest, 'etc/systemd/system/abx.socket'), 'utf8'), /^ListenStream=\/run\/abx\/abx.sock$/m);
  const verify = verifyUnits(dest);
  assert.equal(verify.status, 0, verify.stderr);
  assert.equal(verify.stderr, '', 'systemd-analyze verify warned');
});

test('abx service install --destdir --bindir; start/status/stop detached with a pid file', () => {
  const dest = path.join(work, 'dest');
  const r = runAbx(['service', 'install', '--destdir', dest, '--bindir', '/usr/local/bin'], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
  for (const f of ['etc/systemd/system/abx.socket', 'etc/systemd/system/abx.service', 'usr/lib/tmpfiles.d/abx.conf'])
    assert.ok(fs.existsSync(path.join(dest, f)), f);
  const bad = verifyUnits(dest); // /usr/local/bin/abx is not under dest: systemd says so
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /abx is not executable/);
  // detached, with a socket, pid file and log of this test's
  const s2 = path.join(work, 'svc2.sock'), pid = path.join(work, 'svc2.pid'), log = path.join(work, 'svc2.log');
  const env = { ...H.env, ABX_SYSTEM_CONFIG: SYSTEM };
  const start = runAbx(['service', 'start', '--socket', s2, '--pid-file', pid, '--log', log, '--warm', '0'], { env });
  assert.equal(start.status, 0, start.stderr);
  assert.equal(runAbx(['service', 'status', '--socket', s2, '--pid-file', pid], { env }).status, 0);
  assert.equal(as(A, ['run', '--', 'echo', 'via-detached'], { extra: { ABX_SOCKET: s2 } }).stdout, 'via-detached\n');
  const stop = runAbx(['service', 'stop', '--pid-file', pid], { env });
  assert.equal(stop.status, 0, stop.stderr);
  assert.equal(runAbx(['service', 'status', '--socket', s2, '--pid-file', pid], { env }).status, 1);
  assert.ok(!fs.existsSync(pid));
});

test('the IDE path as a user: abx mcp install writes a command this user can run; mcp status and doctor name the service', () => {
  const inst = as(A, ['mcp', 'install', '--target', 'cursor']);
  assert.equal(inst.status, 0, inst.stderr);
  const cfg = JSON.parse(fs.readFileSync(`${work}/home-${A}/.cursor/mcp.json`, 'utf8'));
  const server = Object.values(cfg.mcpServers)[0];
  assert.equal(server.command, `${bin}/abx`);
  assert.deepEqual(server.args.slice(-2), ['mcp', 'start']);
  const status = JSON.parse(as(A, ['mcp', 'status', '--json']).stdout);
  assert.deepEqual(status.service, { socket: SOCK, used: true, reachable: true });
  assert.equal(status.sandboxes_work, true);
  const doctor = JSON.parse(as(A, ['doctor', '--json']).stdout);
  assert.equal(doctor.sandboxes_work, true);
  assert.equal(doctor.checks[0].check, 'abx service');
  assert.equal(doctor.checks[0].status, 'ok');
  // without the service: the errors name the fix
  const none = as(A, ['doctor', '--json'], { extra: { ABX_SOCKET: path.join(work, 'none.sock') } });
  assert.equal(none.status, 1);
  assert.match(JSON.parse(none.stdout).checks[0].detail, /not reachable: ask root to start it \('abx service start'/);
});
