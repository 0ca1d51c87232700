// The page's frame: which view is shown (and reading its data), the title, the open chat
// in the address, theme and accent, language, the keyboard shortcuts and the composer's hint.
import { $, S, api, ask, enc, guard, offline, problem, up } from './net.js';
import { applyI18n, setLanguage, store, t } from './i18n.js';
import { checkModel, renderModel } from './model.js';

export function drawer(open) { document.body.classList.toggle('drawer', open); }

export function show(view) {
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

// The pages besides the chat, each a module loaded the first time it is shown (the chat
// needs none of them): its module, and the function that reads and draws its data. A
// page module wires its own controls and adds its own strings when it loads.
const PAGES = {
  memory: ['memory.js', 'loadMemory'], skills: ['skills.js', 'loadSkills'], tools: ['tools.js', 'loadTools'],
  tasks: ['tasks.js', 'loadTasks'], prompt: ['prompt.js', 'loadPrompt'], settings: ['settings.js', 'loadSettings'],
  channels: ['channels.js', 'loadChannels'], usage: ['usage.js', 'loadUsage'],
};
const loaded = new Set(), failed = {};

/** The module of a page (`PAGES`), loaded once; its strings are put into the page then.
 * A module that could not be fetched is said as any request is (signed out: the login
 * form; the server gone: its notice) and asked for again next time (a browser keeps a
 * failed module, so under another name). */
export async function page(view) {
  const file = PAGES[view][0];
  let mod;
  try {
    mod = await import(failed[view] ? `./${file}?again=${failed[view]}` : `./${file}`);
  } catch (e) {
    failed[view] = (failed[view] || 0) + 1;
    await api('GET', '/v1/config');
    throw e;
  }
  if (!loaded.has(view)) {
    loaded.add(view);
    applyI18n($('#view-' + view));
  }
  return mod;
}

/** Reads the shown pane's data from the server again (and draws it). */
function loadView() {
  const p = PAGES[S.view];
  if (p) guard(async () => (await page(S.view))[p[1]]())();
}

export function setTitle() {
  const s = S.sessions.find(x => x.id === S.session);
  $('#title').textContent = S.view !== 'chat' ? t('nav_' + S.view)
    : S.session ? (s && s.title) || t('untitled') : t('newChat');
  $('#export').hidden = S.view !== 'chat' || !S.session;
  document.title = $('#title').textContent + ' · Evolve';
}

export function setSession(id) {
  if (!id || id === S.session) return;
  S.session = id;
  history.replaceState(null, '', '#s=' + enc(id));
  for (const f of ['md', 'html', 'json']) $('#export-' + f).href = `/v1/sessions/${enc(id)}/export?format=${f}`;
  setTitle();
  up.renderSessions();
}

export function theme() {
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
export function shortcuts(e) {
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
export const NARROW = matchMedia('(max-width: 600px)');
export function placeholder() { $('#input').placeholder = t(NARROW.matches ? 'inputPhShort' : 'inputPh'); }

export function setLang(lang) {
  setLanguage(lang);
  store.set('evolve.lang', lang);
  applyI18n();
  placeholder();
  theme();
  $('#lang-toggle').textContent = lang === 'zh' ? 'English' : '中文';
  up.renderSessions();
  setTitle();
  renderModel();
  // What the server's data drew in the old language is drawn again.
  if (S.view !== 'chat') loadView();
  else if (S.session && !S.busy && document.querySelector('#messages .msg')) up.openSession(S.session);
  // A loaded page redraws what it drew itself (the Settings form, the Memory form's lists).
  document.dispatchEvent(new Event('evolve:lang'));
}

export async function retryServer() {
  $('#offline-retry').disabled = true;
  try {
    await api('GET', '/v1/config');
    offline(false);
    await up.loadSessions();
    loadView();
    checkModel();
  } catch (e) { problem(e); } finally { $('#offline-retry').disabled = false; }
}