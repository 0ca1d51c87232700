// Evolve's browser UI: chat with token streaming, turn cards, permission dialogs,
// sessions, memory, skills, tools and MCP levels, search, export, profile, theme and
// language. It talks only to the same-origin web API of `evolve serve`; model and user
// text is only ever set as text (see md.js). Every failure ends in a visible message.
'use strict';
const $ = s => document.querySelector(s);
const enc = encodeURIComponent;
const S = { session: null, sessions: [], busy: null, perms: [], perm: null, view: 'chat', pendingList: [], shown: 0, images: [], files: [],
  runs: new Map(), mcpErrors: {} }; // runs: session id → its answer still coming in (shown or in the background)

// ---------------------------------------------------------------- API and errors
async function errText(r) {
  const s = await r.text().catch(() => '');
  try {
    const j = JSON.parse(s);
    if (j.error && j.error.message) return webText(j.error.message);
  } catch { /* not JSON: show the text */ }
  return `HTTP ${r.status} ${r.statusText} ${s.slice(0, 200)}`.trim();
}

/** A server message as this page says it: a command to run in a shell (`evolve mcp tools
 * x`) is left out (the page has the button for it), and known messages are said in the
 * UI's language. */
function webText(msg) {
  let s = String(msg || '')
    .replace(/\s*\([^()]*`evolve [^`]*`[^()]*\)/g, '')
    .replace(/\s*(?:—|;|,)\s*(?:or\s+)?(?:run|use|check it with|see|with)\s+`evolve [^`]*`[^.;—)]*/g, '')
    .replace(/\s*—\s*is the server running\? set OPENAI_BASE_URL/g, '');
  if (LANG !== 'zh') return s;
  for (const [re, key] of SERVER_TEXT) {
    const m = s.match(re);
    if (m) return t(key, ...m.slice(1));
  }
  return s;
}
// Server messages the page says in 中文 (the rest stays as the server wrote it).
const SERVER_TEXT = [
  [/^cannot reach the model at (\S+): (.*)$/s, 'srvCannotReach'],
  [/^the model at (\S+) timed out \((.*)\)$/s, 'srvTimedOut'],
  [/^the model server at (\S+) answered HTTP (\d+)(?::\s*(.*))?$/s, 'srvStatus'],
  [/^no session (\S+)/, 'srvNoSession'],
];

/** A same-origin request; resolves to the JSON answer, rejects with the API's message. */
async function req(method, path, body, signal) {
  let r;
  try {
    const raw = body instanceof Blob; // a file's bytes as they are
    r = await fetch(path, {
      method, signal, credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': raw ? 'application/octet-stream' : 'application/json' },
      body: body === undefined || raw ? body : JSON.stringify(body),
    });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    // Not an error of this request: the server is gone (stopped, restarting). Said once,
    // in the page, with Retry (see `offline`), never as a toast per request.
    throw Object.assign(new Error(t('errNetwork', e.message)), { offline: true });
  }
  offline(false);
  if (r.status === 401) {
    location.href = '/login';
    throw new Error(t('errAuth'));
  }
  if (!r.ok) throw Object.assign(new Error(await errText(r)), { status: r.status });
  return r;
}
const api = async (method, path, body) => {
  const r = await req(method, path, body);
  return r.status === 204 ? null : r.json();
};

/** Whether the Evolve server answers: when it does not, one notice at the top of the page
 * says so, with Retry (which reads the chats, the model's state and the page again). */
function offline(down) {
  const box = $('#offline');
  if (!box || box.hidden === !down) return;
  box.hidden = !down;
  if (down) {
    $('#offline-where').textContent = t('offlineWhere', location.host);
    for (const x of $('#toasts').querySelectorAll('.toast.error')) x.remove();
  }
}
async function retryServer() {
  $('#offline-retry').disabled = true;
  try {
    await api('GET', '/v1/config');
    offline(false);
    await loadSessions();
    loadView();
    checkModel();
  } catch (e) { problem(e); } finally { $('#offline-retry').disabled = false; }
}

function toast(msg, kind = 'error') {
  const box = $('#toasts');
  // The same message twice is one toast (shown again for its full time).
  for (const old of box.children) if (old.firstChild.textContent === msg) old.remove();
  const el = h('div', 'toast ' + kind);
  el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  el.dataset.testid = 'toast';
  el.append(h('span', null, msg));
  const x = el.appendChild(h('button', 'icon', '×'));
  x.type = 'button';
  x.setAttribute('aria-label', t('close'));
  x.onclick = () => el.remove();
  box.append(el);
  while (box.children.length > 4) box.firstChild.remove();
  // Every toast goes away (an error after longer); not while the pointer is on it.
  const ms = kind === 'error' ? 8000 : 3000;
  let timer = setTimeout(() => el.remove(), ms);
  el.onmouseenter = () => clearTimeout(timer);
  el.onmouseleave = () => { timer = setTimeout(() => el.remove(), ms); };
}
/** Wraps an async handler: a failure becomes a toast, never silence. */
const guard = fn => async (...a) => {
  try { return await fn(...a); } catch (e) { problem(e); }
};
/** A failure shown: the server gone is the notice at the top; anything else a toast. */
function problem(e) {
  if (e.name === 'AbortError') return;
  if (e.offline) offline(true); else toast(e.message);
}

/** Like `guard`, for a form: the server's 400 is shown next to the field it names
 * (`data-field` words; else the first field), not only as a toast. */
const formGuard = fn => async e => {
  const form = e.target.closest('form');
  clearFieldErrors(form);
  try { return await fn(e); } catch (err) {
    if (err.status !== 400 || !form) return problem(err);
    const fields = [...form.querySelectorAll('[data-field]')];
    const f = fields.find(x => new RegExp(`\\b(${x.dataset.field})\\b`, 'i').test(err.message)) || fields[0];
    if (!f) return toast(err.message);
    const p = h('small', 'field-err', err.message);
    p.id = f.id + '-err';
    p.setAttribute('role', 'alert');
    p.dataset.testid = 'field-error';
    f.setAttribute('aria-invalid', 'true');
    f.setAttribute('aria-describedby', p.id);
    (f.closest('label') || f).after(p);
    f.focus();
  }
};
function clearFieldErrors(form) {
  if (!form) return;
  for (const p of form.querySelectorAll('.field-err')) p.remove();
  for (const f of form.querySelectorAll('[aria-invalid]')) { f.removeAttribute('aria-invalid'); f.removeAttribute('aria-describedby'); }
}

/** An element whose text is the translation of `key` (re-translated on a language switch). */
function ht(tag, cls, key, ...args) {
  const e = h(tag, cls, t(key, ...args));
  if (!args.length) e.dataset.i18n = key;
  return e;
}

/** A button with text (or a translated label when `key` is given). */
function btn(text, cls, onclick, key) {
  const b = key ? ht('button', cls, key) : h('button', cls, text);
  b.type = 'button';
  b.onclick = onclick;
  return b;
}

/** An in-page confirm/prompt; resolves to true / the text, or null when cancelled. */
function ask(msg, { input = null, danger = false, ok = t('ok') } = {}) {
  const d = $('#ask'), f = $('#ask-input'), okb = $('#ask-ok');
  $('#ask-msg').textContent = msg;
  f.hidden = input == null;
  f.value = input ?? '';
  okb.textContent = ok;
  okb.className = danger ? 'danger' : 'primary';
  d.returnValue = '';
  d.showModal();
  if (input != null) f.select();
  return new Promise(res => d.addEventListener('close', () =>
    res(d.returnValue === 'ok' ? (input == null ? true : f.value) : null), { once: true }));
}

const ago = secs => secs ? new Date(secs * 1000).toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined,
  { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }) : '';
const fmt = v => v == null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
/** A level badge; its title says what the level means (in the UI's language). */
const lvl = l => {
  const e = h('span', 'lvl ' + (l || ''), l || '?');
  if (l && /^L[0-5]$/.test(l)) e.title = t('lvl_' + l);
  return e;
};
function pretty(args) {
  try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return fmt(args); }
}

// ---------------------------------------------------------------- layout and views
function drawer(open) { document.body.classList.toggle('drawer', open); }

function show(view) {
  S.view = view;
  // An error said about the page left behind does not follow into the next one.
  for (const x of $('#toasts').querySelectorAll('.toast.error')) x.remove();
  for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== 'view-' + view;
  for (const b of document.querySelectorAll('#nav button')) {
    b.classList.toggle('on', b.dataset.view === view);
    b.setAttribute('aria-current', b.dataset.view === view ? 'page' : 'false');
  }
  setTitle();
  drawer(false);
  loadView();
  if (view === 'search') $('#search-q').focus();
}

/** Reads the shown pane's data from the server again (and draws it). */
function loadView() {
  const load = { memory: loadMemory, skills: loadSkills, tools: loadTools, tasks: loadTasks, prompt: loadPrompt, settings: loadSettings }[S.view];
  if (load) guard(load)();
}

function setTitle() {
  const s = S.sessions.find(x => x.id === S.session);
  $('#title').textContent = S.view !== 'chat' ? t('nav_' + S.view)
    : S.session ? (s && s.title) || t('untitled') : t('newChat');
  $('#export').hidden = S.view !== 'chat' || !S.session;
  document.title = $('#title').textContent + ' · Evolve';
}

function setSession(id) {
  if (!id || id === S.session) return;
  S.session = id;
  history.replaceState(null, '', '#s=' + enc(id));
  for (const f of ['md', 'html', 'json']) $('#export-' + f).href = `/v1/sessions/${enc(id)}/export?format=${f}`;
  setTitle();
  renderSessions();
}

function theme() {
  const mode = store.get('evolve.theme') || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  document.documentElement.dataset.theme = mode;
  const chosen = store.get('evolve.theme');
  $('#theme-toggle').textContent = !chosen ? '◐' : mode === 'dark' ? '☀' : '☾';
  $('#theme-toggle').title = t(chosen ? 'theme_' + chosen : 'theme_system');
  $('#theme-toggle').setAttribute('aria-label', $('#theme-toggle').title);
  const accent = store.get('evolve.accent') || 'blue';
  document.documentElement.dataset.accent = accent;
  $('#accent').value = accent;
}

/** Ctrl+K (⌘K): search. Escape closes an open menu, the drawer, or leaves the search box
 * for the chat. ? (outside a text field) lists the shortcuts. */
function shortcuts(e) {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test((document.activeElement || {}).tagName || '');
  if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === 'k') {
    e.preventDefault();
    show('search');
    $('#search-q').select();
  } else if (e.key === 'Escape') {
    const menu = document.querySelector('details.menu[open]');
    if (menu) { menu.open = false; menu.querySelector('summary').focus(); }
    else if (document.body.classList.contains('drawer')) drawer(false);
    else if (document.activeElement === $('#search-q')) show('chat');
  } else if (e.key === '?' && !typing && !e.ctrlKey && !e.metaKey && !document.querySelector('dialog[open]')) {
    e.preventDefault();
    ask(t('shortcutList'));
  }
}

/** The composer's hint: the whole one where it fits, a short one on a phone. */
const NARROW = matchMedia('(max-width: 600px)');
function placeholder() { $('#input').placeholder = t(NARROW.matches ? 'inputPhShort' : 'inputPh'); }

function setLang(lang) {
  LANG = lang;
  store.set('evolve.lang', lang);
  applyI18n();
  placeholder();
  theme();
  $('#lang-toggle').textContent = lang === 'zh' ? 'English' : '中文';
  fillLevelSelects();
  renderSessions();
  setTitle();
  renderModel();
  // What the server's data drew in the old language is drawn again.
  if (S.view !== 'chat') loadView();
  else if (S.session && !S.busy && document.querySelector('#messages .msg')) openSession(S.session);
  renderSettings(); // settings.js
}

// ---------------------------------------------------------------- sessions
async function loadSessions() {
  const [list, tasks] = await Promise.all([api('GET', '/v1/sessions'),
    api('GET', '/v1/tasks').catch(() => ({ data: [] }))]);
  S.sessions = list.data || [];
  S.listed = true;
  liveSessions();
  // The chats of scheduled tasks are grouped apart (a task adds a turn every run).
  S.taskSessions = new Set((tasks.data || []).map(x => x.session));
  renderSessions();
  setTitle();
}

/** A chat whose first answer is still coming in is not stored yet: it is listed from
 * its question until the server lists it. */
function liveSessions() {
  for (const r of S.runs.values()) {
    if (!S.sessions.some(s => s.id === r.session)) S.sessions.unshift({ id: r.session, title: r.title, updated_at: r.started });
  }
}

function renderSessions() {
  const q = $('#session-filter').value.trim().toLowerCase(), top = $('#sessions');
  top.replaceChildren();
  const group = h('details', 'task-chats'), inner = h('ul');
  group.dataset.testid = 'task-chats';
  group.open = !!q || (S.taskSessions || new Set()).has(S.session);
  for (const s of S.sessions) {
    const ul = (S.taskSessions || new Set()).has(s.id) ? inner : top;
    const title = s.title || t('untitled');
    if (q && !title.toLowerCase().includes(q)) continue;
    const li = h('li', s.id === S.session ? 'on' : '');
    li.dataset.testid = 'session-item';
    li.dataset.id = s.id;
    const open = li.appendChild(btn('', 'open', () => openSession(s.id)));
    open.append(h('span', 'ttl', title));
    open.title = title;
    const run = S.runs.get(s.id);
    if (run) {
      // Still answering, or waiting for a permission answer: said instead of the date.
      const live = open.appendChild(ht('small', 'live' + (run.perm ? ' ask' : ''), run.perm ? 'liveWaiting' : 'liveAnswering'));
      live.dataset.testid = 'session-live';
    } else open.append(h('small', null, ago(s.updated_at)));
    const r = li.appendChild(btn('✎', 'icon', () => renameSession(s)));
    const d = li.appendChild(btn('✕', 'icon', () => deleteSession(s)));
    // One Tab stop per chat: rename and delete are reached on the chat that is open.
    if (s.id !== S.session) r.tabIndex = d.tabIndex = -1;
    r.setAttribute('aria-label', t('rename') + ': ' + title);
    d.setAttribute('aria-label', t('delete') + ': ' + title);
    r.title = t('rename');
    d.title = t('delete');
    r.dataset.testid = 'session-rename';
    d.dataset.testid = 'session-delete';
    ul.append(li);
  }
  if (inner.children.length) {
    group.append(h('summary', null, t('taskChats', inner.children.length)), inner);
    top.appendChild(h('li', 'group')).append(group);
  }
  if (!top.children.length) top.append(h('li', 'mut pad', t(!S.listed ? 'loading' : S.sessions.length ? 'noMatch' : 'noSessions')));
}

const renameSession = guard(async s => {
  const title = await ask(t('renamePrompt'), { input: s.title || '' });
  if (title == null || !title.trim()) return;
  await api('PATCH', `/v1/sessions/${enc(s.id)}`, { title: title.trim() });
  await loadSessions();
});

const deleteSession = guard(async s => {
  if (!await ask(t('deleteSession', s.title || s.id), { danger: true, ok: t('delete') })) return;
  await api('DELETE', `/v1/sessions/${enc(s.id)}`);
  if (s.id === S.session) newChat();
  await loadSessions();
  toast(t('deleted'), 'ok');
});

/** Shows a running answer of the chat just opened again: its question and the answer so
 * far (which kept growing in the background), Stop, and a permission question it waits on. */
function rejoin(run) {
  if (!run || S.busy) return;
  const box = $('#messages');
  emptyState.remove();
  // The turn may have been stored meanwhile: its live copy replaces the stored one.
  for (const el of [...box.children]) if (el.dataset.turn === String(run.n)) el.remove();
  box.append(run.u, run.a.el);
  run.attached = true;
  S.run = run;
  S.busy = run.ctl;
  busy(true);
  actions();
  box.scrollTop = box.scrollHeight;
  if (run.perm) permAsk(run.perm);
}

/** Leaves a running answer to finish in the background (see `send`). */
function detach() {
  if (!S.run) return;
  S.run.attached = false;
  S.run = null;
  S.busy = null;
  busy(false);
  permReset();
}

function newChat() {
  detach();
  S.session = null;
  history.replaceState(null, '', location.pathname);
  $('#messages').replaceChildren(emptyState);
  $('#pending-banner').hidden = true;
  $('#grants').hidden = true;
  renderSessions();
  show('chat');
  $('#input').focus();
}

const openSession = guard(async id => {
  detach();
  const box = $('#messages');
  S.session = null;
  setSession(id);
  show('chat');
  box.replaceChildren(h('p', 'mut pad', t('loading')));
  let data;
  try {
    data = await api('GET', `/v1/sessions/${enc(id)}/messages`);
  } catch (e) {
    newChat();
    throw e;
  }
  if (S.session !== id) return;
  renderHistory(data || {});
  rejoin(S.runs.get(id));
  await checkPending();
  await loadGrants();
});

// ---------------------------------------------------------------- messages
let emptyState;

function bubble(role, text) {
  const el = h('div', 'msg ' + role), body = h('div', 'body');
  el.dataset.testid = 'msg-' + role;
  el.append(ht('div', 'who', role === 'user' ? 'you' : 'assistant'));
  const tools = el.appendChild(h('div', 'tools'));
  el.append(body);
  const b = { el, body, tools, text: text || '' };
  el.bubble = b;
  return b;
}

function userMsg(text, turn, images = []) {
  const b = bubble('user', text);
  b.images = images;
  mdText(b.body, text);
  thumbs(b);
  b.el.dataset.turn = turn;
  return b.el;
}

/** A question's images under its text: thumbnails that enlarge on click. */
function thumbs(b) {
  if (!b.images || !b.images.length) return;
  const row = b.body.appendChild(h('div', 'thumbs'));
  for (const src of b.images) {
    const img = row.appendChild(h('img', 'thumb'));
    img.src = src;
    img.alt = '';
    img.tabIndex = 0;
    img.dataset.testid = 'thumb';
    img.onclick = img.onkeydown = e => { if (e.type === 'click' || e.key === 'Enter') enlarge(src, ''); };
  }
}

// ---------------------------------------------------------------- images to send
// What the server takes (llm/image.rs): PNG, JPEG, GIF or WebP, up to 2 MiB, 4 a message.
// A bigger picture (a phone photo) is scaled down here to IMAGE_SIDE pixels and sent as
// JPEG, so it fits and costs the model less.
const MAX_IMAGES = 4, IMAGE_SIDE = 1568, IMAGE_BYTES = 1536 * 1024;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

async function imageData(file) {
  const name = file.name || file.type || '?';
  if (!IMAGE_TYPES.includes(file.type)) throw new Error(t('notImage', name));
  const unreadable = () => new Error(t('imageUnreadable', name));
  const raw = await new Promise((ok, no) => {
    const r = new FileReader();
    r.onload = () => ok(r.result);
    r.onerror = () => no(unreadable());
    r.readAsDataURL(file);
  });
  const img = await new Promise((ok, no) => {
    const i = new Image();
    i.onload = () => ok(i);
    i.onerror = () => no(unreadable());
    i.src = raw;
  });
  const side = Math.max(img.naturalWidth, img.naturalHeight);
  if (file.size <= IMAGE_BYTES && side <= IMAGE_SIDE) return raw;
  const k = Math.min(1, IMAGE_SIDE / side), c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(img.naturalWidth * k));
  c.height = Math.max(1, Math.round(img.naturalHeight * k));
  const g = c.getContext('2d');
  g.fillStyle = '#fff'; // JPEG has no transparency
  g.fillRect(0, 0, c.width, c.height);
  g.drawImage(img, 0, 0, c.width, c.height);
  return c.toDataURL('image/jpeg', 0.85);
}

function renderAttachments() {
  const box = $('#attachments');
  const files = S.files.map((f, i) => {
    const c = h('span', 'chip file', f.path);
    c.dataset.testid = 'attached-file';
    const x = c.appendChild(h('button', 'icon', '×'));
    x.type = 'button';
    x.title = t('removeFile');
    x.setAttribute('aria-label', t('removeFile'));
    x.onclick = () => { S.files.splice(i, 1); renderAttachments(); };
    return c;
  });
  box.replaceChildren(...files, ...S.images.map((src, i) => {
    const f = h('figure', 'att');
    const img = f.appendChild(h('img'));
    img.src = src;
    img.alt = '';
    img.dataset.testid = 'attached';
    const x = f.appendChild(h('button', 'icon', '×'));
    x.type = 'button';
    x.title = t('removeImage');
    x.setAttribute('aria-label', t('removeImage'));
    x.dataset.testid = 'remove-image';
    x.onclick = () => { S.images.splice(i, 1); renderAttachments(); };
    return f;
  }));
  box.hidden = !S.images.length && !S.files.length;
}

// Other files go into the workspace (POST /v1/workspace/files), and the message names
// them so the model can read them with its file tools. The server's body limit: 4 MiB.
const MAX_FILE_BYTES = 4 * 1024 * 1024;
const sizeText = n => n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KB' : (n / 1048576).toFixed(1) + ' MB';

async function uploadFile(file) {
  if (file.size > MAX_FILE_BYTES) throw new Error(t('fileTooBig', file.name, '4 MiB'));
  const path = replace => '/v1/workspace/files?name=' + encodeURIComponent(file.name) + (replace ? '&replace=true' : '');
  let r;
  try {
    r = await req('POST', path(false), file);
  } catch (e) {
    if (e.status !== 409 || /folder/.test(e.message)) throw e;
    // Never replaced without asking.
    if (!await ask(t('replaceFile', file.name), { danger: true, ok: t('replace') })) return toast(t('notReplaced', file.name), 'info');
    r = await req('POST', path(true), file);
  }
  const j = await r.json();
  S.files = S.files.filter(f => f.path !== j.path);
  S.files.push(j);
  renderAttachments();
}

/** The line a message gets for the files added with it. */
const filesNote = files => '\n\n[' + t('filesAdded', files.map(f => `${f.path} (${sizeText(f.bytes)})`).join(', ')) + ']';

/** Adds picked, pasted or dropped files to the message being written: pictures as
 * images, anything else into the workspace. */
const attach = guard(async files => {
  for (const f of files) {
    if (!IMAGE_TYPES.includes(f.type)) { await uploadFile(f); continue; }
    if (S.images.length >= MAX_IMAGES) throw new Error(t('tooManyImages', MAX_IMAGES));
    S.images.push(await imageData(f));
    renderAttachments();
  }
});

/** A collapsed block: a system message. */
function fold(summary, text, cls) {
  const d = h('details', 'fold ' + (cls || ''));
  d.append(h('summary', null, summary), h('pre', null, text));
  return d;
}

/** What the server says of a call (`run`, `refused`, `no such tool` …), in the UI's language. */
const answerText = a => {
  const key = 'ans_' + (a || '').replace(/\W+/g, '_');
  return !a || a === 'run' ? '' : key in I18N.en ? t(key) : a;
};

/** One card per tool call, the same live and after a reload: level, tool, what came of
 * it, and (collapsed) the arguments and the output. */
function toolCard(c) {
  const d = h('details', 'chip'), s = d.appendChild(h('summary'));
  d.dataset.testid = 'tool-chip';
  d.dataset.id = c.id || '';
  s.append(lvl(c.level), ' ', h('code', null, c.name), ' ', h('span', 'state', t('running')));
  d.append(ht('div', 'cap', 'arguments'), h('pre', 'args', pretty(c.arguments)));
  return d;
}

/** How far a running MCP tool says it is: a bar when it knows the total, and its line. */
function progressCard(d, p) {
  let bar = d.querySelector('progress');
  if (!bar) {
    bar = h('progress');
    bar.dataset.testid = 'tool-progress';
    d.querySelector('summary').append(' ', bar);
  }
  if (p.total > 0) { bar.max = p.total; bar.value = Math.min(p.progress, p.total); } else bar.removeAttribute('value');
  const n = x => (Number.isInteger(x) ? String(x) : x.toFixed(2));
  d.querySelector('.state').textContent = [t('running'), p.total > 0 ? n(p.progress) + '/' + n(p.total) : n(p.progress), p.message]
    .filter(Boolean).join(' · ');
}

function settleCard(d, c, output) {
  d.dataset.done = '1';
  const bar = d.querySelector('progress');
  if (bar) bar.remove();
  d.classList.add(c.ran && !c.is_error ? 'good' : 'bad');
  if (c.level) d.querySelector('.lvl').replaceWith(lvl(c.level));
  d.querySelector('.state').textContent = [t(c.ran ? (c.is_error ? 'failed' : 'ran') : 'refused'),
    answerText(c.answer)].filter(Boolean).join(' · ');
  if (output != null && c.ran) d.append(ht('div', 'cap', 'output'), h('pre', 'out', output));
}

/** A sub-turn of a `subtasks` call (evolve.subtask): nested in the call's card, each
 * with its own tool cards and, once done, its answer. */
function subtaskEvent(tools, j) {
  const card = [...tools.children].reverse().find(c => c.querySelector('code').textContent === 'subtasks');
  if (!card) return;
  let box = card.querySelector('.subtasks');
  if (!box) {
    box = card.appendChild(h('div', 'subtasks'));
    card.open = true;
  }
  let sub = box.querySelector(`[data-index="${j.index}"]`);
  if (!sub) {
    sub = box.appendChild(h('div', 'subtask'));
    sub.dataset.index = j.index;
    sub.dataset.testid = 'subtask';
    const head = sub.appendChild(h('div', 'head'));
    head.append(h('b', null, j.index + '. '), h('span', 'task', j.task || ''), ' ', h('span', 'state', t('running')));
    sub.append(h('div', 'sub-tools'));
  }
  const subTools = sub.querySelector('.sub-tools');
  if (j.phase === 'tool_start') subTools.append(toolCard(j));
  else if (j.phase === 'tool_end') {
    const c = [...subTools.children].find(x => !x.dataset.done && x.querySelector('code').textContent === j.name) ||
      subTools.appendChild(toolCard(j));
    settleCard(c, j, j.output);
  } else if (j.phase === 'end') {
    sub.classList.add(j.failed ? 'bad' : 'good');
    sub.querySelector('.state').textContent = j.failed ? t('failed') + ' · ' + j.failed : t('ran') + ' · ' + j.ms + ' ms';
    if (j.reply) {
      const r = sub.appendChild(h('div', 'sub-reply'));
      r.dataset.testid = 'subtask-reply';
      md(j.reply, r);
    }
  }
}

/** Below an answer that failed or was stopped: why, and Retry (answers the turn again). */
function failNote(el, why, stopped) {
  const p = el.appendChild(h('p', stopped ? 'note' : 'err', why));
  p.dataset.testid = 'turn-failed';
  const b = p.appendChild(h('button', 'retry', t('retry')));
  b.type = 'button';
  b.dataset.testid = 'retry';
  b.onclick = () => redo(el.dataset.turn);
  return p;
}

/** Copy on every message; Edit on the last question and Regenerate on the last answer. */
function actions() {
  const box = $('#messages');
  for (const a of box.querySelectorAll('.acts')) a.remove();
  const msgs = [...box.querySelectorAll(':scope > .msg')];
  const last = msgs.length && msgs[msgs.length - 1].dataset.turn;
  for (const el of msgs) {
    const row = el.appendChild(h('div', 'acts'));
    const b = el.bubble;
    row.append(btn('', 'link', () => copyText(b.text || b.body.textContent)
      .then(() => toast(t('copied'), 'ok'), e => toast(e.message)), 'copy'));
    // 👍 / 👎 on every stored answer: the person's own grade of it.
    if (el.classList.contains('assistant') && S.session && el.dataset.turn && !el.querySelector('[data-testid=retry]') &&
      (!S.busy || el.dataset.turn !== last)) row.append(...rateButtons(el));
    if (S.busy || !last || el.dataset.turn !== last) continue;
    if (el.classList.contains('user')) {
      const e = row.appendChild(btn('', 'link', () => editQuestion(el), 'edit'));
      e.dataset.testid = 'edit';
    } else if (!el.querySelector('[data-testid=retry]')) {
      const r = row.appendChild(btn('', 'link', () => redo(last), 'regenerate'));
      r.dataset.testid = 'regenerate';
    }
  }
}

/** 👍 and 👎 under an answer: pressed shows the person's grade (kept by the server as the
 * turn's evaluation; a 👍 may teach a style note). */
function rateButtons(el) {
  const n = el.dataset.turn, sid = S.session;
  return ['up', 'down'].map(r => {
    const b = btn(r === 'up' ? '👍' : '👎', 'link rate', guard(async () => {
      const j = await api('PUT', `/v1/sessions/${enc(sid)}/turns/${n}/rating`, { rating: r });
      el.dataset.rating = j.rating;
      for (const x of el.querySelectorAll('.rate')) x.setAttribute('aria-pressed', String(x.dataset.rating === j.rating));
      toast(j.style_note ? t('ratedStyle', j.style_note) : t(r === 'up' ? 'ratedUp' : 'ratedDown'), 'ok');
    }));
    b.dataset.rating = r;
    b.dataset.testid = 'rate-' + r;
    b.title = t(r === 'up' ? 'rateUp' : 'rateDown');
    b.setAttribute('aria-label', b.title);
    b.setAttribute('aria-pressed', String(el.dataset.rating === r));
    return b;
  });
}

/** The question of turn `n` as shown (its element). */
const questionEl = n => [...$('#messages').querySelectorAll(':scope > .msg.user')].find(m => m.dataset.turn === String(n));
const questionOf = n => { const el = questionEl(n); return el ? el.bubble.text : ''; };

/** Answers turn `n` again with its question (the last turn replaces it; an older one
 * is asked as a new question). */
function redo(n, text) {
  const q = text ?? questionOf(n);
  if (!q) return;
  const last = [...$('#messages').querySelectorAll(':scope > .msg')].pop();
  const el = questionEl(n);
  send(q, last && last.dataset.turn === String(n) && S.session ? +n : null, (el && el.bubble.images) || []);
}

function editQuestion(el) {
  const b = el.bubble, ta = h('textarea', 'edit-box');
  ta.value = b.text;
  ta.rows = Math.min(12, b.text.split('\n').length + 1);
  const row = h('div', 'acts edit-acts');
  const save = row.appendChild(btn('', 'primary', () => redo(el.dataset.turn, ta.value), 'sendEdited'));
  save.dataset.testid = 'send-edited';
  row.append(btn('', null, () => { b.body.replaceChildren(); mdText(b.body, b.text); thumbs(b); actions(); }, 'cancel'));
  el.querySelector('.acts').remove();
  b.body.replaceChildren(ta, row);
  ta.onkeydown = e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
    else if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); row.lastChild.click(); }
  };
  ta.focus();
}

/** Moves the elements of turn `n` into a collapsed "earlier version" block. */
function supersede(n, els) {
  if (!els.length) return null;
  const d = h('details', 'superseded');
  d.dataset.testid = 'superseded';
  d.append(ht('summary', null, 'replacedTurn', n));
  els[0].before(d);
  d.append(...els);
  return d;
}

function renderHistory({ data = [], failed = {}, superseded = [], turns = {} }) {
  const box = $('#messages');
  box.replaceChildren();
  S.shown = data.length;
  const old = new Set(superseded.map(String));
  let group = [], answer = null, cards = {};
  const close = n => {
    if (n == null) return;
    if (!answer) answer = bubble('assistant');
    answer.el.dataset.turn = n;
    const why = failed[n];
    if (answer.text) md(answer.text, answer.body);
    if (answer.text || answer.tools.children.length || why) group.push(answer.el);
    if (turns[n] && turns[n].rating) answer.el.dataset.rating = turns[n].rating;
    if (why) { answer.el.classList.add('failed'); failNote(answer.el, why === 'stopped' ? t('stopped') : why, why === 'stopped'); }
    // A subtasks call's helpers, as they were shown live.
    for (const r of (turns[n] && turns[n].subtasks) || []) {
      subtaskEvent(answer.tools, { phase: 'start', index: r.index, task: r.task });
      for (const c of r.tools || []) subtaskEvent(answer.tools, { ...c, phase: 'tool_end', index: r.index });
      subtaskEvent(answer.tools, { ...r, phase: 'end' });
    }
    group.push(turnCard(null, n, S.session, turns[n]));
    box.append(...group);
    if (old.has(String(n))) supersede(n, group);
    group = []; answer = null; cards = {};
  };
  let turn = null;
  for (const m of data) {
    if (m.turn !== turn) { close(turn); turn = m.turn; }
    const text = typeof m.content === 'string' ? m.content : fmt(m.content);
    if (m.role === 'user') group.push(userMsg(text, m.turn, m.images || []));
    else if (m.role === 'assistant') {
      answer = answer || bubble('assistant');
      for (const c of m.tool_calls || []) {
        const f = c.function || c;
        cards[c.id] = answer.tools.appendChild(toolCard({ id: c.id, name: f.name, arguments: f.arguments }));
      }
      if (text) answer.text += (answer.text ? '\n\n' : '') + text;
    } else if (m.role === 'tool') {
      answer = answer || bubble('assistant');
      const card = cards[m.tool_call_id] || answer.tools.appendChild(toolCard({ name: m.name || '?', arguments: '' }));
      settleCard(card, m.evolve_call || { ran: true }, text);
    } else group.push(fold(t('system'), text));
  }
  close(turn);
  S.lastTurn = turn || 0;
  if (!data.length) box.append(emptyState);
  actions();
  box.scrollTop = box.scrollHeight;
}

/** Keeps the end of the chat in view while an answer grows, unless the person scrolled
 * up to read (S.follow, kept by the scroll handler in init). */
function scrollEnd() {
  const box = $('#messages');
  if (S.follow !== false) box.scrollTop = box.scrollHeight;
}

/** The line of a turn card: turn, memories, tools, score, time. */
function turnLine(n, mem, tools, score, ms) {
  const bits = [t('turnN', n)];
  if (mem) bits.push(`${t('memories')} ${mem}`);
  if (tools) bits.push(`${t('tools')} ${tools}`);
  if (score != null) bits.push(`${t('evaluation')} ${(+score).toFixed(2)}`);
  if (ms != null) bits.push(`${ms} ms`);
  return bits.join(' · ');
}

/** The turn card: what a turn did. `rec` may be null (after a reload): fetched when
 * opened; `line` is then its summary from the session's messages. */
function turnCard(rec, n, sid, line) {
  const d = h('details', 'turn'), sum = h('summary', null, t('turnN', n)), body = h('div', 'turn-body');
  d.dataset.testid = 'turn-card';
  d.dataset.turn = n;
  d.append(sum, body);
  const fill = r => {
    rec = r = { memories: [], tools: [], skills: [], usage: {}, ...r };
    sum.textContent = turnLine(r.turn, r.memories.length, r.tools.length, r.evaluation && r.evaluation.score, r.answer_ms);
    body.replaceChildren(turnBody(r));
  };
  if (rec) fill(rec);
  else if (line) sum.textContent = turnLine(n, line.memories, line.tools, line.score, line.answer_ms);
  d.addEventListener('toggle', async () => {
    if (!d.open || (rec && rec.evaluation)) return;
    try {
      fill(await api('GET', `/v1/sessions/${enc(sid)}/turns/${n}`));
    } catch (e) {
      if (!rec) body.replaceChildren(h('p', 'err', e.message));
    }
  });
  return d;
}

/** How a call was decided, in words (`ask_once` → "asked once"). */
function decisionText(d) {
  if (d && typeof d === 'object') {
    const k = Object.keys(d)[0];
    return k === 'refuse' ? t('dec_refuse') : tOr('dec_' + k, fmt(d));
  }
  return d ? tOr('dec_' + d, fmt(d)) : '';
}

function turnBody(r) {
  const dl = h('dl');
  const row = (key, ...vals) => {
    dl.append(h('dt', null, t(key)));
    const dd = dl.appendChild(h('dd'));
    dd.append(...(vals.length ? vals : [t('none')]));
  };
  const list = items => {
    const ul = h('ul');
    for (const it of items) ul.appendChild(h('li')).append(...it);
    return ul;
  };
  row('memories', t('memOf', r.memories.length, r.memories_considered),
    ...(r.memories.length ? [list(r.memories.map(m => [h('b', 'score', m.score.toFixed(2)), ' ', m.content,
      h('small', 'mut', ` (#${m.id} · ${tOr('why_' + m.reason, fmt(m.reason))} · ${t('relevance', (+m.relevance).toFixed(2))})`)]))] : []));
  row('skills', ...(r.skills.length ? [r.skills.join(', ')] : []));
  row('tools', ...(r.tools.length ? [list(r.tools.map(c => [lvl(c.level), ' ', h('code', null, c.name), ' ',
    [decisionText(c.decision), answerText(c.answer), t(c.ran ? (c.is_error ? 'failed' : 'ran') : 'refused'),
      c.ran ? t('chars', c.output_chars) : ''].filter(Boolean).join(' → '),
    h('pre', null, pretty(c.arguments))]))] : []));
  if (r.needs_person) row('tools', t('needsPerson'));
  row('evaluation', r.evaluation ? `${r.evaluation.score.toFixed(2)} — ${r.evaluation.reason}` : t('notYet'));
  row('reflection', ...(r.reflection ? [r.reflection] : []));
  if (r.learned_skill) row('learnedSkill', btn(r.learned_skill, 'link', () => { show('skills'); openSkill(r.learned_skill); }));
  if (r.skill_pending) row('skillPending', t('skillPendingHint', r.skill_pending));
  if (r.lesson) row('lessonSaved', r.lesson);
  // A server that reports no usage: said so, not "0 in / 0 out".
  const u = r.usage || {}, m = u.main || {}, c = u.cheap || {};
  const tok = (key, x) => x.prompt_tokens || x.completion_tokens ? t(key, x.prompt_tokens ?? 0, x.completion_tokens ?? 0) : t(key + 'None');
  row('tokens', tok('tokMain', m), h('br'), tok('tokCheap', c));
  row('timing', t('timeVal', r.answer_ms, Math.round(r.overhead_ms), r.steps));
  return dl;
}

/** Reads an SSE body: yields [event, data] for every event. */
async function* sse(body) {
  const rd = body.getReader(), dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await rd.read();
    if (done) break;
    buf = (buf + dec.decode(value, { stream: true })).replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let ev = 'message';
      const data = [];
      for (const l of block.split('\n')) {
        if (l.startsWith('event:')) ev = l.slice(6).trim();
        else if (l.startsWith('data:')) data.push(l.slice(5).replace(/^ /, ''));
      }
      if (data.length) yield [ev, data.join('\n')];
    }
  }
}

function busy(on) {
  $('#send').hidden = on;
  $('#stop').hidden = !on;
  document.body.classList.toggle('busy', on);
}

/** Sends a question; `replace`: the number of the last turn, answered again with it
 * (regenerate, edit): its elements move into a collapsed "earlier version". */
async function send(text, replace = null, images = []) {
  if (S.busy) return toast(t('busy'), 'info');
  if (!text.trim()) return;
  const box = $('#messages');
  emptyState.remove();
  let n = (S.lastTurn || 0) + 1;
  const old = replace ? supersede(replace, [...box.querySelectorAll(':scope > *')].filter(el => el.dataset.turn === String(replace))) : null;
  const u = box.appendChild(userMsg(text, n, images));
  const a = bubble('assistant');
  a.el.classList.add('streaming');
  a.el.dataset.turn = n;
  box.append(a.el);
  box.scrollTop = box.scrollHeight;
  S.follow = true;
  const ctl = new AbortController();
  // The running answer. Opening another chat detaches it: it goes on in the background
  // (the server stores it) without touching the chat now shown.
  const run = { ctl, session: S.session, attached: true, u, a, n, perm: null,
    title: text.split('\n').find(l => l.trim()) || text, started: Date.now() / 1000 };
  S.busy = ctl;
  S.run = run;
  busy(true);
  // The chat is listed (and can be come back to) from the moment the server names it.
  const here = id => {
    if (!id) return;
    run.session = id;
    S.runs.set(id, run);
    liveSessions();
    if (run.attached) setSession(id); else renderSessions();
  };
  let acc = '', raf = 0, rec = null, done = false, reverted = false;
  const paint = () => { raf = 0; a.text = acc; a.body.replaceChildren(md(acc)); scrollEnd(); };
  actions();
  try {
    const content = images.length
      ? [{ type: 'text', text }, ...images.map(url => ({ type: 'image_url', image_url: { url } }))]
      : text;
    const body = { model: 'evolve', stream: true, evolve_events: true, messages: [{ role: 'user', content }] };
    if (S.session) body.session = S.session;
    if (replace && S.session) body.evolve_replace = replace;
    let r;
    try {
      r = await req('POST', '/v1/chat/completions', body, ctl.signal);
    } catch (e) {
      // The chat is gone (deleted elsewhere, or a new chat whose only turn was stopped):
      // the message starts a new chat instead.
      if (e.status !== 404 || !body.session) throw e;
      delete body.session;
      S.session = null;
      r = await req('POST', '/v1/chat/completions', body, ctl.signal);
    }
    here(r.headers.get('X-Evolve-Session'));
    for await (const [ev, data] of sse(r.body)) {
      if (data === '[DONE]') { done = true; break; }
      let j;
      try { j = JSON.parse(data); } catch { continue; }
      if (ev === 'message') {
        const c = j.choices && j.choices[0] && j.choices[0].delta && j.choices[0].delta.content;
        if (c) { acc += c; raf = raf || requestAnimationFrame(paint); }
      } else if (ev === 'evolve.session') here(j.session);
      else if (ev === 'evolve.tool_start') a.tools.append(toolCard(j));
      else if (ev === 'evolve.elicitation') { if (run.attached) a.tools.append(elicitForm(j)); }
      else if (ev === 'evolve.elicitation_end') { const f = document.getElementById('elicit-' + j.id); if (f) f.remove(); }
      else if (ev === 'evolve.subtask') subtaskEvent(a.tools, j);
      else if (ev === 'evolve.tool_progress') {
        const card = [...a.tools.children].reverse().find(c => !c.dataset.done && c.querySelector('code').textContent === j.name);
        if (card) progressCard(card, j);
      }
      else if (ev === 'evolve.tool_end') {
        // A call that never started (refused, denied) has no card yet.
        const card = [...a.tools.children].find(c => !c.dataset.done && c.querySelector('code').textContent === j.name) ||
          a.tools.appendChild(toolCard(j));
        settleCard(card, j, j.output);
      } else if (ev === 'evolve.permission') {
        // Asked here, or kept until the chat is opened again; the sidebar says it waits.
        run.perm = j;
        renderSessions();
        if (run.attached) permAsk(j);
      }
      else if (ev === 'evolve.notice') {
        // Before a question: why it is asked (an MCP tool redefined since it was allowed).
        const note = h('p', 'warn', j.text || '');
        note.setAttribute('role', 'alert');
        note.dataset.testid = 'turn-notice';
        a.tools.before(note);
      }
      else if (ev === 'evolve.turn') {
        rec = j;
        if (j.turn) { n = run.n = j.turn; u.dataset.turn = a.el.dataset.turn = n; }
      }
      else if (ev === 'evolve.error') throw new Error(webText(j.error && j.error.message) || t('errTurn'));
    }
    if (!done) throw new Error(t('cutOff'));
  } catch (e) {
    if (e.name === 'AbortError') failNote(a.el, t('stopped'), true);
    else if (old && e.status === 409) {
      // The server did not take it as a replacement (not the last turn any more, or a
      // call waits): the turn stays as it was.
      old.replaceWith(...[...old.children].filter(c => c.tagName !== 'SUMMARY'));
      u.remove();
      a.el.remove();
      reverted = true;
      toast(e.message);
    } else {
      // Said once, under the answer (with Retry); a toast only when the chat is not shown.
      const note = failNote(a.el, e.message);
      if (!run.attached) toast(e.message);
      else if (!e.offline) {
        // The model may have gone down since the page opened: the banner says so again,
        // and the note points at it instead of repeating it.
        checkModel().then(() => {
          if (modelState && !modelState.reachable) note.firstChild.textContent = t('notAnsweredModelDown');
        });
      } else offline(true);
    }
  } finally {
    cancelAnimationFrame(raf);
    paint();
    a.el.classList.remove('streaming');
    if (S.runs.get(run.session) === run) S.runs.delete(run.session);
    if (!run.attached) {
      // Done in the background: refresh the list, and the chat if it is the one shown.
      guard(async () => {
        await loadSessions();
        if (S.session === run.session && !S.busy) await openSession(run.session);
      })();
      return;
    }
    S.busy = null;
    S.run = null;
    busy(false);
    permReset();
    if (!reverted) S.lastTurn = n;
    if (!acc && !a.tools.children.length && !a.el.querySelector('.err,.note')) a.el.remove();
    if (rec) (a.el.isConnected ? a.el : u).after(turnCard(rec, rec.turn, rec.session || S.session));
    actions();
    scrollEnd();
    guard(async () => {
      await loadSessions();
      // A new chat whose first turn stored nothing (stopped, failed) is forgotten by the
      // server: the next message starts a new one.
      if (S.session && !S.sessions.some(s => s.id === S.session)) {
        S.session = null;
        history.replaceState(null, '', location.pathname);
        setTitle();
      }
      // An "always" given during the turn is on the list now.
      await loadGrants();
    })();
  }
}

// ---------------------------------------------------------------- permissions
/** An `evolve.permission` event (or a pending call after a reload): ask the person. */
function permAsk(ev) {
  S.perms = S.perms.filter(p => p.call.id !== ev.call.id);
  S.perms.push(ev);
  if (!S.perm || S.perm.waiting || S.perm.call.id === ev.call.id) permShow(ev);
}

function permShow(ev) {
  const c = ev.call, d = $('#perm'), two = c.steps > 1 && c.step >= c.steps;
  S.perm = ev;
  d.className = two ? 'step2' : c.steps > 1 ? 'l4' : '';
  $('#perm-title').textContent = t(two ? 'permTitle2' : 'permTitle', c.tool);
  $('#perm-level').replaceWith(Object.assign(lvl(c.level), { id: 'perm-level' }));
  $('#perm-tool').textContent = c.tool;
  $('#perm-step').textContent = c.steps > 1 ? t('stepOf', c.step, c.steps) : '';
  // Said in the UI's language (the server's `prompt` follows the question's).
  $('#perm-prompt').textContent = /^L[0-5]$/.test(c.level || '')
    ? t(two ? 'permSay2' : 'permSay', c.level, t('lvl_' + c.level)) + (c.steps > 1 && !two ? ' ' + t('permTwice') : '')
    : c.prompt || '';
  $('#perm-warn').hidden = !two;
  // Step 2 shows the arguments exactly as the model sent them, not reformatted.
  $('#perm-args').textContent = two ? fmt(c.arguments) : pretty(c.arguments);
  $('#perm-allow').hidden = two;
  $('#perm-run').hidden = !two;
  // Data no one gave would leave the machine: say what, where, after what.
  const s = c.sends;
  $('#perm-sends').hidden = !s;
  if (s) $('#perm-sends').textContent = t('sendsData', s.host ? t('sendsTo', s.host) : '', s.leaves, (s.after || []).join(', '));
  // "Always" for such a call grants its host; without a host it is never covered.
  $('#perm-always').hidden = c.steps > 1 || (s && !s.host);
  // A shell grant covers this command line only, not the tool.
  $('#perm-always').textContent = s ? t('alwaysHost', s.host) : t(c.tool === 'shell' ? 'alwaysCommand' : 'always');
  for (const b of d.querySelectorAll('button')) b.disabled = false;
  if (!d.open) d.showModal();
  // Enter never sends data no one gave: such a question starts on Deny.
  (two || s ? $('#perm-deny') : $('#perm-allow')).focus();
}

async function permAnswer(answer) {
  const ev = S.perm, d = $('#perm');
  if (!ev) return;
  for (const b of d.querySelectorAll('button')) b.disabled = true;
  let r;
  try {
    r = await api('POST', `/v1/sessions/${enc(ev.session)}/pending/${enc(ev.call.id)}`, { answer });
  } catch (e) {
    toast(e.message);
    for (const b of d.querySelectorAll('button')) b.disabled = false;
    return;
  }
  S.perms = S.perms.filter(p => p !== ev);
  const run = S.runs.get(ev.session);
  if (run && run.perm && run.perm.call.id === ev.call.id) { run.perm = null; renderSessions(); }
  // A call parked on the session (no stream waits for it): the server returns its
  // next question (the second of an L4 call) itself.
  if (r && r.pending) return permShow({ session: ev.session, call: r.pending });
  // The next event (step 2, or the next call) may have arrived before this answer did.
  if (S.perm !== ev) return;
  if (answer === 'yes' && ev.call.step < ev.call.steps) {
    // The server sends the second step as a new event; keep the dialog until it arrives.
    $('#perm-prompt').textContent = t('waiting');
    ev.waiting = true;
    return;
  }
  S.perm = null;
  if (S.perms.length) permShow(S.perms[0]);
  else {
    d.close();
    if (!S.busy) guard(followUp)(ev.session);
  }
}

/** An answer given after a reload: no stream shows what the turn does next, so the chat
 * is read again once the server has stored more of it (polled for up to 30 s). */
async function followUp(id) {
  for (let i = 0; i < 30 && S.session === id && !S.busy; i++) {
    if ((await api('GET', `/v1/sessions/${enc(id)}`)).messages !== S.shown) return openSession(id);
    await new Promise(r => setTimeout(r, 1000));
  }
}

function permReset() {
  S.perms = [];
  S.perm = null;
  if ($('#perm').open) $('#perm').close();
}

/**
 * An MCP server's question during a call (`elicitation/create`): a form in the chat, its
 * fields from the server's schema. Send checks it on the server (a 400 names the field);
 * Decline says no; Cancel leaves it unanswered. The model never sees or answers it.
 */
function elicitForm(q) {
  const f = h('form', 'elicit');
  f.id = 'elicit-' + q.id;
  f.dataset.testid = 'elicitation';
  f.append(h('p', 'cap', t('elicitFrom', q.server)), h('p', 'elicit-msg', q.message));
  const inputs = [];
  for (const fl of q.fields || []) {
    const lab = h('label', 'elicit-field');
    const name = h('span', null, fl.title + (fl.required ? ' *' : ''));
    let el;
    if (fl.kind === 'boolean') {
      el = h('input');
      el.type = 'checkbox';
      el.checked = fl.default === true;
    } else if (fl.kind === 'choice') {
      el = h('select');
      if (!fl.required) el.append(h('option', null, ''));
      for (const o of fl.options || []) {
        const opt = h('option', null, o.title);
        opt.value = o.value;
        el.append(opt);
      }
      if (fl.default != null) el.value = fl.default;
    } else if (fl.kind === 'multi') {
      el = h('span', 'elicit-multi');
      for (const o of fl.options || []) {
        const c = h('input');
        c.type = 'checkbox';
        c.value = o.value;
        c.checked = Array.isArray(fl.default) && fl.default.includes(o.value);
        const l = h('label');
        l.append(c, ' ', o.title);
        el.append(l);
      }
    } else {
      el = h('input');
      el.type = fl.kind === 'number' || fl.kind === 'integer' ? 'number'
        : ({ email: 'email', uri: 'url', date: 'date' })[fl.format] || 'text';
      if (fl.kind === 'integer') el.step = '1';
      if (fl.kind === 'number') el.step = 'any';
      if (fl.minimum != null) el.min = fl.minimum;
      if (fl.maximum != null) el.max = fl.maximum;
      if (fl.max_length != null) el.maxLength = fl.max_length;
      if (fl.default != null) el.value = fl.default;
    }
    el.id = 'elicit-' + q.id + '-' + fl.name;
    el.dataset.field = fl.name;
    el.name = fl.name;
    lab.append(name, ' ', el);
    if (fl.description) lab.append(h('small', null, fl.description));
    f.append(lab);
    inputs.push([fl, el]);
  }
  const row = f.appendChild(h('div', 'row'));
  const send = row.appendChild(h('button', 'primary', t('elicitSend')));
  send.type = 'submit';
  send.dataset.testid = 'elicit-send';
  const answer = async (action, content) => {
    await api('POST', `/v1/sessions/${enc(q.session || S.session)}/elicitations/${enc(q.id)}`, { action, content });
    f.remove();
  };
  for (const [key, action] of [['elicitDecline', 'decline'], ['cancel', 'cancel']]) {
    const b = row.appendChild(h('button', null, t(key)));
    b.type = 'button';
    b.dataset.testid = 'elicit-' + action;
    b.onclick = () => answer(action, {}).catch(e => toast(e.message));
  }
  f.onsubmit = formGuard(async e => {
    e.preventDefault();
    const content = {};
    for (const [fl, el] of inputs) {
      if (fl.kind === 'boolean') content[fl.name] = el.checked;
      else if (fl.kind === 'multi') content[fl.name] = [...el.querySelectorAll('input:checked')].map(c => c.value);
      else if (el.value !== '') content[fl.name] = fl.kind === 'number' || fl.kind === 'integer' ? Number(el.value) : el.value;
    }
    await answer('accept', content);
  });
  return f;
}

/** After a reload: calls of this session still waiting for an answer. */
async function checkPending() {
  const id = S.session;
  if (!id || S.busy) return;
  const { data, question, turn, elicitations } = await api('GET', `/v1/sessions/${enc(id)}/pending`);
  for (const q of elicitations || []) {
    if (document.getElementById('elicit-' + q.id)) continue;
    emptyState.remove();
    const a = bubble('assistant');
    a.el.append(elicitForm(Object.assign({ session: id }, q)));
    $('#messages').append(a.el);
  }
  $('#pending-banner').hidden = !(data && data.length);
  S.pendingList = (data || []).map(call => ({ session: id, call }));
  // The waiting turn is not among the stored messages yet: show its question.
  if (question && data && data.length && S.session === id && !$('#messages [data-testid=turn-waiting]')) {
    emptyState.remove();
    const box = $('#messages'), a = bubble('assistant');
    a.el.dataset.testid = 'turn-waiting';
    a.el.append(ht('p', 'note', 'waitingQuestion'));
    box.append(userMsg(question, turn), a.el);
    box.scrollTop = box.scrollHeight;
  }
}

// ---------------------------------------------------------------- grants
/** The chat's "always allow" list (the session's tool whitelist), each with a Revoke button. */
async function loadGrants() {
  const id = S.session;
  if (!id) {
    $('#grants').hidden = true;
    return;
  }
  const { data } = await api('GET', `/v1/sessions/${enc(id)}/grants`);
  if (S.session === id) renderGrants(id, data || []);
}

function renderGrants(id, data) {
  $('#grants').hidden = !data.length;
  $('#grant-list').replaceChildren(...data.map(g => {
    const li = h('li', 'grant');
    li.dataset.testid = 'grant';
    li.append(h('code', null, g.label));
    const b = li.appendChild(btn(null, 'icon', guard(async () => {
      b.disabled = true;
      const body = g.command == null ? { tool: g.tool } : { tool: g.tool, command: g.command };
      try {
        const r = await api('DELETE', `/v1/sessions/${enc(id)}/grants`, body);
        if (S.session === id) renderGrants(id, r.data || []);
        toast(t('revoked', g.label), 'ok');
      } finally {
        b.disabled = false;
      }
    }), 'revoke'));
    b.title = t('revokeTitle', g.label);
    b.setAttribute('aria-label', b.title);
    return li;
  }));
}

// ---------------------------------------------------------------- memory
const PRIO = [0, 1, 2, 3], IMP = [1, 2, 3, 4, 5];
// `dflt` is the option a form's reset() goes back to (without it, the first one).
function options(sel, values, label, value, dflt) {
  sel.replaceChildren(...values.map(v => Object.assign(h('option', null, label(v)),
    { value: String(v), defaultSelected: dflt != null && String(v) === String(dflt) })));
  if (value != null) sel.value = String(value);
  return sel;
}
const CATEGORIES = ['general', 'fact', 'preference', 'instruction', 'reminder'];
function fillLevelSelects() {
  for (const s of document.querySelectorAll('select.prio')) options(s, PRIO, v => t('prio' + v), s.value || 2, 2);
  for (const s of document.querySelectorAll('select.imp')) options(s, IMP, String, s.value || 3, 3);
  for (const s of document.querySelectorAll('select.cat')) options(s, CATEGORIES, v => t('cat_' + v), s.value || 'general', 'general');
}
const tagList = s => s.split(/[,，]/).map(x => x.trim()).filter(Boolean);

async function loadMemory() {
  const q = $('#mem-q').value.trim();
  const [{ data }] = await Promise.all([api('GET', '/v1/memory?limit=200' + (q ? '&q=' + enc(q) : '')), loadStyle()]);
  const ul = $('#mem-list');
  // Pinned first (the order the server ranks them in otherwise).
  const list = data || [];
  ul.replaceChildren(...[...list.filter(m => m.pinned), ...list.filter(m => !m.pinned)].map(memItem));
  if (!ul.children.length) ul.append(ht('li', 'mut pad', 'noMemories'));
}

/** The style notes (added to every prompt), each with a button to forget it. */
async function loadStyle() {
  const { data } = await api('GET', '/v1/memory/style'), ol = $('#style-list');
  const notes = data || [];
  ol.replaceChildren(...notes.map(n => {
    const li = h('li', 'style-note');
    li.dataset.testid = 'style-note';
    const del = btn('', 'danger-text', guard(async () => {
      if (!await ask(t('deleteStyle'), { danger: true, ok: t('delete') })) return;
      try {
        // The text guards against a note that moved since this list was shown (409).
        await api('DELETE', `/v1/memory/style/${n.n}?note=${enc(n.note)}`);
        toast(t('deleted'), 'ok');
      } catch (e) {
        if (e.status !== 409) throw e;
        toast(t('styleChanged'));
      }
      await loadStyle();
    }), 'delete');
    del.dataset.testid = 'style-delete';
    li.append(h('span', null, n.note), ' ', del);
    return li;
  }));
  if (!notes.length) ol.append(ht('li', 'mut', 'noStyleNotes'));
  $('#style-clear').hidden = !notes.length;
  $('#style-clear').onclick = guard(async () => {
    if (!await ask(t('clearStyle', notes.length), { danger: true, ok: t('clearAll') })) return;
    await api('DELETE', '/v1/memory/style');
    toast(t('deleted'), 'ok');
    await loadStyle();
  });
}

function memItem(m) {
  const li = h('li', 'card mem' + (m.pinned ? ' pinned' : ''));
  li.dataset.testid = 'memory-item';
  li.dataset.id = m.id;
  const patch = guard(async p => {
    const changed = await api('PATCH', `/v1/memory/${enc(m.id)}`, p);
    // A pin moves it (pinned ones are listed first).
    if ('pinned' in p) await loadMemory(); else li.replaceWith(memItem(changed));
    toast(t('saved'), 'ok');
  });
  const text = li.appendChild(h('p', 'mem-text', m.content));
  const edit = () => {
    const ta = h('textarea', 'edit-box');
    ta.value = m.content;
    ta.rows = Math.min(8, m.content.split('\n').length + 1);
    const row = h('div', 'row');
    const save = row.appendChild(btn('', 'primary', () => ta.value.trim() && ta.value.trim() !== m.content
      ? patch({ content: ta.value.trim() }) : form.replaceWith(text), 'save'));
    save.dataset.testid = 'memory-save-text';
    row.append(btn('', null, () => form.replaceWith(text), 'cancel'));
    const form = h('div', 'mem-edit');
    form.append(ta, row);
    text.replaceWith(form);
    ta.focus();
  };
  const f = li.appendChild(h('div', 'fields'));
  const field = (key, el) => {
    const l = f.appendChild(h('label'));
    l.append(ht('span', null, key), el);
    l.title = tOr(key + 'Hint', '');
    return el;
  };
  field('priority', options(h('select', 'prio'), PRIO, v => t('prio' + v), m.priority)).onchange =
    e => patch({ priority: +e.target.value });
  field('importance', options(h('select', 'imp'), IMP, String, m.importance)).onchange =
    e => patch({ importance: +e.target.value });
  field('category', options(h('select', 'cat'), CATEGORIES, c => t('cat_' + c), m.category)).onchange =
    e => patch({ category: e.target.value });
  const tags = field('tags', h('input'));
  tags.value = (m.tags || []).join(', ');
  tags.onchange = () => patch({ tags: tagList(tags.value) });
  const acts = f.appendChild(h('div', 'row'));
  acts.append(
    btn('', 'link', edit, 'editText'),
    btn('', 'pin', () => patch({ pinned: !m.pinned }), m.pinned ? 'unpin' : 'pin'),
    btn('', 'danger-text', guard(async () => {
      if (!await ask(t('deleteMemory'), { danger: true, ok: t('delete') })) return;
      await api('DELETE', `/v1/memory/${enc(m.id)}`);
      li.remove();
      toast(t('deleted'), 'ok');
    }), 'delete'));
  acts.lastChild.dataset.testid = 'memory-delete';
  acts.firstChild.dataset.testid = 'memory-edit-text';
  li.append(h('small', 'mut', [`#${m.id}`, t('cat_' + m.category), m.pinned && t('pinned'), m.source === 'world' && t('fromWorld'), ago(m.updated_at || m.created_at)]
    .filter(Boolean).join(' · ')));
  return li;
}

const saveMemory = formGuard(async e => {
  e.preventDefault();
  const body = {
    content: $('#mem-content').value.trim(),
    priority: +$('#mem-priority').value,
    importance: +$('#mem-importance').value,
    tags: tagList($('#mem-tags').value),
    pinned: $('#mem-pinned').checked,
  };
  if (!body.content) return;
  body.category = $('#mem-category').value || 'general';
  const m = await api('POST', '/v1/memory', body);
  $('#mem-form').reset();
  $('#mem-form').hidden = true;
  fillLevelSelects();
  // A memory close to an old one is merged into it (or was already there).
  toast(m.outcome === 'merged' || m.outcome === 'duplicate' ? t(m.outcome, m.id) : t('saved'), 'ok');
  await loadMemory();
});

// ---------------------------------------------------------------- skills, tools, MCP
async function loadSkills() {
  const { data } = await api('GET', '/v1/skills'), ul = $('#skills-list');
  ul.replaceChildren(...(data || []).map(s => {
    const li = h('li', 'card');
    li.dataset.testid = 'skill-item';
    const b = li.appendChild(btn(s.name, 'link', () => openSkill(s.name)));
    b.append(h('small', 'mut', ` ${s.source || ''}`));
    li.append(h('p', null, s.description || ''));
    if (s.tags && s.tags.length) li.append(h('small', 'mut', s.tags.join(', ')));
    // User and learned skills can be removed (a learned one after review); bundled ones ship in the binary.
    if (s.source !== 'bundled') {
      const rm = li.appendChild(btn('', 'danger-text', guard(async () => {
        if (!await ask(t('deleteSkill', s.name), { danger: true, ok: t('delete') })) return;
        await api('DELETE', `/v1/skills/${enc(s.name)}`);
        toast(t('deleted'), 'ok');
        $('#skill-view').hidden = true;
        await loadSkills();
      }), 'delete'));
      rm.dataset.testid = 'skill-delete';
    }
    return li;
  }));
  if (!ul.children.length) ul.append(ht('li', 'mut pad', 'noSkills'));
}

const openSkill = guard(async name => {
  const s = await api('GET', `/v1/skills/${enc(name)}`), v = $('#skill-view');
  // A SKILL.md's text wrapped at a width is one paragraph per block, as Markdown reads it.
  const body = (s.body || '').replace(/([^\n])\n(?=[^\n\s#>|`*+\-\d])/g, '$1 ');
  v.replaceChildren(h('h2', null, s.name), h('p', 'mut', s.description || ''), md(body));
  // A user or learned skill is edited as its whole SKILL.md; a bundled one is copied
  // into a user skill of the same name (which overrides it).
  v.append(btn('', null, s.source === 'bundled' ? guard(async () => {
    const r = await api('POST', '/v1/skills', { name: s.name });
    editSkill(r.name, r.text);
  }) : () => editSkill(s.name, s.text || ''), s.source === 'bundled' ? 'skillOverride' : 'edit'));
  v.lastChild.dataset.testid = 'skill-edit';
  v.hidden = false;
  v.scrollIntoView({ block: 'start' });
});

/** The SKILL.md editor: saved whole, checked by the server's skill loader. */
function editSkill(name, text) {
  const v = $('#skill-view'), f = h('form', 'skill-edit');
  const ta = f.appendChild(h('textarea', 'code-edit'));
  ta.id = 'skill-text';
  ta.dataset.field = 'text|front matter|name|description';
  ta.value = text;
  ta.rows = Math.min(30, text.split('\n').length + 2);
  const row = f.appendChild(h('div', 'row end'));
  const ok = row.appendChild(ht('button', 'primary', 'save'));
  ok.type = 'submit';
  ok.dataset.testid = 'skill-save';
  row.append(btn('', null, () => openSkill(name), 'cancel'));
  f.onsubmit = formGuard(async e => {
    e.preventDefault();
    await api('PUT', `/v1/skills/${enc(name)}`, { text: ta.value });
    toast(t('saved'), 'ok');
    await loadSkills();
    await openSkill(name);
  });
  v.replaceChildren(h('h2', null, name), f);
  v.hidden = false;
  ta.focus();
}

const newSkill = guard(async () => {
  const name = await ask(t('skillNamePrompt'), { input: '' });
  if (name == null || !name.trim()) return;
  const r = await api('POST', '/v1/skills', { name: name.trim() });
  await loadSkills();
  editSkill(r.name, r.text);
});

const LEVELS = ['L0', 'L1', 'L2', 'L3', 'L4', 'L5', 'auto'];

/** Where a tool and its level come from, in words: "built-in", or "MCP" and how its level
 * was set (the explanation in the title; a level nobody set is said to be treated as L4). */
function toolSource(x) {
  const out = [tOr('src_' + x.source, x.source)];
  if (x.origin && x.origin !== 'builtin') {
    const o = h('span', 'origin', ' · ' + tOr('origin_' + x.origin, x.origin));
    o.title = tOr('originHint_' + x.origin, '');
    out.push(o);
  }
  return out;
}

async function loadTools() {
  const [tools, mcp] = await Promise.all([api('GET', '/v1/tools'), api('GET', '/v1/mcp')]);
  const tb = $('#tools-table');
  tb.replaceChildren();
  const head = tb.appendChild(h('thead')).appendChild(h('tr'));
  for (const k of ['name', 'level', 'source', 'description']) head.append(ht('th', null, k));
  const body = tb.appendChild(h('tbody'));
  for (const x of tools.data || []) {
    const tr = body.appendChild(h('tr'));
    tr.append(h('td', 'nowrap')); tr.lastChild.append(h('code', null, x.name));
    tr.append(h('td', 'nowrap')); tr.lastChild.append(lvl(x.level));
    tr.append(h('td', 'nowrap'), h('td', 'desc', x.description || ''));
    tr.children[2].append(...toolSource(x));
    if (x.changed) tr.lastChild.prepend(h('small', 'warn', t('defChanged', x.changed.what) + ' '));
  }
  const box = $('#mcp-list');
  box.replaceChildren();
  for (const s of mcp.data || []) {
    const card = box.appendChild(h('div', 'card'));
    card.dataset.testid = 'mcp-server';
    const title = card.appendChild(h('h3', null, s.name + ' '));
    title.append(ht('span', 'badge ' + (s.connected ? 'good' : ''), s.connected ? 'connected' : 'disconnected'),
      h('small', 'mut', ' ' + (s.transport || '')));
    if (s.disabled) title.append(ht('span', 'badge', 'disabled'));
    const acts = card.appendChild(h('div', 'row'));
    if (!s.disabled) acts.append(btn('', null, guard(async () => {
      const r = await api('POST', `/v1/mcp/servers/${enc(s.name)}/reconnect`);
      // Why it does not answer stays on its card (not a toast that goes away).
      S.mcpErrors[s.name] = r.connected ? null : r.error || '';
      if (r.connected) toast(t('mcpReconnected', s.name, r.tools), 'ok');
      await loadTools();
    }), 'reconnect'));
    if (!s.connected && S.mcpErrors[s.name] != null) {
      const why = card.insertBefore(h('p', 'err', t('mcpNoAnswer', s.name, webText(S.mcpErrors[s.name]))), acts);
      why.dataset.testid = 'mcp-error';
    }
    // One defined in config.toml is changed in the file.
    if (s.source === 'added') acts.append(btn('', 'danger-text', guard(async () => {
      if (!await ask(t('mcpRemoveQ', s.name), { danger: true, ok: t('delete') })) return;
      await api('DELETE', `/v1/mcp/servers/${enc(s.name)}`);
      toast(t('deleted'), 'ok');
      await loadTools();
    }), 'remove'));
    else acts.append(ht('small', 'mut', 'mcpInFile'));
    for (const b of acts.querySelectorAll('button')) b.dataset.testid = 'mcp-' + (b.classList.contains('danger-text') ? 'remove' : 'reconnect');
    // An HTTP server without a token of its own logs in with OAuth; the browser comes back
    // to evolve on this machine, and the status is polled until it did.
    if (s.can_login) {
      if (s.login) title.append(' ', ht('span', 'badge' + (s.login_needed ? '' : ' good'), s.login_needed ? 'loginNeeded' : 'loggedIn'));
      if (s.login) title.lastChild.title = s.login;
      const b = acts.appendChild(btn('', null, guard(async () => {
        const tab = window.open('', '_blank');
        let r;
        try { r = await api('POST', `/v1/mcp/servers/${enc(s.name)}/login`); } catch (e) { tab?.close(); throw e; }
        if (tab) { tab.opener = null; tab.location = r.url; }
        toast(t('mcpLoginOpen', s.name, r.url), 'ok');
        for (const end = Date.now() + r.wait_secs * 1000; Date.now() < end;) {
          await new Promise(res => setTimeout(res, 1500));
          const st = await api('GET', `/v1/mcp/servers/${enc(s.name)}/login`);
          if (st.state === 'waiting') continue;
          const ok = st.state === 'logged_in';
          toast(ok ? t('mcpLoggedIn', s.name) : t('mcpLoginFailed', s.name, st.error || st.state), ok ? 'ok' : 'error');
          break;
        }
        await loadTools();
      }), 'logIn'));
      b.dataset.testid = 'mcp-login';
    }
    const ul = card.appendChild(h('ul', 'plain'));
    for (const tool of s.tools || []) {
      const full = tool.name.includes('__') ? tool.name : `${s.name}__${tool.name}`;
      const li = ul.appendChild(h('li', 'row'));
      const origin = h('small', 'mut', tOr('origin_' + tool.origin, tool.origin || ''));
      origin.title = tOr('originHint_' + tool.origin, '');
      li.append(h('code', null, full.slice(s.name.length + 2)), origin);
      li.title = tool.description || '';
      // Its definition replaced another: what changed, and that what was allowed is gone.
      if (tool.changed) {
        const w = li.appendChild(h('small', 'warn', t('defChanged', tool.changed.what)));
        w.dataset.testid = 'mcp-definition-changed';
        w.title = tool.changed.before ? t('defBefore', tool.changed.before) : '';
      }
      const sel = li.appendChild(options(h('select'), LEVELS, v => v === 'auto' ? t('auto') : v, tool.level));
      sel.setAttribute('aria-label', t('level') + ' ' + full);
      sel.dataset.tool = full;
      sel.onchange = guard(async () => {
        await api('PUT', `/v1/mcp/tools/${enc(full)}/level`, { level: sel.value });
        toast(t('levelSet', full, sel.value), 'ok');
        await loadTools();
      });
    }
  }
  if (!box.children.length) box.append(ht('p', 'mut', 'noServers'));
}

/** A command line as words: spaces split, quotes ("…", '…') group, \ escapes. */
function words(line) {
  const out = [];
  let cur = null, q = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (q) { if (c === q) q = null; else if (c === '\\' && q === '"' && i + 1 < line.length) cur += line[++i]; else cur += c; }
    else if (c === '"' || c === "'") { q = c; cur = cur ?? ''; }
    else if (c === '\\' && i + 1 < line.length) cur = (cur ?? '') + line[++i];
    else if (/\s/.test(c)) { if (cur != null) out.push(cur); cur = null; }
    else cur = (cur ?? '') + c;
  }
  if (cur != null) out.push(cur);
  return out;
}

const addMcp = formGuard(async e => {
  e.preventDefault();
  const name = $('#mcp-name').value.trim(), body = { name };
  if ($('#mcp-kind').value === 'http') body.url = $('#mcp-url').value.trim();
  else {
    const [command, ...args] = words($('#mcp-command').value);
    Object.assign(body, { command: command || '', args });
  }
  const r = await api('POST', '/v1/mcp/servers', body);
  // Started now, so a program that is not there is said at once, on its card.
  const c = await api('POST', `/v1/mcp/servers/${enc(r.name)}/reconnect`).catch(e => ({ connected: false, error: e.message }));
  S.mcpErrors[r.name] = c.connected ? null : c.error || '';
  $('#mcp-form').reset();
  mcpKind();
  $('#mcp-add-box').open = false;
  toast([t('mcpAdded', r.name), ...(r.notes || [])].join(' · '), 'ok');
  await loadTools();
});
function mcpKind() {
  const http = $('#mcp-kind').value === 'http';
  $('#mcp-form .mcp-http').hidden = !http;
  $('#mcp-form .mcp-stdio').hidden = http;
}

// ---------------------------------------------------------------- importing a dropped file
// On the Tools and Settings pages: an `{"mcpServers": …}` JSON file (Claude Desktop, Cursor,
// VS Code's "servers") adds its MCP servers; a config.toml sets the model settings of its
// [model] table. Either way the page shows what would change and asks first.

async function importFile(file) {
  const text = await file.text();
  let doc = null;
  try { doc = JSON.parse(text); } catch { /* not JSON: a config.toml */ }
  if (doc && typeof doc === 'object') return importMcp(file.name, doc);
  return importConfig(file.name, file);
}

async function importMcp(name, doc) {
  const servers = doc.mcpServers || doc.servers || (doc.mcp && doc.mcp.servers);
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) throw new Error(t('importNoServers', name));
  const have = new Map(((await api('GET', '/v1/mcp')).data || []).map(s => [s.name, s.source]));
  const plan = Object.entries(servers).map(([n, spec]) => {
    const how = spec && (spec.url || [spec.command, ...(spec.args || [])].filter(Boolean).join(' '));
    const src = have.get(n);
    return { n, spec, how: how || '?', act: src === 'config' ? 'skip' : src ? 'replace' : 'add' };
  });
  if (!plan.length) throw new Error(t('importNoServers', name));
  const lines = plan.map(p => `${p.act === 'add' ? '+' : p.act === 'replace' ? '~' : '–'} ${t('import_' + p.act, p.n)}: ${p.how}`);
  if (!plan.some(p => p.act !== 'skip')) return toast([t('importNothing', name), ...lines].join('\n'), 'info');
  if (!await ask(t('importMcpAsk', name) + '\n\n' + lines.join('\n'), { ok: t('importDo') })) return;
  const done = [], failed = [];
  for (const p of plan.filter(p => p.act !== 'skip')) {
    try {
      await api('POST', '/v1/mcp/servers', { ...p.spec, name: p.n, replace: p.act === 'replace' });
      done.push(p.n);
    } catch (e) { failed.push(`${p.n}: ${e.message}`); }
  }
  if (done.length) toast(t('importedMcp', done.join(', ')), 'ok');
  for (const f of failed) toast(f);
  if (S.view === 'tools') await loadTools();
}

async function importConfig(name, file) {
  let r;
  try {
    r = await (await req('POST', '/v1/settings/model/import', file)).json();
  } catch (e) { throw new Error(`${name}: ${e.message}`); }
  const lines = r.changes.map(c => `${t('importField_' + c.field)}: ${c.from || '—'} → ${c.to || '—'}`);
  const rest = r.left_out.length ? '\n\n' + t('importLeftOut', r.left_out.join(', ')) : '';
  if (!lines.length) return toast(t('importNothing', name) + rest, 'info');
  if (!await ask(t('importConfigAsk', name) + '\n\n' + lines.join('\n') + rest, { ok: t('importDo') })) return;
  await req('POST', '/v1/settings/model/import?apply=true', file);
  toast(t('importedConfig', name), 'ok');
  if (S.view === 'settings' && typeof loadSettings === 'function') await loadSettings();
  await checkModel();
}

/** Files dropped on a page that imports them. */
function importDrops(view) {
  const el = $(view);
  el.addEventListener('dragover', e => { if (e.dataTransfer.types.includes('Files')) { e.preventDefault(); el.classList.add('dropping'); } });
  el.addEventListener('dragleave', e => { if (!el.contains(e.relatedTarget)) el.classList.remove('dropping'); });
  el.addEventListener('drop', e => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    el.classList.remove('dropping');
    guard(async () => { for (const f of e.dataTransfer.files) await importFile(f); })();
  });
}

// ---------------------------------------------------------------- search, profile
const runSearch = guard(async e => {
  if (e) e.preventDefault();
  const q = $('#search-q').value.trim(), out = $('#search-results');
  if (!q) return;
  const r = await api('GET', '/v1/search?q=' + enc(q));
  out.replaceChildren(h('p', 'mut', t('results', q)));
  const section = (key, items, make) => {
    if (!items || !items.length) return;
    out.append(h('h3', null, t(key)));
    const ul = out.appendChild(h('ul', 'cards'));
    for (const it of items) {
      const li = ul.appendChild(h('li', 'card'));
      li.dataset.testid = 'search-hit';
      li.append(...make(it));
    }
  };
  section('sessions', r.sessions, s => [btn(s.title || t('untitled'), 'link', () => openSession(s.id))]);
  section('messages', r.messages, m => {
    const title = m.title || (S.sessions.find(s => s.id === m.session) || {}).title || m.session;
    return [btn(title, 'link', () => openSession(m.session)), h('p', null, m.snippet)];
  });
  section('memories', r.memories, m => [btn(`#${m.id}`, 'link', () => {
    $('#mem-q').value = m.content.slice(0, 60);
    show('memory');
  }), h('p', null, m.content)]);
  if (out.children.length === 1) out.append(h('p', 'mut', t('noResults')));
});

async function loadConfig() {
  const [cfg, health] = await Promise.all([api('GET', '/v1/config'), api('GET', '/health').catch(() => null)]);
  const names = (cfg.profiles || []).map(p => typeof p === 'string' ? p : p.name);
  const sel = $('#profile');
  if (cfg.profile && !names.includes(cfg.profile)) names.unshift(cfg.profile);
  // The top level of config.toml is a profile too: it stays listed after switching away.
  if (!names.includes('default')) names.unshift('default');
  options(sel, names, v => v === 'default' ? t('default') : v, cfg.profile || 'default');
  sel.closest('label').hidden = names.length < 2;
  // The version, and the model that answers now (a profile switch can change it).
  $('#version').textContent = [health && 'v' + health.version, cfg.model && cfg.model.main].filter(Boolean).join(' · ');
}

const switchProfile = guard(async () => {
  const profile = $('#profile').value;
  await api('POST', '/v1/config/profile', { profile });
  toast(t('profileSet', profile), 'ok');
  await loadConfig();
  await checkModel();
});

// Whether the model server answers, asked when the page opens (and after a profile
// switch), so a wrong or missing server is said before anything is sent: which URL,
// the error, and how to fix it.
let modelState = null;
async function checkModel() {
  try { modelState = await api('GET', '/v1/settings/model'); } catch (e) { if (e.offline) offline(true); return; }
  renderModel();
}

function renderModel() {
  const m = modelState, banner = $('#model-banner');
  if (!m) return;
  const title = $('#model-banner-title'), detail = $('#model-banner-detail'), hint = $('#model-banner-hint');
  if (!m.reachable) {
    title.textContent = t('modelDown', m.base_url);
    detail.textContent = webText(m.cause || m.error || '');
    hint.textContent = t(m.base_url_is_default ? 'modelHintDefault' : 'modelHintOther');
    banner.hidden = false;
  } else if (m.served === false && m.models.length) {
    title.textContent = t('modelNotServed', m.model, m.base_url);
    detail.textContent = '';
    hint.textContent = t('modelChoose', m.models.slice(0, 10).join(', '));
    banner.hidden = false;
  } else {
    banner.hidden = true;
  }
}

// ---------------------------------------------------------------- scheduled tasks
const when = s => s ? new Date(s).toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined,
  { dateStyle: 'short', timeStyle: 'short' }) : '';
const KIND_HINT = { every: '30m', daily: '07:30', cron: '0 9 * * mon-fri', at: '' };

function taskKind() {
  const kind = $('#task-kind').value, v = $('#task-value');
  v.type = kind === 'at' ? 'datetime-local' : 'text';
  v.placeholder = KIND_HINT[kind];
}

/** The schedule text the API reads (core's Schedule::parse): `at` gets the browser's
 *  local time as an RFC 3339 instant. */
function scheduleText() {
  const kind = $('#task-kind').value, v = $('#task-value').value.trim();
  if (kind === 'cron') return v;
  if (kind === 'at') {
    const d = new Date(v);
    return 'at ' + (isNaN(d) ? v : d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  }
  return `${kind} ${v}`;
}

async function loadTasks() {
  const r = await api('GET', '/v1/tasks'), ul = $('#task-list');
  $('#task-zone').textContent = r.time_zone ? t('timeZone', r.time_zone) : '';
  ul.replaceChildren(...(r.data || []).map(taskItem));
  if (!ul.children.length) ul.append(ht('li', 'mut pad', 'noTasks'));
}

function taskItem(task) {
  const li = h('li', 'card task');
  li.dataset.testid = 'task-item';
  li.dataset.id = task.id;
  const title = li.appendChild(h('h3', null, `#${task.id} `));
  title.append(h('code', null, task.schedule));
  if (task.running) title.append(ht('span', 'badge good', 'taskRunning'));
  if (task.paused) title.append(ht('span', 'badge', 'taskPaused'));
  li.append(h('p', 'mem-text', task.question));
  const change = guard(async p => {
    const now = await api('PATCH', `/v1/tasks/${enc(task.id)}`, p);
    // Drawn again meanwhile (the list was being read): the list is read once more.
    if (li.isConnected) li.replaceWith(taskItem(now)); else await loadTasks();
    toast(t('saved'), 'ok');
  });
  // Edit in place: the schedule as the server writes it (it reads the same forms).
  const edit = () => {
    const f = h('form', 'task-edit');
    const q = f.appendChild(h('textarea'));
    q.value = task.question;
    q.dataset.field = 'question';
    q.id = `task-${task.id}-q`;
    const sc = f.appendChild(h('input'));
    sc.value = task.schedule;
    sc.dataset.field = 'schedule|every|daily|cron|at|time|interval|minutes?|hours?';
    sc.id = `task-${task.id}-s`;
    sc.setAttribute('aria-label', t('taskWhen'));
    const row = f.appendChild(h('div', 'row end'));
    const ok = row.appendChild(ht('button', 'primary', 'save'));
    ok.type = 'submit';
    row.append(btn('', null, () => li.replaceWith(taskItem(task)), 'cancel'));
    f.onsubmit = formGuard(async e => {
      e.preventDefault();
      li.replaceWith(taskItem(await api('PATCH', `/v1/tasks/${enc(task.id)}`, { question: q.value, schedule: sc.value })));
      toast(t('saved'), 'ok');
    });
    li.replaceChildren(title, f);
    q.focus();
  };
  const facts = [task.allow,
    task.next_run ? t('nextRun', when(task.next_run)) : null,
    task.last_run ? t('lastRun', when(task.last_run)) + (task.last_status ? ` (${task.last_status})` : '') : t('neverRun')];
  li.append(h('small', 'mut', facts.filter(Boolean).join(' · ')));
  const log = h('ul', 'plain runs');
  const acts = li.appendChild(h('div', 'row'));
  acts.append(
    btn('', 'primary', guard(async () => {
      await api('POST', `/v1/tasks/${enc(task.id)}/run`);
      toast(t('runStarted', task.id), 'ok');
      // Follow the run (at most ~10 minutes), then show the task with its new status.
      for (let i = 0; i < 300 && li.isConnected; i++) {
        await new Promise(r => setTimeout(r, i < 10 ? 500 : 2000));
        const now = await api('GET', `/v1/tasks/${enc(task.id)}`);
        if (!now.running) { if (li.isConnected) li.replaceWith(taskItem(now)); return; }
      }
    }), 'runNow'),
    btn('', null, guard(async () => {
      if (log.childElementCount || log.dataset.open) { log.replaceChildren(); delete log.dataset.open; return; }
      const { data } = await api('GET', `/v1/tasks/${enc(task.id)}/runs?limit=20`);
      log.dataset.open = '1';
      log.replaceChildren(...(data || []).map(run => {
        const r = h('li', 'run');
        r.dataset.testid = 'task-run';
        r.append(h('small', 'mut', [when(run.started_at), run.trigger, run.status].filter(Boolean).join(' · ')));
        if (run.answer) r.append(fold(t('assistant'), run.answer));
        if (run.error) r.append(h('p', 'warn', run.error));
        return r;
      }));
      if (!log.children.length) log.append(ht('li', 'mut', 'noRuns'));
    }), 'taskLog'),
    btn('', null, () => { show('chat'); openSession(task.session); }, 'openChat'),
    btn('', null, edit, 'edit'),
    btn('', null, () => change({ paused: !task.paused }), task.paused ? 'resume' : 'pause'),
    btn('', 'danger-text', guard(async () => {
      if (!await ask(t('deleteTask', task.id), { danger: true, ok: t('delete') })) return;
      await api('DELETE', `/v1/tasks/${enc(task.id)}`);
      li.remove();
      toast(t('deleted'), 'ok');
    }), 'delete'));
  li.append(log);
  return li;
}

const addTask = formGuard(async e => {
  e.preventDefault();
  const question = $('#task-question').value.trim();
  if (!question) return;
  const task = await api('POST', '/v1/tasks', { schedule: scheduleText(), question, allow: $('#task-allow').value });
  $('#task-question').value = '';
  $('#task-value').value = '';
  toast(t('taskAdded', task.id), 'ok');
  await Promise.all([loadTasks(), loadSessions()]);
});

// ---------------------------------------------------------------- system prompt versions
async function loadPrompt(shown) {
  const { data } = await api('GET', '/v1/prompt'), tb = $('#prompt-table');
  tb.replaceChildren();
  const head = tb.appendChild(h('thead')).appendChild(h('tr'));
  for (const k of ['version', 'source', 'created', 'description', 'actions']) head.append(k === 'actions' ? h('th').appendChild(ht('span', 'vh', k)).parentNode : ht('th', null, k));
  const body = tb.appendChild(h('tbody'));
  for (const v of data || []) {
    const tr = body.appendChild(h('tr'));
    tr.dataset.testid = 'prompt-version';
    tr.dataset.version = v.version;
    tr.append(h('td', 'nowrap', String(v.version)));
    tr.lastChild.append(...(v.active ? [' ', ht('span', 'badge good', 'active')] : []));
    tr.append(h('td', 'nowrap', tOr('psrc_' + v.source, v.source)),
      h('td', 'nowrap', v.created || t('builtIn')),
      h('td', 'desc', `${v.first_line.slice(0, 90)}${v.first_line.length > 90 ? '…' : ''} (${t('chars', v.chars)})`));
    const td = tr.appendChild(h('td', 'nowrap')).appendChild(h('div', 'row'));
    td.append(btn('', 'link', guard(() => showPrompt(v.version)), 'view'));
    if (!v.active) td.append(btn('', null, guard(async () => {
      await api('POST', `/v1/prompt/${v.version}/activate`);
      toast(t('promptActive', v.version), 'ok');
      await loadPrompt();
    }), 'activate'));
  }
  await showPrompt(shown ?? 'active');
}

async function showPrompt(which) {
  const v = await api('GET', `/v1/prompt/${which}`);
  $('#prompt-shown').textContent = t('promptOf', v.version) + (v.active ? ` · ${t('active')}` : '');
  $('#prompt-text').value = v.text;
  promptChars();
}
const promptChars = () => { $('#prompt-chars').textContent = t('chars', [...$('#prompt-text').value].length); };

const savePrompt = formGuard(async e => {
  e.preventDefault();
  const v = await api('POST', '/v1/prompt', { text: $('#prompt-text').value });
  toast(t('promptActive', v.version), 'ok');
  await loadPrompt(v.version);
});

/** The lines of `a` and `b` as a diff: [' ' | '-' | '+', line] (longest common subsequence). */
function lineDiff(a, b) {
  const A = a.split('\n'), B = b.split('\n'), n = A.length, m = B.length;
  const L = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
    L[i][j] = A[i] === B[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && A[i] === B[j]) { out.push([' ', A[i++]]); j++; }
    else if (j < m && (i >= n || L[i][j + 1] >= L[i + 1][j])) out.push(['+', B[j++]]);
    else out.push(['-', A[i++]]);
  }
  return out;
}

/** The model proposes a new version; it is shown against the active one and becomes
 * active only when the person confirms. */
const evolvePrompt = guard(async () => {
  const b = $('#prompt-evolve');
  b.disabled = true;
  try {
    let v;
    try {
      v = await api('POST', '/v1/prompt/evolve', { propose: true });
    } catch (e) {
      // Nothing learned yet is a state, not a failure: said plainly.
      if (e.status === 409) return toast(e.message, 'info');
      throw e;
    }
    if (v.changed === false) { toast(t('promptKept'), 'ok'); return; }
    const box = $('#proposal-diff');
    box.replaceChildren(...lineDiff(v.current, v.text).map(([k, l]) =>
      h('span', k === '+' ? 'add' : k === '-' ? 'del' : null, `${k} ${l}\n`)));
    $('#proposal-note').textContent = v.note;
    $('#prompt-proposal').hidden = false;
    $('#prompt-proposal').scrollIntoView({ block: 'nearest' });
    $('#proposal-activate').onclick = guard(async () => {
      const r = await api('POST', '/v1/prompt', { text: v.text, note: v.note });
      $('#prompt-proposal').hidden = true;
      toast(t('promptActive', r.version), 'ok');
      await loadPrompt(r.version);
    });
  } finally { b.disabled = false; }
});

// ---------------------------------------------------------------- wiring
function init() {
  emptyState = $('#empty');
  applyI18n();
  setLang(LANG);
  theme();
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', theme);
  // The other look, then this look chosen, then back to following the system.
  $('#theme-toggle').onclick = () => {
    const system = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
    const now = store.get('evolve.theme');
    store.set('evolve.theme', !now ? (system === 'dark' ? 'light' : 'dark') : now !== system ? system : '');
    theme();
  };
  $('#lang-toggle').onclick = () => setLang(LANG === 'zh' ? 'en' : 'zh');
  $('#accent').onchange = () => { store.set('evolve.accent', $('#accent').value); theme(); };
  document.addEventListener('keydown', shortcuts);
  $('#menu').onclick = () => drawer(!document.body.classList.contains('drawer'));
  $('#backdrop').onclick = () => drawer(false);
  $('#new-chat').onclick = newChat;
  $('#new-chat-top').onclick = newChat;
  NARROW.addEventListener('change', placeholder);
  $('#messages').addEventListener('scroll', () => {
    const box = $('#messages');
    S.follow = box.scrollHeight - box.scrollTop - box.clientHeight < 160;
  }, { passive: true });
  for (const b of document.querySelectorAll('#nav button')) b.onclick = () => show(b.dataset.view);
  $('#session-filter').oninput = renderSessions;

  const input = $('#input');
  const grow = () => {
    input.style.height = 'auto';
    input.style.height = Math.min(input.scrollHeight, 220) + 'px';
  };
  input.oninput = grow;
  input.onkeydown = e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      $('#composer').requestSubmit();
    }
  };
  $('#composer').onsubmit = e => {
    e.preventDefault();
    if (S.busy) return;
    const images = S.images, files = S.files;
    // An image alone is asked about plainly (the API wants text with it).
    let text = input.value.trim() ? input.value : images.length ? t('imageAsk') : files.length ? t('filesAsk') : '';
    if (!text) return;
    if (files.length) text = text.trimEnd() + filesNote(files);
    input.value = '';
    S.images = [];
    S.files = [];
    renderAttachments();
    grow();
    send(text, null, images);
  };
  importDrops('#view-tools');
  importDrops('#view-settings');
  $('#attach').onclick = () => $('#attach-file').click();
  $('#attach-file').onchange = e => { attach([...e.target.files]); e.target.value = ''; };
  input.onpaste = e => {
    const files = [...(e.clipboardData && e.clipboardData.files) || []].filter(f => f.type.startsWith('image/'));
    if (files.length) { e.preventDefault(); attach(files); }
  };
  // Files dropped anywhere on the chat.
  const chat = $('#view-chat');
  chat.addEventListener('dragover', e => { if (e.dataTransfer.types.includes('Files')) { e.preventDefault(); chat.classList.add('dropping'); } });
  chat.addEventListener('dragleave', e => { if (e.target === chat || !chat.contains(e.relatedTarget)) chat.classList.remove('dropping'); });
  chat.addEventListener('drop', e => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    chat.classList.remove('dropping');
    attach([...e.dataTransfer.files]);
  });
  $('#stop').onclick = () => S.busy && S.busy.abort();

  $('#perm-allow').onclick = () => permAnswer('yes');
  $('#perm-run').onclick = () => permAnswer('yes');
  $('#perm-always').onclick = () => permAnswer('always');
  $('#perm-deny').onclick = () => permAnswer('no');
  // Escape must not leave a turn waiting: it counts as Deny.
  $('#perm').oncancel = e => { e.preventDefault(); permAnswer('no'); };
  $('#pending-open').onclick = () => {
    $('#pending-banner').hidden = true;
    for (const p of S.pendingList || []) permAsk(p);
  };

  $('#export').onclick = e => { if (e.target.closest('a,button')) $('#export').open = false; };
  $('#print').onclick = () => window.print();
  // The printed page (or PDF), from the button or the browser's menu, starts with the
  // chat's title and dates.
  window.addEventListener('beforeprint', () => {
    const s = S.sessions.find(x => x.id === S.session);
    $('#print-title').textContent = (s && s.title) || t('untitled');
    $('#print-date').textContent = [s && t('printCreated', ago(s.created_at)),
      t('printPrinted', new Date().toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined))].filter(Boolean).join(' · ');
  });

  let timer = 0;
  $('#mem-q').oninput = () => { clearTimeout(timer); timer = setTimeout(guard(loadMemory), 250); };
  $('#mem-search').onsubmit = e => { e.preventDefault(); guard(loadMemory)(); };
  $('#mem-new').onclick = () => {
    $('#mem-form').hidden = false;
    $('#mem-content').focus();
  };
  $('#mem-cancel').onclick = () => { $('#mem-form').reset(); $('#mem-form').hidden = true; fillLevelSelects(); };
  $('#mem-form').onsubmit = saveMemory;
  fillLevelSelects();
  $('#search-form').onsubmit = runSearch;
  $('#task-kind').onchange = taskKind;
  $('#task-form').onsubmit = addTask;
  $('#mcp-form').onsubmit = addMcp;
  $('#skill-new').onclick = newSkill;
  $('#mcp-kind').onchange = mcpKind;
  taskKind();
  $('#prompt-form').onsubmit = savePrompt;
  $('#prompt-text').oninput = promptChars;
  $('#prompt-evolve').onclick = evolvePrompt;
  $('#proposal-discard').onclick = () => { $('#prompt-proposal').hidden = true; toast(t('proposalDiscarded'), 'ok'); };
  $('#profile').onchange = switchProfile;

  const hash = location.hash.match(/^#s=(.+)$/);
  guard(async () => {
    await loadSessions();
    if (hash) await openSession(decodeURIComponent(hash[1]));
  })();
  guard(loadConfig)();
  checkModel();
  $('#model-recheck').onclick = checkModel;
  $('#offline-retry').onclick = retryServer;
  input.focus();
}

document.addEventListener('DOMContentLoaded', init);
