// scale.test.mjs: no start pays for the host's other sandboxes, and no kill
// stalls (issue 29). Run alone, after the other files (abx.sh: timing
// against a floor means nothing beside other tests' load).
//
// A start is `abx run -- /bin/true`, timed against bubblewrap's
// --unshare-all in the same moment (interleaved pairs), first with no
// sandbox alive, then with ABX_SCALE_IDLE (default 1000; the ASan build's
// run gives fewer: each of its supervisors is 8 MiB) idle ones alive: the
// ratio must not grow by more than 5 %. Then every one of those is killed
// in turn: none may take more than 10x the median kill (a stall was 2 s
// against 35 ms). No absolute time is asserted.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { abx, privateHome, stateIds } from '../lib/harness.mjs';

const IDLE = Number(process.env.ABX_SCALE_IDLE || 1000);
const PAIRS = 40;
const H = privateHome('abx-scale');
after(() => H.cleanup());

const bwrap = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib',
  '--symlink', 'usr/lib64', '/lib64', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--unshare-all',
  '--die-with-parent', '/bin/true'];
function timed(cmd, args) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env: H.env, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`);
  return [ms, r.stdout];
}
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
function startRatio() {
  const runs = [], floors = [];
  for (let i = 0; i < PAIRS; i++) {
    floors.push(timed('bwrap', bwrap)[0]);
    runs.push(timed(abx, ['run', '--', '/bin/true'])[0]);
  }
  return { ratio: median(runs) / median(floors), run: median(runs), floor: median(floors) };
}

const made = [];

test(`abx run costs the same against bubblewrap with ${IDLE} idle sandboxes alive as with none`, () => {
  timed(abx, ['run', '--', '/bin/true']); // the first run makes the state directories
  const none = startRatio();
  for (let i = 0; i < IDLE; i++) made.push(timed(abx, ['create', '--timeout', '3600'])[1].trim());
  assert.equal(stateIds(H.home).filter((d) => !d.startsWith('.')).length, IDLE);
  const many = startRatio();
  const growth = many.ratio / none.ratio;
  console.log(`# none: ${none.run.toFixed(1)} ms vs bwrap ${none.floor.toFixed(1)} ms (${none.ratio.toFixed(2)}x); ` +
    `${IDLE} alive: ${many.run.toFixed(1)} ms vs ${many.floor.toFixed(1)} ms (${many.ratio.toFixed(2)}x); growth ${growth.toFixed(3)}x`);
  assert.ok(growth <= 1.05, `with ${IDLE} sandboxes alive a run costs ${growth.toFixed(3)}x its ratio with none`);
});

test(`${IDLE} sequential kills: none stalls (each within 10x the median)`, () => {
  assert.equal(made.length, IDLE, 'the sandboxes of the test before');
  const kills = [];
  while (made.length) kills.push(timed(abx, ['kill', made.pop()])[0]);
  const mid = median(kills), slowest = Math.max(...kills);
  console.log(`# kills: median ${mid.toFixed(1)} ms, slowest ${slowest.toFixed(1)} ms`);
  assert.ok(slowest <= 10 * mid, `a kill took ${slowest.toFixed(0)} ms against a median of ${mid.toFixed(1)} ms`);
  assert.deepEqual(stateIds(H.home).filter((d) => !d.startsWith('.')), [], 'state left after the kills');
});
