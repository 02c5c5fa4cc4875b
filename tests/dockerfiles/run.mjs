#!/usr/bin/env node
// run.mjs: the Dockerfile corpus from the command line (corpus.mjs says
// what a run does). As root, after `sh abx.sh build`:
//
//   node tests/dockerfiles/run.mjs            every case (sh abx.sh corpus builds first)
//   node tests/dockerfiles/run.mjs --ci       the quarter CI runs (the file CI)
//   node tests/dockerfiles/run.mjs NAME...    those cases
//   --cold    an empty abx build cache and Docker data root (a cold run's time)
//   --json    one JSON object per case on stdout
//
// Exits 1 when a case fails to build or its two results differ.
import fs from 'node:fs';
import path from 'node:path';
import { cases, runCorpus, here } from './corpus.mjs';
import { workDir } from '../lib/oci-world.mjs';

const argv = process.argv.slice(2);
const flags = new Set(argv.filter((a) => a.startsWith('--')));
for (const f of flags) if (!['--ci', '--cold', '--json', '--help'].includes(f)) { console.error(`run.mjs: unknown flag ${f} (--ci, --cold, --json)`); process.exit(2); }
if (flags.has('--help')) { console.log(fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n').slice(1, 13).map((l) => l.replace(/^\/\/ ?/, '')).join('\n')); process.exit(0); }
const named = argv.filter((a) => !a.startsWith('--'));
const all = cases();
for (const n of named) if (!all.includes(n)) { console.error(`run.mjs: no case ${n} (the directories of ${here})`); process.exit(2); }
const names = named.length ? named : cases({ ci: flags.has('--ci') });
const abx = process.env.ABX_BIN || path.resolve(here, '../../build/abx');
const work = workDir('abx-corpus'); // removed at exit, the engine's mounts first
const env = { ...process.env, ABX_HOME: path.join(work, 'home') };
if (flags.has('--cold')) env.ABX_BUILD_CACHE = path.join(work, 'build-cache');
const started = Date.now();
let failed = 0;
await runCorpus(names, {
    abx, env, work,
    onCase: (r) => {
      const bad = r.error || r.differences.length;
      failed += bad ? 1 : 0;
      if (flags.has('--json')) return console.log(JSON.stringify(r));
      if (r.error) return console.log(`FAIL ${r.name}: ${r.error}`);
      console.log(`${bad ? 'DIFF' : 'same'} ${r.name.padEnd(28)} ${r.files} files; abx ${(r.abxMs / 1000).toFixed(1)} s, docker ${(r.dockerMs / 1000).toFixed(1)} s`);
      for (const d of r.differences.slice(0, 40)) console.log(`     ${d}`);
      if (r.differences.length > 40) console.log(`     ... ${r.differences.length - 40} more`);
    },
  });
const secs = ((Date.now() - started) / 1000).toFixed(0);
console.error(`${names.length - failed}/${names.length} cases the same in abx and Docker; ${secs} s${flags.has('--cold') ? ' (cold)' : ''}`);
process.exit(failed ? 1 : 0);
