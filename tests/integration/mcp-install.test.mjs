// mcp-install.test.mjs: `abx mcp install` for every MCP client abx knows
// (issue 26), into a temporary HOME and project directory: each file in
// the client's own place and format (Codex CLI's TOML read back by
// Python's tomllib), both scopes where the client has both, the key only
// in the user's own files and never printed, a JSONC or invalid TOML file
// left byte for byte as it was with its line named and the entry printed,
// and `abx mcp status` reporting every client.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { abx, runAbx, privateHome } from '../lib/harness.mjs';

const H = privateHome('abx-install');
after(() => H.cleanup());
const SECRET = 'sk-test-1b2c3d4e5f';

function world() {
  const home = fs.mkdtempSync(path.join(H.home, 'home-'));
  const ws = fs.mkdtempSync(path.join(H.home, 'ws-'));
  const env = { ...H.env, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), ABX_SANDBOX_API_KEY: SECRET, CODEX_HOME: '' };
  const install = (...args) => {
    const r = runAbx(['mcp', 'install', ...args], { env, cwd: ws });
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), 'the key was printed');
    return r;
  };
  const read = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));
  return { home, ws, env, install, read };
}

// Codex's file as Python's tomllib reads it (a TOML parser abx did not write).
function tomlRead(file) {
  const r = spawnSync('python3', ['-c', 'import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],"rb"))))', file], { encoding: 'utf8' });
  assert.equal(r.status, 0, `not valid TOML: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const entry = { command: abx, args: ['mcp', 'start'] };
const withKey = { env: { ABX_SANDBOX_API_KEY: SECRET } };

test('every client in its own place and format, in each scope it has; the key only in user files', () => {
  const w = world();
  const cases = [
    // target, scope, file, section, expected entry
    ['cursor', 'user', path.join(w.home, '.cursor/mcp.json'), 'mcpServers', { ...entry, ...withKey }],
    ['cursor', 'project', path.join(w.ws, '.cursor/mcp.json'), 'mcpServers', entry],
    ['claude', null, path.join(w.home, '.config/Claude/claude_desktop_config.json'), 'mcpServers', { ...entry, ...withKey }],
    ['vscode', null, path.join(w.ws, '.vscode/mcp.json'), 'servers', { ...entry, type: 'stdio' }],
    ['vscode', 'user', path.join(w.home, '.config/Code/User/mcp.json'), 'servers', { ...entry, type: 'stdio', ...withKey }],
    ['claude-code', null, path.join(w.ws, '.mcp.json'), 'mcpServers', { ...entry, type: 'stdio' }],
    ['claude-code', 'user', path.join(w.home, '.claude.json'), 'mcpServers', { ...entry, type: 'stdio', ...withKey }],
    ['gemini', null, path.join(w.home, '.gemini/settings.json'), 'mcpServers', { ...entry, ...withKey }],
    ['gemini', 'project', path.join(w.ws, '.gemini/settings.json'), 'mcpServers', entry],
    ['windsurf', null, path.join(w.home, '.codeium/windsurf/mcp_config.json'), 'mcpServers', { ...entry, ...withKey }],
    ['copilot', null, path.join(w.home, '.copilot/mcp-config.json'), 'mcpServers', { ...entry, type: 'local', tools: ['*'], ...withKey }],
    ['copilot', 'project', path.join(w.ws, '.github/mcp.json'), 'mcpServers', { ...entry, type: 'local', tools: ['*'] }],
  ];
  // Claude Code's user file holds much else: kept
  fs.writeFileSync(path.join(w.home, '.claude.json'), JSON.stringify({ numStartups: 3, projects: { '/x': { allowedTools: [] } } }));
  for (const [target, scope, file, section, expected] of cases) {
    const r = w.install('--target', target, ...(scope ? ['--scope', scope] : []));
    assert.equal(r.status, 0, `${target} ${scope}: ${r.stderr}`);
    assert.ok(r.stdout.includes(file), `${target}: ${r.stdout}`);
    const doc = w.read(file);
    assert.deepEqual(doc[section]['agent-sandbox'], expected, `${target} ${scope}`);
    if (!expected.env) assert.ok(!fs.readFileSync(file, 'utf8').includes(SECRET), `${target}: the key in a project file`);
  }
  const cc = w.read(path.join(w.home, '.claude.json'));
  assert.equal(cc.numStartups, 3);
  assert.deepEqual(cc.projects, { '/x': { allowedTools: [] } });
  // --json says where and what
  const j = JSON.parse(w.install('--json', '--target', 'windsurf').stdout);
  assert.equal(j.target, 'windsurf');
  assert.equal(j.scope, 'user');
  assert.equal(j.api_key_written, true);
  assert.equal(j.tools.length, 15);
  // a scope the client does not have, an unknown client
  let r = w.install('--target', 'windsurf', '--scope', 'project');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^abx: E8001: --scope: Windsurf has no project configuration/);
  assert.match(w.install('--target', 'claude', '--scope', 'team').stderr, /^abx: E8001: --scope: expected user or project/);
  assert.match(w.install('--target', 'emacs').stderr, /^abx: E8001: --target: expected cursor, claude, vscode, claude-code, codex, gemini, windsurf or copilot/);
  // status: every client, in each scope
  const st = JSON.parse(runAbx(['--json', 'mcp', 'status'], { env: w.env, cwd: w.ws }).stdout);
  for (const name of ['cursor', 'claude', 'vscode', 'claude-code', 'codex', 'gemini', 'windsurf', 'copilot']) assert.ok(st.installations[name], name);
  assert.equal(st.installations.codex.installed, false);
  assert.equal(st.installations.cursor.scopes.user.installed, true);
  assert.equal(st.installations.cursor.scopes.project.installed, true);
  assert.equal(st.installations.windsurf.scopes.project, undefined);
  assert.equal(st.installations.copilot.installed, true);
  assert.equal(st.installations.copilot.scopes.project.installed, true);
  const table = runAbx(['mcp', 'status'], { env: w.env, cwd: w.ws });
  assert.match(table.stdout, /^copilot\s+yes\s+user\s+/m);
  // COPILOT_HOME moves Copilot CLI's user file
  const copilotHome = fs.mkdtempSync(path.join(H.home, 'copilot-'));
  r = runAbx(['mcp', 'install', '--target', 'copilot'], { env: { ...w.env, COPILOT_HOME: copilotHome }, cwd: w.ws });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(copilotHome, 'mcp-config.json'), 'utf8')).mcpServers['agent-sandbox'], { ...entry, type: 'local', tools: ['*'], ...withKey });
  assert.ok(!table.stdout.includes(SECRET));
});

test('Codex CLI: a [mcp_servers.agent-sandbox] table in config.toml, the rest of the file kept byte for byte; CODEX_HOME; project scope', () => {
  const w = world();
  const file = path.join(w.home, '.codex/config.toml');
  fs.mkdirSync(path.dirname(file));
  const before = '# my Codex settings\nmodel = "gpt-5-codex"\nnotify = ["notify-send", "Codex"]\n\n'
    + '[mcp_servers.docs]\ncommand = "npx"\nargs = [\n  "-y",   # keep this comment\n  "docs-mcp",\n]\nenv = { "API_KEY" = "k" }\n\n'
    + '[mcp_servers.agent-sandbox]\ncommand = "/old/abx"\nargs = ["old"]\n\n[mcp_servers.agent-sandbox.env]\nX = "1"\n\n'
    + '[projects."/home/me/app"]\ntrust_level = "trusted"\n';
  fs.writeFileSync(file, before, { mode: 0o644 });
  fs.chmodSync(file, 0o644);
  let r = w.install('--target', 'codex');
  assert.equal(r.status, 0, r.stderr);
  const after1 = fs.readFileSync(file, 'utf8');
  const doc = tomlRead(file);
  assert.deepEqual(doc.mcp_servers['agent-sandbox'], { command: abx, args: ['mcp', 'start'], env: { ABX_SANDBOX_API_KEY: SECRET } });
  assert.deepEqual(doc.mcp_servers.docs, { command: 'npx', args: ['-y', 'docs-mcp'], env: { API_KEY: 'k' } });
  assert.equal(doc.projects['/home/me/app'].trust_level, 'trusted');
  for (const line of ['# my Codex settings', '  "-y",   # keep this comment', '[projects."/home/me/app"]']) assert.ok(after1.includes(line), `lost: ${line}`);
  assert.ok(!after1.includes('/old/abx') && !after1.includes('X = "1"'), 'the old entry stayed');
  assert.equal(fs.statSync(file).mode & 0o777, 0o644, 'the file kept its mode');
  // again: the same file (one table, not two)
  assert.equal(w.install('--target', 'codex').status, 0);
  assert.equal(fs.readFileSync(file, 'utf8'), after1);
  // CODEX_HOME moves it
  const codexHome = fs.mkdtempSync(path.join(H.home, 'codex-'));
  r = runAbx(['mcp', 'install', '--target', 'codex'], { env: { ...w.env, CODEX_HOME: codexHome }, cwd: w.ws });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(tomlRead(path.join(codexHome, 'config.toml')).mcp_servers['agent-sandbox'].command, abx);
  assert.equal(fs.statSync(path.join(codexHome, 'config.toml')).mode & 0o777, 0o600, 'a new file holding the key is 0600');
  // project scope: .codex/config.toml here, without the key
  r = w.install('--target', 'codex', '--scope', 'project');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(tomlRead(path.join(w.ws, '.codex/config.toml')).mcp_servers['agent-sandbox'], { command: abx, args: ['mcp', 'start'] });
  const st = JSON.parse(runAbx(['--json', 'mcp', 'status'], { env: w.env, cwd: w.ws }).stdout);
  assert.equal(st.installations.codex.installed, true);
  assert.equal(st.installations.codex.scopes.project.installed, true);
});

test('a JSONC file, invalid TOML, or an entry TOML cannot replace: left byte for byte, the line named, the entry printed without the key', () => {
  const w = world();
  const jsonc = '{\n  // Gemini settings with a comment\n  "theme": "dark",\n  "mcpServers": {},\n}\n';
  const gemini = path.join(w.home, '.gemini/settings.json');
  fs.mkdirSync(path.dirname(gemini));
  fs.writeFileSync(gemini, jsonc);
  let r = w.install('--target', 'gemini');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^abx: E8021: the Gemini CLI configuration .*settings\.json is not strict JSON \(line 2: /);
  assert.equal(fs.readFileSync(gemini, 'utf8'), jsonc);
  const printed = r.stderr.slice(r.stderr.indexOf('{'));
  const hand = JSON.parse(printed);
  assert.deepEqual(hand['agent-sandbox'], { command: abx, args: ['mcp', 'start'], env: { ABX_SANDBOX_API_KEY: '<your ABX_SANDBOX_API_KEY>' } });
  assert.match(r.stderr, /by hand \(under "mcpServers"\)/);
  // --json: the entry in the answer
  r = w.install('--json', '--target', 'gemini');
  const j = JSON.parse(r.stdout);
  assert.equal(j.written, false);
  assert.match(j.entry_to_add, /"agent-sandbox"/);
  assert.equal(fs.readFileSync(gemini, 'utf8'), jsonc);
  // TOML that is not valid
  const codex = path.join(w.home, '.codex/config.toml');
  fs.mkdirSync(path.dirname(codex));
  const bad = 'model = "x"\n[mcp_servers.docs\ncommand = "npx"\n';
  fs.writeFileSync(codex, bad);
  r = w.install('--target', 'codex');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /^abx: E8021: the Codex CLI configuration .*config\.toml is not valid TOML \(line 2\)/);
  assert.equal(fs.readFileSync(codex, 'utf8'), bad);
  assert.match(r.stderr, /\[mcp_servers\.agent-sandbox\]\ncommand = ".*"\nargs = \["mcp", "start"\]\nenv = \{ ABX_SANDBOX_API_KEY = "<your ABX_SANDBOX_API_KEY>" \}/);
  // valid TOML that defines the servers as an inline table: a [header] would break it
  const inline = 'mcp_servers = { docs = { command = "npx" } }\n';
  fs.writeFileSync(codex, inline);
  r = w.install('--target', 'codex');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /E8021: .*in a form abx does not rewrite/);
  assert.equal(fs.readFileSync(codex, 'utf8'), inline);
});
