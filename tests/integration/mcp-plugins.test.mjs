// mcp-plugins.test.mjs: the MCP server's tools over each reference exec
// plugin (providers/local-process in Python, providers/node-process in
// Node), driven by the official MCP TypeScript SDK client as an IDE would:
// `abx --provider P mcp start`. The same session rules, results and errors
// as on the local provider (mcp-stdio.test.mjs), where a plugin can serve
// them; what lives only in abx's own runtime (kernels with state, saved
// output files) is said where it differs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, root, runAbx, privateHome, hostProcesses, sleep, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-mcp-plugins');
after(() => H.cleanup());
const PLUGINS = ['local-process', 'node-process'];
for (const p of PLUGINS) {
  const r = runAbx(['provider', 'install', path.join(root, 'providers', p), '--yes'], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
}

const running = (p) => JSON.parse(runAbx(['--provider', p, '--json', 'list'], { env: H.env }).stdout).map((s) => s.sandbox_id);

async function connect(p, args = []) {
  const transport = new StdioClientTransport({ command: abx, args: ['--provider', p, 'mcp', 'start', ...args], env: H.env, stderr: 'pipe' });
  const client = new Client({ name: 'abx-tests', version: '1.0.0' });
  await client.connect(transport);
  return { client, call: (name, a = {}, opts) => client.callTool({ name, arguments: a }, undefined, opts), close: () => client.close() };
}

function ok(r) {
  assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 2000));
  return r.structuredContent;
}

function failed(r, code) {
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.error.code, code, JSON.stringify(r.structuredContent));
  assert.ok(r.structuredContent.error.hint);
  return r.structuredContent.error;
}

for (const P of PLUGINS) {
  test(`${P}: the fifteen tools; session rules: lazy single default, create moves it, explicit ids, cleanup at the end`, async () => {
    const before = running(P);
    const s = await connect(P);
    try {
      assert.equal((await s.client.listTools()).tools.length, 15);
      ok(await s.call('list_sandboxes'));
      failed(await s.call('get_sandbox'), 'E8002');
      const outs = await Promise.all([1, 2, 3].map(() => s.call('run_command', { command: 'pwd' })));
      assert.equal(new Set(outs.map((r) => ok(r).stdout)).size, 1, 'several defaults');
      assert.match(ok(outs[0]).stdout, /\/app\n$/);
      const first = ok(await s.call('get_sandbox')).sandbox_id;
      assert.ok(first.startsWith(`${P}:`), first);
      assert.deepEqual(running(P).filter((id) => !before.includes(id)), [first]);
      const second = ok(await s.call('create_sandbox', { timeout: 120, provider: P })).sandbox_id;
      failed(await s.call('create_sandbox', { provider: 'local' }), 'E8015'); // one provider per server: its own
      assert.ok(ok(await s.call('list_sandboxes', { provider: P })).sandboxes.length >= 2);
      assert.notEqual(first, second);
      assert.equal(ok(await s.call('get_sandbox')).sandbox_id, second);
      assert.ok(ok(await s.call('list_sandboxes')).sandboxes.some((b) => b.sandbox_id === first));
      ok(await s.call('write_file', { path: '/app/mark', content: 'first', sandbox_id: first }));
      assert.equal(ok(await s.call('run_command', { command: 'cat mark', sandbox_id: first })).stdout, 'first');
      failed(await s.call('read_file', { path: '/app/mark' }), 'E8023'); // the default is the second
      assert.equal(ok(await s.call('set_sandbox_timeout', { timeout: 600 })).timeout, 600);
      ok(await s.call('kill_sandbox'));
      assert.ok(!running(P).includes(second));
    } finally {
      await s.close();
    }
    assert.ok(await waitFor(() => running(P).every((id) => before.includes(id)), 10000), 'the session left sandboxes');
  });

  test(`${P}: run_command, run_code, files, upload and download, background tasks`, async () => {
    const s = await connect(P);
    try {
      let r = ok(await s.call('run_command', { command: 'GREETING=hi; echo $GREETING; echo err >&2; exit 3' }));
      assert.deepEqual([r.stdout, r.stderr, r.exit_code], ['hi\n', 'err\n', 3]);
      r = ok(await s.call('run_command', { command: 'sleep 30', timeout: 1 }));
      assert.deepEqual([r.exit_code, r.timed_out], [124, true]);
      assert.match(ok(await s.call('run_command', { command: 'pwd', cwd: '/tmp' })).stdout, /\/tmp\n$/);
      r = ok(await s.call('run_command', { command: 'head -c 3000000 /dev/zero | tr "\\0" x' }));
      assert.deepEqual([r.truncated, r.stdout_bytes], [true, 3000000]);
      assert.match(r.stdout, /^x{16384}\n\[abx: output truncated: 2967232 bytes left out here/);
      // no kernels here: python and javascript run once per call
      assert.equal(ok(await s.call('run_code', { code: 'print(6*7)' })).stdout, '42\n');
      assert.equal(ok(await s.call('run_code', { code: 'console.log([1,2].length)', language: 'javascript' })).stdout, '2\n');
      assert.equal(ok(await s.call('run_code', { code: 'echo $((2+2))', language: 'shell' })).stdout, '4\n');
      // files
      assert.deepEqual(ok(await s.call('write_file', { path: '/app/dir/hello.txt', content: 'héllo' })), { success: true, bytes_written: 6 });
      assert.equal(ok(await s.call('read_file', { path: '/app/dir/hello.txt' })).content, 'héllo');
      assert.equal(ok(await s.call('read_file', { path: '/app/dir/hello.txt', offset: 1, length: 2 })).content, 'é');
      const files = ok(await s.call('list_files', { path: '/app/dir' })).files;
      assert.deepEqual(files, [{ name: 'hello.txt', path: '/app/dir/hello.txt', type: 'file', size: 6 }]);
      failed(await s.call('read_file', { path: '/app/missing' }), 'E8023');
      // never the host's file: refused (E8017) or resolved inside the sandbox's own root, where it is not (E8023)
      const escape = await s.call('read_file', { path: '/app/../../../etc/passwd' });
      assert.equal(escape.isError, true, JSON.stringify(escape).slice(0, 300));
      assert.ok(['E8017', 'E8023'].includes(escape.structuredContent.error.code));
      const blob = Buffer.from(Array.from({ length: 70000 }, (_, i) => (i * 7) & 255));
      ok(await s.call('upload_file', { path: '/app/blob.bin', content_base64: blob.toString('base64') }));
      const d = ok(await s.call('download_file', { path: '/app/blob.bin' }));
      assert.equal(Buffer.from(d.content_base64, 'base64').compare(blob), 0);
      // background tasks: output by offset, stop, an unknown task
      const bg = ok(await s.call('start_background_task', { command: 'echo started; sleep 0.5; echo $GREETING; sleep 300', envs: { GREETING: 'hey' } }));
      let g = ok(await s.call('get_background_task', { task_id: bg.task_id, wait: 5 }));
      assert.equal(g.status, 'running');
      await sleep(1000);
      g = ok(await s.call('get_background_task', { task_id: bg.task_id, stdout_offset: 0 }));
      assert.equal(g.stdout, 'started\nhey\n');
      assert.equal(ok(await s.call('get_background_task', { task_id: bg.task_id, stdout_offset: g.stdout_offset })).stdout, '');
      assert.deepEqual(ok(await s.call('stop_background_task', { task_id: bg.task_id })), { success: true, status: 'exited' });
      g = ok(await s.call('get_background_task', { task_id: bg.task_id }));
      assert.deepEqual([g.status, g.exit_code], ['exited', 143]);
      failed(await s.call('get_background_task', { task_id: '999999' }), 'E8026');
    } finally {
      await s.close();
    }
  });

  test(`${P}: a slow call does not hold up another; cancellation stops the process; validation names the field`, async () => {
    const s = await connect(P);
    try {
      ok(await s.call('run_command', { command: 'true' }));
      const slow = s.call('run_command', { command: 'sleep 3; echo slow' });
      const t0 = Date.now();
      await s.client.ping();
      assert.equal(ok(await s.call('run_command', { command: 'echo fast' })).stdout, 'fast\n');
      assert.ok(Date.now() - t0 < 2500, 'blocked behind the slow call');
      assert.equal(ok(await slow).stdout, 'slow\n');
      const ac = new AbortController();
      const tag = `sleep ${7000 + Math.floor(Math.random() * 2999)}3`;
      const p = s.client.callTool({ name: 'run_command', arguments: { command: tag } }, undefined, { signal: ac.signal });
      await waitFor(() => hostProcesses(tag).length > 0, 5000);
      ac.abort();
      await assert.rejects(p);
      assert.ok(await waitFor(() => hostProcesses(tag).length === 0, 5000), 'the cancelled command still runs');
      const e = failed(await s.call('run_command', {}), 'E8001');
      assert.match(JSON.stringify(e), /command/);
      failed(await s.call('get_sandbox', { sandbox_id: `${P}:np0000000000000000` }), 'E8002');
    } finally {
      await s.close();
    }
  });
}
