// serve-fronts.test.mjs: `abx serve --provider ID` fronts any provider.
// E2B's own JS SDK drives an exec plugin's sandboxes (providers/
// local-process, which has no envd: abx serve answers envd for it through
// libabx) through this machine; and the MCP server over the e2b provider
// asks the remote host, not this machine, which templates exist.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync as runSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, root, privateHome, runAbx, startHttpServer, stopServer } from '../lib/harness.mjs';

const KEY = `e2b_${'a7'.repeat(20)}`;
const homes = [];
after(() => { for (const h of homes) h.cleanup(); });

test('abx serve --provider local-process: E2B\'s SDK creates, runs a command, writes and reads files, lists and kills', async () => {
  const H = privateHome('abx-serve-plugin');
  homes.push(H);
  const inst = runAbx(['provider', 'install', path.join(root, 'providers/local-process'), '--yes'], { env: H.env });
  assert.equal(inst.status, 0, inst.stderr);
  const srv = await startHttpServer([], { env: { ...H.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['--provider', 'local-process', 'serve'] });
  assert.match(srv.stderr(), /provider local-process/);
  const base = `http://127.0.0.1:${srv.port}`;
  const opts = { apiUrl: base, sandboxUrl: base, apiKey: KEY };
  Object.assign(process.env, { E2B_API_URL: base, E2B_SANDBOX_URL: base, E2B_API_KEY: KEY });
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000, metadata: { via: 'plugin' }, ...opts });
  try {
    assert.ok(sbx.sandboxId.length > 0);
    const r = await sbx.commands.run('echo hello from $(basename $(pwd)); echo oops >&2; exit 3').catch((e) => e);
    assert.equal(r.exitCode, 3, String(r));
    assert.equal(r.stdout, 'hello from user\n');
    assert.equal(r.stderr, 'oops\n');
    const streamed = [];
    const ok = await sbx.commands.run('for i in 1 2 3; do echo $i; done', { onStdout: (d) => streamed.push(d) });
    assert.equal(ok.exitCode, 0);
    assert.equal(streamed.join(''), '1\n2\n3\n');
    await sbx.files.write('/app/notes.txt', 'written through serve\n');
    assert.equal(await sbx.files.read('/app/notes.txt'), 'written through serve\n');
    assert.ok((await sbx.files.list('/app')).some((e) => e.name === 'notes.txt'));
    // relative paths are the user's home, where commands start (the plugin maps both under its directory)
    await sbx.files.write('home.txt', 'at home\n');
    assert.equal((await sbx.commands.run('cat home.txt')).stdout, 'at home\n');
    assert.equal(await sbx.files.exists('/app/nope'), false);
    // a background command: listed while it runs, killed by the SDK
    const bg = await sbx.commands.run('echo started; sleep 30', { background: true });
    assert.ok(bg.pid > 0);
    assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid), 'the background command is not listed');
    assert.equal(await bg.kill(), true);
    const ended = await bg.wait().catch((e) => e);
    assert.notEqual(ended.exitCode, 0, 'a killed command reports no success');
    assert.ok(!(await sbx.commands.list()).some((p) => p.pid === bg.pid), 'the killed command is still listed');
    const info = await sbx.getInfo();
    assert.deepEqual(info.metadata, { via: 'plugin' }, 'the tenant and notes keys show through');
    const listed = await Sandbox.list({ ...opts }).nextItems();
    assert.ok(listed.some((s) => s.sandboxId === sbx.sandboxId));
    // envd for such a sandbox still needs its token
    const resp = await fetch(`${base}/files?path=/app/notes.txt&username=user`, { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } });
    assert.equal(resp.status, 401);
  } finally {
    await sbx.kill();
  }
  assert.equal(await sbx.isRunning(), false);
  await stopServer(srv);
});

test('create_sandbox {template: "only-remote"} over --provider e2b: the remote host has it, this machine does not', async () => {
  const S = privateHome('abx-serve-tmpl');
  const C = privateHome('abx-serve-tmpl-client');
  homes.push(S, C);
  // a template only the host has: imported into its home from a tar of a tiny root
  const dir = fs.mkdtempSync(path.join(S.home, 'root-'));
  const tar = path.join(S.home, 'root.tar');
  const made = runSync('sh', ['-c', `set -e; d=${dir}; mkdir -p $d/usr/bin $d/etc $d/tmp $d/home/user
    for t in bash sh echo cat; do p=/usr/bin/$t; [ -e $p ] || p=/bin/$t; cp -L $p $d/usr/bin/; for l in $(ldd $p | grep -o '/[^ ]*'); do mkdir -p $d$(dirname $l); cp -L $l $d$l; done; done
    ln -s usr/bin $d/bin
    printf 'root:x:0:0:root:/root:/bin/bash\\nuser:x:1000:1000:user:/home/user:/bin/bash\\n' > $d/etc/passwd
    printf 'root:x:0:\\nuser:x:1000:\\n' > $d/etc/group
    tar -C $d --numeric-owner -cf ${tar} .`], { encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
  const imp = runAbx(['template', 'import', 'only-remote', tar], { env: S.env });
  assert.equal(imp.status, 0, imp.stderr);
  assert.notEqual(runAbx(['template', 'inspect', 'only-remote'], { env: C.env }).status, 0, 'the client machine has it too');
  const srv = await startHttpServer(['--warm', '0'], { env: { ...S.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['serve'] });
  const env = { ...C.env, ABX_SANDBOX_API_KEY: KEY, ABX_SANDBOX_BASE_URL: `http://127.0.0.1:${srv.port}` };
  const c = new Client({ name: 'remote-templates', version: '1' });
  await c.connect(new StdioClientTransport({ command: abx, args: ['--provider', 'e2b', 'mcp', 'start'], env }));
  try {
    const made = await c.callTool({ name: 'create_sandbox', arguments: { template: 'only-remote' } });
    assert.ok(!made.isError, JSON.stringify(made.structuredContent));
    assert.equal(made.structuredContent.template, 'only-remote');
    const ran = await c.callTool({ name: 'run_command', arguments: { command: 'echo from the remote template' } });
    assert.equal(ran.structuredContent.stdout, 'from the remote template\n');
    const none = await c.callTool({ name: 'create_sandbox', arguments: { template: 'no-such-template-here' } });
    assert.equal(none.isError, true);
  } finally {
    await c.close();
    await stopServer(srv);
  }
});


test('abx serve --provider e2b in front of another abx serve: E2B\'s SDK drives the far host\'s sandboxes through this one', async () => {
  const far = privateHome('abx-serve-far');
  const near = privateHome('abx-serve-near');
  homes.push(far, near);
  const FAR_KEY = `e2b_${'b8'.repeat(20)}`;
  const FAR_OTHER = `e2b_${'c9'.repeat(20)}`;
  const farSrv = await startHttpServer(['--warm', '0'], { env: { ...far.env, ABX_SERVE_API_KEYS: `${FAR_KEY},${FAR_OTHER}` }, serveArgs: ['serve'] });
  const nearSrv = await startHttpServer([], {
    env: { ...near.env, ABX_SERVE_API_KEYS: KEY, ABX_SANDBOX_API_KEY: FAR_KEY, ABX_SANDBOX_BASE_URL: `http://127.0.0.1:${farSrv.port}` },
    serveArgs: ['--provider', 'e2b', 'serve'],
  });
  const base = `http://127.0.0.1:${nearSrv.port}`;
  const opts = { apiUrl: base, sandboxUrl: base, apiKey: KEY };
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000, ...opts });
  try {
    assert.equal((await sbx.commands.run('hostname')).stdout, `${sbx.sandboxId}\n`, 'the far host\'s sandbox runs it');
    await sbx.files.write('/app/far.txt', 'through two hosts\n');
    assert.equal(await sbx.files.read('/app/far.txt'), 'through two hosts\n');
    // the far host has it (its state), the near one relays only
    assert.ok(fs.existsSync(path.join(far.home, 'sandboxes', sbx.sandboxId)));
    assert.ok(!fs.existsSync(path.join(near.home, 'sandboxes', sbx.sandboxId)));
    // the far host's tenants hold: its other key sees nothing of it there
    const theirs = await fetch(`http://127.0.0.1:${farSrv.port}/sandboxes/${sbx.sandboxId}`, { headers: { 'X-API-Key': FAR_OTHER } });
    assert.equal(theirs.status, 404);
  } finally {
    await sbx.kill();
    await stopServer(nearSrv);
    await stopServer(farSrv);
  }
});
