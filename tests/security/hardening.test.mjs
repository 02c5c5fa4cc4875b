// hardening.test.mjs: what a sandbox process starts with, whatever abx
// inherited: every rlimit from abx's table, /proc without the host's
// kernel internals (Docker's masks and the kernel command line), and
// stragglers killed through the v1 freezer.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { abx, runAbx, privateHome, cgroupLeftovers, cgroupName } from '../lib/harness.mjs';

const H = privateHome('abx-hardening');
after(() => H.cleanup());

test('every rlimit is reset to abx\'s table, not inherited from the caller', () => {
  // the caller raises what it may: a stack without limit, core dumps on
  const r = spawnSync('prlimit', ['--stack=unlimited', '--core=unlimited', '--', abx, 'run', '--', 'bash', '-c',
    'ulimit -s; ulimit -c; ulimit -n; ulimit -Hn; ulimit -u; ulimit -q; ulimit -i; ulimit -e; ulimit -r; ulimit -l'],
  { encoding: 'utf8', env: H.env });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), ['8192', '0', '1024', '4096', '32768', '819200', '8192', '0', '0', '8192']);
});

test('/proc hides the host kernel\'s internals and command line', () => {
  const host = fs.readFileSync('/proc/cmdline', 'utf8');
  assert.ok(host.length > 0);
  const r = runAbx(['run', '--', 'sh', '-c', 'wc -c < /proc/cmdline; cat /proc/kcore /proc/timer_list /proc/sched_debug /proc/keys /proc/kallsyms /proc/slabinfo /proc/vmallocinfo /proc/config.gz 2>/dev/null | wc -c; ls -A /proc/acpi | wc -l'], { env: H.env });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n').map((x) => x.trim()), ['0', '0', '0']);
});

test('a persistent sandbox\'s processes sit in a v1 freezer leaf, which goes with it', { skip: !fs.existsSync('/sys/fs/cgroup/freezer') && 'skipped: no cgroup v1 freezer on this host' }, async () => {
  const id = runAbx(['create', '--timeout', '60'], { env: H.env }).stdout.trim().replace('local:', '');
  try {
    runAbx(['exec', '--background', id, 'for i in 1 2 3; do sleep 300 & done; wait'], { env: H.env });
    const name = cgroupName(H.home, id);
    assert.match(name, /^s[0-9a-f]{20}$/, 'the cgroups are named apart from the id');
    const leaf = `/sys/fs/cgroup/freezer/abx/${name}`;
    const read = () => fs.readFileSync(`${leaf}/cgroup.procs`, 'utf8').trim().split('\n').filter(Boolean);
    let members = read();
    for (let i = 0; i < 100 && members.length < 5; i++) { // init, the shell and its three sleeps, once started
      await new Promise((r) => setTimeout(r, 50));
      members = read();
    }
    assert.ok(members.length >= 5, `freezer members: ${members}`);
    assert.equal(runAbx(['kill', id], { env: H.env }).status, 0);
    for (const pid of members) assert.ok(!fs.existsSync(`/proc/${pid}`), `pid ${pid} outlived the sandbox`);
    assert.deepEqual(cgroupLeftovers(name), []);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});
