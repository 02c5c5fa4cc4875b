// bench_oci.mjs: issue 25's benchmarks, abx-oci against runc, interleaved
// in one run (as root). Usage:
//   node bench/bench_oci.mjs [path/to/abx]     (abx-oci beside it)
// Prints a Markdown table of medians and ratios to runc measured in the
// same run. Goals: `podman run --rm IMAGE true` and `ctr run --rm` under
// abx-oci <= 1.1x runc; a bundle's create -> start -> exit <= 1.2x runc;
// the same with the sandbox profile (run.abx.profile=sandbox). Podman and
// containerd run on state of this run's (tests/lib/oci-world.mjs), removed
// at the end.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
if (process.argv[2]) process.env.ABX_BIN = path.resolve(process.argv[2]);
const { abxOci, RUNC, sh, workDir, busyboxRoot, bundle, podmanWorld, importImage, containerdWorld } =
  await import(path.join(root, 'tests/lib/oci-world.mjs'));

const N = Number(process.env.RUNS || 30);
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const time = (f) => { const t0 = process.hrtime.bigint(); f(); return Number(process.hrtime.bigint() - t0) / 1e6; };

const work = workDir('abx-bench-oci');
const rootfs = busyboxRoot(path.join(work, 'rootfs'));
const podman = podmanWorld(path.join(work, 'podman'));
importImage(podman, rootfs);
const ULIMITS = ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096'];

/** Runs each case's f N times, interleaved (a, b, a, b ...): medians in ms. */
function interleaved(cases) {
  const t = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (const [k, f] of Object.entries(cases)) f(); // warm: caches, the image, the first cgroup
  for (let i = 0; i < N; i++) for (const [k, f] of Object.entries(cases)) t[k].push(time(f));
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)]));
}

const must = (r, what) => { if (r.status !== 0) throw new Error(`${what}: ${r.stderr}`); };
const rows = [];
function table(title, m, floor) {
  for (const [k, v] of Object.entries(m)) rows.push(`| ${title} | ${k} | ${v.toFixed(1)} ms | ${(v / m[floor]).toFixed(2)}x |`);
}

// podman run --rm IMAGE true
const podmanRun = (runtime, extra = []) => () =>
  must(podman(['run', '--rm', '--runtime', runtime, '--network', 'none', ...ULIMITS, ...extra, 'localhost/bb', 'true']), 'podman run');
table('podman run --rm IMAGE true', interleaved({
  runc: podmanRun(RUNC), 'abx-oci': podmanRun(abxOci),
  'abx-oci, sandbox profile': podmanRun(abxOci, ['--annotation', 'run.abx.profile=sandbox']),
}), 'runc');

// ctr run --rm
const world = await containerdWorld(path.join(work, 'containerd'));
try {
  const archive = path.join(work, 'bb.tar');
  must(podman(['save', '--format', 'oci-archive', '-o', archive, 'localhost/bb']), 'podman save');
  must(world.ctr(['image', 'import', '--base-name', 'localhost/bb', archive]), 'ctr import');
  let n = 0;
  const ctrRun = (runtime) => () => must(world.ctr(['run', '--rm', '--runtime', 'io.containerd.runc.v2', '--runc-binary', runtime,
    'localhost/bb:latest', `b${process.pid}-${n++}`, 'true']), 'ctr run');
  table('ctr run --rm IMAGE true', interleaved({ runc: ctrRun(RUNC), 'abx-oci': ctrRun(abxOci) }), 'runc');
} finally {
  await world.stop();
}

// a bundle: create -> start -> exit (the runtime alone)
const plain = bundle(path.join(work, 'b-plain'), rootfs, (c) => { c.process.args = ['true']; });
const sandboxed = bundle(path.join(work, 'b-sandbox'), rootfs, (c) => {
  c.process.args = ['true'];
  c.annotations = { 'run.abx.profile': 'sandbox' };
});
let k = 0;
const cycle = (runtime, dir) => () => {
  const id = `c${k++}`, rootDir = path.join(work, `state-${path.basename(runtime)}`);
  const fd = fs.openSync('/dev/null', 'w');
  must(sh(runtime, ['--root', rootDir, 'create', '--bundle', dir, id], { stdio: ['ignore', fd, fd] }), 'create');
  fs.closeSync(fd);
  must(sh(runtime, ['--root', rootDir, 'start', id]), 'start');
  for (let i = 0; i < 2000; i++) {
    const st = JSON.parse(sh(runtime, ['--root', rootDir, 'state', id]).stdout);
    if (st.status === 'stopped') break;
  }
  must(sh(runtime, ['--root', rootDir, 'delete', id]), 'delete');
};
table('bundle create, start, exit, delete', interleaved({
  runc: cycle(RUNC, plain), 'abx-oci': cycle(abxOci, plain), 'abx-oci, sandbox profile': cycle(abxOci, sandboxed),
}), 'runc');

console.log(`machine: ${spawnSync('nproc', { encoding: 'utf8' }).stdout.trim()} cpu, kernel ${spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim()}, ${N} runs each, interleaved\n`);
console.log('| measure | runtime | median | vs runc |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(r);
