// console.test.mjs: the web console of `abx serve --console` in a real
// browser (Debian's Chromium, headless, driven by puppeteer-core). A key
// logs in; a sandbox created through E2B's SDK appears in the table within
// 2 s and another key's never does; the sandbox's page shows a memory
// chart that rises when the test allocates 100 MiB inside; its terminal
// runs `echo hi` and shows `hi`; the kill button kills it and its row
// goes. The session is a header (no cookie), expires with logout, and every
// page carries a strict Content-Security-Policy. Screenshots of the main
// pages are kept in test-artifacts/console/ and checked to be non-blank.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { privateHome, root, startHttpServer, stopServer, sleep } from '../lib/harness.mjs';

const CHROMIUM = '/usr/bin/chromium';
const KEY = `e2b_${'c9'.repeat(20)}`;
const OTHER = `e2b_${'d0'.repeat(20)}`;
const TOKEN = 'console-admin-token-0123456789abcdef';
const ARTIFACTS = path.join(root, 'test-artifacts', 'console');
const H = privateHome('abx-console');
let srv, base, browser, puppeteer;

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), 'Debian\'s chromium is not installed (abx.sh installs it for the tests)');
  puppeteer = (await import('puppeteer-core')).default;
  const tokenFile = path.join(H.home, 'token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  srv = await startHttpServer(['--warm', '0', '--console', '--metrics-token-file', tokenFile], {
    env: { ...H.env, ABX_SERVE_API_KEYS: `${KEY},${OTHER}` }, serveArgs: ['serve'],
  });
  base = `http://127.0.0.1:${srv.port}`;
  process.env.E2B_API_URL = base;
  process.env.E2B_SANDBOX_URL = base;
  process.env.E2B_API_KEY = KEY;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (srv) await stopServer(srv);
  H.cleanup();
});

// A screenshot kept as an artifact, and the count of distinct colours in it
// (counted by the browser from the PNG: a blank page has one or two).
async function shot(page, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: true });
  const colours = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < d.length && seen.size < 1000; i += 16) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return seen.size;
  }, Buffer.from(png).toString('base64'));
  assert.ok(colours >= 8, `${name}.png looks blank (${colours} colours)`);
  return file;
}

async function login(page, key) {
  await page.goto(`${base}/console/`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#key');
  await page.type('#key', key);
  await page.click('#login-button');
  await page.waitForSelector('#sandboxes', { timeout: 10000 });
}

test('the console: log in with a key, the table, a sandbox\'s page (memory chart, terminal), the kill button', { timeout: 240000 }, async () => {
  const { Sandbox } = await import('e2b');
  const api = (p, key = KEY, opts = {}) => fetch(`${base}${p}`, { ...opts, headers: { 'X-API-Key': key, 'Content-Type': 'application/json', ...(opts.headers || {}) } });
  const theirs = (await (await api('/sandboxes', OTHER, { method: 'POST', body: JSON.stringify({ timeout: 300 }) })).json()).sandboxID;
  const page = await browser.newPage();
  const failures = [];
  page.on('pageerror', (e) => failures.push(e.message));
  // (a page left while its calls are in flight aborts them: not a failure)
  page.on('requestfailed', (r) => { if (r.failure()?.errorText !== 'net::ERR_ABORTED') failures.push(`${r.url()} ${r.failure()?.errorText}`); });
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url().slice(0, 120)); });
  await page.setViewport({ width: 1280, height: 900 });

  // a wrong key is refused where it was typed
  await page.goto(`${base}/console/`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#key');
  await shot(page, 'login');
  await page.type('#key', `e2b_${'00'.repeat(20)}`);
  await page.click('#login-button');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0);

  await login(page, KEY);
  const sbx = await Sandbox.create({ timeoutMs: 240000 });
  const t0 = Date.now();
  await page.waitForSelector(`tr[data-sandbox="${sbx.sandboxId}"]`, { timeout: 5000 });
  const appeared = Date.now() - t0;
  assert.ok(appeared <= 2000, `the sandbox took ${appeared} ms to appear in the table`);
  assert.equal(await page.$(`tr[data-sandbox="${theirs}"]`), null, "another key's sandbox is in the table");
  await sleep(2500); // a few samples for the sparklines
  assert.equal(await page.$(`tr[data-sandbox="${theirs}"]`), null);
  await shot(page, 'sandboxes');

  // the sandbox's page: its memory chart rises with 100 MiB allocated inside
  // (the table is redrawn as events come: the link is clicked in the page, in one step)
  await page.evaluate((id) => document.querySelector(`tr[data-sandbox="${id}"] a`).click(), sbx.sandboxId);
  await page.waitForSelector('#chart-memory');
  await page.waitForFunction(() => document.querySelector('#chart-memory').getAttribute('data-last') !== '', { timeout: 10000 });
  const before0 = Number(await page.$eval('#chart-memory', (e) => e.getAttribute('data-last')));
  await sbx.commands.run(`python3 -c "import time; b = b'x' * (100 << 20); time.sleep(120)"`, { background: true });
  await page.waitForFunction((m0) => Number(document.querySelector('#chart-memory').getAttribute('data-last')) >= m0 + 90 * 2 ** 20,
    { timeout: 20000 }, before0);
  assert.ok((await page.$eval('#chart-memory polyline', (e) => e.getAttribute('points').split(' ').length)) >= 2);

  // the terminal runs a command
  await page.waitForSelector('#terminal[data-pid]', { timeout: 10000 });
  await page.click('#terminal');
  await page.keyboard.type('echo h""i\n');
  await page.waitForFunction(() => [...document.querySelectorAll('#terminal .xterm-rows > div')].some((r) => r.textContent.trim() === 'hi'), { timeout: 10000 });
  await page.waitForFunction(() => document.querySelector('#processes').children.length > 0, { timeout: 10000 });
  await shot(page, 'sandbox');

  // what a sandbox names is text, never markup: a file named like an element
  const hostile = '<img src=x onerror="window.__abxPwned=1">.txt';
  await sbx.files.write(`/home/user/${hostile}`, 'x');
  const upload = path.join(H.home, 'from-the-browser.txt');
  fs.writeFileSync(upload, 'uploaded through the console\n');
  await page.reload({ waitUntil: 'domcontentloaded' }); // the file list is read when the page opens
  await page.waitForFunction((n) => [...document.querySelectorAll('#files a')].some((a) => a.textContent === n), { timeout: 10000 }, hostile);
  assert.equal(await page.evaluate(() => window.__abxPwned), undefined);
  assert.equal(await page.$('#files img'), null);
  const input = await page.waitForSelector('#upload');
  await input.uploadFile(upload);
  await page.waitForFunction(() => [...document.querySelectorAll('#files a')].some((a) => a.textContent === 'from-the-browser.txt'), { timeout: 10000 });
  assert.equal(await sbx.files.read('/home/user/from-the-browser.txt'), 'uploaded through the console\n');
  await page.waitForSelector('#terminal[data-pid]', { timeout: 10000 });

  // kill, confirmed: back on the table, the row gone, the sandbox gone
  page.on('dialog', (d) => d.accept());
  await page.click('#action-kill');
  await page.waitForSelector('#sandboxes');
  await page.waitForFunction((id) => !document.querySelector(`tr[data-sandbox="${id}"]`), { timeout: 5000 }, sbx.sandboxId);
  assert.equal((await api(`/sandboxes/${sbx.sandboxId}`)).status, 404);

  await page.goto(`${base}/console/#/templates`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Templates');
  await page.waitForSelector('tbody tr');
  await shot(page, 'templates');

  // no cookie was ever set; no request left this server; the page threw nothing
  assert.deepEqual(await browser.cookies?.() ?? await page.cookies(), []);
  assert.deepEqual(outside, []);
  assert.deepEqual(failures, []);

  // logout ends the session: the token it held answers 401 from then on
  const session = await page.evaluate(() => sessionStorage.getItem('abx-session'));
  assert.match(session, /^[0-9a-f]{64}$/);
  assert.equal((await fetch(`${base}/v2/sandboxes`, { headers: { 'X-Abx-Session': session } })).status, 200);
  await page.click('#logout');
  await page.waitForSelector('#key');
  assert.equal((await fetch(`${base}/v2/sandboxes`, { headers: { 'X-Abx-Session': session } })).status, 401);
  await page.close();
  await api(`/sandboxes/${theirs}`, OTHER, { method: 'DELETE' });
});

test('the console: the administrator (metrics token) sees every sandbox and the pools; pages carry a strict CSP', { timeout: 120000 }, async () => {
  const api = (p, key, opts = {}) => fetch(`${base}${p}`, { ...opts, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' } });
  const a = (await (await api('/sandboxes', KEY, { method: 'POST', body: JSON.stringify({ timeout: 120 }) })).json()).sandboxID;
  const b = (await (await api('/sandboxes', OTHER, { method: 'POST', body: JSON.stringify({ timeout: 120 }) })).json()).sandboxID;
  const page = await browser.newPage();
  try {
    await login(page, TOKEN);
    await page.waitForSelector(`tr[data-sandbox="${a}"]`, { timeout: 5000 });
    await page.waitForSelector(`tr[data-sandbox="${b}"]`, { timeout: 5000 });
    await page.goto(`${base}/console/#/pools`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => /\d+ \/ \d+/.test(document.querySelector('#pools')?.textContent || ''), { timeout: 5000 });
    await shot(page, 'pools');
  } finally {
    await page.close();
  }
  for (const p of ['/console/', '/console/console.js']) {
    const r = await fetch(`${base}${p}`);
    assert.equal(r.status, 200);
    const csp = r.headers.get('content-security-policy');
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.ok(!/script-src[^;]*unsafe/.test(csp), csp);
    assert.equal(r.headers.get('set-cookie'), null);
  }
  assert.equal((await fetch(`${base}/console/nope.js`)).status, 404);
  assert.equal((await fetch(`${base}/console/api/session`, { method: 'POST', body: '{"key":"wrong"}' })).status, 401);
  // a session is no key: it reaches nothing once the login's key is another's
  const s = await (await fetch(`${base}/console/api/session`, { method: 'POST', body: JSON.stringify({ key: OTHER }) })).json();
  const seen = await (await fetch(`${base}/v2/sandboxes`, { headers: { 'X-Abx-Session': s.session } })).json();
  assert.ok(seen.some((x) => x.sandboxID === b) && !seen.some((x) => x.sandboxID === a), JSON.stringify(seen));
  assert.equal((await fetch(`${base}/sandboxes/${a}`, { headers: { 'X-Abx-Session': s.session } })).status, 404);
  await api(`/sandboxes/${a}`, KEY, { method: 'DELETE' });
  await api(`/sandboxes/${b}`, OTHER, { method: 'DELETE' });
});

test('a console session ends after its idle time (ABX_SERVE_CONSOLE_IDLE), and its token then answers 401', { timeout: 60000 }, async () => {
  const H2 = privateHome('abx-console-idle');
  const short = await startHttpServer(['--warm', '0', '--console'], {
    env: { ...H2.env, ABX_SERVE_API_KEYS: KEY, ABX_SERVE_CONSOLE_IDLE: '2' }, serveArgs: ['serve'],
  });
  const at = `http://127.0.0.1:${short.port}`;
  try {
    const r = await fetch(`${at}/console/api/session`, { method: 'POST', body: JSON.stringify({ key: KEY }) });
    assert.equal(r.status, 201);
    const s = await r.json();
    assert.equal(s.expires_in, 2);
    assert.equal(r.headers.get('set-cookie'), null);
    assert.equal((await fetch(`${at}/v2/sandboxes`, { headers: { 'X-Abx-Session': s.session } })).status, 200);
    await sleep(1200);
    assert.equal((await fetch(`${at}/v2/sandboxes`, { headers: { 'X-Abx-Session': s.session } })).status, 200); // a call: idle again from now
    await sleep(3000);
    assert.equal((await fetch(`${at}/v2/sandboxes`, { headers: { 'X-Abx-Session': s.session } })).status, 401);
    assert.equal((await fetch(`${at}/console/api/session`, { method: 'DELETE', headers: { 'X-Abx-Session': s.session } })).status, 401);
    // a key that logs in again and again holds 16 sessions at most: the 17th ends its oldest
    const tokens = [];
    for (let i = 0; i < 40; i++) {
      const l = await fetch(`${at}/console/api/session`, { method: 'POST', body: JSON.stringify({ key: KEY }) });
      assert.equal(l.status, 201);
      tokens.push((await l.json()).session);
    }
    const alive = async (t) => (await fetch(`${at}/v2/sandboxes`, { headers: { 'X-Abx-Session': t } })).status;
    assert.equal(await alive(tokens[0]), 401);
    assert.equal(await alive(tokens[23]), 401);
    assert.equal(await alive(tokens[24]), 200);
    assert.equal(await alive(tokens[39]), 200);
  } finally {
    await stopServer(short);
    H2.cleanup();
  }
});
