// expose.test.mjs: `abx expose ID PORT` forwards a host port to a port
// inside a sandbox (its own loopback included), as a user opening a web
// app an agent started there would use it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { abx, runAbx, privateHome, waitFor } from '../lib/harness.mjs';

const H = privateHome('abx-expose');
after(() => H.cleanup());
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });

function expose(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(abx, ['expose', ...args], { env: H.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n') && !child.addr) { child.addr = out.split('\n')[0]; resolve(child); } });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => { child.code = code; child.stderrText = err; if (!child.addr) reject(new Error(`expose exited ${code}: ${err}`)); });
  });
}

test('a web server on the sandbox\'s loopback opens from the host; many and large transfers; the forward ends with the sandbox', async () => {
  const id = abxh(['create', '--timeout', '120']).stdout.trim();
  const big = 'x'.repeat(1 << 20);
  assert.equal(abxh(['exec', id, 'mkdir -p /tmp/w && cd /tmp/w && echo hello from inside > index.html && head -c 1048576 /dev/zero | tr "\\0" x > big.txt']).status, 0);
  abxh(['exec', '--background', id, 'cd /tmp/w && exec python3 -m http.server 8000 --bind 127.0.0.1']);
  const fwd = await expose([id, '8000']);
  assert.match(fwd.addr, /^127\.0\.0\.1:\d+$/);
  let page = '';
  for (let i = 0; i < 100 && !page; i++) { // the server inside may still be starting
    try { page = await (await fetch(`http://${fwd.addr}/index.html`)).text(); } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  assert.equal(page, 'hello from inside\n');
  const all = await Promise.all([1, 2, 3, 4, 5].map(() => fetch(`http://${fwd.addr}/big.txt`).then((r) => r.text())));
  for (const body of all) assert.equal(body, big);
  assert.equal(abxh(['kill', id]).status, 0);
  await waitFor(() => fwd.code !== undefined, 8000, 100);
  assert.equal(fwd.code, 0);
  assert.match(fwd.stderrText, /has ended/);
});

test('SIGTERM stops the forward; bad input is refused before anything listens', async () => {
  const id = abxh(['create', '--timeout', '120']).stdout.trim();
  try {
    const fwd = await expose([id, '9', '--listen', '127.0.0.1:0']);
    fwd.kill('SIGTERM');
    await waitFor(() => fwd.code !== undefined, 5000, 50);
    assert.equal(fwd.code, 0);
    for (const [args, code] of [[[id, '0'], 'E8001'], [[id, '70000'], 'E8001'], [[id, 'http'], 'E8001'], [['local:inotarealsandbox000000', '80'], 'E8002'], [[id, '80', '--listen', 'nowhere'], 'E8001'], [[id], 'E8014']]) {
      const r = abxh(['--json', 'expose', ...args]);
      assert.notEqual(r.status, 0, args.join(' '));
      assert.equal(JSON.parse(r.stderr).error.code, code, `${args.join(' ')}: ${r.stderr}`);
    }
  } finally {
    abxh(['kill', id]);
  }
});
