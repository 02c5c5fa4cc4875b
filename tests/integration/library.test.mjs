// library.test.mjs: libabx as a C programmer gets it, and the walls around
// it. The installed abx.h compiles on its own (C17 -pedantic, and C++); the
// pkg-config file says how to build against the installed library; a
// program built that way creates a sandbox, runs a command in it and kills
// it. The layering check passes on the tree and fails on a planted call of
// an internal symbol (or an internal header) in a front end.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { abx, root, privateHome } from '../lib/harness.mjs';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'abx-lib-'));
const H = privateHome('abx-lib');
after(() => {
  H.cleanup();
  fs.rmSync(work, { recursive: true, force: true });
});

const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { encoding: 'utf8', ...opts });

test('the layering check passes on the tree, and refuses a planted internal call or header in a front end', () => {
  let r = run('python3', [path.join(root, 'scripts/check-layers.py'), root]);
  assert.equal(r.status, 0, r.stderr);
  const copy = path.join(work, 'tree');
  for (const d of ['include', 'base', 'src', 'mcp', 'serve', 'python']) fs.cpSync(path.join(root, d), path.join(copy, d), { recursive: true });
  r = run('python3', [path.join(root, 'scripts/check-layers.py'), copy]);
  assert.equal(r.status, 0, `the copy itself passes: ${r.stderr}`);
  const victim = path.join(copy, 'src/cmd_list.c');
  const original = fs.readFileSync(victim, 'utf8');
  fs.writeFileSync(victim, `${original}\nstatic int planted(void) { return abx__template_list(0, 0); }\n`);
  r = run('python3', [path.join(root, 'scripts/check-layers.py'), copy]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /src\/cmd_list\.c:\d+: names the internal symbol abx__template_list/);
  fs.writeFileSync(victim, `#include "template_store.h"\n${original}`);
  r = run('python3', [path.join(root, 'scripts/check-layers.py'), copy]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /src\/cmd_list\.c:1: includes the internal header "template_store\.h"/);
  fs.writeFileSync(victim, `${original}\nstatic abx_kvs *planted;\n`); // an internal type without the abx__ prefix
  r = run('python3', [path.join(root, 'scripts/check-layers.py'), copy]);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /names abx_kvs, which neither abx\.h nor the base layer declares/);
  // a name in a comment or a string is no call
  fs.writeFileSync(victim, `${original}\n/* abx__template_list */ static const char *planted = "abx__x";\n`);
  assert.equal(run('python3', [path.join(root, 'scripts/check-layers.py'), copy]).status, 0);
});

test('the installed abx.h compiles alone; a program built with pkg-config against the installed libabx runs a sandbox', () => {
  const build = path.dirname(abx);
  const dest = path.join(work, 'dest');
  let r = run('meson', ['install', '-C', build, '--no-rebuild', '--destdir', dest, '--quiet']);
  assert.equal(r.status, 0, r.stderr + r.stdout);
  const prefix = path.join(dest, 'usr/local');
  const include = path.join(prefix, 'include');
  assert.ok(fs.existsSync(path.join(include, 'abx/abx.h')) && fs.existsSync(path.join(include, 'abx/abx_errors.def')));
  for (const [cc, lang, std] of [['gcc', 'c', '-std=c17'], ['g++', 'c++', '-std=c++17']]) {
    if (!run('sh', ['-c', `command -v ${cc}`]).stdout) continue; // g++ comes with the build packages on Debian
    r = run(cc, [std, '-Wall', '-Wextra', '-Werror', '-pedantic', '-fsyntax-only', '-x', lang, `-I${include}`, '-'], { input: '#include <abx/abx.h>\nint main(void) { return abx_err_http_status(ABX_ENOTFOUND) == 404 ? 0 : 1; }\n' });
    assert.equal(r.status, 0, `${lang}: ${r.stderr}`);
  }
  const pcdir = fs.readdirSync(path.join(prefix, 'lib'), { recursive: true }).find((p) => p.endsWith('pkgconfig/abx.pc'));
  assert.ok(pcdir, 'no abx.pc installed');
  const pc = path.join(prefix, 'lib', pcdir);
  r = run('pkg-config', [`--define-variable=prefix=${prefix}`, '--cflags', '--libs', pc]);
  assert.equal(r.status, 0, r.stderr);
  const flags = r.stdout.trim().split(/\s+/);
  assert.ok(flags.includes('-labx'), r.stdout);
  const program = path.join(work, 'hello.c');
  fs.writeFileSync(program, `#include <abx/abx.h>
#include <stdio.h>
int main(void)
{
    abx_client *c = NULL;
    abx_sandbox *s = NULL;
    abx_error *err = NULL;
    abx_exec_options o = {.keep_output = true};
    abx_exec_result r;
    if (abx_client_new(NULL, &c, &err) < 0 || abx_sandbox_create(c, NULL, &s, &err) < 0 ||
        abx_sandbox_exec(s, "echo hello from a sandbox; exit 7", &o, &r, &err) < 0) {
        fprintf(stderr, "%s: %s\\n", abx_err_name(abx_error_code(err)), abx_error_message(err));
        return 1;
    }
    printf("%s exit %d\\n", r.stdout_data, r.exit_code);
    abx_exec_result_clear(&r);
    int killed = abx_sandbox_kill(s, NULL);
    abx_sandbox_free(s);
    abx_client_free(c);
    return killed == 0 ? 0 : 2;
}
`);
  // an ASan build's library wants its program built with the sanitizers too
  const opts = JSON.parse(fs.readFileSync(path.join(build, 'meson-info/intro-buildoptions.json'), 'utf8'));
  const sanitize = opts.find((o) => o.name === 'b_sanitize')?.value;
  const san = sanitize && sanitize !== 'none' ? [`-fsanitize=${sanitize}`] : [];
  const exe = path.join(work, 'hello');
  r = run('gcc', ['-std=c17', '-Wall', '-Werror', ...san, '-o', exe, program, ...flags]);
  assert.equal(r.status, 0, r.stderr);
  const libdir = flags.find((f) => f.startsWith('-L')).slice(2);
  const shim = path.join(prefix, 'libexec/abx/abx-shim');
  assert.ok(fs.existsSync(shim), 'abx-shim is installed beside the library');
  r = run(exe, [], { env: { ...H.env, LD_LIBRARY_PATH: libdir, ABX_SHIM: shim }, timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'hello from a sandbox\n exit 7\n');
  assert.deepEqual(fs.readdirSync(path.join(H.home, 'sandboxes')), [], 'the killed sandbox left state');
});

test('two tenants on one client library: the other tenant\'s sandbox answers as an unknown id to every call, and is not touched', () => {
  const check = path.join(path.dirname(abx), 'tests/abx-tenant-check');
  const r = run(check, [], { env: { ...H.env, ABX_SHIM: path.join(path.dirname(abx), 'abx-shim') }, timeout: 120000 });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.ok(!/^FAIL/m.test(r.stdout), r.stdout);
  assert.ok(r.stdout.split('\n').filter((l) => l.startsWith('ok ')).length >= 18, r.stdout);
});
