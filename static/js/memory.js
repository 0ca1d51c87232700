// The Memory page: memories (search, add, edit, pin, delete) and the style notes.
import { $, ago, api, ask, btn, enc, formGuard, guard, ht, options, toast } from './net.js';
import { t, tOr } from './i18n.js';
import { h } from './md.js';

const PRIO = [0, 1, 2, 3], IMP = [1, 2, 3, 4, 5];
const CATEGORIES = ['general', 'fact', 'preference', 'instruction', 'reminder'];
function fillLevelSelects() {
  for (const s of document.querySelectorAll('select.prio')) options(s, PRIO, v => t('prio' + v), s.value || 2, 2);
  for (const s of document.querySelectorAll('select.imp')) options(s, IMP, String, s.value || 3, 3);
  for (const s of document.querySelectorAll('select.cat')) options(s, CATEGORIES, v => t('cat_' + v), s.value || 'general', 'general');
}
const tagList = s => s.split(/[,，]/).map(x => x.trim()).filter(Boolean);

export async function loadMemory() {
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

/** A memory as it reads: its text, then what ranks it (priority and importance, each
 * explained on hover and to a screen reader), its category and tags; Edit opens one form
 * for all of them, Pin and Delete act at once. */
function memItem(m) {
  const li = h('li', 'card mem' + (m.pinned ? ' pinned' : ''));
  li.dataset.testid = 'memory-item';
  li.dataset.id = m.id;
  const text = li.appendChild(h('p', 'mem-text', m.content));
  const facts = li.appendChild(h('p', 'mem-facts'));
  const fact = (label, value, hint) => {
    const f = facts.appendChild(h('span', 'fact'));
    f.append(h('span', 'mut', label + ' '), h('b', null, value));
    if (hint) {
      f.title = hint;
      f.tabIndex = 0;
      f.setAttribute('aria-label', `${label} ${value}: ${hint}`);
    }
  };
  fact(t('priority'), t('prio' + m.priority), t('priorityHint'));
  fact(t('importance'), `${m.importance}/5`, t('importanceHint'));
  fact(t('category'), t('cat_' + m.category));
  if ((m.tags || []).length) fact(t('tags'), m.tags.join(', '));
  const acts = li.appendChild(h('div', 'row'));
  const edit = acts.appendChild(btn('', 'link', () => editMemory(m, li, text, facts, acts), 'edit'));
  edit.dataset.testid = 'memory-edit';
  edit.setAttribute('aria-label', t('edit') + ': ' + m.content.slice(0, 60));
  acts.append(btn('', 'pin', guard(async () => {
    await api('PATCH', `/v1/memory/${enc(m.id)}`, { pinned: !m.pinned });
    toast(t('saved'), 'ok');
    await loadMemory(); // a pin moves it: pinned ones are listed first
  }), m.pinned ? 'unpin' : 'pin'));
  const del = acts.appendChild(btn('', 'danger-text', guard(async () => {
    if (!await ask(t('deleteMemory'), { danger: true, ok: t('delete') })) return;
    await api('DELETE', `/v1/memory/${enc(m.id)}`);
    li.remove();
    toast(t('deleted'), 'ok');
  }), 'delete'));
  del.dataset.testid = 'memory-delete';
  li.append(h('small', 'mut', [`#${m.id}`, m.pinned && t('pinned'), m.source === 'world' && t('fromWorld'), ago(m.updated_at || m.created_at)]
    .filter(Boolean).join(' · ')));
  return li;
}

/** The memory's form in place of its read view: text, priority, importance, category and
 * tags, saved together (only what changed is sent); Cancel or Escape leaves it as it was. */
function editMemory(m, li, ...shown) {
  const form = h('form', 'mem-edit');
  const ta = form.appendChild(h('textarea', 'edit-box'));
  ta.value = m.content;
  ta.rows = Math.min(8, m.content.split('\n').length + 1);
  ta.setAttribute('aria-label', t('memContent'));
  ta.dataset.field = 'content|text';
  const f = form.appendChild(h('div', 'fields'));
  const field = (key, el, name) => {
    const l = f.appendChild(h('label'));
    l.append(ht('span', null, key), el);
    l.title = tOr(key + 'Hint', '');
    el.dataset.field = name;
    return el;
  };
  const prio = field('priority', options(h('select', 'prio'), PRIO, v => t('prio' + v), m.priority), 'priority');
  const imp = field('importance', options(h('select', 'imp'), IMP, String, m.importance), 'importance');
  const cat = field('category', options(h('select', 'cat'), CATEGORIES, c => t('cat_' + c), m.category), 'category');
  const tags = field('tags', h('input'), 'tags?');
  tags.value = (m.tags || []).join(', ');
  form.append(ht('p', 'mut small', 'memFieldsHint'));
  const row = form.appendChild(h('div', 'row end'));
  const save = row.appendChild(ht('button', 'primary', 'save'));
  save.type = 'submit';
  save.dataset.testid = 'memory-save';
  const close = () => { form.replaceWith(...shown); shown[shown.length - 1].querySelector('button').focus(); };
  row.append(btn('', null, close, 'cancel'));
  form.onkeydown = e => { if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); } };
  form.onsubmit = formGuard(async e => {
    e.preventDefault();
    const now = { content: ta.value.trim(), priority: +prio.value, importance: +imp.value, category: cat.value, tags: tagList(tags.value) };
    const patch = Object.fromEntries(Object.entries(now).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(k === 'tags' ? m.tags || [] : m[k])));
    if (!now.content) return;
    if (Object.keys(patch).length) {
      const changed = await api('PATCH', `/v1/memory/${enc(m.id)}`, patch);
      toast(t('saved'), 'ok');
      li.replaceWith(memItem(changed));
    } else close();
  });
  shown[0].before(form);
  for (const x of shown) x.remove();
  ta.focus();
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

// The page's fixed controls (index.html), wired when the page is first shown.
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
document.addEventListener('evolve:lang', fillLevelSelects);
