// mcp-notebook.test.mjs: run_code on the default template as an agent
// writes code (issue 26), through the official SDK client: notebook habits
// (!cmd, %timeit, %%bash, %pip, top-level await), JavaScript import of a
// Node built-in, output a thread or timer prints after the cell's last
// statement, every language of the tool's enum answering (typescript runs,
// r says what is missing), and the package tools (pip, npm) present.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-notebook');
let c;
before(async () => {
  c = new Client({ name: 'abx-notebook', version: '1' });
  await c.connect(new StdioClientTransport({ command: abx, args: ['mcp', 'start'], env: H.env, stderr: 'pipe' }));
});
after(async () => { await c?.close(); H.cleanup(); });

// the first call may build code-interpreter-v1 (once per machine)
const run = async (code, language = 'python') => {
  const r = await c.callTool({ name: 'run_code', arguments: { code, language, timeout: 120 } }, undefined, { timeout: 900000 });
  return r;
};
const out = async (code, language) => {
  const r = await run(code, language);
  assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 800));
  return r.structuredContent;
};

test('python: !cmd with variables, x = !cmd, %timeit, %%bash, %pip, top-level await', { timeout: 900000 }, async () => {
  let r = await out('!echo hi\nname = "abx"\n!echo hello {name} and $name');
  assert.equal(r.stdout, 'hi\nhello abx and abx\n');
  assert.equal(r.exit_code, 0);
  r = await out('lines = !printf "a\\nb\\n"\nprint(lines, lines.n == "a\\nb")');
  assert.equal(r.stdout, "['a', 'b'] True\n");
  r = await out('%timeit sum(range(50))');
  assert.match(r.stdout, /^\S+ \S+ ± \S+ \S+ per loop \(mean ± std\. dev\. of 7 runs, \d+ loops? each\)\n$/);
  r = await out('%%bash\necho from bash\nls /nonexistent 2>/dev/null || echo "exit $?"');
  assert.equal(r.stdout, 'from bash\nexit 2\n');
  r = await out('%pip --version');
  assert.match(r.stdout, /^pip \d+/);
  r = await out('import asyncio\nasync def twice(x):\n    await asyncio.sleep(0.01)\n    return 2 * x\nawait twice(21)');
  assert.equal(r.result, '42');
  // Python as written is never rewritten: a line starting with % or ! inside a string stays
  r = await out('s = """\n%s\n!x\n"""\nprint(repr(s))');
  assert.equal(r.stdout, "'\\n%s\\n!x\\n'\n");
  // a magic abx does not run says which it does
  r = await out('%load_ext autoreload');
  assert.equal(r.exit_code, 1);
  assert.match(r.stderr, /UsageError: line magic %load_ext is not available here; abx runs %pip, %conda, %timeit/);
});

test('output printed right after the cell (a thread, a timer) comes with the cell', { timeout: 900000 }, async () => {
  let r = await out('import threading, time\ndef later():\n    time.sleep(0.2)\n    print("from the thread")\nthreading.Thread(target=later).start()\nprint("cell done")');
  assert.equal(r.stdout, 'cell done\nfrom the thread\n');
  r = await out("setTimeout(() => console.log('from the timer'), 200);\nconsole.log('cell done');", 'javascript');
  assert.equal(r.stdout, 'cell done\nfrom the timer\n');
});

test('javascript: static import of Node built-ins (default, named, namespace), kept for the next cell', { timeout: 900000 }, async () => {
  let r = await out("import fs from 'fs';\nimport { join as j } from 'node:path';\nimport * as os from 'os';\nconsole.log(typeof fs.readFileSync, j('a', 'b'), typeof os.cpus);", 'javascript');
  assert.equal(r.stdout, 'function a/b function\n');
  r = await out("j('x', 'y')", 'javascript');
  assert.equal(r.result, "'x/y'");
});

test('every language of the enum answers: shell and typescript run, r says what is missing, others are refused with the list', { timeout: 900000 }, async () => {
  let r = await out('echo $((6 * 7))', 'shell');
  assert.equal(r.stdout, '42\n');
  r = await out("import { basename } from 'node:path';\nconst n: number = 21;\nconst half = await Promise.resolve(n * 2);\nconsole.log(basename('/a/b.ts'), half);", 'typescript');
  assert.equal(r.stdout, 'b.ts 42\n');
  const rr = await run('print(1)', 'r');
  if (rr.isError) {
    assert.equal(rr.structuredContent.error.code, 'E8009');
    assert.match(rr.structuredContent.error.message, /language r needs R/);
    assert.match(rr.structuredContent.error.hint, /apt-get install -y r-base-core/);
  } else {
    assert.match(rr.structuredContent.stdout, /1/); // a template with R
  }
  const bad = await run('1', 'cobol');
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.error.field, 'language');
  assert.match(bad.structuredContent.error.message, /python, javascript, shell, typescript, r/);
});

test('the default template has pip and npm, usable by the user and as root', { timeout: 900000 }, async () => {
  const cmd = async (command, user) => (await c.callTool({ name: 'run_command', arguments: { command, ...(user ? { user } : {}) } })).structuredContent;
  let r = await cmd('npm --version && pip --version && tsc --version && echo "$PIP_BREAK_SYSTEM_PACKAGES"');
  assert.equal(r.exit_code, 0, r.stderr);
  assert.match(r.stdout, /^\d+\.\d+\.\d+\npip \d+.*\nVersion \d+.*\n1\n$/);
  r = await cmd('id -u && touch /usr/local/lib/abx-root-can-write && echo ok', 'root');
  assert.equal(r.stdout, '0\nok\n');
});

test('a file the code writes is a resource_link, read back with resources/read', { timeout: 900000 }, async () => {
  const r = await run('with open("report.csv", "w") as f:\n    f.write("a,b\\n1,2\\n")\nprint("written")');
  assert.notEqual(r.isError, true, JSON.stringify(r).slice(0, 800));
  const file = r.structuredContent.output_files.find((f) => f.name === 'report.csv');
  assert.ok(file, JSON.stringify(r.structuredContent.output_files));
  const link = r.content.find((b) => b.type === 'resource_link' && b.name === 'report.csv');
  assert.ok(link, JSON.stringify(r.content));
  assert.equal(decodeURIComponent(new URL(link.uri).pathname), file.path);
  assert.equal(link.size, 8);
  const read = await c.readResource({ uri: link.uri });
  assert.equal(read.contents[0].text, 'a,b\n1,2\n');
});
