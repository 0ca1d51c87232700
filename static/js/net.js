// Talking to the server and saying what went wrong: the shared page state `S`, `req`/`api`
// (same-origin JSON), the server's messages as the page says them (`webText`), the
// "cannot reach Evolve" notice, toasts, `guard`/`formGuard` (a failure is always shown),
// and small DOM helpers (`ht`, `btn`, the in-page `ask` dialog, the level badge).
import { I18N, LANG, t, tNamed } from './i18n.js';

export const $ = s => document.querySelector(s);
export const enc = encodeURIComponent;
export const S = { session: null, sessions: [], busy: null, perms: [], perm: null, view: 'chat', pendingList: [], shown: 0, images: [], files: [],
  runs: new Map(), mcpErrors: {} }; // runs: session id → its answer still coming in (shown or in the background)

/** The chat list's functions (`openSession`, `loadSessions`, `renderSessions`,
 * `liveSessions`) for the modules below sessions.js (chat, perm, layout): sessions.js puts
 * them here when it loads, before anything runs, so they call back up without importing
 * the module above them (which would close an import circle). */
export const up = {};

// ---------------------------------------------------------------- API and errors
async function errText(r) {
  const s = await r.text().catch(() => '');
  try {
    const j = JSON.parse(s);
    if (j.error && j.error.message) return webText(j.error.message, j.error.said);
  } catch { /* not JSON: show the text */ }
  return `HTTP ${r.status} ${r.statusText} ${s.slice(0, 200)}`.trim();
}

/** A server message as this page says it. In 中文: by its code (`said`: `{code, params}`,
 * see mini/src/web/said.rs) when the page knows the code, else by its words when it knows
 * them (texts stored without a code: a task run's error, a check's detail); otherwise as
 * the server wrote it. A command to run in a shell (`evolve mcp tools x`) is left out:
 * the page has the button for it. */
export function webText(msg, said) {
  const s = clean(msg);
  if (LANG !== 'zh') return s;
  if (said && said.code && ('srv_' + said.code) in I18N.zh) {
    const p = { ...said.params };
    if (p.field) p.field = t('cronField_' + p.field);
    if (p.message != null) {
      // A message without a code of its own (its status's): one the page knows by its
      // words is said whole, the rest inside its status's words.
      p.message = clean(p.message);
      const known = byWords(p.message);
      if (known) return known;
    }
    return tNamed('srv_' + said.code, p);
  }
  return byWords(s) || s;
}
const clean = msg => String(msg || '')
  .replace(/\s*\([^()]*`evolve [^`]*`[^()]*\)/g, '')
  .replace(/\s*(?:—|;|,)\s*(?:or\s+)?(?:run|use|check it with|see|with)\s+`evolve [^`]*`[^.;—)]*/g, '')
  .replace(/\s*—\s*is the server running\? set OPENAI_BASE_URL/g, '');
function byWords(s) {
  for (const [re, key] of SERVER_TEXT) {
    const m = s.match(re);
    if (m) return t(key, ...m.slice(1));
  }
  return null;
}
// Server messages the page says in 中文 (the rest stays as the server wrote it).
const SERVER_TEXT = [
  [/^cannot reach the model at (\S+): (.*)$/s, 'srvCannotReach'],
  [/^the model at (\S+) timed out \((.*)\)$/s, 'srvTimedOut'],
  [/^the model server at (\S+) answered HTTP (\d+)(?::\s*(.*))?$/s, 'srvStatus'],
  [/^no session (\S+)/, 'srvNoSession'],
  // A task's schedule (core's SchedError), what the Tasks form hears most.
  [/`([^`]*)` is not an interval\b/, 'srvNotInterval'],
  [/^`every` needs an interval/, 'srvNeedInterval'],
  [/`every ([^`]*)` is below the scheduler's resolution/, 'srvTooShort'],
  [/`every ([^`]*)` is longer than a year/, 'srvTooLong'],
  [/`([^`]*)` is not a time of day HH:MM/, 'srvNotTime'],
  [/^`daily` needs a time of day/, 'srvNeedTime'],
  [/a cron expression has 5 fields .*?`([^`]*)` has (\d+)/s, 'srvCronFields'],
  [/^the schedule is empty/, 'srvScheduleEmpty'],
  [/`([^`]*)` is not an RFC 3339 timestamp/, 'srvNotTimestamp'],
  [/^`at` needs a date and time/, 'srvNeedTimestamp'],
  [/^the question is empty/, 'srvQuestionEmpty'],
  [/^a turn is running in session (\S+); stop it first/, 'srvTurnRunning'],
  [/^turn (\d+) has no answer to rate/, 'srvNothingToRate'],
  [/^memory #(\d+) was (?:already )?deleted/, 'srvMemoryDeleted'],
  [/^no skill named "?([^"]*)"?/, 'srvNoSkill'],
  [/^no MCP server (\S+)/, 'srvNoMcp'],
];

/** A same-origin request; resolves to the JSON answer, rejects with the API's message. */
// Requests are numbered: an answer to a request sent before the last one that found the
// server gone does not say it is back (it left before the server went).
let sent = 0, failedAt = 0;

export async function req(method, path, body, signal) {
  let r;
  const n = ++sent;
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
    failedAt = Math.max(failedAt, n);
    throw Object.assign(new Error(t('errNetwork', e.message)), { offline: true });
  }
  if (n > failedAt) offline(false);
  if (r.status === 401) {
    location.href = '/login';
    throw new Error(t('errAuth'));
  }
  if (!r.ok) throw Object.assign(new Error(await errText(r)), { status: r.status });
  return r;
}
export const api = async (method, path, body) => {
  const r = await req(method, path, body);
  return r.status === 204 ? null : r.json();
};

/** Whether the Evolve server answers: when it does not, one notice at the top of the page
 * says so, with Retry (which reads the chats, the model's state and the page again). */
export function offline(down) {
  const box = $('#offline');
  if (!box || box.hidden === !down) return;
  box.hidden = !down;
  if (down) {
    $('#offline-where').textContent = t('offlineWhere', location.host);
    for (const x of $('#toasts').querySelectorAll('.toast.error')) x.remove();
  }
}

export function toast(msg, kind = 'error') {
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
export const guard = fn => async (...a) => {
  try { return await fn(...a); } catch (e) { problem(e); }
};
/** A failure shown: the server gone is the notice at the top; anything else a toast. */
export function problem(e) {
  if (e.name === 'AbortError') return;
  if (e.offline) offline(true); else toast(e.message);
}

/** Like `guard`, for a form: the server's 400 is shown next to the field it names
 * (`data-field` words; else the first field), not only as a toast. */
export const formGuard = fn => async e => {
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
export function ht(tag, cls, key, ...args) {
  const e = h(tag, cls, t(key, ...args));
  if (!args.length) e.dataset.i18n = key;
  return e;
}

/** A button with text (or a translated label when `key` is given). */
export function btn(text, cls, onclick, key) {
  const b = key ? ht('button', cls, key) : h('button', cls, text);
  b.type = 'button';
  b.onclick = onclick;
  return b;
}

/** An in-page confirm/prompt; resolves to true / the text, or null when cancelled. */
export function ask(msg, { input = null, danger = false, ok = t('ok') } = {}) {
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

export const ago = secs => secs ? new Date(secs * 1000).toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined,
  { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }) : '';
export const fmt = v => v == null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
/** A level badge; its title says what the level means (in the UI's language). */
export const lvl = l => {
  const e = h('span', 'lvl ' + (l || ''), l || '?');
  if (l && /^L[0-5]$/.test(l)) e.title = t('lvl_' + l);
  return e;
};
/** Fills a <select> with `values` (shown as `label(v)`), `value` chosen. */
// `dflt` is the option a form's reset() goes back to (without it, the first one).
export function options(sel, values, label, value, dflt) {
  sel.replaceChildren(...values.map(v => Object.assign(h('option', null, label(v)),
    { value: String(v), defaultSelected: dflt != null && String(v) === String(dflt) })));
  if (value != null) sel.value = String(value);
  return sel;
}

export function pretty(args) {
  try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return fmt(args); }
}

/** An element with an optional class and text. */
export function h(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}
