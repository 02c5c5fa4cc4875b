#!/usr/bin/env node
// mirror.mjs DIR: the corpus's package mirrors (corpus.mjs starts it): a
// Python package index (PEP 503 pages at /simple/NAME/) and an npm
// registry (packuments at /npm/NAME, tarballs under them) of packages made
// here into DIR, every byte fixed (zip and tar times, owners), on
// 127.0.0.1 at a free port. Prints {"pipIndex", "npmRegistry"} as one
// JSON line once it listens; SIGTERM ends it.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

function must(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

// A wheel (a zip: the modules, METADATA, WHEEL, RECORD, entry points), its
// times fixed so that it is the same bytes every run.
function makeWheel(dir, { name, version, files, scripts = {}, requires = [] }) {
  const dist = `${name}-${version}.dist-info`;
  const members = { ...files };
  members[`${dist}/METADATA`] = `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n${requires.map((r) => `Requires-Dist: ${r}\n`).join('')}`;
  members[`${dist}/WHEEL`] = 'Wheel-Version: 1.0\nGenerator: abx-corpus\nRoot-Is-Purelib: true\nTag: py3-none-any\n';
  const eps = Object.entries(scripts);
  if (eps.length) members[`${dist}/entry_points.txt`] = `[console_scripts]\n${eps.map(([k, v]) => `${k} = ${v}`).join('\n')}\n`;
  members[`${dist}/RECORD`] = '';
  const file = `${name}-${version}-py3-none-any.whl`;
  must('python3', ['-c', `
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    for k, v in sorted(json.loads(sys.argv[2]).items()):
        z.writestr(zipfile.ZipInfo(k, (2020, 1, 1, 0, 0, 0)), v)
`, path.join(dir, file), JSON.stringify(members)]);
  return file;
}

// An npm package tarball (package/...), the same bytes every run.
function makeTarball(dir, name, version, files) {
  const tree = fs.mkdtempSync(path.join(dir, 'pkg-'));
  for (const [k, v] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(tree, 'package', k)), { recursive: true });
    fs.writeFileSync(path.join(tree, 'package', k), v);
  }
  const file = `${name}-${version}.tgz`;
  must('sh', ['-c', 'tar -C "$1" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - package | gzip -n -9 > "$2"', 'sh', tree, path.join(dir, file)]);
  fs.rmSync(tree, { recursive: true, force: true });
  const bytes = fs.readFileSync(path.join(dir, file));
  return {
    file,
    shasum: crypto.createHash('sha1').update(bytes).digest('hex'),
    integrity: `sha512-${crypto.createHash('sha512').update(bytes).digest('base64')}`,
  };
}

const WHEELS = [
  { name: 'abxgreet', version: '1.0', files: { 'abxgreet/__init__.py': 'def greet(who):\n    return f"hello, {who}"\n' } },
  { name: 'abxgreet', version: '1.1', files: { 'abxgreet/__init__.py': 'def greet(who):\n    return f"hello again, {who}"\n' } },
  {
    name: 'abxcli', version: '2.0', requires: ['abxgreet>=1.0'],
    files: { 'abxcli.py': 'import abxgreet\n\ndef main():\n    print(abxgreet.greet("cli"))\n' },
    scripts: { abxcli: 'abxcli:main' },
  },
];

const PACKAGES = [
  { name: 'abx-pad', version: '1.0.0', files: { 'package.json': '{"name":"abx-pad","version":"1.0.0","main":"index.js"}\n', 'index.js': 'module.exports = (s, n) => String(s).padStart(n);\n' } },
  {
    name: 'abx-banner', version: '1.2.0', deps: { 'abx-pad': '^1.0.0' },
    files: {
      'package.json': '{"name":"abx-banner","version":"1.2.0","main":"index.js","bin":{"abx-banner":"cli.js"},"dependencies":{"abx-pad":"^1.0.0"}}\n',
      'index.js': 'const pad = require("abx-pad");\nmodule.exports = (s) => pad(s, 12);\n',
      'cli.js': '#!/usr/bin/env node\nconsole.log(require("./index.js")(process.argv[2] || "banner"));\n',
    },
  },
  { name: 'abx-dev-only', version: '0.1.0', files: { 'package.json': '{"name":"abx-dev-only","version":"0.1.0"}\n', 'index.js': 'module.exports = 1;\n' } },
];

async function serve(dir) {
  const simple = path.join(dir, 'simple');
  const npm = path.join(dir, 'npm');
  fs.mkdirSync(simple, { recursive: true });
  fs.mkdirSync(npm, { recursive: true });
  const wheels = {};
  for (const w of WHEELS) (wheels[w.name] ??= []).push(makeWheel(simple, w));
  const packuments = {};
  let base = '';
  const made = PACKAGES.map((p) => ({ ...p, ...makeTarball(npm, p.name, p.version, p.files) }));
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split('?')[0]);
    const send = (code, type, body) => { res.writeHead(code, { 'content-type': type }); res.end(body); };
    let m;
    if ((m = url.match(/^\/simple\/([a-z0-9-]+)\/?$/)) && wheels[m[1]]) {
      return send(200, 'text/html', `<html><body>${wheels[m[1]].map((f) => `<a href="/files/${f}">${f}</a>`).join('\n')}</body></html>\n`);
    }
    if ((m = url.match(/^\/files\/([\w.-]+\.whl)$/)) && fs.existsSync(path.join(simple, m[1]))) {
      return send(200, 'application/octet-stream', fs.readFileSync(path.join(simple, m[1])));
    }
    if ((m = url.match(/^\/npm\/([\w-]+)$/)) && packuments[m[1]]) return send(200, 'application/json', JSON.stringify(packuments[m[1]]));
    if ((m = url.match(/^\/npm\/[\w-]+\/-\/([\w.-]+\.tgz)$/)) && fs.existsSync(path.join(npm, m[1]))) {
      return send(200, 'application/octet-stream', fs.readFileSync(path.join(npm, m[1])));
    }
    return send(404, 'text/plain', 'not here\n');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  for (const p of made) {
    packuments[p.name] = {
      name: p.name,
      'dist-tags': { latest: p.version },
      versions: {
        [p.version]: {
          name: p.name, version: p.version, dependencies: p.deps ?? {},
          ...(p.name === 'abx-banner' ? { bin: { 'abx-banner': 'cli.js' } } : {}),
          dist: { tarball: `${base}/npm/${p.name}/-/${p.file}`, shasum: p.shasum, integrity: p.integrity },
        },
      },
    };
  }
  process.stdout.write(`${JSON.stringify({ pipIndex: `${base}/simple/`, npmRegistry: `${base}/npm/` })}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

await serve(process.argv[2]);

