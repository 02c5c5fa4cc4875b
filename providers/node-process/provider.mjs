#!/usr/bin/env node
// provider.mjs: the Node reference plugin for abx (EPP, kind exec), written
// from the wire contract alone (EPP version 1). No dependencies: Node's
// standard library only.
//
// NO ISOLATION: a "sandbox" is a directory on the host and its commands are
// ordinary host processes of the user who runs abx. It shows every EPP
// capability but sandbox.pause end to end; never run untrusted code here.
//
// Capabilities: sandbox.lifecycle (create, connect, get, list, kill),
// sandbox.timeout, exec.run, exec.stream (exec.start, then exec.output
// notifications and exactly one exec.exit), process.manage (list, kill,
// signal, stdin), files.rw, ports.url.
//
// State: sandboxes are JSON records and directories under
// $ABX_PROVIDER_DATA_DIR (abx may start a new process of this plugin for
// each command, so nothing of a sandbox lives only in memory). Commands
// started with exec.start are children of this process and end with it.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const DATA = process.env.ABX_PROVIDER_DATA_DIR || path.join(process.cwd(), '.data');
const FEATURES = ['sandbox.lifecycle', 'sandbox.timeout', 'exec.run', 'exec.stream', 'process.manage', 'files.rw', 'ports.url'];
const CHUNK = 4 << 20; // abx moves files in chunks of at most 4 MiB
let config = {};
const tasks = new Map(); // pid -> { child, execId, sandboxId, cmd }

class RpcError extends Error {
  constructor(code, message, abxCode) {
    super(message);
    this.code = code;
    this.abxCode = abxCode;
  }
}
const notFound = (what = 'no such sandbox') => new RpcError(-32000, what, 'E8002');

// ---- the wire: one JSON-RPC message per line ------------------------------

function send(msg) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
}
const notify = (method, params) => send({ method, params });

// ---- sandboxes --------------------------------------------------------------

const root = () => config.workdir_root || path.join(DATA, 'sandboxes');
const stamp = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function recordPath(id) {
  if (typeof id !== 'string' || !/^[a-z0-9-]{1,64}$/.test(id)) throw notFound();
  return path.join(root(), `${id}.json`);
}

function load(id) {
  let rec;
  try {
    rec = JSON.parse(fs.readFileSync(recordPath(id), 'utf8'));
  } catch {
    throw notFound();
  }
  if (Date.parse(rec.expires_at) < Date.now()) {
    remove(id);
    throw notFound();
  }
  return rec;
}

function save(rec) {
  fs.mkdirSync(root(), { recursive: true, mode: 0o700 });
  const tmp = `${recordPath(rec.sandbox_id)}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(rec));
  fs.renameSync(tmp, recordPath(rec.sandbox_id));
}

function remove(id) {
  for (const [pid, t] of tasks) if (t.sandboxId === id) killGroup(pid, 'SIGKILL');
  fs.rmSync(path.join(root(), id), { recursive: true, force: true });
  try {
    fs.unlinkSync(recordPath(id));
    return true;
  } catch {
    return false;
  }
}

const publicRecord = (r) => ({ sandbox_id: r.sandbox_id, template: r.template, status: 'running', metadata: r.metadata,
  created_at: r.created_at, expires_at: r.expires_at });

function create(p) {
  const id = `np${crypto.randomBytes(8).toString('hex')}`;
  for (const d of ['app', 'home/user', 'tmp']) fs.mkdirSync(path.join(root(), id, d), { recursive: true });
  const now = Date.now();
  const rec = { sandbox_id: id, template: p.template || 'base', metadata: p.metadata || {}, envs: p.envs || {},
    created_at: stamp(now), expires_at: stamp(now + 1000 * (p.timeout || 300)) };
  save(rec);
  return publicRecord(rec);
}

function list(p) {
  let names = [];
  try {
    names = fs.readdirSync(root()).filter((n) => n.endsWith('.json')).sort();
  } catch { /* no sandbox yet */ }
  const out = [];
  for (const n of names) {
    try {
      const r = publicRecord(load(n.slice(0, -5)));
      if (!p.metadata || Object.entries(p.metadata).every(([k, v]) => r.metadata[k] === v)) out.push(r);
    } catch { /* expired meanwhile */ }
  }
  return { sandboxes: out };
}

function setTimeoutOf(p) {
  const rec = load(p.sandbox_id);
  rec.expires_at = stamp(Date.now() + 1000 * Number(p.timeout));
  save(rec);
  return { expires_at: rec.expires_at };
}

// A sandbox path ("/app/x", or "x" relative to /home/user) as a host path
// under its directory; ".." may not leave it. Bookkeeping, not isolation.
function inside(rec, p) {
  const top = path.resolve(root(), rec.sandbox_id);
  const rel = p.startsWith('/') ? p : `/home/user/${p}`;
  const host = path.resolve(top, `.${path.posix.normalize(rel)}`);
  if (host !== top && !host.startsWith(top + path.sep)) throw new RpcError(-32602, 'path leaves the sandbox', 'E8017');
  return host;
}

// ---- commands -----------------------------------------------------------------

function commandSetup(p) {
  const rec = load(p.sandbox_id);
  const cwd = inside(rec, p.cwd || '/home/user');
  if (!fs.existsSync(cwd)) throw new RpcError(-32602, 'no such directory', 'E8023');
  const env = { ...process.env, HOME: inside(rec, '/home/user'), ...rec.envs, ...(p.envs || {}) };
  return { rec, cwd, env };
}

const SIGNALS = os.constants.signals; // name -> number
// exec.exit's fields for a command that ended with code or by signal
const exitOf = (code, signal) => (signal ? { exit_code: 128 + (SIGNALS[signal] || 9), signal } : { exit_code: code ?? -1 });

function execRun(p) {
  const { cwd, env } = commandSetup(p);
  const r = spawnSync('/bin/bash', ['-c', p.cmd], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'],
    timeout: p.timeout ? p.timeout * 1000 : undefined, maxBuffer: 8 << 20 });
  const timedOut = r.error && r.error.code === 'ETIMEDOUT';
  return { stdout: r.stdout.toString(), stderr: r.stderr.toString(), exit_code: timedOut ? 124 : exitOf(r.status, r.signal).exit_code };
}

// exec.start: answer {exec_id, pid} at once; the output follows as
// exec.output notifications and the end as exactly one exec.exit.
function execStart(p) {
  const { rec, cwd, env } = commandSetup(p);
  const child = spawn('/bin/bash', ['-c', p.cmd], { cwd, env, detached: true, stdio: [p.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  const execId = `x${crypto.randomBytes(6).toString('hex')}`;
  if (!child.pid) throw new RpcError(-32000, 'could not start the command');
  tasks.set(child.pid, { child, execId, sandboxId: rec.sandbox_id, cmd: p.cmd });
  if (child.stdin) child.stdin.on('error', () => {}); // a command that stops reading
  for (const stream of ['stdout', 'stderr'])
    child[stream].on('data', (b) => notify('exec.output', { exec_id: execId, stream, data_b64: b.toString('base64') }));
  let timedOut = false;
  const timer = p.timeout ? setTimeout(() => { timedOut = true; killGroup(child.pid, 'SIGKILL'); }, p.timeout * 1000) : null;
  child.on('close', (code, signal) => { // after both streams ended: no output after the exit
    clearTimeout(timer);
    tasks.delete(child.pid);
    notify('exec.exit', { exec_id: execId, ...(timedOut ? { exit_code: 124 } : exitOf(code, signal)) });
  });
  return { exec_id: execId, pid: child.pid };
}

function task(p) {
  const t = tasks.get(p.pid);
  if (!t || t.sandboxId !== p.sandbox_id) throw new RpcError(-32000, 'no such process', 'E8026');
  return t;
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch { /* gone already */ }
}

function processSignal(p, signal) {
  task(p);
  if (!Object.hasOwn(SIGNALS, signal)) throw new RpcError(-32602, 'unknown signal', 'E8001');
  killGroup(p.pid, signal);
  return {};
}

function processStdin(p) {
  const { child } = task(p);
  if (!child.stdin) throw new RpcError(-32000, 'stdin was not kept open', 'E8001');
  child.stdin.write(Buffer.from(p.data_b64 || '', 'base64'));
  if (p.eof) child.stdin.end();
  return {};
}

function processList(p) {
  load(p.sandbox_id);
  return { processes: [...tasks].filter(([, t]) => t.sandboxId === p.sandbox_id).map(([pid, t]) => ({ pid, cmd: t.cmd, exec_id: t.execId })) };
}

// ---- files ----------------------------------------------------------------------

function fsError(e) {
  if (e instanceof RpcError) return e;
  if (e.code === 'EISDIR') return new RpcError(-32000, 'is a directory', 'E8019');
  if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return new RpcError(-32000, 'no such file', 'E8023');
  return new RpcError(-32000, 'file operation failed', 'E8012');
}

function withFs(fn) {
  return (p) => {
    try {
      return fn(p, load(p.sandbox_id));
    } catch (e) {
      throw fsError(e);
    }
  };
}

function entry(host, p) {
  const st = fs.lstatSync(host);
  return { name: path.posix.basename(p) || '/', path: p, type: st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file',
    size: st.size, mode: st.mode & 0o7777, mtime: stamp(st.mtimeMs) };
}

const filesRead = withFs((p, rec) => {
  const host = inside(rec, p.path);
  const fd = fs.openSync(host, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const offset = p.offset || 0;
    const length = Math.min(p.length ?? CHUNK, CHUNK, Math.max(0, size - offset));
    const buf = Buffer.alloc(length);
    const got = fs.readSync(fd, buf, 0, length, offset);
    return { content_b64: buf.subarray(0, got).toString('base64'), size, eof: offset + got >= size };
  } finally {
    fs.closeSync(fd);
  }
});

const filesWrite = withFs((p, rec) => {
  const host = inside(rec, p.path);
  fs.mkdirSync(path.dirname(host), { recursive: true });
  const data = Buffer.from(p.content_b64 || '', 'base64');
  const fd = fs.openSync(host, p.truncate || !fs.existsSync(host) ? 'w' : 'r+');
  try {
    fs.writeSync(fd, data, 0, data.length, p.offset || 0);
  } finally {
    fs.closeSync(fd);
  }
  if (Number.isInteger(p.mode)) fs.chmodSync(host, p.mode);
  return { bytes_written: data.length };
});

const filesList = withFs((p, rec) => {
  const base = p.path.replace(/\/+$/, '') || '/';
  const out = [];
  const walk = (host, at, level) => {
    for (const name of fs.readdirSync(host).sort()) {
      const child = `${at === '/' ? '' : at}/${name}`;
      const e = entry(path.join(host, name), child);
      out.push(e);
      if (e.type === 'dir' && level < (p.depth || 1)) walk(path.join(host, name), child, level + 1);
    }
  };
  walk(inside(rec, base), base, 1);
  return { entries: out };
});

const METHODS = {
  initialize: (p) => {
    config = p.config || {};
    return { protocol_version: '1', name: 'node-process', version: '0.1.0', features: FEATURES };
  },
  shutdown: () => ({}),
  'sandbox.create': create,
  'sandbox.connect': (p) => {
    const rec = load(p.sandbox_id);
    if (p.timeout) setTimeoutOf(p);
    return publicRecord(p.timeout ? load(p.sandbox_id) : rec);
  },
  'sandbox.get': (p) => publicRecord(load(p.sandbox_id)),
  'sandbox.list': list,
  'sandbox.kill': (p) => ({ killed: typeof p.sandbox_id === 'string' && /^[a-z0-9-]{1,64}$/.test(p.sandbox_id) ? remove(p.sandbox_id) : false }),
  'sandbox.set_timeout': setTimeoutOf,
  'exec.run': execRun,
  'exec.start': execStart,
  'process.list': processList,
  'process.kill': (p) => processSignal(p, 'SIGKILL'),
  'process.signal': (p) => processSignal(p, p.signal || 'SIGTERM'),
  'process.stdin': processStdin,
  'files.read': filesRead,
  'files.write': filesWrite,
  'files.list': filesList,
  'files.stat': withFs((p, rec) => entry(inside(rec, p.path), p.path)),
  'files.mkdir': withFs((p, rec) => {
    fs.mkdirSync(inside(rec, p.path), { recursive: !!p.parents });
    return {};
  }),
  'files.remove': withFs((p, rec) => {
    const host = inside(rec, p.path);
    fs.lstatSync(host); // ENOENT: E8023
    fs.rmSync(host, { recursive: !!p.recursive });
    return {};
  }),
  'files.move': withFs((p, rec) => {
    const to = inside(rec, p.to);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.renameSync(inside(rec, p.from), to);
    return {};
  }),
  'ports.url': (p) => {
    load(p.sandbox_id);
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) throw new RpcError(-32602, 'bad port', 'E8001');
    return { url: `http://${config.port_host || '127.0.0.1'}:${p.port}` }; // host processes: the host's own port
  },
};

// ---- the loop -------------------------------------------------------------------

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return; // not for us: nothing to answer
  }
  const { id, method, params } = msg;
  let reply;
  try {
    const fn = Object.hasOwn(METHODS, method) ? METHODS[method] : null;
    if (!fn) throw new RpcError(-32601, 'method not found');
    reply = { id, result: fn(params || {}) };
  } catch (e) {
    if (!(e instanceof RpcError)) process.stderr.write(`node-process: ${e.stack}\n`); // abx logs stderr
    const error = { code: e.code && Number.isInteger(e.code) ? e.code : -32603, message: e.message };
    if (e.abxCode) error.data = { abx_code: e.abxCode };
    reply = { id, error };
  }
  if (id !== undefined && id !== null) send(reply);
  if (method === 'shutdown') rl.close();
});
rl.on('close', () => {
  for (const pid of tasks.keys()) killGroup(pid, 'SIGKILL'); // its commands end with it
  process.exit(0);
});
