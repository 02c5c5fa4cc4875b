// uid-range.test.mjs: each sandbox has host ids of its own, and its user
// namespace is owned by them (not by host root), so what the kernel counts
// per user is counted per sandbox. A sandbox that exhausts inotify
// instances, message-queue bytes or pipe buffers leaves host root and a
// second sandbox unaffected. The exhausting code runs only inside sandboxes
// (abx exec); the host side only checks that it can still do the same.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { runAbx, privateHome, shimPid } from '../lib/harness.mjs';

const H = privateHome('abx-uids');
after(() => H.cleanup());

const create = () => runAbx(['create', '--timeout', '300', '--memory', '512'], { env: H.env }).stdout.trim();
const exec = (id, cmd) => runAbx(['exec', id, cmd], { env: H.env });
const py = (code) => `python3 -c '${code.replace(/'/g, `'"'"'`)}'`;

// The snippets (Python, ctypes): each prints a number.
const INOTIFY = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fds = []
while len(fds) < 100000:
    fd = libc.inotify_init()
    if fd < 0: break
    fds.append(fd)
print(len(fds), flush=True)
HOLD`;
const MQUEUE = `import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
class Attr(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_long), ("maxmsg", ctypes.c_long), ("msgsize", ctypes.c_long), ("curmsgs", ctypes.c_long), ("pad", ctypes.c_long * 4)]
a = Attr(0, 10, 8192, 0)
n = 0
while n < 10000:
    q = rt.mq_open(("/q%d-%d" % (os.getpid(), n)).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(a))
    if q < 0: break
    n += 1
print(n, flush=True)
HOLD`;
const PIPES = `import fcntl, os
ps = []
while len(ps) < 4000:
    try:
        r, w = os.pipe()
        fcntl.fcntl(w, 1031, 1 << 20)
    except OSError:
        break
    ps.append((r, w))
print(len(ps), flush=True)
HOLD`;
// fds in flight over unix sockets, counted per user against its open-files
// limit: sent, never received
const INFLIGHT = `import os, socket
a, b = socket.socketpair()
r, w = os.pipe()
n = 0
try:
    while n < 20000:
        socket.send_fds(a, [b"x"], [r] * 200)
        n += 200
except OSError:
    pass
print(n, flush=True)
HOLD`;
const hold = (s) => s.replace('HOLD', 'import time; time.sleep(120)');
const once = (s) => s.replace('HOLD', '');
const PIPE_SIZE = `import fcntl, os
r, w = os.pipe()
print(fcntl.fcntl(w, 1032))`;

function hostPython(code) {
  const r = spawnSync('python3', ['-c', code], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Number(r.stdout.trim().split('\n').at(-1));
}

function nsOwner(pid) {
  // NS_GET_OWNER_UID on the sandbox's user namespace, read from the host
  return hostPython(`import fcntl, os, struct
fd = os.open("/proc/${pid}/ns/user", os.O_RDONLY)
b = bytearray(4)
fcntl.ioctl(fd, 0xb704, b)
print(struct.unpack("I", b)[0])`);
}

function initPid(id) {
  const shim = shimPid(H.home, id.replace('local:', ''));
  const kids = fs.readFileSync(`/proc/${shim}/task/${shim}/children`, 'utf8').trim().split(/\s+/).map(Number);
  assert.equal(kids.length, 1, 'the shim has one child, the sandbox init');
  return kids[0];
}

test('each sandbox gets its own host id range, and owns its user namespace', () => {
  const a = create(), b = create();
  try {
    const ra = exec(a, 'cat /proc/self/uid_map').stdout.trim().split(/\s+/).map(Number);
    const rb = exec(b, 'cat /proc/self/uid_map').stdout.trim().split(/\s+/).map(Number);
    assert.equal(ra[0], 0);
    assert.equal(ra[2], 65536);
    assert.ok(Math.abs(ra[1] - rb[1]) >= 65536, `ranges overlap: ${ra[1]} and ${rb[1]}`);
    assert.notEqual(ra[1], 0);
    assert.equal(nsOwner(initPid(a)), ra[1], 'the user namespace is owned by the sandbox\'s root, not host root');
    assert.equal(nsOwner(initPid(b)), rb[1]);
    // the namespace's own limits: no namespaces inside, inotify bounded; the host's are untouched
    const hostMax = fs.readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim();
    assert.equal(exec(a, 'cat /proc/sys/user/max_user_namespaces /proc/sys/user/max_inotify_instances').stdout, '0\n128\n');
    assert.equal(fs.readFileSync('/proc/sys/user/max_user_namespaces', 'utf8').trim(), hostMax);
  } finally {
    runAbx(['kill', a], { env: H.env });
    runAbx(['kill', b], { env: H.env });
  }
});

test('a pool of two ranges: two sandboxes get neighbouring ranges that share no id, and a third create is refused', () => {
  // a pool of its own, clear of the one the other tests share
  const base = 2100000000 + 65536 * 4 * Math.floor(Math.random() * 100);
  const env = { ...H.env, ABX_UID_POOL_BASE: String(base), ABX_UID_POOL_SLOTS: '2' };
  const made = [];
  try {
    for (let i = 0; i < 2; i++) {
      const r = runAbx(['create', '--timeout', '120'], { env });
      assert.equal(r.status, 0, r.stderr);
      made.push(r.stdout.trim());
    }
    const maps = made.map((id) => ['uid_map', 'gid_map'].map((f) => runAbx(['exec', id, `cat /proc/self/${f}`], { env }).stdout.trim().split(/\s+/).map(Number)));
    for (const [uid, gid] of maps) {
      assert.deepEqual(uid, gid, 'uid and gid ranges differ');
      assert.equal(uid[0], 0);
      assert.equal(uid[2], 65536);
      assert.ok(uid[1] >= base && uid[1] + uid[2] <= base + 2 * 65536, `range ${uid[1]} outside the pool`);
    }
    const [a, b] = maps.map((m) => m[0]).sort((x, y) => x[1] - y[1]);
    assert.ok(a[1] + a[2] <= b[1], `ranges share ids: [${a[1]}, ${a[1] + a[2]}) and [${b[1]}, ...)`);
    assert.equal(b[1] - a[1], 65536, 'two neighbouring ranges');
    const third = runAbx(['--json', 'create', '--timeout', '120'], { env });
    assert.notEqual(third.status, 0);
    assert.equal(JSON.parse(third.stderr).error.code, 'E8022', third.stderr);
  } finally {
    for (const id of made) runAbx(['kill', id], { env });
  }
});

for (const [name, code, hostCheck] of [
  ['inotify instances', INOTIFY, 'import ctypes; print(1 if ctypes.CDLL(None).inotify_init() >= 0 else 0)'],
  ['message-queue bytes', MQUEUE, null],
  ['pipe buffers', PIPES, null],
  ['fds in flight (SCM_RIGHTS)', INFLIGHT, null],
]) {
  test(`a sandbox that exhausts ${name} leaves host root and another sandbox unaffected`, { timeout: 120000 }, async () => {
    const a = create(), b = create();
    try {
      const task = runAbx(['exec', '--background', a, py(hold(code))], { env: H.env }).stdout.trim();
      // wait until the hog reports what it holds
      let held = 0;
      for (let i = 0; i < 100 && !held; i++) {
        held = Number(runAbx(['logs', a, task], { env: H.env }).stdout.trim()) || 0;
        if (!held) await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(held > 0, `the hog in A got no ${name}`);
      // B can still take some, as many as A got (its own budget)
      const inB = Number(exec(b, py(once(code))).stdout.trim());
      assert.ok(inB >= held * 0.9, `B got ${inB} ${name} while A holds ${held}`);
      if (name === 'pipe buffers') assert.equal(Number(exec(b, py(PIPE_SIZE)).stdout.trim()), 65536, 'B\'s pipes were shrunk');
      if (hostCheck) assert.equal(hostPython(hostCheck), 1, `host root can no longer get ${name}`);
    } finally {
      runAbx(['kill', a], { env: H.env });
      runAbx(['kill', b], { env: H.env });
    }
  });
}
