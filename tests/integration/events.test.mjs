// events.test.mjs: the host's event log. A scripted sequence through the
// CLI (create, pause, resume, network, a policy denial, OOM kill, kill, timeout, a
// supervisor killed by hand, a quota refusal) shows each event once, in
// order, with increasing numbers; `abx events --follow` prints new ones
// as they come; `abx serve`'s GET /events streams them to an API key as
// server-sent events (an EventSource-shaped reader), its own only; a
// flood of 10 000 refusals keeps the log within its bound on disk.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { abx, privateHome, runAbx, startHttpServer, stopServer, shimPid, sleep, waitFor } from '../lib/harness.mjs';

const KEY = `e2b_${'a7'.repeat(20)}`;
const OTHER = `e2b_${'b8'.repeat(20)}`;
const homes = [];
after(() => { for (const h of homes) h.cleanup(); });

const events = (H, args = []) => {
  const r = runAbx(['events', '--json', ...args], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
};

test('abx events: a scripted sequence, each event once, in order; --follow prints new ones as they come', { timeout: 180000 }, async () => {
  const H = privateHome('abx-events');
  homes.push(H);
  const ok = (args) => {
    const r = runAbx(args, { env: H.env });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.stdout.trim();
  };
  assert.deepEqual(events(H), []); // nothing yet, and no error for a log not made yet

  const follower = spawn(abx, ['events', '--follow', '--json'], { env: H.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let followed = '';
  follower.stdout.on('data', (d) => { followed += d; });
  try {
    const a = ok(['create', '--timeout', '300', '--memory', '64']);
    ok(['pause', a]);
    ok(['resume', a]);
    ok(['network', a, '--mode', 'internet', '--deny-out', '10.99.0.1']);
    runAbx(['exec', a, 'timeout 3 bash -c "echo > /dev/tcp/10.99.0.1/80"'], { env: H.env });
    assert.ok(await waitFor(() => events(H, ['--type', 'denied']).length >= 1, 5000), 'no denied event');
    const oom = runAbx(['exec', a, 'python3 -c "b = b\'x\' * (200 << 20)"; echo rc=$?'], { env: H.env });
    assert.match(oom.stdout, /rc=137/);
    assert.ok(await waitFor(() => events(H, ['--type', 'oom']).length === 1, 5000), 'no oom event');
    ok(['kill', a]);
    const b = ok(['create', '--timeout', '1']);
    assert.ok(await waitFor(() => events(H, ['--type', 'timeout']).length === 1, 10000), 'no timeout event');
    const c = ok(['create', '--timeout', '300']);
    const pid = shimPid(H.home, c.replace(/^local:/, ''));
    assert.ok(pid);
    process.kill(pid, 'SIGKILL');
    await sleep(300);
    ok(['list']); // a new abx reconciles: the dead supervisor's sandbox is reaped, and told

    const all = events(H);
    const seqs = all.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
    assert.equal(new Set(seqs).size, seqs.length);
    const script = all.map((e) => `${e.type} ${e.sandbox_id}`);
    assert.deepEqual(script, [
      `create ${a}`, `pause ${a}`, `resume ${a}`, `network ${a}`, `denied ${a}`, `oom ${a}`, `kill ${a}`,
      `create ${b}`, `timeout ${b}`, `create ${c}`, `supervisor_died ${c}`,
    ]);
    const byType = Object.fromEntries(all.map((e) => [e.type + (e.sandbox_id === b ? '-b' : ''), e]));
    assert.equal(byType.create.template, 'base');
    assert.equal(byType.network.mode, 'internet');
    assert.deepEqual(byType.network.deny_out, ['10.99.0.1/32']);
    assert.deepEqual([byType.denied.destination, byType.denied.port, byType.denied.protocol], ['10.99.0.1', 80, 'tcp']);
    assert.ok(byType.oom.killed >= 1);
    assert.equal(byType.oom.memory_limit_bytes, 64 * 2 ** 20);
    assert.equal(byType['timeout-b'].action, 'kill');
    for (const e of all) assert.match(e.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    // --after resumes; --sandbox and --type filter; the table has a header and a row per event
    assert.deepEqual(events(H, ['--after', String(seqs[7])]).map((e) => e.seq), seqs.slice(8));
    assert.deepEqual(events(H, ['--sandbox', b]).map((e) => e.type), ['create', 'timeout']);
    const table = runAbx(['events'], { env: H.env }).stdout.trim().split('\n');
    assert.match(table[0], /^SEQ\s+TIME\s+TYPE\s+SANDBOX/);
    assert.equal(table.length, all.length + 1);
    assert.equal(runAbx(['events', '--after', 'x'], { env: H.env }).status, 2);
    assert.match(runAbx(['events', '--help'], { env: H.env }).stdout, /--follow/);

    await waitFor(() => followed.split('\n').filter(Boolean).length === all.length, 3000);
    assert.deepEqual(followed.split('\n').filter(Boolean).map((l) => JSON.parse(l).seq), seqs);
  } finally {
    follower.kill('SIGTERM');
  }
});

// An EventSource-shaped reader of a text/event-stream body: {id, event, data} frames.
async function* sse(response) {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of response.body) {
    buf += decoder.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, at);
      buf = buf.slice(at + 2);
      const f = {};
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        f[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
      }
      if (f.data) yield f;
    }
  }
}

test('GET /events: server-sent events of a key\'s own sandboxes; Last-Event-ID resumes; a flood of 10 000 refusals stays within the bound', { timeout: 300000 }, async () => {
  const H = privateHome('abx-events-serve');
  homes.push(H);
  assert.equal(runAbx(['config', 'set', 'limits.sandboxes_per_tenant', '1'], { env: H.env }).status, 0);
  const srv = await startHttpServer(['--warm', '0'], { env: { ...H.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'] });
  const base = `http://127.0.0.1:${srv.port}`;
  const api = (p, { key = KEY, method = 'GET', body } = {}) => fetch(`${base}${p}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
  const ctl = new AbortController();
  try {
    assert.equal((await fetch(`${base}/events`)).status, 401);
    const stream = await fetch(`${base}/events`, { headers: { 'X-API-Key': KEY, Accept: 'text/event-stream' }, signal: ctl.signal });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type'), /^text\/event-stream/);
    const frames = sse(stream);

    const theirs = (await (await api('/sandboxes', { key: OTHER, method: 'POST', body: { timeout: 120 } })).json()).sandboxID;
    const t0 = Date.now();
    const mine = (await (await api('/sandboxes', { method: 'POST', body: { timeout: 120 } })).json()).sandboxID;
    const first = (await frames.next()).value;
    assert.ok(Date.now() - t0 < 2000, 'the create took over 2 s to stream');
    const ev = JSON.parse(first.data);
    assert.deepEqual([first.event, ev.type, ev.sandbox_id], ['create', 'create', `local:${mine}`]);
    assert.equal(first.id, String(ev.seq));
    const refused = await api('/sandboxes', { method: 'POST', body: { timeout: 120 } });
    assert.equal(refused.status, 429);
    const second = (await frames.next()).value;
    assert.equal(second.event, 'quota_refused');
    assert.match(JSON.parse(second.data).reason, /sandboxes_per_tenant/);
    assert.equal((await api(`/sandboxes/${mine}`, { method: 'DELETE' })).status, 204);
    const third = (await frames.next()).value;
    assert.deepEqual([third.event, JSON.parse(third.data).sandbox_id], ['kill', `local:${mine}`]);
    ctl.abort();

    // the other key's page: its own create only; resuming after its seq: nothing
    const page = await (await api('/events?format=json', { key: OTHER })).json();
    assert.deepEqual(page.events.map((e) => [e.type, e.sandbox_id]), [['create', `local:${theirs}`]]);
    const resumed = await fetch(`${base}/events?format=json`, { headers: { 'X-API-Key': KEY, 'Last-Event-ID': first.id } });
    assert.deepEqual((await resumed.json()).events.map((e) => e.type), ['quota_refused', 'kill']);
    assert.equal((await api('/events?format=xml')).status, 400);
    assert.equal((await api('/events?after=-1')).status, 400);

    // a flood: 10 000 refused creates, each an event
    const other = (await (await api('/sandboxes', { method: 'POST', body: { timeout: 120 } })).json()).sandboxID;
    for (let i = 0; i < 10000; i += 50)
      await Promise.all(Array.from({ length: 50 }, () => api('/sandboxes', { method: 'POST', body: { timeout: 120 } }).then((r) => r.arrayBuffer())));
    const dir = path.join(H.home, 'events');
    const bytes = fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    assert.ok(bytes <= 2 * 2 ** 20 + 64, `the log holds ${bytes} bytes`);
    const kept = events(H);
    assert.ok(kept.length > 1000, `only ${kept.length} events kept`);
    const last = kept.at(-1);
    assert.equal(last.type, 'quota_refused');
    assert.ok(last.seq >= 10003, `last seq ${last.seq}`);
    const seqs = kept.map((e) => e.seq);
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i)); // the newest, none missing
    await api(`/sandboxes/${other}`, { method: 'DELETE' });
    await api(`/sandboxes/${theirs}`, { key: OTHER, method: 'DELETE' });
  } finally {
    ctl.abort();
    await stopServer(srv);
  }
});
