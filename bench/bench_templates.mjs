// bench_templates.mjs: issue 13's template figures. Usage:
//   node bench/bench_templates.mjs [path/to/abx]      (root; needs the Debian mirror)
// Each figure beside its reference or target from the same run:
//   - create-to-ready from a template against base (target <= 1.3x)
//   - host disk used by idle sandboxes of a template (only their own writes: none)
//   - a cold build of FROM debian:bookworm-slim + RUN apt-get install python3
//     (a private, empty build cache) and a cached rebuild (target <= 1 s)
//   - importing a 200 MiB OCI image layout (made here: two layers of files)
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const abx = process.argv[2] || path.join(root, 'build/abx');
const work = fs.mkdtempSync(path.join('/var/tmp', 'abx-bench-tpl-'));
const home = path.join(work, 'home');
const cache = path.join(work, 'cache');
const env = { ...process.env, ABX_HOME: home, ABX_BUILD_CACHE: cache };
const run = (args, opts = {}) => spawnSync(abx, args, { encoding: 'utf8', env, maxBuffer: 64 << 20, ...opts });
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const timed = (f) => { const t0 = process.hrtime.bigint(); const r = f(); return [Number(process.hrtime.bigint() - t0) / 1e6, r]; };
const check = (r, what) => { if (r.status !== 0) throw new Error(`${what}: ${r.stderr.slice(-2000)}`); return r; };
const rows = [];
const diskUsed = (dir) => { const s = fs.statfsSync(dir); return (s.blocks - s.bfree) * s.bsize; };

try {
  // 1. a cold build (empty cache) and a cached rebuild
  const ctx = path.join(work, 'ctx');
  fs.mkdirSync(ctx);
  fs.writeFileSync(path.join(ctx, 'Dockerfile'), 'FROM debian:bookworm-slim\nRUN apt-get install -y --no-install-recommends python3\n');
  const [cold] = timed(() => check(run(['template', 'build', 'py', ctx]), 'cold build'));
  const warm = [];
  for (let i = 0; i < 5; i++) warm.push(timed(() => check(run(['template', 'build', 'py', ctx]), 'cached build'))[0]);
  rows.push(['cold build: FROM debian:bookworm-slim + RUN apt-get install python3 (empty cache)', 1, `${(cold / 1000).toFixed(1)} s`, '']);
  rows.push(['the same build again (cached)', 5, `median ${(median(warm) / 1000).toFixed(2)} s`, `target ≤ 1 s: ${median(warm) <= 1000 ? 'met' : 'missed'}`]);

  // 2. create-to-ready, from the template against base, interleaved
  const base = [], tpl = [];
  for (let i = 0; i < 20; i++) {
    for (const [args, out] of [[[], base], [['--template', 'py'], tpl]]) {
      const [ms, r] = timed(() => check(run(['create', '--timeout', '60', ...args]), 'create'));
      out.push(ms);
      run(['kill', r.stdout.trim()]);
    }
  }
  const ratio = median(tpl) / median(base);
  rows.push(['abx create (base, the host view; CLI wall time)', base.length, `median ${median(base).toFixed(1)} ms`, '']);
  rows.push(['abx create --template py', tpl.length, `median ${median(tpl).toFixed(1)} ms`, `${ratio.toFixed(2)}× base (target ≤ 1.3×: ${ratio <= 1.3 ? 'met' : 'missed'})`]);

  // 3. disk: ten idle sandboxes of the template, then one that writes 10 MiB
  const before = diskUsed(home);
  const ids = [];
  for (let i = 0; i < 10; i++) ids.push(check(run(['create', '--timeout', '120', '--template', 'py']), 'create').stdout.trim());
  const idle = diskUsed(home) - before;
  check(run(['exec', ids[0], 'head -c 10485760 /dev/urandom > /home/user/blob']), 'write');
  const written = check(run(['exec', ids[0], 'du -sk /home/user/blob | cut -f1']), 'du').stdout.trim();
  for (const id of ids) run(['kill', id]);
  rows.push(['host disk used by 10 idle sandboxes of the template', 10, `${(idle / 1024).toFixed(0)} KiB in all`, 'their writes go to their own bounded tmpfs layer; the template is shared']);
  rows.push(['a sandbox that writes 10 MiB', 1, `${written} KiB in its own layer`, 'only its own writes']);

  // 4. import of a 200 MiB OCI layout: two gzip layers of incompressible files
  const layout = path.join(work, 'oci');
  const blob = (data) => {
    const hex = crypto.createHash('sha256').update(data).digest('hex');
    fs.mkdirSync(path.join(layout, 'blobs/sha256'), { recursive: true });
    fs.writeFileSync(path.join(layout, 'blobs/sha256', hex), data);
    return { digest: `sha256:${hex}`, size: data.length };
  };
  const layers = [];
  for (let l = 0; l < 2; l++) {
    const dir = path.join(work, `layer${l}`);
    fs.mkdirSync(path.join(dir, `data${l}`), { recursive: true });
    for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(dir, `data${l}`, `f${f}`), crypto.randomBytes(1 << 20));
    check(spawnSync('tar', ['-C', dir, '-czf', `${dir}.tgz`, '.'], { encoding: 'utf8' }), 'tar');
    layers.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...blob(fs.readFileSync(`${dir}.tgz`)) });
  }
  const config = blob(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['A=1'] }, rootfs: { type: 'layers', diff_ids: [] } })));
  const manifest = blob(Buffer.from(JSON.stringify({ schemaVersion: 2, config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config }, layers })));
  fs.writeFileSync(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  fs.writeFileSync(path.join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest }] }));
  const imports = [];
  for (let i = 0; i < 3; i++) {
    imports.push(timed(() => check(run(['template', 'import', `big${i}`, layout]), 'import'))[0]);
    run(['template', 'rm', `big${i}`]);
  }
  const untar = [];
  for (let i = 0; i < 3; i++) {
    fs.rmSync(path.join(work, 'untar'), { recursive: true, force: true });
    fs.mkdirSync(path.join(work, 'untar'));
    untar.push(timed(() => spawnSync('sh', ['-c', `for l in ${work}/layer0.tgz ${work}/layer1.tgz; do tar -xzf $l -C ${work}/untar; done`]))[0]);
  }
  rows.push(['abx template import of a 200 MiB OCI layout (2 gzip layers, digests checked)', 3, `median ${(median(imports) / 1000).toFixed(2)} s`, '']);
  rows.push(['GNU tar -xzf of the same two layers (reference)', 3, `median ${(median(untar) / 1000).toFixed(2)} s`, `abx: ${(median(imports) / median(untar)).toFixed(2)}× tar`]);
} finally {
  spawnSync('sh', ['-c', `for d in ${home}/sandboxes/*; do [ -d "$d" ] && ${abx} kill "$(basename "$d")"; done`], { env });
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(`machine: ${os.cpus().length} cpu, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.release()}, ${new Date().toISOString().slice(0, 10)}\n`);
console.log('| measure | n | figure | against |\n| --- | --- | --- | --- |');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
