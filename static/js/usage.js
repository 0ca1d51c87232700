// The Usage page: the model work the turns cost (tokens of the main and the cheap model,
// and money when prices are set), today against the daily budget, the last 14 days as
// bars, and per chat and per scheduled task. A server without `/v1/usage` answers 404:
// the page says so.
import { $, api, btn } from './net.js';
import { I18N, LANG, t } from './i18n.js';
import { h } from './md.js';
import { openSession } from './sessions.js';

Object.assign(I18N.en, {
  useMissing: 'Usage is not available in this build of Evolve (the server has no /v1/usage).',
  useToday: 'Today', useTurns: 'Turns', useMain: 'Main model', useCheap: 'Cheap model', useCost: 'Cost',
  useTokIO: '{0} in · {1} out', useNoCost: 'no prices set', useDays: 'The last 14 days', useSessions: 'Per chat',
  useTasks: 'Per scheduled task', useRuns: 'Runs', useTotal: 'Tokens', useNone: 'Nothing yet.',
  useBudget: 'Daily budget', useBudgetOf: '{0} of {1} tokens used today ({2}%)', useBudgetNone: 'No daily budget: {0} tokens used today.',
  useBudgetOver: 'The daily budget is spent: turns stop until tomorrow.', useDayLine: '{0}: {1} tokens, {2} turns',
  useChat: 'Chat', useTask: 'Task',
});
Object.assign(I18N.zh, {
  useMissing: '这个版本的 Evolve 不支持用量统计（服务器没有 /v1/usage）。',
  useToday: '今天', useTurns: '轮次', useMain: '主模型', useCheap: '辅助模型', useCost: '费用',
  useTokIO: '输入 {0} · 输出 {1}', useNoCost: '未设置价格', useDays: '最近 14 天', useSessions: '按对话',
  useTasks: '按定时任务', useRuns: '运行次数', useTotal: '令牌', useNone: '还没有。',
  useBudget: '每日预算', useBudgetOf: '今天已用 {0} / {1} 个令牌（{2}%）', useBudgetNone: '没有每日预算：今天已用 {0} 个令牌。',
  useBudgetOver: '今天的预算已用完：明天之前不再回答。', useDayLine: '{0}：{1} 个令牌，{2} 轮',
  useChat: '对话', useTask: '任务',
});

const num = n => Number(n || 0).toLocaleString(LANG === 'zh' ? 'zh-CN' : 'en');
/** All tokens of one model's counts (prompt + completion). */
const tokens = m => (m && (m.prompt_tokens || 0) + (m.completion_tokens || 0)) || 0;
const both = x => tokens(x.main) + tokens(x.cheap);
const io = m => t('useTokIO', num(m && m.prompt_tokens), num(m && m.completion_tokens));
const money = c => c == null ? t('useNoCost') : c.toLocaleString(LANG === 'zh' ? 'zh-CN' : 'en', { maximumFractionDigits: 4 });

export async function loadUsage() {
  const box = $('#usage');
  let u;
  try {
    u = await api('GET', '/v1/usage');
  } catch (e) {
    if (e.status !== 404 && e.status !== 405) throw e;
    const p = h('p', 'card mut', t('useMissing'));
    p.dataset.testid = 'usage-missing';
    box.replaceChildren(p);
    return;
  }
  box.replaceChildren(today(u.today || {}), budget(u.budget || {}, u.today || {}), days(u.days || []),
    table('useSessions', u.sessions || [], 'useChat', 'useTurns', s => s.turns,
      s => btn(s.title || t('untitled'), 'link', () => openSession(s.id))),
    table('useTasks', u.tasks || [], 'useTask', 'useRuns', x => x.runs, x => h('span', null, x.name || x.id)));
}

function today(d) {
  const card = h('section', 'card');
  card.dataset.testid = 'usage-today';
  card.append(h('h2', null, t('useToday')));
  const dl = card.appendChild(h('dl', 'usage-today'));
  for (const [k, v] of [['useTurns', num(d.turns)], ['useMain', io(d.main)], ['useCheap', io(d.cheap)], ['useCost', money(d.cost)]]) {
    dl.append(h('dt', null, t(k)), h('dd', null, v));
  }
  return card;
}

function budget(b, d) {
  const card = h('section', 'card');
  card.dataset.testid = 'usage-budget';
  card.append(h('h2', null, t('useBudget')));
  const used = b.used_today ?? both(d);
  if (!b.daily_tokens) {
    card.append(h('p', 'mut', t('useBudgetNone', num(used))));
    return card;
  }
  const pct = Math.round(100 * used / b.daily_tokens);
  const bar = card.appendChild(h('div', 'meter' + (pct >= 100 ? ' over' : pct >= 80 ? ' near' : '')));
  bar.setAttribute('role', 'meter');
  bar.setAttribute('aria-valuemin', '0');
  bar.setAttribute('aria-valuemax', String(b.daily_tokens));
  bar.setAttribute('aria-valuenow', String(Math.min(used, b.daily_tokens)));
  bar.setAttribute('aria-label', t('useBudget'));
  bar.appendChild(h('span')).style.width = Math.min(100, pct) + '%';
  card.append(h('p', null, t('useBudgetOf', num(used), num(b.daily_tokens), pct)));
  if (pct >= 100) card.append(h('p', 'warn', t('useBudgetOver')));
  return card;
}

/** The days as bars (the longest is the full width), newest first. */
function days(list) {
  const card = h('section', 'card');
  card.dataset.testid = 'usage-days';
  card.append(h('h2', null, t('useDays')));
  const rows = [...list].sort((a, b) => (a.date < b.date ? 1 : -1)).slice(0, 14);
  if (!rows.length) { card.append(h('p', 'mut', t('useNone'))); return card; }
  const top = Math.max(1, ...rows.map(both));
  const ul = card.appendChild(h('ul', 'bars'));
  for (const d of rows) {
    const li = ul.appendChild(h('li'));
    li.dataset.testid = 'usage-day';
    li.setAttribute('aria-label', t('useDayLine', d.date, num(both(d)), num(d.turns)));
    li.append(h('span', 'day', d.date.slice(5)));
    const track = li.appendChild(h('span', 'track'));
    // Main and cheap side by side in one bar.
    track.appendChild(h('span', 'main')).style.width = (100 * tokens(d.main) / top) + '%';
    track.appendChild(h('span', 'cheap')).style.width = (100 * tokens(d.cheap) / top) + '%';
    li.append(h('span', 'n', num(both(d))));
  }
  const legend = card.appendChild(h('p', 'mut small legend'));
  legend.append(h('span', 'key main'), ' ' + t('useMain') + '  ', h('span', 'key cheap'), ' ' + t('useCheap'));
  return card;
}

function table(titleKey, rows, nameKey, countKey, count, name) {
  const card = h('section', 'card');
  card.dataset.testid = titleKey === 'useSessions' ? 'usage-sessions' : 'usage-tasks';
  card.append(h('h2', null, t(titleKey)));
  if (!rows.length) { card.append(h('p', 'mut', t('useNone'))); return card; }
  const wrap = card.appendChild(h('div', 'tbl'));
  const tb = wrap.appendChild(h('table'));
  const head = tb.appendChild(h('thead')).appendChild(h('tr'));
  for (const k of [nameKey, countKey, 'useMain', 'useCheap', 'useTotal']) head.append(h('th', null, t(k)));
  const body = tb.appendChild(h('tbody'));
  for (const r of [...rows].sort((a, b) => both(b) - both(a))) {
    const tr = body.appendChild(h('tr'));
    tr.appendChild(h('td', 'desc')).append(name(r));
    tr.append(h('td', 'nowrap', num(count(r))), h('td', 'nowrap', io(r.main)), h('td', 'nowrap', io(r.cheap)), h('td', 'nowrap', num(both(r))));
  }
  return card;
}
