// The chat list in the sidebar (tasks' chats grouped; a chat still answering listed from
// its question), rename and delete, and opening a chat (rejoining an answer still coming in,
// and calls left waiting after a reload). The modules below (chat.js, perm.js, layout.js)
// reach the list's functions through `up` (net.js), filled in at the end of this file.
import { $, S, ago, api, ask, btn, enc, guard, ht, toast, up } from './net.js';
import { actions, bubble, busy, emptyState, renderHistory, userMsg } from './chat.js';
import { t } from './i18n.js';
import { setSession, setTitle, show } from './layout.js';
import { h } from './md.js';
import { elicitForm, loadGrants, permAsk, permReset } from './perm.js';

export async function loadSessions() {
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
export function liveSessions() {
  for (const r of S.runs.values()) {
    if (!S.sessions.some(s => s.id === r.session)) S.sessions.unshift({ id: r.session, title: r.title, updated_at: r.started });
  }
}

/** A small line icon (SVG: the page's fonts may have no emoji). */
function icon(d) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('aria-hidden', 'true');
  const path = svg.appendChild(document.createElementNS('http://www.w3.org/2000/svg', 'path'));
  path.setAttribute('d', d);
  return svg;
}
const PIN = 'M9 3h6l-1 6 4 4H6l4-4zM12 13v8', BOX = 'M3 4h18v4H3zM5 8v12h14V8M10 12h4';

/** The chat list: pinned chats first, the chats of scheduled tasks and the archived ones
 * in groups of their own (opened when a filter is typed or the open chat is in them). */
export function renderSessions() {
  const q = $('#session-filter').value.trim().toLowerCase(), top = $('#sessions');
  top.replaceChildren();
  const groups = {
    tasks: { el: h('details', 'task-chats'), inner: h('ul'), label: n => t('taskChats', n) },
    archived: { el: h('details', 'task-chats archived'), inner: h('ul'), label: n => t('archivedChats', n) },
  };
  groups.tasks.el.dataset.testid = 'task-chats';
  groups.archived.el.dataset.testid = 'archived-chats';
  const tasks = S.taskSessions || new Set();
  for (const s of [...S.sessions.filter(x => x.pinned), ...S.sessions.filter(x => !x.pinned)]) {
    const group = s.archived ? groups.archived : tasks.has(s.id) ? groups.tasks : null;
    const title = s.title || t('untitled');
    if (q && !title.toLowerCase().includes(q)) continue;
    if (group && (q || s.id === S.session)) group.el.open = true;
    const li = h('li', [s.id === S.session && 'on', s.pinned && 'pinned'].filter(Boolean).join(' '));
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
    const tool = (sym, cls, fn, label, testid) => {
      const b = li.appendChild(btn(typeof sym === 'string' ? sym : '', 'icon ' + cls, fn));
      if (typeof sym !== 'string') b.append(sym);
      b.title = label;
      b.setAttribute('aria-label', label + ': ' + title);
      b.dataset.testid = testid;
      // One Tab stop per chat: its buttons are reached on the chat that is open.
      if (s.id !== S.session) b.tabIndex = -1;
      return b;
    };
    tool(icon(PIN), 'pin', () => markSession(s, { pinned: !s.pinned }), t(s.pinned ? 'unpinChat' : 'pinChat'), 'session-pin')
      .setAttribute('aria-pressed', String(!!s.pinned));
    tool(icon(BOX), 'arch', () => markSession(s, { archived: !s.archived }), t(s.archived ? 'unarchiveChat' : 'archiveChat'), 'session-archive');
    tool('✎', 'ren', () => renameSession(s), t('rename'), 'session-rename');
    tool('✕', 'del', () => deleteSession(s), t('delete'), 'session-delete');
    (group ? group.inner : top).append(li);
  }
  for (const g of [groups.tasks, groups.archived]) {
    if (!g.inner.children.length) continue;
    g.el.append(h('summary', null, g.label(g.inner.children.length)), g.inner);
    top.appendChild(h('li', 'group')).append(g.el);
  }
  if (!top.children.length) top.append(h('li', 'mut pad', t(!S.listed ? 'loading' : S.sessions.length ? 'noMatch' : 'noSessions')));
}

/** Pins or archives a chat (or undoes it); the list is read again. */
const markSession = guard(async (s, change) => {
  await api('PATCH', `/v1/sessions/${enc(s.id)}`, change);
  if ('archived' in change) toast(t(change.archived ? 'chatArchived' : 'chatUnarchived', s.title || t('untitled')), 'ok');
  await loadSessions();
});

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

export function newChat() {
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

export const openSession = guard(async id => {
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

Object.assign(up, { liveSessions, loadSessions, openSession, renderSessions });
