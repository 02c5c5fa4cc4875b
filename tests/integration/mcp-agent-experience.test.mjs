// mcp-agent-experience.test.mjs: what got in an agent's way (issue 9), each
// checked through the official SDK client (STDIO and HTTP) or the raw wire:
// one content limit that holds on both transports, an over-long request
// answered with its id (not left to time out), an image sent once, and a
// closed pipe ending `abx exec`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { abx, abxForOtherUsers, root, runAbx, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-agent');
after(() => H.cleanup());
const MIB = 1 << 20;

async function stdioClient() {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'base'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(transport);
  return c;
}

async function httpClient(url) {
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

async function transfers(c, label) {
  const big = Buffer.alloc(7 * MIB, 7);
  big.write('head', 0);
  big.write('tail', big.length - 4);
  const up = await c.callTool({ name: 'upload_file', arguments: { path: '/app/big.bin', content_base64: big.toString('base64') } }, undefined, { timeout: 120000 });
  assert.notEqual(up.isError, true, `${label}: ${JSON.stringify(up).slice(0, 300)}`);
  assert.equal(up.structuredContent.bytes_written, big.length);
  const down = await c.callTool({ name: 'download_file', arguments: { path: '/app/big.bin' } }, undefined, { timeout: 120000 });
  assert.equal(Buffer.from(down.structuredContent.content_base64, 'base64').compare(big), 0, label);
  // one byte more is a tool error naming the field, at once
  const over = await c.callTool({ name: 'upload_file', arguments: { path: '/app/over.bin', content_base64: Buffer.alloc(7 * MIB + 3).toString('base64') } }, undefined, { timeout: 60000 });
  assert.equal(over.isError, true, label);
  assert.equal(over.structuredContent.error.field, 'content_base64');
}

test('the content limit (7 MiB) holds on STDIO and on HTTP, within what the official client accepts', { timeout: 240000 }, async () => {
  const s = await stdioClient();
  try {
    await transfers(s, 'stdio');
  } finally {
    await s.close();
  }
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const h = await httpClient(srv.url);
    await transfers(h, 'http');
    await h.close();
  } finally {
    await stopServer(srv);
  }
});

test('a request past the message limit is answered with its id, at once', { timeout: 120000 }, async () => {
  // through the SDK: a 13 MiB upload is a 17+ MiB line; the call fails fast with -32600
  const s = await stdioClient();
  try {
    const t0 = Date.now();
    await assert.rejects(
      s.callTool({ name: 'upload_file', arguments: { path: '/app/x', content_base64: Buffer.alloc(13 * MIB).toString('base64') } }, undefined, { timeout: 60000 }),
      (e) => { assert.equal(e.code, -32600, String(e)); return true; });
    assert.ok(Date.now() - t0 < 30000);
    await s.ping();
  } finally {
    await s.close();
  }
  // on the raw wire: the id before the big member, and the id as the last member
  const child = spawn(abx, ['mcp', 'start', '--template', 'base'], { env: H.env, stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = [];
  let buf = '';
  child.stdout.on('data', (d) => { buf += d; let nl; while ((nl = buf.indexOf('\n')) >= 0) { replies.push(JSON.parse(buf.slice(0, nl))); buf = buf.slice(nl + 1); } });
  const pad = 'x'.repeat(17 * MIB);
  child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n');
  child.stdin.write(`{"jsonrpc":"2.0","id":"first","method":"ping","params":{"pad":"${pad}"}}\n`);
  child.stdin.write(`{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/app/a","content":"${pad}"}},"jsonrpc":"2.0","id":77}\n`);
  child.stdin.write(`{"method":"ping","params":{"pad":"${pad}","id":5},"jsonrpc":"2.0"}\n`);
  child.stdin.end();
  await new Promise((r) => child.on('close', r));
  const errs = replies.filter((r) => r.error);
  assert.deepEqual(errs.map((r) => [r.id, r.error.code]), [['first', -32600], [77, -32600], [null, -32600]]);
});

test('download_file sends an image once (HTTP)', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const h = await httpClient(srv.url);
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000' + '1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex');
    await h.callTool({ name: 'upload_file', arguments: { path: '/app/p.png', content_base64: png.toString('base64') } });
    const r = await h.callTool({ name: 'download_file', arguments: { path: '/app/p.png' } });
    const b64 = png.toString('base64');
    const copies = JSON.stringify(r.content).split(b64).length - 1;
    assert.equal(copies, 1, 'the image bytes appear more than once in content');
    assert.equal(r.structuredContent.content_base64, b64);
    await h.close();
  } finally {
    await stopServer(srv);
  }
});

test('abx exec ID yes | head -1 ends at once: the command is killed, abx exits 141', () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    const t0 = Date.now();
    const b = spawnBash(`"${abx}" exec ${id} yes | head -1; echo "status=\${PIPESTATUS[0]}"`);
    assert.equal(b.stdout, 'y\nstatus=141\n', b.stderr);
    assert.ok(Date.now() - t0 < 20000);
    assert.equal(runAbx(['exec', id, 'ps -e -o comm= | grep -cx yes || true'], { env: H.env }).stdout.trim(), '0');
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

function spawnBash(script) {
  return spawnSync('bash', ['-c', script], { env: H.env, encoding: 'utf8', timeout: 30000 });
}

test('validation errors name the field and the rule it broke, never the value, with a hint for a model', async () => {
  const s = await stdioClient();
  try {
    const call = (name, args) => s.callTool({ name, arguments: args });
    const cases = [
      ['run_command', { command: 'true', timeout: 99999999 }, 'timeout', /timeout must be an integer from 1 to 86400/],
      ['create_sandbox', { template: 'nosuch-template-x' }, 'template', /template must be a template the provider has: base, code-interpreter-v1 or one 'abx template list' shows/],
      ['create_sandbox', { memory: 8 }, 'memory', /memory must be an integer from 16 to \d+/],
      ['run_code', { code: '1', language: 'cobol-x' }, 'language', /language must be one of python, javascript/],
      ['read_file', { path: '' }, 'path', /path must not be empty/],
      ['create_sandbox', { envs: { '1BAD': 'v-secret-x' } }, 'envs', /envs must be an object/],
      ['get_background_task', { task_id: 'abc-x' }, 'task_id', /task_id must be the task_id start_background_task returned/],
    ];
    for (const [name, args, field, message] of cases) {
      const r = await call(name, args);
      assert.equal(r.isError, true, name);
      const e = r.structuredContent.error;
      assert.equal(e.code, 'E8001');
      assert.equal(e.field, field);
      assert.match(e.message, message);
      assert.match(e.hint, /inputSchema/);
      assert.doesNotMatch(e.hint, /--help/);
      assert.ok(!JSON.stringify(r).includes('-x'), `${name}: the value was echoed`);
    }
    // a numeric task_id, as the MCP Inspector sends it, is a task id
    const t = (await call('start_background_task', { command: 'sleep 0.1; echo bg' })).structuredContent;
    const g = await call('get_background_task', { task_id: Number(t.task_id), wait: 5 });
    assert.notEqual(g.isError, true, JSON.stringify(g));
    assert.equal(g.structuredContent.task_id, t.task_id);
  } finally {
    await s.close();
  }
});

test('no error hint points at a command abx does not have', () => {
  // docs/errors.md is the error table (tests/unit/test-errors.c keeps it equal to the binary's)
  const doc = fs.readFileSync(path.join(root, 'docs/errors.md'), 'utf8');
  const verbs = runAbx(['--help'], { env: H.env }).stdout;
  for (const m of doc.matchAll(/'abx ([a-z][a-z-]*)/g)) assert.match(verbs, new RegExp(`\\b${m[1]}\\b`), `a hint cites 'abx ${m[1]}'`);
  assert.doesNotMatch(doc, /abx providers/);
});

test('mcp serve refuses a port past 65535 instead of listening on a wrapped one', () => {
  for (const listen of ['127.0.0.1:99999', '127.0.0.1:-1', '127.0.0.1:http']) {
    const r = runAbx(['mcp', 'serve', '--no-auth', '--listen', listen], { env: H.env, timeout: 10000 });
    assert.notEqual(r.status, 0, listen);
    assert.equal(r.signal, null, `${listen}: it listened`);
    assert.match(r.stderr, /E8001: --listen: the port must be a number from 0 to 65535/);
  }
});

for (const transport of ['stdio', 'http']) {
  test(`an ended default sandbox is replaced on the next call, which says so (${transport})`, { timeout: 60000 }, async () => {
    let srv, c;
    if (transport === 'stdio') c = await stdioClient();
    else { srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env }); c = await httpClient(srv.url); }
    try {
      const first = (await c.callTool({ name: 'run_command', arguments: { command: 'hostname' } })).structuredContent;
      const old = first.stdout.trim();
      assert.equal(first.sandbox_replaced, undefined);
      // killed from outside (as a timeout would end it)
      assert.equal(runAbx(['kill', old], { env: H.env }).status, 0);
      const r = await c.callTool({ name: 'run_command', arguments: { command: 'hostname' } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      assert.equal(r.structuredContent.sandbox_replaced, true);
      assert.match(r.structuredContent.sandbox_replaced_reason, /had ended/);
      assert.notEqual(r.structuredContent.stdout.trim(), old);
      assert.match(r.content.at(-1).text, /^sandbox_replaced: true$/m);
      // and the one after is an ordinary call on the new default
      const again = (await c.callTool({ name: 'run_command', arguments: { command: 'hostname' } })).structuredContent;
      assert.equal(again.sandbox_replaced, undefined);
      assert.equal(again.stdout, r.structuredContent.stdout);
    } finally {
      await c.close();
      if (srv) await stopServer(srv);
    }
  });
}

test('a kernel that dies is reported as the kernel\'s death, not the sandbox\'s, and the next result says state was reset', { timeout: 120000 }, async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'code-interpreter-v1'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(transport);
  const run = async (code) => (await c.callTool({ name: 'run_code', arguments: { code } }, undefined, { timeout: 100000 })).structuredContent;
  try {
    await run('x = 41');
    let r = await run('import os; os._exit(3)');
    assert.equal(r.error, undefined, JSON.stringify(r));
    assert.equal(r.kernel_died, true);
    assert.equal(r.exit_code, 3);
    assert.match(r.stderr, /KernelDied: the python kernel exited with status 3/);
    r = await run('x');
    assert.equal(r.state_reset, true);
    assert.match(r.state_reset_reason, /gone/);
    assert.match(r.stderr, /NameError/);
    r = await run('y = 1\ny');
    assert.equal(r.state_reset, undefined, 'only the first call after the death says so');
    // killed by the memory limit (the default sandbox has 512 MiB)
    r = await run('b = bytearray(2 << 30)');
    assert.equal(r.kernel_died, true, JSON.stringify(r));
    assert.match(r.stderr, /killed by signal 9 by the sandbox's memory limit \(512 MiB\)/);
    assert.equal((await c.callTool({ name: 'run_command', arguments: { command: 'echo alive' } })).structuredContent.stdout, 'alive\n');
  } finally {
    await c.close();
  }
});

test('abx exec: stdin passes through, the default directory is /app, and a negative timeout is a range error', () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    assert.equal(spawnBash(`echo data | "${abx}" exec ${id} 'wc -c'`).stdout, '5\n');
    assert.equal(spawnBash(`head -c 3000000 /dev/zero | "${abx}" exec ${id} 'wc -c'`).stdout, '3000000\n');
    // a command that stops reading does not hang on an endless input
    assert.equal(spawnBash(`yes | "${abx}" exec ${id} 'head -c 3 >/dev/null; echo read'`).stdout, 'read\n');
    // --no-stdin leaves a while-read loop's input alone
    assert.equal(spawnBash(`printf 'a\\nb\\n' | while read l; do "${abx}" exec --no-stdin ${id} "echo $l; wc -c"; done`).stdout, 'a\n0\nb\n0\n');
    assert.equal(runAbx(['exec', id, 'pwd'], { env: H.env }).stdout, '/app\n');
    assert.equal(runAbx(['run', '--', 'pwd'], { env: H.env }).stdout.split('\n').filter((l) => l.startsWith('/')).at(-1), '/app');
    const neg = runAbx(['timeout', id, '-5'], { env: H.env });
    assert.notEqual(neg.status, 0);
    assert.match(neg.stderr, /E8001: timeout: expected a whole number of seconds from 1 to 86400/);
    assert.doesNotMatch(neg.stderr, /unknown flag/);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('abx run says why the sandbox ended when the command did not choose it: the timeout (124), the memory limit (137)', () => {
  let r = runAbx(['run', '--timeout', '1', '--', 'sleep', '30'], { env: H.env });
  assert.equal(r.status, 124);
  assert.match(r.stderr, /E8005: the command ran past --timeout \(1 s\)/);
  r = runAbx(['run', '--memory', '64', '--', 'python3', '-c', 'b = bytearray(300 << 20)'], { env: H.env });
  assert.equal(r.status, 137);
  assert.match(r.stderr, /killed by the memory limit \(--memory 64 MB\)/);
  r = runAbx(['run', '--', 'sh', '-c', 'kill -9 $$'], { env: H.env });
  assert.equal(r.status, 137);
  assert.doesNotMatch(r.stderr, /memory limit|timeout/, 'a kill the command chose is not blamed on a limit');
});

test('errors say what is wrong: an unknown task is not an unknown sandbox, /usr is read-only, a file is not executable', async () => {
  const s = await stdioClient();
  try {
    const call = async (name, args) => (await s.callTool({ name, arguments: args })).structuredContent;
    let r = await call('get_background_task', { task_id: '999999' });
    assert.equal(r.error.code, 'E8026');
    assert.match(r.error.message, /no such background task/);
    // on STDIO (the machine's own user) the detail the CLI prints follows the code's sentence
    assert.match(r.error.message, /^no such background task in this sandbox \(.+\)$/);
    r = await call('write_file', { path: '/usr/bin/evil', content: 'x' });
    assert.equal(r.error.code, 'E8027');
    assert.match(r.error.hint, /\/app/);
    assert.doesNotMatch(r.error.hint, /as root/);
  } finally {
    await s.close();
  }
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    runAbx(['exec', id, 'printf "echo hi" > /app/script.sh'], { env: H.env });
    const r = runAbx(['logs', id, '999999'], { env: H.env });
    assert.match(r.stderr, /E8026/);
    const w = runAbx(['files', 'put', id, '/etc/hostname', '/usr/x'], { env: H.env });
    assert.match(w.stderr, /E8027/);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('one exit status per error category across verbs: 2 for a wrong value or usage, 1 for the rest, 125 for run/exec', () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim();
  try {
    for (const args of [['timeout', id, '0'], ['create', '--memory', '5'], ['timeout', id, '-5'], ['files', 'ls'], ['nosuchverb'], ['list', '--limit', '0']]) {
      assert.equal(runAbx(args, { env: H.env }).status, 2, args.join(' '));
    }
    assert.equal(runAbx(['kill', 'local:i' + '0'.repeat(20)], { env: H.env }).status, 1);
    assert.equal(runAbx(['info', 'local:i' + '0'.repeat(20)], { env: H.env }).status, 1);
    assert.equal(runAbx(['run', '--memory', '5', '--', 'true'], { env: H.env }).status, 125);
    assert.equal(runAbx(['exec', id, '--timeout', '0', 'true'], { env: H.env }).status, 125);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('list_files shows symlinks as symlinks and takes a depth', async () => {
  const s = await stdioClient();
  try {
    const call = async (name, args) => (await s.callTool({ name, arguments: args })).structuredContent;
    await call('run_command', { command: 'mkdir -p /app/t/sub/deep && echo x > /app/t/sub/deep/f && ln -s sub /app/t/link && ln -s /nowhere /app/t/dangling' });
    let r = await call('list_files', { path: '/app/t' });
    const by = Object.fromEntries(r.files.map((e) => [e.name, e]));
    assert.deepEqual([by.link.type, by.link.target], ['symlink', 'sub']);
    assert.deepEqual([by.dangling.type, by.dangling.target], ['symlink', '/nowhere']);
    assert.equal(by.sub.type, 'dir');
    assert.ok(!r.files.some((e) => e.path === '/app/t/sub/deep/f'));
    r = await call('list_files', { path: '/app/t', depth: 3 });
    assert.ok(r.files.some((e) => e.path === '/app/t/sub/deep/f' && e.type === 'file'), JSON.stringify(r.files));
    assert.equal((await s.callTool({ name: 'list_files', arguments: { depth: 9 } })).structuredContent.error.field, 'depth');
  } finally {
    await s.close();
  }
});

test('kernels start from files: their command lines are one short line, not the kernel\'s source', async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'code-interpreter-v1'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(transport);
  try {
    await c.callTool({ name: 'run_code', arguments: { code: '1' } });
    await c.callTool({ name: 'run_code', arguments: { code: '1', language: 'javascript' } });
    const ps = (await c.callTool({ name: 'run_command', arguments: { command: 'ps -eo args= | grep -E "^(python3|node) "' } })).structuredContent.stdout;
    const lines = ps.trim().split('\n');
    assert.equal(lines.length, 2, ps.slice(0, 500));
    for (const l of lines) assert.ok(l.length < 120, `a kernel's command line is ${l.length} bytes`);
  } finally {
    await c.close();
  }
});

test('abx doctor says what works here as this user: everything as root, the cgroup failure as nobody', () => {
  const r = runAbx(['--json', 'doctor'], { env: H.env });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.sandboxes_work, true);
  const names = doc.checks.map((c) => c.check);
  for (const n of ['namespaces', 'user namespaces', 'seccomp', 'cgroups', 'host ids', 'state directory', 'libcurl', 'libmicrohttpd', 'sandbox networking', 'start speed']) assert.ok(names.includes(n), n);
  assert.match(doc.checks.find((c) => c.check === 'start speed').detail, /favordynmods/);
  assert.ok(doc.checks.every((c) => c.status === 'ok'), JSON.stringify(doc.checks));
  // an unprivileged user, as an IDE would run it
  const home = fs.mkdtempSync(path.join('/tmp', 'abx-doctor-'));
  fs.chownSync(home, 65534, 65534);
  const copy = abxForOtherUsers(); // the checkout may be where nobody cannot reach
  try {
    const u = spawnSync('runuser', ['-u', 'nobody', '--', copy.bin, '--json', 'doctor'], { env: { ...process.env, ABX_HOME: home }, encoding: 'utf8' });
    assert.equal(u.error, undefined);
    assert.ok(u.stdout, u.stderr);
    const d = JSON.parse(u.stdout);
    const by = Object.fromEntries(d.checks.map((c) => [c.check, c]));
    assert.equal(by['host ids'].status, 'warn');
    assert.equal(by['sandbox networking'].status, 'warn');
    assert.match(by['sandbox networking'].detail, /root.*E8010/);
    if (!process.env.ABX_CGROUP_PARENT) {
      assert.equal(by.cgroups.status, 'fail');
      assert.match(by.cgroups.detail, /ABX_CGROUP_PARENT|root/);
      assert.equal(d.sandboxes_work, false);
      assert.equal(u.status, 1);
    }
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
    copy.cleanup();
  }
});

test('one model-sized output policy: head and tail of each stream, what was left out, and a file in the sandbox with all of it', { timeout: 600000 }, async () => {
  for (const transport of ['stdio', 'http']) {
    let srv = null, c;
    if (transport === 'stdio') c = await stdioClient();
    else {
      srv = await startHttpServer(['--no-auth', '--template', 'code-interpreter-v1'], { env: H.env });
      c = await httpClient(srv.url);
    }
    try {
      const total = Buffer.byteLength(Array.from({ length: 400000 }, (_, i) => `${i + 1}\n`).join(''));
      // generous timeouts: the policy is under test, not the speed (ASan on a loaded VM took > 30 s)
      const r = await c.callTool({ name: 'run_command', arguments: { command: 'seq 1 400000', timeout: 110 } }, undefined, { timeout: 120000 });
      const sc = r.structuredContent;
      assert.equal(sc.exit_code, 0, transport);
      assert.equal(sc.truncated, true);
      assert.equal(sc.stdout_bytes, total);
      // 32 KiB by default: the first and last 16 KiB, and a note between them
      assert.ok(sc.stdout.length < 33 * 1024, `${transport}: ${sc.stdout.length} chars`);
      assert.ok(sc.stdout.startsWith('1\n2\n3\n'));
      assert.ok(sc.stdout.endsWith('399999\n400000\n'));
      assert.match(sc.stdout, /\[abx: output truncated: \d+ bytes left out here; showing the first 16384 and the last 16384 of \d+ bytes; the whole output is in \/tmp\/\.abx-output\/\d+\.stdout inside the sandbox/);
      // the whole result stays small: the text copy is not a second megabyte
      assert.ok(JSON.stringify(r).length < 100 * 1024, `${transport}: ${JSON.stringify(r).length} bytes`);
      // and the whole output is where the note says, readable with the tools
      assert.match(sc.stdout_path, /^\/tmp\/\.abx-output\/\d+\.stdout$/);
      const wc = await c.callTool({ name: 'run_command', arguments: { command: `wc -c < ${sc.stdout_path}; tail -n 1 ${sc.stdout_path}` } });
      assert.equal(wc.structuredContent.stdout, `${total}\n400000\n`);
      // small output: shown whole, nothing saved
      const small = await c.callTool({ name: 'run_command', arguments: { command: 'echo hi' } });
      assert.equal(small.structuredContent.stdout, 'hi\n');
      assert.equal(small.structuredContent.truncated, false);
      assert.equal(small.structuredContent.stdout_path, undefined);
      // run_code follows the same policy, for each language
      for (const [language, code] of [['python', 'for i in range(1, 400001): print(i)'], ['javascript', 'for (let i = 1; i <= 400000; i++) console.log(i)']]) {
        const rc = await c.callTool({ name: 'run_code', arguments: { language, code, timeout: 110 } }, undefined, { timeout: 120000 });
        const out = rc.structuredContent;
        assert.equal(out.exit_code, 0, `${transport} ${language}: ${JSON.stringify(out).slice(0, 300)}`);
        assert.ok(out.stdout.length < 33 * 1024, `${transport} ${language}: ${out.stdout.length}`);
        assert.ok(out.stdout.startsWith('1\n2\n') && out.stdout.endsWith('400000\n'));
        assert.match(out.stdout, /the whole output is in \/tmp\/\.abx-output\//);
        const back = await c.callTool({ name: 'run_command', arguments: { command: `wc -c < ${out.stdout_path}` } });
        assert.equal(back.structuredContent.stdout, `${total}\n`, `${transport} ${language}`);
      }
    } finally {
      await c.close();
      if (srv) await stopServer(srv);
    }
  }
});

test('the output limit is configurable, and a bad value is said at start', async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'base'], env: { ...H.env, ABX_MCP_OUTPUT_LIMIT: '2048' }, stderr: 'pipe' });
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(transport);
  try {
    const r = await c.callTool({ name: 'run_command', arguments: { command: 'seq 1 10000' } });
    assert.match(r.structuredContent.stdout, /showing the first 1024 and the last 1024 of 48894 bytes/);
  } finally {
    await c.close();
  }
  const bad = runAbx(['mcp', 'start'], { env: { ...H.env, ABX_MCP_OUTPUT_LIMIT: '12' }, input: '' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /ABX_MCP_OUTPUT_LIMIT: must be a number of bytes from 1024 to 1048576/);
});

test('read_file takes offset and length, and shows a large file within the output limit with the offset of the rest', { timeout: 120000 }, async () => {
  const c = await stdioClient();
  try {
    // 200000 bytes: "000000\n000001\n..." (7 bytes a line)
    const w = await c.callTool({ name: 'run_command', arguments: { command: 'seq -f %06g 0 29999 | head -c 200000 > /app/big.txt; wc -c < /app/big.txt' } });
    assert.equal(w.structuredContent.stdout, '200000\n');
    const whole = (await c.callTool({ name: 'read_file', arguments: { path: '/app/big.txt' } })).structuredContent;
    assert.equal(whole.size, 200000);
    assert.equal(whole.truncated, true);
    assert.ok(whole.content.length < 33 * 1024, String(whole.content.length));
    assert.ok(whole.content.startsWith('000000\n000001\n'));
    assert.match(whole.content, /read the part left out with read_file offset=16384 length=N/);
    assert.ok(whole.content.endsWith('028570\n028'));
    const part = (await c.callTool({ name: 'read_file', arguments: { path: '/app/big.txt', offset: 7 * 1000, length: 14 } })).structuredContent;
    assert.deepEqual([part.content, part.offset, part.length, part.size, part.truncated], ['001000\n001001\n', 7000, 14, 200000, false]);
    // an explicit length past the limit is read exactly
    const long = (await c.callTool({ name: 'read_file', arguments: { path: '/app/big.txt', offset: 0, length: 100000 } })).structuredContent;
    assert.equal(long.content.length, 100000);
    // past the end: nothing, and the size
    const past = (await c.callTool({ name: 'read_file', arguments: { path: '/app/big.txt', offset: 300000 } })).structuredContent;
    assert.deepEqual([past.content, past.size, past.length], ['', 200000, 0]);
    // a small file is whole
    await c.callTool({ name: 'write_file', arguments: { path: '/app/s.txt', content: 'héllo' } });
    const small = (await c.callTool({ name: 'read_file', arguments: { path: '/app/s.txt' } })).structuredContent;
    assert.deepEqual([small.content, small.size, small.truncated], ['héllo', 6, false]);
    const bad = await c.callTool({ name: 'read_file', arguments: { path: '/app/s.txt', length: 0 } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.error.field, 'length');
  } finally {
    await c.close();
  }
});

test('tool descriptions tell a model what the sandbox runs and has, its directory and the output limit', async () => {
  const c = await stdioClient();
  try {
    const { tools } = await c.listTools();
    const by = Object.fromEntries(tools.map((t) => [t.name, t.description]));
    assert.match(by.run_code, /\(On base, this host runs python, javascript, shell[;.]/);
    assert.match(by.run_code, /Runs in \/app/);
    assert.match(by.run_code, /A stream over 32768 bytes shows its first and last halves/);
    assert.match(by.run_command, /\(This host has bash, coreutils, python3/);
    assert.match(by.read_file, /over 32768 bytes/);
    assert.ok(!tools.some((t) => /\{[a-z_]+\}/.test(t.description)), 'a placeholder was left in a description');
  } finally {
    await c.close();
  }
});

test('notebook state belongs to the sandbox: a second MCP session reattached to it sees the first one\'s variables; the kernels are the sandbox\'s, one per language', { timeout: 120000 }, async () => {
  const created = runAbx(['create', '--template', 'code-interpreter-v1', '--timeout', '300'], { env: H.env });
  assert.equal(created.status, 0, created.stderr);
  const id = created.stdout.trim();
  try {
    for (const round of [1, 2]) {
      const c = await stdioClient();
      try {
        const run = async (args) => (await c.callTool({ name: 'run_code', arguments: { sandbox_id: id, ...args } }, undefined, { timeout: 60000 })).structuredContent;
        if (round === 1) {
          assert.equal((await run({ code: 'shared = 6 * 7\nshared' })).result, '42');
          assert.equal((await run({ language: 'javascript', code: 'const jsShared = "js"; jsShared' })).result, "'js'");
        } else {
          assert.equal((await run({ code: 'shared' })).result, '42', 'the second session lost the variable');
          assert.equal((await run({ language: 'javascript', code: 'jsShared' })).result, "'js'");
        }
      } finally {
        await c.close();
      }
    }
    // one kernel per language, started from a file (a short command line), owned by the sandbox
    const ps = runAbx(['--json', 'ps', id], { env: H.env });
    assert.equal(ps.status, 0, ps.stderr);
    const kernels = JSON.parse(ps.stdout).filter((p) => /^abx-context-/.test(p.tag));
    assert.equal(kernels.length, 2, ps.stdout);
    for (const k of kernels) assert.ok(k.command.join(' ').length < 120, k.command.join(' '));
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('no kernel outlives its use: on base each call runs in a fresh interpreter that is gone after it', { timeout: 120000 }, async () => {
  const c = await stdioClient(); // --template base
  try {
    const run = async (args) => (await c.callTool({ name: 'run_code', arguments: args }, undefined, { timeout: 60000 })).structuredContent;
    assert.equal((await run({ code: 'v = 1\nv' })).result, '1');
    assert.match((await run({ code: 'v' })).stderr, /NameError/);
    assert.equal((await run({ language: 'javascript', code: '1 + 1' })).result, '2');
    const ps = (await c.callTool({ name: 'run_command', arguments: { command: 'ps -eo args= | grep -cE "^(python3|node) .*_kernel" || true' } })).structuredContent.stdout;
    assert.equal(ps, '0\n');
  } finally {
    await c.close();
  }
});

test('rich results: a matplotlib figure is an image, a DataFrame is text and HTML, display() outputs come in order', { timeout: 180000 }, async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'code-interpreter-v1'], { env: H.env });
  const c = await httpClient(srv.url);
  try {
    const call = (code) => c.callTool({ name: 'run_code', arguments: { code } }, undefined, { timeout: 120000 });
    let r = await call('import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title("squares")\nplt.show()\nprint("drawn")');
    assert.equal(r.structuredContent.exit_code, 0, JSON.stringify(r.structuredContent).slice(0, 600));
    assert.equal(r.structuredContent.stdout, 'drawn\n');
    const images = r.content.filter((b) => b.type === 'image');
    assert.equal(images.length, 1);
    assert.equal(images[0].mimeType, 'image/png');
    assert.ok(Buffer.from(images[0].data, 'base64').subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
    assert.deepEqual(r.structuredContent.results.map((x) => [x.image, x.mime_type, x.is_main_result]), [[0, 'image/png', false]]);
    assert.ok(!JSON.stringify(r.structuredContent).includes(images[0].data.slice(0, 64)), 'the image bytes were sent twice');
    // a figure left open at the end of a cell is shown too
    r = await call('fig = plt.figure()\nplt.bar([1, 2], [3, 4])\nNone');
    assert.equal(r.content.filter((b) => b.type === 'image').length, 1);
    r = await call('import pandas as pd\ndf = pd.DataFrame({"city": ["Oslo", "Lima"], "t": [3, 19]})\ndf');
    const main = r.structuredContent.results.find((x) => x.is_main_result);
    assert.match(main.text, /city\s+t\n0\s+Oslo\s+3/);
    assert.match(main.html, /<table[^>]*class="dataframe"/);
    assert.match(r.structuredContent.result, /Oslo/);
    r = await call('display("first")\ndisplay(df.head(1))\n"last"');
    assert.deepEqual(r.structuredContent.results.map((x) => [x.is_main_result, x.text.split('\n')[0]]), [[false, "'first'"], [false, '   city  t'], [true, "'last'"]]);
  } finally {
    await c.close();
    await stopServer(srv);
  }
});

test('kernels as a model expects them: JS top-level await, import(), redeclared const/let, clean stacks; python input() fails at once; late output is delivered', { timeout: 120000 }, async () => {
  const transport = new StdioClientTransport({ command: abx, args: ['mcp', 'start', '--template', 'code-interpreter-v1'], env: H.env, stderr: 'pipe' });
  const c = new Client({ name: 'abx-agent', version: '1' });
  await c.connect(transport);
  const run = async (language, code, extra = {}) => (await c.callTool({ name: 'run_code', arguments: { language, code, ...extra } }, undefined, { timeout: 60000 })).structuredContent;
  try {
    let r = await run('javascript', 'const n = await Promise.resolve(20); n + 1');
    assert.equal(r.result, '21', JSON.stringify(r));
    r = await run('javascript', 'const n = 5; let m = n * 2; m');
    assert.equal(r.result, '10', 'const/let could not be declared again');
    r = await run('javascript', 'const { sep } = await import("node:path"); sep');
    assert.equal(r.result, "'/'");
    r = await run('javascript', 'const fs = require("fs"); typeof fs.readFileSync');
    assert.equal(r.result, "'function'");
    r = await run('javascript', 'function boom() { throw new TypeError("bad value") }\nboom()');
    assert.equal(r.exit_code, 1);
    assert.match(r.stderr, /TypeError: bad value\n\s+at boom/);
    assert.ok(!/node_kernel|node:internal|node:vm/.test(r.stderr), r.stderr);
    // a timer that fires within the grace period (0.5 s) belongs to its cell; a later one to the next
    r = await run('javascript', 'setTimeout(() => console.log("from a timer"), 50); "returned"');
    assert.equal(r.result, "'returned'");
    assert.equal(r.stdout, 'from a timer\n', 'output printed right after the cell was not the cell\'s');
    r = await run('javascript', 'setTimeout(() => console.log("from a later timer"), 1500); "returned"');
    assert.equal(r.stdout, '');
    await new Promise((res) => setTimeout(res, 1800));
    r = await run('javascript', '1');
    assert.equal(r.stdout, 'from a later timer\n', 'output printed after the cell was lost');
    const t0 = Date.now();
    r = await run('python', 'name = input("name? ")', { timeout: 30 });
    assert.ok(Date.now() - t0 < 10000, 'input() blocked');
    assert.equal(r.exit_code, 1);
    assert.match(r.stderr, /EOFError: input\(\) is not available/);
    assert.ok(!/python_kernel/.test(r.stderr), r.stderr);
    // within the grace period a thread's output is its cell's; later, the next cell's
    r = await run('python', 'import threading\nthreading.Timer(0.05, lambda: print("from a thread")).start()\n"returned"');
    assert.equal(r.stdout, 'from a thread\n');
    r = await run('python', 'import threading\nthreading.Timer(1.5, lambda: print("from a later thread")).start()\n"returned"');
    assert.equal(r.stdout, '');
    await new Promise((res) => setTimeout(res, 1800));
    r = await run('python', '1');
    assert.equal(r.stdout, 'from a later thread\n');
    // a subprocess does not read the kernel's own channel
    r = await run('python', 'import subprocess\nsubprocess.run(["cat"], capture_output=True, timeout=10).stdout');
    assert.equal(r.result, "b''");
  } finally {
    await c.close();
  }
});

test('mcp install, status and start say when sandboxes cannot be made here as this user, before an IDE finds out', { skip: process.env.ABX_CGROUP_PARENT ? 'a delegated cgroup is set: this user can make sandboxes' : false }, () => {
  const home = fs.mkdtempSync(path.join('/tmp', 'abx-ide-'));
  fs.chownSync(home, 65534, 65534);
  // runuser sets HOME from the password file: env sets it back, as an IDE's environment would
  const copy = abxForOtherUsers(); // the checkout may be where nobody cannot reach
  const asNobody = (args, input) => spawnSync('runuser', ['-u', 'nobody', '--', 'env', `HOME=${home}`, copy.bin, ...args], { env: { ...process.env, ABX_HOME: path.join(home, '.abx') }, encoding: 'utf8', input });
  try {
    const inst = asNobody(['--json', 'mcp', 'install', '--target', 'cursor']);
    assert.equal(inst.status, 0, inst.stderr);
    const doc = JSON.parse(inst.stdout);
    assert.equal(doc.sandboxes_work, false);
    assert.match(doc.host_problems, /cgroups: .*E8007/);
    assert.match(inst.stderr, /warning: as this user \(uid 65534\), sandboxes cannot be made on this host: cgroups/);
    const st = JSON.parse(asNobody(['--json', 'mcp', 'status']).stdout);
    assert.equal(st.sandboxes_work, false);
    assert.equal(st.installations.cursor.installed, true);
    const start = asNobody(['mcp', 'start'], '');
    assert.equal((start.stderr.match(/warning: sandboxes cannot be made here as uid 65534/g) || []).length, 1, start.stderr);
    // as root, nothing to warn about
    const rootStatus = JSON.parse(runAbx(['--json', 'mcp', 'status'], { env: H.env }).stdout);
    assert.equal(rootStatus.sandboxes_work, true);
    assert.equal(rootStatus.host_problems, undefined);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
    copy.cleanup();
  }
});
