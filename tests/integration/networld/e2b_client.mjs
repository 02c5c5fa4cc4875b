// e2b_client.mjs: E2B's JS SDK against an abx serve inside the test world
// (run through nsenter in the world's host namespace). Prints one JSON
// line of what a program inside each sandbox saw. Usage:
//   node e2b_client.mjs BASE_URL KEY WEB_A WEB_B
const [base, key, webA, webB] = process.argv.slice(2);
process.env.E2B_API_URL = base;
process.env.E2B_SANDBOX_URL = base;
process.env.E2B_API_KEY = key;
const { Sandbox } = await import('e2b');
const http = async (s, url) => (await s.commands.run(`curl -s -m 3 -o /dev/null -w '%{http_code}' ${url} || true`)).stdout.trim();
const out = {};
const open = await Sandbox.create({ allowInternetAccess: true, timeoutMs: 120000 });
const listed = await Sandbox.create({ network: { allowOut: ['allowed.test'], denyOut: ['0.0.0.0/0'] }, timeoutMs: 120000 });
const closed = await Sandbox.create({ timeoutMs: 120000 });
try {
  out.open = [await http(open, `http://${webA}/`), await http(open, `http://${webB}/`)];
  out.listed = [await http(listed, 'http://allowed.test/'), await http(listed, `http://${webB}/`)];
  out.closed = [await http(closed, `http://${webA}/`)];
  out.info = (await open.getInfo()).allowInternetAccess ?? null;
  await Sandbox.updateNetwork(closed.sandboxId, { allowOut: ['allowed.test'] });
  out.updated = [await http(closed, 'http://allowed.test/'), await http(closed, `http://${webB}/`)];
  await Sandbox.updateNetwork(open.sandboxId, { allowInternetAccess: false });
  out.shut = [await http(open, `http://${webA}/`)];
  // a client cannot widen a policy past the walls: the pool, metadata, a private range
  const refused = async (f) => {
    try {
      const made = await f();
      if (made?.kill) await made.kill();
      return 'accepted';
    } catch (e) {
      return `refused: ${e.message}`;
    }
  };
  out.walls = [
    await refused(() => Sandbox.create({ network: { allowOut: ['10.200.0.0/16'] }, timeoutMs: 60000 })),
    await refused(() => Sandbox.updateNetwork(closed.sandboxId, { allowOut: ['169.254.169.254/32'] })),
    await refused(() => Sandbox.create({ allowInternetAccess: false, network: { allowOut: ['192.168.0.0/16'] }, timeoutMs: 60000 })),
  ];
} finally {
  for (const s of [open, listed, closed]) await s.kill();
}
console.log(JSON.stringify(out));
