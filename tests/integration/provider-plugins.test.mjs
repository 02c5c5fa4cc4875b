// provider-plugins.test.mjs: `abx provider install|list|remove` (issue 10,
// first part), driven as a user would: a plugin directory installed with a
// digest, tampering seen as a mismatch (E8011 before any start), --link,
// --force, refusals that leave nothing behind, remove and --purge.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-providers');
after(() => H.cleanup());
const abxh = (args, opts = {}) => runAbx(args, { env: H.env, ...opts });
const home = H.env.ABX_HOME;
const work = fs.mkdtempSync(path.join(H.home, 'src-'));

function plugin(id, manifestExtra = '', files = { 'provider.py': 'print("hi")\n' }) {
  const dir = path.join(work, id);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'abx-provider.toml'), `[provider]\nid = "${id}"\nname = "Test"\nversion = "0.1.0"\nkind = "exec"\n[runtime]\ncommand = ["python3", "provider.py"]\nenv = ["MY_REGION"]\n[config.api_key]\nsecret = true\ndescription = "key"\n${manifestExtra}`);
  for (const [name, body] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), body);
  }
  return dir;
}
const list = () => Object.fromEntries(JSON.parse(abxh(['--json', 'provider', 'list']).stdout).map((p) => [p.id, p]));
const leftovers = () => fs.existsSync(path.join(home, 'providers')) ? fs.readdirSync(path.join(home, 'providers')).filter((n) => n.startsWith('.')) : [];

test('install from a directory: what the plugin gets is shown, the copy is digested, list says ok', () => {
  const dir = plugin('alpha', '', { 'provider.py': 'print("a")\n', 'lib/util.py': 'X = 1\n' });
  const r = abxh(['--json', 'provider', 'install', dir, '--yes']);
  assert.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.deepEqual([doc.id, doc.kind, doc.version, doc.linked], ['alpha', 'exec', '0.1.0', false]);
  assert.match(doc.digest, /^[0-9a-f]{64}$/);
  assert.match(r.stderr, /runs: python3 provider\.py/);
  assert.match(r.stderr, /host variables passed through: MY_REGION/);
  assert.match(r.stderr, /config keys: api_key \(secret\)/);
  assert.equal(fs.readFileSync(path.join(home, 'providers/alpha/lib/util.py'), 'utf8'), 'X = 1\n');
  const p = list().alpha;
  assert.deepEqual([p.kind, p.version, p.linked, p.digest, p.source], ['exec', '0.1.0', false, 'ok', fs.realpathSync(dir)]);
  assert.equal(fs.statSync(path.join(home, 'provider-index.json')).mode & 0o777, 0o600);
});

test('tampering with an installed plugin is a digest mismatch: an edit, a new file, a mode change', () => {
  const dir = plugin('beta');
  assert.equal(abxh(['provider', 'install', dir, '--yes']).status, 0);
  const installed = path.join(home, 'providers/beta');
  const reinstall = () => assert.equal(abxh(['provider', 'install', dir, '--yes', '--force']).status, 0);
  for (const tamper of [
    () => fs.appendFileSync(path.join(installed, 'provider.py'), '# evil\n'),
    () => fs.writeFileSync(path.join(installed, 'added.py'), 'x'),
    () => fs.chmodSync(path.join(installed, 'provider.py'), 0o777),
    () => fs.rmSync(path.join(installed, 'provider.py')),
  ]) {
    reinstall();
    assert.equal(list().beta.digest, 'ok');
    tamper();
    assert.equal(list().beta.digest, 'mismatch');
  }
});

test('--link installs a symlink (no digest) with a warning; --force replaces; without it an existing id is refused', () => {
  const dir = plugin('gamma');
  const r = abxh(['provider', 'install', dir, '--link', '--yes']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /warning: gamma is a --link install/);
  assert.ok(fs.lstatSync(path.join(home, 'providers/gamma')).isSymbolicLink());
  assert.deepEqual([list().gamma.linked, list().gamma.digest], [true, 'linked']);
  const again = abxh(['provider', 'install', dir, '--yes']);
  assert.notEqual(again.status, 0);
  assert.match(again.stderr, /already installed \(use --force/);
  assert.equal(abxh(['provider', 'install', dir, '--yes', '--force']).status, 0);
  assert.deepEqual([list().gamma.linked, list().gamma.digest], [false, 'ok']);
});

test('refused, with nothing left behind: no --yes without a terminal, a name that is not the id, a bad manifest, a link out of the plugin', () => {
  const before = Object.keys(list());
  let r = abxh(['provider', 'install', plugin('delta')], { input: '' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /not confirmed/);
  const wrong = plugin('epsilon');
  const renamed = path.join(work, 'not-epsilon');
  fs.rmSync(renamed, { recursive: true, force: true });
  fs.renameSync(wrong, renamed);
  r = abxh(['provider', 'install', renamed, '--yes']);
  assert.match(r.stderr, /named 'not-epsilon' but the manifest's id is 'epsilon'/);
  r = abxh(['provider', 'install', plugin('zeta', 'unknown_table_key = 1\n'), '--yes']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unknown key 'config\.api_key\.unknown_table_key'/);
  const eta = plugin('eta');
  fs.symlinkSync('/etc/passwd', path.join(eta, 'passwd'));
  r = abxh(['provider', 'install', eta, '--yes']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /symlink that may point outside the plugin; nothing was installed/);
  assert.deepEqual(Object.keys(list()), before);
  assert.deepEqual(leftovers(), []);
  assert.ok(!fs.existsSync(path.join(home, 'providers/eta')));
});

test('remove: the plugin goes, its data stays unless --purge; an unknown id is an error', () => {
  const dir = plugin('theta');
  assert.equal(abxh(['provider', 'install', dir, '--yes']).status, 0);
  const data = path.join(home, 'provider-data/theta');
  fs.mkdirSync(data, { recursive: true });
  fs.writeFileSync(path.join(data, 'state'), 'keep');
  let r = abxh(['--json', 'provider', 'remove', 'theta']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!('theta' in list()));
  assert.ok(!fs.existsSync(path.join(home, 'providers/theta')));
  assert.equal(fs.readFileSync(path.join(data, 'state'), 'utf8'), 'keep');
  assert.equal(abxh(['provider', 'install', dir, '--yes']).status, 0);
  r = abxh(['provider', 'remove', 'theta', '--purge']);
  assert.equal(r.status, 0);
  assert.ok(!fs.existsSync(data));
  r = abxh(['--json', 'provider', 'remove', 'nosuch']);
  assert.equal(r.status, 1);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8015');
});

test('install from a git repository (file://), a subdirectory or the whole repository; refused: option-like sources, ../, other schemes', async () => {
  const git = (cwd, ...args) => assert.equal(spawnSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).status, 0);
  const repo = fs.mkdtempSync(path.join(H.home, 'repo-'));
  git(repo, 'init', '-q');
  const sub = plugin('kappa');
  fs.cpSync(sub, path.join(repo, 'plugins', 'kappa'), { recursive: true });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'plugin');
  let r = abxh(['--json', 'provider', 'install', `file://${repo}//plugins/kappa`, '--yes']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).source, `file://${repo}//plugins/kappa`);
  assert.deepEqual(fs.readdirSync(path.join(home, 'providers/kappa')).sort(), ['abx-provider.toml', 'provider.py']);
  assert.equal(list().kappa.digest, 'ok');
  // the whole repository as the plugin: its name is the id, and .git is not kept
  const whole = path.join(H.home, 'lambda');
  fs.cpSync(plugin('lambda'), whole, { recursive: true });
  git(whole, 'init', '-q');
  git(whole, 'add', '-A');
  git(whole, 'commit', '-qm', 'plugin');
  r = abxh(['provider', 'install', `file://${whole}`, '--yes']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!fs.existsSync(path.join(home, 'providers/lambda/.git')));
  for (const [source, says] of [['-cfoo=bar', /may not start with '-'/], [`file://${repo}//../x`, /stay inside the repository/], ['ftp://example.com/x', /only file/], ['owner/repo;rm -rf /', /shell characters/], [`file://${repo}//plugins/nosuch`, /has no directory plugins\/nosuch/]]) {
    r = abxh(['provider', 'install', '--yes', '--', source]);
    assert.notEqual(r.status, 0, source);
    assert.match(r.stderr, says, source);
  }
  assert.deepEqual(leftovers(), []);
});

test('install from a tar archive (gzip or not; the manifest at its root or in one top-level directory); zip-slip and friends refused with nothing left behind', () => {
  const dir = plugin('mu');
  const tars = fs.mkdtempSync(path.join(H.home, 'tars-'));
  const tar = (args) => assert.equal(spawnSync('tar', args, { encoding: 'utf8' }).status, 0);
  tar(['czf', path.join(tars, 'mu.tar.gz'), '-C', work, 'mu']);
  let r = abxh(['--json', 'provider', 'install', path.join(tars, 'mu.tar.gz'), '--yes']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).source, path.join(tars, 'mu.tar.gz'));
  assert.equal(list().mu.digest, 'ok');
  tar(['cf', path.join(tars, 'root.tar'), '-C', dir, '.']);
  r = abxh(['provider', 'install', path.join(tars, 'root.tar'), '--yes', '--force']);
  assert.equal(r.status, 0, r.stderr);
  // hostile archives, made with Python's tarfile (GNU tar would not make some of them)
  const py = `
import io, sys, tarfile
out, kind = sys.argv[1], sys.argv[2]
def entry(t, name, type=tarfile.REGTYPE, data=b"x", link=""):
    ti = tarfile.TarInfo(name); ti.type = type; ti.linkname = link
    if type == tarfile.REGTYPE:
        ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
with tarfile.open(out, "w") as t:
    entry(t, "mu/abx-provider.toml", data=open(sys.argv[3], "rb").read())
    if kind == "slip": entry(t, "mu/../../escaped.txt")
    if kind == "abs": entry(t, "/tmp/abx-escaped-abs.txt")
    if kind == "symlink": entry(t, "mu/l", tarfile.SYMTYPE, link="/etc/passwd")
    if kind == "through":
        entry(t, "mu/d", tarfile.SYMTYPE, link=".")
        entry(t, "mu/d/x.txt")
    if kind == "hardlink": entry(t, "mu/h", tarfile.LNKTYPE, link="../../etc/passwd")
    if kind == "device":
        ti = tarfile.TarInfo("mu/null"); ti.type = tarfile.CHRTYPE; ti.devmajor = 1; ti.devminor = 3; t.addfile(ti)
`;
  const before = JSON.stringify(list());
  for (const [kind, says] of [['slip', /absolute path or '\.\.'/], ['abs', /absolute path or '\.\.'/], ['symlink', /links outside the plugin/], ['through', /reach through a link/], ['hardlink', /links outside the plugin/], ['device', /device, fifo or socket/]]) {
    const file = path.join(tars, `${kind}.tar`);
    assert.equal(spawnSync('python3', ['-c', py, file, kind, path.join(dir, 'abx-provider.toml')]).status, 0);
    r = abxh(['provider', 'install', file, '--yes', '--force']);
    assert.notEqual(r.status, 0, kind);
    assert.match(r.stderr, says, kind);
    assert.match(r.stderr, /nothing was installed/, kind);
  }
  assert.equal(JSON.stringify(list()), before);
  assert.deepEqual(leftovers(), []);
  assert.ok(!fs.existsSync('/tmp/abx-escaped-abs.txt'));
  assert.ok(!fs.existsSync(path.join(home, 'escaped.txt')) && !fs.existsSync(path.join(home, 'providers', 'escaped.txt')));
});
