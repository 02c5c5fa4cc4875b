// durable.test.mjs: durable sandboxes (`abx create --persistent`, E2B's
// autoPause) as users meet them: files written, a pause, a SIGKILLed
// supervisor, a simulated machine restart (every abx process killed,
// nothing of the test's left mounted or bound), and `abx list` shows the
// sandbox paused, never running or gone; resume brings its files back.
// Also: 50 pause/resume cycles over a tree of 1000 files, a files-only
// pause, a template's start command after a cold boot, volumes kept by a
// sandbox at rest, E2B's SDK and the MCP SDK client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, privateHome, runAbx, shimPid, startHttpServer, stopServer, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-durable');
after(() => H.cleanup());
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });
function ok(args) {
  const r = abxh(args);
  assert.equal(r.status, 0, `abx ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const sh = (id, cmd) => ok(['exec', id, cmd]);
const info = (id) => JSON.parse(ok(['info', id, '--json']));
const bare = (id) => id.replace(/^local:/, '');

/** Every shim of this home SIGKILLed and gone; then nothing of the home is bound to a loop device. */
async function restartMachine() {
  const dir = path.join(H.home, 'sandboxes');
  const pids = fs.existsSync(dir) ? fs.readdirSync(dir).map((id) => shimPid(H.home, id)).filter(Boolean) : [];
  for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  const gone = (pid) => { try { process.kill(pid, 0); return false; } catch { return true; } };
  await waitFor(() => pids.every(gone), 10000);
  const loops = () => (spawnSync('losetup', ['-a'], { encoding: 'utf8' }).stdout || '').split('\n').filter((l) => l.includes(H.home));
  await waitFor(() => loops().length === 0, 10000);
}

test('a durable sandbox: write, pause, SIGKILL its supervisor, restart: listed paused; resume brings the files back', async () => {
  const id = ok(['create', '--persistent', '--timeout', '600']).trim();
  const first = info(id);
  assert.deepEqual(first.durable, { boots: 1, resumed_from: '' });
  sh(id, 'mkdir -p /home/user/work && echo kept > /home/user/work/a && ln -s a /home/user/work/l');
  ok(['exec', '--user', 'root', id, 'echo root-file > /opt/b']);
  ok(['pause', id]);
  process.kill(shimPid(H.home, bare(id)), 'SIGKILL');
  await restartMachine();
  const listed = JSON.parse(ok(['list', '--json'])).find((s) => s.sandbox_id === id);
  assert.equal(listed?.status, 'paused', 'a durable sandbox at rest is listed paused');
  assert.equal(JSON.parse(ok(['list', '--status', 'paused', '--json'])).length, 1);
  assert.equal(JSON.parse(ok(['list', '--status', 'running', '--json'])).length, 0);
  assert.equal(info(id).status, 'paused');
  const refused = abxh(['exec', id, 'true']);
  assert.equal(refused.status, 125);
  assert.match(refused.stderr, /E8016: .*paused at rest .*abx resume local:/, 'the refusal names the way back');
  assert.match(abxh(['pause', id]).stderr, /E8001: .*already paused/);
  ok(['resume', id, '--timeout', '300']);
  assert.equal(sh(id, 'cat /home/user/work/a /opt/b; readlink /home/user/work/l; stat -c %U /home/user/work/a'), 'kept\nroot-file\na\nuser\n');
  const after = info(id);
  assert.equal(after.status, 'running');
  assert.deepEqual(after.durable, { boots: 2, resumed_from: 'files' });
  // a running one whose supervisor dies rests too: its files stay
  sh(id, 'echo second > /home/user/work/c && sync');
  await restartMachine();
  assert.equal(info(id).status, 'paused');
  ok(['resume', id]);
  assert.equal(sh(id, 'cat /home/user/work/c'), 'second\n');
  // a pause and resume in one supervisor keeps memory: the same process goes on
  const pid = sh(id, 'sleep 600 > /dev/null 2>&1 & echo $!').trim();
  ok(['pause', id]);
  ok(['resume', id]);
  assert.equal(info(id).durable.resumed_from, 'memory');
  assert.equal(sh(id, `kill -0 ${pid} && echo alive`), 'alive\n');
  ok(['kill', id]);
  assert.equal(fs.existsSync(path.join(H.home, 'sandboxes', bare(id))), false, 'a kill leaves its layer');
  assert.match(abxh(['info', id]).stderr, /E8002/);
});

test('50 pause/resume cycles over a tree of 1000 files, a restart every tenth, lose nothing', async () => {
  const id = ok(['create', '--persistent', '--timeout', '900']).trim();
  sh(id, 'mkdir -p /app/t && cd /app/t && for i in $(seq 1 1000); do echo "file $i" > f$i; done');
  const sum = () => sh(id, 'cd /app/t && find . -type f | sort | xargs sha256sum | sha256sum');
  let want = sum();
  for (let cycle = 1; cycle <= 50; cycle++) {
    sh(id, `cd /app/t && echo "cycle ${cycle}" >> f${cycle} && echo new > n${cycle} && rm -f f${1000 - cycle}`);
    want = sum();
    ok(['pause', id]);
    if (cycle % 10 === 0) await restartMachine();
    ok(['resume', id]);
    assert.equal(sum(), want, `cycle ${cycle}: the tree changed`);
  }
  assert.equal(sh(id, 'ls /app/t | wc -l').trim(), '1000');
  assert.equal(info(id).durable.boots, 6);
  ok(['kill', id]);
});

test('--pause-files-only: a pause ends the processes at once and keeps the files; a template\'s start command runs again', async () => {
  assert.match(abxh(['create', '--pause-files-only']).stderr, /only with --persistent/);
  const ctx = fs.mkdtempSync(path.join(H.home, 'ctx-'));
  fs.writeFileSync(path.join(ctx, 'Dockerfile'),
    'FROM code-interpreter-v1\nCMD ["sh", "-c", "echo started >> /home/user/starts; exec sleep infinity"]\n');
  ok(['template', 'build', '--builtin', 'code-interpreter-v1']); // this home's (from the build cache)
  ok(['template', 'build', 'durable-start', ctx]);
  const id = ok(['create', '--template', 'durable-start', '--persistent', '--pause-files-only', '--timeout', '300']).trim();
  await waitFor(() => abxh(['exec', id, 'cat /home/user/starts']).stdout === 'started\n', 10000);
  sh(id, 'echo mine > /home/user/note && python3 -c "open(\'/tmp/py\', \'w\').write(\'py\')"');
  ok(['pause', id]);
  const shim = shimPid(H.home, bare(id));
  const alive = () => { try { process.kill(shim, 0); return true; } catch { return false; } };
  await waitFor(() => !alive(), 10000); // a files-only pause leaves no supervisor
  assert.equal(fs.existsSync(path.join(H.home, 'sandboxes', bare(id), 'envd.sock')), false);
  assert.equal(info(id).status, 'paused');
  ok(['resume', id]);
  assert.equal(sh(id, 'cat /home/user/note /tmp/py; echo; cat /home/user/starts'), 'mine\npy\nstarted\nstarted\n');
  assert.equal(info(id).durable.resumed_from, 'files');
  ok(['kill', id]);
  ok(['template', 'rm', 'durable-start']);
});

test('a volume mounted by a durable sandbox at rest is kept for it: rm refused until the sandbox is killed', async () => {
  ok(['volume', 'create', 'rest-vol', '--size', '32']);
  const id = ok(['create', '--persistent', '--volume', 'rest-vol:/data']).trim();
  sh(id, 'echo on-volume > /data/v && echo on-layer > /home/user/l');
  await restartMachine();
  assert.equal(info(id).status, 'paused');
  assert.equal(JSON.parse(ok(['volume', 'inspect', 'rest-vol', '--json'])).in_use, true);
  const busy = abxh(['volume', 'rm', 'rest-vol']);
  assert.equal(busy.status, 1);
  assert.match(busy.stderr, /E8034: .*paused durable sandbox/);
  ok(['resume', id]);
  assert.equal(sh(id, 'cat /data/v /home/user/l'), 'on-volume\non-layer\n');
  ok(['kill', id]);
  ok(['volume', 'rm', 'rest-vol']);
});

test('a durable sandbox\'s layer is bounded by its disk size: a full layer fails the write and keeps the files', () => {
  const id = ok(['create', '--persistent', '--memory', '64']).trim(); // disk: half the memory, at least 16 MiB
  assert.equal(info(id).disk_size_mb, 32);
  sh(id, 'echo safe > /home/user/safe && sync');
  const full = abxh(['exec', id, 'head -c 100000000 /dev/zero > /home/user/flood']);
  assert.notEqual(full.status, 0);
  assert.match(full.stderr, /No space left on device/);
  assert.equal(sh(id, 'cat /home/user/safe'), 'safe\n');
  ok(['kill', id]);
});

// ---- E2B's SDK: autoPause is durable ---------------------------------------------------------

const KEY = `e2b_${'e5'.repeat(20)}`;
const S = privateHome('abx-durable-serve');
after(() => S.cleanup());
let srv;
before(async () => {
  srv = await startHttpServer([], { env: { ...S.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['serve'] });
  const base = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = KEY;
});
after(async () => { if (srv) await stopServer(srv); });

test('E2B SDK: lifecycle onTimeout pause is durable; a killed supervisor leaves it paused; connect brings its files back', async () => {
  const { Sandbox } = await import('e2b');
  const sbx = await Sandbox.create({ timeoutMs: 120000, lifecycle: { onTimeout: 'pause' } });
  await sbx.files.write('/home/user/e2b.txt', 'durable via e2b');
  await sbx.pause();
  const dir = path.join(S.home, 'sandboxes', sbx.sandboxId);
  process.kill(JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')).shim_pid, 'SIGKILL');
  await waitFor(async () => (await Sandbox.getInfo(sbx.sandboxId)).state === 'paused', 10000);
  const paused = await Sandbox.list({ query: { state: ['paused'] } }).nextItems();
  assert.ok(paused.some((s) => s.sandboxId === sbx.sandboxId));
  const again = await Sandbox.connect(sbx.sandboxId);
  assert.equal(await again.files.read('/home/user/e2b.txt'), 'durable via e2b');
  assert.equal((await again.getInfo()).state, 'running');
  await again.kill();

  // keepMemory false: a filesystem-only pause; it cold-boots on connect
  const cold = await Sandbox.create({ timeoutMs: 120000, lifecycle: { onTimeout: { action: 'pause', keepMemory: false } } });
  await cold.commands.run('echo fs-only > /home/user/f');
  await cold.pause();
  await waitFor(() => !fs.existsSync(path.join(S.home, 'sandboxes', cold.sandboxId, 'envd.sock')), 10000);
  const back = await Sandbox.connect(cold.sandboxId);
  assert.equal((await back.commands.run('cat /home/user/f')).stdout, 'fs-only\n');
  await back.kill();
});

test('MCP create_sandbox {persistent}: the session\'s end pauses it; a later session names it and finds its files', async () => {
  const connect = async () => {
    const client = new Client({ name: 'durable-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: abx, args: ['mcp', 'start'], env: H.env, stderr: 'ignore' }));
    return client;
  };
  const one = await connect();
  const made = await one.callTool({ name: 'create_sandbox', arguments: { persistent: true } });
  assert.ok(!made.isError, JSON.stringify(made.content));
  const id = made.structuredContent.sandbox_id;
  await one.callTool({ name: 'run_command', arguments: { command: 'echo from-session-one > /home/user/s' } });
  const bad = await one.callTool({ name: 'create_sandbox', arguments: { persistent: 'yes' } });
  assert.equal(bad.isError, true);
  await one.close();
  await waitFor(() => info(id).status === 'paused', 10000);
  await restartMachine();
  const two = await connect();
  try {
    const r = await two.callTool({ name: 'run_command', arguments: { sandbox_id: id, command: 'cat /home/user/s' } });
    assert.match(JSON.stringify(r.structuredContent ?? r.content), /from-session-one/);
  } finally {
    await two.close();
  }
  ok(['kill', id]);
});
