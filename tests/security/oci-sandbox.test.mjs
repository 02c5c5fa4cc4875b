// oci-sandbox.test.mjs: abx's sandbox profile under an engine (issue 25):
// a Podman container run by abx-oci with run.abx.profile=sandbox gets a
// host uid range of abx's pool with an id-mapped root, abx's seccomp list
// beside the engine's profile and abx's /proc masks. The escape suite's
// probes that apply to a container run inside it and are blocked; the
// same container without the profile is not a sandbox (the probe refuses
// to run there: the initial user namespace). Everything runs on a Podman
// store of this test's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { probe, onExit, sleep } from '../lib/harness.mjs';
import { abxOci, sh, ok, requireTools, workDir, busyboxRoot, bundle, podmanWorld, importImage } from '../lib/oci-world.mjs';

const work = workDir('abx-oci-sandbox');
let podman;
const HOSTNAME = 'iociprofile0123456789'; // the probe runs where the hostname is a sandbox id
const BASE = ['run', '--rm', '--runtime', abxOci, '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096',
  '--security-opt', 'no-new-privileges', '--hostname', HOSTNAME];
const PROFILE = ['--annotation', 'run.abx.profile=sandbox'];
const marker = path.join(work, 'host-marker');

before(() => {
  requireTools();
  const root = busyboxRoot(path.join(work, 'rootfs'));
  // the probe and the libraries it loads, at their own paths
  fs.copyFileSync(probe, path.join(root, 'bin/abx-probe'));
  fs.chmodSync(path.join(root, 'bin/abx-probe'), 0o755);
  for (const lib of ok('ldd', [probe]).match(/\/\S+/g) || []) {
    fs.mkdirSync(path.join(root, path.dirname(lib)), { recursive: true });
    fs.copyFileSync(lib, path.join(root, lib));
  }
  podman = podmanWorld(path.join(work, 'podman'));
  importImage(podman, root);
  fs.writeFileSync(marker, 'host secret\n');
});

function attack(name, args = [], extra = []) {
  const r = podman([...BASE, ...PROFILE, '--network', 'none', ...extra, 'localhost/bb', '/bin/abx-probe', name, ...args]);
  return { status: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

// the probes whose attacks apply to a container: the kernel's surface, the
// host's files, devices and sockets, other namespaces, resource bombs.
// (ptrace and proc_exe aim at abx's own pid 1; host_device, proc_writes,
// setuid, cgroup and rlimits check what an abx sandbox's own config gives,
// where a container has the engine's: /sys, /dev/mqueue, capabilities,
// /sys/fs/cgroup, core dumps.)
const PROBES = {
  read_host_file: [[marker]],
  raw_socket: [], mount: [], userns: [], kernel_module: [], keyctl: [], bpf: [], perf: [], userfaultfd: [],
  tiocsti: [], tioclinux: [], foreign_abi: [], uts_ipc: [], abstract_socket: [], file_handle: [],
  symlink_cwd: [[marker]], network: [],
  fork_bomb: [[], ['--pids-limit', '64']],
  memory_bomb: [['1024'], ['--memory', '64m', '--memory-swap', '64m']],
};

test('the escape probes that apply to a container are blocked under run.abx.profile=sandbox', () => {
  const escaped = [];
  for (const [name, [args = [], extra = []]] of Object.entries(PROBES)) {
    const r = attack(name, args, extra);
    if (r.status !== 0 || !/^BLOCKED/m.test(r.out)) escaped.push(`${name}: ${r.status} ${r.out.split('\n').pop()}`);
  }
  assert.deepEqual(escaped, []);
});

test('without the profile the container is no sandbox: the probe refuses to run there', () => {
  const r = podman([...BASE, '--network', 'none', 'localhost/bb', '/bin/abx-probe', 'mount']);
  assert.equal(r.status, 3, r.stdout + r.stderr);
  assert.match(r.stdout, /REFUSED: .*initial user namespace/);
});

test('root in the container is a host uid of abx\'s pool, and the root filesystem is id-mapped for it', () => {
  const vol = path.join(work, 'vol');
  fs.mkdirSync(vol, { recursive: true });
  fs.writeFileSync(path.join(vol, 'owned-by-host-root'), 'x');
  const r = podman([...BASE, ...PROFILE, '--network', 'none', '-v', `${vol}:/vol`, 'localhost/bb', 'sh', '-c',
    'cat /proc/self/uid_map; cat /proc/self/gid_map; stat -c "%u %g" /bin/busybox /vol/owned-by-host-root; id -u; touch /made-inside && echo wrote; grep ^Seccomp_filters /proc/self/status']);
  assert.equal(r.status, 0, r.stderr);
  const [uidMap, gidMap, binOwner, volOwner, uid, wrote, filters] = r.stdout.trim().split('\n');
  const [inside, host, count] = uidMap.trim().split(/\s+/).map(Number);
  assert.equal(inside, 0);
  assert.equal(count, 65536);
  const poolBase = Number(process.env.ABX_UID_POOL_BASE || 1000000000);
  assert.ok(host >= poolBase && (host - poolBase) % 65536 === 0, `root maps to host uid ${host}, not a range of the pool`);
  assert.equal(gidMap.trim().split(/\s+/)[1], String(host));
  assert.equal(binOwner, '0 0', 'the image\'s files, owned by host root, are root\'s inside (id-mapped)');
  assert.equal(volOwner, '0 0', 'a volume is id-mapped too');
  assert.equal(uid, '0');
  assert.equal(wrote, 'wrote');
  assert.match(filters, /Seccomp_filters:\s+2/, 'abx\'s seccomp list is loaded beside the engine\'s');
  assert.ok(!fs.existsSync(path.join(vol, 'made-inside')));
});

test('the uid range goes back to the pool when the container is gone', async () => {
  const r = podman([...BASE, ...PROFILE, '--network', 'none', '-d', 'localhost/bb', 'sleep', '1000']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', id]).stdout);
  const base = fs.readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim().split(/\s+/)[1];
  // (abx's pool is shared with other test files' sandboxes: this container's own range is watched)
  const slot = path.join('/run/abx/uid-slots', base);
  const held = () => sh('flock', ['-n', '-E', '75', slot, 'true']).status === 75;
  assert.ok(held(), `the container's range ${base} is held while it runs`);
  assert.equal(podman(['rm', '-f', '-t', '0', id]).status, 0);
  for (let i = 0; i < 50 && held(); i++) await sleep(100);
  assert.ok(!held(), `the range ${base} went back to the pool`);
});

// A world of network namespaces, as the network tests build: the
// container's namespace (made here, given to Podman by path) reaches two
// servers of a "world" namespace over a veth pair.
const tag = `${process.pid % 100000}`;
const CNS = `abxoc${tag}`, WNS = `abxow${tag}`;
const servers = [];
function worldDown() {
  for (const s of servers) { try { s.kill('SIGKILL'); } catch { /* gone */ } }
  sh('ip', ['netns', 'del', CNS]);
  sh('ip', ['netns', 'del', WNS]);
}
after(worldDown);
onExit(worldDown);

async function world() {
  for (const args of [['netns', 'add', CNS], ['netns', 'add', WNS],
    ['link', 'add', `vc${tag}`, 'type', 'veth', 'peer', 'name', `vw${tag}`],
    ['link', 'set', `vc${tag}`, 'netns', CNS], ['link', 'set', `vw${tag}`, 'netns', WNS],
    ['-n', CNS, 'addr', 'add', '10.199.0.2/16', 'dev', `vc${tag}`], ['-n', CNS, 'link', 'set', `vc${tag}`, 'up'],
    ['-n', CNS, 'link', 'set', 'lo', 'up'],
    ['-n', WNS, 'addr', 'add', '10.199.0.1/16', 'dev', `vw${tag}`], ['-n', WNS, 'addr', 'add', '10.199.1.1/16', 'dev', `vw${tag}`],
    ['-n', WNS, 'link', 'set', `vw${tag}`, 'up']]) ok('ip', args);
  const www = path.join(work, 'www');
  fs.mkdirSync(www, { recursive: true });
  fs.writeFileSync(path.join(www, 'index.html'), 'served\n');
  for (const addr of ['10.199.0.1', '10.199.1.1'])
    servers.push(spawn('ip', ['netns', 'exec', WNS, 'busybox', 'httpd', '-f', '-p', `${addr}:8080`, '-h', www], { stdio: 'ignore' }));
  await sleep(300);
}

/** Which of the two servers a container under these annotations reaches. */
function reached(annotations) {
  const args = ['run', '--rm', '--runtime', abxOci, '--network', `ns:/run/netns/${CNS}`, '--ulimit', 'nofile=1024:1024',
    '--ulimit', 'nproc=4096:4096', ...PROFILE, ...annotations.flatMap((a) => ['--annotation', a]), 'localhost/bb', 'sh', '-c',
    'for h in 10.199.0.1 10.199.1.1; do printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 2 $h 8080 | grep -q served && echo $h; done; true'];
  const r = podman(args);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split('\n').filter(Boolean);
}

test('the egress policy: a denied address is unreachable, an allowed one reachable; nothing is left in the namespace', async () => {
  await world();
  assert.deepEqual(reached([]), ['10.199.0.1', '10.199.1.1'], 'without a policy the world is reachable');
  assert.deepEqual(reached(['run.abx.network.allow_out=10.199.0.1']), ['10.199.0.1']);
  assert.deepEqual(reached(['run.abx.network.deny_out=10.199.1.0/24']), ['10.199.0.1']);
  assert.deepEqual(reached(['run.abx.network.allow_out=10.199.0.0/16', 'run.abx.network.deny_out=10.199.0.1']), ['10.199.1.1'],
    'deny wins over allow');
  const tables = sh('ip', ['netns', 'exec', CNS, 'nft', 'list', 'tables']).stdout;
  assert.ok(!/abx_egress/.test(tables), `the filter outlived its containers:\n${tables}`);
  // the walls: the policy needs the profile, and a wildcard needs abx's resolver
  const noProfile = podman(['run', '--rm', '--runtime', abxOci, '--network', 'none', '--annotation', 'run.abx.network.allow_out=10.199.0.1',
    'localhost/bb', 'true']);
  assert.notEqual(noProfile.status, 0);
  assert.match(noProfile.stderr, /need run\.abx\.profile=sandbox/);
  const wildcard = podman(['run', '--rm', '--runtime', abxOci, '--network', 'none', ...PROFILE, '--annotation',
    'run.abx.network.allow_out=*.example.com', 'localhost/bb', 'true']);
  assert.notEqual(wildcard.status, 0);
  assert.match(wildcard.stderr, /wildcard/);
});

test('a hostile image\'s symlinks never take the runtime outside the root (/dev and a mount destination)', () => {
  const hostDir = path.join(work, 'host-side');
  fs.mkdirSync(hostDir, { recursive: true });
  const root = busyboxRoot(path.join(work, 'hostile-root'));
  // the image's /dev and /data point at a host directory by absolute links
  fs.rmSync(path.join(root, 'dev'), { recursive: true, force: true });
  fs.symlinkSync(hostDir, path.join(root, 'dev'));
  fs.symlinkSync(hostDir, path.join(root, 'data'));
  const dir = bundle(path.join(work, 'hostile'), root, (c) => {
    c.process.args = ['sh', '-c', 'ls /dev /data > /dev/null; true'];
    c.mounts.push({ destination: '/data', type: 'tmpfs', source: 'tmpfs', options: ['size=1m'] });
  });
  const state = path.join(work, 'state-hostile');
  const fd = fs.openSync('/dev/null', 'w');
  const r = sh(abxOci, ['--root', state, 'run', '--bundle', dir, 'h1'], { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  assert.deepEqual(fs.readdirSync(hostDir), [], `the runtime wrote into the host directory the image pointed at (exit ${r.status})`);
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  assert.ok(!mounts.includes(hostDir), 'nothing was mounted on the host directory');
});

test('the agent under the sandbox profile: its commands are the container\'s root, a uid of the pool, under both filters', () => {
  const token = 's'.repeat(36);
  const r = podman([...BASE, ...PROFILE, '--network', 'none', '-d', '--annotation', 'run.abx.envd=true', '--annotation',
    `run.abx.envd.token=${token}`, 'localhost/bb', 'sleep', '1000']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  try {
    const pid = Number(podman(['inspect', '-f', '{{.State.Pid}}', id]).stdout);
    const body = Buffer.from(JSON.stringify({ process: { cmd: '/bin/sh', args: ['-c',
      'id -u; cat /proc/self/uid_map; grep -E "^(Seccomp_filters|CapEff)" /proc/self/status'] } }));
    const frame = Buffer.alloc(5 + body.length);
    frame.writeUInt32BE(body.length, 1);
    body.copy(frame, 5);
    const file = path.join(work, 'agent.frame');
    fs.writeFileSync(file, frame);
    const got = sh('nsenter', ['-t', String(pid), '-n', 'curl', '-s', '--max-time', '10', '-H', `X-Access-Token: ${token}`,
      '-H', 'Content-Type: application/connect+json', '--data-binary', `@${file}`, 'http://127.0.0.1:49983/process.Process/Start'],
    { encoding: 'latin1' });
    let out = '';
    const buf = Buffer.from(got.stdout, 'latin1');
    for (let at = 0; at + 5 <= buf.length;) {
      const len = buf.readUInt32BE(at + 1);
      const ev = JSON.parse(buf.subarray(at + 5, at + 5 + len).toString('utf8')).event || {};
      if (ev.data?.stdout) out += Buffer.from(ev.data.stdout, 'base64').toString('utf8');
      at += 5 + len;
    }
    const [uid, map, caps, filters] = out.trim().split('\n');
    const containerMap = fs.readFileSync(`/proc/${pid}/uid_map`, 'utf8').trim();
    assert.equal(uid, '0');
    assert.equal(map.trim().split(/\s+/).join(' '), containerMap.split(/\s+/).join(' '), 'the container\'s own mapping');
    assert.ok(Number(map.trim().split(/\s+/)[1]) >= 1000000000, 'root there is a host uid of abx\'s pool');
    assert.match(filters, /Seccomp_filters:\s+[1-9]/);
    assert.match(caps, /CapEff:\s+0+$/, 'the agent\'s commands run without capabilities');
  } finally {
    podman(['rm', '-f', '-t', '0', id]);
  }
});
