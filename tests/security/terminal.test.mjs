// terminal.test.mjs: `abx run` on a terminal. The sandbox gets a
// pseudo-terminal of its own (stdin on a terminal) or pipes (only stdout or
// stderr on one): whatever it does to its terminal (modes, line
// discipline), the caller's terminal is as it was afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { abx, root } from '../lib/harness.mjs';

const helper = path.join(root, 'tests/security/helpers/on-a-terminal.py');
function onTerminal(mode, command) {
  const r = spawnSync('python3', [helper, abx, mode, command], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout.trim().split('\n').at(-1));
  assert.equal(j.error, undefined, JSON.stringify(j));
  return j;
}

test('stdin on a terminal: the sandbox has its own terminal and cannot change the caller\'s', () => {
  const r = onTerminal('all', 'stty -echo -isig -icanon raw; test -t 0 && echo on-a-tty; exit 3');
  assert.equal(r.status, 3);
  assert.match(r.out, /on-a-tty/);
  assert.deepEqual([r.echo, r.isig, r.icanon, r.ldisc], [true, true, true, 0], JSON.stringify(r));
  const ld = onTerminal('all', 'python3 -c "import fcntl, struct; fcntl.ioctl(0, 0x5423, struct.pack(\'i\', 27))"');
  assert.equal(ld.ldisc, 0, 'a line discipline that discards I/O reached the caller\'s terminal');
  assert.deepEqual([ld.echo, ld.isig], [true, true]);
  // it is the sandbox's controlling terminal (Ctrl-C reaches its foreground job), and output arrives
  const ct = onTerminal('all', 'cut -d" " -f7 /proc/self/stat; echo line-two');
  assert.match(ct.out, /^[1-9]\d*\r\nline-two\r\n$/);
});

test('stdout and stderr on a terminal, stdin not: pipes, never the terminal itself', () => {
  const r = onTerminal('out', 'stty -echo <&1 2>/dev/null; stty -F /proc/self/fd/2 -isig 2>/dev/null; test -t 1 || echo not-a-tty; echo err >&2');
  assert.match(r.out, /not-a-tty/);
  assert.match(r.out, /err/);
  assert.deepEqual([r.echo, r.isig], [true, true], JSON.stringify(r));
});

test('abx run in the background of a terminal (`abx run ... &`) is not stopped: its command gets an empty stdin', () => {
  const r = onTerminal('bg', 'test -t 0 || echo no-terminal-stdin; echo done; exit 4');
  assert.notEqual(r.status, 200, 'abx stopped on SIGTTIN/SIGTTOU');
  assert.equal(r.status, 4);
  assert.match(r.out, /no-terminal-stdin\r\ndone/);
  assert.deepEqual([r.echo, r.isig], [true, true]);
});
