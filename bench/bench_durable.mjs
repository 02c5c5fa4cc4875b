// bench_durable.mjs: issue 28's figures. Usage (root):
//   node bench/bench_durable.mjs [path/to/abx]
// Each figure beside a reference measured in the same run, interleaved:
//   - a snapshot of a code-interpreter-v1 sandbox with a 100 MiB writable
//     layer: time paused, total time, disk used; against cp of those 100 MiB
//   - fork x10 (time to all ten ready) against ten creates from the template
//   - create-to-ready from a snapshot against from its template (goal <= 1.2x)
//   - resume of a durable sandbox after a restart (its shim SIGKILLed)
//     against creating it
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const work = fs.mkdtempSync(path.join('/var/tmp', 'abx-bench-durable-'));
const home = path.join(work, 'home');
const env = { ...process.env, ABX_HOME: home };
const run = (args) => spawnSync(abx, args, { encoding: 'utf8', env, maxBuffer: 64 << 20 });
const check = (r, what) => { if (r.status !== 0) throw new Error(`${what}: ${r.stderr.slice(-2000)}`); return r.stdout; };
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const timed = (f) => { const t0 = process.hrtime.bigint(); const r = f(); return [Number(process.hrtime.bigint() - t0) / 1e6, r]; };
const used = () => { const s = fs.statfsSync(home); return (s.blocks - s.bfree) * s.bsize; };
const ms = (x) => `${x.toFixed(1)} ms`;
const rows = [];
const made = [];
const create = (args) => { const id = check(run(['create', '--timeout', '600', ...args]), 'create').trim(); made.push(id); return id; };
const ready = (id) => check(run(['exec', id, 'true']), 'exec');
const kill = (id) => { run(['kill', id]); };

try {
  check(run(['template', 'build', '--builtin', 'code-interpreter-v1']), 'code-interpreter-v1');

  // 1. a snapshot of 100 MiB written, against cp of the same 100 MiB on this disk
  const paused = [], total = [], disk = [], cp = [];
  const blob = path.join(work, 'blob');
  for (let i = 0; i < 5; i++) {
    const id = create(['--template', 'code-interpreter-v1', '--memory', '1024']);
    check(run(['exec', id, 'head -c 104857600 /dev/urandom > /home/user/blob && sync']), 'write');
    const before = used();
    const [t, out] = timed(() => check(run(['snapshot', 'create', id, '--name', `b${i}`, '--json']), 'snapshot'));
    total.push(t);
    paused.push(JSON.parse(out).snapshot.paused_ms);
    spawnSync('sync');
    disk.push(used() - before);
    kill(id);
    fs.writeFileSync(blob, Buffer.alloc(104857600, i));
    spawnSync('sync');
    cp.push(timed(() => spawnSync('cp', [blob, `${blob}.copy`]))[0]);
    fs.rmSync(`${blob}.copy`);
  }
  rows.push(['snapshot, 100 MiB written (code-interpreter-v1, 75k files): time paused', 5, ms(median(paused)), `${(median(paused) / median(cp)).toFixed(2)}× cp of 100 MiB (${ms(median(cp))})`]);
  rows.push(['snapshot, 100 MiB written: total (abx snapshot create)', 5, ms(median(total)), `${(median(total) / median(cp)).toFixed(2)}× cp of 100 MiB`]);
  rows.push(['snapshot, 100 MiB written: disk used', 5, `${(median(disk) / 1048576).toFixed(1)} MiB`, 'of a 1.7 GiB template: the rest is linked']);

  // 2. create-to-ready from a snapshot against from its template, interleaved
  const fromSnap = [], fromTpl = [];
  for (let i = 0; i < 15; i++) {
    fromTpl.push(timed(() => { const id = create(['--template', 'code-interpreter-v1']); ready(id); kill(id); })[0]);
    fromSnap.push(timed(() => { const id = create(['--template', 'b0']); ready(id); kill(id); })[0]);
  }
  const ratio = median(fromSnap) / median(fromTpl);
  rows.push(['create-to-ready from a snapshot (create + exec true + kill)', 15, ms(median(fromSnap)), `${ratio.toFixed(2)}× from its template (${ms(median(fromTpl))}); goal ≤ 1.2×: ${ratio <= 1.2 ? 'met' : 'missed'}`]);

  // 3. fork x10 against ten creates from the template
  const forks = [], tens = [];
  for (let i = 0; i < 3; i++) {
    const parent = create(['--template', 'code-interpreter-v1']);
    check(run(['exec', parent, 'echo state > /home/user/s']), 'write');
    const [t, out] = timed(() => { const ids = check(run(['fork', parent, '--count', '10']), 'fork').trim().split('\n'); ids.forEach(ready); return ids; });
    forks.push(t);
    out.forEach(kill);
    kill(parent);
    tens.push(timed(() => { const ids = []; for (let k = 0; k < 10; k++) ids.push(create(['--template', 'code-interpreter-v1'])); ids.forEach(ready); ids.forEach(kill); })[0]);
  }
  rows.push(['fork ×10: all ten ready (fork + exec true in each)', 3, ms(median(forks)), `${(median(forks) / median(tens)).toFixed(2)}× ten creates from the template (${ms(median(tens))})`]);

  // 4. resume of a durable sandbox after a restart, against creating one
  const resumes = [], creates = [];
  for (let i = 0; i < 10; i++) {
    const [c, id] = timed(() => { const d = create(['--persistent']); ready(d); return d; });
    creates.push(c);
    check(run(['exec', id, 'echo kept > /home/user/k && sync']), 'write');
    const meta = JSON.parse(fs.readFileSync(path.join(home, 'sandboxes', id.replace('local:', ''), 'meta.json'), 'utf8'));
    process.kill(meta.shim_pid, 'SIGKILL');
    for (let w = 0; w < 200 && JSON.parse(check(run(['info', id, '--json']), 'info')).status !== 'paused'; w++) spawnSync('sleep', ['0.02']);
    resumes.push(timed(() => { check(run(['resume', id]), 'resume'); ready(id); })[0]);
    kill(id);
  }
  rows.push(['resume of a durable sandbox after a restart (resume + exec true)', 10, ms(median(resumes)), `${(median(resumes) / median(creates)).toFixed(2)}× creating it (${ms(median(creates))})`]);
} finally {
  for (const id of made) run(['kill', id]);
  fs.rmSync(work, { recursive: true, force: true });
}

console.log(`machine: ${spawnSync('nproc').stdout.toString().trim()} cpu, kernel ${spawnSync('uname', ['-r']).stdout.toString().trim()}, ${new Date().toISOString().slice(0, 10)}`);
console.log();
console.log('| measure | n | figure | against the reference (same run) |');
console.log('| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
