// mcp-conformance.test.mjs: the official MCP conformance suite
// (@modelcontextprotocol/conformance, its newest release) against abx's HTTP
// transport, for both protocol eras: the frozen requirements of 2025-11-25
// (initialize and sessions) and of 2026-07-28 (stateless, per-request _meta),
// each against the test server (the suite's fixed tools on abx's mcp/
// library) with its committed expected-failures baseline, and the
// scenarios that need no test tools against `abx mcp serve` itself.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { root, privateHome, startHttpServer, stopServer } from '../lib/harness.mjs';

const H = privateHome('abx-conf');
after(() => H.cleanup());
const conformance = path.join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const testServer = process.env.ABX_TEST_SERVER || path.join(path.dirname(process.env.ABX_BIN || path.join(root, 'build/abx')), 'tests/mcp-test-server');

function run(args) {
  // the suite needs Node 22: process.execPath is the node running these tests
  return spawnSync(process.execPath, [conformance, 'server', ...args], { encoding: 'utf8', timeout: 400000, env: process.env });
}

const passes = (out, s) => assert.match(out, new RegExp(`✓ ${s}: [1-9]\\d* passed, 0 failed`), `${s} did not pass:\n${out.slice(-3000)}`);

for (const [revision, mustPass] of [
  ['2025-11-25', ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection',
    'tools-call-simple-text', 'tools-call-image', 'tools-call-audio', 'tools-call-embedded-resource', 'tools-call-mixed-content',
    'tools-call-error', 'tools-call-with-progress', 'tools-call-with-logging', 'server-sse-multiple-streams']],
  ['2026-07-28', ['server-stateless', 'tools-list', 'tools-call-simple-text', 'tools-call-image', 'tools-call-audio',
    'tools-call-embedded-resource', 'tools-call-mixed-content', 'tools-call-error', 'tools-call-with-progress',
    'server-sse-multiple-streams', 'dns-rebinding-protection', 'http-header-validation',
    'input-required-result-unsupported-methods', 'input-required-result-validate-input']],
]) {
  test(`the ${revision} requirements against the test tools: every applicable scenario passes`, { timeout: 450000 }, async (t) => {
    const srv = await startHttpServer([], { bin: testServer, serveArgs: [] });
    try {
      const r = run(['--url', `http://localhost:${srv.port}/mcp`, '--requirements', revision,
        '--expected-failures', path.join(root, `tests/conformance/expected-failures-${revision}.yml`)]);
      t.diagnostic((r.stdout.match(/^Total: .*$/m) || ['no total'])[0]);
      assert.equal(r.status, 0, r.stdout.slice(-3000) + r.stderr);
      assert.match(r.stdout, /Baseline check passed/);
      for (const s of mustPass) passes(r.stdout, s);
    } finally {
      await stopServer(srv);
    }
  });
}

test('abx mcp serve itself passes the scenarios that need no test tools, in both eras', { timeout: 300000 }, async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    const url = `http://localhost:${srv.port}/mcp`;
    for (const [s, version] of [['server-initialize', '2025-11-25'], ['ping', '2025-11-25'], ['tools-list', '2025-11-25'],
      ['logging-set-level', '2025-11-25'], ['dns-rebinding-protection', '2025-11-25'],
      ['tools-list', '2026-07-28'], ['resources-list', '2026-07-28'], ['sep-2164-resource-not-found', '2026-07-28'],
      ['dns-rebinding-protection', '2026-07-28'], ['http-header-validation', '2026-07-28']]) {
      const r = run(['--url', url, '--scenario', s, '--spec-version', version]);
      assert.equal(r.status, 0, `${s} (${version}):\n${r.stdout.slice(-2000)}${r.stderr}`);
      assert.match(r.stdout, /Passed: (\d+)\/\1, 0 failed, 0 warnings/, `${s} (${version}):\n${r.stdout.slice(-2000)}`);
    }
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
});
