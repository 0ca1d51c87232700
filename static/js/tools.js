// The Tools page: every tool with its level and source, MCP servers (add, reconnect,
// remove), and importing a dropped mcpServers JSON or config.toml.
import { $, S, api, ask, btn, enc, formGuard, guard, ht, lvl, options, toast, webText } from './net.js';
import { importDrops } from './drop.js';
import { t, tOr } from './i18n.js';
import { h } from './md.js';

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

export async function loadTools() {
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


// The page's fixed controls (index.html), wired when the page is first shown.
$('#mcp-form').onsubmit = addMcp;
$('#mcp-kind').onchange = mcpKind;
importDrops('#view-tools', loadTools);
