// The turn card under an answer: what the turn did (memories, skills, tools and how each
// call was decided, evaluation, tokens, time), fetched when opened after a reload.
import { api, btn, enc, fmt, lvl, pretty } from './net.js';
import { answerText } from './cards.js';
import { t, tOr } from './i18n.js';
import { page, show } from './layout.js';
import { h } from './md.js';

/** The line of a turn card: the turn's place, memories, tools, score, time. */
function turnLine(place, mem, tools, score, ms) {
  const bits = [t('turnN', place)];
  if (mem) bits.push(`${t('memories')} ${mem}`);
  if (tools) bits.push(`${t('tools')} ${tools}`);
  if (score != null) bits.push(`${t('evaluation')} ${(+score).toFixed(2)}`);
  if (ms != null) bits.push(`${ms} ms`);
  return bits.join(' · ');
}

/** The turn card: what a turn did. `rec` may be null (after a reload): fetched when
 * opened; `line` is then its summary from the session's messages. `n` is the turn as
 * stored (what the server knows it by); `place` its place in the conversation shown,
 * the number the card says (a new version of turn 2 is stored later, and is turn 2). */
export function turnCard(rec, n, sid, line, place) {
  const d = h('details', 'turn'), sum = h('summary', null, t('turnN', place)), body = h('div', 'turn-body');
  d.dataset.testid = 'turn-card';
  d.dataset.turn = n;
  d.dataset.place = place;
  d.append(sum, body);
  const fill = r => {
    rec = r = { memories: [], tools: [], skills: [], usage: {}, ...r };
    sum.textContent = turnLine(place, r.memories.length, r.tools.length, r.evaluation && r.evaluation.score, r.answer_ms);
    body.replaceChildren(turnBody(r));
  };
  if (rec) fill(rec);
  else if (line) sum.textContent = turnLine(place, line.memories, line.tools, line.score, line.answer_ms);
  d.addEventListener('toggle', async () => {
    if (!d.open || (rec && rec.evaluation)) return;
    try {
      fill(await api('GET', `/v1/sessions/${enc(sid)}/turns/${n}`));
    } catch (e) {
      if (!rec) body.replaceChildren(h('p', 'err', e.message));
    }
  });
  return d;
}

/** How a call was decided, in words (`ask_once` → "asked once"). */
function decisionText(d) {
  if (d && typeof d === 'object') {
    const k = Object.keys(d)[0];
    return k === 'refuse' ? t('dec_refuse') : tOr('dec_' + k, fmt(d));
  }
  return d ? tOr('dec_' + d, fmt(d)) : '';
}

function turnBody(r) {
  const dl = h('dl');
  const row = (key, ...vals) => {
    dl.append(h('dt', null, t(key)));
    const dd = dl.appendChild(h('dd'));
    dd.append(...(vals.length ? vals : [t('none')]));
  };
  const list = items => {
    const ul = h('ul');
    for (const it of items) ul.appendChild(h('li')).append(...it);
    return ul;
  };
  row('memories', t('memOf', r.memories.length, r.memories_considered),
    ...(r.memories.length ? [list(r.memories.map(m => [h('b', 'score', m.score.toFixed(2)), ' ', m.content,
      h('small', 'mut', ` (#${m.id} · ${tOr('why_' + m.reason, fmt(m.reason))} · ${t('relevance', (+m.relevance).toFixed(2))})`)]))] : []));
  row('skills', ...(r.skills.length ? [r.skills.join(', ')] : []));
  row('tools', ...(r.tools.length ? [list(r.tools.map(c => [lvl(c.level), ' ', h('code', null, c.name), ' ',
    [decisionText(c.decision), answerText(c.answer), t(c.ran ? (c.is_error ? 'failed' : 'ran') : 'refused'),
      c.ran ? t('chars', c.output_chars) : ''].filter(Boolean).join(' → '),
    h('pre', null, pretty(c.arguments))]))] : []));
  if (r.needs_person) row('tools', t('needsPerson'));
  row('evaluation', r.evaluation ? `${r.evaluation.score.toFixed(2)} — ${r.evaluation.reason}` : t('notYet'));
  row('reflection', ...(r.reflection ? [r.reflection] : []));
  if (r.learned_skill) row('learnedSkill', btn(r.learned_skill, 'link', async () => { show('skills'); (await page('skills')).openSkill(r.learned_skill); }));
  if (r.skill_pending) row('skillPending', t('skillPendingHint', r.skill_pending));
  if (r.lesson) row('lessonSaved', r.lesson);
  // A server that reports no usage: said so, not "0 in / 0 out".
  const u = r.usage || {}, m = u.main || {}, c = u.cheap || {};
  const tok = (key, x) => x.prompt_tokens || x.completion_tokens ? t(key, x.prompt_tokens ?? 0, x.completion_tokens ?? 0) : t(key + 'None');
  row('tokens', tok('tokMain', m), h('br'), tok('tokCheap', c));
  row('timing', t('timeVal', r.answer_ms, Math.round(r.overhead_ms), r.steps));
  return dl;
}
