// metrics.test.mjs: GET /metrics of `abx serve`, read as Prometheus reads
// it: every scrape is parsed by the Prometheus project's own Python client
// (prometheus_client.parser, Debian's python3-prometheus-client). Sandboxes
// are made and driven by E2B's SDK. A sandbox's memory series shows the
// 100 MiB it allocates; one that sends to a denied address has its
// refused-packet counter go up; the pool gauges move with creates and
// kills; an API key sees only its own sandboxes' series and no host's;
// the metrics token sees all; anything else is 401.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { privateHome, startHttpServer, stopServer, runAbx, sleep } from '../lib/harness.mjs';

const H = privateHome('abx-metrics');
const KEY = `e2b_${'c3'.repeat(20)}`;
const OTHER = `e2b_${'d5'.repeat(20)}`;
const TOKEN = 'prometheus-scrape-token-0123456789';
let srv, base;

// The exposition text as [{name, type, samples: [{name, labels, value}]}],
// parsed by prometheus_client (which rejects what Prometheus would).
const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in f.samples]})
print(json.dumps(out))
`;

function parse(text) {
  const r = spawnSync('/usr/bin/python3', ['-c', PARSE], { input: text, encoding: 'utf8' });
  assert.equal(r.status, 0, `prometheus_client refused the exposition: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function scrape(headers = { Authorization: `Bearer ${TOKEN}` }) {
  const r = await fetch(`${base}/metrics`, { headers });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const families = parse(await r.text());
  const samples = families.flatMap((f) => f.samples);
  return {
    families,
    // the value of the one sample named name whose labels include these
    value(name, labels = {}) {
      const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
      assert.ok(hits.length <= 1, `${name} ${JSON.stringify(labels)}: ${hits.length} samples`);
      return hits.length ? hits[0].value : undefined;
    },
    ids: () => new Set(samples.filter((s) => s.labels.sandbox_id).map((s) => s.labels.sandbox_id)),
  };
}

before(async () => {
  const tokenFile = path.join(H.home, 'metrics-token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  // a uid pool of its own (the gauges count this pool's ranges only), clear of the one other tests share
  const pool = { ABX_UID_POOL_BASE: String(2000000000 + 65536 * 64 * Math.floor(Math.random() * 100)), ABX_UID_POOL_SLOTS: '64' };
  srv = await startHttpServer(['--warm', '0', '--metrics-token-file', tokenFile], {
    env: { ...H.env, ...pool, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'],
  });
  base = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = KEY;
});

after(async () => {
  if (srv) await stopServer(srv);
  H.cleanup();
});

test('/metrics: memory, refused packets and pools, parsed by prometheus_client; creates, kills and errors counted', async () => {
  const { Sandbox } = await import('e2b');
  const before0 = await scrape();
  const uid0 = before0.value('abx_pool_uid_ranges_used');
  const uidFree0 = before0.value('abx_pool_uid_ranges_free');
  assert.equal(uid0, 0);
  assert.equal(uidFree0, 64);
  // the network addresses are the host's, which other tests use meanwhile: their sum is what stays
  const netTotal = before0.value('abx_pool_net_addresses_used') + before0.value('abx_pool_net_addresses_free');
  assert.ok(netTotal >= 1);
  assert.equal(before0.value('abx_pool_warm_target'), 0);

  const sbx = await Sandbox.create({ timeoutMs: 120000, allowInternetAccess: true, network: { denyOut: ['10.99.0.1/32'] } });
  const id = sbx.sandboxId;
  try {
    let m = await scrape();
    assert.equal(m.value('abx_pool_uid_ranges_used'), 1);
    assert.equal(m.value('abx_pool_uid_ranges_free'), 63);
    assert.ok(m.value('abx_pool_net_addresses_used') >= 1);
    assert.equal(m.value('abx_pool_net_addresses_used') + m.value('abx_pool_net_addresses_free'), netTotal);
    assert.equal(m.value('abx_sandbox_state', { sandbox_id: id, state: 'running', template: 'base' }), 1);
    assert.ok(m.value('abx_creates_total') >= 1);
    const limit = m.value('abx_sandbox_memory_limit_bytes', { sandbox_id: id });
    assert.ok(limit >= 256 * 2 ** 20, `memory limit ${limit}`);
    const tenant = m.families.find((f) => f.name === 'abx_sandbox_state').samples.find((s) => s.labels.sandbox_id === id).labels.tenant;
    assert.match(tenant, /^[A-Za-z0-9]{8,}$/); // a hash of the key, never the key
    assert.ok(!tenant.includes(KEY.slice(4, 20)));

    // 100 MiB, every page written, held for a minute
    await sbx.commands.run(`python3 -c "import time; b = b'x' * (100 << 20); time.sleep(60)"`, { background: true });
    let mem = 0;
    for (let i = 0; i < 100 && mem < 100 * 2 ** 20; i++) {
      await sleep(100);
      mem = (await scrape()).value('abx_sandbox_memory_bytes', { sandbox_id: id });
    }
    assert.ok(mem >= 100 * 2 ** 20, `memory ${mem} after allocating 100 MiB`);
    m = await scrape();
    assert.ok(m.value('abx_sandbox_memory_peak_bytes', { sandbox_id: id }) >= 100 * 2 ** 20);
    assert.ok(m.value('abx_sandbox_pids', { sandbox_id: id }) >= 2);

    // E2B's getMetrics over a span: the supervisor's samples of the last hour, ending now
    const series = await Sandbox.getMetrics(id, { start: new Date(Date.now() - 3600e3), end: new Date(Date.now() + 5e3) });
    assert.ok(series.length >= 1);
    assert.ok(series.at(-1).memUsed >= 100 * 2 ** 20, JSON.stringify(series.at(-1)));
    assert.ok(series.every((x, i) => i === 0 || x.timestamp >= series[i - 1].timestamp));

    // abx top shows the same, live (its --json: one look)
    const top = runAbx(['top', '--json'], { env: H.env });
    assert.equal(top.status, 0, top.stderr);
    const row = JSON.parse(top.stdout).find((r) => r.sandbox_id === `local:${id}`);
    assert.ok(row, top.stdout);
    assert.ok(row.memory_bytes >= 100 * 2 ** 20);
    assert.equal(row.status, 'running');
    assert.ok(row.network && row.network.refused_packets >= 0);
    assert.match(runAbx(['top', '--once'], { env: H.env }).stdout, new RegExp(`^SANDBOX .*CPU%[\\s\\S]*local:${id}`));

    const refused0 = m.value('abx_sandbox_egress_refused_packets_total', { sandbox_id: id });
    const sent0 = m.value('abx_sandbox_network_transmit_packets_total', { sandbox_id: id });
    assert.equal(typeof refused0, 'number');
    const r = await sbx.commands.run('for i in 1 2 3; do timeout 2 bash -c "echo > /dev/tcp/10.99.0.1/80" 2>/dev/null; done; exit 0');
    assert.equal(r.exitCode, 0);
    m = await scrape();
    const refused = m.value('abx_sandbox_egress_refused_packets_total', { sandbox_id: id });
    assert.ok(refused >= refused0 + 3, `refused ${refused0} -> ${refused} after 3 connections to a denied address`);
    assert.ok(m.value('abx_sandbox_network_transmit_packets_total', { sandbox_id: id }) >= sent0 + 3);
    assert.ok(m.value('abx_sandbox_cpu_seconds_total', { sandbox_id: id }) > 0);
    assert.ok(m.value('abx_sandbox_disk_used_bytes', { sandbox_id: id }) >= 0);

    // an unknown id: an E8002 answer, counted by code
    assert.equal((await fetch(`${base}/sandboxes/inosuchsandbox0000000`, { headers: { 'X-API-Key': KEY } })).status, 404);
    m = await scrape();
    assert.ok(m.value('abx_errors_total', { code: 'E8002' }) >= 1);
    const count = m.value('abx_http_request_duration_seconds_count', { plane: 'control' });
    assert.ok(count >= 3);
    assert.equal(m.value('abx_http_request_duration_seconds_bucket', { plane: 'control', le: '+Inf' }), count);
    assert.ok(m.value('abx_http_request_duration_seconds_count', { plane: 'data' }) >= 1); // the SDK's finished command (the background one streams on)

    const kills0 = m.value('abx_kills_total');
    await sbx.kill();
    m = await scrape();
    assert.equal(m.value('abx_kills_total'), kills0 + 1);
    assert.ok(!m.ids().has(id), 'a killed sandbox still has series');
    // its supervisor lets go of the range as it exits, a moment after the kill answered
    for (let i = 0; i < 50 && m.value('abx_pool_uid_ranges_used') !== 0; i++) {
      await sleep(100);
      m = await scrape();
    }
    assert.equal(m.value('abx_pool_uid_ranges_used'), 0);
    assert.equal(m.value('abx_pool_uid_ranges_free'), 64);
  } finally {
    await sbx.kill().catch(() => {});
  }
});

test('/metrics: an API key sees only its own sandboxes and no host series; no token or a wrong one is 401', async () => {
  const create = async (key) => {
    const r = await fetch(`${base}/sandboxes`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ templateID: 'base', timeout: 120 }) });
    assert.equal(r.status, 201);
    return (await r.json()).sandboxID;
  };
  const mine = await create(KEY);
  const theirs = await create(OTHER);
  try {
    const asKey = await scrape({ 'X-API-Key': KEY });
    assert.ok(asKey.ids().has(mine));
    assert.ok(!asKey.ids().has(theirs), "another key's sandbox in this key's metrics");
    assert.ok(!asKey.families.some((f) => f.name.startsWith('abx_pool_') || f.name.startsWith('abx_http_')), 'host series for a key');
    assert.equal(asKey.value('abx_sandbox_state', { sandbox_id: mine, state: 'running' }), 1);
    const asOther = await scrape({ 'X-API-Key': OTHER });
    assert.deepEqual([...asOther.ids()], [theirs]);
    const all = await scrape();
    assert.ok(all.ids().has(mine) && all.ids().has(theirs));

    for (const headers of [{}, { Authorization: 'Bearer wrong-token-wrong-token' }, { Authorization: TOKEN },
      { 'X-API-Key': `e2b_${'00'.repeat(20)}` }, { Authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }]) {
      const r = await fetch(`${base}/metrics`, { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      const body = await r.text();
      assert.ok(!body.includes(mine) && !body.includes(TOKEN));
    }
  } finally {
    for (const [id, key] of [[mine, KEY], [theirs, OTHER]])
      await fetch(`${base}/sandboxes/${id}`, { method: 'DELETE', headers: { 'X-API-Key': key } });
  }
});

test('abx serve --metrics-token-file: a missing or too short token is refused at start, and the token is never printed', () => {
  const short = path.join(H.home, 'short-token');
  fs.writeFileSync(short, 'abc\n');
  let r = runAbx(['serve', '--listen', '127.0.0.1:0', '--metrics-token-file', short], { env: H.env });
  assert.equal(r.status, 125);
  assert.match(r.stderr, /E8\d{3}.*--metrics-token-file/s);
  r = runAbx(['serve', '--listen', '127.0.0.1:0', '--metrics-token-file', path.join(H.home, 'absent')], { env: H.env });
  assert.equal(r.status, 125);
  assert.match(r.stderr, /cannot read/);
  const help = runAbx(['serve', '--help'], { env: H.env });
  assert.match(help.stdout, /--metrics-token-file/);
  assert.ok(!srv.stderr().includes(TOKEN), 'the token in abx serve\'s output');
});
