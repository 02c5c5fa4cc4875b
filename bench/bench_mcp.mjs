// bench_mcp.mjs: issue 4's MCP benchmarks over STDIO, raw JSON-RPC (no SDK
// overhead in the timing). Usage: node bench/bench_mcp.mjs [path/to/abx]
// Prints a Markdown table; the ping round trip is the floor measured in the
// same run.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-mcp-'));

function server(args = []) {
  const child = spawn(abx, ['mcp', 'start', ...args], { env: { ...process.env, ABX_HOME: home }, stdio: ['pipe', 'pipe', 'inherit'] });
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
  const call = (name, args) => request('tools/call', { name, arguments: args });
  const init = () => request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
  const close = () => new Promise((r) => { child.on('close', r); child.stdin.end(); });
  return { child, request, call, init, close };
}

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const ms = () => Number(process.hrtime.bigint()) / 1e6;
async function timeMany(n, fn) {
  const t = [];
  for (let i = 0; i < n; i++) { const t0 = ms(); await fn(); t.push(ms() - t0); }
  return t;
}
function rssKiB(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(s)[1]);
}

const rows = [];
// session start to first run_command result (lazy create included)
{
  const t = [];
  for (let i = 0; i < 10; i++) {
    const t0 = ms();
    const s = server(['--template', 'base']);
    await s.init();
    const r = await s.call('run_command', { command: 'true' });
    t.push(ms() - t0);
    if (r.result?.isError) throw new Error(JSON.stringify(r));
    await s.close();
  }
  rows.push(['session start → first run_command (lazy create)', 10, `median ${median(t).toFixed(1)} ms`, 'target ≤ 50 ms']);
}
const s = server();
await s.init();
await s.call('run_command', { command: 'true' });
const ping = await timeMany(200, () => s.request('ping'));
rows.push(['ping round trip (floor)', 200, `median ${median(ping).toFixed(2)} ms`, '']);
const rc = await timeMany(200, () => s.call('run_command', { command: 'true' }));
rows.push(['tools/call run_command "true", warm default sandbox', 200, `median ${median(rc).toFixed(2)} ms`, 'target ≤ 3 ms']);
// sustained: 8 in flight
{
  const total = 600;
  let sent = 0, done = 0;
  const t0 = ms();
  await new Promise((resolve) => {
    const more = () => {
      if (sent >= total) return;
      sent++;
      s.call('run_command', { command: 'true' }).then(() => { done++; if (done === total) resolve(); else more(); });
    };
    for (let i = 0; i < 8; i++) more();
  });
  const secs = (ms() - t0) / 1000;
  rows.push(['sustained run_command "true", 8 in flight', total, `${(total / secs).toFixed(0)} calls/s`, 'target ≥ 300 calls/s']);
}
await s.call('run_code', { code: '1+1' });
const code = await timeMany(200, () => s.call('run_code', { code: '1+1' }));
rows.push(['run_code "1+1", warm python kernel', 200, `median ${median(code).toFixed(2)} ms`, 'target ≤ 5 ms']);
for (let i = 0; i < 9; i++) await s.call('create_sandbox', { template: 'base' });
await s.call('run_command', { command: 'true' });
rows.push(['server RSS with 10 sandboxes', 1, `${rssKiB(s.child.pid)} KiB`, 'target ≤ 16384 KiB']);
await s.close();
fs.rmSync(home, { recursive: true, force: true });

console.log(`machine: ${os.cpus().length} cpu, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.release()}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | target |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
