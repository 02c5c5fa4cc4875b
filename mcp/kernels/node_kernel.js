// node_kernel.js: abx's stateful JavaScript kernel (runs inside a sandbox).
// Same protocol as python_kernel.py: a JSON request per stdin line, a reply
// per request on stdout as MARKER + JSON. Top-level declarations persist
// across cells in one vm context; the value of a final expression is
// returned; a cell that runs past its timeout is stopped by vm's own
// timeout and the kernel survives.
'use strict';
const vm = require('vm');
const fs = require('fs');
const path = require('path');
const util = require('util');
const readline = require('readline');

const MARKER = '\x1e\x1fabx-result:';
const HEAD = 128 * 1024, TAIL = 128 * 1024; // bytes of each stream sent back (lib/bounds.h)
const RESULT_MAX = 1024 * 1024, FILES_MAX = 1000;
const protoWrite = process.stdout.write.bind(process.stdout);
let out = [], err = [];
const sink = (buf) => (...args) => { buf.push(util.format(...args) + '\n'); };
const cellConsole = { log: sink(out), info: sink(out), debug: sink(out), error: sink(err), warn: sink(err) };
const sandbox = { require, process, Buffer, setTimeout, setInterval, clearTimeout, clearInterval,
  setImmediate, queueMicrotask, URL, TextEncoder, TextDecoder, fetch: globalThis.fetch };
sandbox.console = new Proxy(cellConsole, { get: (t, k) => t[k] || (() => {}) });
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);

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
function capped(chunks) {
  const buf = Buffer.from(chunks.join(''));
  const head = buf.subarray(0, HEAD);
  const tail = buf.length > HEAD ? buf.subarray(Math.max(HEAD, buf.length - TAIL)) : Buffer.alloc(0);
  return [Buffer.concat([head, tail]).toString('base64'), buf.length, head.length];
}

// A stream longer than the caller's save_after bytes is kept whole in a file
// in the sandbox (the newest SAVE_KEEP of them); returns its path or null.
const SAVE_DIR = '/tmp/.abx-output', SAVE_KEEP = 32, savedFiles = [];
function saveWhole(chunks, req, stream) {
  const limit = req.save_after || 0;
  const buf = Buffer.from(chunks.join(''));
  if (!limit || buf.length <= limit) return null;
  const file = `${SAVE_DIR}/javascript-${process.pid}-${req.id}.${stream}`;
  try { fs.mkdirSync(SAVE_DIR, { recursive: true }); fs.writeFileSync(file, buf); } catch { return null; }
  savedFiles.push(file);
  while (savedFiles.length > SAVE_KEEP) { try { fs.unlinkSync(savedFiles.shift()); } catch { /* gone */ } }
  return file;
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let req;
  try { req = JSON.parse(line); } catch { return; }
  const cwd = req.cwd || process.cwd();
  try { process.chdir(cwd); } catch { /* keep */ }
  const env = req.env || {};
  const savedEnv = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const before = snapshot(cwd);
  out.length = 0; err.length = 0;
  const realOut = process.stdout.write, realErr = process.stderr.write;
  process.stdout.write = (c) => { out.push(String(c)); return true; };
  process.stderr.write = (c) => { err.push(String(c)); return true; };
  let result = null, code = 0;
  try {
    const value = vm.runInContext(req.code || '', context, {
      filename: 'cell.js', timeout: Math.max(1, (req.timeout || 30) * 1000), displayErrors: false });
    if (value !== undefined) { result = util.inspect(value); if (result.length > RESULT_MAX) result = result.slice(0, RESULT_MAX) + '...'; }
  } catch (e) {
    code = 1;
    err.push((e && e.stack ? e.stack : String(e)) + '\n');
  }
  process.stdout.write = realOut; process.stderr.write = realErr;
  for (const [k, v] of Object.entries(savedEnv)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
  const after = snapshot(cwd);
  const files = [...after.keys()].sort().filter((p) => before.get(p) !== after.get(p))
    .slice(0, FILES_MAX).map((p) => ({ name: path.basename(p), path: p, size: Number(after.get(p).split(':')[1]) }));
  const [o, oTotal, oCut] = capped(out), [e, eTotal, eCut] = capped(err);
  const stdoutPath = saveWhole(out, req, 'stdout'), stderrPath = saveWhole(err, req, 'stderr');
  protoWrite(MARKER + JSON.stringify({ id: req.id, stdout: o, stdout_bytes: oTotal, stdout_cut: oCut, stderr: e,
    stderr_bytes: eTotal, stderr_cut: eCut, exit_code: code, result, files, stdout_path: stdoutPath,
    stderr_path: stderrPath }) + '\n');
});
process.on('SIGINT', () => { /* vm's timeout stops cells; a stray SIGINT must not kill the kernel */ });
