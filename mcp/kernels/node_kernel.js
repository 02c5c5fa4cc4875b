// node_kernel.js: abx's stateful JavaScript kernel (runs inside a sandbox,
// started by the shim: runtime/shim_code.c, with --expose-internals so that
// it can use the acorn parser Node itself ships).
//
// Same protocol as python_kernel.py: a JSON request per stdin line, a reply
// per request on stdout as MARKER + JSON ({id, stdout, stdout_bytes,
// stdout_cut, stderr, ..., exit_code, result, results, error, files,
// stdout_path, stderr_path}).
//
// A cell behaves as in Node's REPL, and more: top-level declarations
// persist across cells and may be declared again (const and let become
// context variables), top-level await works, import() loads modules
// (relative to the cell's directory, as require does), the value of a final
// expression is returned, and stack traces show the cell's frames only.
// Output that timers or promises print after a cell has returned comes with
// the next reply. A cell that runs past its timeout is stopped by vm's own
// timeout (synchronous code) or by SIGINT (the shim's), and the kernel
// survives.
'use strict';
const vm = require('vm');
const fs = require('fs');
const path = require('path');
const util = require('util');
const readline = require('readline');
const { createRequire } = require('module');

// the loader option import() needs is marked experimental: say nothing of it
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = (w, ...rest) => { if (!/USE_MAIN_CONTEXT_DEFAULT_LOADER/.test(String(w && w.message ? w.message : w))) emitWarning(w, ...rest); };

let acorn = null;
try { acorn = require('internal/deps/acorn/acorn/dist/acorn'); } catch { /* no parser: cells run as written */ }

const MARKER = '\x1e\x1fabx-result:';
const HEAD = 128 * 1024, TAIL = 128 * 1024; // bytes of each stream sent back (base/bounds.h)
const PENDING_MAX = 8 * 1024 * 1024;        // output kept between replies; the rest is counted
const RESULT_MAX = 1024 * 1024, FILES_MAX = 1000;
const protoWrite = process.stdout.write.bind(process.stdout);

// ---- output: everything a cell (or a timer after it) writes -------------
class Stream {
  constructor() { this.chunks = []; this.kept = 0; this.total = 0; }
  push(text) {
    const b = Buffer.from(String(text));
    this.total += b.length;
    if (this.kept + b.length > PENDING_MAX) return; // counted, not kept
    this.chunks.push(b); this.kept += b.length;
  }
  take() { const b = Buffer.concat(this.chunks); const total = this.total; this.chunks = []; this.kept = 0; this.total = 0; return [b, total]; }
}
const out = new Stream(), err = new Stream();
process.stdout.write = (c, enc, cb) => { out.push(c); if (typeof enc === 'function') enc(); else if (cb) cb(); return true; };
process.stderr.write = (c, enc, cb) => { err.push(c); if (typeof enc === 'function') enc(); else if (cb) cb(); return true; };
const sink = (s) => (...args) => { s.push(util.format(...args) + '\n'); };
const cellConsole = { log: sink(out), info: sink(out), debug: sink(out), error: sink(err), warn: sink(err),
  trace: (...a) => err.push(`Trace: ${util.format(...a)}\n`), dir: (o) => out.push(util.inspect(o) + '\n'),
  table: (o) => out.push(util.inspect(o) + '\n') };

let cwd = process.cwd();
const sandbox = { process, Buffer, setTimeout, setInterval, clearTimeout, clearInterval, setImmediate,
  clearImmediate, queueMicrotask, URL, URLSearchParams, TextEncoder, TextDecoder, AbortController, fetch: globalThis.fetch,
  structuredClone, atob, btoa, performance };
sandbox.console = new Proxy(cellConsole, { get: (t, k) => t[k] || (() => {}) });
sandbox.globalThis = sandbox;
sandbox.display = (...objs) => { for (const o of objs) results.push({ text: inspect(o), is_main_result: false }); };
const context = vm.createContext(sandbox);
let results = [];

function inspect(v) {
  const t = util.inspect(v);
  return t.length > RESULT_MAX ? t.slice(0, RESULT_MAX) + '...' : t;
}

// ---- rewriting a cell (acorn) -----------------------------------------------
function patternNames(p, names) {
  if (!p) return;
  if (p.type === 'Identifier') names.push(p.name);
  else if (p.type === 'ObjectPattern') p.properties.forEach((q) => patternNames(q.type === 'RestElement' ? q.argument : q.value, names));
  else if (p.type === 'ArrayPattern') p.elements.forEach((q) => patternNames(q, names));
  else if (p.type === 'RestElement') patternNames(p.argument, names);
  else if (p.type === 'AssignmentPattern') patternNames(p.left, names);
}

// Whether node holds an await (or for await) outside nested functions.
function hasTopLevelAwait(node) {
  if (!node || typeof node.type !== 'string') return false;
  if (node.type === 'AwaitExpression' || (node.type === 'ForOfStatement' && node.await)) return true;
  if (/Function/.test(node.type) || node.type === 'ClassBody') return false;
  for (const k of Object.keys(node)) {
    const v = node[k];
    if (Array.isArray(v)) { if (v.some(hasTopLevelAwait)) return true; } else if (v && typeof v.type === 'string' && hasTopLevelAwait(v)) return true;
  }
  return false;
}

// The cell as a script that keeps its declarations in the context and may
// declare them again; with top-level await, an async function whose value
// is the final expression's. Returns { source, async } (the code as written
// when it does not parse: vm then reports the error as Node would).
const PARSE = { ecmaVersion: 'latest', sourceType: 'script', allowAwaitOutsideFunction: true, allowHashBang: true };
const MAIN_LOADER = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;

// Where Node's vm cannot load modules for import() (before Node 20.12/21.7),
// import(...) becomes __abxImport(...), which loads them in the kernel's
// own context, relative to the cell's directory.
function rewriteImports(code, ast) {
  const starts = [];
  const walk = (n) => {
    if (!n || typeof n.type !== 'string') return;
    if (n.type === 'ImportExpression') starts.push(n.start);
    for (const k of Object.keys(n)) {
      const v = n[k];
      if (Array.isArray(v)) v.forEach(walk); else if (v && typeof v.type === 'string') walk(v);
    }
  };
  walk(ast);
  let out = code;
  for (const at of starts.sort((a, b) => b - a)) out = out.slice(0, at) + '__abxImport' + out.slice(at + 'import'.length);
  return out;
}
// A relative specifier is the cell directory's; a bare one (a package) is
// looked up from there too (its node_modules), as require would.
sandbox.__abxImport = (spec) => {
  const toUrl = (file) => require('url').pathToFileURL(file).href;
  if (/^\.\.?\//.test(spec)) return import(toUrl(path.resolve(cwd, spec)));
  if (!/^[a-z]+:/.test(spec) && !require('module').isBuiltin?.(spec)) {
    try { return import(toUrl(createRequire(path.join(cwd, '[cell]')).resolve(spec))); } catch { /* as written */ }
  }
  return import(spec);
};

// Static import declarations (a module's syntax, which a cell is not)
// become dynamic imports with the same bindings: import d, { a, b as c }
// from 'x' is const __abxM0 = await import('x'), d = __abxM0.default,
// { a, b: c } = __abxM0. The cell then has top-level await.
function staticImports(code) {
  let ast;
  try { ast = acorn.parse(code, { ...PARSE, sourceType: 'module' }); } catch { return null; }
  const imports = ast.body.filter((n) => n.type === 'ImportDeclaration');
  if (!imports.length) return null;
  let out = code;
  imports.sort((a, b) => b.start - a.start).forEach((n, i) => {
    const m = `__abxM${i}`;
    const parts = [`${m} = await import(${JSON.stringify(n.source.value)})`];
    const named = [];
    for (const sp of n.specifiers) {
      if (sp.type === 'ImportDefaultSpecifier') parts.push(`${sp.local.name} = ${m}.default`);
      else if (sp.type === 'ImportNamespaceSpecifier') parts.push(`${sp.local.name} = ${m}`);
      else {
        const imported = sp.imported.type === 'Identifier' ? sp.imported.name : JSON.stringify(sp.imported.value);
        named.push(imported === sp.local.name ? imported : `${imported}: ${sp.local.name}`);
      }
    }
    if (named.length) parts.push(`{ ${named.join(', ')} } = ${m}`);
    out = out.slice(0, n.start) + `const ${parts.join(', ')};` + out.slice(n.end);
  });
  return out;
}

function rewrite(code) {
  if (!acorn) return { source: code, async: false };
  let ast;
  try {
    try { ast = acorn.parse(code, PARSE); } catch (e) { const c = staticImports(code); if (!c) throw e; code = c; ast = acorn.parse(code, PARSE); }
    if (!MAIN_LOADER) {
      code = rewriteImports(code, ast);
      ast = acorn.parse(code, PARSE);
    }
  } catch { return { source: code, async: false }; }
  const isAsync = hasTopLevelAwait(ast);
  const edits = [], hoisted = [];
  const src = (n) => code.slice(n.start, n.end);
  for (const node of ast.body) {
    if (node.type === 'VariableDeclaration') {
      if (!isAsync) { if (node.kind !== 'var') edits.push([node.start, node.start + node.kind.length, 'var']); continue; }
      const parts = [];
      for (const d of node.declarations) {
        patternNames(d.id, hoisted);
        if (d.init) parts.push(`(${src(d.id)} = ${src(d.init)})`);
      }
      edits.push([node.start, node.end, parts.length ? `void (${parts.join(', ')});` : ';']);
    } else if (node.type === 'ClassDeclaration') {
      if (isAsync) { hoisted.push(node.id.name); edits.push([node.start, node.end, `${node.id.name} = ${src(node)};`]); } else edits.push([node.start, node.end, `var ${node.id.name} = ${src(node)};`]);
    } else if (node.type === 'FunctionDeclaration' && isAsync) {
      hoisted.push(node.id.name);
      edits.push([node.start, node.end, `${node.id.name} = ${src(node)};`]);
    }
  }
  const last = ast.body[ast.body.length - 1];
  if (isAsync && last && last.type === 'ExpressionStatement') edits.push([last.start, last.end, `return (${src(last.expression)});`]);
  let out = code;
  for (const [a, b, text] of edits.sort((x, y) => y[0] - x[0])) out = out.slice(0, a) + text + out.slice(b);
  if (!isAsync) return { source: out, async: false };
  const decl = hoisted.length ? `var ${[...new Set(hoisted)].join(', ')}; ` : '';
  return { source: `${decl}(async () => {\n${out}\n})()`, async: true };
}

// Stack traces without the kernel's (or Node's internal) frames.
function cleanStack(e) {
  if (!(e instanceof Error) && !(e && e.stack)) return `Uncaught ${inspect(e)}`;
  const lines = String(e.stack || e).split('\n');
  return lines.filter((l) => !/^\s+at /.test(l) || (!l.includes(__filename) && !l.includes('node:internal') && !l.includes('node:vm'))).join('\n');
}

// ---- files and saved output ------------------------------------------------
function snapshot(root) {
  const seen = new Map();
  const walk = (dir) => {
    let entries = [];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      if (seen.size >= 10000) return;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { if (!e.name.startsWith('.')) walk(p); continue; }
      try { const st = fs.statSync(p); seen.set(p, `${st.mtimeMs}:${st.size}`); } catch { /* gone */ }
    }
  };
  walk(root);
  return seen;
}

// The first HEAD and last TAIL bytes, the total, and where the cut is.
function capped(buf, total) {
  const head = buf.subarray(0, HEAD);
  const tail = buf.length > HEAD ? buf.subarray(Math.max(HEAD, buf.length - TAIL)) : Buffer.alloc(0);
  return [Buffer.concat([head, tail]).toString('base64'), total, head.length];
}

// A stream longer than the caller's save_after bytes is kept whole in a file
// in the sandbox (the newest SAVE_KEEP of them); returns its path or null.
const SAVE_DIR = '/tmp/.abx-output', SAVE_KEEP = 32, savedFiles = [];
function saveWhole(buf, total, req, stream) {
  const limit = req.save_after || 0;
  if (!limit || total <= limit) return null;
  const file = `${SAVE_DIR}/javascript-${process.pid}-${req.id}.${stream}`;
  try {
    fs.mkdirSync(SAVE_DIR, { recursive: true });
    // a new file only: never through a link another user planted at the name
    const c = fs.constants, fd = fs.openSync(file, c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
    try { fs.writeSync(fd, buf); } finally { fs.closeSync(fd); }
  } catch { return null; }
  savedFiles.push(file);
  while (savedFiles.length > SAVE_KEEP) { try { fs.unlinkSync(savedFiles.shift()); } catch { /* gone */ } }
  return file;
}

// ---- a cell ------------------------------------------------------------------
let interrupted = false;
process.on('SIGINT', () => { interrupted = true; }); // vm's timeout and the race below stop cells

// TypeScript cells (a typescript context): types erased by the typescript
// module (the cell's directory's, else a global one such as Debian's
// node-typescript), ES2022 kept as written; then run as JavaScript.
function transpiled(code, req) {
  let ts;
  for (const from of [path.join(cwd, '[cell]'), __filename]) {
    try { ts = createRequire(from)('typescript'); break; } catch { /* next */ }
  }
  if (!ts) {
    throw Object.assign(new Error('TypeScript cells need the typescript module in the sandbox (npm install -g typescript, or apt-get install node-typescript)'), { name: 'ModuleNotFoundError', bare: true });
  }
  return ts.transpileModule(code, { fileName: 'cell.ts', reportDiagnostics: false,
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, esModuleInterop: true, removeComments: false } }).outputText;
}

async function runCell(req) {
  cwd = req.cwd || process.cwd();
  try { process.chdir(cwd); } catch { /* keep */ }
  sandbox.require = createRequire(path.join(cwd, '[cell]'));
  const code = req.language === 'typescript' ? transpiled(req.code || '', req) : (req.code || '');
  const { source, async: isAsync } = rewrite(code);
  const opts = { filename: path.join(cwd, '[cell]'), timeout: Math.max(1, (req.timeout || 30) * 1000), displayErrors: false };
  if (MAIN_LOADER) opts.importModuleDynamically = MAIN_LOADER;
  let value = new vm.Script(source, opts).runInContext(context, opts);
  if (isAsync) {
    interrupted = false;
    let timer;
    const stop = new Promise((_, reject) => {
      const check = () => { if (interrupted) reject(Object.assign(new Error('the cell was interrupted (timeout or cancel)'), { name: 'KeyboardInterrupt', bare: true })); else timer = setTimeout(check, 50); };
      timer = setTimeout(check, 50);
    });
    try { value = await Promise.race([value, stop]); } finally { clearTimeout(timer); }
  }
  return value;
}

// How long timers a cell set keep their output in the cell's reply
// (docs/mcp-tools.md): the reply waits for them up to GRACE_MS.
const GRACE_MS = 500;
const timers = () => (process.getActiveResourcesInfo ? process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length : 0);
async function grace(before) {
  const deadline = Date.now() + GRACE_MS;
  while (timers() > before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

async function serveOne(req) {
  const env = req.env || {};
  const savedEnv = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const before = snapshot(req.cwd || process.cwd());
  results = [];
  let result = null, code = 0, error = null;
  const timersBefore = timers();
  try {
    const value = await runCell(req);
    if (value !== undefined) { result = inspect(value); results.push({ text: result, is_main_result: true }); }
  } catch (e) {
    code = e && e.name === 'KeyboardInterrupt' ? 130 : 1;
    error = { name: (e && e.name) || 'Error', value: e && e.message !== undefined ? String(e.message) : inspect(e), traceback: e && e.bare ? '' : cleanStack(e) };
  }
  await grace(timersBefore);
  for (const [k, v] of Object.entries(savedEnv)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
  const after = snapshot(cwd);
  const files = [...after.keys()].sort().filter((p) => before.get(p) !== after.get(p))
    .slice(0, FILES_MAX).map((p) => ({ name: path.basename(p), path: p, size: Number(after.get(p).split(':')[1]) }));
  const [ob, oTotal] = out.take(), [eb, eTotal] = err.take();
  const [o, , oCut] = capped(ob, oTotal), [e, , eCut] = capped(eb, eTotal);
  return { id: req.id, stdout: o, stdout_bytes: oTotal, stdout_cut: oCut, stderr: e, stderr_bytes: eTotal,
    stderr_cut: eCut, exit_code: code, result, results, error, files, stdout_path: saveWhole(ob, oTotal, req, 'stdout'),
    stderr_path: saveWhole(eb, eTotal, req, 'stderr') };
}

// An unhandled rejection or exception from a timer belongs to the output,
// not to the kernel's death.
process.on('uncaughtException', (e) => err.push(`Uncaught ${cleanStack(e)}\n`));
process.on('unhandledRejection', (e) => err.push(`Uncaught (in promise) ${cleanStack(e)}\n`));

// Requests run one at a time, in order.
let queue = Promise.resolve();
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let req;
  try { req = JSON.parse(line); } catch { return; }
  queue = queue.then(async () => protoWrite(MARKER + JSON.stringify(await serveOne(req)) + '\n'));
});
