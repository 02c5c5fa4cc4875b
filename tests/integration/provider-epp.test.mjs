// provider-epp.test.mjs: exec plugins through abx (issue 10's EPP host),
// driven as a user would: the reference plugin (providers/local-process)
// behind the CLI verbs and the MCP tools, and a recording test plugin
// (tests/fixtures/plugins/recorder.py) for what must never happen: a
// tampered plugin started, an undeclared method sent, abx's environment
// leaked, a broken plugin hanging abx or its words reaching a caller.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { abx, root, runAbx, runAbxAsync, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const H = privateHome('abx-epp');
after(() => H.cleanup());
const home = H.env.ABX_HOME;
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });
const work = fs.mkdtempSync(path.join(H.home, 'plugins-'));

function recorder(id, { features, behave, env = [] } = {}) {
  const dir = path.join(work, id);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  fs.copyFileSync(path.join(root, 'tests/fixtures/plugins/recorder.py'), path.join(dir, 'recorder.py'));
  fs.writeFileSync(path.join(dir, 'abx-provider.toml'), `[provider]\nid = "${id}"\nkind = "exec"\nversion = "1"\n[runtime]\ncommand = ["python3", "recorder.py"]\nenv = ${JSON.stringify(env)}\n[config.token]\nsecret = true\n`);
  if (features) fs.writeFileSync(path.join(dir, 'features.json'), JSON.stringify(features));
  if (behave) fs.writeFileSync(path.join(dir, 'behave.json'), JSON.stringify(behave));
  const r = abxh(['provider', 'install', dir, '--yes', '--force']);
  assert.equal(r.status, 0, r.stderr);
  fs.rmSync(path.join(home, 'provider-data', id), { recursive: true, force: true });
  return dir;
}
const calls = (id) => {
  const f = path.join(home, 'provider-data', id, 'calls.log');
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim().split('\n') : [];
};

test('the reference plugin (local-process) behind the CLI: create, exec, list, info, timeout, kill; what it lacks is E8004', () => {
  let r = abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes']);
  assert.equal(r.status, 0, r.stderr);
  r = abxh(['--provider', 'local-process', 'create', '--timeout', '120']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  assert.match(id, /^local-process:lp[0-9a-f]{16}$/);
  r = abxh(['exec', id, 'echo hello; echo oops >&2; exit 3']);
  assert.deepEqual([r.status, r.stdout, r.stderr], [3, 'hello\n', 'oops\n']);
  const listed = JSON.parse(abxh(['--provider', 'local-process', '--json', 'list']).stdout);
  assert.ok(listed.some((s) => s.sandbox_id === id));
  assert.equal(JSON.parse(abxh(['--json', 'info', id]).stdout).sandbox_id, id);
  assert.equal(abxh(['timeout', id, '600']).status, 0);
  r = abxh(['--json', 'exec', '--background', id, 'sleep 5']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8004');
  assert.equal(abxh(['kill', id]).status, 0);
  r = abxh(['--json', 'info', id]);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8002');
  // an id of another provider is not this one's
  r = abxh(['--json', '--provider', 'local-process', 'info', 'local:iabcdefghij0123456789']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8002');
});

test('the MCP tools over a plugin: run_command, background tasks (exec.stream + process.manage); a tool whose capability is missing answers E8004', async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['--provider', 'local-process', 'mcp', 'start'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-epp', version: '1' });
  await c.connect(transport);
  try {
    const r = await c.callTool({ name: 'run_command', arguments: { command: 'echo via-plugin' } });
    assert.equal(r.structuredContent.stdout, 'via-plugin\n', JSON.stringify(r).slice(0, 400));
    const t = await c.callTool({ name: 'start_background_task', arguments: { command: 'echo one; sleep 0.5; echo two; echo err >&2; exit 3' } });
    assert.equal(t.isError, undefined, JSON.stringify(t));
    const task_id = t.structuredContent.task_id;
    let g = await c.callTool({ name: 'get_background_task', arguments: { task_id, wait: 5 } });
    assert.equal(g.structuredContent.stdout.startsWith('one\n'), true, JSON.stringify(g.structuredContent));
    for (let i = 0; i < 50 && g.structuredContent.status === 'running'; i++) {
      await new Promise((res) => setTimeout(res, 100));
      g = await c.callTool({ name: 'get_background_task', arguments: { task_id } });
    }
    assert.deepEqual([g.structuredContent.status, g.structuredContent.exit_code, g.structuredContent.stdout, g.structuredContent.stderr],
      ['exited', 3, 'one\ntwo\n', 'err\n']);
    const long = await c.callTool({ name: 'start_background_task', arguments: { command: 'sleep 100' } });
    const stop = await c.callTool({ name: 'stop_background_task', arguments: { task_id: long.structuredContent.task_id } });
    assert.deepEqual(stop.structuredContent, { success: true, status: 'exited' });
    const none = await c.callTool({ name: 'get_background_task', arguments: { task_id: '999999' } });
    assert.equal(none.structuredContent.error.code, 'E8026');
  } finally {
    await c.close();
  }
  // a plugin without exec.stream and process.manage: the tool answers E8004, the methods never sent
  recorder('runonly', { features: ['sandbox.lifecycle', 'exec.run'] });
  const t2 = new StdioClientTransport({ command: abx, args: ['--provider', 'runonly', 'mcp', 'start'], env: H.env, stderr: 'pipe' });
  const c2 = new Client({ name: 'abx-epp', version: '1' });
  await c2.connect(t2);
  try {
    const f = await c2.callTool({ name: 'start_background_task', arguments: { command: 'sleep 5' } });
    assert.equal(f.isError, true);
    assert.equal(f.structuredContent.error.code, 'E8004');
  } finally {
    await c2.close();
  }
  assert.ok(!calls('runonly').includes('exec.start'), calls('runonly').join(','));
});

test('every capability a plugin does not declare: each CLI verb and MCP tool that needs it answers E8004, and none of its methods reaches the plugin', async () => {
  const spec = JSON.parse(fs.readFileSync(path.join(root, 'docs/design/fixtures/epp-methods.json'), 'utf8'));
  const undeclared = Object.keys(spec.capabilities).filter((c) => c !== 'sandbox.lifecycle');
  const methods = spec.methods.filter((m) => undeclared.includes(m.capability)).map((m) => m.method);
  assert.ok(methods.includes('sandbox.set_timeout') && methods.includes('files.read') && methods.includes('exec.run'));
  recorder('bare', { features: ['sandbox.lifecycle'] });
  const id = 'bare:box1';
  const src = path.join(work, 'bare-upload.txt');
  fs.writeFileSync(src, 'x');
  const verbs = [
    ['timeout', id, '60'], ['exec', id, 'echo hi'], ['exec', '--background', id, 'sleep 1'],
    ['ps', id], ['logs', id, '1'], ['signal', id, '1', 'TERM'],
    ['files', 'ls', id, '/app'], ['files', 'cat', id, '/app/x'], ['files', 'put', id, src, '/app/x'],
    ['files', 'get', id, '/app/x', '-'], ['files', 'mkdir', id, '/app/d'], ['files', 'rm', id, '/app/x'],
    ['files', 'mv', id, '/app/x', '/app/y'], ['expose', id, '8000'],
  ];
  for (const args of verbs) {
    const r = abxh(['--json', ...args], { timeout: 30000 });
    assert.notEqual(r.status, 0, args.join(' '));
    assert.equal(JSON.parse(r.stderr.trim().split('\n').at(-1)).error.code, 'E8004', `${args.join(' ')}: ${r.stderr}`);
  }
  const t = new StdioClientTransport({ command: abx, args: ['--provider', 'bare', 'mcp', 'start'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-epp', version: '1' });
  await c.connect(t);
  try {
    const tools = [
      ['set_sandbox_timeout', { sandbox_id: id, timeout: 60 }], ['run_command', { sandbox_id: id, command: 'echo hi' }],
      ['run_code', { sandbox_id: id, code: 'print(1)' }], ['start_background_task', { sandbox_id: id, command: 'sleep 1' }],
      ['read_file', { sandbox_id: id, path: '/app/x' }], ['write_file', { sandbox_id: id, path: '/app/x', content: 'x' }],
      ['list_files', { sandbox_id: id, path: '/app' }], ['upload_file', { sandbox_id: id, path: '/app/x', content_base64: 'eA==' }],
      ['download_file', { sandbox_id: id, path: '/app/x' }],
    ];
    for (const [name, args] of tools) {
      const r = await c.callTool({ name, arguments: args });
      assert.equal(r.isError, true, `${name}: ${JSON.stringify(r).slice(0, 300)}`);
      assert.equal(r.structuredContent.error.code, 'E8004', `${name}: ${JSON.stringify(r.structuredContent)}`);
    }
  } finally {
    await c.close();
  }
  const log = calls('bare');
  for (const m of methods) assert.ok(!log.includes(m), `${m} reached a plugin that did not declare its capability`);
  assert.ok(log.includes('sandbox.connect') || log.includes('sandbox.get'), 'the verbs did not reach the plugin at all');
});

test('streamed exec through a plugin (exec.start, exec.output, exec.exit): output as it comes, stdin, exit codes and signals', () => {
  abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes', '--force']);
  const id = abxh(['--provider', 'local-process', 'create']).stdout.trim();
  let r = abxh(['exec', id, 'cat; echo " -- $((6*7))"; echo e >&2; exit 7'], { input: 'from stdin' });
  assert.deepEqual([r.status, r.stdout, r.stderr], [7, 'from stdin -- 42\n', 'e\n']);
  r = abxh(['exec', id, 'kill -TERM $$']);
  assert.equal(r.status, 143, r.stderr);
  r = abxh(['--json', 'exec', '--timeout', '1', id, 'sleep 30']);
  assert.equal(JSON.parse(r.stdout).timed_out, true, r.stdout + r.stderr);
  // a background task would die with the CLI's plugin process: refused, with why
  r = abxh(['--json', 'exec', '--background', id, 'sleep 5']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8004');
  assert.match(JSON.parse(r.stderr).error.message, /MCP session/);
  assert.equal(abxh(['kill', id]).status, 0);
});

test('several calls in flight on one plugin: a fast command is not held behind a slow one', async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['--provider', 'local-process', 'mcp', 'start'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-epp', version: '1' });
  await c.connect(transport);
  try {
    await c.callTool({ name: 'run_command', arguments: { command: 'true' } });
    const t0 = Date.now();
    let fastAt = 0;
    const slow = c.callTool({ name: 'run_command', arguments: { command: 'sleep 3; echo slow' } });
    await new Promise((res) => setTimeout(res, 200));
    const fast = c.callTool({ name: 'run_command', arguments: { command: 'echo fast' } }).then((r) => { fastAt = Date.now() - t0; return r; });
    const [s, f] = await Promise.all([slow, fast]);
    assert.equal(f.structuredContent.stdout, 'fast\n');
    assert.equal(s.structuredContent.stdout, 'slow\n');
    assert.ok(fastAt < 2500, `the fast command waited for the slow one (${fastAt} ms)`);
  } finally {
    await c.close();
  }
});

test('a broken exec stream is a protocol error, reported as such: two exec.exit, output after the exit, a crash mid-stream; no exit ends at the timeout', () => {
  for (const [how, code] of [['two-exits', 'E8015'], ['output-after-exit', 'E8015'], ['crash-mid', 'E8015']]) {
    const id = `stream-${how}`;
    recorder(id, { features: ['sandbox.lifecycle', 'exec.stream'], behave: { 'exec.start': how } });
    const r = abxh(['--json', 'exec', `${id}:box1`, 'anything'], { timeout: 60000 });
    const e = JSON.parse(r.stderr).error;
    assert.equal(e.code, code, `${how}: ${r.stderr}`);
    if (how !== 'crash-mid') assert.match(e.message, how === 'two-exits' ? /a second exec\.exit/ : /exec\.output after/);
  }
  // a flood: 48 MiB for one exec; abx keeps a bounded head and tail and still reports the end
  recorder('stream-flood', { features: ['sandbox.lifecycle', 'exec.stream'], behave: { 'exec.start': 'flood' } });
  const flood = abxh(['--json', 'exec', 'stream-flood:box1', 'anything'], { timeout: 120000, maxBuffer: 64 << 20 });
  const fr = JSON.parse(flood.stdout);
  assert.equal(fr.exit_code, 5, flood.stderr);
  assert.ok(fr.stdout.length > 0 && fr.stdout.length <= 600 * 1024, `kept ${fr.stdout.length} bytes of 48 MiB`);
  recorder('stream-ok', { features: ['sandbox.lifecycle', 'exec.stream'] });
  let r = abxh(['exec', 'stream-ok:box1', 'anything']);
  assert.deepEqual([r.status, r.stdout], [5, 'streamed\n']);
  recorder('stream-noexit', { features: ['sandbox.lifecycle', 'exec.stream'], behave: { 'exec.start': 'no-exit' } });
  const t0 = Date.now();
  r = abxh(['--json', 'exec', '--timeout', '1', 'stream-noexit:box1', 'anything'], { timeout: 60000 });
  assert.equal(JSON.parse(r.stdout).timed_out, true, r.stdout + r.stderr);
  assert.ok(Date.now() - t0 < 20000);
});

// Runs abx (args) to its end, sampling its peak resident memory (VmHWM) as it runs.
async function peakOf(args) {
  // under ASan, freed memory is held back (its quarantine) and would count: not here
  const asan = [process.env.ASAN_OPTIONS, 'quarantine_size_mb=0:thread_local_quarantine_size_kb=0'].filter(Boolean).join(':');
  const p = spawn(abx, args, { env: { ...H.env, ASAN_OPTIONS: asan }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '', peakKb = 0;
  p.stdout.on('data', (d) => { if (out.length < (1 << 20)) out += d; });
  p.stderr.on('data', (d) => { err += d; });
  const sample = setInterval(() => {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${p.pid}/status`, 'utf8'));
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    } catch { /* ended */ }
  }, 5);
  const status = await new Promise((resolve) => p.on('close', resolve));
  clearInterval(sample);
  return { status, out, err, peakMb: peakKb / 1024 };
}

test('hostile plugin replies end in clear errors and abx\'s memory stays bounded: deep nesting, unsolicited answers, binary garbage, an over-long line, floods of output', { timeout: 300000 }, async () => {
  recorder('calm');
  const calm = await peakOf(['--json', 'info', 'calm:box1']);
  assert.equal(calm.status, 0, calm.err);
  assert.ok(calm.peakMb > 0, 'abx\'s memory was not sampled');
  for (const [how, code] of [['deep', 'E8015'], ['unsolicited', 'E8015'], ['binary', 'E8015'], ['long', 'E8015']]) {
    recorder(`hostile-${how}`, { behave: { 'sandbox.get': how } });
    const r = await peakOf(['--json', 'info', `hostile-${how}:box1`]);
    assert.notEqual(r.status, 0, `${how}: ${r.out}`);
    const e = JSON.parse(r.err).error;
    assert.equal(e.code, code, `${how}: ${r.err}`);
    assert.ok(e.message.length < 600 && !e.message.includes('pppp'), `${how}: the plugin's words reached the caller`);
    assert.ok(r.peakMb < calm.peakMb + 48, `${how}: abx peaked at ${r.peakMb.toFixed(1)} MiB (${calm.peakMb.toFixed(1)} for a plain call)`);
  }
  for (const how of ['flood', 'unknown-exec']) {
    recorder(`hostile-${how}`, { features: ['sandbox.lifecycle', 'exec.stream'], behave: { 'exec.start': how } });
    const r = await peakOf(['--json', 'exec', `hostile-${how}:box1`, 'anything']);
    const res = JSON.parse(r.out);
    assert.equal(res.exit_code, 5, `${how}: ${r.err}`);
    if (how === 'unknown-exec') assert.equal(res.stdout, 'streamed\n', 'output of an exec abx never started was taken');
    else assert.ok(res.stdout.length > 0 && res.stdout.length <= 600 * 1024, `${how}: kept ${res.stdout.length} bytes`);
    assert.ok(r.peakMb < calm.peakMb + 48, `${how}: abx peaked at ${r.peakMb.toFixed(1)} MiB for 48 MiB of output (${calm.peakMb.toFixed(1)} for a plain call)`);
  }
});

test('sandbox.list pages: abx follows next_token to the end', () => {
  recorder('paged', { behave: { paged: true } });
  const r = abxh(['--provider', 'paged', '--json', 'list']);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).map((s) => s.sandbox_id).sort(), ['paged:box1', 'paged:box2', 'paged:box3', 'paged:box4', 'paged:box5', 'paged:box6']);
  assert.equal(calls('paged').filter((l) => l === 'sandbox.list').length, 3);
});

test('a plugin\'s answers about sandboxes abx did not ask for, or cannot name, are protocol errors; a failed list leaves nothing behind', () => {
  for (const how of ['empty-id', 'other-id', 'spaced-id']) {
    recorder(`ids-${how}`, { behave: { 'sandbox.get': how, 'sandbox.create': how, 'sandbox.list': how } });
    // at create the plugin names the sandbox (any usable name); after, it answers for the one asked
    for (const args of [['info', `ids-${how}:box1`], ...(how === 'other-id' ? [] : [['--provider', `ids-${how}`, 'create']])]) {
      const r = abxh(['--json', ...args]);
      assert.equal(r.status, 1, `${how} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(JSON.parse(r.stderr).error.code, 'E8015', `${how} ${args.join(' ')}`);
      assert.match(JSON.parse(r.stderr).error.message, /usable sandbox_id/);
      assert.equal(r.stdout, '');
    }
    // a listing keeps the records it can name, and only them
    const l = abxh(['--json', '--provider', `ids-${how}`, 'list']);
    assert.equal(l.status, 0, l.stderr);
    const named = how === 'other-id' ? [`ids-${how}:box1`, `ids-${how}:someone-else`] : [`ids-${how}:box1`];
    assert.deepEqual(JSON.parse(l.stdout).map((s) => s.sandbox_id).sort(), named);
  }
  // a failed sandbox.list: a clear error, and (under ASan, which checks for leaks at exit) no leak
  recorder('listfails', { behave: { 'sandbox.list': 'fail' } });
  for (let i = 0; i < 3; i++) {
    const r = abxh(['--json', '--provider', 'listfails', 'list']);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8015');
  }
});

test('a tampered plugin is never started (E8011): an edit after install', () => {
  const dir = recorder('tampered');
  assert.equal(abxh(['--provider', 'tampered', 'create']).status, 0);
  const starts = calls('tampered').filter((l) => l === 'start').length;
  fs.appendFileSync(path.join(home, 'providers/tampered/recorder.py'), '\n# changed\n');
  const r = abxh(['--json', '--provider', 'tampered', 'create']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8011');
  assert.equal(calls('tampered').filter((l) => l === 'start').length, starts, 'the plugin was started');
  assert.equal(abxh(['--json', 'provider', 'list']).stdout.includes('"mismatch"'), true);
  fs.rmSync(dir, { recursive: true });
  // files the digest must not skip: a dot-file, a file in a dot-directory, an empty directory, a link
  for (const [name, plant] of [['hidden', (d) => fs.writeFileSync(path.join(d, '.hidden'), 'x')],
    ['venv', (d) => { fs.mkdirSync(path.join(d, '.venv')); fs.writeFileSync(path.join(d, '.venv/x.py'), 'import os\n'); }],
    ['emptydir', (d) => fs.mkdirSync(path.join(d, 'later'))],
    ['link', (d) => fs.symlinkSync('/etc/passwd', path.join(d, 'passwd'))],
    ['mode', (d) => fs.chmodSync(path.join(d, 'recorder.py'), 0o777)]]) {
    const src = recorder(`tamper-${name}`);
    assert.equal(abxh(['--provider', `tamper-${name}`, 'create']).status, 0);
    const starts = calls(`tamper-${name}`).filter((l) => l === 'start').length;
    plant(path.join(home, `providers/tamper-${name}`));
    const t = abxh(['--json', '--provider', `tamper-${name}`, 'create']);
    assert.equal(JSON.parse(t.stderr).error.code, 'E8011', `${name}: ${t.stderr}`);
    assert.equal(calls(`tamper-${name}`).filter((l) => l === 'start').length, starts, `${name}: the plugin was started`);
    fs.rmSync(src, { recursive: true });
  }
});

test('the plugin gets a trimmed environment and its config; undeclared methods are never sent; connect falls back to get', () => {
  recorder('rec', { features: ['sandbox.lifecycle'], env: ['PASSED_THROUGH'] });
  const env = { ...H.env, SECRET_OF_ABX: 'hunter2', PASSED_THROUGH: 'yes' };
  assert.equal(runAbx(['config', 'set', 'providers.rec.region', 'eu'], { env }).status, 0);
  const created = runAbx(['--provider', 'rec', 'create'], { env });
  assert.equal(created.status, 0, created.stderr);
  const seen = JSON.parse(fs.readFileSync(path.join(home, 'provider-data/rec/env.json'), 'utf8'));
  assert.equal(seen.SECRET_OF_ABX, undefined, 'abx\'s environment leaked into the plugin');
  assert.equal(seen.PASSED_THROUGH, 'yes');
  assert.equal(seen.ABX_PROVIDER_DATA_DIR, path.join(home, 'provider-data/rec'));
  // (a python3 found through pyenv's shims adds its own PYENV_* variables)
  assert.deepEqual(Object.keys(seen).filter((k) => !/^(PATH|LANG|LC_.*|ABX_PROVIDER_DATA_DIR|PASSED_THROUGH|PWD|SHLVL|_|_?PYENV\w*)$/.test(k)), []);
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(home, 'provider-data/rec/config.json'), 'utf8')), { region: 'eu' });
  const r = runAbx(['--json', 'exec', 'rec:box1', 'echo hi'], { env });
  assert.equal(JSON.parse(r.stderr).error.code, 'E8004');
  const log = calls('rec');
  assert.ok(!log.includes('exec.run'), 'an undeclared method reached the plugin');
  assert.ok(log.includes('sandbox.connect') && log.includes('sandbox.get'), log.join(','));
  assert.ok(log.includes('shutdown'));
});

test('the digest check cannot be raced: a plugin file flipped between two contents while abx starts it runs as installed or not at all (E8011)', { timeout: 300000 }, () => {
  recorder('race');
  const installed = path.join(home, 'providers/race/recorder.py');
  const good = fs.readFileSync(installed);
  // the other content: the same plugin, which first leaves a mark that it ran
  const evil = Buffer.concat([Buffer.from('import os; open(os.environ["ABX_PROVIDER_DATA_DIR"] + "/evil-ran", "w").close()\n'), good]);
  const flips = path.join(H.home, 'flips');
  fs.mkdirSync(flips, { recursive: true });
  fs.writeFileSync(path.join(flips, 'good'), good);
  fs.writeFileSync(path.join(flips, 'evil'), evil);
  fs.chmodSync(path.join(flips, 'good'), fs.statSync(installed).mode & 0o777);
  fs.chmodSync(path.join(flips, 'evil'), fs.statSync(installed).mode & 0o777);
  // the installed file replaced (renamed over, whole) by one content, then the other, every 20 ms
  const writer = spawn('sh', ['-c', `while :; do for c in evil good; do cp -p "${flips}/$c" "${flips}/next"; mv -f "${flips}/next" "${installed}"; sleep 0.02; done; done`], { stdio: 'ignore', detached: true });
  const mark = path.join(home, 'provider-data/race/evil-ran');
  const outcomes = { ok: 0, E8011: 0 };
  try {
    for (let i = 0; i < 40 && !fs.existsSync(mark); i++) {
      const r = abxh(['--json', '--provider', 'race', 'list'], { timeout: 60000 });
      if (r.status === 0) outcomes.ok++;
      else {
        const code = JSON.parse(r.stderr).error.code;
        assert.equal(code, 'E8011', r.stderr);
        outcomes.E8011++;
      }
    }
  } finally {
    // the whole group: a cp or mv of the loop's still running would put a content back after the restore below
    try { process.kill(-writer.pid, 'SIGKILL'); } catch { writer.kill('SIGKILL'); }
    spawnSync('sleep', ['0.2']);
  }
  assert.ok(!fs.existsSync(mark), `a content that was never installed ran (${JSON.stringify(outcomes)})`);
  assert.ok(outcomes.E8011 > 0, `the flips were never seen: ${JSON.stringify(outcomes)}`);
  // the copies it ran from are gone with each run
  assert.deepEqual(fs.readdirSync(path.join(home, 'plugin-runs')).filter((n) => n.startsWith('race.')), []);
  fs.writeFileSync(installed, good);
  const back = abxh(['--provider', 'race', 'list']);
  assert.equal(back.status, 0, back.stderr);
});

test('a broken plugin gives a clear error and abx never hangs: garbage, a crash, an over-long line, a hang; its words stay in its log', () => {
  for (const [how, code] of [['garbage', 'E8015'], ['crash', 'E8015'], ['long', 'E8015'], ['notfound', 'E8002']]) {
    const id = `broken-${how}`;
    recorder(id, { behave: { 'sandbox.get': how } });
    const t0 = Date.now();
    const r = abxh(['--json', 'info', `${id}:box1`], { timeout: 90000 });
    assert.ok(Date.now() - t0 < 60000, `${how}: abx took too long`);
    const e = JSON.parse(r.stderr).error;
    assert.equal(e.code, code, `${how}: ${r.stderr}`);
    assert.ok(!r.stderr.includes('secret internal detail'));
  }
});

test('a plugin that hangs is given up after the call timeout (E8005), and the next call starts it again', { timeout: 180000 }, () => {
  recorder('hangs', { behave: { 'sandbox.create': 'hang' } });
  const t0 = Date.now();
  const r = abxh(['--json', '--provider', 'hangs', 'create'], { timeout: 150000 });
  assert.equal(JSON.parse(r.stderr).error.code, 'E8005');
  assert.ok(Date.now() - t0 < 120000);
  // abx did not leave the hung plugin behind
  const pids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try { return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('recorder.py') && /\/(providers\/hangs|plugin-runs\/hangs\.)/.test(fs.readlinkSync(`/proc/${p}/cwd`)); } catch { return false; }
  });
  assert.deepEqual(pids, []);
});

test('providers.<id>.request_timeout is the call timeout: a plugin that never answers is given up after it, not after 30 s', { timeout: 120000 }, () => {
  recorder('hangs-short', { behave: { 'sandbox.get': 'hang' } });
  assert.equal(abxh(['config', 'set', 'providers.hangs-short.request_timeout', '2']).status, 0);
  try {
    const t0 = Date.now();
    const r = abxh(['--json', 'info', 'hangs-short:box1'], { timeout: 90000 });
    const took = Date.now() - t0;
    const e = JSON.parse(r.stderr).error;
    assert.equal(e.code, 'E8005', r.stderr);
    assert.match(e.message, /did not answer sandbox.get in time \(2 s\)/);
    assert.ok(took >= 2000 && took < 25000, `gave up after ${took} ms`);
  } finally {
    abxh(['config', 'unset', 'providers.hangs-short.request_timeout']);
  }
});

test('secrets: a key the manifest marks secret is taken from stdin only, kept 0600, masked, and reaches the plugin in initialize', () => {
  recorder('sec');
  let r = abxh(['config', 'set', 'providers.sec.token', 'hunter2']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /providers\.sec\.token is a secret: never on the command line/);
  assert.ok(!fs.existsSync(path.join(home, 'config.toml')) || !fs.readFileSync(path.join(home, 'config.toml'), 'utf8').includes('hunter2'));
  r = abxh(['config', 'set', 'providers.sec.token'], { input: 'hunter2\n' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.statSync(path.join(home, 'config.toml')).mode & 0o777, 0o600);
  assert.equal(abxh(['config', 'get', 'providers.sec.token']).stdout, '********\n');
  assert.ok(!abxh(['config', 'get']).stdout.includes('hunter2'));
  r = abxh(['config', 'set', 'providers.sec.token', '-'], { input: 'hunter3\n' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(abxh(['--provider', 'sec', 'list']).status, 0);
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(home, 'provider-data/sec/config.json'), 'utf8')), { token: 'hunter3' });
  for (const args of [['provider', 'list'], ['--json', 'provider', 'list']]) assert.ok(!abxh(args).stdout.includes('hunter3'));
});

test('envd hand-off: a SandboxRecord with an envd_url moves files and processes to envd; the plugin sees no exec', async () => {
  const made = abxh(['create', '--timeout', '120']);
  assert.equal(made.status, 0, made.stderr);
  const local = made.stdout.trim().replace(/^local:/, '');
  const dir = path.join(home, 'sandboxes', local);
  const token = fs.readFileSync(path.join(dir, 'token'), 'utf8');
  const proxy = http.createServer((req, res) => {
    const up = http.request({ socketPath: path.join(dir, 'envd.sock'), path: req.url, method: req.method, headers: req.headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  try {
    recorder('handoff', { behave: { envd_url: `http://127.0.0.1:${proxy.address().port}`, envd_access_token: token } });
    let r = await runAbxAsync(['exec', 'handoff:box1', 'echo $((6*7)); id -un'], { env: H.env });
    assert.equal(r.stdout, '42\nuser\n', r.stderr);
    r = await runAbxAsync(['--json', 'files', 'ls', 'handoff:box1', '/app'], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(Array.isArray(JSON.parse(r.stdout)));
    assert.ok(!calls('handoff').includes('exec.run'), calls('handoff').join(','));
  } finally {
    proxy.close();
    abxh(['kill', made.stdout.trim()]);
  }
});

test('provider doctor: each check a line; a tampered plugin and a missing command fail it', () => {
  abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes', '--force']);
  let r = abxh(['--json', 'provider', 'doctor', 'local-process']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const doc = JSON.parse(r.stdout);
  const by = Object.fromEntries(doc.checks.map((c) => [c.check, c]));
  assert.deepEqual(['manifest', 'command', 'digest', 'initialize'].map((k) => by[k].status), ['ok', 'ok', 'ok', 'ok']);
  assert.match(by.initialize.detail, /"exec\.run"/);
  assert.equal(by.config.status, 'warn');
  const dir = recorder('nocmd');
  fs.writeFileSync(path.join(dir, 'abx-provider.toml'), '[provider]\nid = "nocmd"\nkind = "exec"\n[runtime]\ncommand = ["no-such-interpreter-here", "x"]\n');
  assert.equal(abxh(['provider', 'install', dir, '--yes', '--force']).status, 0);
  r = abxh(['--json', 'provider', 'doctor', 'nocmd']);
  assert.equal(r.status, 1);
  assert.equal(JSON.parse(r.stdout).checks.find((c) => c.check === 'command').status, 'fail');
  fs.appendFileSync(path.join(home, 'providers/local-process/provider.py'), '# x\n');
  r = abxh(['--json', 'provider', 'doctor', 'local-process']);
  assert.equal(r.status, 1);
  assert.equal(JSON.parse(r.stdout).checks.find((c) => c.check === 'digest').status, 'fail');
});

test('--opt K=V reaches sandbox.create as options (anywhere on the line); a secret key is refused as --opt; local takes none', () => {
  recorder('opts');
  let r = abxh(['--opt', 'region=eu', '--provider', 'opts', 'create', '--opt', 'size=small']);
  assert.equal(r.status, 0, r.stderr);
  const params = JSON.parse(fs.readFileSync(path.join(home, 'provider-data/opts/create.json'), 'utf8'));
  assert.deepEqual(params.options, { region: 'eu', size: 'small' });
  for (const k of ['template', 'timeout', 'metadata', 'envs', 'cpu', 'memory', 'disk', 'gpu', 'request_timeout']) assert.ok(k in params, k);
  assert.equal(params.secure, undefined);
  fs.rmSync(path.join(home, 'provider-data/opts/create.json'));
  r = abxh(['--json', '--provider', 'opts', 'create', '--opt', 'token=hunter2']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
  assert.match(r.stderr, /a secret of this provider/);
  assert.ok(!r.stderr.includes('hunter2'));
  assert.ok(!fs.existsSync(path.join(home, 'provider-data/opts/create.json')), 'the secret reached the plugin');
  r = abxh(['--json', 'create', '--opt', 'x=1']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
  // without --opt, no options key at all
  abxh(['--provider', 'opts', 'create']);
  assert.equal(JSON.parse(fs.readFileSync(path.join(home, 'provider-data/opts/create.json'), 'utf8')).options, undefined);
});

test('provider test: the reference plugin passes every step; a plugin that answers wrongly fails with the step named', () => {
  abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes', '--force']);
  let r = abxh(['--json', 'provider', 'test', 'local-process']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.ok, true);
  const steps = doc.results.map((x) => `${x.capability}/${x.step}=${x.status}`);
  const every = ['sandbox.lifecycle/create=pass', 'sandbox.lifecycle/get=pass', 'sandbox.lifecycle/list=pass', 'sandbox.timeout/set_timeout=pass', 'exec.run/stdout and stderr=pass', 'exec.run/exit status=pass',
    'exec.stream/output and exit=pass', 'process.manage/stdin=pass', 'process.manage/start (exec.start)=pass', 'process.manage/list=pass', 'process.manage/output=pass', 'process.manage/signal=pass', 'process.manage/ended by the signal=pass',
    'files.rw/write=pass', 'files.rw/read (binary)=pass', 'files.rw/list=pass', 'files.rw/stat=pass', 'files.rw/mkdir=pass', 'files.rw/move=pass', 'files.rw/remove=pass', 'sandbox.lifecycle/kill=pass', 'sandbox.lifecycle/get after kill=pass'];
  for (const want of every) assert.ok(steps.includes(want), `${want} in ${steps}`);
  // the Node reference plugin: every capability but sandbox.pause
  abxh(['provider', 'install', path.join(root, 'providers/node-process'), '--yes', '--force']);
  r = abxh(['--json', 'provider', 'test', 'node-process']);
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const node = JSON.parse(r.stdout).results.map((x) => `${x.capability}/${x.step}=${x.status}`);
  for (const want of [...every, 'ports.url/url of port 8080=pass']) assert.ok(node.includes(want), `${want} in ${node}`);
  assert.ok(!node.some((x) => x.startsWith('sandbox.pause')));
  recorder('wrong');
  r = abxh(['--json', 'provider', 'test', 'wrong']);
  assert.equal(r.status, 1);
  const failed = JSON.parse(r.stdout).results.filter((x) => x.status === 'fail').map((x) => x.step);
  assert.ok(failed.includes('stdout and stderr') && failed.includes('get after kill'), failed.join(','));
});

test('files through a plugin (files.rw): the CLI verbs and the MCP file tools, binary round trip, listing, errors with their codes', async () => {
  abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes', '--force']);
  const id = abxh(['--provider', 'local-process', 'create']).stdout.trim();
  const dir = fs.mkdtempSync(path.join(H.home, 'files-'));
  try {
    const data = Buffer.from(Array.from({ length: 9 * 1024 * 1024 + 7 }, (_, i) => (i * 7) % 256)); // more than one 4 MiB chunk
    fs.writeFileSync(path.join(dir, 'in.bin'), data);
    assert.equal(abxh(['files', 'put', id, path.join(dir, 'in.bin'), '/app/deep/in.bin']).status, 0);
    assert.equal(abxh(['files', 'get', id, '/app/deep/in.bin', path.join(dir, 'out.bin')]).status, 0);
    assert.ok(fs.readFileSync(path.join(dir, 'out.bin')).equals(data), 'bytes differ');
    const ls = JSON.parse(abxh(['--json', 'files', 'ls', id, '/app/deep']).stdout);
    assert.deepEqual(ls.map((e) => [e.name, e.type, e.size]), [['in.bin', 'file', data.length]]);
    assert.equal(abxh(['files', 'mv', id, '/app/deep/in.bin', '/app/moved.bin']).status, 0);
    assert.equal(abxh(['files', 'rm', id, '/app/deep']).status, 0);
    let r = abxh(['--json', 'files', 'cat', id, '/app/nope']);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8023');
    r = abxh(['--json', 'files', 'cat', id, '../../../../etc/passwd']);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8017');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const transport = new StdioClientTransport({ command: abx, args: ['--provider', 'local-process', 'mcp', 'start'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-epp', version: '1' });
  await c.connect(transport);
  try {
    const w = await c.callTool({ name: 'write_file', arguments: { sandbox_id: id, path: '/app/note.txt', content: 'héllo' } });
    assert.equal(w.structuredContent.bytes_written, 6, JSON.stringify(w));
    assert.equal((await c.callTool({ name: 'read_file', arguments: { sandbox_id: id, path: '/app/note.txt' } })).structuredContent.content, 'héllo');
    const files = (await c.callTool({ name: 'list_files', arguments: { sandbox_id: id, path: '/app' } })).structuredContent.files;
    assert.ok(files.some((f) => f.name === 'note.txt' && f.type === 'file' && f.size === 6));
    assert.equal((await c.callTool({ name: 'run_command', arguments: { sandbox_id: id, command: 'cat note.txt' } })).structuredContent.stdout, 'héllo');
  } finally {
    await c.close();
  }
  abxh(['kill', id]);
});

test('mcp serve (HTTP) over a plugin: create_sandbox, run_command, write and read a file, list, kill', async () => {
  abxh(['provider', 'install', path.join(root, 'providers/local-process'), '--yes', '--force']);
  const srv = await startHttpServer(['--no-auth'], { env: H.env, serveArgs: ['--provider', 'local-process', 'mcp', 'serve'] });
  const c = new Client({ name: 'abx-epp', version: '1' });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(srv.url)));
    const made = (await c.callTool({ name: 'create_sandbox', arguments: {} })).structuredContent;
    assert.match(made.sandbox_id, /^local-process:lp/, JSON.stringify(made));
    assert.equal((await c.callTool({ name: 'run_command', arguments: { command: 'echo over-http' } })).structuredContent.stdout, 'over-http\n');
    await c.callTool({ name: 'write_file', arguments: { path: '/app/h.txt', content: 'x' } });
    assert.equal((await c.callTool({ name: 'read_file', arguments: { path: '/app/h.txt' } })).structuredContent.content, 'x');
    const listed = (await c.callTool({ name: 'list_sandboxes', arguments: {} })).structuredContent;
    assert.ok(JSON.stringify(listed).includes(made.sandbox_id));
    const killed = await c.callTool({ name: 'kill_sandbox', arguments: { sandbox_id: made.sandbox_id } });
    assert.notEqual(killed.isError, true, JSON.stringify(killed));
  } finally {
    await c.close();
    await stopServer(srv);
  }
});
