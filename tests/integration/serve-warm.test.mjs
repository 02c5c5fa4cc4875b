// serve-warm.test.mjs: `abx serve --warm N` keeps sandboxes started ahead.
// A create takes one: its own envs, metadata and timeout apply; nobody sees
// or reaches the standby ones (abx list, GET /v2/sandboxes, abx exec); they
// end with abx serve, whether it stops or is killed; --warm 0 keeps none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { abx, privateHome, startHttpServer, stopServer, runAbx, stateIds } from '../lib/harness.mjs';

const KEY = `e2b_${'d4'.repeat(20)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// sandboxes whose shim is serving (its meta.json is written once it is ready)
const readyIds = (home) => stateIds(home).filter((id) => fs.existsSync(`${home}/sandboxes/${id}/meta.json`));

async function waitForCount(home, n, ms = 10000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (stateIds(home).length === n && readyIds(home).length === n) return;
    await sleep(50);
  }
  assert.equal(stateIds(home).length, n, `expected ${n} ready sandboxes in ${home}`);
}

async function serve(H, args) {
  const srv = await startHttpServer(args, { env: { ...H.env, ABX_SERVE_API_KEYS: KEY }, serveArgs: ['serve'] });
  const base = `http://127.0.0.1:${srv.port}`;
  const api = (p, method = 'GET', body) => fetch(`${base}${p}`, { method, headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  return { srv, base, api };
}

test('abx serve --warm 2: creates take standby sandboxes with their own envs, metadata and timeout; standby ones are invisible', async () => {
  const H = privateHome('abx-warm');
  const { srv, api } = await serve(H, ['--warm', '2']);
  try {
    await waitForCount(H.home, 2);
    await sleep(500); // ready on disk, then warmed (one /bin/true) and pooled
    const standby = stateIds(H.home);
    assert.deepEqual(JSON.parse(runAbx(['list', '--json'], { env: H.env }).stdout), []);
    assert.deepEqual(await (await api('/v2/sandboxes')).json(), []);
    const poke = runAbx(['exec', standby[0], 'true'], { env: H.env });
    assert.equal(poke.status, 125); // no such sandbox, as for an id that never existed
    assert.match(poke.stderr, /E8002/);

    const t0 = Date.now();
    const r = await api('/sandboxes', 'POST', { templateID: 'base', timeout: 77, envVars: { WARM: 'yes' }, metadata: { who: 'warm-test' } });
    assert.equal(r.status, 201);
    const made = await r.json();
    assert.ok(standby.includes(made.sandboxID), 'the create did not take a standby sandbox');
    const info = await (await api(`/sandboxes/${made.sandboxID}`)).json();
    assert.deepEqual(info.metadata, { who: 'warm-test' });
    const ends = Date.parse(info.endAt);
    assert.ok(Math.abs(ends - (t0 + 77000)) < 3000, `endAt ${info.endAt} is not 77 s after the create`);
    const started = Date.parse(info.startedAt);
    assert.ok(started >= t0 - 1500, `startedAt ${info.startedAt} is the standby's start, not the create's`);
    const env = runAbx(['exec', `local:${made.sandboxID}`, 'echo $WARM; nice'], { env: H.env });
    assert.equal(env.stdout, 'yes\n0\n'); // started in the background (nice 19), handed out in the foreground
    const shares = `/sys/fs/cgroup/cpu/abx/${made.sandboxID}/cpu.shares`;
    if (fs.existsSync(shares)) { // restored by a thread of the shim's, right after the claim
      const until = Date.now() + 3000;
      while (fs.readFileSync(shares, 'utf8') !== '1024\n' && Date.now() < until) await sleep(20);
      assert.equal(fs.readFileSync(shares, 'utf8'), '1024\n');
    }
    assert.deepEqual(JSON.parse(runAbx(['list', '--json'], { env: H.env }).stdout).map((s) => s.sandbox_id), [`local:${made.sandboxID}`]);

    // the pool refills; a create of another shape starts one of its own
    await waitForCount(H.home, 3);
    const big = await (await api('/sandboxes', 'POST', { templateID: 'code-interpreter-v1' })).json();
    assert.ok(big.sandboxID);
    assert.equal((await (await api(`/sandboxes/${big.sandboxID}`)).json()).templateID, 'code-interpreter-v1');
    await api(`/sandboxes/${big.sandboxID}`, 'DELETE');
    await api(`/sandboxes/${made.sandboxID}`, 'DELETE');
  } finally {
    await stopServer(srv);
  }
  await waitForCount(H.home, 0, 3000); // the standby ones end with abx serve
  H.cleanup();
});

test('abx serve killed with SIGKILL: its standby sandboxes end by themselves; the ones it handed out live on', async () => {
  const H = privateHome('abx-warm9');
  const { srv, api } = await serve(H, ['--warm', '3']);
  let kept;
  try {
    await waitForCount(H.home, 3);
    kept = (await (await api('/sandboxes', 'POST', { timeout: 60 })).json()).sandboxID;
    assert.ok(kept);
    await sleep(1000); // whatever the pool restarts meanwhile is standby too
    assert.ok(stateIds(H.home).includes(kept));
  } finally {
    await stopServer(srv, 'SIGKILL');
  }
  await waitForCount(H.home, 1, 5000);
  assert.deepEqual(stateIds(H.home), [kept]);
  assert.equal(runAbx(['exec', `local:${kept}`, 'echo alive'], { env: H.env }).stdout, 'alive\n');
  H.cleanup();
});

test('abx serve --warm 0 keeps none; --warm out of range is a usage error', async () => {
  const H = privateHome('abx-warm0');
  const { srv } = await serve(H, ['--warm', '0']);
  await sleep(500);
  assert.deepEqual(stateIds(H.home), []);
  await stopServer(srv);
  const bad = runAbx(['serve', '--warm', '17'], { env: H.env });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--warm/);
  H.cleanup();
  assert.ok(abx);
});
