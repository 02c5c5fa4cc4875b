// bench_start.mjs: issue 29's table, every row beside its floor measured in
// the same run, interleaved (pair by pair), median and spread over PAIRS
// pairs (default 30). Usage (root): node bench/bench_start.mjs [path/to/abx]
//   - `abx run -- /bin/true` against bubblewrap --unshare-all
//   - create-to-ready and idle PSS through libabx (build/bench-sandbox)
//     against bubblewrap's start and its idle tree
//   - `abx exec ID true` (CLI) against nsenter into the same sandbox +
//     `bash -l -c true` (what the exec runs)
//   - exec through libabx against a host fork+exec (build/bench-sandbox)
//   - MCP run_command "true" against the server's own ping, over STDIO and
//     over Streamable HTTP; calls per second with 8 in flight
//   - the warm-pool claim (POST /v2/sandboxes on abx serve) against GET /health
// The scale rows (1000 idle alive, kills) are bench/bench_scale.mjs's.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const benchSandbox = path.join(path.dirname(abx), 'bench-sandbox');
const pairs = Number(process.env.PAIRS || 30);
// ONLY=run,exec,stdio,http,claim,lib: some of the sections (default all)
const only = (process.env.ONLY || 'run,exec,stdio,http,claim,lib').split(',');
const work = fs.mkdtempSync(path.join('/var/tmp', 'abx-bench-start-'));
const home = path.join(work, 'home');
const env = { ...process.env, ABX_HOME: home };
const sh = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 16 << 20 });
const now = () => Number(process.hrtime.bigint()) / 1e6;
const timed = (cmd, args) => {
  const t0 = now();
  const r = sh(cmd, args);
  const ms = now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || '').slice(-800)}`);
  return [ms, r.stdout];
};
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const spread = (v) => { const s = [...v].sort((a, b) => a - b); return `${s[Math.floor(s.length / 10)].toFixed(2)}–${s[Math.floor(s.length * 9 / 10)].toFixed(2)}`; };
const rows = [];
const row = (measure, n, a, floorName, b, goal) => {
  const ratio = median(a) / median(b);
  rows.push([measure, n, `${median(a).toFixed(2)} ms (${spread(a)})`, `${floorName} ${median(b).toFixed(2)} ms (${spread(b)})`, `${ratio.toFixed(2)}×`, goal]);
};
const bwrap = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib',
  '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--unshare-all',
  '--die-with-parent', '/bin/true'];
const made = [];

// 1. abx run against bubblewrap
if (only.includes('run')) {
  const a = [], b = [];
  for (let i = 0; i < 5; i++) { timed('bwrap', bwrap); timed(abx, ['run', '--', '/bin/true']); }
  for (let i = 0; i < pairs; i++) {
    b.push(timed('bwrap', bwrap)[0]);
    a.push(timed(abx, ['run', '--', '/bin/true'])[0]);
  }
  row('`abx run -- /bin/true`', pairs, a, 'bubblewrap --unshare-all', b, '≤ 1.2×');
}

// 2. abx exec (CLI) against nsenter + bash -l -c true in the same sandbox
if (only.includes('exec')) {
  const id = timed(abx, ['create', '--timeout', '600'])[1].trim();
  made.push(id);
  const meta = JSON.parse(fs.readFileSync(path.join(home, 'sandboxes', id.replace(/^local:/, ''), 'meta.json'), 'utf8'));
  const ns = ['-t', String(meta.init_pid), '-a', '-S', '1000', '-G', '1000', '--', 'bash', '-l', '-c', 'true'];
  const a = [], b = [];
  for (let i = 0; i < 5; i++) { timed('nsenter', ns); timed(abx, ['exec', id, 'true']); }
  for (let i = 0; i < pairs; i++) {
    b.push(timed('nsenter', ns)[0]);
    a.push(timed(abx, ['exec', id, 'true'])[0]);
  }
  row('`abx exec ID true` (CLI)', pairs, a, 'nsenter + `bash -l -c true`', b, '≤ 1.3×');
  sh(abx, ['kill', id]);
  made.pop();
}

// 3. MCP over STDIO: run_command "true" against ping, pair by pair; 8 in flight
function stdioServer() {
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
  const pending = new Map();
  let buf = '', next = 1;
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const msg = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      const p = pending.get(msg.id);
      if (p) { pending.delete(msg.id); p(msg); }
    }
  });
  const request = (method, params) => new Promise((resolve) => {
    const id = next++;
    pending.set(id, resolve);
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
  const close = () => new Promise((r) => { child.on('close', r); child.stdin.end(); });
  return { request, close };
}
async function mcpRows(label, request, n) {
  const call = async () => {
    const r = await request('tools/call', { name: 'run_command', arguments: { command: 'true' } });
    if (r.error || r.result?.isError) throw new Error(JSON.stringify(r));
  };
  for (let i = 0; i < 20; i++) { await call(); await request('ping', {}); }
  const a = [], b = [];
  for (let i = 0; i < n; i++) {
    let t0 = now();
    await request('ping', {});
    b.push(now() - t0);
    t0 = now();
    await call();
    a.push(now() - t0);
  }
  row(`MCP run_command "true", ${label}`, n, a, 'the server\'s ping', b, label === 'STDIO' ? '≤ 2×' : '≤ 1.5×');
  const total = 800, t0 = now();
  await Promise.all(Array.from({ length: 8 }, async () => { for (let i = 0; i < total / 8; i++) await call(); }));
  const rate = total / ((now() - t0) / 1000);
  rows.push([`MCP calls per second, ${label}, 8 in flight`, total, `${rate.toFixed(0)} calls/s`, '', '', '≥ 1000/s']);
}
if (only.includes('stdio')) {
  const s = stdioServer();
  await s.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
  await mcpRows('STDIO', s.request, Math.max(pairs, 100));
  await s.close();
}

// 4. MCP over Streamable HTTP (one session)
function listen(args, pattern, extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; const m = pattern.exec(err); if (m && !child.port) { child.port = Number(m[1]); resolve(child); } });
    child.on('exit', (c) => { if (!child.port) reject(new Error(`${args[0]} exited ${c}: ${err}`)); });
  });
}
const stop = (child) => new Promise((r) => { child.on('exit', r); child.kill('SIGTERM'); });
if (only.includes('http')) {
  const srv = await listen(['mcp', 'serve', '--no-auth', '--listen', '127.0.0.1:0', '--template', 'base'], /:(\d+)\/mcp/);
  const url = `http://127.0.0.1:${srv.port}/mcp`;
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'b', version: '0' } } }) });
  await init.text();
  const sid = init.headers.get('mcp-session-id');
  let id = 1;
  const request = async (method, params) => {
    const r = await fetch(url, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }) });
    return r.json();
  };
  await mcpRows('HTTP', request, Math.max(pairs, 100));
  await fetch(url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
  await stop(srv);
}

// 5. the warm-pool claim: POST /v2/sandboxes against GET /health
if (only.includes('claim')) {
  const KEY = 'e2b_' + 'b'.repeat(40);
  const srv = await listen(['serve', '--listen', '127.0.0.1:0'], /listening on http:\/\/[^:]+:(\d+)/, { ABX_SERVE_API_KEYS: KEY });
  const base = `http://127.0.0.1:${srv.port}`;
  const h = { 'X-API-Key': KEY, 'Content-Type': 'application/json' };
  await new Promise((r) => setTimeout(r, 2000)); // the pool fills
  const a = [], b = [];
  for (let i = 0; i < pairs + 3; i++) {
    let t0 = now();
    const hr = await fetch(`${base}/health`);
    await hr.arrayBuffer();
    const th = now() - t0;
    t0 = now();
    const r = await fetch(`${base}/v2/sandboxes`, { method: 'POST', headers: h, body: JSON.stringify({ templateID: 'base', timeout: 60 }) });
    const j = await r.json();
    const tc = now() - t0;
    if (!j.sandboxID) throw new Error(JSON.stringify(j));
    await (await fetch(`${base}/sandboxes/${j.sandboxID}`, { method: 'DELETE', headers: h })).arrayBuffer();
    if (i >= 3) { a.push(tc); b.push(th); }
    await new Promise((r2) => setTimeout(r2, 300)); // the pool refills between claims
  }
  const extra = median(a) - median(b);
  rows.push(['warm-pool claim (POST /v2/sandboxes)', pairs, `${median(a).toFixed(2)} ms (${spread(a)})`, `GET /health ${median(b).toFixed(2)} ms (${spread(b)})`, `+${extra.toFixed(2)} ms`, '≤ +0.5 ms']);
  await stop(srv);
}

// 6. through libabx: create-to-ready, exec, idle PSS (their own floors)
const lib = [];
for (const [what, n] of only.includes('lib') ? [['create', String(pairs)], ['exec', '200'], ['shell', '200'], ['idle', '100']] : []) {
  const r = sh(benchSandbox, [what, n]);
  lib.push((r.stdout || r.stderr).trim());
}

for (const id of made) sh(abx, ['kill', id]);
fs.rmSync(work, { recursive: true, force: true });
console.log(`machine: ${os.cpus().length} cpu, kernel ${os.release()}, ${new Date().toISOString().slice(0, 10)}; ${pairs} pairs, interleaved\n`);
console.log('| measure | n | abx | floor (same run) | ratio | goal |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
console.log('\nthrough libabx (build/bench-sandbox):\n');
for (const l of lib) console.log(l);
