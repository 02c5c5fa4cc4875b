// oci.test.mjs: abx-oci, the OCI runtime (issue 25), against runc on the
// same inputs and under the engines that call a runtime: the same bundle
// through create/start/state/kill/delete of each; Podman with --runtime
// on one image (output and exit status equal, flag by flag); containerd's
// ctr with --runc-binary; Docker with --add-runtime. Every engine runs on
// a state directory, storage and socket of this test's, and is stopped
// after; the cleanup test counts what 200 create/delete cycles leave.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { abxOci, RUNC, sh, ok, requireTools, workDir, busyboxRoot, addPython, bundle, podmanWorld, importImage,
  containerdWorld, dockerWorld } from '../lib/oci-world.mjs';
import { sleep, root as repoRoot } from '../lib/harness.mjs';

const work = workDir('abx-oci');
const rootfs = path.join(work, 'rootfs');
let podman;
const RUNTIMES = { runc: RUNC, abx: abxOci };
// podman's defaults (nofile and nproc of 1048576) are above this host's
// limits for runc as for abx-oci: explicit ulimits, as the issue says
const ULIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'];

before(() => {
  requireTools();
  busyboxRoot(rootfs);
  podman = podmanWorld(path.join(work, 'podman'));
  importImage(podman, rootfs);
});

/** abx-oci or runc with a --root of the test's. */
function rt(name, args, opts) {
  return sh(RUNTIMES[name], ['--root', path.join(work, `state-${name}`), ...args], opts);
}

test('--version, spec, features and checkpoint answer as engines expect', () => {
  const lines = ok(abxOci, ['--version']).split('\n');
  assert.match(lines[0], /^abx-oci version \d+\.\d+\.\d+$/);
  assert.match(lines[1], /^commit: \S+$/);
  assert.match(lines[2], /^spec: 1\.\d+\.\d+$/);
  const dir = path.join(work, 'spec');
  fs.mkdirSync(dir);
  ok(abxOci, ['spec', '--bundle', dir]);
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  assert.equal(spec.root.path, 'rootfs');
  assert.ok(spec.linux.namespaces.some((n) => n.type === 'pid'));
  assert.notEqual(sh(abxOci, ['spec', '--bundle', dir]).status, 0, 'spec refuses to overwrite a config.json');
  const features = JSON.parse(ok(abxOci, ['features']));
  assert.ok(features.hooks.includes('createContainer'));
  assert.equal(features.linux.seccomp.enabled, true);
  for (const a of ['run.abx.profile', 'run.abx.network.allow_out', 'run.abx.envd', 'run.abx.envd.token', 'run.abx.envd.listen'])
    assert.ok(a in features.annotations, `features names ${a}`);
  const cp = sh(abxOci, ['checkpoint', 'x']);
  assert.notEqual(cp.status, 0);
  assert.match(cp.stderr, /E8004.*not supported/);
  const help = ok(abxOci, ['--help']);
  for (const verb of ['create', 'start', 'state', 'kill', 'delete', 'exec', 'ps', 'pause', 'resume', 'update'])
    assert.match(help, new RegExp(`\\b${verb}\\b`));
});

test('the same bundle through create, start, state, kill and delete of runc and of abx-oci', async () => {
  const seen = {};
  for (const name of Object.keys(RUNTIMES)) {
    const dir = bundle(path.join(work, `life-${name}`), rootfs, (c) => {
      c.process.args = ['sh', '-c', 'echo out:$(hostname):$(id -u):$PWD; grep -E "^(NoNewPrivs|CapBnd)" /proc/self/status; ls /; exec sleep 100'];
    });
    const out = path.join(work, `life-${name}.out`);
    const fd = fs.openSync(out, 'w');
    const pidFile = path.join(work, `life-${name}.pid`);
    const c = rt(name, ['create', '--bundle', dir, '--pid-file', pidFile, 'c1'], { stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    assert.equal(c.status, 0, `${name} create: ${c.stderr}`);
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    const s1 = JSON.parse(rt(name, ['state', 'c1']).stdout);
    assert.equal(s1.status, 'created', name);
    assert.equal(s1.pid, pid, `${name}: state's pid is the pid file's`);
    assert.equal(s1.bundle, dir);
    assert.equal(rt(name, ['start', 'c1']).status, 0);
    for (let i = 0; i < 100 && !fs.readFileSync(out, 'utf8').includes('tmp'); i++) await sleep(50);
    const s2 = JSON.parse(rt(name, ['state', 'c1']).stdout);
    assert.equal(s2.status, 'running', name);
    const list = rt(name, ['list', '--format', 'json']);
    assert.ok(JSON.parse(list.stdout).some((x) => x.id === 'c1'), `${name} list`);
    assert.match(rt(name, ['list']).stdout, new RegExp(`^c1\\s+${pid}\\s+running\\s+${dir}\\s`, 'm'), `${name} list's table`);
    assert.equal(rt(name, ['list', '-q']).stdout, 'c1\n');
    assert.notEqual(rt(name, ['delete', 'c1']).status, 0, `${name}: delete refuses a running container`);
    assert.equal(rt(name, ['kill', 'c1', 'KILL']).status, 0);
    let s3;
    for (let i = 0; i < 100; i++) {
      s3 = JSON.parse(rt(name, ['state', 'c1']).stdout);
      if (s3.status === 'stopped') break;
      await sleep(50);
    }
    assert.equal(s3.status, 'stopped', name);
    const k = rt(name, ['kill', 'c1', 'TERM']);
    assert.notEqual(k.status, 0, `${name}: kill of a stopped container fails`);
    assert.equal(rt(name, ['delete', 'c1']).status, 0);
    const gone = rt(name, ['state', 'c1']);
    assert.notEqual(gone.status, 0);
    assert.match(gone.stderr, /does not exist/, `${name}: ${gone.stderr}`);
    assert.ok(fs.existsSync(path.join(dir, 'config.json')), 'delete never touches the bundle');
    seen[name] = fs.readFileSync(out, 'utf8');
  }
  assert.equal(seen.abx, seen.runc, 'the container saw the same thing under both');
  assert.match(seen.abx, /^out:runc:0:\/\n/);
});

test('exec, ps, update, pause/resume, kill --all and run answer as runc\'s do', async () => {
  const seen = {};
  for (const name of Object.keys(RUNTIMES)) {
    const cg = `/abxocitest-${name}-${process.pid}`;
    const dir = bundle(path.join(work, `verbs-${name}`), rootfs, (c) => {
      c.process.args = ['sleep', '100'];
      c.linux.cgroupsPath = cg;
    });
    const log = [];
    const out = fs.openSync('/dev/null', 'w');
    assert.equal(rt(name, ['create', '--bundle', dir, 'v1'], { stdio: ['ignore', out, out] }).status, 0);
    assert.equal(rt(name, ['start', 'v1']).status, 0);
    const pid = JSON.parse(rt(name, ['state', 'v1']).stdout).pid;
    log.push(`ps ${JSON.stringify(JSON.parse(rt(name, ['ps', '--format', 'json', 'v1']).stdout).map((p) => p === pid))}`);
    const proc = path.join(work, `proc-${name}.json`);
    fs.writeFileSync(proc, JSON.stringify({ args: ['sleep', '50'], cwd: '/', user: { uid: 0, gid: 0 }, env: ['PATH=/bin'] }));
    const pidFile = path.join(work, `exec-${name}.pid`);
    const d = rt(name, ['exec', '--detach', '--pid-file', pidFile, '--process', proc, 'v1'], { stdio: ['ignore', out, out] });
    log.push(`exec --detach ${d.status} pidfile:${fs.existsSync(pidFile)}`);
    const execPid = Number(fs.readFileSync(pidFile, 'utf8'));
    const two = JSON.parse(rt(name, ['ps', '--format', 'json', 'v1']).stdout);
    log.push(`ps after exec ${two.length} ${two.includes(execPid)}`);
    const e = rt(name, ['exec', 'v1', 'sh', '-c', 'echo from-exec $(id -u); exit 4']);
    log.push(`exec ${e.status} ${e.stdout}`);
    const u = rt(name, ['update', '--resources', '-', 'v1'], { input: JSON.stringify({ memory: { limit: 64 << 20 }, pids: { limit: 50 } }) });
    log.push(`update ${u.status} ${fs.readFileSync(`/sys/fs/cgroup/memory${cg}/memory.limit_in_bytes`, 'utf8').trim()} ${fs.readFileSync(`/sys/fs/cgroup/pids${cg}/pids.max`, 'utf8').trim()}`);
    log.push(`pause ${rt(name, ['pause', 'v1']).status} ${JSON.parse(rt(name, ['state', 'v1']).stdout).status}`);
    log.push(`resume ${rt(name, ['resume', 'v1']).status} ${JSON.parse(rt(name, ['state', 'v1']).stdout).status}`);
    log.push(`kill --all ${rt(name, ['kill', '--all', 'v1', '9']).status}`);
    let st = '';
    for (let i = 0; i < 100 && st !== 'stopped'; i++) { st = JSON.parse(rt(name, ['state', 'v1']).stdout).status; await sleep(50); }
    log.push(`state ${st}`);
    log.push(`delete ${rt(name, ['delete', 'v1']).status} ${fs.existsSync(`/sys/fs/cgroup/memory${cg}`)}`);
    const runDir = bundle(path.join(work, `run-${name}`), rootfs, (c) => { c.process.args = ['sh', '-c', 'echo ran; exit 9']; });
    const r = rt(name, ['run', '--bundle', runDir, 'r1']);
    log.push(`run ${r.status} ${r.stdout}`);
    log.push(`after run ${rt(name, ['state', 'r1']).status}`);
    fs.closeSync(out);
    seen[name] = log;
  }
  assert.deepEqual(seen.abx, seen.runc);
  assert.deepEqual(seen.abx, ['ps [true]', 'exec --detach 0 pidfile:true', 'ps after exec 2 true', 'exec 4 from-exec 0\n',
    `update 0 ${64 << 20} 50`, 'pause 0 paused', 'resume 0 running', 'kill --all 0', 'state stopped', 'delete 0 false',
    'run 9 ran\n', 'after run 1']);
});

test('--preserve-fds passes the caller\'s fds 3.. to the process, as runc does', async () => {
  const seen = {};
  for (const name of Object.keys(RUNTIMES)) {
    const dir = bundle(path.join(work, `fds-${name}`), rootfs, (c) => {
      c.process.args = ['sh', '-c', 'echo through-fd3 >&3; ls /proc/self/fd | sort -n | tr "\\n" " "'];
    });
    const outFile = path.join(work, `fds-${name}.out`), fd3File = path.join(work, `fds-${name}.fd3`);
    const out = fs.openSync(outFile, 'w'), fd3 = fs.openSync(fd3File, 'w');
    const r = rt(name, ['run', '--preserve-fds', '1', '--bundle', dir, 'f1'], { stdio: ['ignore', out, out, fd3] });
    fs.closeSync(out);
    fs.closeSync(fd3);
    seen[name] = `${r.status} ${fs.readFileSync(outFile, 'utf8')} ${fs.readFileSync(fd3File, 'utf8')}`;
  }
  assert.equal(seen.abx, seen.runc);
  assert.match(seen.abx, /^0 0 1 2 3 (\d+ )? through-fd3\n$/, 'fd 3 is there (4: ls\'s own listing)');
});

test('errors: a JSON log line for the shim, a bad config named, an id in use, an unknown container', () => {
  const log = path.join(work, 'err.log');
  const r = sh(abxOci, ['--root', path.join(work, 'state-abx'), '--log', log, '--log-format', 'json', 'state', 'nope']);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /E8002.*container does not exist/);
  const line = JSON.parse(fs.readFileSync(log, 'utf8').trim().split('\n').pop());
  assert.equal(line.level, 'error');
  assert.match(line.msg, /does not exist/);
  assert.ok(line.time);
  const bad = path.join(work, 'bad');
  bundle(bad, rootfs, (c) => { c.process.args = []; });
  const b = rt('abx', ['create', '--bundle', bad, 'bad1']);
  assert.equal(b.status, 1);
  assert.match(b.stderr, /E8001.*process\.args/);
  assert.equal(rt('abx', ['state', 'bad1']).status, 1, 'a failed create leaves no state');
  const dir = bundle(path.join(work, 'dup'), rootfs, (c) => { c.process.args = ['sleep', '100']; });
  const fd = fs.openSync('/dev/null', 'w');
  assert.equal(rt('abx', ['create', '--bundle', dir, 'dup1'], { stdio: ['ignore', fd, fd] }).status, 0);
  const again = rt('abx', ['create', '--bundle', dir, 'dup1']); // refused before any container holds the pipes
  fs.closeSync(fd);
  assert.equal(again.status, 1);
  assert.match(again.stderr, /exists/);
  assert.equal(rt('abx', ['delete', '--force', 'dup1']).status, 0);
  assert.equal(rt('abx', ['delete', '--force', 'dup1']).status, 0, 'delete --force of a gone container is no error');
  const notfound = bundle(path.join(work, 'nf'), rootfs, (c) => { c.process.args = ['nosuchprogram']; });
  const nf = rt('abx', ['create', '--bundle', notfound, 'nf1']);
  assert.equal(nf.status, 1);
  assert.match(nf.stderr, /executable file not found in \$PATH/);
});

test('hooks run in order, each given the state, and poststop at delete', async () => {
  const marks = path.join(work, 'hooks.log');
  const hook = (kind) => ({ path: '/bin/sh', args: ['sh', '-c', `read s; echo "${kind} $s" >> ${marks}`] });
  const dir = bundle(path.join(work, 'hooks'), rootfs, (c) => {
    c.process.args = ['true'];
    c.hooks = {};
    for (const kind of ['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop']) c.hooks[kind] = [hook(kind)];
    // createContainer and startContainer run inside: the container's root has /bin/sh, the log is bound in
    fs.writeFileSync(marks, '');
    c.mounts.push({ destination: marks, type: 'bind', source: marks, options: ['bind'] });
  });
  const fd = fs.openSync('/dev/null', 'w');
  assert.equal(rt('abx', ['create', '--bundle', dir, 'h1'], { stdio: ['ignore', fd, fd] }).status, 0);
  fs.closeSync(fd);
  assert.equal(rt('abx', ['start', 'h1']).status, 0);
  for (let i = 0; i < 100 && JSON.parse(rt('abx', ['state', 'h1']).stdout).status !== 'stopped'; i++) await sleep(50);
  assert.equal(rt('abx', ['delete', 'h1']).status, 0);
  const lines = fs.readFileSync(marks, 'utf8').trim().split('\n');
  assert.deepEqual(lines.map((l) => l.split(' ')[0]),
    ['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop']);
  const state = JSON.parse(lines[0].slice(lines[0].indexOf(' ') + 1));
  assert.equal(state.id, 'h1');
  assert.equal(state.bundle, dir);
  assert.ok(state.pid > 0);
});

test('a hook that never reads its state is still held to its timeout (a large state included)', () => {
  const dir = bundle(path.join(work, 'slowhook'), rootfs, (c) => {
    c.process.args = ['true'];
    c.annotations = { big: 'x'.repeat(3 << 20) }; // past any pipe's size
    c.hooks = { createRuntime: [{ path: '/bin/sleep', args: ['sleep', '30'], timeout: 1 }] };
  });
  const t0 = Date.now();
  const fd = fs.openSync('/dev/null', 'w');
  const r = rt('abx', ['--log', path.join(work, 'slowhook.log'), 'create', '--bundle', dir, 'sh1'], { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  assert.equal(r.status, 1);
  assert.ok(Date.now() - t0 < 15000, `create took ${Date.now() - t0} ms: the hook's 1 s timeout did not hold`);
  assert.match(fs.readFileSync(path.join(work, 'slowhook.log'), 'utf8'), /did not end within its timeout/);
  assert.equal(rt('abx', ['state', 'sh1']).status, 1, 'nothing is left of the failed create');
});

/** One podman run under runtime: {status, out}. */
function podmanRun(runtime, args) {
  const r = podman(['run', '--rm', '--runtime', RUNTIMES[runtime], '--network', 'none', ...ULIMITS, ...args],
    { timeout: 120000 });
  return { status: r.status, out: r.stdout };
}

const CASES = {
  'a plain command': ['localhost/bb', 'sh', '-c', 'echo hello; exit 3'],
  '--user': ['--user', '1234:5678', 'localhost/bb', 'id'],
  '--workdir': ['--workdir', '/etc', 'localhost/bb', 'pwd'],
  '--env': ['--env', 'FOO=bar baz', 'localhost/bb', 'sh', '-c', 'echo "$FOO"'],
  '--hostname': ['--hostname', 'myhost', 'localhost/bb', 'hostname'],
  '--read-only': ['--read-only', 'localhost/bb', 'sh', '-c', 'touch /x 2>&1; echo $?'],
  'a read-only volume': null, // made in the test (a host directory of the test's)
  '--network none': ['localhost/bb', 'sh', '-c', 'ls /sys/class/net; cat /proc/net/dev | wc -l'],
  'NoNewPrivs and Seccomp': ['--security-opt', 'no-new-privileges', 'localhost/bb', 'grep', '-E', '^(NoNewPrivs|Seccomp)', '/proc/self/status'],
  'the default capability set': ['localhost/bb', 'grep', '^Cap', '/proc/self/status'],
  '--cap-drop all --cap-add net_raw': ['--cap-drop', 'all', '--cap-add', 'net_raw', 'localhost/bb', 'grep', '^Cap', '/proc/self/status'],
  '--pids-limit': ['--pids-limit', '20', 'localhost/bb', 'sh', '-c', 'n=0; for i in $(seq 1 40); do sleep 3 & n=$((n+1)); done 2>/dev/null; echo $(ls /proc | grep -c "^[0-9]")'],
  'an OOM kill under --memory': ['--memory', '32m', '--memory-swap', '32m', 'localhost/bb', 'sh', '-c', 'a=x; while true; do a="$a$a"; done'],
  'a missing program': ['localhost/bb', 'nosuchprogram'],
  '--cpuset-cpus and --cpus': ['--cpuset-cpus', '0', '--cpus', '0.5', 'localhost/bb', 'sh', '-c',
    'cat /sys/fs/cgroup/cpuset/cpuset.cpus /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us'],
  '--memory-reservation and --cpu-shares': ['--memory-reservation', '16m', '--cpu-shares', '512', 'localhost/bb', 'sh', '-c',
    'cat /sys/fs/cgroup/memory/memory.soft_limit_in_bytes /sys/fs/cgroup/cpu/cpu.shares'],
};

test('Podman --runtime: output and exit status equal to runc\'s, case by case', () => {
  const vol = path.join(work, 'vol');
  fs.mkdirSync(vol, { recursive: true });
  fs.writeFileSync(path.join(vol, 'f'), 'in the volume\n');
  CASES['a read-only volume'] = ['-v', `${vol}:/vol:ro`, 'localhost/bb', 'sh', '-c', 'cat /vol/f; touch /vol/g 2>&1; echo $?'];
  const differ = [];
  for (const [name, args] of Object.entries(CASES)) {
    const a = podmanRun('abx', args), r = podmanRun('runc', args);
    if (a.status !== r.status || a.out !== r.out) differ.push(`${name}: runc ${r.status} ${JSON.stringify(r.out)}, abx-oci ${a.status} ${JSON.stringify(a.out)}`);
  }
  assert.deepEqual(differ, []);
  // and what they agree on is what the flags mean
  assert.equal(podmanRun('abx', CASES['a plain command']).status, 3);
  assert.match(podmanRun('abx', CASES['--user']).out, /^uid=1234\b.* gid=5678\b/);
  assert.equal(podmanRun('abx', CASES['an OOM kill under --memory']).status, 137);
  assert.equal(podmanRun('abx', CASES['a missing program']).status, 127);
  assert.ok(Number(podmanRun('abx', CASES['--pids-limit']).out) <= 20, 'the pids limit holds');
  assert.match(podmanRun('abx', CASES['NoNewPrivs and Seccomp']).out, /NoNewPrivs:\s+1\nSeccomp:\s+2/);
  assert.equal(podmanRun('abx', CASES['--cpuset-cpus and --cpus']).out, '0\n50000\n100000\n', 'the container\'s own cgroup, as set');
  assert.equal(podmanRun('abx', CASES['--memory-reservation and --cpu-shares']).out, `${16 << 20}\n512\n`);
});

test('Podman --runtime: run -d, exec, pause/unpause, top, kill, wait, rm', () => {
  const steps = {};
  for (const name of Object.keys(RUNTIMES)) {
    const R = RUNTIMES[name];
    const log = [];
    const id = podman(['run', '-d', '--runtime', R, '--network', 'none', ...ULIMITS, 'localhost/bb', 'sleep', '1000']);
    assert.equal(id.status, 0, id.stderr);
    const cid = id.stdout.trim();
    const e = podman(['exec', cid, 'sh', '-c', 'echo exec-out; exit 3']);
    log.push(`exec ${e.status} ${e.stdout}`);
    const t = podman(['exec', '-t', cid, 'sh', '-c', 'tty']);
    log.push(`exec -t ${t.status} ${t.stdout.replace(/\r/g, '')}`);
    log.push(`pause ${podman(['pause', cid]).status} ${podman(['inspect', '-f', '{{.State.Status}}', cid]).stdout.trim()}`);
    log.push(`unpause ${podman(['unpause', cid]).status} ${podman(['inspect', '-f', '{{.State.Status}}', cid]).stdout.trim()}`);
    const top = podman(['top', cid, 'args']);
    log.push(`top ${top.status} ${top.stdout.split('\n').slice(1).join('|')}`);
    log.push(`kill ${podman(['kill', cid]).status}`);
    const w = podman(['wait', cid]);
    log.push(`wait ${w.status} ${w.stdout.trim()}`);
    log.push(`rm ${podman(['rm', cid]).status}`);
    steps[name] = log;
  }
  assert.deepEqual(steps.abx, steps.runc);
  assert.deepEqual(steps.abx.slice(0, 4), ['exec 3 exec-out\n', 'exec -t 0 /dev/pts/0\n', 'pause 0 paused', 'unpause 0 running']);
  assert.equal(steps.abx[6], 'wait 0 137');
});

test('containerd: ctr run --runc-binary abx-oci, -d, task exec, ps, kill and rm', async () => {
  const world = await containerdWorld(path.join(work, 'containerd'));
  try {
    const { ctr } = world;
    const archive = path.join(work, 'bb-oci.tar');
    ok('podman', ['--root', `${work}/podman/root`, '--runroot', `${work}/podman/run`, '--tmpdir', `${work}/podman/tmp`,
      '--storage-driver', 'vfs', 'save', '--format', 'oci-archive', '-o', archive, 'localhost/bb']);
    const imp = ctr(['image', 'import', '--base-name', 'localhost/bb', archive]);
    assert.equal(imp.status, 0, imp.stderr);
    const run = ctr(['run', '--rm', '--runtime', 'io.containerd.runc.v2', '--runc-binary', abxOci, 'localhost/bb:latest',
      'c1', 'sh', '-c', 'echo ctr-out; exit 7']);
    assert.equal(run.stdout, 'ctr-out\n', run.stderr);
    assert.equal(run.status, 7);
    const d = ctr(['run', '-d', '--runtime', 'io.containerd.runc.v2', '--runc-binary', abxOci, 'localhost/bb:latest', 'c2', 'sleep', '1000']);
    assert.equal(d.status, 0, d.stderr);
    const e = ctr(['task', 'exec', '--exec-id', 'e1', 'c2', 'sh', '-c', 'echo in-task; exit 4']);
    assert.equal(e.stdout, 'in-task\n');
    assert.equal(e.status, 4);
    const ps = ctr(['task', 'ps', 'c2']);
    assert.equal(ps.status, 0, ps.stderr);
    assert.equal(ps.stdout.trim().split('\n').length, 2, `one process: ${ps.stdout}`);
    assert.equal(ctr(['task', 'kill', '-s', 'KILL', 'c2']).status, 0);
    let ls = '';
    for (let i = 0; i < 100 && !/STOPPED/.test(ls); i++) { ls = ctr(['task', 'ls']).stdout; await sleep(50); }
    assert.match(ls, /c2\s+\d+\s+STOPPED/);
    assert.equal(ctr(['task', 'rm', 'c2']).status, 0);
    assert.equal(ctr(['container', 'rm', 'c2']).status, 0);
    assert.deepEqual(fs.readdirSync('/run/containerd/runc/default').filter((x) => x === 'c1' || x === 'c2'), [],
      'no state is left in the shim\'s --root');
  } finally {
    await world.stop();
  }
});

test('Docker: docker run --runtime abx', async () => {
  const world = await dockerWorld(path.join(work, 'docker'));
  try {
    const { docker } = world;
    const archive = path.join(work, 'bb-docker.tar');
    ok('podman', ['--root', `${work}/podman/root`, '--runroot', `${work}/podman/run`, '--tmpdir', `${work}/podman/tmp`,
      '--storage-driver', 'vfs', 'save', '--format', 'docker-archive', '-o', archive, 'localhost/bb']);
    const load = docker(['load', '-i', archive]);
    assert.equal(load.status, 0, load.stderr);
    const info = docker(['info', '--format', '{{json .Runtimes}}']);
    assert.match(info.stdout, /"abx"/);
    const r = docker(['run', '--rm', '--runtime', 'abx', '--network', 'none', 'localhost/bb', 'sh', '-c', 'echo docker-out; id -u; exit 5']);
    assert.equal(r.stdout, 'docker-out\n0\n', r.stderr);
    assert.equal(r.status, 5);
  } finally {
    await world.stop();
  }
});

/** curl in the network namespace of the container whose init is pid. */
function curlIn(pid, args) {
  return sh('nsenter', ['-t', String(pid), '-n', 'curl', '-s', '--max-time', '10', ...args]);
}

/** A Connect-protocol frame (flags, big-endian length, JSON). */
function connectFrame(message) {
  const body = Buffer.from(JSON.stringify(message));
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

/** The stdout of a streamed process.Process/Start answer. */
function streamedStdout(raw) {
  let out = '', at = 0, exit = null;
  const buf = Buffer.from(raw, 'latin1');
  while (at + 5 <= buf.length) {
    const len = buf.readUInt32BE(at + 1);
    const msg = JSON.parse(buf.subarray(at + 5, at + 5 + len).toString('utf8'));
    at += 5 + len;
    const ev = msg.event || {};
    if (ev.data?.stdout) out += Buffer.from(ev.data.stdout, 'base64').toString('utf8');
    if (ev.end) exit = ev.end.exitCode ?? 0;
  }
  return { out, exit };
}

test('the agent: run.abx.envd=true serves E2B\'s data plane inside the container, with its token', () => {
  const token = 'a'.repeat(16) + 'B'.repeat(16) + '0123';
  const id = podman(['run', '-d', '--runtime', abxOci, '--network', 'none', ...ULIMITS, '--annotation', 'run.abx.envd=true',
    '--annotation', `run.abx.envd.token=${token}`, 'localhost/bb', 'sleep', '1000']);
  assert.equal(id.status, 0, id.stderr);
  const cid = id.stdout.trim();
  try {
    const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', cid]).stdout);
    const base = 'http://127.0.0.1:49983';
    assert.equal(curlIn(pid, ['-o', '/dev/null', '-w', '%{http_code}', `${base}/health`]).stdout, '204');
    const frame = path.join(work, 'start.frame');
    fs.writeFileSync(frame, connectFrame({ process: { cmd: '/bin/sh', args: ['-c', 'echo agent-ran; hostname; cat /proc/1/cmdline | tr "\\0" " "'] } }));
    const started = curlIn(pid, ['-H', `X-Access-Token: ${token}`, '-H', 'Content-Type: application/connect+json',
      '--data-binary', `@${frame}`, `${base}/process.Process/Start`]);
    assert.equal(started.status, 0, started.stderr);
    const { out, exit } = streamedStdout(started.stdout);
    assert.equal(exit, 0);
    assert.equal(out, `agent-ran\n${cid.slice(0, 12)}\nsleep 1000 `, 'the command ran in the container (its hostname, its pid 1)');
    const put = curlIn(pid, ['-w', ' %{http_code}', '-H', `X-Access-Token: ${token}`, '--data-binary', 'written by the agent',
      `${base}/files?path=/tmp/agent.txt&username=root`]);
    assert.match(put.stdout, / 200$/);
    assert.equal(podman(['exec', cid, 'cat', '/tmp/agent.txt']).stdout, 'written by the agent', 'the file is the container\'s');
    assert.equal(podman(['exec', cid, 'sh', '-c', 'echo from-the-container > /tmp/back.txt']).status, 0);
    const get = curlIn(pid, ['-H', `X-Access-Token: ${token}`, `${base}/files?path=/tmp/back.txt&username=root`]);
    assert.equal(get.stdout, 'from-the-container\n');
    assert.ok(!/:C34F /.test(fs.readFileSync(`/proc/${pid}/net/tcp`, 'utf8')), 'no code interpreter without Python in the image');
    for (const wrong of [[], ['-H', 'X-Access-Token: wrong'], ['-H', `X-Access-Token: ${token}x`]]) {
      const r = curlIn(pid, ['-o', '/dev/null', '-w', '%{http_code}', ...wrong, `${base}/files?path=/tmp/agent.txt`]);
      assert.equal(r.stdout, '401', `a request with ${wrong.join(' ') || 'no token'}`);
    }
  } finally {
    podman(['rm', '-f', '-t', '0', cid]);
  }
  const left = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try { return fs.readFileSync(`/proc/${p}/environ`, 'utf8').includes(cid); } catch { return false; }
  });
  assert.deepEqual(left, [], 'the agent ended with its container');
});

test('the agent: E2B\'s own SDK (e2b) drives the container through it: commands and files', () => {
  const root = busyboxRoot(path.join(work, 'bashroot'));
  // E2B's SDK runs commands as /bin/bash -l -c: busybox's sh stands in
  fs.writeFileSync(path.join(root, 'bin/bash'), '#!/bin/sh\nexec /bin/sh "$@"\n', { mode: 0o755 });
  importImage(podman, root, 'localhost/bbsh');
  const token = 'e'.repeat(20) + 'F'.repeat(20);
  const id = podman(['run', '-d', '--runtime', abxOci, '--network', 'none', ...ULIMITS, '--annotation', 'run.abx.envd=true',
    '--annotation', `run.abx.envd.token=${token}`, 'localhost/bbsh', 'sleep', '1000']);
  assert.equal(id.status, 0, id.stderr);
  const cid = id.stdout.trim();
  try {
    const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', cid]).stdout);
    const sdk = path.join(repoRoot, 'node_modules/e2b/dist/index.mjs');
    const script = `
      import { Sandbox } from ${JSON.stringify(sdk)};
      const open = (t) => new Sandbox({ sandboxId: 'oci', envdAccessToken: t, sandboxUrl: 'http://127.0.0.1:49983', envdVersion: '0.6.4' });
      const sbx = open(${JSON.stringify(token)});
      const r = await sbx.commands.run('echo from-e2b; cat /proc/1/cmdline | tr "\\\\0" " "', { user: 'root' });
      await sbx.files.write('/tmp/e2b.txt', 'written by the e2b sdk');
      const back = await sbx.files.read('/tmp/e2b.txt');
      let wrong = 'accepted';
      try { await open('x'.repeat(40)).commands.run('true', { user: 'root' }); } catch (e) { wrong = e.name; }
      console.log(JSON.stringify({ stdout: r.stdout, exitCode: r.exitCode, back, wrong }));`;
    const r = sh('nsenter', ['-t', String(pid), '-n', process.execPath, '--input-type=module', '-e', script]);
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.deepEqual(got, { stdout: 'from-e2b\nsleep 1000 ', exitCode: 0, back: 'written by the e2b sdk', wrong: 'AuthenticationError' });
    assert.equal(podman(['exec', cid, 'cat', '/tmp/e2b.txt']).stdout, 'written by the e2b sdk');
  } finally {
    podman(['rm', '-f', '-t', '0', cid]);
  }
});

test('the agent: the code interpreter on 49999 when the image has Python', () => {
  importImage(podman, addPython(busyboxRoot(path.join(work, 'pyroot'))), 'localhost/py');
  const token = 'p'.repeat(40);
  const id = podman(['run', '-d', '--runtime', abxOci, '--network', 'none', ...ULIMITS, '--annotation', 'run.abx.envd=true',
    '--annotation', `run.abx.envd.token=${token}`, 'localhost/py', 'sleep', '1000']);
  assert.equal(id.status, 0, id.stderr);
  const cid = id.stdout.trim();
  try {
    const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', cid]).stdout);
    const run = (code, extra = []) => curlIn(pid, ['-H', 'Content-Type: application/json', ...extra, '-d', JSON.stringify({ code }),
      'http://127.0.0.1:49999/execute']);
    const r = run('open("made.txt", "w").write("x")\nimport os\nprint(os.getcwd())\n6 * 7', ['-H', `X-Access-Token: ${token}`]);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.some((l) => l.type === 'stdout' && l.text === '/tmp\n'), r.stdout);
    assert.ok(lines.some((l) => l.type === 'result' && l.text === '42'), r.stdout);
    const trailer = lines.find((l) => l.type === 'abx');
    assert.deepEqual(trailer.files.map((f) => f.path), ['/tmp/made.txt'], 'what the cell made, and only that');
    assert.equal(podman(['exec', cid, 'cat', '/tmp/made.txt']).stdout, 'x', 'the cell ran in the container');
    assert.equal(run('1', ['-o', '/dev/null', '-w', '%{http_code}']).stdout, '401', 'the token is needed there too');
  } finally {
    podman(['rm', '-f', '-t', '0', cid]);
  }
});

test('the agent: without the annotation nothing listens on 49983; a bad token annotation is refused', () => {
  const id = podman(['run', '-d', '--runtime', abxOci, '--network', 'none', ...ULIMITS, 'localhost/bb', 'sleep', '1000']);
  assert.equal(id.status, 0, id.stderr);
  const cid = id.stdout.trim();
  try {
    const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', cid]).stdout);
    const tcp = fs.readFileSync(`/proc/${pid}/net/tcp`, 'utf8');
    assert.ok(!/:C33F /.test(tcp), `something listens on 49983:\n${tcp}`);
    const top = podman(['top', cid, 'args']).stdout;
    assert.ok(!/abx/.test(top), `nothing of abx runs inside:\n${top}`);
  } finally {
    podman(['rm', '-f', '-t', '0', cid]);
  }
  const bad = podman(['run', '--rm', '--runtime', abxOci, '--network', 'none', ...ULIMITS, '--annotation', 'run.abx.envd=true',
    '--annotation', 'run.abx.envd.token=short', 'localhost/bb', 'true']);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /run\.abx\.envd\.token/);
});

/** What the host has that a container could leave behind. */
// the cycles take their uid ranges from a pool of their own (abx's pool is
// shared with every sandbox other test files start meanwhile)
const POOL = { ABX_UID_POOL_BASE: String(3000000000 + (process.pid % 1000) * 4 * 65536), ABX_UID_POOL_SLOTS: '4' };

function hostFootprint(stateRoot, prefix) {
  // the host's mounts a cycle could leave (under this test's directory or a state root; other test
  // files mount in the host's namespace concurrently, elsewhere)
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ').slice(3, 5).join(' '))
    .filter((m) => m.includes(work) || m.includes('abx-oci')).sort();
  const cgroups = [];
  for (const ctl of fs.readdirSync('/sys/fs/cgroup')) {
    const p = path.join('/sys/fs/cgroup', ctl, 'abx-oci');
    if (fs.existsSync(p)) cgroups.push(...fs.readdirSync(p).filter((x) => x.startsWith(prefix)).map((x) => `${ctl}/${x}`));
  }
  const procs = [];
  for (const pid of fs.readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      // a container's process, or a runtime process of a cycle (a uid range's holder among them)
      if (cmd.includes('abx-oci-cycle') || cmd.includes(`${work}/cycle`)) procs.push(pid);
    } catch { /* gone */ }
  }
  // the uid ranges of abx's pool held now (a range's lock file is flock'ed while in use)
  const slots = '/run/abx/uid-slots';
  const first = Number(POOL.ABX_UID_POOL_BASE);
  const ranges = (fs.existsSync(slots) ? fs.readdirSync(slots) : [])
    .filter((f) => Number(f) >= first && Number(f) < first + 4 * 65536)
    .filter((f) => sh('flock', ['-n', '-E', '75', path.join(slots, f), 'true']).status === 75);
  return JSON.stringify({ mounts, cgroups, procs, ranges, state: fs.existsSync(stateRoot) ? fs.readdirSync(stateRoot) : [] });
}

test('cleanup: 200 create/delete cycles leave processes, mounts, cgroups, uid ranges and state as they were', async () => {
  const plain = bundle(path.join(work, 'cycle'), rootfs, (c) => { c.process.args = ['sleep', 'abx-oci-cycle']; });
  // every other one under the sandbox profile: a uid range of the pool, id-mapped root
  const sandboxed = bundle(path.join(work, 'cycle-sandbox'), rootfs, (c) => {
    c.process.args = ['sleep', 'abx-oci-cycle'];
    c.annotations = { 'run.abx.profile': 'sandbox' };
  });
  const stateRoot = path.join(work, 'state-cycle');
  const prefix = `cy${process.pid}-`;
  const env = { ...process.env, ...POOL };
  const before = hostFootprint(stateRoot, prefix);
  const fd = fs.openSync('/dev/null', 'w');
  const log = path.join(work, 'cycle.log');
  for (let i = 0; i < 200; i++) {
    // the container holds create's stdio: files, not pipes (a pipe would stay open)
    const dir = i % 2 ? sandboxed : plain;
    const c = sh(abxOci, ['--root', stateRoot, '--log', log, 'create', '--bundle', dir, `${prefix}${i}`], { stdio: ['ignore', fd, fd], env });
    if (c.status !== 0) assert.fail(`cycle ${i}: ${fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : c.status}`);
    const d = sh(abxOci, ['--root', stateRoot, 'delete', '--force', `${prefix}${i}`], { env });
    assert.equal(d.status, 0, `cycle ${i}: ${d.stderr}`);
  }
  fs.closeSync(fd);
  // a range's holder leaves when its container's init is gone: give the last one a moment
  let after = hostFootprint(stateRoot, prefix);
  for (let i = 0; i < 50 && after !== before; i++) { await sleep(100); after = hostFootprint(stateRoot, prefix); }
  assert.equal(after, before);
});
