// run-cli.test.mjs: `abx run` as a user drives it: status codes, streams,
// flags, the sandbox's shape, bad input, and nothing left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { abx, root, runAbx, cgroupLeftovers, hostProcesses, mountCount, waitFor } from '../lib/harness.mjs';

function idOf(r) {
  const m = /(i[a-z0-9]{20})/.exec(r.stdout);
  assert.ok(m, `no sandbox id in ${r.stdout}`);
  return m[1];
}

test('exit status is the command\'s', () => {
  assert.equal(runAbx(['run', '--', 'sh', '-c', 'exit 3']).status, 3);
  assert.equal(runAbx(['run', '--', 'true']).status, 0);
  assert.equal(runAbx(['run', '--', 'false']).status, 1);
});

test('a command ended by signal N gives 128+N', () => {
  assert.equal(runAbx(['run', '--', 'sh', '-c', 'kill -TERM $$']).status, 143);
  assert.equal(runAbx(['run', '--', 'sh', '-c', 'kill -KILL $$']).status, 137);
});

test('--timeout kills the sandbox with status 124', () => {
  const t0 = Date.now();
  const r = runAbx(['run', '--timeout', '1', '--', 'sh', '-c', 'while :; do :; done']);
  assert.equal(r.status, 124);
  const ms = Date.now() - t0;
  assert.ok(ms >= 900 && ms < 8000, `took ${ms} ms`);
});

test('stdin, stdout and stderr pass through separately', () => {
  const input = 'line one\nline two\n' + 'x'.repeat(200000) + '\n';
  const r = runAbx(['run', '--', 'sh', '-c', 'cat; echo to-stderr >&2'], { input });
  assert.equal(r.status, 0);
  assert.equal(r.stdout, input);
  assert.equal(r.stderr, 'to-stderr\n');
});

test('the sandbox: hostname is its id, user is uid 1000 in /app, root on request', () => {
  let r = runAbx(['run', '--', 'sh', '-c', 'hostname; id -u; id -un; pwd; echo $HOME']);
  assert.equal(r.status, 0, r.stderr);
  const [host, uid, name, cwd, home] = r.stdout.trim().split('\n');
  assert.match(host, /^i[a-z0-9]{20}$/);
  assert.deepEqual([uid, name, cwd, home], ['1000', 'user', '/app', '/home/user']);
  r = runAbx(['run', '--user', 'root', '--cwd', '/tmp', '--', 'sh', '-c', 'id -u; pwd; echo $HOME']);
  assert.deepEqual(r.stdout.trim().split('\n'), ['0', '/tmp', '/root']);
});

test('--env sets variables; the caller\'s environment does not cross', () => {
  const r = runAbx(['run', '--env', 'A=1', '--env', 'B=two words', '--env', 'A=3', '--', 'sh', '-c', 'echo "$A|$B|${HOST_ONLY:-unset}|$PATH"'],
    { env: { ...process.env, HOST_ONLY: 'leak' } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '3|two words|unset|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n');
});

test('writable: /app, /home/user, /tmp; read-only: /usr; root filesystem is a bounded layer', () => {
  const r = runAbx(['run', '--', 'sh', '-c',
    'touch /app/a /home/user/b /tmp/c && echo ok; touch /usr/x 2>/dev/null || echo usr-ro; ' +
    'grep -c "^user:x:1000:1000" /etc/passwd; grep -c "^root:x:0:0" /etc/passwd; ls /home']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'ok\nusr-ro\n1\n1\nuser\n');
});

test('SIGINT and SIGTERM reach the command', async () => {
  for (const sig of ['SIGINT', 'SIGTERM']) {
    const child = spawn(abx, ['run', '--', 'sh', '-c', 'trap "echo got; exit 7" INT TERM; echo ready; while :; do sleep 0.05; done'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    await waitFor(() => out.includes('ready'), 5000);
    child.kill(sig);
    const code = await new Promise((r) => child.on('close', r));
    assert.equal(code, 7, `${sig}: ${out}`);
    assert.match(out, /got/);
  }
});

test('kill -9 of abx run takes the whole sandbox with it, even a command that ignores signals', async () => {
  const tag = `sleep 9${Math.floor(Math.random() * 99999)}7`;
  const child = spawn(abx, ['run', '--', 'sh', '-c', `trap "" INT TERM HUP; echo ready; ${tag}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  assert.ok(await waitFor(() => out.includes('ready') && hostProcesses(tag).length > 0, 5000));
  child.kill('SIGKILL');
  await new Promise((r) => child.on('exit', r)); // not 'close': a surviving sandbox would hold the pipes
  const gone = await waitFor(() => hostProcesses(tag).length === 0, 5000);
  child.stdout.destroy();
  child.stderr.destroy();
  assert.ok(gone, 'the sandbox outlived abx run');
});

test('host interpreters run inside', { skip: !fs.existsSync('/usr/bin/python3') && 'skipped: no /usr/bin/python3 on this host' }, () => {
  const r = runAbx(['run', '--', 'python3', '-c', 'import os; print(6*7, os.getcwd())']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '42 /app\n');
});

test('a command that does not exist: E8009, status 127', () => {
  const r = runAbx(['run', '--', 'no-such-command-abx']);
  assert.equal(r.status, 127);
  assert.match(r.stderr, /^abx: E8009: .*hint: /);
  assert.equal(r.stderr.trim().split('\n').length, 1);
});

test('a command that is not executable: status 126, E8028 (not "run abx as root")', () => {
  const r = runAbx(['run', '--', '/etc/passwd']);
  assert.equal(r.status, 126);
  assert.match(r.stderr, /^abx: E8028: .*chmod \+x/);
});

test('a working directory that does not exist: E8023, status 125', () => {
  const r = runAbx(['run', '--cwd', '/nope', '--', 'true']);
  assert.equal(r.status, 125);
  assert.match(r.stderr, /^abx: E8023: /);
});

const badInputs = [
  [['run', '--bogus', '--', 'true'], 'E8014'],
  [['run', '--memory', 'abc', '--', 'true'], 'E8001'],
  [['run', '--memory', '0', '--', 'true'], 'E8001'],
  [['run', '--memory', '-5', '--', 'true'], 'E8001'],
  [['run', '--memory', '99999999', '--', 'true'], 'E8001'],
  [['run', '--memory', '', '--', 'true'], 'E8001'],
  [['run', '--memory'], 'E8014'],
  [['run', '--cpu', '1.5', '--', 'true'], 'E8001'],
  [['run', '--cpu', '0', '--', 'true'], 'E8001'],
  [['run', '--pids', '2', '--', 'true'], 'E8001'],
  [['run', '--timeout', '0', '--', 'true'], 'E8001'],
  [['run', '--timeout', '86401', '--', 'true'], 'E8001'],
  [['run', '--timeout', 'true', '--', 'true'], 'E8001'],
  [['run', '--env', 'NOEQUALS', '--', 'true'], 'E8001'],
  [['run', '--env', '=v', '--', 'true'], 'E8001'],
  [['run', '--env', '1A=v', '--', 'true'], 'E8001'],
  [['run', '--user', 'nobody', '--', 'true'], 'E8001'],
  [['run', '--cwd', 'relative', '--', 'true'], 'E8001'],
  [['run'], 'E8014'],
  [['run', '--'], 'E8014'],
  [['nosuchverb'], 'E8014'],
  [['--provider', 'e2b', 'run', '--', 'true'], 'E8015'],
];

for (const [args, code] of badInputs) {
  test(`bad input ${JSON.stringify(args)} → ${code}, nothing left behind`, () => {
    const mounts = mountCount();
    const r = runAbx(args);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, new RegExp(`^abx: ${code}: .+ \\(hint: .+\\)\\n$`));
    assert.equal(r.stdout, '');
    assert.equal(mountCount(), mounts);
    // (cgroups are checked per sandbox id elsewhere: other test files run
    // sandboxes concurrently, so a global count here would race)
  });
}

test('--json errors are one JSON object with code, category, message, hint', () => {
  const r = runAbx(['run', '--json', '--memory', 'lots', '--', 'true']);
  assert.notEqual(r.status, 0);
  const e = JSON.parse(r.stderr).error;
  assert.equal(e.code, 'E8001');
  assert.equal(e.category, 'validation');
  assert.match(e.message, /--memory/);
  assert.ok(!e.message.includes('lots'), 'the value is not echoed');
  assert.ok(e.hint.length > 10);
});

test('--help is true and exits 0', () => {
  for (const args of [['run', '--help'], ['help', 'run'], ['run', '-h']]) {
    const r = runAbx(args);
    assert.equal(r.status, 0);
    for (const flag of ['--memory', '--cpu', '--pids', '--timeout', '--env', '--cwd', '--user', '--disk']) {
      assert.ok(r.stdout.includes(flag), `${args}: ${flag} missing`);
    }
  }
  const top = runAbx(['--help']);
  assert.equal(top.status, 0);
  assert.match(top.stdout, /run\s+run a command/);
  assert.match(runAbx(['--version']).stdout, /^abx \d+\.\d+\.\d+\n$/);
  assert.deepEqual(JSON.parse(runAbx(['--json', 'version']).stdout), { version: runAbx(['--version']).stdout.trim().split(' ')[1] });
});

test('a finished run leaves no process, mount, cgroup or state behind', () => {
  const mounts = mountCount();
  const home = path.join(os.homedir(), '.abx', 'sandboxes');
  const stateBefore = fs.existsSync(home) ? fs.readdirSync(home) : [];
  const tag = String(1000 + Math.floor(Math.random() * 8999));
  const r = runAbx(['run', '--', 'sh', '-c', `hostname; sleep ${tag}8 & sleep ${tag}7 & exit 0`]);
  assert.equal(r.status, 0);
  const id = idOf(r);
  assert.deepEqual(cgroupLeftovers(id), []);
  assert.equal(mountCount(), mounts);
  assert.deepEqual(hostProcesses(`sleep ${tag}`), []);
  assert.deepEqual(fs.existsSync(home) ? fs.readdirSync(home) : [], stateBefore);
});

test('concurrent runs are isolated from each other', async () => {
  const runs = await Promise.all(Array.from({ length: 6 }, (_, i) => new Promise((resolve) => {
    const c = spawn(abx, ['run', '--', 'sh', '-c', `echo ${i} > /tmp/mine; sleep 0.2; cat /tmp/mine; ls /proc | grep -c '^[0-9]'`]);
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.on('close', (code) => resolve({ code, out }));
  })));
  runs.forEach((r, i) => {
    assert.equal(r.code, 0);
    const [mine, procs] = r.out.trim().split('\n');
    assert.equal(mine, String(i));
    assert.ok(Number(procs) <= 5, `saw ${procs} processes`);
  });
});

test('docs/cli has a page per verb, holding the verb\'s --help word for word', () => {
  const top = runAbx(['--help']).stdout;
  const verbs = [...top.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((m) => m[1]).filter((v) => v !== 'help');
  assert.ok(verbs.length >= 13, `verbs: ${verbs}`);
  for (const verb of verbs) {
    const page = fs.readFileSync(path.join(root, 'docs', 'cli', `${verb}.md`), 'utf8');
    const help = runAbx([verb, '--help']).stdout.trimEnd();
    assert.ok(page.includes(help), `docs/cli/${verb}.md does not hold the current --help`);
  }
});
