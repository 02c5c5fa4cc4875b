// console.js: the abx web console, a client of the same API as E2B's SDKs
// (the control plane, GET /metrics, GET /events, and each sandbox's envd
// through the data plane). The session from the login is kept in
// sessionStorage and sent as X-Abx-Session: never a cookie, never in a URL.
// Everything a sandbox or the server says is put in the page as text
// (textContent), never as markup.
'use strict';

const SAMPLE_MS = 1000;
const HISTORY = 3600; // an hour of samples
const ENVD = '49983';

const S = {
  session: sessionStorage.getItem('abx-session'),
  scope: sessionStorage.getItem('abx-scope'),
  history: new Map(), // sandbox id -> [{t, cpu, mem}]
  lastCpu: new Map(), // sandbox id -> {t, seconds}
  metrics: [],
  denials: new Map(), // sandbox id -> its last denials, as text
  page: null, // {refresh(), leave()}
  timer: null,
};

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (k === 'class') e.className = v;
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) if (kid !== null && kid !== undefined) e.append(kid instanceof Node ? kid : String(kid));
  return e;
}

const svgNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function human(bytes) {
  if (bytes === undefined || bytes === null || Number.isNaN(bytes)) return '-';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = bytes;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${u[i]}`;
}

function duration(seconds) {
  if (!Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

// ---- the API ----------------------------------------------------------------

async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const h = { 'X-Abx-Session': S.session || '', ...headers };
  let payload = body;
  if (body !== undefined && !(body instanceof FormData) && typeof body !== 'string' && !(body instanceof Uint8Array)) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers: h, body: payload, credentials: 'omit', cache: 'no-store' });
  if (r.status === 401 && S.session) {
    endSession('Your session ended: log in again.');
    throw new Error('session ended');
  }
  return r;
}

async function apiJSON(path, opts) {
  const r = await api(path, opts);
  const text = await r.text();
  const doc = text ? JSON.parse(text) : null;
  if (!r.ok) throw new Error((doc && doc.message) || `${r.status}`);
  return doc;
}

// A sandbox's envd, through the data plane: its id and port in headers, its token.
function envdHeaders(sb, extra = {}) {
  return { 'E2b-Sandbox-Id': sb.sandboxID, 'E2b-Sandbox-Port': ENVD, 'X-Access-Token': sb.envdAccessToken || '', ...extra };
}

async function envdUnary(sb, method, body) {
  const r = await api(`/${method}`, { method: 'POST', body: JSON.stringify(body), headers: envdHeaders(sb, { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }) });
  if (!r.ok) throw new Error(`${method}: ${r.status}`);
  return r.json();
}

// Prometheus' text format: [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

const metric = (name, id) => {
  const s = S.metrics.find((x) => x.name === name && (id === undefined || x.labels.sandbox_id === id));
  return s ? s.value : undefined;
};

async function sample() {
  try {
    const r = await api('/metrics');
    if (!r.ok) return;
    S.metrics = parseMetrics(await r.text());
  } catch { return; }
  const now = Date.now();
  for (const s of S.metrics) {
    if (s.name !== 'abx_sandbox_memory_bytes') continue;
    const id = s.labels.sandbox_id;
    const cpuSeconds = metric('abx_sandbox_cpu_seconds_total', id);
    const last = S.lastCpu.get(id);
    const cpu = last && cpuSeconds !== undefined && now > last.t ? Math.max(0, (cpuSeconds - last.seconds) / ((now - last.t) / 1000) * 100) : 0;
    if (cpuSeconds !== undefined) S.lastCpu.set(id, { t: now, seconds: cpuSeconds });
    const h = S.history.get(id) || [];
    h.push({ t: now, cpu, mem: s.value });
    if (h.length > HISTORY) h.shift();
    S.history.set(id, h);
  }
}

// ---- charts -----------------------------------------------------------------

function polyline(points, w, h, key, max) {
  const top = Math.max(max || 0, ...points.map((p) => p[key]), 1);
  const n = points.length;
  const xy = points.map((p, i) => `${n > 1 ? (i / (n - 1)) * w : w},${(h - (p[key] / top) * (h - 2) - 1).toFixed(1)}`);
  return svg('polyline', { points: xy.join(' ') });
}

function sparkline(points, key, label) {
  const s = svg('svg', { class: 'spark', viewBox: '0 0 120 24', preserveAspectRatio: 'none', role: 'img', 'aria-label': label });
  if (points.length) s.append(polyline(points.slice(-60), 120, 24, key));
  return s;
}

function chart(title, points, key, format, id, max) {
  const last = points.length ? points[points.length - 1][key] : undefined;
  const s = svg('svg', { id, viewBox: '0 0 600 140', preserveAspectRatio: 'none', role: 'img', 'aria-label': title, 'data-last': last === undefined ? '' : Math.round(last) });
  if (points.length) s.append(polyline(points, 600, 140, key, max));
  return el('div', { class: 'chart card' }, el('div', { class: 'muted' }, title), el('div', { class: 'now' }, last === undefined ? '-' : format(last)), s);
}

// ---- pages ------------------------------------------------------------------

function loginPage(message = '') {
  $('#nav').hidden = true;
  $('#logout').hidden = true;
  $('#who').textContent = '';
  const key = el('input', { type: 'password', id: 'key', autocomplete: 'off', placeholder: 'e2b_… or the metrics token' });
  const error = el('div', { class: 'error', id: 'login-error' }, message);
  const form = el('form', { class: 'card login', id: 'login', on: { submit: async (e) => {
    e.preventDefault();
    error.textContent = '';
    const r = await fetch('/console/api/session', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ key: key.value }), credentials: 'omit' });
    key.value = '';
    if (r.status !== 201) { error.textContent = 'That key is not one of this server\'s.'; return; }
    const doc = await r.json();
    S.session = doc.session;
    S.scope = doc.scope;
    follow(doc.session);
    sessionStorage.setItem('abx-session', doc.session);
    sessionStorage.setItem('abx-scope', doc.scope);
    route();
  } } },
  el('h1', {}, 'Log in'),
  el('p', { class: 'muted' }, 'An API key of this server shows its own sandboxes; the metrics token shows every sandbox and the host\'s pools.'),
  key, ' ', el('button', { type: 'submit', id: 'login-button' }, 'Log in'), error);
  $('#app').replaceChildren(form);
  key.focus();
  return null;
}

function endSession(message) {
  S.session = null;
  S.scope = null;
  sessionStorage.removeItem('abx-session');
  sessionStorage.removeItem('abx-scope');
  leave();
  loginPage(message);
}

async function tablePage() {
  const body = el('tbody', { id: 'sandboxes' });
  const table = el('table', {}, el('thead', {}, el('tr', {}, ...['Sandbox', 'State', 'Template', 'Age', 'Time left', 'CPU', 'Memory'].map((h) => el('th', {}, h)))), body);
  const empty = el('p', { class: 'muted', id: 'no-sandboxes', hidden: true }, 'No sandboxes.');
  $('#app').replaceChildren(el('h1', {}, 'Sandboxes'), table, empty);
  const refresh = async () => {
    const list = await apiJSON('/v2/sandboxes?state=running,paused&limit=100');
    const now = Date.now();
    const rows = list.map((sb) => {
      const h = S.history.get(sb.sandboxID) || [];
      const mem = h.length ? h[h.length - 1].mem : undefined;
      return el('tr', { 'data-sandbox': sb.sandboxID },
        el('td', {}, el('a', { href: `#/sandbox/${encodeURIComponent(sb.sandboxID)}` }, sb.sandboxID)),
        el('td', { class: `state-${sb.state}` }, sb.state),
        el('td', {}, sb.templateID),
        el('td', {}, duration((now - Date.parse(sb.startedAt)) / 1000)),
        el('td', {}, duration((Date.parse(sb.endAt) - now) / 1000)),
        el('td', {}, sparkline(h, 'cpu', 'CPU')),
        el('td', {}, sparkline(h, 'mem', 'memory'), ' ', human(mem)));
    });
    body.replaceChildren(...rows);
    empty.hidden = rows.length > 0;
  };
  await refresh();
  return { refresh };
}

function kv(pairs) {
  return el('div', { class: 'kv' }, ...pairs.flatMap(([k, v]) => [el('div', {}, k), el('div', {}, v)]));
}

async function sandboxPage(id) {
  let sb;
  try { sb = await apiJSON(`/sandboxes/${encodeURIComponent(id)}`); } catch (e) {
    $('#app').replaceChildren(el('h1', {}, 'Sandbox'), el('p', { class: 'error' }, `No such sandbox: ${e.message}`), el('a', { href: '#/' }, 'Back to the sandboxes'));
    return null;
  }
  await seedHistory(id);
  const details = el('div', { class: 'card', id: 'details' });
  const charts = el('div', { class: 'charts', id: 'charts' });
  const procs = el('tbody', { id: 'processes' });
  const net = el('div', { class: 'card', id: 'network' });
  const events = el('pre', { class: 'events', id: 'events' });
  const files = el('div', { class: 'card', id: 'files' });
  const status = el('div', { class: 'error', id: 'action-status' });
  const act = (label, f, cls) => el('button', { class: cls, id: `action-${label.toLowerCase().split(' ')[0]}`, on: { click: async () => {
    status.textContent = '';
    try { await f(); await refresh(); } catch (e) { status.textContent = e.message; }
  } } }, label);
  const actions = el('div', { class: 'actions' },
    act('Extend 5 min', async () => {
      const left = Math.max(0, (Date.parse(sb.endAt) - Date.now()) / 1000);
      await ok(api(`/sandboxes/${encodeURIComponent(id)}/timeout`, { method: 'POST', body: { timeout: Math.min(86400, Math.round(left + 300)) } }));
    }),
    act('Pause', () => ok(api(`/sandboxes/${encodeURIComponent(id)}/pause`, { method: 'POST' }))),
    act('Resume', () => ok(api(`/sandboxes/${encodeURIComponent(id)}/resume`, { method: 'POST', body: {} }))),
    act('Kill', async () => {
      if (!window.confirm(`Kill sandbox ${id}? Its processes and files are lost.`)) return;
      await ok(api(`/sandboxes/${encodeURIComponent(id)}`, { method: 'DELETE' }));
      location.hash = '#/';
    }, 'danger'));
  const term = el('div', { id: 'terminal' });
  $('#app').replaceChildren(
    el('h1', {}, 'Sandbox ', el('span', { id: 'sandbox-id' }, id)), actions, status, details, charts,
    el('h2', {}, 'Terminal'), term,
    el('h2', {}, 'Processes'), el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'PID'), el('th', {}, 'Command'))), procs),
    el('h2', {}, 'Network'), net,
    el('h2', {}, 'Files'), files,
    el('h2', {}, 'Events'), events);
  const terminal = startTerminal(sb, term);
  let cwd = '/home/user';
  const refreshFiles = () => listFiles(sb, cwd, files, (p) => { cwd = p; refreshFiles(); }).catch((e) => { files.textContent = `Files: ${e.message}`; });
  refreshFiles();

  async function refresh() {
    try { sb = await apiJSON(`/sandboxes/${encodeURIComponent(id)}`); } catch { location.hash = '#/'; return; }
    const now = Date.now();
    details.replaceChildren(kv([
      ['State', el('span', { class: `state-${sb.state}`, id: 'state' }, sb.state)], ['Template', sb.templateID],
      ['Started', new Date(sb.startedAt).toLocaleString()], ['Time left', duration((Date.parse(sb.endAt) - now) / 1000)],
      ['CPUs', sb.cpuCount], ['Memory', `${sb.memoryMB} MiB`], ['Disk', `${sb.diskSizeMB} MiB`],
      ['Metadata', JSON.stringify(sb.metadata || {})]]));
    const h = S.history.get(id) || [];
    charts.replaceChildren(
      chart('Memory', h, 'mem', human, 'chart-memory', metric('abx_sandbox_memory_limit_bytes', id)),
      chart('CPU (% of a core)', h, 'cpu', (v) => `${v.toFixed(1)} %`, 'chart-cpu', 100));
    const refused = metric('abx_sandbox_egress_refused_packets_total', id);
    net.replaceChildren(kv([
      ['Internet access', sb.allowInternetAccess ? 'allowed' : 'none'],
      ['Allowed out', ((sb.network || {}).allowOut || []).join(', ') || '-'],
      ['Denied out', ((sb.network || {}).denyOut || []).join(', ') || '-'],
      ['Sent / received', `${human(metric('abx_sandbox_network_transmit_bytes_total', id))} / ${human(metric('abx_sandbox_network_receive_bytes_total', id))}`],
      ['Packets refused', refused === undefined ? '-' : String(refused)],
      ['Recent denials', el('span', { id: 'denials' }, S.denials.get(id) || '-')]]));
    if (sb.state === 'running') {
      envdUnary(sb, 'process.Process/List', {}).then((doc) => {
        procs.replaceChildren(...(doc.processes || []).map((p) => el('tr', {}, el('td', {}, p.pid), el('td', {}, [p.config?.cmd, ...(p.config?.args || [])].join(' ')))));
      }).catch(() => {});
    }
    api('/events?format=json').then((r) => r.json()).then((doc) => {
      const mine = (doc.events || []).filter((e) => (e.sandbox_id || '').endsWith(`:${id}`));
      const denied = mine.filter((e) => e.type === 'denied').slice(-5).reverse();
      S.denials.set(id, denied.map((e) => `${e.destination}${e.port ? `:${e.port}` : ''}/${e.protocol} at ${e.time.slice(11, 19)}`).join(', ') || '-');
      const box = document.querySelector('#denials');
      if (box) box.textContent = S.denials.get(id);
      events.textContent = mine.map((e) => `${e.time}  ${e.type}${e.action ? ` (${e.action})` : ''}${e.mode ? ` ${e.mode}` : ''}${e.destination ? ` ${e.destination}${e.port ? `:${e.port}` : ''}` : ''}`).join('\n') || 'No events.';
    }).catch(() => {});
  }
  await refresh();
  return { refresh, leave: () => terminal.close() };
}

// The hour before the page opened, as the sandbox's supervisor sampled it
// (E2B's GET /sandboxes/ID/metrics?start=): what the charts begin with.
async function seedHistory(id) {
  try {
    const series = await apiJSON(`/sandboxes/${encodeURIComponent(id)}/metrics?start=${Math.floor(Date.now() / 1000) - 3600}`);
    const h = S.history.get(id) || [];
    const first = h.length ? h[0].t : Infinity;
    const before = series.map((m) => ({ t: m.timestampUnix * 1000, cpu: (m.cpuUsedPct || 0) * (m.cpuCount || 1), mem: m.memUsed }))
      .filter((p) => p.t < first);
    S.history.set(id, before.concat(h).slice(-HISTORY));
  } catch { /* the charts start now */ }
}

async function ok(promise) {
  const r = await promise;
  if (!r.ok) {
    let message = `${r.status}`;
    try { message = (await r.json()).message || message; } catch { /* not JSON */ }
    throw new Error(message);
  }
  return r;
}

// ---- a sandbox's files, through envd ------------------------------------------

async function listFiles(sb, dir, box, go) {
  const doc = await envdUnary(sb, 'filesystem.Filesystem/ListDir', { path: dir, depth: 1 });
  const entries = (doc.entries || []).sort((a, b) => a.name.localeCompare(b.name));
  const up = dir.replace(/\/[^/]*$/, '') || '/';
  const upload = el('input', { type: 'file', id: 'upload', on: { change: async () => {
    const f = upload.files[0];
    if (!f) return;
    const form = new FormData();
    form.append('file', f, f.name);
    const target = `${dir.replace(/\/$/, '')}/${f.name}`;
    await api(`/files?path=${encodeURIComponent(target)}`, { method: 'POST', body: form, headers: envdHeaders(sb) });
    go(dir);
  } } });
  box.replaceChildren(
    el('div', { class: 'muted' }, 'In ', el('code', { id: 'cwd' }, dir), ' ', dir !== '/' ? el('button', { on: { click: () => go(up) } }, 'Up') : null, ' Upload: ', upload),
    el('table', {}, el('tbody', {}, ...entries.map((e) => el('tr', {},
      el('td', {}, e.type === 'FILE_TYPE_DIRECTORY' || e.type === 'directory'
        ? el('a', { href: '#', on: { click: (ev) => { ev.preventDefault(); go(e.path); } } }, `${e.name}/`)
        : el('a', { href: '#', class: 'download', on: { click: (ev) => { ev.preventDefault(); download(sb, e.path, e.name); } } }, e.name)),
      el('td', { class: 'muted' }, e.size !== undefined ? human(Number(e.size)) : ''))))));
}

async function download(sb, path, name) {
  const r = await api(`/files?path=${encodeURIComponent(path)}`, { headers: envdHeaders(sb) });
  if (!r.ok) return;
  const url = URL.createObjectURL(await r.blob());
  const a = el('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// ---- a terminal: envd's process API with a pty, over the data plane -----------

function b64(bytes) { let s = ''; for (const b of bytes) s += String.fromCharCode(b); return btoa(s); }
function unb64(text) { const s = atob(text); const out = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i); return out; }

function envelope(obj) {
  const json = new TextEncoder().encode(JSON.stringify(obj));
  const out = new Uint8Array(5 + json.length);
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, 5);
  return out;
}

function startTerminal(sb, box) {
  if (typeof window.Terminal !== 'function') {
    box.textContent = 'The terminal was not built into this abx (its npm package @xterm/xterm was not installed at build time).';
    return { close() {} };
  }
  const term = new window.Terminal({ cols: 100, rows: 18, convertEol: false, fontSize: 13 });
  term.open(box);
  const ctl = new AbortController();
  let pid = null;
  // keystrokes in order: one SendInput at a time, what was typed meanwhile in the next
  let typed = '';
  let sending = false;
  const flush = async () => {
    if (sending || pid === null || !typed) return;
    sending = true;
    const bytes = new TextEncoder().encode(typed);
    typed = '';
    await api('/process.Process/SendInput', { method: 'POST', body: JSON.stringify({ process: { pid }, input: { pty: b64(bytes) } }), headers: envdHeaders(sb, { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }) }).catch(() => {});
    sending = false;
    flush();
  };
  const send = (data) => { typed += data; flush(); };
  term.onData(send);
  (async () => {
    if (sb.state !== 'running') { term.write('The sandbox is not running.\r\n'); return; }
    const r = await api('/process.Process/Start', { method: 'POST', body: envelope({ process: { cmd: '/bin/bash', args: ['-l'], envs: { TERM: 'xterm-256color' } }, pty: { size: { cols: 100, rows: 18 } } }), headers: envdHeaders(sb, { 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' }) });
    if (!r.ok || !r.body) { term.write(`Could not start a shell (${r.status}).\r\n`); return; }
    const reader = r.body.getReader();
    let buf = new Uint8Array(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const joined = new Uint8Array(buf.length + value.length);
      joined.set(buf);
      joined.set(value, buf.length);
      buf = joined;
      while (buf.length >= 5) {
        const len = new DataView(buf.buffer, buf.byteOffset).getUint32(1);
        if (buf.length < 5 + len) break;
        const flags = buf[0];
        const msg = JSON.parse(new TextDecoder().decode(buf.subarray(5, 5 + len)));
        buf = buf.slice(5 + len);
        if (flags & 2) continue; // the end of the stream
        const ev = msg.event || {};
        if (ev.start) { pid = ev.start.pid; box.setAttribute('data-pid', pid); flush(); }
        if (ev.data && ev.data.pty) term.write(unb64(ev.data.pty));
        if (ev.end) term.write('\r\n[the shell ended]\r\n');
      }
    }
  })().catch(() => {});
  return { close() { ctl.abort(); if (pid !== null) api('/process.Process/SendSignal', { method: 'POST', body: JSON.stringify({ process: { pid }, signal: 'SIGNAL_SIGKILL' }), headers: envdHeaders(sb, { 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }) }).catch(() => {}); term.dispose(); } };
}

// ---- templates, volumes, pools -----------------------------------------------

async function listPage(title, path, columns) {
  const doc = await apiJSON(path);
  const rows = (Array.isArray(doc) ? doc : []).map((t) => el('tr', {}, ...columns.map(([, f]) => el('td', {}, f(t)))));
  $('#app').replaceChildren(el('h1', {}, title), el('table', {}, el('thead', {}, el('tr', {}, ...columns.map(([h]) => el('th', {}, h)))), el('tbody', {}, ...rows)),
    rows.length ? null : el('p', { class: 'muted' }, `No ${title.toLowerCase()}.`));
  return null;
}

async function poolsPage() {
  const box = el('div', { class: 'card', id: 'pools' });
  $('#app').replaceChildren(el('h1', {}, 'Pools'), box);
  const refresh = async () => {
    const v = (n) => { const x = metric(n); return x === undefined ? '-' : String(x); };
    box.replaceChildren(kv([
      ['Uid ranges used / free', `${v('abx_pool_uid_ranges_used')} / ${v('abx_pool_uid_ranges_free')}`],
      ['Network addresses used / free', `${v('abx_pool_net_addresses_used')} / ${v('abx_pool_net_addresses_free')}`],
      ['Warm sandboxes ready / target', `${v('abx_pool_warm_ready')} / ${v('abx_pool_warm_target')}`],
      ['Created / killed (this server)', `${v('abx_creates_total')} / ${v('abx_kills_total')}`]]));
  };
  await refresh();
  return { refresh };
}

// ---- routing ------------------------------------------------------------------

function leave() {
  if (S.page && S.page.leave) S.page.leave();
  S.page = null;
}

async function route() {
  leave();
  if (!S.session) { loginPage(); return; }
  $('#nav').hidden = false;
  $('#logout').hidden = false;
  $('#nav-pools').hidden = S.scope !== 'admin';
  $('#who').textContent = S.scope === 'admin' ? 'administrator: every sandbox' : 'your sandboxes';
  const hash = location.hash || '#/';
  const m = /^#\/sandbox\/(.+)$/.exec(hash);
  try {
    if (m) S.page = await sandboxPage(decodeURIComponent(m[1]));
    else if (hash === '#/templates') S.page = await listPage('Templates', '/templates', [['Name', (t) => (t.aliases || [])[0] || t.templateID], ['Id', (t) => t.templateID], ['Built', (t) => t.buildStatus || t.createdAt || '']]);
    else if (hash === '#/volumes') S.page = await listPage('Volumes', '/volumes', [['Name', (v) => v.name], ['Id', (v) => v.volumeID || v.id || '']]);
    else if (hash === '#/pools') S.page = await poolsPage();
    else S.page = await tablePage();
  } catch (e) {
    if (S.session) $('#app').replaceChildren(el('p', { class: 'error' }, e.message));
  }
}

// The host's events as they happen (GET /events, server-sent): a page
// that shows what an event changes refreshes at once, not at its next tick.
async function follow(session) {
  while (S.session === session) {
    try {
      const r = await fetch('/events?after=end', { headers: { 'X-Abx-Session': session }, credentials: 'omit', cache: 'no-store' });
      if (r.status === 401 || !r.body) return;
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done || S.session !== session) break;
        buf += decoder.decode(value, { stream: true });
        if (buf.includes('\n\n')) {
          buf = buf.slice(buf.lastIndexOf('\n\n') + 2);
          if (S.page && S.page.refresh) S.page.refresh().catch(() => {});
        }
      }
    } catch { /* the server went away: try again */ }
    await new Promise((r) => setTimeout(r, 2000));
  }
}

async function tick() {
  if (S.session) {
    await sample();
    if (S.page && S.page.refresh) await S.page.refresh().catch(() => {});
  }
  S.timer = setTimeout(tick, SAMPLE_MS);
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', () => {
  $('#logout').addEventListener('click', async () => {
    await fetch('/console/api/session', { method: 'DELETE', headers: { 'X-Abx-Session': S.session || '' }, credentials: 'omit' }).catch(() => {});
    endSession('Logged out.');
  });
  route();
  if (S.session) follow(S.session);
  sample().then(() => { S.timer = setTimeout(tick, SAMPLE_MS); });
});
