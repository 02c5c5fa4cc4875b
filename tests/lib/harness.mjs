// harness.mjs: what the Node tests share: where the binaries are, how to run
// abx and the escape probe, and how to look for what a sandbox left behind.
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const abx = process.env.ABX_BIN || path.join(root, 'build/abx');
export const probe = process.env.ABX_PROBE || path.join(root, 'build/tests/abx-probe');

/** Runs abx synchronously. */
export function runAbx(args, opts = {}) {
  return spawnSync(abx, args, { encoding: 'utf8', timeout: 120000, maxBuffer: 64 << 20, ...opts });
}

/** Runs abx asynchronously; resolves with {status, signal, stdout, stderr}. */
export function runAbxAsync(args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, args, { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
    let stdout = '', stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin?.end();
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr, pid: child.pid }));
  });
}

// Inside, the probe arrives on stdin and is exec'd from the sandbox's /tmp:
// nothing of the host's build directory is visible in a sandbox.
const loader = 'cat > /tmp/abx-probe && chmod 755 /tmp/abx-probe && exec /tmp/abx-probe "$@"';

/** Runs one attack in a fresh sandbox; returns {status, stdout, stderr, id}. */
export function runProbe(attack, args = [], { abxArgs = [], ...opts } = {}) {
  const r = spawnSync(abx, ['run', ...abxArgs, '--', 'sh', '-c', loader, 'sh', attack, ...args], {
    encoding: 'utf8', input: fs.readFileSync(probe), timeout: 120000, maxBuffer: 16 << 20, ...opts,
  });
  const m = /^sandbox (i[a-z0-9]{20})$/m.exec(r.stdout || '');
  return { ...r, id: m ? m[1] : null };
}

/** Async variant (for tests that keep the event loop busy meanwhile). */
export function runProbeAsync(attack, args = [], { abxArgs = [], ...opts } = {}) {
  return runAbxAsync(['run', ...abxArgs, '--', 'sh', '-c', loader, 'sh', attack, ...args], {
    input: fs.readFileSync(probe), ...opts,
  }).then((r) => {
    const m = /^sandbox (i[a-z0-9]{20})$/m.exec(r.stdout || '');
    return { ...r, id: m ? m[1] : null };
  });
}

/** The host name of a sandbox's cgroups (its config.json "host_name": not
 * the id, which other host users must not learn); the id for a one-shot
 * `abx run` sandbox, which has none. Remembered, so that it can be asked
 * after the sandbox is gone. */
const hostNames = new Map();
export function cgroupName(home, id) {
  const bare = id.replace(/^[a-z0-9-]+:/, '');
  if (!hostNames.has(bare)) {
    try {
      hostNames.set(bare, JSON.parse(fs.readFileSync(path.join(home, 'sandboxes', bare, 'config.json'), 'utf8')).host_name);
    } catch { return bare; }
  }
  return hostNames.get(bare) || bare;
}

/** The cgroup directories named id (a sandbox's cgroupName) that still exist on the host. */
export function cgroupLeftovers(id) {
  const found = [];
  for (const base of ['/sys/fs/cgroup', '/sys/fs/cgroup/abx']) {
    let entries = [];
    try { entries = fs.readdirSync(base); } catch { continue; }
    for (const ctl of entries) {
      for (const p of [path.join(base, ctl, 'abx', id), path.join(base, id)]) {
        if (fs.existsSync(p)) found.push(p);
      }
    }
  }
  return [...new Set(found)];
}

/** Host processes whose command line contains needle. */
export function hostProcesses(needle) {
  const out = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(needle)) out.push({ pid: Number(pid), cmd });
    } catch { /* gone */ }
  }
  return out;
}

/* Mounts the container engines of the abx-oci tests make in the host's
 * namespace while they run (a container's shm and rootfs, a test's
 * network namespace): another test file's, never abx's own, and made
 * concurrently with this one's count. */
const engineMount = /\/abx-oci[-\w]*\/|^\/run\/netns\/|^\/run\/containerd\/|^\/run\/docker\/|\/overlay-containers\//;

export function mountCount() {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .filter((l) => !engineMount.test(l.split(' ')[4] || '')).length;
}

export function randomName(prefix) {
  return `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until fn() is truthy or ms elapse; returns the last value. */
export async function waitFor(fn, ms = 5000, step = 50) {
  const end = Date.now() + ms;
  let v = fn();
  while (!v && Date.now() < end) {
    await sleep(step);
    v = fn();
  }
  return v;
}

/* What a test file must undo even when its after() hooks do not run (a
 * --test-name-pattern that matches none of its tests skips them): run,
 * synchronously, when the process exits. */
const atExit = new Set();
process.on('exit', () => {
  for (const f of atExit) {
    try { f(); } catch { /* best effort */ }
  }
});
/** Registers f to run at exit (unless removed first); returns the remover. */
export function onExit(f) {
  atExit.add(f);
  return () => atExit.delete(f);
}

/** A private ABX_HOME for a test file; returns {env, home, cleanup}. */
export function privateHome(prefix = 'abx-home') {
  const home = fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', `${prefix}-`));
  const env = { ...process.env, ABX_HOME: home };
  const cleanup = () => {
    dropAtExit();
    const dir = path.join(home, 'sandboxes');
    let ids = [];
    try { ids = fs.readdirSync(dir); } catch { /* none */ }
    for (const id of ids) spawnSync(abx, ['kill', id], { env, timeout: 20000 });
    fs.rmSync(home, { recursive: true, force: true });
  };
  const dropAtExit = onExit(cleanup);
  return {
    home,
    env,
    /** Kills every sandbox left in this home, then removes it. */
    cleanup,
  };
}

/** The sandbox ids whose state directories exist in home. */
export function stateIds(home) {
  try { return fs.readdirSync(path.join(home, 'sandboxes')); } catch { return []; }
}

/** The pid of sandbox id's shim, from its metadata; null if none (never 0). */
export function shimPid(home, id) {
  try {
    const pid = JSON.parse(fs.readFileSync(path.join(home, 'sandboxes', id, 'meta.json'), 'utf8')).shim_pid;
    return Number.isInteger(pid) && pid > 1 ? pid : null;
  } catch { return null; } // never 0: process.kill(0) would signal the test's own process group
}

/** Starts `abx mcp serve` (or another server binary) on a free port;
 *  resolves {child, url, port, stderr()} once it listens. */
/**
 * A copy of the abx binary (and abx-shim beside it) that any host user can
 * run: the checkout may lie where another user cannot reach (root's home
 * is 0700 on Debian), so a test that changes user runs this copy. The
 * caller calls cleanup().
 */
export function abxForOtherUsers() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bin-'));
  fs.chmodSync(dir, 0o755);
  for (const name of ['abx', 'abx-shim']) {
    const src = path.join(path.dirname(abx), name);
    if (!fs.existsSync(src)) continue;
    fs.copyFileSync(src, path.join(dir, name));
    fs.chmodSync(path.join(dir, name), 0o755);
  }
  return { bin: path.join(dir, 'abx'), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

export function startHttpServer(args = [], { env = process.env, bin = abx, serveArgs = ['mcp', 'serve'] } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...serveArgs, '--listen', '127.0.0.1:0', ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const drop = onExit(() => child.kill('SIGKILL'));
    child.on('exit', drop);
    let err = '';
    const t = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 10000);
    child.stderr.on('data', (d) => {
      err += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err);
      if (m && !child.port) {
        child.port = Number(m[1]);
        clearTimeout(t);
        resolve({ child, port: child.port, url: `http://127.0.0.1:${child.port}/mcp`, stderr: () => err });
      }
    });
    child.on('exit', (code) => { clearTimeout(t); if (!child.port) reject(new Error(`server exited ${code}: ${err}`)); });
  });
}

export function stopServer(srv, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (srv.child.exitCode !== null) return resolve(srv.child.exitCode);
    srv.child.on('exit', (code) => resolve(code));
    srv.child.kill(signal);
  });
}
