// bench_plugins.mjs: issue 10's provider-plugin benchmarks. Usage:
// node bench/bench_plugins.mjs [path/to/abx]. Prints a Markdown table; each
// figure through abx sits beside the plugin's own cost measured in the same
// run (the plugin driven directly, without abx).
//   - plugin start to initialize answered (the Python and Node reference plugins)
//   - exec.run "true": each plugin alone vs MCP run_command through abx
//   - MCP run_command "true": through each plugin vs the local provider
//   - digest verification of a 10 MiB, 1000-file plugin (abx provider list)
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-plugins-'));
const env = { ...process.env, ABX_HOME: home };
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const rows = [];

function rpcChild(cmd, args, opts) {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'inherit'], ...opts });
  const pending = new Map();
  let buf = '', next = 1;
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (!line.startsWith('{')) continue;
      const msg = JSON.parse(line);
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
  return { child, request, close };
}

function assert0(r) { if (r.status !== 0) throw new Error(`${r.stderr}`); }
const PLUGINS = [['local-process', 'python', 'python3', 'provider.py'], ['node-process', 'node', 'node', 'provider.mjs']];
for (const [id] of PLUGINS) assert0(spawnSync(abx, ['provider', 'install', path.join(root, 'providers', id), '--yes'], { env }));

async function mcpRuns(args) {
  const s = rpcChild(abx, ['mcp', 'start', ...args], { env, stdio: ['pipe', 'pipe', 'ignore'] });
  await s.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '0' } });
  s.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  const call = (command) => s.request('tools/call', { name: 'run_command', arguments: { command } });
  const first = await call('true');
  if (first.result?.isError) throw new Error(JSON.stringify(first));
  const t = [];
  for (let i = 0; i < 100; i++) {
    const t0 = process.hrtime.bigint();
    await call('true');
    t.push(ms(t0));
  }
  await s.close();
  return median(t);
}
const viaLocal = await mcpRuns(['--template', 'base']);

for (const [id, lang, cmd, file] of PLUGINS) {
  const dir = path.join(home, 'providers', id);
  const dataDir = fs.mkdtempSync(path.join(home, 'data-'));
  const plain = { PATH: process.env.PATH, ABX_PROVIDER_DATA_DIR: dataDir };
  // 1. plugin start to initialize answered, the plugin alone
  const starts = [];
  for (let i = 0; i < 20; i++) {
    const t0 = process.hrtime.bigint();
    const p = rpcChild(cmd, [file], { cwd: dir, env: plain });
    await p.request('initialize', { protocol_version: '1', host: { name: 'bench' }, config: {}, data_dir: dataDir });
    starts.push(ms(t0));
    await p.close();
  }
  rows.push([`${lang} plugin (${id}): start → initialize answered (the plugin alone)`, 20, `median ${median(starts).toFixed(1)} ms`, '']);
  // through abx: a whole CLI call that starts the plugin (digest, start, initialize, list, shutdown)
  const lists = [];
  for (let i = 0; i < 20; i++) {
    const t0 = process.hrtime.bigint();
    assert0(spawnSync(abx, ['--provider', id, 'list'], { env }));
    lists.push(ms(t0));
  }
  rows.push([`abx --provider ${id} list (digest, start, initialize, list, shutdown)`, 20, `median ${median(lists).toFixed(1)} ms`, `${(median(lists) / median(starts)).toFixed(2)}× the plugin's start`]);
  // 2. exec.run "true": the plugin alone
  const direct = rpcChild(cmd, [file], { cwd: dir, env: plain });
  await direct.request('initialize', { protocol_version: '1', host: { name: 'bench' }, config: {}, data_dir: dataDir });
  const sid = (await direct.request('sandbox.create', { template: null, timeout: 600, metadata: null, envs: null, cpu: null, memory: null, disk: null, gpu: null, request_timeout: null })).result.sandbox_id;
  const own = [];
  for (let i = 0; i < 100; i++) {
    const t0 = process.hrtime.bigint();
    await direct.request('exec.run', { sandbox_id: sid, cmd: 'true' });
    own.push(ms(t0));
  }
  await direct.close();
  rows.push([`exec.run "true", ${id} alone`, 100, `median ${median(own).toFixed(2)} ms`, '']);
  // 3. MCP run_command "true" through the plugin (streamed: exec.start and its events) against the local provider
  const viaPlugin = await mcpRuns(['--provider', id, '--template', 'base']);
  rows.push([`MCP run_command "true" through ${id} (warm session)`, 100, `median ${viaPlugin.toFixed(2)} ms`, `abx's share ${(viaPlugin - median(own)).toFixed(2)} ms over the plugin's own exec.run; plugin/local ${(viaPlugin / viaLocal).toFixed(2)}×`]);
}
rows.push(['MCP run_command "true" through the local provider', 100, `median ${viaLocal.toFixed(2)} ms`, '']);

// 4. digest verification: 1000 files, 10 MiB
const big = path.join(home, 'src', 'bigplugin');
fs.mkdirSync(path.join(big, 'data'), { recursive: true });
fs.writeFileSync(path.join(big, 'abx-provider.toml'), '[provider]\nid = "bigplugin"\nkind = "exec"\n[runtime]\ncommand = ["true"]\n');
const chunk = Buffer.alloc(10 * 1024 + 485, 'x');
for (let i = 0; i < 999; i++) fs.writeFileSync(path.join(big, 'data', `f${i}.bin`), chunk);
assert0(spawnSync(abx, ['provider', 'install', big, '--yes'], { env }));
const withBig = [], baseline = [];
for (let i = 0; i < 15; i++) {
  let t0 = process.hrtime.bigint();
  assert0(spawnSync(abx, ['--json', 'provider', 'list'], { env }));
  withBig.push(ms(t0));
}
assert0(spawnSync(abx, ['provider', 'remove', 'bigplugin'], { env }));
for (let i = 0; i < 15; i++) {
  const t0 = process.hrtime.bigint();
  assert0(spawnSync(abx, ['--json', 'provider', 'list'], { env }));
  baseline.push(ms(t0));
}
const digest = median(withBig) - median(baseline);
rows.push(['digest check, 1000 files / 10 MiB (abx provider list, less the same list without it)', 15, `${digest.toFixed(1)} ms`, `target ≤ 20 ms: ${digest <= 20 ? 'met' : 'missed'}`]);

console.log(`machine: ${os.cpus().length} cpu, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.release()}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | against |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
fs.rmSync(home, { recursive: true, force: true });
