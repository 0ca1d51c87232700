// The conversation: messages, their actions (copy, edit, regenerate, 👍/👎), the stored
// history drawn again, and sending a question with its answer streamed (SSE) as it comes.
import { $, S, api, btn, enc, fmt, guard, ht, offline, req, toast, up, webText } from './net.js';
import { fold, progressCard, settleCard, subtaskEvent, toolCard } from './cards.js';
import { t } from './i18n.js';
import { setSession, setTitle } from './layout.js';
import { copyText, enlarge, h, md, mdText } from './md.js';
import { checkModel, modelState } from './model.js';
import { elicitForm, loadGrants, permAsk, permReset } from './perm.js';
import { turnCard } from './turn.js';

/** The empty chat's welcome: out of the page while a chat is shown, back for a new one.
 * (Modules run once the page is parsed, so it is there.) */
export const emptyState = document.getElementById('empty');

export function bubble(role, text) {
  const el = h('div', 'msg ' + role), body = h('div', 'body');
  el.dataset.testid = 'msg-' + role;
  el.append(ht('div', 'who', role === 'user' ? 'you' : 'assistant'));
  const tools = el.appendChild(h('div', 'tools'));
  el.append(body);
  const b = { el, body, tools, text: text || '' };
  el.bubble = b;
  return b;
}

export function userMsg(text, turn, images = []) {
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

/** Copy on every message; Edit on every question and Regenerate on every answer of a
 * stored turn (a new version of that turn: the turns after it stay on the old branch);
 * ‹ k/m › on a question whose turn has more than one version. */
export function actions() {
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
    if (el.classList.contains('user') && +el.dataset.versions > 1) row.prepend(versionNav(el));
    if (S.busy || !last || !el.dataset.turn) continue;
    const n = el.dataset.turn;
    // A turn not yet stored (no chat yet) can only be the last one.
    if (!S.session && n !== last) continue;
    if (el.classList.contains('user')) {
      const e = row.appendChild(btn('', 'link', () => editQuestion(el), 'edit'));
      e.dataset.testid = 'edit';
    } else if (!el.querySelector('[data-testid=retry]')) {
      const r = row.appendChild(btn('', 'link', () => redo(n), 'regenerate'));
      r.dataset.testid = 'regenerate';
    }
  }
}

/** ‹ k/m › under a question: shows the turn's previous or next version, and the branch
 * after it (the model's history follows what is shown). */
function versionNav(el) {
  const k = +el.dataset.version, m = +el.dataset.versions, n = el.dataset.turn, sid = S.session;
  const nav = h('span', 'versions');
  nav.dataset.testid = 'versions';
  const go = to => guard(async () => {
    if (S.busy) return toast(t('busy'), 'info');
    const j = await api('PUT', `/v1/sessions/${enc(sid)}/turns/${n}/shown`, { version: to });
    if (S.session === sid) renderHistory(j || {});
  });
  const prev = btn('‹', 'link', go(k - 1));
  const next = btn('›', 'link', go(k + 1));
  prev.dataset.testid = 'version-prev';
  next.dataset.testid = 'version-next';
  prev.disabled = S.busy || k <= 1;
  next.disabled = S.busy || k >= m;
  prev.title = t('prevVersion');
  next.title = t('nextVersion');
  prev.setAttribute('aria-label', prev.title);
  next.setAttribute('aria-label', next.title);
  const label = h('span', 'mut', `${k}/${m}`);
  label.dataset.testid = 'version-label';
  label.title = t('versionOf', k, m);
  nav.append(prev, label, next);
  return nav;
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

/** Answers turn `n` again with its question (edited: `text`): a new version of it in
 * a stored chat. */
function redo(n, text) {
  const q = text ?? questionOf(n);
  if (!q) return;
  const el = questionEl(n);
  send(q, S.session ? +n : null, (el && el.bubble.images) || []);
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

/** Takes out turn `n` and everything after it (the branch a new version of `n` leaves);
 * returns them, to put back if the server refuses. */
function leaveBranch(n) {
  const all = [...$('#messages').querySelectorAll(':scope > *')];
  const at = all.findIndex(el => el.dataset.turn === String(n));
  if (at < 0) return null;
  const els = all.slice(at);
  for (const el of els) el.remove();
  return els;
}

export function renderHistory({ data = [], failed = {}, turns = {}, stored }) {
  const box = $('#messages');
  box.replaceChildren();
  // How many messages the server had (other branches' included): a follow-up after a
  // reload reads the chat again when it changes.
  S.shown = stored ?? data.length;
  let group = [], answer = null, cards = {};
  // Each turn's place in the conversation shown (the number a person sees).
  const place = {};
  for (const m of data) if (m.role === 'user') place[m.turn] = m.position;
  let count = 0;
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
    group.push(turnCard(null, n, S.session, turns[n], place[n] || count));
    box.append(...group);
    group = []; answer = null; cards = {};
  };
  let turn = null;
  for (const m of data) {
    if (m.turn !== turn) { close(turn); turn = m.turn; count++; }
    const text = typeof m.content === 'string' ? m.content : fmt(m.content);
    if (m.role === 'user') {
      const q = userMsg(text, m.turn, m.images || []);
      q.dataset.version = m.version || 1;
      q.dataset.versions = m.versions || 1;
      group.push(q);
    }
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

export function busy(on) {
  $('#send').hidden = on;
  $('#stop').hidden = !on;
  document.body.classList.toggle('busy', on);
}

/** Sends a question; `replace`: the number of a turn shown, answered again with it
 * (regenerate, edit): a new version of it; that turn and the ones after it leave the
 * page (they stay on their branch, a ‹ k/m › away). */
export async function send(text, replace = null, images = []) {
  if (S.busy) return toast(t('busy'), 'info');
  if (!text.trim()) return;
  const box = $('#messages');
  emptyState.remove();
  let n = (S.lastTurn || 0) + 1;
  const old = replace ? leaveBranch(replace) : null;
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
    up.liveSessions();
    if (run.attached) setSession(id); else up.renderSessions();
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
        up.renderSessions();
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
      else if (ev === 'evolve.error') throw new Error(webText(j.error && j.error.message, j.error && j.error.said) || t('errTurn'));
    }
    if (!done) throw new Error(t('cutOff'));
  } catch (e) {
    if (e.name === 'AbortError') failNote(a.el, t('stopped'), true);
    else if (old && e.status === 409) {
      // The server did not take it as a new version (the turn is not shown any more,
      // or a call waits): the turns stay as they were.
      u.before(...old);
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
        await up.loadSessions();
        if (S.session === run.session && !S.busy) await up.openSession(run.session);
      })();
      return;
    }
    S.busy = null;
    S.run = null;
    busy(false);
    permReset();
    if (!reverted) S.lastTurn = n;
    if (!acc && !a.tools.children.length && !a.el.querySelector('.err,.note')) a.el.remove();
    if (rec) {
      // Its place: after the questions shown before it.
      const place = [...box.querySelectorAll(":scope > .msg.user")].indexOf(u) + 1 || rec.turn;
      (a.el.isConnected ? a.el : u).after(turnCard(rec, rec.turn, rec.session || S.session, null, place));
    }
    actions();
    scrollEnd();
    guard(async () => {
      await up.loadSessions();
      // A new chat whose first turn stored nothing (stopped, failed) is forgotten by the
      // server: the next message starts a new one.
      if (S.session && !S.sessions.some(s => s.id === S.session)) {
        S.session = null;
        history.replaceState(null, '', location.pathname);
        setTitle();
      }
      // An "always" given during the turn is on the list now.
      await loadGrants();
      // A new version: the page shows the branch as stored, with its ‹ k/m ›.
      if (replace && !reverted && S.session && S.session === run.session && !S.busy) {
        const j = await api('GET', `/v1/sessions/${enc(S.session)}/messages`);
        if (S.session === run.session && !S.busy) renderHistory(j || {});
      }
    })();
  }
}
