// state-home.test.mjs: an $ABX_HOME someone else prepared is not trusted.
// abx refuses a state directory (or a parent) that is not the caller's or
// is writable by group or others, and reconcile never follows a symlink
// planted among the sandboxes' state directories.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-statehome');
after(() => H.cleanup());

function refused(home, args) {
  const r = runAbx(args, { env: { ...H.env, ABX_HOME: home } });
  assert.notEqual(r.status, 0, `${args.join(' ')} ran with ABX_HOME=${home}`);
  assert.match(r.stderr, /E8025/, r.stderr);
  return r;
}

test('a state directory owned by another user, or writable by others, is refused', () => {
  const foreign = path.join(H.home, 'foreign');
  fs.mkdirSync(foreign, { mode: 0o755 });
  fs.chownSync(foreign, 65534, 65534);
  for (const args of [['list'], ['create', '--timeout', '10'], ['config', 'get'], ['config', 'set', 'core.provider', 'local']]) refused(foreign, args);
  assert.deepEqual(fs.readdirSync(foreign), [], 'abx wrote into a directory it does not own');
  const loose = path.join(H.home, 'loose');
  fs.mkdirSync(loose);
  fs.chmodSync(loose, 0o777);
  refused(loose, ['list']);
  // a parent writable by its group
  const parent = path.join(H.home, 'shared-parent');
  fs.mkdirSync(path.join(parent, 'home'), { recursive: true, mode: 0o700 });
  fs.chmodSync(parent, 0o770);
  refused(path.join(parent, 'home'), ['list']);
  // a sound one works
  const sound = path.join(H.home, 'sound');
  fs.mkdirSync(sound, { mode: 0o700 });
  assert.equal(runAbx(['list'], { env: { ...H.env, ABX_HOME: sound } }).status, 0);
});

test('reconcile never follows symlinks planted in the state directory', () => {
  const home = path.join(H.home, 'planted');
  fs.mkdirSync(path.join(home, 'sandboxes'), { recursive: true, mode: 0o700 });
  const victim = path.join(H.home, 'victim');
  fs.mkdirSync(victim, { mode: 0o700 });
  fs.writeFileSync(path.join(victim, 'precious'), 'keep me');
  // a "sandbox" that is a symlink to the victim directory
  fs.symlinkSync(victim, path.join(home, 'sandboxes', 'i' + 'a'.repeat(20)));
  // a real, dead sandbox directory whose files are symlinks to victim files
  const dead = path.join(home, 'sandboxes', 'i' + 'b'.repeat(20));
  fs.mkdirSync(dead, { mode: 0o700 });
  fs.writeFileSync(path.join(dead, 'meta.json'), '{}');
  fs.symlinkSync(path.join(victim, 'precious'), path.join(dead, 'config.json'));
  fs.symlinkSync(victim, path.join(dead, 'rootfs'));
  // old enough to look like a create that never finished
  const past = new Date(Date.now() - 3600e3);
  fs.utimesSync(victim, past, past);
  const r = runAbx(['list'], { env: { ...H.env, ABX_HOME: home } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(fs.readFileSync(path.join(victim, 'precious'), 'utf8'), 'keep me');
  assert.deepEqual(fs.readdirSync(victim), ['precious']);
  assert.ok(!fs.existsSync(dead), 'the dead sandbox was not reaped');
});
