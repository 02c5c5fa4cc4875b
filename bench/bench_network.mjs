// bench_network.mjs: issue 12's networking figures, in the test world of
// tests/integration/networld (two namespaces the bench makes and removes;
// nothing leaves them). Usage: node bench/bench_network.mjs [path/to/abx].
// Root only. Each figure beside its reference from the same run:
//   - create-to-ready: `abx create` with --network internet against none (target: +2 ms at most)
//   - TCP throughput sandbox -> web host against the same transfer between the two bare namespaces (target >= 0.8x)
//   - TCP connection set-up with a 1000-entry allow list against internet mode without lists
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildWorld, teardown, inHost, WEB_A, DNS } from '../tests/integration/networld/world.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-bench-net-'));
const env = { ...process.env, ABX_HOME: home, ABX_NET_DNS: DNS };
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const rows = [];
const W = await buildWorld();
const abxw = (args) => inHost(W, [abx, ...args], { env });

// a sink on the web host: reads everything, answers with the byte count
const sinkPy = path.join(W.dir, 'sink.py');
fs.writeFileSync(sinkPy, `
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('${WEB_A}', 9000)); s.listen(64)
while True:
    c, _ = s.accept(); n = 0
    while True:
        b = c.recv(1 << 20)
        if not b: break
        n += len(b)
    c.sendall(str(n).encode()); c.close()
`);
const { spawn } = await import('node:child_process');
const sink = spawn('nsenter', [`--net=${W.inet}`, 'python3', sinkPy], { stdio: 'ignore' });
W.children.push(sink);
const sendScript = (mib) => `python3 -c "
import socket, time
buf = b'x' * (1 << 20); s = socket.create_connection(('${WEB_A}', 9000)); t = time.time()
for _ in range(${mib}): s.sendall(buf)
s.shutdown(socket.SHUT_WR); got = s.recv(64); dt = time.time() - t
print(int(got) / dt / 1e6)"`;
const connectScript = (n) => `python3 -c "
import socket, time
v = []
for _ in range(${n}):
    t = time.perf_counter(); s = socket.create_connection(('${WEB_A}', 80)); v.append(time.perf_counter() - t); s.close()
v.sort(); print(v[len(v)//2] * 1000)"`;

try {
  await new Promise((r) => setTimeout(r, 500));
  // 1. create-to-ready, interleaved
  const none = [], net = [];
  for (let i = 0; i < 25; i++) {
    for (const [args, out] of [[[], none], [['--network', 'internet'], net]]) {
      const t0 = process.hrtime.bigint();
      const r = abxw(['create', '--timeout', '60', ...args]);
      out.push(Number(process.hrtime.bigint() - t0) / 1e6);
      abxw(['kill', r.stdout.trim()]);
    }
  }
  const added = median(net) - median(none);
  rows.push(['abx create, none (CLI wall time, process start included)', none.length, `median ${median(none).toFixed(1)} ms`, '']);
  rows.push(['abx create --network internet', net.length, `median ${median(net).toFixed(1)} ms`, `+${added.toFixed(1)} ms (target ≤ 2 ms: ${added <= 2 ? 'met' : 'missed'})`]);

  // 2. throughput: the sandbox through its veth, filter and NAT, against the bare namespaces
  const id = abxw(['create', '--timeout', '300', '--network', 'internet']).stdout.trim();
  const bare = [], sbx = [];
  for (let i = 0; i < 3; i++) {
    bare.push(Number(inHost(W, ['sh', '-c', sendScript(512)]).stdout.trim()));
    sbx.push(Number(abxw(['exec', id, sendScript(512)]).stdout.trim()));
  }
  const ratio = median(sbx) / median(bare);
  rows.push(['TCP 512 MiB, host namespace -> web host (bare namespaces)', 3, `median ${median(bare).toFixed(0)} MB/s`, '']);
  rows.push(['TCP 512 MiB, sandbox (internet) -> web host', 3, `median ${median(sbx).toFixed(0)} MB/s`, `${ratio.toFixed(2)}× bare (target ≥ 0.8×: ${ratio >= 0.8 ? 'met' : 'missed'})`]);

  // 3. connection set-up with a 1000-entry allow list
  const list = [];
  for (let i = 0; i < 999; i++) list.push('--allow-out', `198.18.${i >> 8}.${i & 255}/32`);
  list.push('--allow-out', `${WEB_A}/32`);
  const big = abxw(['create', '--timeout', '300', ...list]).stdout.trim();
  const plainC = [], bigC = [];
  for (let i = 0; i < 3; i++) {
    plainC.push(Number(abxw(['exec', id, connectScript(300)]).stdout.trim()));
    bigC.push(Number(abxw(['exec', big, connectScript(300)]).stdout.trim()));
  }
  rows.push(['TCP connect to a web host, internet mode, no lists', 900, `median ${median(plainC).toFixed(3)} ms`, '']);
  rows.push(['TCP connect, allowlist of 1000 CIDRs', 900, `median ${median(bigC).toFixed(3)} ms`, `${(median(bigC) / median(plainC)).toFixed(2)}× without lists`]);
  abxw(['kill', id]);
  abxw(['kill', big]);
} finally {
  teardown(W);
  fs.rmSync(home, { recursive: true, force: true });
}
console.log(`machine: ${os.cpus().length} cpu, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.release()}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | against |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
