// template-build.test.mjs: `abx template build` from a Dockerfile (FROM
// debian:bookworm-slim from the host's Debian mirror, RUN apt-get, COPY,
// ADD, ENV, ARG, WORKDIR, USER, CMD, HEALTHCHECK), its cache, its failures,
// OCI layouts imported (made here by hand: tar and JSON), and what each
// sandbox made from a template sees. The Debian base is cached machine-wide
// (ABX_BUILD_CACHE, else /var/cache/abx/build): only the first build of a
// machine makes it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { runAbx, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-tbuild');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-tbuild-work-'));
const root = process.getuid() === 0;
const skip = !root && 'needs root';
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, timeout: 900000, ...opts });
const sh = (script) => spawnSync('sh', ['-c', script], { encoding: 'utf8' });
const created = [];
const nonce = crypto.randomBytes(4).toString('hex'); // what must not be in the machine's build cache yet

function create(template) {
  const r = abxh(['create', '--template', template, '--timeout', '600']);
  assert.equal(r.status, 0, r.stderr);
  const id = r.stdout.trim();
  created.push(id);
  return id;
}
const exec = (id, cmd, extra = []) => abxh(['exec', ...extra, id, cmd]);
const events = (stdout) => stdout.trim().split('\n').map((l) => JSON.parse(l));
const steps = (stdout) => events(stdout).filter((e) => e.event === 'step');

const ctx = path.join(work, 'ctx');
const dockerfile = `# a template the tests use
FROM debian:bookworm-slim
ARG GREETING=hello
RUN apt-get install -y --no-install-recommends python3-numpy && apt-get clean
COPY app/ /opt/app/
COPY --chown=user notes.txt /home/user/notes.txt
ADD data.tar.gz /opt/data/
ENV APP_MODE=test \\
    GREETING=\${GREETING}-world
WORKDIR /opt/app
USER user
CMD ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1"]
HEALTHCHECK --interval=200ms --start-period=30s CMD python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/')"
`;

before(() => {
  if (!root) return;
  fs.mkdirSync(path.join(ctx, 'app'), { recursive: true });
  fs.writeFileSync(path.join(ctx, 'app/main.py'), 'print("main")\n');
  fs.writeFileSync(path.join(ctx, 'notes.txt'), 'my notes\n');
  fs.mkdirSync(path.join(work, 'data'));
  fs.writeFileSync(path.join(work, 'data/inside.txt'), 'from the archive\n');
  assert.equal(sh(`tar -C ${work}/data -czf ${ctx}/data.tar.gz .`).status, 0);
  fs.writeFileSync(path.join(ctx, 'Dockerfile'), dockerfile);
});

after(() => {
  for (const id of created) abxh(['kill', id]);
  H.cleanup();
  fs.rmSync(work, { recursive: true, force: true });
});

test('a template built from a Dockerfile: each instruction shows in its sandboxes', { skip }, () => {
  let r = abxh(['template', 'build', 'demo', ctx]);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.match(r.stderr, /^step 1\/11: FROM debian:bookworm-slim/m);
  assert.match(r.stderr, /^step 3\/11: RUN apt-get install/m);
  assert.match(r.stderr, /Setting up python3-numpy|\(cached\)/); // the command's own output, or the cache
  const info = JSON.parse(abxh(['template', 'inspect', 'demo', '--json']).stdout);
  assert.equal(info.kind, 'build');
  assert.equal(info.config.workdir, '/opt/app');
  assert.equal(info.config.uid, 1000);
  assert.deepEqual(info.config.cmd, ['python3', '-m', 'http.server', '8000', '--bind', '127.0.0.1']);
  assert.ok(JSON.parse(abxh(['template', 'list', '--json']).stdout).some((t) => t.name === 'demo'));

  const id = create('demo');
  assert.equal(JSON.parse(abxh(['info', '--json', id]).stdout).template, 'demo');
  r = exec(id, 'pwd; id -u; echo $APP_MODE $GREETING; python3 -c "import numpy; print(numpy.__name__)"; cat main.py; cat /opt/data/inside.txt; cat /home/user/notes.txt; stat -c "%u %n" /opt/app/main.py /home/user/notes.txt; cat /etc/debian_version');
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines[0], '/opt/app'); // WORKDIR
  assert.equal(lines[1], '1000'); // USER user
  assert.equal(lines[2], 'test hello-world'); // ENV, with the ARG's default
  assert.equal(lines[3], 'numpy'); // RUN apt-get install
  assert.equal(lines[4], 'print("main")'); // COPY of a directory's contents
  assert.equal(lines[5], 'from the archive'); // ADD of a local archive: unpacked
  assert.equal(lines[6], 'my notes');
  assert.deepEqual(lines.slice(7, 9), ['0 /opt/app/main.py', '1000 /home/user/notes.txt']); // owners: root, --chown
  assert.match(lines[9], /^12\./); // Debian bookworm, not the host's /usr
  // CMD is running and was ready (HEALTHCHECK) when create returned
  r = exec(id, 'python3 -c "import urllib.request; print(urllib.request.urlopen(\'http://127.0.0.1:8000/main.py\').read().decode())"');
  assert.equal(r.stdout, 'print("main")\n\n', r.stderr);
  // root inside installs packages into its own layer: dpkg (what apt-get runs) unpacks a package made here,
  // renaming directories as it goes, over the template's own directories (no network needed)
  r = exec(id, `set -e; mkdir -p /tmp/p/DEBIAN /tmp/p/usr/share/doc/abxdemo /tmp/p/usr/local/bin
    printf 'Package: abxdemo\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: t <t@example.com>\\nDescription: d\\n' > /tmp/p/DEBIAN/control
    printf '#!/bin/sh\\necho abxdemo works\\n' > /tmp/p/usr/local/bin/abxdemo; chmod 755 /tmp/p/usr/local/bin/abxdemo
    dpkg-deb --build /tmp/p /tmp/abxdemo.deb >/dev/null; dpkg -i /tmp/abxdemo.deb >/dev/null; abxdemo
    mv /usr/share/doc /usr/share/doc-moved; test -d /usr/share/doc-moved/python3-numpy && echo moved`, ['--user', 'root']);
  assert.equal(r.stdout, 'abxdemo works\nmoved\n', r.stderr);
  assert.equal(fs.existsSync(`${H.home}/templates/demo/rootfs/usr/local/bin/abxdemo`), false); // the template is untouched
  // abx run --template: a one-shot sandbox from it, its WORKDIR and ENV
  r = abxh(['run', '--template', 'demo', '--', 'sh', '-c', 'pwd; echo $APP_MODE; cat /etc/debian_version']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^\/opt\/app\ntest\n12\./);
  r = abxh(['--json', 'run', '--template', 'no-such', '--', 'true']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
});

test('the build cache: a second build reruns nothing; a changed last RUN reruns that step only', { skip }, () => {
  let r = abxh(['template', 'build', 'demo2', ctx, '--json']);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.deepEqual(steps(r.stdout).map((e) => e.cached), Array(11).fill(true));
  assert.equal(events(r.stdout).at(-1).event, 'built');
  assert.equal(events(r.stdout).at(-1).template.name, 'demo2');

  const df = path.join(work, 'Dockerfile.v');
  fs.writeFileSync(df, `${dockerfile}RUN echo v1-${nonce} > /tmp/version\n`);
  r = abxh(['template', 'build', 'ver', '-f', df, ctx, '--json']);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.equal(steps(r.stdout).filter((e) => !e.cached).length <= 1, true);
  fs.writeFileSync(df, `${dockerfile}RUN echo v2-${nonce} > /tmp/version\n`);
  r = abxh(['template', 'build', 'ver', '-f', df, ctx, '--json']);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.deepEqual(steps(r.stdout).map((e) => e.cached), [...Array(11).fill(true), false]);
  const id = create('ver');
  assert.equal(exec(id, 'cat /tmp/version').stdout, `v2-${nonce}\n`);
  // the template is in use by a live sandbox: replacing it is refused, and it stays as it was
  const before = fs.readFileSync(`${H.home}/templates/ver/template.json`, 'utf8');
  r = abxh(['--json', 'template', 'build', 'ver', '-f', df, ctx, '--build-arg', `GREETING=hi${nonce}`]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /used by 1 live sandbox/);
  assert.equal(fs.readFileSync(`${H.home}/templates/ver/template.json`, 'utf8'), before);
  // a build argument reran its ARG and what follows it (the steps are cached even so)
  assert.deepEqual(steps(r.stdout).slice(0, 3).map((e) => e.cached), [true, false, false]);
  abxh(['kill', id]);
  r = abxh(['template', 'build', 'ver', '-f', df, ctx, '--build-arg', `GREETING=hi${nonce}`, '--json']);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.deepEqual(steps(r.stdout).map((e) => e.cached), Array(12).fill(true));
  assert.equal(exec(create('ver'), 'echo $GREETING').stdout, `hi${nonce}-world\n`);
});

test('RUN steps have a network of their own: out through NAT, never the host\'s loopback, its LAN or its sockets; --network host is an explicit choice', { skip }, async () => {
  const net = await import('node:net');
  const listen = (host) => new Promise((res) => { const srv = net.createServer((c) => c.destroy()); srv.listen(0, host, () => res(srv)); });
  const lanAddr = Object.values(os.networkInterfaces()).flat().find((a) => a.family === 'IPv4' && !a.internal)?.address;
  const loop = await listen('127.0.0.1');
  const lan = await listen('0.0.0.0');
  try {
    const probe = (host, port) => `(timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/dev/null && echo reached || echo unreachable)`;
    const df = (tag) => `FROM debian:bookworm-slim
RUN echo ${tag}; { ${probe('127.0.0.1', loop.address().port)}; ${probe(lanAddr ?? '127.0.0.1', lan.address().port)}; ${probe('deb.debian.org', 80)}; } > /net-reach; cat /proc/net/dev > /net-dev; cat /proc/net/tcp > /net-tcp
`;
    const portHex = (p) => `:${p.toString(16).toUpperCase().padStart(4, '0')}`;
    fs.writeFileSync(path.join(work, 'Dockerfile.net'), df(`own-${nonce}`));
    let r = abxh(['template', 'build', 'netown', '-f', path.join(work, 'Dockerfile.net'), ctx]);
    assert.equal(r.status, 0, r.stderr.slice(-3000));
    assert.doesNotMatch(r.stderr, /warning/);
    let id = create('netown');
    assert.deepEqual(exec(id, 'cat /net-reach').stdout.split('\n').slice(0, 3), ['unreachable', 'unreachable', 'reached']);
    const dev = exec(id, 'cat /net-dev').stdout;
    assert.match(dev, /eth0:/);
    assert.doesNotMatch(dev, /abxs|eth1|docker|veth/);
    const tcp = exec(id, 'cat /net-tcp').stdout;
    assert.ok(!tcp.includes(portHex(loop.address().port)) && !tcp.includes(portHex(lan.address().port)), 'the step saw the host\'s sockets');
    abxh(['kill', id]);
    // the host's network, asked for: it says so, and then the host's loopback is there
    fs.writeFileSync(path.join(work, 'Dockerfile.net'), df(`host-${nonce}`));
    r = abxh(['template', 'build', 'nethost', '-f', path.join(work, 'Dockerfile.net'), ctx, '--network', 'host']);
    assert.equal(r.status, 0, r.stderr.slice(-3000));
    assert.match(r.stderr, /warning: RUN steps use the host's network/);
    id = create('nethost');
    assert.equal(exec(id, 'cat /net-reach').stdout.split('\n')[0], 'reached');
    abxh(['kill', id]);
    r = abxh(['--json', 'template', 'build', 'netbad', '-f', path.join(work, 'Dockerfile.net'), ctx, '--network', 'bridge']);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
    for (const t of ['netown', 'nethost']) abxh(['template', 'rm', t]);
  } finally {
    loop.close();
    lan.close();
  }
});

test('a build keeps no setuid, setgid or file capability: its trees are owned by host ids on disk', { skip }, () => {
  const df = path.join(work, 'Dockerfile.suid');
  // v2 file capabilities with cap_setuid permitted and effective
  const caps = '01000002800000000000000000000000000000000';
  fs.writeFileSync(df, `FROM demo
USER root
RUN echo ${nonce}; cp /bin/dash /opt/rootsh && chmod 6755 /opt/rootsh && cp /bin/dash /opt/capsh && python3 -c "import os; os.setxattr('/opt/capsh', 'security.capability', bytes.fromhex('${caps.slice(0, 40)}'))" && mkdir -m 2775 /opt/shared
`);
  const r = abxh(['template', 'build', 'suid', '-f', df, ctx]);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.match(r.stderr, /dropped setuid\/setgid bits and file capabilities of \d+ file/);
  const tree = `${H.home}/templates/suid/rootfs`;
  assert.equal(fs.statSync(`${tree}/opt/rootsh`).mode & 0o7777, 0o755);
  assert.equal(fs.statSync(`${tree}/opt/shared`).mode & 0o7777, 0o2775); // a directory's setgid only passes its group on
  const xattr = sh(`python3 -c "import os; print(os.getxattr('${tree}/opt/capsh', 'security.capability'))" 2>&1`).stdout;
  assert.match(xattr, /No data available|ENODATA|\[Errno 61\]/, xattr);
  // none left anywhere in the tree (Debian's own su, mount, passwd included), nor in the build cache's copies
  const found = sh(`find ${tree} -xdev \\( -perm -4000 -o -perm -2000 \\) -type f | head -3`).stdout;
  assert.equal(found, '');
  const id = create('suid');
  assert.equal(exec(id, 'stat -c %a /opt/rootsh').stdout.trim(), '755');
  abxh(['kill', id]);
  abxh(['template', 'rm', 'suid']);
});

// Runs fn with abx serve up and E2B's SDK pointed at it (E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY: the only settings an E2B app changes),
// then puts the environment back and stops the server.
async function withE2B(key, fn) {
  const srv = await startHttpServer([], { env: { ...H.env, ABX_SERVE_API_KEYS: key }, serveArgs: ['serve'] });
  const names = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY'];
  const saved = names.map((k) => process.env[k]);
  process.env.E2B_API_URL = process.env.E2B_SANDBOX_URL = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_KEY = key;
  try {
    return await fn();
  } finally {
    names.forEach((k, i) => { if (saved[i] === undefined) delete process.env[k]; else process.env[k] = saved[i]; });
    await stopServer(srv);
  }
}

test('COPY and ADD share the cached tree\'s files (hard links) yet never write into them: a later build sees the base as it was', { skip }, () => {
  const ctxdir = path.join(work, 'overwrite');
  fs.mkdirSync(ctxdir, { recursive: true });
  fs.writeFileSync(path.join(ctxdir, 'os-release'), `replaced ${nonce}\n`);
  fs.writeFileSync(path.join(ctxdir, 'Dockerfile'), `FROM debian:bookworm-slim\nCOPY os-release /etc/os-release\nCOPY os-release /usr/lib/os-release\nRUN cat /etc/os-release > /seen\n`);
  let r = abxh(['template', 'build', 'overwrite', ctxdir]);
  assert.equal(r.status, 0, r.stderr);
  const t = path.join(H.home, 'templates', 'overwrite', 'rootfs');
  assert.equal(fs.readFileSync(path.join(t, 'seen'), 'utf8'), `replaced ${nonce}\n`);
  // the Debian base those steps started from is unchanged
  fs.writeFileSync(path.join(ctxdir, 'Dockerfile'), `FROM debian:bookworm-slim\nRUN cat /etc/os-release /usr/lib/os-release > /seen # ${nonce}\n`);
  r = abxh(['template', 'build', 'pristine', ctxdir]);
  assert.equal(r.status, 0, r.stderr);
  const seen = fs.readFileSync(path.join(H.home, 'templates', 'pristine', 'rootfs', 'seen'), 'utf8');
  assert.match(seen, /^PRETTY_NAME="Debian GNU\/Linux 12 \(bookworm\)"/);
  assert.ok(!seen.includes(nonce), seen);
  abxh(['template', 'rm', 'overwrite']);
  abxh(['template', 'rm', 'pristine']);
});

// Moving an app: a Dockerfile written for Docker (a web app with its start
// command and readiness check) built unchanged, and code written for E2B's
// cloud (Sandbox.create(template), getHost) run unchanged: only the
// E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY settings differ.
test('an app moves from E2B and Docker unchanged: its Dockerfile builds, E2B code creates it and reaches http://${getHost(port)}', { skip }, async () => {
  const app = path.join(work, 'webapp');
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, 'Dockerfile'), `# a web app, as written for docker build
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*
RUN useradd -m -u 1000 web
WORKDIR /srv/site
COPY --chown=web:web public/ ./
ENV GREETING="moved unchanged"
RUN printf '<p>%s</p>\\n' "$GREETING" > greeting.html
USER web
EXPOSE 8000
HEALTHCHECK --interval=1s CMD python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/')"
CMD ["python3", "-m", "http.server", "8000"]
`);
  fs.mkdirSync(path.join(app, 'public'), { recursive: true });
  fs.writeFileSync(path.join(app, 'public', 'index.html'), '<h1>the app</h1>\n');
  fs.writeFileSync(path.join(app, '.dockerignore'), 'Dockerfile\n');
  const built = abxh(['template', 'build', 'webapp', app]);
  assert.equal(built.status, 0, built.stderr);
  try {
    await withE2B(`e2b_${'d4'.repeat(20)}`, async () => {
      // the app's own code, as written for E2B's cloud
      const { Sandbox } = await import('e2b');
      const sbx = await Sandbox.create('webapp');
      try {
        const url = (p) => `http://${sbx.getHost(8000)}${p}`;
        // *.localhost resolves to loopback in browsers and with systemd-resolved; here, told so
        const loopback = (name, opts, cb) => (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4));
        const get = (u) => new Promise((resolve, reject) => {
          http.get(u, { lookup: loopback }, (res) => {
            let b = '';
            res.on('data', (d) => { b += d; });
            res.on('end', () => resolve({ status: res.statusCode, body: b }));
          }).on('error', reject);
        });
        assert.deepEqual(await get(url('/')), { status: 200, body: '<h1>the app</h1>\n' });
        assert.deepEqual(await get(url('/greeting.html')), { status: 200, body: '<p>moved unchanged</p>\n' });
        assert.equal((await get(url('/Dockerfile'))).status, 404); // .dockerignore kept it out
        const who = await sbx.commands.run('id -un; pwd; echo $GREETING');
        assert.equal(who.stdout, 'web\n/srv/site\nmoved unchanged\n');
        assert.equal((await sbx.getInfo()).templateId, 'webapp');
      } finally {
        await sbx.kill();
      }
    });
  } finally {
    abxh(['template', 'rm', 'webapp']);
  }
});

test('abx serve: E2B\'s SDK creates a sandbox from a built template by its templateID', { skip }, async () => {
  await withE2B(`e2b_${'c3'.repeat(20)}`, async () => {
    const { Sandbox } = await import('e2b');
    const sbx = await Sandbox.create('demo', { timeoutMs: 120000 });
    try {
      const r = await sbx.commands.run('pwd; echo $APP_MODE; cat /etc/debian_version');
      assert.match(r.stdout, /^\/opt\/app\ntest\n12\./);
      assert.equal((await sbx.getInfo()).templateId, 'demo');
    } finally {
      await sbx.kill();
    }
    await assert.rejects(Sandbox.create('no-such-template', { timeoutMs: 60000 }));
    // the code interpreter's default context starts in the template's WORKDIR
    const CI = (await import('@e2b/code-interpreter')).Sandbox;
    const ci = await CI.create('demo', { timeoutMs: 120000 });
    try {
      const ex = await ci.runCode('import os, numpy\nos.getcwd()');
      assert.equal(ex.text, "'/opt/app'");
    } finally {
      await ci.kill();
    }
  });
});

test('the build cache keeps under ABX_BUILD_CACHE_MAX_MB: the least recently used trees go, never the build\'s own', { skip }, () => {
  const cache = path.join(work, 'small-cache');
  const env = { ...H.env, ABX_BUILD_CACHE: cache, ABX_BUILD_CACHE_MAX_MB: '3' };
  const build = (name, file) => {
    const dir = path.join(work, `small-${name}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'blob'), crypto.randomBytes(2 << 20));
    fs.writeFileSync(path.join(dir, 'Dockerfile'), `FROM scratch\nCOPY blob /${file}\n`);
    const r = runAbx(['template', 'build', name, dir, '--json'], { env, timeout: 120000 });
    assert.equal(r.status, 0, r.stderr);
    return steps(r.stdout).map((e) => e.cached);
  };
  assert.deepEqual(build('small-a', 'a'), [false, false]);
  assert.deepEqual(build('small-b', 'b'), [true, false]); // a's 2 MiB tree went to keep the cache under 3 MiB
  const trees = fs.readdirSync(path.join(cache, 'trees')).filter((n) => !n.startsWith('.'));
  assert.equal(trees.length, 1);
  // the templates keep their files: they are hard links, not the cache's to take
  assert.equal(fs.statSync(`${H.home}/templates/small-a/rootfs/a`).size, 2 << 20);
  for (const n of ['small-a', 'small-b']) abxh(['template', 'rm', n]);
});

test('a failing RUN: a clear error with its output, no template, and an existing one unchanged', { skip }, () => {
  const df = path.join(work, 'Dockerfile.fail');
  fs.writeFileSync(df, 'FROM debian:bookworm-slim\nENV X=1\nRUN echo about to fail; echo on stderr >&2; printf "\\\\377\\\\n"; exit 3\nCMD ["true"]\n');
  let r = abxh(['--json', 'template', 'build', 'broken', '-f', df, ctx]);
  assert.notEqual(r.status, 0);
  const e = JSON.parse(r.stderr.split('\n').filter((l) => l.startsWith('{')).at(-1)).error;
  assert.equal(e.code, 'E8029');
  assert.match(e.message, /step 3\/4 \(line 3\) RUN echo about to fail.*exited with status 3/s);
  assert.match(e.message, /about to fail\non stderr\n\uFFFD\n/); // invalid UTF-8 shown replaced, not lost
  assert.ok(e.hint.length > 10);
  assert.notEqual(abxh(['--json', 'template', 'inspect', 'broken']).status, 0);
  assert.ok(fs.readdirSync(`${H.home}/templates`).every((n) => !n.startsWith('.partial')));
  // the same failure under an existing name leaves that template as it was
  const before = fs.readFileSync(`${H.home}/templates/demo2/template.json`, 'utf8');
  r = abxh(['template', 'build', 'demo2', '-f', df, ctx]);
  assert.notEqual(r.status, 0);
  assert.equal(fs.readFileSync(`${H.home}/templates/demo2/template.json`, 'utf8'), before);
});

test('Dockerfiles as Docker reads them: the base image\'s PATH expanded, EXPOSE/LABEL/STOPSIGNAL/VOLUME recorded, COPY --chmod, SHELL, USER made by RUN useradd', { skip }, () => {
  const df = path.join(work, 'Dockerfile.docker');
  fs.writeFileSync(df, `FROM debian:bookworm-slim
LABEL run=${nonce}
ARG TOOLS
ENV PATH=/opt/app/bin:$PATH APP=\${APP_NAME:-demo} TOOLS_SET=\${TOOLS:+yes}
EXPOSE 8000 8001/udp
LABEL org.opencontainers.image.title="a demo" team=abx
MAINTAINER abx tests
STOPSIGNAL SIGINT
VOLUME ["/data"]
COPY --chmod=0750 notes.txt /opt/notes.txt
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN mkdir -p /opt/app/bin && printf '#!/bin/sh\\necho tool ran\\n' > /opt/app/bin/tool && chmod 755 /opt/app/bin/tool && echo "$BASH_VERSION" > /bash-version
RUN useradd -o -u 1000 -M builder
USER builder
CMD echo from cmd
`);
  let r = abxh(['template', 'build', 'docker-like', '-f', df, ctx]);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  assert.match(r.stderr, /recorded: every port of a sandbox is reachable/);
  const { config } = JSON.parse(abxh(['template', 'inspect', 'docker-like', '--json']).stdout);
  assert.equal(config.env.PATH, '/opt/app/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  assert.equal(config.env.APP, 'demo');
  assert.equal(config.env.TOOLS_SET, '');
  assert.deepEqual(config.expose, ['8000', '8001/udp']);
  assert.deepEqual(config.labels, { run: nonce, 'org.opencontainers.image.title': 'a demo', team: 'abx', maintainer: 'abx tests' });
  assert.equal(config.stop_signal, 'SIGINT');
  assert.deepEqual(config.volumes, ['/data']);
  assert.deepEqual(config.shell, ['/bin/bash', '-o', 'pipefail', '-c']);
  assert.deepEqual(config.cmd, ['/bin/bash', '-o', 'pipefail', '-c', 'echo from cmd'], 'a shell-form CMD takes SHELL');
  assert.equal(config.uid, 1000);
  const id = create('docker-like');
  r = exec(id, 'tool; echo $PATH; test -s /bash-version && echo bash ran the RUN; id -u; stat -c %a /opt/notes.txt');
  assert.equal(r.stdout, 'tool ran\n/opt/app/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nbash ran the RUN\n1000\n750\n', r.stderr);
  // a user useradd made with another uid fails at USER, before the steps after it run
  fs.writeFileSync(df, `FROM debian:bookworm-slim\nRUN useradd -u 1234 builder2 # ${nonce}\nUSER builder2\nRUN echo after-user\n`);
  r = abxh(['template', 'build', 'docker-like2', '-f', df, ctx]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /USER builder2 is uid 1234; abx runs a template's commands as root \(0\) or uid 1000: make the user with uid 1000 \(RUN useradd -o -u 1000 builder2\)/);
  assert.doesNotMatch(r.stderr, /step 4\/4/);
  // a PATH that finds nothing: the error names the template's PATH, not the host's /usr
  fs.writeFileSync(df, 'FROM debian:bookworm-slim\nENV PATH=/nowhere\n');
  r = abxh(['template', 'build', 'no-path', '-f', df, ctx]);
  assert.equal(r.status, 0, r.stderr);
  r = abxh(['--json', 'run', '--template', 'no-path', '--', 'ls', '/']);
  const e = JSON.parse(r.stderr).error;
  assert.equal(e.code, 'E8009');
  assert.match(e.message, /ls: command not found on the sandbox's PATH \(\/nowhere\)/);
  assert.match(e.hint, /template's PATH \(ENV PATH\)/);
  for (const t of ['docker-like', 'no-path']) abxh(['template', 'rm', t]);
});

test('multi-stage builds: FROM ... AS NAME, COPY --from a stage (by name or index), FROM an earlier stage; the last stage is the template', { skip }, () => {
  const df = path.join(work, 'Dockerfile.stages');
  fs.writeFileSync(df, `FROM debian:bookworm-slim AS build
ENV STAGE=build
RUN mkdir -p /out && echo "built ${nonce}" > /out/artifact && chmod 604 /out/artifact && echo tool > /out/tool
FROM build AS tested
RUN test -f /out/artifact && echo "tested $STAGE" > /out/tested
FROM debian:bookworm-slim
COPY --from=build /out/artifact /app/artifact
COPY --from=0 /out/tool /app/
COPY --from=tested /out/tested /app/tested
`);
  const r = abxh(['template', 'build', 'staged', '-f', df, ctx]);
  assert.equal(r.status, 0, r.stderr.slice(-3000));
  const id = create('staged');
  const x = exec(id, 'cat /app/artifact /app/tool /app/tested; stat -c "%a %u" /app/artifact; test -e /out && echo has-out || echo no-out; echo "stage=$STAGE"');
  assert.equal(x.stdout, `built ${nonce}\ntool\ntested build\n604 0\nno-out\nstage=\n`, x.stderr);
  abxh(['template', 'rm', 'staged']);
});

test('Dockerfile errors name the line and the instruction; nothing runs', { skip }, () => {
  const cases = [
    ['FROM debian:bookworm-slim\nFETCH x\n', /line 2: 'FETCH' is not an instruction abx supports/],
    ['FROM debian:bookworm-slim\nONBUILD RUN make\n', /line 2: ONBUILD is not supported: a template runs no instructions in the builds made FROM it/],
    ['FROM debian:bookworm-slim\nSHELL /bin/bash -c\n', /line 2: SHELL: the JSON array form is required/],
    ['FROM debian:bookworm-slim\nEXPOSE 99999\n', /'99999' is not a port/],
    ['FROM debian:bookworm-slim\nSTOPSIGNAL SIGNOPE\n', /'SIGNOPE' is not a signal/],
    ['FROM debian:bookworm-slim\nCOPY --chmod=u+x notes.txt /n\n', /--chmod=u\+x: an octal mode such as 0755/],
    ['FROM debian:bookworm-slim\nUSER ghost\nRUN touch /ran\n', /USER ghost: no such user in the tree's \/etc\/passwd at this step/],
    ['RUN true\n', /line 1: RUN before FROM/],
    ['FROM debian:bookworm-slim\nCOPY --from=nowhere /a /b\n', /COPY --from=nowhere: no earlier stage and no template of that name/],
    ['FROM ubuntu:22.04\n', /FROM ubuntu:22.04: abx builds FROM debian/],
    ['FROM debian:bookworm-slim\nUSER nobody\n', /USER nobody is uid 65534; abx runs a template's commands as root \(0\) or uid 1000/],
    ['FROM debian:bookworm-slim\nCOPY missing.txt /x\n', /missing.txt: no such file in the context/],
    ['FROM debian:bookworm-slim\nCOPY ../../etc/passwd /x\nRUN true\n', /no such file in the context|E8029/],
    ['# nothing\n', /no FROM/],
  ];
  for (const [text, re] of cases) {
    const df = path.join(work, 'Dockerfile.bad');
    fs.writeFileSync(df, text);
    const r = abxh(['--json', 'template', 'build', 'bad', '-f', df, ctx]);
    assert.notEqual(r.status, 0, text);
    assert.match(r.stderr, re, text);
  }
  assert.notEqual(abxh(['--json', 'template', 'inspect', 'bad']).status, 0);
});

// ---- OCI layouts ----------------------------------------------------------

function blob(dir, data) {
  const hex = crypto.createHash('sha256').update(data).digest('hex');
  fs.mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'blobs/sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

// An image layout of two layers: a tree with a shell, then a layer that
// adds a file, deletes one (.wh.) and replaces a directory's contents (opaque).
// whiteouts: 'last' or 'first', the order of the second layer's entries
// (a whiteout applies to the layers below only, wherever it stands);
// extra: more entries for the second layer (hostile ones).
function makeOci(dir, whiteouts = 'last', extra = []) {
  const l1 = path.join(work, 'oci-l1'), l2 = path.join(work, `oci-l2-${path.basename(dir)}`);
  const own = ['./etc', './etc/layer2', './opt', './opt/data', './opt/data/new.txt', './work', ...extra.map((e) => `./${e}`)];
  const wh = ['./etc/.wh.marker', './opt/data/.wh..wh..opq'];
  const order = (whiteouts === 'first' ? [own[0], own[2], own[3], ...wh, ...own] : [...own, ...wh]).filter((e, i, a) => a.indexOf(e) === i);
  let r = sh(`set -e; d=${l1}; mkdir -p $d/usr/bin $d/etc $d/tmp $d/opt/data
    for t in sh cat ls id pwd env sleep; do p=/usr/bin/$t; [ -e $p ] || p=/bin/$t; cp -L $p $d/usr/bin/; for l in $(ldd $p | grep -o '/[^ ]*'); do mkdir -p $d$(dirname $l); cp -L $l $d$l; done; done
    ln -sfn usr/bin $d/bin; echo marker > $d/etc/marker; echo old > $d/opt/data/old.txt
    rm -rf ${l2}; mkdir -p ${l2}/etc ${l2}/opt/data ${l2}/work; echo second > ${l2}/etc/layer2; : > ${l2}/etc/.wh.marker
    : > ${l2}/opt/data/.wh..wh..opq; echo new > ${l2}/opt/data/new.txt
    for e in ${extra.join(' ')}; do mkdir -p ${l2}/$(dirname $e); : > ${l2}/$e; done
    tar -C ${l1} --numeric-owner -cf ${work}/l1.tar . && tar -C ${l2} --numeric-owner --no-recursion -czf ${work}/l2.tar.gz ${order.join(' ')}
    [ "$(tar -tzf ${work}/l2.tar.gz | sed 's,/$,,' | tr '\\n' ' ')" = "${order.join(' ')} " ] || { tar -tzf ${work}/l2.tar.gz; exit 1; }`);
  assert.equal(r.status, 0, r.stderr + r.stdout);
  const layers = [
    { mediaType: 'application/vnd.oci.image.layer.v1.tar', ...blob(dir, fs.readFileSync(`${work}/l1.tar`)) },
    { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...blob(dir, fs.readFileSync(`${work}/l2.tar.gz`)) },
  ];
  const config = blob(dir, Buffer.from(JSON.stringify({
    architecture: 'amd64', os: 'linux',
    config: { Env: ['PATH=/usr/bin:/bin', 'FROM_IMAGE=yes'], WorkingDir: '/work', User: 'root', Cmd: ['sh', '-c', 'echo started > /tmp/started'] },
    rootfs: { type: 'layers', diff_ids: [] },
  })));
  const manifest = blob(dir, Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config }, layers,
  })));
  fs.writeFileSync(path.join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  fs.writeFileSync(path.join(dir, 'index.json'), JSON.stringify({
    schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, platform: { architecture: 'amd64', os: 'linux' } }],
  }));
}

test('an OCI image layout: layers in order, whiteouts applied, its Env, WorkingDir, User and Cmd kept', { skip }, () => {
  const dir = path.join(work, 'oci');
  makeOci(dir);
  let r = abxh(['template', 'import', 'oci', dir, '--json']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).kind, 'oci');
  const id = create('oci');
  r = exec(id, 'cat /etc/layer2; test -e /etc/marker && echo marker-still-there || echo marker-gone; ls /opt/data; echo $FROM_IMAGE; pwd; id -u; for i in 1 2 3 4 5 6 7 8 9 10; do test -e /tmp/started && break; sleep 0.3; done; cat /tmp/started');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split('\n'), ['second', 'marker-gone', 'new.txt', 'yes', '/work', '0', 'started']);
  // the same layer with its whiteouts listed before its own files: the same tree
  const first = path.join(work, 'oci-first');
  makeOci(first, 'first');
  r = abxh(['template', 'import', 'oci-first', first]);
  assert.equal(r.status, 0, r.stderr);
  const t = `${H.home}/templates`;
  for (const tree of [`${t}/oci/rootfs`, `${t}/oci-first/rootfs`]) {
    assert.deepEqual(fs.readdirSync(`${tree}/opt/data`), ['new.txt'], tree);
    assert.equal(fs.existsSync(`${tree}/etc/marker`), false, tree);
    assert.equal(fs.readFileSync(`${tree}/etc/layer2`, 'utf8'), 'second\n');
  }
  // whiteouts naming nothing, '.', '..' or a reserved name are refused, and remove nothing
  for (const [n, hostile] of [['dot', 'opt/.wh..'], ['dotdot', 'opt/data/.wh...'], ['empty', 'etc/.wh.'], ['reserved', 'etc/.wh..wh.plnk']]) {
    const hd = path.join(work, `oci-wh-${n}`);
    makeOci(hd, 'last', [hostile]);
    r = abxh(['--json', 'template', 'import', `oci-wh-${n}`, hd]);
    assert.notEqual(r.status, 0, hostile);
    assert.match(JSON.parse(r.stderr).error.message, /whiteout of nothing it may remove/, hostile);
    assert.equal(fs.existsSync(`${t}/oci-wh-${n}`), false);
  }
  assert.ok(fs.existsSync(`${t}/oci/rootfs/etc/layer2`));
  // a damaged blob is refused
  const bad = path.join(work, 'oci-bad');
  fs.cpSync(dir, bad, { recursive: true });
  const manifestHex = JSON.parse(fs.readFileSync(path.join(bad, 'index.json'))).manifests[0].digest.slice(7);
  const m = JSON.parse(fs.readFileSync(path.join(bad, 'blobs/sha256', manifestHex)));
  fs.appendFileSync(path.join(bad, 'blobs/sha256', m.layers[1].digest.slice(7)), 'x');
  r = abxh(['--json', 'template', 'import', 'oci-bad', bad]);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /does not match its digest/);
  assert.equal(fs.existsSync(`${H.home}/templates/oci-bad`), false);
});

test('OCI layouts made by umoci: DIR:TAG picks a tagged image; an unknown tag is refused', { skip }, () => {
  const dir = path.join(work, 'umoci');
  const r = sh(`set -e; cd ${work}; umoci init --layout ${dir}
    for t in one two; do umoci new --image ${dir}:$t; umoci unpack --image ${dir}:$t u-$t >/dev/null
      mkdir -p u-$t/rootfs/etc; echo $t > u-$t/rootfs/etc/which; umoci repack --image ${dir}:$t u-$t; done
    umoci config --image ${dir}:two --config.env TAGGED=two --config.workingdir /etc`);
  assert.equal(r.status, 0, r.stderr);
  for (const t of ['one', 'two']) {
    const imp = abxh(['template', 'import', `tag-${t}`, `${dir}:${t}`]);
    assert.equal(imp.status, 0, imp.stderr);
    assert.equal(fs.readFileSync(`${H.home}/templates/tag-${t}/rootfs/etc/which`, 'utf8'), `${t}\n`);
  }
  assert.deepEqual(JSON.parse(abxh(['template', 'inspect', 'tag-two', '--json']).stdout).config.env, { TAGGED: 'two' });
  const bad = abxh(['--json', 'template', 'import', 'tag-three', `${dir}:three`]);
  assert.match(JSON.parse(bad.stderr).error.message, /no manifest tagged 'three'/);
});

test('two sandboxes from one template: different host id ranges, separate writes, the template unchanged', { skip }, () => {
  const a = create('oci'), b = create('oci');
  const mapA = exec(a, 'cat /proc/self/uid_map').stdout.trim().split(/\s+/);
  const mapB = exec(b, 'cat /proc/self/uid_map').stdout.trim().split(/\s+/);
  assert.equal(mapA[0], '0');
  assert.notEqual(mapA[1], mapB[1]); // each sandbox's root is another host id
  assert.equal(exec(a, 'echo a > /work/mine; cat /work/mine').stdout, 'a\n');
  assert.equal(exec(b, 'echo b > /work/mine; cat /work/mine').stdout, 'b\n');
  assert.equal(exec(a, 'cat /work/mine').stdout, 'a\n');
  assert.equal(fs.existsSync(`${H.home}/templates/oci/rootfs/work/mine`), false);
  // files of the template belong to root inside either sandbox
  assert.equal(exec(b, 'ls -n /etc/layer2').stdout.split(/\s+/)[2], '0');
});

test('FROM a template is cached by its content: a changed tree reruns the steps, the same tree made again does not', { skip }, () => {
  const df = path.join(work, 'Dockerfile.fromoci');
  fs.writeFileSync(df, `FROM oci\nRUN echo ${nonce}; cat /etc/layer2 /etc/extra > /seen 2>/dev/null; true\n`);
  const build = () => {
    const r = abxh(['template', 'build', 'fromoci', '-f', df, ctx, '--json']);
    assert.equal(r.status, 0, r.stderr.slice(-3000));
    return steps(r.stdout).map((e) => e.cached);
  };
  build();
  assert.deepEqual(build(), [true, true]);
  // the same name and age, another tree: the step reruns on what the template now holds
  fs.writeFileSync(`${H.home}/templates/oci/rootfs/etc/extra`, 'changed\n');
  assert.deepEqual(build(), [false, false]);
  assert.equal(fs.readFileSync(`${H.home}/templates/fromoci/rootfs/seen`, 'utf8'), 'second\nchanged\n');
  // made again from the same layout: a new template of the first content, whose steps are in the cache
  assert.equal(abxh(['template', 'rm', '--force', 'oci']).status, 0);
  const r = abxh(['template', 'import', 'oci', path.join(work, 'oci')]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(build(), [true, true]);
  assert.equal(fs.readFileSync(`${H.home}/templates/fromoci/rootfs/seen`, 'utf8'), 'second\n');
  abxh(['template', 'rm', 'fromoci']);
});

test('the built-in code-interpreter-v1 is a Debian template with the kernels\' libraries', { skip }, () => {
  const r0 = abxh(['template', 'inspect', 'code-interpreter-v1', '--json']);
  assert.equal(r0.status, 0);
  const id = create('code-interpreter-v1'); // built on first use (cached machine-wide)
  assert.equal(JSON.parse(abxh(['template', 'inspect', 'code-interpreter-v1', '--json']).stdout).built, true);
  const r = exec(id, 'cat /etc/debian_version; python3 -c "import numpy, pandas, matplotlib; print(matplotlib.get_backend())"; node -e "console.log(1+1)"');
  assert.equal(r.status, 0, r.stderr);
  const [debian, backend, two] = r.stdout.trim().split('\n');
  assert.match(debian, /^12\./);
  assert.equal(backend.toLowerCase(), 'agg');
  assert.equal(two, '2');
});
