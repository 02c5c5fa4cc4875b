// network.test.mjs: sandbox networking (issue 12) in a world the test
// builds (networld/world.mjs): abx runs in a namespace whose only route
// leads to the test's "internet" namespace; nothing leaves the two.
// Every check is what a program inside would see: curl, getent, pip, a raw
// UDP packet, and what the host keeps: ip link, nft list ruleset.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { abx, privateHome, sleep } from '../lib/harness.mjs';
import { buildWorld, teardown, inHost, canBuild, WEB_A, WEB_B, LAN, METADATA, DNS } from './networld/world.mjs';

const why = canBuild();
let W;
const H = privateHome('abx-net');
const env = { ...H.env, ABX_NET_DNS: DNS };

before(async () => { if (!why) W = await buildWorld(); });
after(() => {
  if (W) for (const id of ids()) abxw(['kill', id]);
  teardown(W);
  H.cleanup();
});

const abxw = (args) => inHost(W, [abx, ...args], { env });
const ids = () => { try { return fs.readdirSync(`${H.home}/sandboxes`).map((i) => `local:${i}`); } catch { return []; } };

function create(...args) {
  const r = abxw(['create', '--timeout', '300', ...args]);
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}
function sh(id, script) {
  const r = abxw(['exec', id, script]);
  return r.stdout + r.stderr;
}
const http = (id, url) => sh(id, `curl -s -m 3 -o /dev/null -w '%{http_code}' ${url}`).trim();
const resolves = (id, name) => sh(id, `getent ahostsv4 ${name} >/dev/null && echo yes || echo no`).trim() === 'yes';
const rawDns = (id, server) => sh(id, `python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
s.sendto(bytes.fromhex('123401000001000000000000') + b'\\x07allowed\\x04test\\x00\\x00\\x01\\x00\\x01', ('${server}', 53))
try: s.recv(512); print('answered')
except OSError: print('blocked')"`).trim();

function hostState() {
  const links = inHost(W, ['ip', '-br', 'link']).stdout.split('\n').filter((l) => l.startsWith('abxs'));
  const rules = inHost(W, ['nft', 'list', 'ruleset']).stdout.trim();
  return { links, rules };
}
function slotsOf(list) {
  let n = 0;
  for (const f of fs.existsSync('/run/abx/net') ? fs.readdirSync('/run/abx/net') : []) {
    if (!f.startsWith('slot-')) continue;
    try { if (list.some((id) => fs.readFileSync(`/run/abx/net/${f}`, 'utf8').startsWith(id.replace('local:', '') + ' '))) n++; } catch { /* gone */ }
  }
  return n;
}

test('none is the default: loopback only, no name resolves', { skip: why ?? false }, () => {
  const id = create();
  const info = JSON.parse(abxw(['info', '--json', id]).stdout);
  assert.equal(info.network.mode, 'none');
  assert.equal(http(id, `http://${WEB_A}/`), '000');
  assert.equal(resolves(id, 'allowed.test'), false);
  assert.match(sh(id, 'cat /proc/net/dev'), /lo:/);
  assert.doesNotMatch(sh(id, 'cat /proc/net/dev'), /eth0/);
  abxw(['kill', id]);
});

test('internet: the web hosts, not the LAN, not the host, not the metadata address; DNS only through abx', { skip: why ?? false }, () => {
  const id = create('--network', 'internet');
  try {
    const info = JSON.parse(abxw(['info', '--json', id]).stdout);
    assert.equal(info.network.mode, 'internet');
    assert.match(info.network.address, /^10\.200\./);
    assert.equal(http(id, `http://${WEB_A}/`), '200');
    assert.equal(http(id, `http://${WEB_B}/`), '200');
    assert.equal(http(id, 'http://allowed.test/'), '200');
    assert.equal(http(id, `http://${LAN}/`), '000');
    assert.equal(http(id, `http://${METADATA}/`), '000');
    assert.equal(http(id, `http://${W.hostAddr}:8080/`), '000');
    assert.equal(http(id, `http://${info.network.gateway}:8080/`), '000');
    assert.equal(rawDns(id, DNS), 'blocked');
    assert.equal(rawDns(id, info.network.gateway), 'answered');
    // a name that resolves to a private address stays unreachable (rebinding)
    assert.equal(resolves(id, 'rebind.test'), false);
  } finally {
    abxw(['kill', id]);
  }
});

test('allow list of domains: allowed names and wildcards only; the denied name, its address and rebinding refused', { skip: why ?? false }, () => {
  const id = create('--allow-out', 'allowed.test', '--allow-out', '*.wild.test', '--allow-out', 'rebind.test');
  try {
    assert.equal(JSON.parse(abxw(['info', '--json', id]).stdout).network.mode, 'allowlist');
    assert.equal(http(id, `http://${WEB_B}/`), '000'); // before any name points there
    assert.equal(http(id, 'http://allowed.test/'), '200');
    assert.equal(http(id, 'http://b.wild.test/'), '200');
    assert.equal(resolves(id, 'wild.test'), false); // *.wild.test is not wild.test
    assert.equal(resolves(id, 'denied.test'), false);
    assert.equal(http(id, 'http://denied.test/'), '000');
    assert.equal(http(id, `http://${WEB_B}/`), '000');
    assert.equal(resolves(id, 'rebind.test'), false);
    assert.equal(http(id, `http://${LAN}/`), '000');
    assert.equal(W.dnsLog.includes('denied.test'), false, 'a refused name was asked upstream');
  } finally {
    abxw(['kill', id]);
  }
});

const refusal = (r) => { assert.notEqual(r.status, 0, r.stdout); return JSON.parse(r.stderr).error; };

test('the walls: a request opens a private range only where the operator\'s client_may_allow does; the pool and the metadata address never', { skip: why ?? false }, () => {
  const before = ids().length;
  // without the operator's word, a private range stays shut, and the refusal names the rule
  let e = refusal(abxw(['--json', 'create', '--allow-out', '10.99.0.0/16']));
  assert.equal(e.code, 'E8031');
  assert.match(e.message, /10\.99\.0\.0\/16.*10\.0\.0\.0\/8.*client_may_allow/);
  assert.equal(ids().length, before, 'a refused create made a sandbox');
  assert.equal(abxw(['config', 'set', 'network.client_may_allow', '10.99.0.0/16, 169.254.0.0/16']).status, 0);
  const peer = create('--allow-out', 'allowed.test');
  try {
    // the operator opened the LAN: now it opens, and only it
    const lan = create('--allow-out', '10.99.0.0/16');
    try {
      assert.equal(http(lan, `http://${LAN}/`), '200');
      assert.equal(http(lan, `http://${WEB_A}/`), '000');
    } finally {
      abxw(['kill', lan]);
    }
    refusal(abxw(['--json', 'create', '--allow-out', '10.0.0.0/8'])); // wider than what was opened
    // the pool (other sandboxes) and the metadata address: whatever anyone says
    const pool = JSON.parse(abxw(['info', '--json', peer]).stdout).network.address.replace(/\.\d+\.\d+$/, '.0.0/16');
    for (const rule of [pool, '169.254.169.254/32', '169.254.0.0/16', '0.0.0.0/0', '127.0.0.1']) {
      e = refusal(abxw(['--json', 'create', '--allow-out', rule]));
      assert.equal(e.code, 'E8031', rule);
      assert.match(e.message, /no sandbox may reach|client_may_allow/, rule);
    }
    e = refusal(abxw(['--json', 'network', peer, '--allow-out', pool]));
    assert.equal(e.code, 'E8031');
    assert.match(e.message, /no sandbox may reach/);
    assert.deepEqual(JSON.parse(abxw(['network', '--json', peer]).stdout).network.allow_out, ['allowed.test']);
    assert.equal(ids().length, before + 1);
    // and below the request checks, the filter refuses the pool and the metadata
    // addresses before any allow rule of the sandbox's own
    const net = JSON.parse(abxw(['info', '--json', peer]).stdout).network;
    const rules = inHost(W, ['nft', 'list', 'ruleset']).stdout;
    const slot = new RegExp(`"${net.interface}" : jump (sb_\\d+)`).exec(rules)[1];
    const body = new RegExp(`chain ${slot} \\{([\\s\\S]*?)\\n\\s*\\}\\n`).exec(rules)[1];
    assert.ok(body.indexOf('@never4') > 0 && body.indexOf('@never4') < body.indexOf('@a4_'), body);
    assert.match(/set never4 \{([\s\S]*?)\n\s*\}\n/.exec(rules)[1], /169\.254\.169\.254/);
  } finally {
    abxw(['kill', peer]);
    abxw(['config', 'unset', 'network.client_may_allow']);
  }
});

test('TCP port 53 on the gateway reaches nothing of the host; DNS over UDP is the resolver', { skip: why ?? false }, async () => {
  const { spawn } = await import('node:child_process');
  // a host service on 0.0.0.0:53/tcp (bind9, dnsmasq): it must hear nothing from a sandbox
  const heard = `${W.dir}/heard-53`;
  const listener = spawn('nsenter', [`--net=${W.host}`, 'python3', '-c', `
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', 53)); s.listen(8)
print('ready', flush=True)
while True:
    c, _ = s.accept(); open('${heard}', 'ab').write(c.recv(100) or b'(connected)'); c.close()`], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    await new Promise((res, rej) => { listener.stdout.once('data', res); listener.once('exit', rej); });
    const id = create('--allow-out', 'allowed.test');
    try {
      const gw = JSON.parse(abxw(['info', '--json', id]).stdout).network.gateway;
      const out = sh(id, `python3 -c "
import socket; s = socket.socket(); s.settimeout(3)
try: s.connect(('${gw}', 53)); s.sendall(b'side channel'); print('connected')
except OSError as e: print('refused', e.errno)"`).trim();
      assert.match(out, /^refused/);
      assert.equal(rawDns(id, gw), 'answered');
      assert.equal(resolves(id, 'allowed.test'), true);
      assert.equal(fs.existsSync(heard), false, 'the host listener heard the sandbox');
    } finally {
      abxw(['kill', id]);
    }
  } finally {
    listener.kill('SIGKILL');
  }
});

test('the resolver relays only what the policy lets through: no glue, no AAAA (v4-mapped or not), no private A in a CNAME chain', { skip: why ?? false }, () => {
  for (const args of [['--allow-out', 'glue.test'], ['--network', 'internet']]) {
    const id = create(...args);
    try {
      const gw = JSON.parse(abxw(['info', '--json', id]).stdout).network.gateway;
      const out = sh(id, `python3 -c "
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
for qtype in (1, 28, 255):
    s.sendto(struct.pack('!HHHHHH', 7, 0x100, 1, 0, 0, 0) + b'\\x04glue\\x04test\\x00' + struct.pack('!HH', qtype, 1), ('${gw}', 53))
    m = s.recv(4096)
    an, ns, ar = struct.unpack('!HHH', m[6:12])
    off = 12
    while m[off]: off += m[off] + 1
    off += 5
    seen = []
    for _ in range(an):
        while m[off] and m[off] < 0xc0: off += m[off] + 1
        off += 2 if m[off] >= 0xc0 else 1
        t, c, ttl, n = struct.unpack('!HHIH', m[off:off + 10]); off += 10
        seen.append(str(t) + '=' + (socket.inet_ntoa(m[off:off + n]) if t == 1 else socket.inet_ntop(socket.AF_INET6, m[off:off + n]) if t == 28 else 'rdata'))
        off += n
    print(qtype, ns, ar, ' '.join(seen))
"`).trim().split('\n');
      assert.equal(out.length, 3, out.join('\n'));
      for (const line of out) {
        const [qtype, ns, ar, ...records] = line.split(' ');
        assert.equal(ns, '0', `${args} ${qtype}: authority relayed: ${line}`);
        assert.equal(ar, '0', `${args} ${qtype}: additional relayed: ${line}`);
        assert.ok(!records.some((r) => r.startsWith('28=')), `${args} ${qtype}: an AAAA reached the sandbox: ${line}`);
        assert.ok(!records.some((r) => r.includes(LAN)), `${args} ${qtype}: a private address reached the sandbox: ${line}`);
      }
      assert.ok(out[0].split(' ').includes(`1=${WEB_A}`), out[0]);
      assert.equal(http(id, `http://${LAN}/`), '000');
    } finally {
      abxw(['kill', id]);
    }
  }
});

test('internet with a deny list: denied CIDRs and names (and the names\' addresses) refused, the rest open', { skip: why ?? false }, () => {
  const id = create('--network', 'internet', '--deny-out', 'denied.test', '--deny-out', '198.51.100.0/24');
  try {
    assert.equal(http(id, `http://${WEB_A}/`), '000');
    assert.equal(http(id, 'http://allowed.test/'), '000'); // its address is in a denied CIDR
    assert.equal(resolves(id, 'denied.test'), false);
    let raw = '';
    for (let i = 0; i < 20 && raw !== '000'; i++) { raw = http(id, `http://${WEB_B}/`); } // learned when the policy is set
    assert.equal(raw, '000');
  } finally {
    abxw(['kill', id]);
  }
});

test('pip install from the world\'s package index works with internet, fails with none', { skip: why ?? false }, () => {
  const pip = 'python3 -m pip install --no-cache-dir --disable-pip-version-check --target /tmp/site --trusted-host pypi.test --index-url http://pypi.test/simple abxdemo >/tmp/pip.log 2>&1; echo rc=$?; PYTHONPATH=/tmp/site python3 -c "import abxdemo; print(abxdemo.GREETING)" 2>&1 | tail -1';
  const on = create('--network', 'internet');
  const off = create();
  try {
    const out = sh(on, pip);
    assert.match(out, /rc=0/, sh(on, 'cat /tmp/pip.log'));
    assert.match(out, /installed through the sandbox policy/);
    assert.doesNotMatch(sh(off, pip), /rc=0/);
  } finally {
    abxw(['kill', on]);
    abxw(['kill', off]);
  }
});

// An agent's package path (issue 26) through the MCP server in the world:
// the default template, network asked for at create_sandbox, pip by the
// user, apt-get by root (run_command user "root") from the world's mirror.
test('through MCP, an agent installs with pip from the world\'s index and with apt-get as root from its mirror', { skip: why ?? false, timeout: 900000 }, async () => {
  const c = new Client({ name: 'abx-net-agent', version: '1' });
  await c.connect(new StdioClientTransport({ command: 'nsenter', args: [`--net=${W.host}`, abx, 'mcp', 'start'], env, stderr: 'pipe' }));
  const long = { timeout: 900000 };
  const run = async (command, user) => {
    const r = await c.callTool({ name: 'run_command', arguments: { command, timeout: 300, ...(user ? { user } : {}) } }, undefined, long);
    assert.notEqual(r.isError, true, JSON.stringify(r.structuredContent));
    return r.structuredContent;
  };
  try {
    // the first use may build code-interpreter-v1 (once per machine)
    const made = await c.callTool({ name: 'create_sandbox', arguments: { allow_internet_access: true, timeout: 900 } }, undefined, long);
    assert.notEqual(made.isError, true, JSON.stringify(made.structuredContent));
    let r = await run('pip install --no-cache-dir --disable-pip-version-check --index-url http://pypi.test/simple --trusted-host pypi.test abxdemo 2>&1 | tail -2; python3 -c "import abxdemo; print(abxdemo.GREETING)"');
    assert.equal(r.exit_code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /installed through the sandbox policy\n$/);
    // as the user apt-get cannot; as root it installs from the mirror
    const apt = "echo 'deb [trusted=yes] http://apt.test/debian ./' > /etc/apt/sources.list.d/abx-test.list && apt-get -q update -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/abx-test.list -o Dir::Etc::sourceparts=- && apt-get -q install -y --no-install-recommends abxdemo-tool";
    r = await run(apt);
    assert.notEqual(r.exit_code, 0, 'the sandbox user is not root');
    r = await run(apt, 'root');
    assert.equal(r.exit_code, 0, r.stdout + r.stderr);
    r = await run("abxdemo-tool; dpkg-query -W -f '${Status}' abxdemo-tool");
    assert.equal(r.stdout, 'abxdemo-tool from the local mirror\ninstall ok installed');
  } finally {
    await c.close();
  }
});

test('the policy changed at run time holds for the next connection; two sandboxes, two policies', { skip: why ?? false }, () => {
  const a = create();
  const b = create('--network', 'internet');
  try {
    assert.equal(http(a, `http://${WEB_B}/`), '000');
    let r = abxw(['network', a, '--mode', 'internet']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /mode\s+internet/);
    assert.equal(http(a, `http://${WEB_B}/`), '200');
    r = abxw(['network', a, '--allow-out', 'allowed.test']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(http(a, `http://${WEB_B}/`), '000');
    assert.equal(http(a, 'http://allowed.test/'), '200');
    assert.equal(http(b, `http://${WEB_B}/`), '200'); // the other sandbox keeps its own
    r = abxw(['network', '--json', a, '--mode', 'none']);
    assert.equal(JSON.parse(r.stdout).network.mode, 'none');
    assert.equal(http(a, 'http://allowed.test/'), '000');
    assert.equal(http(a, `http://${WEB_A}/`), '000');
    const bNet = JSON.parse(abxw(['network', '--json', b]).stdout).network;
    assert.equal(bNet.mode, 'internet');
    // one sandbox's end leaves the other's rules in place
    abxw(['kill', a]);
    const rules = inHost(W, ['nft', 'list', 'ruleset']).stdout;
    assert.match(rules, new RegExp(`"${bNet.interface}" : jump`));
    assert.equal(http(b, `http://${LAN}/`), '000');
    assert.equal(http(b, `http://${WEB_B}/`), '200');
  } finally {
    abxw(['kill', a]);
    abxw(['kill', b]);
  }
});

test('bad network input is refused before anything is made', { skip: why ?? false }, () => {
  const before = ids().length;
  for (const [args, code] of [[['--network', 'open'], 'E8001'], [['--allow-out', 'not a domain!'], 'E8001'],
    [['--network', 'none', '--allow-out', 'x.test'], 'E8001'], [['--deny-out', '10.0.0.0/99'], 'E8001']]) {
    const r = abxw(['--json', 'create', ...args]);
    assert.notEqual(r.status, 0, args.join(' '));
    assert.equal(JSON.parse(r.stderr).error.code, code, `${args.join(' ')}: ${r.stderr}`);
  }
  assert.equal(ids().length, before);
  const id = create();
  const r = abxw(['--json', 'network', id, '--mode', 'sideways']);
  assert.equal(JSON.parse(r.stderr).error.code, 'E8001');
  assert.equal(JSON.parse(abxw(['network', '--json', id]).stdout).network.mode, 'none');
  abxw(['kill', id]);
});

test('cleanup: interfaces, rules and addresses go with the sandbox: kill, timeout, kill -9 of its supervisor', { skip: why ?? false }, async () => {
  const before = hostState();
  assert.deepEqual(before, { links: [], rules: '' });
  const killed = create('--network', 'internet');
  const timed = inHost(W, [abx, 'create', '--timeout', '2', '--allow-out', 'allowed.test'], { env }).stdout.trim();
  const crashed = create('--network', 'internet');
  assert.equal(hostState().links.length, 3);
  assert.equal(slotsOf([killed, timed, crashed]), 3);
  abxw(['kill', killed]);
  const meta = JSON.parse(fs.readFileSync(`${H.home}/sandboxes/${crashed.replace('local:', '')}/meta.json`, 'utf8'));
  process.kill(meta.shim_pid, 'SIGKILL');
  await sleep(2500);
  abxw(['list']); // reconciles what the dead supervisor left
  for (let i = 0; i < 50 && (hostState().links.length || hostState().rules); i++) await sleep(100);
  assert.deepEqual(hostState(), before);
  assert.equal(slotsOf([killed, timed, crashed]), 0);
});

test('200 create/kill cycles leave the host\'s network configuration as it was', { skip: why ?? false }, () => {
  // the slots held in the world's namespace: other tests' sandboxes (and builds) hold theirs in the host's meanwhile
  const slotsHere = 'ino=$(stat -L -c %i /proc/self/ns/net); grep -l " $ino$" /run/abx/net/slot-* 2>/dev/null | sort';
  const snapshot = () => ['ip -br link', 'ip -br addr', 'ip route', 'nft list ruleset', slotsHere]
    .map((c) => inHost(W, ['sh', '-c', c]).stdout).join('\n---\n');
  const first = create('--network', 'internet');
  abxw(['kill', first]); // the one-time settings (IPv4 forwarding) are on from here
  const before = snapshot();
  for (let i = 0; i < 200; i++) {
    const r = abxw(['create', '--timeout', '60', ...(i % 2 ? ['--network', 'internet'] : ['--allow-out', 'allowed.test'])]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(abxw(['kill', r.stdout.trim()]).status, 0);
  }
  assert.equal(snapshot(), before);
});

test('MCP create_sandbox: allow_internet_access and network {allow_out, deny_out}, documented in the tool schema', { skip: why ?? false }, async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const transport = new StdioClientTransport({ command: 'nsenter', args: [`--net=${W.host}`, abx, 'mcp', 'start'], env });
  const client = new Client({ name: 'network-test', version: '1' });
  await client.connect(transport);
  try {
    const tools = await client.listTools();
    const props = tools.tools.find((t) => t.name === 'create_sandbox').inputSchema.properties;
    assert.equal(props.allow_internet_access.type, 'boolean');
    assert.deepEqual(Object.keys(props.network.properties).sort(), ['allow_out', 'deny_out']);
    const call = async (name, args) => {
      const r = await client.callTool({ name, arguments: args });
      assert.ok(!r.isError, JSON.stringify(r.content));
      return r.structuredContent;
    };
    const curl = async (id, url) => (await call('run_command', { sandbox_id: id, command: `curl -s -m 3 -o /dev/null -w '%{http_code}' ${url}` })).stdout.trim();
    const open = (await call('create_sandbox', { allow_internet_access: true })).sandbox_id;
    assert.equal(await curl(open, `http://${WEB_B}/`), '200');
    assert.equal(await curl(open, `http://${LAN}/`), '000');
    const listed = (await call('create_sandbox', { network: { allow_out: ['allowed.test'] } })).sandbox_id;
    assert.equal(await curl(listed, 'http://allowed.test/'), '200');
    assert.equal(await curl(listed, `http://${WEB_B}/`), '000');
    const plain = (await call('create_sandbox', {})).sandbox_id;
    assert.equal(await curl(plain, `http://${WEB_A}/`), '000');
    const bad = await client.callTool({ name: 'create_sandbox', arguments: { network: { allow_out: ['no such thing!'] } } });
    assert.equal(bad.isError, true);
    assert.match(JSON.stringify(bad.content), /E8001/);
    for (const cidr of ['10.200.0.0/16', '169.254.169.254/32', '192.168.0.0/16']) {
      const walled = await client.callTool({ name: 'create_sandbox', arguments: { network: { allow_out: [cidr] } } });
      assert.equal(walled.isError, true, cidr);
      assert.equal(walled.structuredContent.error.code, 'E8031', cidr);
    }
    const info = await call('get_sandbox', { sandbox_id: listed });
    assert.ok(info);
  } finally {
    await client.close();
  }
});

test('abx serve: E2B\'s SDK with allowInternetAccess, network {allowOut, denyOut} and Sandbox.updateNetwork', { skip: why ?? false }, async () => {
  const { spawn, spawnSync } = await import('node:child_process');
  const KEY = `e2b_${'e5'.repeat(20)}`;
  const srv = spawn('nsenter', [`--net=${W.host}`, abx, 'serve', '--listen', '127.0.0.1:0', '--warm', '0'], { env: { ...env, ABX_SERVE_API_KEYS: KEY }, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    const port = await new Promise((resolve, reject) => {
      let err = '';
      srv.stderr.on('data', (d) => { err += d; const m = /listening on http:\/\/[^:]+:(\d+)/.exec(err); if (m) resolve(Number(m[1])); });
      srv.on('exit', (c) => reject(new Error(`serve exited ${c}: ${err}`)));
    });
    const r = spawnSync('nsenter', [`--net=${W.host}`, process.execPath, new URL('./networld/e2b_client.mjs', import.meta.url).pathname,
      `http://127.0.0.1:${port}`, KEY, WEB_A, WEB_B], { encoding: 'utf8', timeout: 120000 });
    assert.equal(r.status, 0, r.stderr);
    const seen = JSON.parse(r.stdout.trim().split('\n').pop());
    const { walls, ...rest } = seen;
    assert.deepEqual(rest, { open: ['200', '200'], listed: ['200', '000'], closed: ['000'], info: true, updated: ['200', '000'], shut: ['000'] });
    assert.equal(walls.length, 3);
    for (const w of walls) assert.match(w, /^refused: .*(no sandbox may reach|client_may_allow)/, w);
  } finally {
    srv.kill('SIGTERM');
  }
});

test('config.toml [network] default: the mode of a create that names none; a bad value is an error', { skip: why ?? false }, () => {
  assert.equal(abxw(['config', 'set', 'network.default', 'internet']).status, 0);
  try {
    const id = create();
    assert.equal(JSON.parse(abxw(['info', '--json', id]).stdout).network.mode, 'internet');
    assert.equal(http(id, `http://${WEB_B}/`), '200');
    abxw(['kill', id]);
    const still = create('--network', 'none');
    assert.equal(JSON.parse(abxw(['info', '--json', still]).stdout).network.mode, 'none');
    abxw(['kill', still]);
    abxw(['config', 'set', 'network.default', 'everything']);
    const r = abxw(['--json', 'create']);
    assert.equal(JSON.parse(r.stderr).error.code, 'E8021');
  } finally {
    abxw(['config', 'unset', 'network.default']);
  }
});

test('abx run --network / --allow-out: a one-shot sandbox with a network, gone with the command', { skip: why ?? false }, () => {
  const run = (...args) => inHost(W, [abx, 'run', ...args], { env });
  let r = run('--network', 'internet', '--', 'sh', '-c', `curl -s -m 3 -o /dev/null -w '%{http_code} ' http://${WEB_B}/; curl -s -m 3 -o /dev/null -w '%{http_code}' http://${LAN}/; exit 0`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '200 000');
  r = run('--allow-out', 'allowed.test', '--', 'sh', '-c', `curl -s -m 3 -o /dev/null -w '%{http_code} ' http://allowed.test/; curl -s -m 3 -o /dev/null -w '%{http_code}' http://${WEB_B}/`);
  assert.equal(r.stdout, '200 000');
  r = run('--', 'sh', '-c', `curl -s -m 3 -o /dev/null -w '%{http_code}' http://${WEB_A}/`);
  assert.equal(r.stdout, '000');
  r = run('--network', 'open', '--', 'true');
  assert.equal(r.status, 125);
  assert.match(r.stderr, /E8001/);
  assert.deepEqual(hostState(), { links: [], rules: '' });
});

test('sandboxes never reach each other, even with a pool in a range that counts as public', { skip: why ?? false }, () => {
  const penv = { ...env, ABX_NET_POOL: '198.18.0.0/16' };
  const mk = () => inHost(W, [abx, 'create', '--timeout', '120', '--network', 'internet'], { env: penv }).stdout.trim();
  const a = mk(), b = mk();
  try {
    const bAddr = JSON.parse(abxw(['info', '--json', b]).stdout).network.address;
    assert.match(bAddr, /^198\.18\./);
    abxw(['exec', '--background', b, 'python3 -m http.server 8000']);
    let fromB = '';
    for (let i = 0; i < 30 && fromB !== '200'; i++) fromB = http(b, 'http://127.0.0.1:8000/'); // it serves
    assert.equal(fromB, '200');
    assert.equal(http(a, `http://${bAddr}:8000/`), '000');
    assert.equal(http(a, `http://${WEB_B}/`), '200');
  } finally {
    abxw(['kill', a]);
    abxw(['kill', b]);
  }
});

test('reaping a dead sandbox whose slot another sandbox holds now leaves that sandbox\'s network alone', { skip: why ?? false }, () => {
  const live = create('--network', 'internet');
  try {
    assert.equal(http(live, `http://${WEB_A}/`), '200');
    const short = live.replace('local:', '');
    const slotFile = fs.readdirSync('/run/abx/net').find((f) => f.startsWith('slot-') && fs.readFileSync(`/run/abx/net/${f}`, 'utf8').startsWith(`${short} `));
    assert.ok(slotFile, 'the live sandbox holds a slot');
    const slot = Number(slotFile.slice(5));
    // a sandbox that died after releasing that slot (its shim killed before it removed its net.json)
    const dead = 'i0000000000000000dead';
    const dir = `${H.home}/sandboxes/${dead}`;
    fs.mkdirSync(dir, { mode: 0o700 });
    fs.writeFileSync(`${dir}/meta.json`, JSON.stringify({ sandbox_id: dead, shim_pid: 999999999 }));
    fs.writeFileSync(`${dir}/shim.lock`, '');
    fs.writeFileSync(`${dir}/net.json`, JSON.stringify({ slot, interface: `abxs${slot}`, id: dead }));
    abxw(['list']); // reconciles the home: the dead one is reaped
    assert.ok(!fs.existsSync(dir), 'the dead sandbox was reaped');
    assert.ok(fs.existsSync(`/run/abx/net/${slotFile}`), 'the live sandbox lost its slot');
    assert.equal(http(live, `http://${WEB_A}/`), '200', 'the live sandbox lost its network');
  } finally {
    abxw(['kill', live]);
  }
});

// Sends `count` queries for allowed.test from sandbox id to its resolver, one
// every 100 ms, and gives the median answer time and how many got none.
// Asynchronous: the world's DNS server logs each question to a pipe this
// process must keep reading (a spawnSync would leave it full, and the server
// stuck).
async function dnsTimes(id, count) {
  const p = spawn('nsenter', [`--net=${W.host}`, abx, 'exec', id, `python3 -c "
import socket, time, os, statistics
ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
took = []
for i in range(${count}):
    q = os.urandom(2) + bytes.fromhex('01000001000000000000') + b'\\x07allowed\\x04test\\x00\\x00\\x01\\x00\\x01'
    t = time.monotonic(); s.sendto(q, (ns, 53))
    try:
        while s.recv(4096)[:2] != q[:2]: pass
        took.append((time.monotonic() - t) * 1000)
    except OSError: took.append(2000)
    time.sleep(0.1)
print(round(statistics.median(took), 1), sum(1 for x in took if x >= 2000))"`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.stderr.on('data', (d) => { out += d; });
  await new Promise((resolve) => p.on('close', resolve));
  const [median, lost] = out.trim().split(' ').map(Number);
  assert.ok(Number.isFinite(median), out);
  return { median, lost };
}

test('a DNS flood from one sandbox: another sandbox\'s queries are still answered, median under 100 ms', { skip: why ?? false, timeout: 240000 }, async () => {
  const flooder = create('--allow-out', 'allowed.test', '--allow-out', 'pypi.test');
  const other = create('--allow-out', 'allowed.test');
  const calm = await dnsTimes(other, 10);
  assert.ok(calm.lost === 0 && calm.median < 100, `without a flood: ${JSON.stringify(calm)}`);
  // four sockets sending as fast as they can: allowed names (forwarded upstream), a denied one, random ones
  const flood = spawn('nsenter', [`--net=${W.host}`, abx, 'exec', flooder, `python3 -c "
import socket, time, os
ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]
names = [b'\\x07allowed\\x04test\\x00', b'\\x04pypi\\x04test\\x00', b'\\x06denied\\x04test\\x00']
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(4)]
for s in socks: s.setblocking(False)
sent = 0; end = time.time() + 25
while time.time() < end:
    for s in socks:
        name = names[sent % 3] if sent % 4 else b'\\x08' + os.urandom(4).hex().encode() + b'\\x00'
        try: s.sendto(os.urandom(2) + bytes.fromhex('01000001000000000000') + name + b'\\x00\\x01\\x00\\x01', (ns, 53)); sent += 1
        except OSError: pass
        try: s.recv(4096)
        except OSError: pass
print('sent', sent, flush=True)"`], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let floodOut = '';
  flood.stdout.on('data', (d) => { floodOut += d; });
  const floodEnd = new Promise((resolve) => flood.on('close', resolve));
  try {
    await sleep(3000); // the flood is under way
    const busy = await dnsTimes(other, 30);
    assert.ok(busy.median < 100, `the other sandbox's median answer took ${busy.median} ms during the flood (${calm.median} ms without)`);
    assert.ok(busy.lost <= 3, `${busy.lost} of 30 queries unanswered during the flood`);
    assert.equal(flood.exitCode, null, `the flood ended early: ${floodOut}`);
  } finally {
    flood.kill('SIGKILL');
    await floodEnd;
    abxw(['kill', flooder]);
    abxw(['kill', other]);
  }
});
