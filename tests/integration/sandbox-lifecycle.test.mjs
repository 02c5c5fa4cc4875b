// sandbox-lifecycle.test.mjs: persistent local sandboxes driven through
// build/abx as a user would: create, exec, files, background tasks,
// timeouts, kill, list, bad input, faults, and concurrency.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  abx, root, runAbx, runAbxAsync, cgroupLeftovers, cgroupName, hostProcesses, mountCount, privateHome, stateIds, shimPid,
  sleep, waitFor,
} from '../lib/harness.mjs';

const H = privateHome('abx-lifecycle');
after(() => H.cleanup());

const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });
function create(args = []) {
  const r = abxh(['create', ...args]);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  assert.match(id, /^local:i[a-z0-9]{20}$/);
  assert.match(cgroupName(H.home, id), /^s[0-9a-f]{20}$/); // remembered for assertGone
  return id;
}
const bare = (id) => id.replace(/^local:/, '');
// sleep durations unique to this run, so that process checks cannot see another run's sandboxes
const TAG = String(1000 + Math.floor(Math.random() * 8999));

function assertGone(id) {
  assert.ok(!stateIds(H.home).includes(bare(id)), 'state directory left');
  assert.deepEqual(cgroupLeftovers(cgroupName(H.home, id)), [], 'cgroups left');
  assert.deepEqual(hostProcesses(bare(id)), [], 'processes left');
}

test('create prints local:<id>; list and info show it; env values stay private', () => {
  const id = create(['--metadata', 'owner=tests', '--env', 'SECRET_VALUE=hunter2', '--timeout', '120', '--cpu', '1', '--memory', '256']);
  const list = JSON.parse(abxh(['list', '--json']).stdout);
  assert.ok(list.some((s) => s.sandbox_id === id));
  const r = abxh(['info', id, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const info = JSON.parse(r.stdout);
  assert.equal(info.sandbox_id, id);
  assert.equal(info.template, 'base');
  assert.equal(info.status, 'running');
  assert.equal(info.memory_mb, 256);
  assert.equal(info.cpu_count, 1);
  assert.deepEqual(info.metadata, { owner: 'tests' });
  assert.deepEqual(info.env_names, ['SECRET_VALUE']);
  const life = (Date.parse(info.end_at) - Date.parse(info.started_at)) / 1000;
  assert.ok(life >= 119 && life <= 121, `lifetime ${life}`);
  assert.ok(!r.stdout.includes('hunter2'));
  // both id forms work
  assert.equal(abxh(['info', bare(id)]).status, 0);
  assert.equal(abxh(['exec', id, 'echo $SECRET_VALUE']).stdout, 'hunter2\n');
  assert.equal(abxh(['kill', id]).status, 0);
  assertGone(id);
});

test('exec: output, exit status, env, cwd, user, and the sandbox persists between calls', () => {
  const id = create();
  let r = abxh(['exec', id, 'echo out; echo err >&2; exit 7']);
  assert.equal(r.status, 7);
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
  r = abxh(['exec', id, '--cwd', '/tmp', '--env', 'X=1', '--', 'pwd; echo $X; id -un']);
  assert.equal(r.stdout, '/tmp\n1\nuser\n');
  r = abxh(['exec', '--user', 'root', id, 'id -u; echo state > /root/kept']);
  assert.equal(r.stdout, '0\n');
  assert.equal(abxh(['exec', '--user', 'root', id, 'cat /root/kept']).stdout, 'state\n');
  assert.equal(abxh(['exec', id, 'kill -TERM $$']).status, 143);
  const j = JSON.parse(abxh(['exec', '--json', id, 'printf abc; exit 2']).stdout);
  assert.deepEqual([j.exit_code, j.stdout, j.stderr], [2, 'abc', '']);
  abxh(['kill', id]);
});

test('interrupting abx exec (Ctrl-C) kills the command inside, exits 130, and leaves the sandbox usable', async () => {
  const id = create();
  const tag = `sleep ${TAG}61`;
  const child = spawn(abx, ['exec', id, `echo started; ${tag}`], { env: H.env });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  assert.ok(await waitFor(() => out.includes('started') && hostProcesses(tag).length > 0, 5000));
  child.kill('SIGINT');
  const code = await new Promise((r) => child.on('close', r));
  assert.equal(code, 130);
  assert.ok(await waitFor(() => hostProcesses(tag).length === 0, 5000), 'the command outlived the interrupted abx');
  assert.equal(abxh(['exec', id, 'echo alive']).stdout, 'alive\n');
  abxh(['kill', id]);
});

test('exec streams output live, and --timeout kills with 124', async () => {
  const id = create();
  const child = spawn(abx, ['exec', id, 'echo first; sleep 3; echo second'], { env: H.env });
  let out = '';
  const t0 = Date.now();
  let firstAt = 0;
  child.stdout.on('data', (d) => { out += d; if (!firstAt && out.includes('first')) firstAt = Date.now(); });
  const code = await new Promise((r) => child.on('close', r));
  assert.equal(code, 0);
  assert.equal(out, 'first\nsecond\n');
  assert.ok(firstAt - t0 < 2500, `first line after ${firstAt - t0} ms: not streamed`);
  const t1 = Date.now();
  const r = await runAbxAsync(['exec', '--timeout', '1', id, 'sleep 30'], { env: H.env });
  assert.equal(r.status, 124);
  assert.ok(Date.now() - t1 < 6000);
  assert.match(r.stderr, /E8005/);
  abxh(['kill', id]);
});

test('files: random binary round trip, cat, ls, mkdir, mv, rm', () => {
  const id = create();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-files-'));
  try {
    const data = crypto.randomBytes(3 * 1024 * 1024 + 17);
    fs.writeFileSync(path.join(dir, 'in.bin'), data);
    assert.equal(abxh(['files', 'put', id, path.join(dir, 'in.bin'), '/app/deep/er/in.bin']).status, 0);
    assert.equal(abxh(['files', 'get', id, '/app/deep/er/in.bin', path.join(dir, 'out.bin')]).status, 0);
    assert.ok(fs.readFileSync(path.join(dir, 'out.bin')).equals(data), 'bytes differ');
    const cat = runAbx(['files', 'cat', id, '/app/deep/er/in.bin'], { env: H.env, encoding: 'buffer' });
    assert.ok(cat.stdout.equals(data));
    // the file belongs to the sandbox user, as if the user wrote it
    assert.equal(abxh(['exec', id, 'stat -c %U /app/deep/er/in.bin']).stdout, 'user\n');
    assert.equal(abxh(['files', 'mkdir', id, '/app/a/b']).status, 0);
    assert.equal(abxh(['files', 'mv', id, '/app/deep/er/in.bin', '/app/a/b/moved.bin']).status, 0);
    const ls = JSON.parse(abxh(['files', 'ls', '--json', id, '/app/a/b']).stdout);
    assert.deepEqual(ls.map((e) => [e.name, e.type, e.size]), [['moved.bin', 'file', data.length]]);
    // abx's own JSON style: snake_case keys, numbers as numbers, plain enums
    for (const k of Object.keys(ls[0])) assert.match(k, /^[a-z][a-z_]*$/, `key ${k}`);
    assert.match(ls[0].modified_time, /^\d{4}-\d\d-\d\dT/);
    assert.equal(abxh(['exec', id, 'ln -s /app/a/b/moved.bin /app/a/b/link']).status, 0);
    const link = JSON.parse(abxh(['files', 'ls', '--json', id, '/app/a/b']).stdout).find((e) => e.name === 'link');
    assert.deepEqual([link.type, link.symlink_target, link.target_type], ['symlink', '/app/a/b/moved.bin', 'file']);
    assert.match(link.permissions, /^l/);
    assert.equal(abxh(['files', 'rm', id, '/app/a']).status, 0);
    assert.equal(abxh(['exec', id, 'test -e /app/a || echo gone']).stdout, 'gone\n');
    // stdin and stdout transfers
    assert.equal(runAbx(['files', 'put', id, '-', 'note.txt'], { env: H.env, input: 'hi there' }).status, 0);
    assert.equal(abxh(['files', 'get', id, '/home/user/note.txt', '-']).stdout, 'hi there');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    abxh(['kill', id]);
  }
});

test('files never reach the host: .., symlinks planted inside, /proc', () => {
  const id = create();
  const marker = path.join(os.homedir(), `.abx-files-marker-${process.pid}`);
  fs.writeFileSync(marker, 'host secret');
  try {
    abxh(['exec', id, `ln -s ${marker} /app/link; ln -s / /app/root; ln -s /proc/1/root /app/p1`]);
    for (const p of [marker, '/app/link', `/app/root${marker}`, `/app/../../../..${marker}`, `/app/p1${marker}`, '/proc/1/environ', '/proc/self/environ']) {
      const r = abxh(['files', 'cat', id, p]);
      assert.notEqual(r.status, 0, `${p} was readable`);
      assert.ok(!r.stdout.includes('host secret'));
      assert.match(r.stderr, /^abx: E80(23|10|17|01): /);
    }
    // file operations carry the chosen user's permissions
    let w = runAbx(['files', 'put', id, '-', '/etc/passwd'], { env: H.env, input: 'x' });
    assert.match(w.stderr, /^abx: E8010: /, 'user overwrote a root-owned file');
    w = runAbx(['files', 'put', '--user', 'root', id, '-', '/root/r.txt'], { env: H.env, input: 'r' });
    assert.equal(w.status, 0, w.stderr);
    assert.match(abxh(['files', 'cat', id, '/root/r.txt']).stderr, /^abx: E8010: /);
    assert.equal(abxh(['exec', '--user', 'root', id, 'stat -c %U /root/r.txt']).stdout, 'root\n');
    // a write through a planted symlink lands inside, never on the host
    const target = path.join(os.tmpdir(), `abx-should-not-exist-${process.pid}`);
    abxh(['exec', id, `ln -s ${target} /app/out`]);
    runAbx(['files', 'put', id, '-', '/app/out'], { env: H.env, input: 'x' });
    assert.ok(!fs.existsSync(target), 'the write escaped to the host');
  } finally {
    fs.rmSync(marker, { force: true });
    abxh(['kill', id]);
  }
});

test('background tasks: ps, logs, logs --follow, signal, truncation', async () => {
  const id = create();
  const task = abxh(['exec', '--background', id, 'for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo done >&2']).stdout.trim();
  assert.match(task, /^\d+$/);
  const ps = JSON.parse(abxh(['ps', '--json', id]).stdout);
  assert.ok(ps.some((p) => p.task_id === task));
  const follow = abxh(['logs', '--follow', id, task]);
  assert.equal(follow.stdout, 'tick 1\ntick 2\ntick 3\n');
  assert.equal(follow.stderr, 'done\n');
  const j = JSON.parse(abxh(['logs', '--json', id, task]).stdout);
  assert.deepEqual([j.status, j.exit_code, j.truncated], ['exited', 0, false]);
  // signal
  const sleeper = abxh(['exec', '--background', id, 'sleep 300']).stdout.trim();
  assert.equal(abxh(['signal', id, sleeper, 'TERM']).status, 0);
  await waitFor(() => JSON.parse(abxh(['logs', '--json', id, sleeper]).stdout).status === 'exited', 5000);
  assert.equal(JSON.parse(abxh(['logs', '--json', id, sleeper]).stdout).exit_code, 143);
  // more than the 1 MiB kept per stream: the oldest is dropped and said so
  const big = abxh(['exec', '--background', id, 'head -c 3000000 /dev/zero | tr "\\0" a']).stdout.trim();
  await waitFor(() => JSON.parse(abxh(['logs', '--json', id, big]).stdout).status === 'exited', 10000);
  const b = JSON.parse(abxh(['logs', '--json', id, big]).stdout);
  assert.equal(b.truncated, true);
  assert.equal(b.stdout_offset, 3000000);
  assert.ok(b.stdout.length >= 1 << 20 && b.stdout.length <= 3000000);
  abxh(['kill', id]);
});

test('timeout: a sandbox ends at its deadline and leaves nothing; abx timeout extends it', async () => {
  const short = create(['--timeout', '2']);
  const kept = create(['--timeout', '2']);
  abxh(['exec', '--background', short, `(trap "" TERM; setsid sleep ${TAG}31 &) ; sleep ${TAG}32`]);
  await waitFor(() => hostProcesses(`sleep ${TAG}31`).length > 0, 3000);
  assert.equal(abxh(['timeout', kept, '60']).status, 0);
  await sleep(3500);
  const list = JSON.parse(abxh(['list', '--json']).stdout).map((s) => s.sandbox_id);
  assert.ok(!list.includes(short), 'expired sandbox still listed');
  assert.ok(list.includes(kept), 'extended sandbox is gone');
  const r = abxh(['info', short]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /^abx: E8002: /);
  assertGone(short);
  assert.deepEqual(hostProcesses(`sleep ${TAG}3`), [], 'processes outlived the sandbox');
  abxh(['kill', kept]);
  assertGone(kept);
});

test('abx pause / abx resume: processes freeze and go on, files kept; list shows paused; exec waits for resume; bad calls answer E8001/E8002', async () => {
  const id = create(['--timeout', '120']);
  assert.equal(abxh(['exec', id, 'echo kept > /tmp/file; (while :; do echo t >> /tmp/ticks; sleep 0.05; done) >/dev/null 2>&1 &']).status, 0);
  await sleep(500);
  const ticks = (file) => Number(abxh(['exec', id, `wc -l < ${file}`]).stdout.trim());
  const beforePause = ticks('/tmp/ticks');
  let r = abxh(['pause', id]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, `${id} paused (paused)\n`);
  const paused = JSON.parse(abxh(['list', '--status', 'paused', '--json']).stdout).map((x) => x.sandbox_id);
  assert.ok(paused.includes(id));
  assert.equal(JSON.parse(abxh(['info', id, '--json']).stdout).status, 'paused');
  r = abxh(['exec', id, 'true']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /^abx: E8016: .*resume/);
  assert.match(abxh(['pause', id]).stderr, /^abx: E8001: /);
  await sleep(1500); // frozen: the loop (20 lines a second) writes nothing meanwhile
  r = abxh(['resume', id, '--timeout', '300', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const info = JSON.parse(r.stdout);
  assert.equal(info.status, 'running');
  assert.ok(Math.abs((Date.parse(info.end_at) - Date.now()) / 1000 - 300) <= 5);
  const atResume = ticks('/tmp/ticks');
  assert.ok(atResume - beforePause < 15, `${atResume - beforePause} lines written across a 1.5 s pause`);
  assert.equal(abxh(['exec', id, 'cat /tmp/file']).stdout, 'kept\n');
  await sleep(600);
  assert.ok(ticks('/tmp/ticks') > atResume + 3, 'the loop goes on after resume');
  assert.match(abxh(['resume', id]).stderr, /^abx: E8001: /);
  assert.match(abxh(['pause', 'local:inothere00000000000']).stderr, /^abx: E8002: /);
  assert.match(abxh(['resume']).stderr, /^abx: E8014: usage: abx resume ID/);
  abxh(['kill', id]);
  assertGone(id);
});

test('kill removes processes, mounts, cgroups and state; a killed id is unknown', async () => {
  const mounts = mountCount();
  const id = create();
  abxh(['exec', '--background', id, `sleep ${TAG}41 & sleep ${TAG}42`]);
  await waitFor(() => hostProcesses(`sleep ${TAG}42`).length > 0, 3000);
  assert.ok(cgroupLeftovers(cgroupName(H.home, id)).length > 0, 'the sandbox has cgroups while alive');
  assert.equal(abxh(['kill', id]).status, 0);
  assertGone(id);
  assert.deepEqual(hostProcesses(`sleep ${TAG}4`), []);
  assert.equal(mountCount(), mounts);
  const r = abxh(['exec', id, 'true']);
  assert.equal(r.status, 125);
  assert.match(r.stderr, /^abx: E8002: /);
});

const bad = [
  [['info', 'local:inotarealsandbox000000'], 'E8002'],
  [['info', 'ixxxxxxxxxxxxxxxxxxxx'], 'E8002'],
  [['info', 'e2b:iabcdefghij0123456789'], 'E8020'], // the E2B client, with no API key configured
  [['info', 'nosuchprovider:iabcdefghij0123456789'], 'E8015'],
  [['info', ''], 'E8001'],
  [['kill', 'local:../../etc'], 'E8002'],
  [['timeout', 'local:iabcdefghij0123456789', '0'], 'E8001'],
  [['timeout', 'local:iabcdefghij0123456789', '86401'], 'E8001'],
  [['timeout', 'local:iabcdefghij0123456789', 'true'], 'E8001'],
  [['create', '--timeout', '0'], 'E8001'],
  [['create', '--timeout', '86401'], 'E8001'],
  [['create', '--template', 'nope'], 'E8001'],
  [['create', '--env', 'A-B=1'], 'E8001'],
  [['list', '--limit', '0'], 'E8001'],
  [['list', '--limit', '101'], 'E8001'],
  [['list', '--status', 'weird'], 'E8001'],
  [['files', 'frob', 'x'], 'E8014'],
];
for (const [args, code] of bad) {
  test(`bad input ${JSON.stringify(args)} → ${code}`, () => {
    const before = stateIds(H.home).length;
    const r = abxh(args);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`^abx: ${code}: .+\\(hint: .+\\)\\n$`));
    assert.equal(stateIds(H.home).length, before);
  });
}

test('bad file requests on a live sandbox: a directory, a missing file, a file over the disk', () => {
  const id = create(['--memory', '64']);
  let r = abxh(['files', 'cat', id, '/app']);
  assert.match(r.stderr, /^abx: E8019: /);
  r = abxh(['files', 'cat', id, '/app/missing']);
  assert.match(r.stderr, /^abx: E8023: /);
  // a FIFO planted in the sandbox neither hangs the data plane nor is read or written
  abxh(['exec', id, 'mkfifo /app/fifo']);
  r = abxh(['files', 'cat', id, '/app/fifo'], { timeout: 10000 });
  assert.match(r.stderr, /^abx: E8001: /);
  r = runAbx(['files', 'put', id, '-', '/app/fifo'], { env: H.env, input: 'x', timeout: 10000 });
  assert.match(r.stderr, /^abx: E8001: /);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-big-'));
  try {
    const big = path.join(dir, 'big');
    fs.writeFileSync(big, Buffer.alloc(48 << 20, 1)); // over the 32 MiB layer of a 64 MiB sandbox
    r = abxh(['files', 'put', id, big, '/app/big']);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /^abx: E8018: /);
    assert.equal(abxh(['exec', id, 'echo still fine']).stdout, 'still fine\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    abxh(['kill', id]);
  }
});

test('the sandbox init keeps no descriptor of the host beyond stdio, its control socket and signalfd', () => {
  const id = create();
  const shim = shimPid(H.home, bare(id));
  const init = fs.readFileSync(`/proc/${shim}/task/${shim}/children`, 'utf8').trim().split(/\s+/).map(Number)
    .find((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('abx-init'));
  assert.ok(init > 0, 'no abx-init child of the shim');
  const fds = fs.readdirSync(`/proc/${init}/fd`).map(Number).filter((fd) => fd > 2)
    .map((fd) => fs.readlinkSync(`/proc/${init}/fd/${fd}`));
  for (const target of fds) assert.match(target, /^(socket:|anon_inode:\[signalfd\])/, `init holds ${target}`);
  abxh(['kill', id]);
});

test('fault: kill -9 of the shim; the next abx list reaps everything', async () => {
  const id = create();
  abxh(['exec', '--background', id, `sleep ${TAG}51`]);
  await waitFor(() => hostProcesses(`sleep ${TAG}51`).length > 0, 3000);
  const pid = shimPid(H.home, bare(id));
  assert.ok(pid > 0);
  process.kill(pid, 'SIGKILL');
  // no waiting: the very next list must already see the sandbox gone
  const list = JSON.parse(abxh(['list', '--json']).stdout).map((s) => s.sandbox_id);
  assert.ok(!list.includes(id));
  await waitFor(() => cgroupLeftovers(cgroupName(H.home, id)).length === 0, 3000);
  assertGone(id);
  assert.deepEqual(hostProcesses(`sleep ${TAG}51`), [], 'the sandbox outlived its shim');
});

test('fault: kill -9 of abx mid-exec and mid-upload leaves the sandbox usable, then nothing after kill', async () => {
  const id = create();
  const ex = spawn(abx, ['exec', id, 'sleep 30'], { env: H.env });
  await sleep(300);
  ex.kill('SIGKILL');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-up-'));
  const big = path.join(dir, 'big');
  fs.writeFileSync(big, Buffer.alloc(64 << 20, 2));
  const up = spawn(abx, ['files', 'put', id, big, '/app/partial'], { env: H.env });
  await sleep(30);
  up.kill('SIGKILL');
  await new Promise((r) => up.on('close', r));
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(abxh(['exec', id, 'echo alive']).stdout, 'alive\n');
  assert.equal(abxh(['kill', id]).status, 0);
  abxh(['list']);
  assertGone(id);
});

test('concurrency: parallel creates from several processes, parallel execs in one sandbox', async () => {
  const made = await Promise.all(Array.from({ length: 8 }, () => runAbxAsync(['create'], { env: H.env })));
  const ids = made.map((r) => { assert.equal(r.status, 0, r.stderr); return r.stdout.trim(); });
  assert.equal(new Set(ids).size, 8);
  const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => runAbxAsync(['exec', ids[0], `echo ${i}`], { env: H.env })));
  runs.forEach((r, i) => { assert.equal(r.status, 0, r.stderr); assert.equal(r.stdout, `${i}\n`); });
  await Promise.all(ids.map((id) => runAbxAsync(['kill', id], { env: H.env })));
  ids.forEach(assertGone);
});

test('config set/get round-trips through ~/.abx/config.toml and masks secrets', () => {
  assert.equal(abxh(['config', 'set', 'core.provider', 'local']).status, 0);
  assert.equal(abxh(['config', 'set', 'providers.e2b.api_key', 'e2b_supersecret']).status, 0);
  assert.equal(abxh(['config', 'get', 'core.provider']).stdout, 'local\n');
  const all = abxh(['config', 'get']);
  assert.ok(!all.stdout.includes('supersecret'));
  assert.match(all.stdout, /providers\.e2b\.api_key = \*+/);
  const file = fs.readFileSync(path.join(H.home, 'config.toml'), 'utf8');
  assert.match(file, /\[core\]\nprovider = "local"/);
  assert.equal(fs.statSync(path.join(H.home, 'config.toml')).mode & 0o777, 0o600);
  assert.equal(abxh(['config', 'set', 'core.provider', 'nowhere']).status, 0);
  const r = abxh(['create']);
  assert.match(r.stderr, /^abx: E8015: provider 'nowhere' \(from config\.toml\)/);
  assert.equal(abxh(['--provider', 'local', 'list']).status, 0, 'the flag outranks the file');
  assert.equal(abxh(['config', 'unset', 'core.provider']).status, 0);
  assert.equal(runAbx(['list'], { env: { ...H.env, ABX_PROVIDER: 'elsewhere' } }).status, 1);
});

test('exec -it: a terminal of its own, sized as the caller\'s and resized with it; Ctrl-C interrupts the command, not abx', { timeout: 120000 }, () => {
  const id = abxh(['create', '--timeout', '120']).stdout.trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-tty-'));
  try {
    const steps = path.join(dir, 'steps.json');
    fs.writeFileSync(steps, JSON.stringify([
      ['wait', '\\$ $'],
      ['type', 'stty size; test -t 0 && test -t 1 && echo "is a ""tty"\n'], ['wait', 'is a tty'],
      ['resize', 40, 120], ['sleep', 0.5], ['type', 'stty size\n'], ['wait', '\n40 120'],
      ['type', 'sleep 60\n'], ['sleep', 0.5], ['type', '\u0003'],
      ['type', 'echo "after ""ctrl-c"\n'], ['wait', 'after ctrl-c'],
      ['type', 'exit 5\n'],
    ]));
    const t0 = Date.now();
    const r = spawnSync('/usr/bin/python3', [path.join(root, 'tests/fixtures/tty_drive.py'), steps, '--', abx, 'exec', '-it', id], { env: H.env, encoding: 'utf8', timeout: 90000 });
    assert.ok(!/TIMEOUT/.test(r.stdout), r.stdout.slice(-1500));
    assert.match(r.stdout, /\n24 80\r?\n/);
    assert.match(r.stdout, /\n40 120\r?\n/);
    assert.match(r.stdout, /after ctrl-c/);
    assert.match(r.stdout, /\nEXIT 5\n$/, 'abx exits with the shell\'s status');
    assert.ok(Date.now() - t0 < 60000, 'Ctrl-C did not reach the sleep');
    // a command instead of the shell; without a terminal, -it is refused clearly
    fs.writeFileSync(steps, '[]');
    const one = spawnSync('/usr/bin/python3', [path.join(root, 'tests/fixtures/tty_drive.py'), steps, '--', abx, 'exec', '-it', id, 'tty >/dev/null && echo yes; exit 3'], { env: H.env, encoding: 'utf8', timeout: 60000 });
    assert.match(one.stdout, /EXIT 3\n$/);
    const piped = runAbx(['exec', '-it', id, 'true'], { env: H.env, input: '' });
    assert.equal(piped.status, 125, "exec's own failures exit 125");
    assert.match(piped.stderr, /stdin is not a terminal/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    abxh(['kill', id]);
  }
});
