// world.mjs: the network tests' own small world, every packet kept in it.
//
//   "host" namespace (abx runs here, through nsenter --net: `ip netns exec`
//   would remount /sys and hide the cgroups abx needs)
//        | 172.30.X.1/30  <-- a veth pair, the host's only route -->  172.30.X.2/30
//   "internet" namespace, holding on its loopback:
//        198.51.100.10  web "web-a"        203.0.113.10  web "web-b"
//        198.51.100.20  the package index  198.51.100.53 DNS for *.test names
//        10.99.0.10     a "LAN" host       169.254.169.254 a "metadata" service
//
// The machine's own address may sit in a documentation range (192.0.2.0/24
// here): the world uses 198.51.100.0/24, 203.0.113.0/24, 10.99/16 and
// 172.30/16, and nothing in it routes anywhere else. The namespaces are
// held by two `sleep` processes (no `ip netns add`: that would add mounts
// to the host's table, which other tests watch); w.host and w.inet are
// their /proc/PID/ns/net paths. teardown() ends the processes and the
// namespaces go, with their interfaces.
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onExit } from '../../lib/harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const WEB_A = '198.51.100.10', WEB_B = '203.0.113.10', PYPI = '198.51.100.20', DNS = '198.51.100.53';
export const LAN = '10.99.0.10', METADATA = '169.254.169.254';
export const NAMES = { 'allowed.test': WEB_A, 'denied.test': WEB_B, 'rebind.test': LAN, 'pypi.test': PYPI, 'apt.test': PYPI, 'b.wild.test': WEB_A, 'wild.test': WEB_A, 'glue.test': `${WEB_A},${LAN}` };

function sh(args, opts = {}) {
  const r = spawnSync(args[0], args.slice(1), { encoding: 'utf8', ...opts });
  if (r.status !== 0 && !opts.mayFail) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  return r;
}

export function canBuild() {
  if (process.getuid() !== 0) return 'needs root';
  for (const tool of ['ip', 'nsenter', 'nft', 'python3']) if (sh(['sh', '-c', `command -v ${tool}`], { mayFail: true }).status !== 0) return `needs ${tool}`;
  return null;
}

// A wheel of one module, `abxdemo`, made here (a zip: the module, METADATA, WHEEL, RECORD).
function makeIndex(dir) {
  const simple = path.join(dir, 'simple', 'abxdemo');
  fs.mkdirSync(simple, { recursive: true });
  const wheel = 'abxdemo-1.0-py3-none-any.whl';
  sh(['python3', '-c', `
import zipfile, sys
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.writestr('abxdemo.py', 'GREETING = "installed through the sandbox policy"\\n')
    z.writestr('abxdemo-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: abxdemo\\nVersion: 1.0\\n')
    z.writestr('abxdemo-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: abx-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
    z.writestr('abxdemo-1.0.dist-info/RECORD', '')
`, path.join(simple, wheel)]);
  fs.writeFileSync(path.join(simple, 'index.html'), `<html><body><a href="${wheel}">${wheel}</a></body></html>\n`);
  fs.writeFileSync(path.join(dir, 'simple', 'index.html'), '<html><body><a href="abxdemo/">abxdemo</a></body></html>\n');
}

// A Debian repository of one package, `abxdemo-tool` (a shell script in
// /usr/bin), under dir/debian: the .deb made with dpkg-deb, Packages and an
// unsigned Release with their hashes (a sources entry marks it trusted).
function makeAptRepo(dir) {
  const repo = path.join(dir, 'debian'), pkg = path.join(path.dirname(dir), 'apt-package');
  fs.mkdirSync(path.join(pkg, 'DEBIAN'), { recursive: true });
  fs.mkdirSync(path.join(pkg, 'usr', 'bin'), { recursive: true });
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(pkg, 'DEBIAN', 'control'), 'Package: abxdemo-tool\nVersion: 1.0\nArchitecture: all\nMaintainer: abx tests <tests@abx.invalid>\nDescription: a tool the abx tests install from a local mirror\n');
  fs.writeFileSync(path.join(pkg, 'usr', 'bin', 'abxdemo-tool'), '#!/bin/sh\necho "abxdemo-tool from the local mirror"\n', { mode: 0o755 });
  const deb = 'abxdemo-tool_1.0_all.deb';
  sh(['dpkg-deb', '--root-owner-group', '--build', pkg, path.join(repo, deb)]);
  const bytes = fs.readFileSync(path.join(repo, deb));
  const hash = (algo, b) => crypto.createHash(algo).update(b).digest('hex');
  const packages = `Package: abxdemo-tool\nVersion: 1.0\nArchitecture: all\nMaintainer: abx tests <tests@abx.invalid>\nFilename: ./${deb}\nSize: ${bytes.length}\nSHA256: ${hash('sha256', bytes)}\nDescription: a tool the abx tests install from a local mirror\n\n`;
  fs.writeFileSync(path.join(repo, 'Packages'), packages);
  fs.writeFileSync(path.join(repo, 'Release'), `Origin: abx-tests\nLabel: abx-tests\nSuite: local\nArchitectures: all\nDate: ${new Date().toUTCString()}\nSHA256:\n ${hash('sha256', packages)} ${Buffer.byteLength(packages)} Packages\n`);
}

function holder() {
  const p = spawn('unshare', ['--net', '--', 'sleep', '86400'], { stdio: 'ignore' });
  return p;
}

export async function buildWorld() {
  const tag = `${process.pid % 10000}`;
  const w = { up: `aw${tag}u`, down: `aw${tag}d`, children: [], dir: fs.mkdtempSync(path.join(os.tmpdir(), 'abx-world-')) };
  w.dropAtExit = onExit(() => teardown(w)); /* even when the file's after() does not run */
  const octet = 1 + (process.pid % 60) * 4;
  w.hostAddr = `172.30.${Math.floor(process.pid / 60) % 250}.${octet}`;
  w.inetAddr = w.hostAddr.replace(/\.\d+$/, `.${octet + 1}`);
  const hostHolder = holder(), inetHolder = holder();
  w.children.push(hostHolder, inetHolder);
  w.host = `/proc/${hostHolder.pid}/ns/net`;
  w.inet = `/proc/${inetHolder.pid}/ns/net`;
  // unshare has made its namespace once it runs sleep
  for (let i = 0; i < 100; i++) {
    const a = fs.readlinkSync(w.host), b = fs.readlinkSync(w.inet), self = fs.readlinkSync('/proc/self/ns/net');
    if (a !== self && b !== self) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  const H = (...a) => sh(['nsenter', `--net=${w.host}`, ...a]);
  const I = (...a) => sh(['nsenter', `--net=${w.inet}`, ...a]);
  sh(['ip', 'link', 'add', w.up, 'type', 'veth', 'peer', 'name', w.down]);
  sh(['ip', 'link', 'set', w.up, 'netns', String(hostHolder.pid)]);
  sh(['ip', 'link', 'set', w.down, 'netns', String(inetHolder.pid)]);
  H('ip', 'link', 'set', 'lo', 'up');
  I('ip', 'link', 'set', 'lo', 'up');
  H('ip', 'addr', 'add', `${w.hostAddr}/30`, 'dev', w.up);
  I('ip', 'addr', 'add', `${w.inetAddr}/30`, 'dev', w.down);
  H('ip', 'link', 'set', w.up, 'up');
  I('ip', 'link', 'set', w.down, 'up');
  H('ip', 'route', 'add', 'default', 'via', w.inetAddr);
  for (const a of [WEB_A, WEB_B, PYPI, DNS, LAN, METADATA]) I('ip', 'addr', 'add', `${a}/32`, 'dev', 'lo');
  for (const [name, addr] of [['web-a', WEB_A], ['web-b', WEB_B], ['lan', LAN], ['metadata', METADATA]]) {
    const d = path.join(w.dir, name);
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'index.html'), `${name}\n`);
    w.children.push(spawnIn(w.inet, ['python3', '-m', 'http.server', '--bind', addr, '80'], d));
  }
  // the host's own service, on its address in the world and on its loopback
  const own = path.join(w.dir, 'own');
  fs.mkdirSync(own);
  fs.writeFileSync(path.join(own, 'index.html'), 'the host itself\n');
  w.children.push(spawnIn(w.host, ['python3', '-m', 'http.server', '--bind', w.hostAddr, '8080'], own));
  w.children.push(spawnIn(w.host, ['python3', '-m', 'http.server', '--bind', '127.0.0.1', '8080'], own));
  const index = path.join(w.dir, 'pypi');
  makeIndex(index);
  makeAptRepo(index);
  w.children.push(spawnIn(w.inet, ['python3', '-m', 'http.server', '--bind', PYPI, '80'], index));
  w.dns = spawnIn(w.inet, ['python3', path.join(here, 'dns_server.py'), DNS, ...Object.entries(NAMES).map(([n, a]) => `${n}=${a}`)], w.dir);
  w.dnsLog = '';
  w.dns.stderr.on('data', (d) => { w.dnsLog += d; });
  w.children.push(w.dns);
  // every server answers before the tests start
  for (let i = 0; i < 100; i++) {
    const r = spawnSync('nsenter', [`--net=${w.host}`, 'sh', '-c', `curl -s -m 1 -o /dev/null http://${WEB_A}/ && curl -s -m 1 -o /dev/null http://${PYPI}/simple/ && curl -s -m 1 -o /dev/null http://${w.hostAddr}:8080/`]);
    if (r.status === 0) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return w;
}

function spawnIn(ns, argv, cwd) {
  return spawn('nsenter', [`--net=${ns}`, ...argv], { cwd, stdio: ['ignore', 'ignore', 'pipe'], detached: false });
}

/** Runs argv (a command on the host, e.g. abx) inside the world's host namespace. */
export function inHost(w, argv, opts = {}) {
  return spawnSync('nsenter', [`--net=${w.host}`, ...argv], { encoding: 'utf8', timeout: 120000, ...opts });
}

export function teardown(w) {
  if (!w || w.gone) return;
  w.gone = true;
  w.dropAtExit?.();
  for (const c of w.children) { try { c.kill('SIGKILL'); } catch { /* gone */ } }
  fs.rmSync(w.dir, { recursive: true, force: true });
}
