// The Skills page: the skills listed, a SKILL.md shown, edited or created.
import { $, api, ask, btn, enc, formGuard, guard, ht, toast } from './net.js';
import { t } from './i18n.js';
import { h, md } from './md.js';

export async function loadSkills() {
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

export const openSkill = guard(async name => {
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

// The page's fixed control (index.html), wired when the page is first shown.
$('#skill-new').onclick = newSkill;
