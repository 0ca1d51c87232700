// Permission questions (L3 one click, L4 a second step with the exact arguments), MCP
// elicitation forms, and the chat's "always allowed" list. The chat list is above this
// module: it is reached through `up` (net.js), not imported.
import { $, S, api, btn, enc, fmt, formGuard, guard, lvl, pretty, toast, up } from './net.js';
import { t } from './i18n.js';
import { h } from './md.js';

/** An `evolve.permission` event (or a pending call after a reload): ask the person. */
export function permAsk(ev) {
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

export async function permAnswer(answer) {
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
  if (run && run.perm && run.perm.call.id === ev.call.id) { run.perm = null; up.renderSessions(); }
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
    if ((await api('GET', `/v1/sessions/${enc(id)}`)).messages !== S.shown) return up.openSession(id);
    await new Promise(r => setTimeout(r, 1000));
  }
}

export function permReset() {
  S.perms = [];
  S.perm = null;
  if ($('#perm').open) $('#perm').close();
}

/**
 * An MCP server's question during a call (`elicitation/create`): a form in the chat, its
 * fields from the server's schema. Send checks it on the server (a 400 names the field);
 * Decline says no; Cancel leaves it unanswered. The model never sees or answers it.
 */
export function elicitForm(q) {
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

// ---------------------------------------------------------------- grants
/** The chat's "always allow" list (the session's tool whitelist), each with a Revoke button. */
export async function loadGrants() {
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
