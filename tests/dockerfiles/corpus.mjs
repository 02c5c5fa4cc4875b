// corpus.mjs: the Dockerfile corpus, built twice and compared, Docker as
// the oracle. Each directory beside this file holding a Dockerfile is one
// case (its context is the directory). The run:
//
//   1. mirrors (mirror.mjs): a Python package index and an npm registry of
//      packages made there (wheels and tarballs), on 127.0.0.1; a case names them
//      through the build arguments PIP_INDEX_URL and NPM_REGISTRY;
//   2. the base: `abx template build` of `FROM debian:bookworm-slim`, its
//      tree imported into a dockerd of the run's own (data root, socket)
//      with `docker import` and its config; every case starts
//      `ARG BASE=debian:bookworm-slim` / `FROM ${BASE}`, and Docker is told
//      BASE=that image: the two builds start from the same files;
//   3. each case: `abx template build` and `docker build` (both with the
//      host's network, where the mirrors are); then the config (env, user,
//      working directory, command, entrypoint) and every file of the two
//      results (path, type, mode, owner, bytes or link target) compared.
//
// What may differ, and why, is in KNOWN below: files each engine makes for
// a container (/etc/hosts, /.dockerenv...), logs and caches that hold the
// time, and the setuid bits abx drops from every template. Anything else
// is a difference the case reports.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = path.dirname(fileURLToPath(import.meta.url));
const manifestPy = path.join(here, 'manifest.py');

/** Every case's name (its directory), sorted; ci: only those CI runs (the file CI lists them). */
export function cases({ ci = false } = {}) {
  const all = fs.readdirSync(here).filter((d) => fs.existsSync(path.join(here, d, 'Dockerfile'))).sort();
  if (!ci) return all;
  const listed = fs.readFileSync(path.join(here, 'CI'), 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
  for (const c of listed) if (!all.includes(c)) throw new Error(`tests/dockerfiles/CI names ${c}, which is not a case`);
  return listed;
}

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30, timeout: 1800000, ...opts });
  if (r.error) throw r.error;
  return r;
}

function must(cmd, args, opts = {}) {
  const r = run(cmd, args, opts);
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${(r.stderr || '').slice(-4000)}`);
  return r.stdout;
}

// ---- the mirrors ----------------------------------------------------------

/** Starts the mirrors (mirror.mjs, a process of their own: the builds here
 * block this one's event loop); returns {pipIndex, npmRegistry, stop}. */
export async function startMirrors(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const child = spawn(process.execPath, [path.join(here, 'mirror.mjs'), dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]);
    });
    child.on('exit', (code) => reject(new Error(`mirror.mjs exited ${code}`)));
  });
  const info = JSON.parse(line);
  return {
    ...info,
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.on('exit', resolve);
      child.kill('SIGTERM');
    }),
  };
}

// ---- the engines ----------------------------------------------------------

/** dockerd on state of its own (overlay2 where it works, else vfs); {docker, stop}. */
export async function startDocker(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const sock = path.join(dir, 'docker.sock');
  const cli = (args, opts = {}) => run('/usr/bin/docker', ['-H', `unix://${sock}`, ...args], opts);
  for (const driver of ['overlay2', 'vfs']) {
    fs.writeFileSync(path.join(dir, 'daemon.json'), '{}');
    const log = fs.openSync(path.join(dir, `dockerd-${driver}.log`), 'a');
    const child = spawn('dockerd', ['--data-root', path.join(dir, 'data'), '--exec-root', path.join(dir, 'exec'),
      '--pidfile', path.join(dir, 'docker.pid'), '-H', `unix://${sock}`, '--bridge', 'none', '--iptables=false',
      '--ip6tables=false', '--storage-driver', driver, '--config-file', path.join(dir, 'daemon.json')],
    { stdio: ['ignore', log, log], detached: true });
    fs.closeSync(log);
    let up = false;
    for (let i = 0; i < 300 && child.exitCode === null && !up; i++) {
      await new Promise((r) => setTimeout(r, 100));
      up = fs.existsSync(sock) && cli(['version']).status === 0;
    }
    const stop = async () => {
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
      for (let i = 0; i < 150 && child.exitCode === null && child.signalCode === null; i++) await new Promise((r) => setTimeout(r, 100));
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    };
    if (up) return { docker: cli, stop, driver };
    await stop();
  }
  throw new Error(`dockerd did not start: ${fs.readFileSync(path.join(dir, 'dockerd-vfs.log'), 'utf8').slice(-2000)}`);
}

/** The base both builds start from: built by abx, imported into docker. Returns Docker's name for it. */
export function prepareBase({ abx, env, docker, work }) {
  const ctx = fs.mkdtempSync(path.join(work, 'base-'));
  fs.writeFileSync(path.join(ctx, 'Dockerfile'), 'FROM debian:bookworm-slim\n');
  must(abx, ['template', 'build', 'corpus-base', ctx], { env });
  const info = JSON.parse(must(abx, ['template', 'inspect', 'corpus-base', '--json'], { env }));
  const changes = Object.entries(info.config.env ?? {}).flatMap(([k, v]) => ['--change', `ENV ${k}=${v}`]);
  const rootfs = path.join(env.ABX_HOME, 'templates', 'corpus-base', 'rootfs');
  const r = run('sh', ['-c', 'root=$1 host=$2; shift 2; tar -C "$root" --numeric-owner -cf - . | /usr/bin/docker -H "$host" import "$@" - abx-corpus/debian:bookworm-slim',
    'sh', rootfs, docker.host, ...changes]);
  if (r.status !== 0) throw new Error(`docker import: ${r.stderr}`);
  return 'abx-corpus/debian:bookworm-slim';
}

// ---- one case -------------------------------------------------------------

// Paths each engine makes for a container of its own, or that hold the
// time of the build: what both builders may differ in by nature.
export const KNOWN = [
  [/^\.dockerenv$/, 'Docker marks its containers with /.dockerenv'],
  [/^etc\/(hosts|hostname|resolv\.conf|mtab)$/, 'each engine mounts its own /etc/hosts, hostname, resolv.conf (Docker exports them empty)'],
  [/^(dev|proc|sys)(\/|$)/, 'mount points: each engine mounts its own /dev, /proc and /sys'],
  [/^var\/log\//, 'logs hold the time of the build (apt, dpkg)'],
  [/^var\/cache\/ldconfig\/aux-cache$/, 'ldconfig\'s cache holds files\' times'],
  [/^var\/cache\/debconf\/[\w.-]+-old$/, 'debconf\'s backups hold the time of the build'],
  [/\/__pycache__\/[^/]+\.pyc$/, 'compiled Python holds its source\'s time'],
  [/^root\/\.npm\/_(logs|cacache|update-notifier)/, 'npm\'s cache and logs hold the time of the build'],
];

const known = (p) => KNOWN.find(([re]) => re.test(p));

function manifestOf(kind, source, opts = {}) {
  const r = run('python3', [manifestPy, kind, source], opts);
  if (r.status !== 0) throw new Error(`manifest.py ${kind}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// The uid a Docker User names (NAME, UID, NAME:GROUP), read from the tree's passwd.
function uidOf(user, passwd) {
  const name = (user || '0').split(':')[0];
  if (/^\d+$/.test(name)) return Number(name);
  const line = passwd.split('\n').find((l) => l.split(':')[0] === name);
  return line ? Number(line.split(':')[2]) : `unknown user ${name}`;
}

/** Builds one case both ways and compares; returns {name, differences, known, abxMs, dockerMs}. */
export function buildCase(name, { abx, env, docker, dockerBase, mirrors, work }) {
  const src = path.join(here, name);
  const ctx = path.join(work, `ctx-${name}`);
  fs.rmSync(ctx, { recursive: true, force: true });
  fs.cpSync(src, ctx, { recursive: true });
  const args = { PIP_INDEX_URL: mirrors.pipIndex, NPM_REGISTRY: mirrors.npmRegistry };
  const buildArgs = Object.entries(args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
  const tag = `abx-corpus/${name}`;
  let t = Date.now();
  const d = docker.cli(['build', '-q', '--network', 'host', '--build-arg', `BASE=${dockerBase}`, ...buildArgs, '-t', tag, ctx]);
  const dockerMs = Date.now() - t;
  if (d.status !== 0) throw new Error(`docker build ${name}:\n${d.stderr.slice(-4000)}`);
  t = Date.now();
  const a = run(abx, ['template', 'build', `corpus-${name}`, ctx, '--network', 'host', ...buildArgs], { env });
  const abxMs = Date.now() - t;
  if (a.status !== 0) throw new Error(`abx template build ${name}:\n${a.stderr.slice(-4000)}`);
  const abxConfig = JSON.parse(must(abx, ['template', 'inspect', `corpus-${name}`, '--json'], { env })).config;
  const dockerConfig = JSON.parse(must('/usr/bin/docker', ['-H', docker.host, 'inspect', tag]))[0].Config;
  const rootfs = path.join(env.ABX_HOME, 'templates', `corpus-${name}`, 'rootfs');
  const mine = manifestOf('dir', rootfs);
  // a command for create, which runs nothing: an image without CMD has none
  const container = must('/usr/bin/docker', ['-H', docker.host, 'create', tag, 'sh']).trim();
  let theirs;
  try {
    theirs = JSON.parse(must('sh', ['-c', '/usr/bin/docker -H "$1" export "$2" | python3 "$3" tar -', 'sh', docker.host, container, manifestPy]));
  } finally {
    docker.cli(['rm', '-f', container]);
  }
  const differences = [];
  const knownSeen = new Set();
  const passwd = fs.existsSync(path.join(rootfs, 'etc/passwd')) ? fs.readFileSync(path.join(rootfs, 'etc/passwd'), 'utf8') : '';
  const dockerEnv = Object.fromEntries((dockerConfig.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  const same = (what, x, y) => {
    if (JSON.stringify(x) !== JSON.stringify(y)) differences.push(`${what}: abx ${JSON.stringify(x)}, docker ${JSON.stringify(y)}`);
  };
  same('env', sortKeys(abxConfig.env ?? {}), sortKeys(dockerEnv));
  same('user (uid)', abxConfig.uid ?? 0, uidOf(dockerConfig.User, passwd));
  same('working directory', abxConfig.workdir ?? '/', dockerConfig.WorkingDir || '/');
  same('cmd', abxConfig.cmd ?? null, dockerConfig.Cmd ?? null);
  same('entrypoint', abxConfig.entrypoint ?? null, dockerConfig.Entrypoint ?? null);
  for (const p of [...new Set([...Object.keys(mine), ...Object.keys(theirs)])].sort()) {
    const x = mine[p], y = theirs[p];
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    const k = known(p);
    // abx drops setuid and setgid bits from every template: the same file otherwise
    const suid = x && y && x[0] === y[0] && (y[1] & 0o6000) && (x[1] === (y[1] & ~0o6000)) && JSON.stringify(x.slice(2)) === JSON.stringify(y.slice(2));
    if (k || suid) {
      knownSeen.add(k ? k[1] : 'abx drops setuid and setgid bits from a template\'s files');
      continue;
    }
    differences.push(`${p}: abx ${describe(x)}, docker ${describe(y)}`);
  }
  return { name, differences, known: [...knownSeen], abxMs, dockerMs, files: Object.keys(mine).length };
}

function sortKeys(o) {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function describe(e) {
  if (!e) return 'absent';
  const [kind, mode, uid, gid, what] = e;
  const kinds = { f: 'file', d: 'directory', l: 'link', c: 'char device', b: 'block device', p: 'fifo', s: 'socket' };
  return `${kinds[kind] ?? kind} ${mode.toString(8).padStart(4, '0')} ${uid}:${gid}${what ? ` ${kind === 'l' ? '-> ' : ''}${what.slice(0, 16)}` : ''}`;
}

/** A whole run: mirrors, engines, base, then each case in order; calls onCase(result|{name, error}). */
export async function runCorpus(names, { abx, env, work, onCase = () => {} }) {
  const mirrors = await startMirrors(path.join(work, 'mirrors'));
  const engine = await startDocker(path.join(work, 'docker'));
  const docker = { cli: engine.docker, host: `unix://${path.join(work, 'docker', 'docker.sock')}` };
  const results = [];
  try {
    const dockerBase = prepareBase({ abx, env, docker, work });
    for (const name of names) {
      let r;
      try {
        r = buildCase(name, { abx, env, docker, dockerBase, mirrors, work });
      } catch (e) {
        r = { name, error: e.message };
      }
      results.push(r);
      onCase(r);
    }
  } finally {
    await engine.stop();
    await mirrors.stop();
  }
  return results;
}
