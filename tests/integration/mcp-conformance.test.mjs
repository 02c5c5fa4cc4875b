// mcp-conformance.test.mjs: the official MCP conformance suite
// (@modelcontextprotocol/conformance) against abx's HTTP transport: the
// whole suite against the test server (the suite's fixed tools on abx's
// mcp/ library), with the committed expected-failures baseline, and the
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
  return spawnSync(process.execPath, [conformance, 'server', ...args], { encoding: 'utf8', timeout: 240000, env: process.env });
}

test('the whole suite against the test tools: every applicable scenario passes', async () => {
  const srv = await startHttpServer([], { bin: testServer, serveArgs: [] });
  try {
    const r = run(['--url', `http://localhost:${srv.port}/mcp`, '--expected-failures', path.join(root, 'tests/conformance/expected-failures.yml')]);
    assert.equal(r.status, 0, r.stdout.slice(-3000) + r.stderr);
    assert.match(r.stdout, /Baseline check passed/);
    for (const s of ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection',
      'tools-call-simple-text', 'tools-call-image', 'tools-call-embedded-resource', 'tools-call-mixed-content',
      'tools-call-error', 'tools-call-with-progress', 'tools-call-with-logging', 'server-sse-multiple-streams']) {
      assert.match(r.stdout, new RegExp(`✓ ${s}: \\d+ passed, 0 failed`), `${s} did not pass`);
    }
  } finally {
    await stopServer(srv);
  }
});

test('abx mcp serve itself passes the scenarios that need no test tools', async () => {
  const srv = await startHttpServer(['--no-auth', '--template', 'base'], { env: H.env });
  try {
    for (const s of ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'dns-rebinding-protection']) {
      const r = run(['--url', `http://localhost:${srv.port}/mcp`, '--scenario', s]);
      assert.equal(r.status, 0, `${s}:\n${r.stdout.slice(-2000)}${r.stderr}`);
      assert.match(r.stdout, /0 failed/);
    }
  } finally {
    assert.equal(await stopServer(srv), 0);
  }
});
