// harness-timeouts.test.mjs: the suite's runner flags (abx.sh: a timeout per
// test and a forced exit) turn a test file whose server child hangs into a
// failure in bounded time, rather than a suite that never ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { root, hostProcesses } from '../lib/harness.mjs';

test('a test file whose child hangs fails within its timeout and does not hang the run', () => {
  const flags = (process.env.ABX_NODE_TEST_FLAGS || '--test-timeout=600000 --test-force-exit').split(/\s+/)
    .filter(Boolean).map((f) => (f.startsWith('--test-timeout=') ? '--test-timeout=2000' : f));
  const hang = String(3000 + Math.floor(Math.random() * 500)) + '.25';
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--test', ...flags, path.join(root, 'tests/fixtures/hangs.fixture.mjs')],
    { encoding: 'utf8', timeout: 60000, env: { ...process.env, NODE_TEST_CONTEXT: undefined, ABX_HANG_SECONDS: hang } });
  for (const p of hostProcesses(`sleep ${hang}`)) process.kill(p.pid, 'SIGKILL');
  const secs = (Date.now() - t0) / 1000;
  assert.notEqual(r.signal, 'SIGTERM', 'the run hung until the outer timeout');
  assert.notEqual(r.status, 0, r.stdout);
  assert.match(r.stdout, /# (fail|cancelled) [1-9]/);
  assert.ok(secs < 30, `took ${secs} s`);
});
