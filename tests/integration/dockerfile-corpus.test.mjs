// dockerfile-corpus.test.mjs: the Dockerfile corpus (tests/dockerfiles/)
// built by `abx template build` and by Debian's Docker from the same base
// root, the two results compared: environment, user, working directory,
// command, entrypoint and every file's path, type, mode, owner and bytes
// (tests/dockerfiles/corpus.mjs; Docker is the oracle). CI runs the
// quarter tests/dockerfiles/CI lists; ABX_CORPUS=all runs every case (as
// `node tests/dockerfiles/run.mjs` does). dockerd runs on a data root of
// the test's own and stops after; the build cache is the machine's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { privateHome } from '../lib/harness.mjs';
import { workDir } from '../lib/oci-world.mjs';
import { cases, runCorpus, here } from '../dockerfiles/corpus.mjs';
import { abx } from '../lib/harness.mjs';

const all = cases();
const names = process.env.ABX_CORPUS === 'all' ? all : cases({ ci: true });
const H = privateHome('abx-corpus');
const results = new Map();
let setupError = null;

before(async () => {
  assert.equal(process.getuid(), 0, 'the corpus runs as root (abx template build and dockerd need it)');
  assert.ok(fs.existsSync('/usr/sbin/dockerd'), 'dockerd is missing: sh abx.sh test installs docker.io');
  const work = workDir('abx-corpus');
  try {
    await runCorpus(names, { abx, env: H.env, work, onCase: (r) => results.set(r.name, r) });
  } catch (e) {
    setupError = e;
  }
});
after(() => H.cleanup());

test('the corpus: at least 30 Dockerfiles; CI runs at least a quarter of them', () => {
  assert.ok(all.length >= 30, `${all.length} cases in ${here}`);
  const ci = cases({ ci: true });
  assert.ok(ci.length * 4 >= all.length, `CI runs ${ci.length} of ${all.length}`);
  for (const n of all) {
    const df = fs.readFileSync(path.join(here, n, 'Dockerfile'), 'utf8');
    assert.match(df, /^ARG BASE=debian:bookworm-slim$/m, `${n}: the base is named through ARG BASE`);
    assert.match(df, /^FROM \$\{BASE\}/m, `${n}: FROM \${BASE}`);
  }
});

for (const name of names) {
  test(`${name}: abx and Docker build the same image`, { timeout: 1800000 }, () => {
    assert.equal(setupError, null, setupError && setupError.stack);
    const r = results.get(name);
    assert.ok(r, `${name} did not run`);
    assert.equal(r.error, undefined, r.error);
    assert.deepEqual(r.differences, [], `${name} differs:\n${r.differences.slice(0, 60).join('\n')}`);
    assert.ok(r.files > 1000, `${name}: ${r.files} files: the comparison read a whole tree`);
  });
}
