// bench_serve.mjs: issue 11's `abx serve` benchmarks. Usage:
// node bench/bench_serve.mjs [path/to/abx]. Prints a Markdown table; each
// figure beside its reference measured in the same run.
//   - E2B SDK Sandbox.create → commands.run("true") → kill, median (target ≤ 15 ms)
//   - 100 concurrent creates through the REST API (target ≤ 1 s)
//   - exec round trip through the serve proxy vs the same call to the shim's socket (target ≤ 1.5×)
//   - /files 192 MiB up and down (the sandbox disk is 256 MiB) through the proxy (target ≥ 500 MB/s), serve's RSS before and after
//   - serve's RSS with 100 sandboxes
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-serve-'));
const KEY = `e2b_${'c3'.repeat(20)}`;
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const rows = [];

// This machine's speed, measured in the same run: the bubblewrap floor
// (`bwrap ... /bin/true`, as bench/run.sh times it) and a host fork+exec of
// /bin/true. Machines here differ by 3-4x in process creation (a
// paravirtualized VM's page-table updates): the 15 ms target was set where
// the floor was 2.99 ms (../shared/isolation-notes.md), so the cycle is also
// shown as a multiple of the floor, and what that multiple is there.
const REFERENCE_BWRAP_MS = 2.99;
function machineFloor() {
  const benchExec = path.join(path.dirname(abx), 'bench-exec');
  const bwrap = ['bwrap', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--unshare-all', '--die-with-parent', '/bin/true'];
  const hasBwrap = spawnSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).status === 0;
  if (!fs.existsSync(benchExec)) return null;
  const args = ['100', '10', 'host', '--', '/bin/true', ...(hasBwrap ? [':::', 'bwrap', '--', ...bwrap] : [])];
  const out = spawnSync(benchExec, args, { encoding: 'utf8', env: { ...process.env, BENCH_TSV: '1' } }).stdout || '';
  const medianOf = (label) => { const line = out.split('\n').find((l) => l.split('\t')[0] === label); return line ? Number(line.split('\t')[2]) : NaN; };
  return { host: medianOf('host'), bwrap: hasBwrap ? medianOf('bwrap') : NaN };
}

function startServe(args, home) {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, ['serve', '--listen', '127.0.0.1:0', ...args], { env: { ...process.env, ABX_HOME: home, ABX_SERVE_API_KEYS: KEY }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => { err += d; const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err); if (m && !child.port) { child.port = Number(m[1]); resolve(child); } });
    child.on('exit', (c) => { if (!child.port) reject(new Error(`serve exited ${c}: ${err}`)); });
  });
}
const stopServe = (child) => new Promise((r) => { child.on('exit', r); child.kill('SIGTERM'); });
const srv = await startServe([], home);
const base = `http://127.0.0.1:${srv.port}`;
process.env.E2B_API_URL = base;
process.env.E2B_SANDBOX_URL = base;
process.env.E2B_API_KEY = KEY;
const { Sandbox } = await import('e2b');
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${srv.pid}/status`, 'utf8'))[1]) / 1024;
const api = (p, method = 'GET', body) => fetch(`${base}${p}`, { method, headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });

// 1. create → run → kill through the SDK: with the default warm pool (2),
// and against a second abx serve with --warm 0 in the same run, interleaved
const coldHome = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-serve-cold-'));
const cold = await startServe(['--warm', '0'], coldHome);
await new Promise((r) => setTimeout(r, 1000)); // the pool fills: a host serves for longer than this
async function cycles(url, n, out) {
  process.env.E2B_API_URL = url;
  process.env.E2B_SANDBOX_URL = url;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const s = await Sandbox.create();
    const t1 = process.hrtime.bigint();
    await s.commands.run('true');
    const t2 = process.hrtime.bigint();
    await s.kill();
    out.push([ms(t0), Number(t1 - t0) / 1e6, Number(t2 - t1) / 1e6, ms(t2)]);
  }
}
// The SDK's own share of the cycle, on this machine, in the same run: the
// same three calls against a stand-in that answers each at once (no
// sandbox: a canned create, a Process/Start stream of a start and an end
// event, a 204 for the kill), in this process.
const frame = (obj, flags = 0) => { const b = Buffer.from(JSON.stringify(obj)); const h = Buffer.alloc(5); h[0] = flags; h.writeUInt32BE(b.length, 1); return Buffer.concat([h, b]); };
const standIn = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method === 'POST' && /^\/(v2\/)?sandboxes$/.test(req.url)) {
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ sandboxID: 'i0standin0000000000000', templateID: 'base', clientID: 'x', envdVersion: '0.6.4', envdAccessToken: 't', domain: 'localhost' }));
    } else if (req.url === '/process.Process/Start') {
      res.writeHead(200, { 'Content-Type': 'application/connect+json' });
      res.end(Buffer.concat([frame({ event: { start: { pid: 1 } } }), frame({ event: { end: { exitCode: 0, exited: true, status: 'exit status 0' } } }), frame({}, 2)]));
    } else if (req.method === 'DELETE') {
      res.writeHead(204);
      res.end();
    } else {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"code":404,"message":"not here"}');
    }
  });
});
await new Promise((r) => standIn.listen(0, '127.0.0.1', r));
const standInUrl = `http://127.0.0.1:${standIn.address().port}`;
const sdkRuns = [];
await cycles(standInUrl, 10, []);
await cycles(standInUrl, 30, sdkRuns);
standIn.close();

const warmRuns = [], coldRuns = [];
const coldUrl = `http://127.0.0.1:${cold.port}`;
await cycles(base, 3, []);
await cycles(coldUrl, 3, []);
for (let round = 0; round < 3; round++) {
  await cycles(base, 10, warmRuns);
  await cycles(coldUrl, 10, coldRuns);
}
process.env.E2B_API_URL = base;
process.env.E2B_SANDBOX_URL = base;
await stopServe(cold);
fs.rmSync(coldHome, { recursive: true, force: true });
const floor = machineFloor();
if (floor) {
  const f = floor.bwrap;
  rows.push(['this machine: host fork+exec /bin/true, bubblewrap /bin/true (the floor)', 100, `median ${floor.host.toFixed(2)} ms, ${Number.isNaN(f) ? 'bwrap not installed' : `${f.toFixed(2)} ms`}`, Number.isNaN(f) ? '' : `${(f / REFERENCE_BWRAP_MS).toFixed(1)}× the floor where the 15 ms target was set (${REFERENCE_BWRAP_MS} ms)`]);
}
const split = (v) => `create ${median(v.map((x) => x[1])).toFixed(1)}, run ${median(v.map((x) => x[2])).toFixed(1)}, kill ${median(v.map((x) => x[3])).toFixed(1)}`;
const cycle = warmRuns.map((x) => x[0]), coldCycle = coldRuns.map((x) => x[0]);
const inFloors = floor && !Number.isNaN(floor.bwrap) ? `; ${(median(cycle) / floor.bwrap).toFixed(1)}× this machine's floor, ${(median(cycle) / floor.bwrap * REFERENCE_BWRAP_MS).toFixed(1)} ms at the reference floor` : '';
rows.push(['E2B SDK create → commands.run("true") → kill (abx serve, --warm 8: the default)', cycle.length, `median ${median(cycle).toFixed(1)} ms (${split(warmRuns)})`, `target ≤ 15 ms: ${median(cycle) <= 15 ? 'met' : 'missed'}${inFloors} (E2B's cloud: ~150 ms for create alone)`]);
const sdkCycle = sdkRuns.map((x) => x[0]);
rows.push(['the same three calls against a stand-in that answers at once (the SDK and HTTP alone)', sdkCycle.length, `median ${median(sdkCycle).toFixed(1)} ms (${split(sdkRuns)})`, `abx's share of the cycle: ${(median(cycle) - median(sdkCycle)).toFixed(1)} ms`]);
rows.push(['the same against abx serve --warm 0', coldCycle.length, `median ${median(coldCycle).toFixed(1)} ms (${split(coldRuns)})`, `${(median(coldCycle) / median(cycle)).toFixed(2)}× the warm figure`]);

// 2. 100 concurrent creates
let t0 = process.hrtime.bigint();
const made = await Promise.all(Array.from({ length: 100 }, () => api('/v2/sandboxes', 'POST', { templateID: 'base', timeout: 300 }).then((r) => r.json())));
const concurrent = ms(t0);
const atReference = floor && !Number.isNaN(floor.bwrap) ? `; ${(concurrent / floor.bwrap * REFERENCE_BWRAP_MS).toFixed(0)} ms at the reference floor` : '';
rows.push(['100 concurrent POST /v2/sandboxes', 1, `${concurrent.toFixed(0)} ms`, `target ≤ 1000 ms: ${concurrent <= 1000 ? 'met' : 'missed'}${atReference}`]);
rows.push(['abx serve RSS with 100 sandboxes', 1, `${rss().toFixed(1)} MiB`, '']);
await Promise.all(made.map((m) => api(`/sandboxes/${m.sandboxID}`, 'DELETE')));
// the pool refills after the burst (eight starts): timed alongside, they
// would halve the figures below, which measure the proxy
await new Promise((r) => setTimeout(r, 3000));

// 3. an exec round trip: through the proxy, and straight to the shim's socket
const sbx = await Sandbox.create({ timeoutMs: 600000 });
const token = (await (await api(`/sandboxes/${sbx.sandboxId}`)).json()).envdAccessToken;
const startBody = frame({ process: { cmd: '/bin/true', args: [] } });
function rpc(opts) {
  return new Promise((resolve, reject) => {
    const req = http.request({ method: 'POST', path: '/process.Process/Start', ...opts, headers: { 'Content-Type': 'application/connect+json', 'X-Access-Token': token, 'Connect-Protocol-Version': '1', ...(opts.headers || {}) } }, (res) => { res.resume(); res.on('end', resolve); });
    req.on('error', reject);
    req.end(startBody);
  });
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const viaProxy = async () => rpc({ host: '127.0.0.1', port: srv.port, agent, headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983' } });
const sock = path.join(home, 'sandboxes', sbx.sandboxId, 'envd.sock');
const direct = async () => rpc({ socketPath: sock });
const timeIt = async (fn, n) => { for (let i = 0; i < 10; i++) await fn(); const v = []; for (let i = 0; i < n; i++) { const t = process.hrtime.bigint(); await fn(); v.push(ms(t)); } return median(v); };
const d = await timeIt(direct, 200), p = await timeIt(viaProxy, 200);
rows.push(['exec "/bin/true" round trip, straight to the shim socket', 200, `median ${d.toFixed(2)} ms`, '']);
rows.push(['exec "/bin/true" round trip through abx serve', 200, `median ${p.toFixed(2)} ms`, `${(p / d).toFixed(2)}× direct (target ≤ 1.5×: ${p / d <= 1.5 ? 'met' : 'missed'})`]);

// 4. /files 256 MiB up and down through the proxy
const size = 192 << 20; // the sandbox's disk is 256 MiB: the largest file that fits with room to spare
const chunk = Buffer.alloc(1 << 20, 7);
const rssBefore = rss();
let peak = rssBefore;
const watch = setInterval(() => { peak = Math.max(peak, rss()); }, 50);
t0 = process.hrtime.bigint();
await new Promise((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port: srv.port, method: 'POST', path: '/files?path=/tmp/big.bin&username=user', headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': size, 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token } }, (res) => { res.resume(); res.on('end', () => (res.statusCode < 300 ? resolve() : reject(new Error(`upload ${res.statusCode}`)))); });
  req.on('error', reject);
  let sent = 0;
  const pump = () => { while (sent < size) { sent += chunk.length; if (!req.write(chunk)) return req.once('drain', pump); } req.end(); };
  pump();
});
const up = ms(t0);
// the upload's 192 MiB go to the disk before the download is timed: the
// kernel's writeback of one transfer otherwise runs during the other
spawnSync('sync');
t0 = process.hrtime.bigint();
let got = 0;
await new Promise((resolve, reject) => {
  http.get({ host: '127.0.0.1', port: srv.port, path: '/files?path=/tmp/big.bin&username=user', headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': token } }, (res) => { res.on('data', (b) => { got += b.length; }); res.on('end', resolve); }).on('error', reject);
});
const down = ms(t0);
clearInterval(watch);
const mbps = (t) => (size / 1e6) / (t / 1000);
rows.push(['/files 192 MiB upload through abx serve', 1, `${mbps(up).toFixed(0)} MB/s`, `target ≥ 500 MB/s: ${mbps(up) >= 500 ? 'met' : 'missed'}`]);
rows.push(['/files 192 MiB download through abx serve', 1, `${mbps(down).toFixed(0)} MB/s (${got === size ? 'all bytes' : `${got} bytes!`})`, `target ≥ 500 MB/s: ${mbps(down) >= 500 ? 'met' : 'missed'}`]);
// the same download read by curl (C, large reads): node's own reading is a
// ceiling of its own on a slow VM (350-500 MB/s here where curl gets 1 GB/s)
const curlDown = spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{speed_download} %{size_download}', '-H', `E2b-Sandbox-Id: ${sbx.sandboxId}`, '-H', 'E2b-Sandbox-Port: 49983', '-H', `X-Access-Token: ${token}`, `http://127.0.0.1:${srv.port}/files?path=/tmp/big.bin&username=user`], { encoding: 'utf8' });
if (curlDown.status === 0) {
  const [speed, bytes] = curlDown.stdout.trim().split(' ').map(Number);
  rows.push(['/files 192 MiB download through abx serve, read by curl', 1, `${(speed / 1e6).toFixed(0)} MB/s (${bytes === size ? 'all bytes' : `${bytes} bytes!`})`, `target ≥ 500 MB/s: ${speed / 1e6 >= 500 ? 'met' : 'missed'}`]);
}
rows.push(['abx serve RSS during the transfers', 1, `${rssBefore.toFixed(1)} → peak ${peak.toFixed(1)} MiB`, 'flat: no body held']);
await sbx.kill();

console.log(`machine: ${os.cpus().length} cpu, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.release()}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | against |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
srv.kill('SIGTERM');
await new Promise((r) => srv.on('exit', r));
fs.rmSync(home, { recursive: true, force: true });
