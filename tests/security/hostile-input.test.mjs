// hostile-input.test.mjs: what clients may ask for, checked where abx
// decides it. Each test is one that a planted bug survived before: limits
// past the host's, timeouts out of range, secrets echoed by `abx config`,
// file paths through /proc magic links.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-hostile');
after(() => H.cleanup());

async function mcp() {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'base'], env: H.env, stderr: 'pipe' });
  const client = new Client({ name: 'abx-hostile', version: '1.0.0' });
  await client.connect(transport);
  return { client, call: (name, a = {}) => client.callTool({ name, arguments: a }) };
}

function invalidField(r, field) {
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.error.code, 'E8001', JSON.stringify(r.structuredContent));
  assert.equal(r.structuredContent.error.field, field);
}

const hostMemMb = Math.floor(os.totalmem() / 1048576);
const cpus = os.availableParallelism ? os.availableParallelism() : os.cpus().length;

test('limits past the host are refused on every surface, and the tool schema says the maxima', async () => {
  for (const args of [['--memory', String(hostMemMb + 1024)], ['--cpu', String(cpus + 1)], ['--cpu', '1024'], ['--memory', '1048576']]) {
    const r = runAbx(['--json', 'run', ...args, '--', 'true'], { env: H.env });
    assert.equal(r.status, 125, `${args}: ${r.stdout}${r.stderr}`);
    const e = JSON.parse(r.stderr.trim().split('\n').at(-1)).error ?? JSON.parse(r.stderr.trim().split('\n').at(-1));
    assert.equal(e.code, 'E8001', r.stderr);
    assert.match(e.message, new RegExp(args[0].slice(2)));
  }
  const c = runAbx(['create', '--memory', String(hostMemMb + 1024)], { env: H.env });
  assert.notEqual(c.status, 0);
  assert.match(c.stderr, /E8001: memory: must be from 16 to \d+ MB/);
  // a configured maximum lowers the host's
  fs.writeFileSync(path.join(H.home, 'config.toml'), '[limits]\nmax_memory_mb = 300\nmax_pids = 100\n');
  try {
    assert.equal(runAbx(['run', '--memory', '301', '--', 'true'], { env: H.env }).status, 125);
    assert.equal(runAbx(['run', '--pids', '101', '--', 'true'], { env: H.env }).status, 125);
    assert.equal(runAbx(['run', '--memory', '300', '--pids', '100', '--', 'true'], { env: H.env }).status, 0);
  } finally {
    fs.rmSync(path.join(H.home, 'config.toml'));
  }
  // a configured maximum above the host's never raises it: the host's still bounds every create
  fs.writeFileSync(path.join(H.home, 'config.toml'), `[limits]\nmax_memory_mb = ${hostMemMb * 8}\nmax_cpu = ${cpus * 8}\n`);
  try {
    for (const args of [['--memory', String(hostMemMb + 1024)], ['--cpu', String(cpus + 1)]]) {
      const r = runAbx(['--json', 'run', ...args, '--', 'true'], { env: H.env });
      assert.equal(r.status, 125, `${args} with a raised maximum: ${r.stderr}`);
      const c2 = runAbx(['--json', 'create', ...args], { env: H.env });
      assert.equal(JSON.parse(c2.stderr).error.code, 'E8001', `${args}: ${c2.stderr}`);
    }
    const raised = await mcp();
    try {
      const { tools } = await raised.client.listTools();
      const props = tools.find((t) => t.name === 'create_sandbox').inputSchema.properties;
      assert.ok(props.memory.maximum <= hostMemMb, String(props.memory.maximum));
      assert.ok(props.cpu.maximum <= cpus, String(props.cpu.maximum));
    } finally {
      await raised.client.close();
    }
  } finally {
    fs.rmSync(path.join(H.home, 'config.toml'));
  }
  const s = await mcp();
  try {
    const { tools } = await s.client.listTools();
    const props = tools.find((t) => t.name === 'create_sandbox').inputSchema.properties;
    assert.equal(props.cpu.maximum, cpus);
    assert.ok(props.memory.maximum <= hostMemMb && props.memory.maximum > hostMemMb / 2, String(props.memory.maximum));
    invalidField(await s.call('create_sandbox', { memory: 1048576 }), 'memory');
    invalidField(await s.call('create_sandbox', { cpu: 1024 }), 'cpu');
    invalidField(await s.call('create_sandbox', { cpu: cpus + 1, envs: { A: 'b' } }), 'cpu');
    for (const timeout of [0, 86401, -1, 1.5]) invalidField(await s.call('set_sandbox_timeout', { timeout }), 'timeout');
  } finally {
    await s.client.close();
  }
});

test('abx timeout refuses 0 and 86401 (the library checks, not only the CLI)', () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    for (const t of ['0', '86401']) {
      const r = runAbx(['timeout', id, t], { env: H.env });
      assert.notEqual(r.status, 0, t);
      assert.match(r.stderr, /E8001/);
    }
    assert.equal(runAbx(['timeout', id, '86400'], { env: H.env }).status, 0);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('abx config never prints a secret: not for a bad key, not on get', () => {
  const secret = 'sk-live-0123456789abcdef0123456789';
  for (const key of ['bad key', 'providers..x', '']) {
    for (const json of [[], ['--json']]) {
      const r = runAbx([...json, 'config', 'set', key, secret], { env: H.env });
      assert.notEqual(r.status, 0);
      assert.ok(!(r.stdout + r.stderr).includes(secret), `${key}: ${r.stdout}${r.stderr}`);
      assert.ok(!(r.stdout + r.stderr).includes(secret.slice(0, 12)), 'not even a prefix');
    }
  }
  assert.equal(runAbx(['config', 'set', 'providers.e2b.api_key', secret], { env: H.env }).status, 0);
  assert.equal(runAbx(['config', 'set', 'providers.acme.auth_token', secret], { env: H.env }).status, 0);
  for (const args of [['config', 'get', 'providers.e2b.api_key'], ['--json', 'config', 'get', 'providers.e2b.api_key'],
    ['config', 'get', 'providers.acme.auth_token'], ['config', 'get'], ['--json', 'config', 'get']]) {
    const r = runAbx(args, { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(!(r.stdout + r.stderr).includes(secret.slice(0, 8)), `${args.join(' ')}: ${r.stdout}`);
    assert.match(r.stdout, /\*{8}/);
  }
  fs.rmSync(path.join(H.home, 'config.toml'));
});

test('file operations refuse /proc magic links (/proc/1/root, /proc/1/fd, /proc/self/root)', async () => {
  const id = runAbx(['create', '--timeout', '120'], { env: H.env }).stdout.trim();
  const s = await mcp();
  try {
    for (const p of ['/proc/1/root/etc/passwd', '/proc/1/fd/0', '/proc/self/root/etc/hostname', '/proc/1/cwd/x', '/proc/1/environ']) {
      const r = runAbx(['files', 'cat', id, p], { env: H.env });
      assert.notEqual(r.status, 0, `${p}: ${r.stdout}`);
      assert.equal(r.stdout, '');
      const m = await s.call('read_file', { path: p, sandbox_id: id });
      assert.equal(m.isError, true, `${p}: ${JSON.stringify(m)}`);
      const d = await s.call('download_file', { path: p, sandbox_id: id });
      assert.equal(d.isError, true, `${p}: ${JSON.stringify(d)}`);
    }
  } finally {
    await s.client.close();
    runAbx(['kill', id], { env: H.env });
  }
});

test('sandbox processes start with an OOM score adjustment of 0 or more (never init\'s protection)', () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    const r = runAbx(['exec', id, 'cat /proc/1/oom_score_adj /proc/self/oom_score_adj; sh -c "cat /proc/self/oom_score_adj"'], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    for (const v of r.stdout.trim().split('\n')) assert.ok(Number(v) >= 0, `oom_score_adj ${v}`);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('a cancelled run_command with output, and a create_sandbox whose later argument fails, leak nothing (LeakSanitizer in the ASan build)', async () => {
  const { spawn } = await import('node:child_process');
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let buf = '', stderr = '';
  const seen = [];
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) { seen.push(JSON.parse(buf.slice(0, nl))); buf = buf.slice(nl + 1); }
  });
  const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  const until = async (pred) => { for (let i = 0; i < 600 && !seen.some(pred); i++) await new Promise((r) => setTimeout(r, 50)); return seen.find(pred); };
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'leak', version: '0' } } });
  await until((m) => m.id === 1);
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'echo started; sleep 30' }, _meta: { progressToken: 'p' } } });
  assert.ok(await until((m) => m.method === 'notifications/progress' && /bytes of output/.test(m.params.message)), 'no output progress');
  send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } });
  send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'create_sandbox', arguments: { envs: { A: 'b', C: 'd' }, cpu: 1000000 } } });
  const bad = await until((m) => m.id === 3);
  assert.equal(bad.result.structuredContent.error.field, 'cpu');
  child.stdin.end();
  const code = await new Promise((r) => child.on('close', r));
  assert.ok(!/LeakSanitizer|AddressSanitizer/.test(stderr), stderr.slice(-3000));
  assert.equal(code, 0, stderr.slice(-2000));
  assert.equal(seen.find((m) => m.id === 2), undefined, 'a cancelled request got a response');
});
