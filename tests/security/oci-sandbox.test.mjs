// oci-sandbox.test.mjs: abx's sandbox profile under an engine (issue 25):
// a Podman container run by abx-oci with run.abx.profile=sandbox gets a
// host uid range of abx's pool with an id-mapped root, abx's seccomp list
// beside the engine's profile and abx's /proc masks. The escape suite's
// probes that apply to a container run inside it and are blocked; the
// same container without the profile is not a sandbox (the probe refuses
// to run there: the initial user namespace). Everything runs on a Podman
// store of this test's.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { probe } from '../lib/harness.mjs';
import { abxOci, sh, ok, requireTools, workDir, busyboxRoot, podmanWorld, importImage } from '../lib/oci-world.mjs';

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

test('the uid range goes back to the pool when the container is gone', () => {
  const slots = '/run/abx/uid-slots';
  const held = () => (fs.existsSync(slots) ? fs.readdirSync(slots) : [])
    .filter((f) => sh('flock', ['-n', '-E', '75', path.join(slots, f), 'true']).status === 75);
  const before = held();
  const r = podman([...BASE, ...PROFILE, '--network', 'none', '-d', 'localhost/bb', 'sleep', '1000']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  assert.equal(held().length, before.length + 1, 'a running container holds one range');
  assert.equal(podman(['rm', '-f', '-t', '0', id]).status, 0);
  let now = held();
  for (let i = 0; i < 50 && now.length !== before.length; i++) { sh('sleep', ['0.1']); now = held(); }
  assert.deepEqual(now, before);
});
