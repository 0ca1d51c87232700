// The tool-call cards of an answer, the same live and after a reload: level, tool, what came
// of it, progress of a running MCP tool, and the nested sub-turns of a `subtasks` call.
import { ht, lvl, pretty } from './net.js';
import { I18N, t } from './i18n.js';
import { h, md } from './md.js';

/** A collapsed block: a system message. */
export function fold(summary, text, cls) {
  const d = h('details', 'fold ' + (cls || ''));
  d.append(h('summary', null, summary), h('pre', null, text));
  return d;
}

/** What the server says of a call (`run`, `refused`, `no such tool` …), in the UI's language. */
export const answerText = a => {
  const key = 'ans_' + (a || '').replace(/\W+/g, '_');
  return !a || a === 'run' ? '' : key in I18N.en ? t(key) : a;
};

/** One card per tool call, the same live and after a reload: level, tool, what came of
 * it, and (collapsed) the arguments and the output. */
export function toolCard(c) {
  const d = h('details', 'chip'), s = d.appendChild(h('summary'));
  d.dataset.testid = 'tool-chip';
  d.dataset.id = c.id || '';
  s.append(lvl(c.level), ' ', h('code', null, c.name), ' ', h('span', 'state', t('running')));
  d.append(ht('div', 'cap', 'arguments'), h('pre', 'args', pretty(c.arguments)));
  return d;
}

/** How far a running MCP tool says it is: a bar when it knows the total, and its line. */
export function progressCard(d, p) {
  let bar = d.querySelector('progress');
  if (!bar) {
    bar = h('progress');
    bar.dataset.testid = 'tool-progress';
    d.querySelector('summary').append(' ', bar);
  }
  if (p.total > 0) { bar.max = p.total; bar.value = Math.min(p.progress, p.total); } else bar.removeAttribute('value');
  const n = x => (Number.isInteger(x) ? String(x) : x.toFixed(2));
  d.querySelector('.state').textContent = [t('running'), p.total > 0 ? n(p.progress) + '/' + n(p.total) : n(p.progress), p.message]
    .filter(Boolean).join(' · ');
}

export function settleCard(d, c, output) {
  d.dataset.done = '1';
  const bar = d.querySelector('progress');
  if (bar) bar.remove();
  d.classList.add(c.ran && !c.is_error ? 'good' : 'bad');
  if (c.level) d.querySelector('.lvl').replaceWith(lvl(c.level));
  d.querySelector('.state').textContent = [t(c.ran ? (c.is_error ? 'failed' : 'ran') : 'refused'),
    answerText(c.answer)].filter(Boolean).join(' · ');
  if (output != null && c.ran) d.append(ht('div', 'cap', 'output'), h('pre', 'out', output));
}

/** A sub-turn of a `subtasks` call (evolve.subtask): nested in the call's card, each
 * with its own tool cards and, once done, its answer. */
export function subtaskEvent(tools, j) {
  const card = [...tools.children].reverse().find(c => c.querySelector('code').textContent === 'subtasks');
  if (!card) return;
  let box = card.querySelector('.subtasks');
  if (!box) {
    box = card.appendChild(h('div', 'subtasks'));
    card.open = true;
  }
  let sub = box.querySelector(`[data-index="${j.index}"]`);
  if (!sub) {
    sub = box.appendChild(h('div', 'subtask'));
    sub.dataset.index = j.index;
    sub.dataset.testid = 'subtask';
    const head = sub.appendChild(h('div', 'head'));
    head.append(h('b', null, j.index + '. '), h('span', 'task', j.task || ''), ' ', h('span', 'state', t('running')));
    sub.append(h('div', 'sub-tools'));
  }
  const subTools = sub.querySelector('.sub-tools');
  if (j.phase === 'tool_start') subTools.append(toolCard(j));
  else if (j.phase === 'tool_end') {
    const c = [...subTools.children].find(x => !x.dataset.done && x.querySelector('code').textContent === j.name) ||
      subTools.appendChild(toolCard(j));
    settleCard(c, j, j.output);
  } else if (j.phase === 'end') {
    sub.classList.add(j.failed ? 'bad' : 'good');
    sub.querySelector('.state').textContent = j.failed ? t('failed') + ' · ' + j.failed : t('ran') + ' · ' + j.ms + ' ms';
    if (j.reply) {
      const r = sub.appendChild(h('div', 'sub-reply'));
      r.dataset.testid = 'subtask-reply';
      md(j.reply, r);
    }
  }
}
