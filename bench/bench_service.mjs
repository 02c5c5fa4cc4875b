// bench_service.mjs: issue 24's benchmarks, the abx service against root's
// direct path, interleaved in one run. Usage (as root):
//   node bench/bench_service.mjs [path/to/abx]
// Prints a Markdown table. It makes four host users in a group of its own,
// a service on a socket and a state directory of its own, and removes them
// all at the end. Goals: exec round trip, create-to-ready and the MCP
// run_command round trip through the service <= 1.3x root's; 100
// concurrent creates by 4 users (beside 100 by root).
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const N = Number(process.env.RUNS || 40);
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const now = () => process.hrtime.bigint();

const tag = crypto.randomBytes(3).toString('hex');
const GROUP = `abxb${tag}`;
const users = [0, 1, 2, 3].map((i) => `abxb${tag}${i}`);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-svc-'));
fs.chmodSync(work, 0o755);
const home = path.join(work, 'root-home');
fs.mkdirSync(home, { mode: 0o700 });
const SOCK = path.join(work, 'abx.sock');
const SYSTEM = path.join(work, 'system.toml');
fs.writeFileSync(SYSTEM, `[service]\nallow_groups = "${GROUP}"\n[limits]\nsandboxes_per_tenant = 200\ntenant_pool_share = 100\n`);
const bin = path.join(work, 'abx');
fs.copyFileSync(abx, bin);
fs.chmodSync(bin, 0o755);
const rootEnv = { ...process.env, ABX_HOME: home, ABX_SYSTEM_CONFIG: SYSTEM };

spawnSync('groupadd', [GROUP]);
const ids = {};
for (const u of users) {
  spawnSync('useradd', ['-M', '-N', '-G', GROUP, '-s', '/bin/sh', u]);
  fs.mkdirSync(path.join(work, `home-${u}`), { mode: 0o700 });
  ids[u] = { uid: Number(spawnSync('id', ['-u', u], { encoding: 'utf8' }).stdout), gid: Number(spawnSync('id', ['-g', u], { encoding: 'utf8' }).stdout) };
  fs.chownSync(path.join(work, `home-${u}`), ids[u].uid, ids[u].gid);
}
const userEnv = (u) => ({ PATH: process.env.PATH, HOME: path.join(work, `home-${u}`), ABX_SOCKET: SOCK });
// the user's abx, started with the user's ids directly (no runuser in the timing)
const asUser = (u, args, opts = {}) => spawnSync(bin, args, { env: userEnv(u), uid: ids[u].uid, gid: ids[u].gid, encoding: 'utf8', ...opts });
const asRoot = (args, opts = {}) => spawnSync(abx, args, { env: rootEnv, encoding: 'utf8', ...opts });

const service = await new Promise((resolve, reject) => {
  const child = spawn(abx, ['serve', '--socket', SOCK, '--warm', '0'], { env: rootEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; if (/listening on/.test(err)) resolve(child); });
  child.on('exit', (c) => reject(new Error(`the service exited ${c}: ${err}`)));
});

function cleanup() {
  service.kill('SIGTERM');
  const list = asRoot(['list', '--all', '--json']);
  for (const s of JSON.parse(list.stdout || '[]')) asRoot(['kill', s.sandbox_id]);
  for (const u of users) spawnSync('userdel', [u]);
  spawnSync('groupdel', [GROUP]);
  fs.rmSync(work, { recursive: true, force: true });
}

const rows = [];
try {
  const [U] = users;
  // 1. abx exec ID true: root direct vs the user through the service, interleaved
  const rid = asRoot(['create', '--timeout', '600']).stdout.trim();
  const uid = asUser(U, ['create', '--timeout', '600']).stdout.trim();
  const direct = [], through = [];
  for (let i = 0; i < N; i++) {
    let t = now(); asRoot(['exec', rid, 'true']); direct.push(ms(t));
    t = now(); asUser(U, ['exec', uid, 'true']); through.push(ms(t));
  }
  rows.push(['`abx exec ID true` round trip', N, median(direct), median(through), 1.3]);

  // 2. create-to-ready (abx create returns a sandbox that answers); the kill is not timed
  const cd = [], ct = [];
  for (let i = 0; i < Math.min(N, 20); i++) {
    let t = now(); const a = asRoot(['create', '--timeout', '60']).stdout.trim(); cd.push(ms(t));
    t = now(); const b = asUser(U, ['create', '--timeout', '60']).stdout.trim(); ct.push(ms(t));
    asRoot(['kill', a]); asUser(U, ['kill', b]);
  }
  rows.push(['create-to-ready (`abx create`)', cd.length, median(cd), median(ct), 1.3]);

  // 3. MCP run_command round trip over STDIO: root's server vs the user's
  async function mcpRoundTrips(spawnArgs) {
    const child = spawn(...spawnArgs);
    let buf = '';
    const waiters = new Map();
    child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
        const msg = JSON.parse(line);
        if (waiters.has(msg.id)) { waiters.get(msg.id)(msg); waiters.delete(msg.id); }
      }
    });
    let next = 1;
    const rpc = (method, params) => new Promise((resolve) => { const id = next++; waiters.set(id, resolve); child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`); });
    await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    await rpc('tools/call', { name: 'run_command', arguments: { command: 'true' } }); // the default sandbox
    return {
      once: async () => { const t = now(); await rpc('tools/call', { name: 'run_command', arguments: { command: 'true' } }); return ms(t); },
      close: () => new Promise((r) => { child.on('exit', r); child.stdin.end(); }),
    };
  }
  const mr = await mcpRoundTrips([abx, ['mcp', 'start', '--template', 'base'], { env: rootEnv, stdio: ['pipe', 'pipe', 'ignore'] }]);
  const mu = await mcpRoundTrips([bin, ['mcp', 'start', '--template', 'base'], { env: userEnv(U), uid: ids[U].uid, gid: ids[U].gid, stdio: ['pipe', 'pipe', 'ignore'] }]);
  const r1 = [], r2 = [];
  for (let i = 0; i < N; i++) { r1.push(await mr.once()); r2.push(await mu.once()); }
  await mr.close(); await mu.close();
  rows.push(['MCP `run_command` round trip (STDIO)', N, median(r1), median(r2), 1.3]);

  // 4. 100 concurrent creates: root alone, then 4 users (25 each) through the service
  const burst = (procs) => new Promise((resolve) => {
    const t = now();
    let left = procs.length;
    const made = [];
    for (const [file, args, opts, who] of procs) {
      const c = spawn(file, args, { ...opts, stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      c.stdout.on('data', (d) => { out += d; });
      c.on('exit', (code) => { if (code === 0) made.push([who, out.trim()]); if (--left === 0) resolve({ wall: ms(t), made }); });
    }
  });
  const rootBurst = await burst(Array.from({ length: 100 }, () => [abx, ['create', '--timeout', '120'], { env: rootEnv }, null]));
  for (const [, id] of rootBurst.made) asRoot(['kill', id]);
  const userBurst = await burst(Array.from({ length: 100 }, (_, i) => {
    const u = users[i % 4];
    return [bin, ['create', '--timeout', '120'], { env: userEnv(u), uid: ids[u].uid, gid: ids[u].gid }, u];
  }));
  for (const [u, id] of userBurst.made) asUser(u, ['kill', id]);
  rows.push([`100 concurrent creates (root: ${rootBurst.made.length} made; 4 users: ${userBurst.made.length} made)`, 100, rootBurst.wall, userBurst.wall, null]);
  asRoot(['kill', rid]); asUser(U, ['kill', uid]);
} finally {
  cleanup();
}

console.log(`## Issue 24: the abx service against root's direct path (${new Date().toISOString().slice(0, 10)}, \`node bench/bench_service.mjs build/abx\`)\n`);
console.log(`machine: ${os.cpus().length} cpu, kernel ${os.release()}; interleaved, medians in ms\n`);
console.log('| measure | n | root direct | a user through the service | ratio | goal |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [what, n, a, b, goal] of rows) {
  const ratio = b / a;
  console.log(`| ${what} | ${n} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${ratio.toFixed(2)}x | ${goal ? `<= ${goal}x ${ratio <= goal ? 'met' : 'NOT met'}` : 'wall time'} |`);
}
