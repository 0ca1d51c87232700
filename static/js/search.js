// Search (Ctrl+K) over chats, messages and memories.
import { $, S, api, btn, enc, guard } from './net.js';
import { t } from './i18n.js';
import { show } from './layout.js';
import { h } from './md.js';
import { openSession } from './sessions.js';

export const runSearch = guard(async e => {
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
