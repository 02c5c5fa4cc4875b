// templates.test.mjs: `abx template import|list|inspect|rm` and sandboxes
// made from an imported template (issue 13's first slice). The root
// filesystems are made here: a small tree of the host's bash, coreutils
// and their libraries, packed with tar as root (owners root), plus
// hostile archives written with Python's tarfile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-tpl');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-tpl-work-'));
const abxh = (args) => runAbx(args, { env: H.env });
const sh = (script) => spawnSync('sh', ['-c', script], { encoding: 'utf8' });
const root = process.getuid() === 0;

// A root filesystem with what a shell session needs, owned by root.
function makeRootfs(dir, marker) {
  const tools = ['bash', 'sh', 'cat', 'echo', 'ls', 'id', 'touch', 'rm', 'mkdir', 'true', 'env', 'nice', 'wc', 'cut'];
  const r = sh(`set -e; d=${dir}; mkdir -p $d/usr/bin $d/etc $d/tmp $d/root $d/home/user
    for t in ${tools.join(' ')}; do p=/usr/bin/$t; [ -e $p ] || p=/bin/$t; cp -L $p $d/usr/bin/; for l in $(ldd $p | grep -o '/[^ ]*'); do mkdir -p $d$(dirname $l); cp -L $l $d$l; done; done
    ln -s usr/bin $d/bin
    printf 'root:x:0:0:root:/root:/bin/bash\\nuser:x:1000:1000:user:/home/user:/bin/bash\\n' > $d/etc/passwd
    printf 'root:x:0:\\nuser:x:1000:\\n' > $d/etc/group
    echo '${marker}' > $d/etc/marker; chmod 4755 $d/usr/bin/env`);
  assert.equal(r.status, 0, r.stderr);
}

function tarOf(dir, out) {
  const r = sh(`tar -C ${dir} --numeric-owner -cf ${out} .`);
  assert.equal(r.status, 0, r.stderr);
  return out;
}

before(() => {
  if (!root) return;
  makeRootfs(path.join(work, 'tree'), 'from the template');
  tarOf(path.join(work, 'tree'), path.join(work, 'root.tar'));
  sh(`gzip -k ${path.join(work, 'root.tar')}`);
});
after(() => {
  for (const id of fs.existsSync(`${H.home}/sandboxes`) ? fs.readdirSync(`${H.home}/sandboxes`) : []) abxh(['kill', id]);
  H.cleanup();
  fs.rmSync(work, { recursive: true, force: true });
});

test('import a root filesystem archive; list and inspect it; the built-in ones are listed too', { skip: !root && 'needs root' }, () => {
  let r = abxh(['template', 'import', 'mini', path.join(work, 'root.tar.gz'), '--json']);
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.equal(doc.name, 'mini');
  assert.ok(doc.files > 10 && doc.size_bytes > 100000, r.stdout);
  const list = JSON.parse(abxh(['template', 'list', '--json']).stdout).map((t) => t.name);
  assert.deepEqual(list, ['base', 'code-interpreter-v1', 'mini']);
  assert.equal(JSON.parse(abxh(['template', 'inspect', 'mini', '--json']).stdout).name, 'mini');
  r = abxh(['--json', 'template', 'import', 'mini', path.join(work, 'root.tar')]);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001'); // exists
  for (const bad of ['Base', 'base', '../x', 'a/b', '']) {
    r = abxh(['--json', 'template', 'import', bad, path.join(work, 'root.tar')]);
    assert.notEqual(r.status, 0, bad);
  }
});

test('sandboxes from a template: its files, none of the host\'s, each sandbox its own writes, the template unchanged', { skip: !root && 'needs root' }, () => {
  const a = abxh(['create', '--template', 'mini']).stdout.trim();
  const b = abxh(['create', '--template', 'mini']).stdout.trim();
  assert.match(a, /^local:/);
  try {
    let r = abxh(['exec', a, 'cat /etc/marker; id -u; ls /usr/bin | wc -l; test -e /usr/bin/python3 && echo host-python || echo no-python']);
    assert.equal(r.status, 0, r.stderr);
    const [marker, uid, count, python] = r.stdout.trim().split('\n');
    assert.equal(marker, 'from the template');
    assert.equal(uid, '1000');
    assert.ok(Number(count) >= 10 && Number(count) < 40, count);
    assert.equal(python, 'no-python'); // the host's /usr is not there
    assert.equal(JSON.parse(abxh(['info', '--json', a]).stdout).template, 'mini');
    // root inside sees the template's files as its own and may change them, in its own layer
    r = abxh(['exec', '--user', 'root', a, 'ls -n /etc/marker | cut -d" " -f3; echo changed > /etc/marker; cat /etc/marker']);
    assert.equal(r.stdout, '0\nchanged\n', r.stderr);
    assert.equal(abxh(['exec', b, 'cat /etc/marker']).stdout, 'from the template\n');
    assert.equal(fs.readFileSync(`${H.home}/templates/mini/rootfs/etc/marker`, 'utf8'), 'from the template\n');
    // the setuid bit did not come along
    assert.equal(fs.statSync(`${H.home}/templates/mini/rootfs/usr/bin/env`).mode & 0o6000, 0);
    // in use: rm refused, then allowed once the sandboxes are gone
    r = abxh(['--json', 'template', 'rm', 'mini']);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
    assert.match(JSON.parse(r.stderr).error.message, /2 live sandboxes/);
  } finally {
    abxh(['kill', a]);
    abxh(['kill', b]);
  }
  assert.equal(abxh(['template', 'rm', 'mini']).status, 0);
  assert.equal(fs.existsSync(`${H.home}/templates/mini`), false);
  const r = abxh(['--json', 'create', '--template', 'mini']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
});

test('hostile archives are refused and leave no template', { skip: !root && 'needs root' }, () => {
  const victim = fs.mkdtempSync(path.join(work, 'victim-'));
  fs.chmodSync(victim, 0o700);
  const py = (name, body) => {
    const out = path.join(work, `${name}.tar`);
    const r = spawnSync('python3', ['-c', `import tarfile, io, sys\nt = tarfile.open(sys.argv[1], 'w')\n${body}\nt.close()`, out], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return out;
  };
  const file = (n) => `i = tarfile.TarInfo('${n}'); d = b'x'; i.size = len(d); t.addfile(i, io.BytesIO(d))`;
  const cases = {
    absolute: file('/etc/evil'),
    dotdot: file('etc/../../evil'),
    device: "i = tarfile.TarInfo('dev/sda'); i.type = tarfile.BLKTYPE; i.devmajor = 8; t.addfile(i)",
    climbing: "i = tarfile.TarInfo('etc/link'); i.type = tarfile.SYMTYPE; i.linkname = '../../../etc/shadow'; t.addfile(i)",
    // exactly one level above the root, from three depths
    climbOne: "i = tarfile.TarInfo('etc/link'); i.type = tarfile.SYMTYPE; i.linkname = '../../shadow'; t.addfile(i)",
    climbTop: "i = tarfile.TarInfo('up'); i.type = tarfile.SYMTYPE; i.linkname = '..'; t.addfile(i)",
    climbDeep: "i = tarfile.TarInfo('a/b/c'); i.type = tarfile.SYMTYPE; i.linkname = 'x/../../../../etc'; t.addfile(i)",
    through: "i = tarfile.TarInfo('etc'); i.type = tarfile.SYMTYPE; i.linkname = '/etc'; t.addfile(i)\n" + file('etc/passwd'),
    // a directory entry over a link an earlier entry made must not change the link's host target
    dirover: `i = tarfile.TarInfo('x'); i.type = tarfile.SYMTYPE; i.linkname = '${victim}'; t.addfile(i)\n` +
      "i = tarfile.TarInfo('x'); i.type = tarfile.DIRTYPE; i.mode = 0o777; t.addfile(i)",
    // a hard link reached through such a link would take a host file into the template
    hardthrough: "i = tarfile.TarInfo('h'); i.type = tarfile.SYMTYPE; i.linkname = '/etc'; t.addfile(i)\n" +
      "i = tarfile.TarInfo('leak'); i.type = tarfile.LNKTYPE; i.linkname = 'h/hostname'; t.addfile(i)",
  };
  for (const [name, body] of Object.entries(cases)) {
    const r = abxh(['--json', 'template', 'import', `bad-${name}`, py(name, body)]);
    assert.notEqual(r.status, 0, name);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8001', `${name}: ${r.stderr}`);
    assert.equal(fs.existsSync(`${H.home}/templates/bad-${name}`), false, name);
  }
  assert.ok(fs.readdirSync(`${H.home}/templates`).every((n) => !n.startsWith('.partial')));
  assert.equal(fs.statSync(victim).mode & 0o777, 0o700, 'a host directory changed mode');
  assert.equal(fs.readFileSync('/etc/passwd', 'utf8').includes('x\n'), false);
});
