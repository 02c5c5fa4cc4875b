// bench_flood.mjs: hostile output, measured (issue 8). For each path that
// carries sandbox output to abx's host processes, a flood of FLOOD_GIB
// (default 10) GiB goes through it; the table gives the host process's
// idle and peak RSS, the CPU it spent, and for the MCP paths another
// session's call latency during the flood next to its idle latency.
// Usage: node bench/bench_flood.mjs [path/to/abx]   (as root)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const abx = path.resolve(process.argv[2] || 'build/abx');
const GIB = Number(process.env.FLOOD_GIB || 10);
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-flood-'));
const env = { ...process.env, ABX_HOME: home };
const run = (args) => spawnSync(abx, args, { env, encoding: 'utf8', maxBuffer: 1 << 26 });
const kib = (pid, f) => Number(new RegExp(`^${f}:\\s+(\\d+)`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const cpu = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) / 100; };
const shimPid = (id) => JSON.parse(fs.readFileSync(path.join(home, 'sandboxes', id, 'meta.json'), 'utf8')).shim_pid;
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const rows = [];
const cellCode = (gib) => `import os\nchunk = b'A' * (1 << 20)\nfor _ in range(${gib * 1024}): os.write(3, chunk)\nprint('done')`;

function post(id, url, body) {
  const dir = path.join(home, 'sandboxes', id);
  const token = fs.readFileSync(path.join(dir, 'token'), 'utf8');
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: path.join(dir, 'envd.sock'), path: url, method: 'POST',
      headers: { 'content-type': 'application/json', 'x-access-token': token } }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function measure(name, pid, fn, latency) {
  const idle = kib(pid, 'VmRSS'), c0 = cpu(pid), t0 = Date.now();
  await fn();
  const secs = (Date.now() - t0) / 1000;
  rows.push({ name, idle, peak: kib(pid, 'VmHWM'), cpu: cpu(pid) - c0, secs, latency });
}

async function mcp() {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'code-interpreter-v1'], env, stderr: 'ignore' });
  const client = new Client({ name: 'bench-flood', version: '1' });
  await client.connect(transport);
  return { client, pid: transport.pid, call: (n, a) => client.callTool({ name: n, arguments: a }, undefined, { timeout: 3600e3 }) };
}

async function latencyDuring(flood, probe) {
  const idle = [];
  for (let i = 0; i < 20; i++) { const t = performance.now(); await probe(); idle.push(performance.now() - t); }
  const busy = [];
  let done = false;
  const f = flood().then(() => { done = true; });
  while (!done) { const t = performance.now(); await probe(); busy.push(performance.now() - t); await new Promise((r) => setTimeout(r, 100)); }
  await f;
  return `${median(idle).toFixed(1)} → ${median(busy).toFixed(1)} ms`;
}

try {
  // 1. the shim: a code-interpreter cell flooding the kernel channel (/execute)
  let id = run(['create', '--timeout', '3600']).stdout.trim().replace('local:', '');
  await post(id, '/execute', { code: '1' });
  await measure('abx-shim: /execute cell writing to the kernel channel', shimPid(id), () => post(id, '/execute', { code: cellCode(GIB) }));
  // 2. the shim: a streamed exec (envd Start stream) and 64 background floods
  await measure('abx-shim: streamed exec to a reader (+64 background floods)', shimPid(id), async () => {
    for (let i = 0; i < 64; i++) run(['exec', '--background', id, 'head -c 100000000 /dev/zero']);
    spawnSync('sh', ['-c', `"${abx}" exec ${id} 'head -c ${GIB}G /dev/zero' > /dev/null`], { env });
  });
  run(['kill', id]);
  // 3. the MCP server over STDIO: run_command and run_code, with a second session's latency
  const a = await mcp(), b = await mcp();
  await a.call('run_command', { command: 'true' });
  await b.call('run_command', { command: 'true' });
  let lat = await latencyDuring(() => measure('abx mcp start: run_command flood (stdout + stderr)', a.pid,
    () => a.call('run_command', { command: `head -c ${GIB / 2}G /dev/zero; head -c ${GIB / 2}G /dev/zero >&2`, timeout: 3600 })),
  () => b.call('run_command', { command: 'true' }));
  rows.at(-1).latency = lat;
  await a.call('run_code', { code: '1' });
  lat = await latencyDuring(() => measure('abx mcp start: run_code flooding the kernel channel', a.pid,
    () => a.call('run_code', { code: cellCode(GIB), timeout: 3600 })), () => b.call('run_command', { command: 'true' }));
  rows.at(-1).latency = lat;
  await a.client.close();
  await b.client.close();
} finally {
  for (const id of fs.existsSync(path.join(home, 'sandboxes')) ? fs.readdirSync(path.join(home, 'sandboxes')) : []) run(['kill', id]);
  fs.rmSync(home, { recursive: true, force: true });
}

console.log(`| path (${GIB} GiB each) | idle RSS | peak RSS | CPU | wall | GiB/s | other session's call, idle → during |`);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.name} | ${(r.idle / 1024).toFixed(1)} MiB | ${(r.peak / 1024).toFixed(1)} MiB | ${r.cpu.toFixed(1)} s | ${r.secs.toFixed(1)} s | ${(GIB / r.secs).toFixed(2)} | ${r.latency || ''} |`);
}
