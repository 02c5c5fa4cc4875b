// oci-world.mjs: what the abx-oci tests share: a busybox root, OCI bundles
// made by `runc spec`, and the engines (Podman, containerd, Docker) each
// started with a state directory, storage and socket of the test's own,
// and stopped after. Debian's packages: runc, podman (conmon), containerd,
// docker.io, busybox-static.
import { spawn, spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { abx, onExit, sleep } from './harness.mjs';

export const abxOci = path.join(path.dirname(abx), 'abx-oci');
export const RUNC = '/usr/sbin/runc';

/** Runs a command; returns {status, stdout, stderr}. */
export function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 120000, maxBuffer: 64 << 20, ...opts });
  if (r.error) throw r.error;
  return r;
}

/** The same, asserting exit status 0; returns stdout. */
export function ok(cmd, args, opts = {}) {
  const r = sh(cmd, args, opts);
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** The tools the engines' tests need: a clear failure (never a skip) when one is missing. */
export function requireTools() {
  assert.equal(process.getuid(), 0, 'the abx-oci tests run as root (the engines need it)');
  for (const p of [RUNC, '/usr/bin/podman', '/usr/bin/ctr', '/usr/bin/containerd', '/usr/sbin/dockerd', '/bin/busybox', abxOci]) {
    assert.ok(fs.existsSync(p), `${p} is missing: sh abx.sh test installs runc, podman, containerd, docker.io and busybox-static`);
  }
}

/** A temporary directory of the test's, removed at exit (its mounts first). */
export function workDir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  fs.chmodSync(dir, 0o755);
  onExit(() => {
    const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4])
      .filter((m) => m && m.startsWith(dir)).sort().reverse();
    for (const m of mounts) spawnSync('umount', ['-l', m]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** A busybox root filesystem at dir (every applet a link). */
export function busyboxRoot(dir) {
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.copyFileSync('/bin/busybox', path.join(dir, 'bin/busybox'));
  fs.chmodSync(path.join(dir, 'bin/busybox'), 0o755);
  for (const applet of ok('/bin/busybox', ['--list']).split('\n').filter(Boolean)) {
    if (applet !== 'busybox') fs.symlinkSync('busybox', path.join(dir, 'bin', applet));
  }
  for (const d of ['etc', 'tmp', 'proc', 'sys', 'dev', 'root']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  fs.chmodSync(path.join(dir, 'tmp'), 0o1777);
  fs.writeFileSync(path.join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  fs.writeFileSync(path.join(dir, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  return dir;
}

/** The host's python3 (its binary, the libraries it loads, its standard
 * library without tests) added to a busybox root: an image "with Python". */
export function addPython(dir) {
  const real = fs.realpathSync('/usr/bin/python3');
  fs.mkdirSync(path.join(dir, 'usr/bin'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'usr/lib'), { recursive: true });
  fs.copyFileSync(real, path.join(dir, 'usr/bin', path.basename(real)));
  fs.chmodSync(path.join(dir, 'usr/bin', path.basename(real)), 0o755);
  fs.symlinkSync(path.basename(real), path.join(dir, 'usr/bin/python3'));
  const lib = `/usr/lib/${path.basename(real)}`;
  ok('sh', ['-c', `cd /usr/lib && tar -c --exclude=test --exclude=dist-packages --exclude=site-packages --exclude=__pycache__ ${path.basename(lib)} | tar -C "${dir}/usr/lib" -x`]);
  const sos = [real, ...fs.readdirSync(`${lib}/lib-dynload`).map((f) => `${lib}/lib-dynload/${f}`)];
  for (const so of sos) {
    for (const dep of (sh('ldd', [so]).stdout.match(/\s(\/\S+)\s\(/g) || []).map((m) => m.trim().split(' ')[0])) {
      if (fs.existsSync(path.join(dir, dep))) continue;
      fs.mkdirSync(path.join(dir, path.dirname(dep)), { recursive: true });
      fs.copyFileSync(dep, path.join(dir, dep));
    }
  }
  for (const loader of ['/lib64/ld-linux-x86-64.so.2']) {
    if (!fs.existsSync(path.join(dir, loader)) && fs.existsSync(loader)) {
      fs.mkdirSync(path.join(dir, path.dirname(loader)), { recursive: true });
      fs.copyFileSync(loader, path.join(dir, loader));
    }
  }
  return dir;
}

/** A bundle at dir from `runc spec` over root, with config edited by edit(config). */
export function bundle(dir, root, edit = () => {}) {
  fs.mkdirSync(dir, { recursive: true });
  ok(RUNC, ['spec', '--bundle', dir]);
  const file = path.join(dir, 'config.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  config.root.path = root;
  config.process.terminal = false;
  edit(config);
  fs.writeFileSync(file, JSON.stringify(config, null, 1));
  return dir;
}

/** Podman on a store of its own (vfs, cgroupfs, file events); podman(args, runtime). */
export function podmanWorld(dir) {
  const base = ['--root', `${dir}/root`, '--runroot', `${dir}/run`, '--tmpdir', `${dir}/tmp`, '--storage-driver', 'vfs',
    '--cgroup-manager', 'cgroupfs', '--events-backend', 'file'];
  const podman = (args, opts = {}) => sh('podman', [...base, ...args], opts);
  onExit(() => {
    spawnSync('podman', [...base, 'rm', '-af', '-t', '0'], { timeout: 60000 });
    spawnSync('podman', [...base, 'system', 'reset', '-f'], { timeout: 60000 });
  });
  return podman;
}

/** The image "localhost/bb" in podman's store, from a busybox root. */
export function importImage(podman, root, name = 'localhost/bb') {
  const tar = sh('tar', ['-C', root, '-c', '.'], { encoding: 'buffer', maxBuffer: 256 << 20 }).stdout;
  const r = podman(['import', '-', name], { input: tar });
  assert.equal(r.status, 0, r.stderr);
}

/** Starts a process and waits until check() holds; returns {child, stop()}. */
async function startDaemon(cmd, args, check, what, logFile) {
  const log = fs.openSync(logFile, 'a');
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  const drop = onExit(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } });
  for (let i = 0; i < 300 && !check(); i++) {
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  assert.ok(check(), `${what} did not start: ${fs.readFileSync(logFile, 'utf8').slice(-2000)}`);
  const stop = async () => {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
    for (let i = 0; i < 100 && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    drop();
  };
  return { child, stop };
}

/** containerd with its own root, state, socket and config; ctr(args). */
export async function containerdWorld(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const sock = `${dir}/containerd.sock`;
  fs.writeFileSync(`${dir}/config.toml`, [
    'version = 2', `root = "${dir}/root"`, `state = "${dir}/state"`, '[grpc]', `  address = "${sock}"`,
    '[ttrpc]', `  address = "${sock}.ttrpc"`, '[debug]', `  address = "${sock}.debug"`,
    '[plugins."io.containerd.grpc.v1.cri"]', '  disable_cgroup = true', ''].join('\n'));
  const daemon = await startDaemon('containerd', ['--config', `${dir}/config.toml`], () => fs.existsSync(sock),
    'containerd', `${dir}/containerd.log`);
  const ctr = (args, opts = {}) => sh('ctr', ['--address', sock, ...args], opts);
  return { ctr, stop: daemon.stop, sock };
}

/** dockerd with its own data root, exec root and socket, abx-oci added as runtime "abx"; docker(args). */
export async function dockerWorld(dir, runtime = abxOci) {
  fs.mkdirSync(dir, { recursive: true });
  const sock = `${dir}/docker.sock`;
  fs.writeFileSync(`${dir}/daemon.json`, '{}');
  const daemon = await startDaemon('dockerd', ['--data-root', `${dir}/data`, '--exec-root', `${dir}/exec`,
    '--pidfile', `${dir}/docker.pid`, '-H', `unix://${sock}`, '--bridge', 'none', '--iptables=false',
    '--ip6tables=false', '--storage-driver', 'vfs', '--add-runtime', `abx=${runtime}`, '--config-file', `${dir}/daemon.json`],
  () => fs.existsSync(sock) && sh('/usr/bin/docker', ['-H', `unix://${sock}`, 'version']).status === 0,
  'dockerd', `${dir}/dockerd.log`);
  const docker = (args, opts = {}) => sh('/usr/bin/docker', ['-H', `unix://${sock}`, ...args], opts);
  return { docker, stop: daemon.stop };
}
