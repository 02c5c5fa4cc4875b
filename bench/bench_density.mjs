// bench_density.mjs: issue 29's density figure, by hand (root): N idle
// sandboxes (default 8192) created one after another, listed, measured
// (PSS of every shim and init, the host's free memory), then killed.
//   node bench/bench_density.mjs [path/to/abx] [N]
// Prints a Markdown table: create and kill times by thousand (does a start
// slow as the host fills?), the list, memory per sandbox. It needs the uid
// pool's 8192 ranges free and pid_max above 3 × N (an idle sandbox is its
// shim's two threads and init); it stops at the first failed create and
// reports how far it got. Every sandbox it made is killed, whatever happens.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const built = process.argv[2] || path.join(root, 'build/abx');
const want = Number(process.argv[3] || 8192);
const work = fs.mkdtempSync(path.join('/var/tmp', 'abx-bench-density-'));
const home = path.join(work, 'home');
// copies of abx and its shim: a rebuild during the run cannot pull them away
const abx = path.join(work, 'abx');
fs.copyFileSync(built, abx);
fs.copyFileSync(path.join(path.dirname(built), 'abx-shim'), path.join(work, 'abx-shim'));
fs.chmodSync(abx, 0o755);
fs.chmodSync(path.join(work, 'abx-shim'), 0o755);
const env = { ...process.env, ABX_HOME: home, ABX_SHIM: path.join(work, 'abx-shim') };
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sh = (args) => spawnSync(abx, args, { encoding: 'utf8', env, maxBuffer: 256 << 20 });
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const meminfo = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync('/proc/meminfo', 'utf8'))[1]);
const memAvailable = () => meminfo('MemAvailable');
const kernelParts = ['Slab', 'KernelStack', 'PageTables', 'Percpu', 'Shmem'];
const kernelNow = () => Object.fromEntries(kernelParts.map((k) => [k, meminfo(k)]));
function pssOfSandboxes() {
  let pss = 0, procs = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let comm = '';
    try { comm = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { continue; }
    if (comm !== 'abx-shim' && comm !== 'abx-init') continue;
    try {
      pss += Number(/Pss:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))[1]);
      procs++;
    } catch { /* it ended */ }
  }
  return { pss, procs };
}

const made = [], createMs = [], rows = [];
const freeBefore = memAvailable(), kernelBefore = kernelNow();
let failure = '';
try {
  for (let i = 0; i < want; i++) {
    const t0 = now();
    const r = sh(['create', '--timeout', '3600']);
    const ms = now() - t0;
    if (r.status !== 0) { failure = `create #${i + 1}: ${r.stderr.trim().slice(0, 300)}`; break; }
    made.push(r.stdout.trim());
    createMs.push(ms);
    if ((i + 1) % 1000 === 0) process.stderr.write(`bench_density: ${i + 1} alive\n`);
  }
  for (let k = 0; k < createMs.length; k += 1000) {
    const slice = createMs.slice(k, k + 1000);
    rows.push([`abx create, sandboxes ${k + 1}–${k + slice.length}`, slice.length, `median ${median(slice).toFixed(1)} ms, slowest ${Math.max(...slice).toFixed(0)} ms`]);
  }
  const { pss, procs } = pssOfSandboxes();
  const freeAfter = memAvailable(), kernelAfter = kernelNow();
  const parts = kernelParts.map((k) => `${k} ${((kernelAfter[k] - kernelBefore[k]) / made.length).toFixed(0)}`).join(', ');
  rows.push([`idle sandboxes alive`, made.length, `${procs} processes; PSS ${(pss / made.length).toFixed(0)} KiB per sandbox (${(pss / 1048576).toFixed(2)} GiB in all); host MemAvailable down ${((freeBefore - freeAfter) / 1048576).toFixed(2)} GiB (${((freeBefore - freeAfter) / made.length).toFixed(0)} KiB per sandbox, kernel objects included; of it, KiB per sandbox: ${parts})`]);
  let t0 = now();
  const page = sh(['list', '--json']);
  const pageMs = now() - t0;
  rows.push([`abx list (first page of 100)`, 1, `${pageMs.toFixed(0)} ms`]);
  t0 = now();
  let listed = 0;
  for (let offset = 0; ; offset += 100) {
    const r = sh(['list', '--json', '--offset', String(offset)]);
    const items = r.status === 0 ? JSON.parse(r.stdout) : [];
    listed += items.length;
    if (items.length < 100) break;
  }
  rows.push([`abx list, every page`, listed, `${(now() - t0).toFixed(0)} ms for ${listed} sandboxes (${page.status === 0 ? 'ok' : 'failed'})`]);
} finally {
  const killMs = [];
  while (made.length) {
    const id = made.pop();
    const t0 = now();
    const r = sh(['kill', id]);
    if (r.status === 0) killMs.push(now() - t0);
    else failure += `\nkill ${id}: ${(r.stderr || String(r.error)).trim().slice(0, 200)}`;
  }
  if (killMs.length) rows.push([`abx kill, one after another`, killMs.length, `median ${median(killMs).toFixed(1)} ms, slowest ${Math.max(...killMs).toFixed(0)} ms, ${killMs.filter((k) => k > 100).length} over 100 ms`]);
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(`machine: ${os.cpus().length} cpu, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, kernel ${os.release()}, ${new Date().toISOString().slice(0, 10)}; pid_max ${fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()}\n`);
if (failure) console.log(`stopped early: ${failure}\n`);
console.log('| measure | n | figure |');
console.log('| --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
