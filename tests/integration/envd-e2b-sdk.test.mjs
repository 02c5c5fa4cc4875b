// envd-e2b-sdk.test.mjs: the shim's data plane driven by E2B's own SDK (the
// `e2b` npm package, a client we did not write). The SDK runs in its debug
// mode, where it talks to envd at http://localhost:49983 without a control
// plane; a small local proxy forwards that port to the sandbox's Unix socket
// and adds the access token, as E2B's edge proxy would.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { abx, runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-e2b');
let id, proxy, proxyCI, Sandbox, CommandExitError;

before(async () => {
  ({ Sandbox, CommandExitError } = await import('e2b'));
  const r = runAbx(['create', '--template', 'code-interpreter-v1', '--timeout', '300', '--env', 'FROM_CREATE=yes'], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
  id = r.stdout.trim().replace(/^local:/, '');
  const dir = path.join(H.home, 'sandboxes', id);
  const token = fs.readFileSync(path.join(dir, 'token'), 'utf8');
  const socketPath = path.join(dir, 'envd.sock');
  proxy = http.createServer((req, res) => {
    const up = http.request({ socketPath, path: req.url, method: req.method,
      headers: { ...req.headers, 'x-access-token': token } }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on('error', () => { res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  await new Promise((resolve, reject) => { proxy.once('error', reject); proxy.listen(49983, '127.0.0.1', resolve); });
  // the code interpreter's port (49999) reaches the same shim, which serves /execute and /contexts
  proxyCI = http.createServer(proxy.listeners('request')[0]);
  await new Promise((resolve, reject) => { proxyCI.once('error', reject); proxyCI.listen(49999, '127.0.0.1', resolve); });
  process.env.E2B_DEBUG = 'true';
  process.env.E2B_API_KEY = 'e2b_' + '0'.repeat(40);
});

after(() => {
  proxy?.close();
  proxyCI?.close();
  H.cleanup();
});

test('commands.run: output, exit code, user, cwd, envs', async () => {
  const sbx = await Sandbox.create();
  const r = await sbx.commands.run('echo hello; id -un; echo $FROM_CREATE');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'hello\nuser\nyes\n');
  const root = await sbx.commands.run('id -u; pwd', { user: 'root', cwd: '/tmp', envs: { A: 'b' } });
  assert.equal(root.stdout, '0\n/tmp\n');
  await assert.rejects(sbx.commands.run('echo bad >&2; exit 3'), (e) => {
    assert.ok(e instanceof CommandExitError);
    assert.equal(e.exitCode, 3);
    assert.equal(e.stderr, 'bad\n');
    return true;
  });
  const chunks = [];
  await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.1; done', { onStdout: (d) => chunks.push(d) });
  assert.equal(chunks.join(''), '1\n2\n3\n');
});

test('background commands: list, stdin, kill, wait', async () => {
  const sbx = await Sandbox.create();
  const h = await sbx.commands.run('read line; echo got $line', { background: true, stdin: true });
  const listed = await sbx.commands.list();
  assert.ok(listed.some((p) => p.pid === h.pid));
  await sbx.commands.sendStdin(h.pid, 'abc\n');
  const done = await h.wait();
  assert.equal(done.stdout, 'got abc\n');
  const sleeper = await sbx.commands.run('sleep 60', { background: true });
  assert.equal(await sbx.commands.kill(sleeper.pid), true);
  await assert.rejects(sleeper.wait());
});

test('files: write, read (text and bytes), list, exists, makeDir, rename, remove', async () => {
  const sbx = await Sandbox.create();
  await sbx.files.write('/app/e2b/hello.txt', 'from the e2b sdk');
  assert.equal(await sbx.files.read('/app/e2b/hello.txt'), 'from the e2b sdk');
  const bytes = new Uint8Array(70000).map((_, i) => (i * 7) & 0xff);
  await sbx.files.write('/app/e2b/data.bin', bytes.buffer);
  const back = await sbx.files.read('/app/e2b/data.bin', { format: 'bytes' });
  assert.deepEqual(Buffer.from(back), Buffer.from(bytes));
  const entries = await sbx.files.list('/app/e2b');
  assert.deepEqual(entries.map((e) => e.name).sort(), ['data.bin', 'hello.txt']);
  assert.equal(await sbx.files.exists('/app/e2b/hello.txt'), true);
  assert.equal(await sbx.files.exists('/app/e2b/nope'), false);
  assert.equal(await sbx.files.makeDir('/app/e2b/sub'), true);
  assert.equal(await sbx.files.makeDir('/app/e2b/sub'), false);
  await sbx.files.rename('/app/e2b/hello.txt', '/app/e2b/sub/renamed.txt');
  assert.equal(await sbx.files.read('/app/e2b/sub/renamed.txt'), 'from the e2b sdk');
  await sbx.files.remove('/app/e2b');
  assert.equal(await sbx.files.exists('/app/e2b'), false);
});

test('E2B code interpreter (@e2b/code-interpreter): runCode keeps state, reports errors, contexts per language', async () => {
  const { Sandbox: CodeSandbox } = await import('@e2b/code-interpreter');
  const sbx = await CodeSandbox.create();
  let e = await sbx.runCode('x = 40\nprint("hi")');
  assert.deepEqual(e.logs.stdout, ['hi\n']);
  e = await sbx.runCode('x + 2');
  assert.equal(e.results[0].text, '42');
  assert.equal(e.error, undefined);
  e = await sbx.runCode('1/0');
  assert.equal(e.error.name, 'ZeroDivisionError');
  assert.match(e.error.traceback, /ZeroDivisionError/);
  e = await sbx.runCode('x');
  assert.equal(e.results[0].text, '40', 'the kernel survived the error');
  e = await sbx.runCode('import os\nos.environ.get("CELL_VAR")', { envs: { CELL_VAR: 'only-here' } });
  assert.equal(e.results[0].text, "'only-here'");
  e = await sbx.runCode('os.environ.get("CELL_VAR")');
  assert.equal(e.results.length, 0, 'a per-cell variable outlived its cell');
  const ctx = await sbx.createCodeContext({ language: 'javascript' });
  e = await sbx.runCode('let a = 20; a * 2', { context: ctx });
  assert.equal(e.results[0].text, '40');
  e = await sbx.runCode('a + 1', { context: ctx });
  assert.equal(e.results[0].text, '21');
  const contexts = await sbx.listCodeContexts();
  assert.ok(contexts.some((c) => c.id === ctx.id && c.language === 'javascript'));
  await sbx.removeCodeContext(ctx);
  assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
});

test('one notebook per sandbox: MCP\'s run_code and E2B\'s runCode share variables; E2B gets rich results (png, html)', async () => {
  const { Sandbox: CodeSandbox } = await import('@e2b/code-interpreter');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const mcp = new Client({ name: 'abx-e2b', version: '1' });
  await mcp.connect(new StdioClientTransport({ command: abx, args: ['mcp', 'start'], env: H.env, stderr: 'pipe' }));
  try {
    const mcpRun = async (code) => (await mcp.callTool({ name: 'run_code', arguments: { sandbox_id: `local:${id}`, code } }, undefined, { timeout: 60000 })).structuredContent;
    assert.equal((await mcpRun('from_mcp = "set by MCP"\nfrom_mcp')).result, "'set by MCP'");
    const sbx = await CodeSandbox.create();
    let e = await sbx.runCode('from_mcp');
    assert.equal(e.results[0].text, "'set by MCP'");
    await sbx.runCode('from_e2b = 7');
    assert.equal((await mcpRun('from_e2b * 6')).result, '42');
    e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()');
    assert.equal(e.error, undefined, JSON.stringify(e.error));
    assert.equal(e.results.length, 1);
    assert.ok(Buffer.from(e.results[0].png, 'base64').subarray(1, 4).equals(Buffer.from('PNG')));
    e = await sbx.runCode('import pandas as pd\npd.DataFrame({"a": [1]})');
    assert.match(e.results[0].html, /<table/);
    assert.match(e.results[0].text, /a\n0\s+1/);
  } finally {
    await mcp.close();
  }
});

test('pty.create: a terminal with input, resize and Ctrl-C, as E2B\'s SDK drives it', async () => {
  const sbx = await Sandbox.create();
  let out = '';
  const waitFor = async (re, ms = 15000) => {
    const end = Date.now() + ms;
    while (!re.test(out)) {
      if (Date.now() > end) throw new Error(`no ${re} in ${JSON.stringify(out.slice(-500))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const h = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { out += Buffer.from(d).toString(); } });
  const type = (text) => sbx.pty.sendInput(h.pid, new TextEncoder().encode(text));
  await type('test -t 0 && test -t 1 && echo "is a ter""minal"; stty size; echo "term=$TERM"\n');
  await waitFor(/is a terminal/);
  await waitFor(/[\r\n]24 80\r?\n/);
  await waitFor(/term=xterm-256color/);
  await sbx.pty.resize(h.pid, { cols: 132, rows: 40 });
  await type('stty size\n');
  await waitFor(/[\r\n]40 132\r?\n/);
  await type('sleep 60\n');
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  await type('\x03'); // Ctrl-C reaches the sleep through the terminal's line discipline
  await type('echo "after ""ctrl-c"\n');
  await waitFor(/after ctrl-c/);
  assert.ok(Date.now() - t0 < 10000);
  await type('exit 7\n');
  const r = await h.wait().catch((e) => e);
  assert.equal(r.exitCode, 7);
});

test('files.watchDir: create, write, rename, remove and chmod events, recursive into new directories, until stopped', async () => {
  const sbx = await Sandbox.create();
  await sbx.commands.run('rm -rf /app/w && mkdir -p /app/w/old');
  const events = [];
  const h = await sbx.files.watchDir('/app/w', (e) => events.push(`${e.type} ${e.name}`), { recursive: true });
  const seen = async (want) => {
    const end = Date.now() + 10000;
    while (!events.includes(want)) {
      if (Date.now() > end) throw new Error(`no "${want}" in ${JSON.stringify(events)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await sbx.files.write('/app/w/a.txt', 'one');
  await seen('create a.txt');
  await seen('write a.txt');
  await sbx.commands.run('chmod 600 /app/w/a.txt; mv /app/w/a.txt /app/w/b.txt');
  await seen('chmod a.txt');
  await seen('rename a.txt');
  await seen('create b.txt');
  await sbx.commands.run('mkdir /app/w/sub; sleep 0.3; echo x > /app/w/sub/deep.txt; echo y > /app/w/old/in-old.txt');
  await seen('create sub');
  await seen('create sub/deep.txt');
  await seen('create old/in-old.txt');
  await sbx.files.remove('/app/w/b.txt');
  await seen('remove b.txt');
  await h.stop();
  const count = events.length;
  await sbx.files.write('/app/w/after.txt', 'late');
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(events.length, count, 'events came after stop');
  // a directory that does not exist is an error at once
  await assert.rejects(sbx.files.watchDir('/app/nope', () => {}), (e) => { assert.match(String(e), /not.found|no such/i); return true; });
});
