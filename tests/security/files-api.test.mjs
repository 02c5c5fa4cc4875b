// files-api.test.mjs: the shim's file API against a hostile sandbox. Code
// inside plants symlinks to host-only paths (a listing must not reveal
// whether they exist on the host) and shrinks a file while it is being
// downloaded (the transfer must end, and no shim thread may spin).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { runAbx, privateHome, shimPid, randomName, sleep } from '../lib/harness.mjs';

const H = privateHome('abx-files');
after(() => H.cleanup());

const cpuSeconds = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

test('a listing stats symlink targets inside the sandbox, never on the host', () => {
  const hostOnly = path.join('/tmp', randomName('abx-hostonly'));
  fs.mkdirSync(hostOnly, { mode: 0o700 });
  const id = runAbx(['create', '--timeout', '120'], { env: H.env }).stdout.trim();
  try {
    const r = runAbx(['exec', id, `ln -s ${hostOnly} /app/to-host-dir; ln -s /etc/shadow /app/to-shadow; ln -s /missing-${process.pid} /app/to-nothing; mkdir /app/real-dir; ln -s /app/real-dir /app/to-real-dir`], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    const ls = JSON.parse(runAbx(['--json', 'files', 'ls', id, '/app'], { env: H.env }).stdout);
    const by = Object.fromEntries(ls.map((e) => [e.name, e]));
    const shape = (e) => [e.type, e.target_type];
    assert.deepEqual(shape(by['to-host-dir']), shape(by['to-nothing']), 'a host-only directory showed through');
    assert.deepEqual(shape(by['to-shadow']), shape(by['to-nothing']), '/etc/shadow of the host showed through');
    assert.deepEqual(shape(by['to-real-dir']), ['symlink', 'dir'], 'a link to a directory inside still reads as one');
    assert.deepEqual(shape(by['to-host-dir']), ['symlink', 'file']);
  } finally {
    runAbx(['kill', id], { env: H.env });
    fs.rmSync(hostOnly, { recursive: true, force: true });
  }
});

test('a file that shrinks during GET /files ends the transfer; no shim thread spins', { timeout: 60000 }, async () => {
  const id = runAbx(['create', '--timeout', '120'], { env: H.env }).stdout.trim().replace(/^local:/, '');
  try {
    assert.equal(runAbx(['exec', id, 'head -c 67108864 /dev/zero > /app/big'], { env: H.env }).status, 0);
    const dir = path.join(H.home, 'sandboxes', id);
    const token = fs.readFileSync(path.join(dir, 'token'), 'utf8');
    const pid = shimPid(H.home, id);
    let got = 0;
    const done = new Promise((resolve) => {
      const req = http.request({ socketPath: path.join(dir, 'envd.sock'), path: '/files?path=/app/big&username=user',
        headers: { 'x-access-token': token } }, (res) => {
        assert.equal(res.statusCode, 200);
        res.once('data', (d) => {
          got += d.length;
          res.pause(); // a slow client: the file shrinks under the transfer
          runAbx(['exec', id, 'truncate -s 4096 /app/big'], { env: H.env });
          res.on('data', (x) => { got += x.length; });
          res.resume();
        });
        res.on('end', () => resolve('end'));
        res.on('error', () => resolve('error'));
        res.on('aborted', () => resolve('aborted'));
      });
      req.on('error', () => resolve('error'));
      req.end();
    });
    let timer;
    const how = await Promise.race([done, new Promise((r) => { timer = setTimeout(() => r('hung'), 20000); })]);
    clearTimeout(timer);
    assert.notEqual(how, 'hung', 'the transfer never ended');
    assert.ok(got < 67108864, `got all ${got} bytes of a file that shrank`);
    const cpu0 = cpuSeconds(pid);
    await sleep(2000);
    const spent = cpuSeconds(pid) - cpu0;
    assert.ok(spent < 0.5, `the shim spent ${spent} s of CPU in 2 s after the transfer`);
    // and the data plane still serves
    assert.equal(runAbx(['files', 'cat', id, '/app/big'], { env: H.env, encoding: 'buffer' }).stdout.length, 4096);
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});

test('files get keeps a sparse file sparse: a 1 GiB hole costs the host no disk', () => {
  const id = runAbx(['create', '--timeout', '120'], { env: H.env }).stdout.trim();
  const out = path.join(H.home, 'sparse.out');
  try {
    assert.equal(runAbx(['exec', id, 'truncate -s 1G /app/sparse && printf tail >> /app/sparse'], { env: H.env }).status, 0);
    const r = runAbx(['files', 'get', id, '/app/sparse', out], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    const st = fs.statSync(out);
    assert.equal(st.size, (1 << 30) + 4);
    assert.ok(st.blocks * 512 < 64 << 20, `${st.blocks * 512} bytes allocated on the host`);
    const fd = fs.openSync(out, 'r');
    const b = Buffer.alloc(4);
    fs.readSync(fd, b, 0, 4, 1 << 30);
    fs.closeSync(fd);
    assert.equal(b.toString(), 'tail');
  } finally {
    fs.rmSync(out, { force: true });
    runAbx(['kill', id], { env: H.env });
  }
});

test('saved whole outputs never follow a link planted at their name: a root kernel\'s output does not overwrite a root file', async () => {
  const id = runAbx(['create', '--template', 'code-interpreter-v1', '--timeout', '120'], { env: H.env }).stdout.trim();
  const bare = id.replace(/^local:/, '');
  const dir = path.join(H.env.ABX_HOME || path.join(process.env.HOME, '.abx'), 'sandboxes', bare);
  try {
    // as user: plant links at every name the next cells of a root python context could use
    // (one process makes them all: the pids the kernel may get stay ahead of it)
    let r = runAbx(['exec', id, `python3 -c "import os; os.makedirs('/tmp/.abx-output', exist_ok=True); [os.symlink('/etc/abx-victim', '/tmp/.abx-output/python-%d-%d.stdout' % (p, i)) for p in range(2, 3000) for i in (1, 2, 3)]"`], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    r = runAbx(['exec', '--user', 'root', id, 'echo intact > /etc/abx-victim'], { env: H.env });
    assert.equal(r.status, 0, r.stderr);
    const token = fs.readFileSync(path.join(dir, 'token'), 'utf8');
    const { request } = await import('node:http');
    const post = (p, body) => new Promise((resolve, reject) => {
      const req = request({ socketPath: path.join(dir, 'envd.sock'), path: p, method: 'POST', headers: { 'X-Access-Token': token, 'Content-Type': 'application/json', Authorization: 'Basic ' + Buffer.from('root:').toString('base64') } }, (res) => { let t = ''; res.on('data', (d) => (t += d)); res.on('end', () => resolve(t)); });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    for (let i = 0; i < 3; i++) await post('/execute', { code: "print('x' * 100000)", save_after: 1000 });
    assert.equal(runAbx(['exec', '--user', 'root', id, 'cat /etc/abx-victim'], { env: H.env }).stdout, 'intact\n');
  } finally {
    runAbx(['kill', id], { env: H.env });
  }
});
