// bench_scale.mjs: issue 29's scale figures. Usage (root):
//   node bench/bench_scale.mjs [path/to/abx] [idle sandboxes, default 500]
// Each figure beside its floor measured in the same run, interleaved:
//   - `abx run -- /bin/true` against bubblewrap --unshare-all, with no
//     sandbox alive, then with N idle ones alive: the per-start cost that
//     grows with the host's sandboxes is the change of that ratio
//   - create-to-ready with N alive against with none
//   - N sequential kills: median, slowest, how many over 100 ms
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const idle = Number(process.argv[3] || 500);
const pairs = Number(process.env.PAIRS || 30);
const work = fs.mkdtempSync(path.join('/var/tmp', 'abx-bench-scale-'));
const env = { ...process.env, ABX_HOME: path.join(work, 'home') };
const run = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 16 << 20 });
const timed = (cmd, args) => {
  const t0 = process.hrtime.bigint();
  const r = run(cmd, args);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.slice(-1000)}`);
  return [ms, r.stdout];
};
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const spread = (v) => { const s = [...v].sort((a, b) => a - b); return `${s[Math.floor(s.length / 10)].toFixed(1)}–${s[Math.floor(s.length * 9 / 10)].toFixed(1)}`; };
const bwrap = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib',
  '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--unshare-all',
  '--die-with-parent', '/bin/true'];

// `abx run` and bubblewrap, interleaved; create-to-ready and its floor (bubblewrap) too
function startCosts() {
  const a = [], b = [], c = [], cb = [];
  for (let i = 0; i < pairs; i++) {
    b.push(timed('bwrap', bwrap)[0]);
    a.push(timed(abx, ['run', '--', '/bin/true'])[0]);
    cb.push(timed('bwrap', bwrap)[0]);
    const [ms, out] = timed(abx, ['create', '--timeout', '120']);
    const id = out.trim();
    const [ems] = timed(abx, ['exec', id, 'true']);
    c.push(ms + ems);
    run(abx, ['kill', id]);
  }
  return { run: a, bwrap: b, ready: c, readyFloor: cb };
}

const rows = [];
const made = [];
try {
  const none = startCosts();
  for (let i = 0; i < idle; i++) made.push(timed(abx, ['create', '--timeout', '1800'])[1].trim());
  const many = startCosts();
  const r0 = median(none.run) / median(none.bwrap), rN = median(many.run) / median(many.bwrap);
  rows.push([`abx run -- /bin/true, none alive`, pairs, `${median(none.run).toFixed(1)} ms (${spread(none.run)})`,
    `${r0.toFixed(2)}× bubblewrap (${median(none.bwrap).toFixed(1)} ms)`]);
  rows.push([`abx run -- /bin/true, ${idle} idle alive`, pairs, `${median(many.run).toFixed(1)} ms (${spread(many.run)})`,
    `${rN.toFixed(2)}× bubblewrap (${median(many.bwrap).toFixed(1)} ms); ${(rN / r0).toFixed(3)}× the ratio with none (goal ≤ 1.05×)`]);
  const c0 = median(none.ready) / median(none.readyFloor), cN = median(many.ready) / median(many.readyFloor);
  rows.push([`create-to-ready (CLI create + exec true), ${idle} idle alive`, pairs, `${median(many.ready).toFixed(1)} ms`,
    `${cN.toFixed(2)}× bubblewrap; ${(cN / c0).toFixed(3)}× the ratio with none (${c0.toFixed(2)}×)`]);
  const kills = [];
  while (made.length) {
    const id = made.pop();
    kills.push(timed(abx, ['kill', id])[0]);
  }
  const slow = kills.filter((k) => k > 100).length;
  rows.push([`abx kill, ${kills.length} sequential`, kills.length, `${median(kills).toFixed(1)} ms median`,
    `slowest ${Math.max(...kills).toFixed(1)} ms (${(Math.max(...kills) / median(kills)).toFixed(1)}× the median); ${slow} over 100 ms`]);
} finally {
  for (const id of made) run(abx, ['kill', id]);
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(`machine: ${(await import('node:os')).cpus().length} cpu, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | against the floor (same run) |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
