// bench_mcp_http.mjs: issue 5's benchmarks over Streamable HTTP, raw fetch.
// Usage: node bench/bench_mcp_http.mjs [path/to/abx]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-http-'));
const child = spawn(abx, ['mcp', 'serve', '--no-auth', '--listen', '127.0.0.1:0', '--template', 'base'], { env: { ...process.env, ABX_HOME: home }, stdio: ['ignore', 'ignore', 'pipe'] });
const port = await new Promise((resolve) => {
  let err = '';
  child.stderr.on('data', (d) => { err += d; const m = /:(\d+)\/mcp/.exec(err); if (m) resolve(Number(m[1])); });
});
const url = `http://127.0.0.1:${port}/mcp`;
const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
async function session() {
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'b', version: '0' } } }) });
  await r.text();
  const sid = r.headers.get('mcp-session-id');
  let id = 1;
  const call = async (name, args) => {
    const res = await fetch(url, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args } }) });
    const j = await res.json();
    if (j.error || j.result.isError) throw new Error(JSON.stringify(j));
    return j;
  };
  const end = () => fetch(url, { method: 'DELETE', headers: { 'Mcp-Session-Id': sid } });
  return { call, end };
}
const ms = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const rows = [];
const s = await session();
await s.call('run_command', { command: 'true' });
const t = [];
for (let i = 0; i < 200; i++) { const t0 = ms(); await s.call('run_command', { command: 'true' }); t.push(ms() - t0); }
rows.push(['run_command "true" over HTTP, warm session', 200, `median ${median(t).toFixed(2)} ms`, 'target ≤ 4 ms']);
await s.end();
const sessions = await Promise.all(Array.from({ length: 50 }, () => session()));
await Promise.all(sessions.map((x) => x.call('run_command', { command: 'true' })));
const rss = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
rows.push(['server RSS, 50 sessions each holding a sandbox', 50, `${rss} KiB`, 'target ≤ 65536 KiB']);
const total = 2000;
const t0 = ms();
await Promise.all(sessions.map(async (x) => { for (let i = 0; i < total / 50; i++) await x.call('run_command', { command: 'true' }); }));
const rate = total / ((ms() - t0) / 1000);
rows.push(['run_command "true" across 50 sessions', total, `${rate.toFixed(0)} calls/s`, 'target ≥ 500 calls/s']);
await Promise.all(sessions.map((x) => x.end()));
child.kill('SIGTERM');
await new Promise((r) => child.on('exit', r));
fs.rmSync(home, { recursive: true, force: true });
console.log('| measure | n | figure | target |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
