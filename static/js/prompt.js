// The Prompt page: system prompt versions, a new one saved, the model's proposal shown as a diff.
import { $, api, btn, formGuard, guard, ht, toast } from './net.js';
import { t, tOr } from './i18n.js';
import { h } from './md.js';

export async function loadPrompt(shown) {
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

// The page's fixed controls (index.html), wired when the page is first shown.
$('#prompt-form').onsubmit = savePrompt;
$('#prompt-text').oninput = promptChars;
$('#prompt-evolve').onclick = evolvePrompt;
$('#proposal-discard').onclick = () => { $('#prompt-proposal').hidden = true; toast(t('proposalDiscarded'), 'ok'); };
