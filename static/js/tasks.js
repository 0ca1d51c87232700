// The Tasks page: scheduled questions (add, edit, pause, run history).
import { $, api, ask, btn, enc, formGuard, guard, ht, toast } from './net.js';
import { fold } from './cards.js';
import { LANG, t } from './i18n.js';
import { show } from './layout.js';
import { h } from './md.js';
import { loadSessions, openSession } from './sessions.js';

const when = s => s ? new Date(s).toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined,
  { dateStyle: 'short', timeStyle: 'short' }) : '';
const KIND_HINT = { every: '30m', daily: '07:30', cron: '0 9 * * mon-fri', at: '' };

function taskKind() {
  const kind = $('#task-kind').value, v = $('#task-value');
  v.type = kind === 'at' ? 'datetime-local' : 'text';
  v.placeholder = KIND_HINT[kind];
}

/** The schedule text the API reads (core's Schedule::parse): `at` gets the browser's
 *  local time as an RFC 3339 instant. */
function scheduleText() {
  const kind = $('#task-kind').value, v = $('#task-value').value.trim();
  if (kind === 'cron') return v;
  if (kind === 'at') {
    const d = new Date(v);
    return 'at ' + (isNaN(d) ? v : d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  }
  return `${kind} ${v}`;
}

export async function loadTasks() {
  const r = await api('GET', '/v1/tasks'), ul = $('#task-list');
  $('#task-zone').textContent = r.time_zone ? t('timeZone', r.time_zone) : '';
  ul.replaceChildren(...(r.data || []).map(taskItem));
  if (!ul.children.length) ul.append(ht('li', 'mut pad', 'noTasks'));
}

function taskItem(task) {
  const li = h('li', 'card task');
  li.dataset.testid = 'task-item';
  li.dataset.id = task.id;
  const title = li.appendChild(h('h3', null, `#${task.id} `));
  title.append(h('code', null, task.schedule));
  if (task.running) title.append(ht('span', 'badge good', 'taskRunning'));
  if (task.paused) title.append(ht('span', 'badge', 'taskPaused'));
  li.append(h('p', 'mem-text', task.question));
  const change = guard(async p => {
    const now = await api('PATCH', `/v1/tasks/${enc(task.id)}`, p);
    // Drawn again meanwhile (the list was being read): the list is read once more.
    if (li.isConnected) li.replaceWith(taskItem(now)); else await loadTasks();
    toast(t('saved'), 'ok');
  });
  // Edit in place: the schedule as the server writes it (it reads the same forms).
  const edit = () => {
    const f = h('form', 'task-edit');
    const q = f.appendChild(h('textarea'));
    q.value = task.question;
    q.dataset.field = 'question';
    q.id = `task-${task.id}-q`;
    const sc = f.appendChild(h('input'));
    sc.value = task.schedule;
    sc.dataset.field = 'schedule|every|daily|cron|at|time|interval|minutes?|hours?';
    sc.id = `task-${task.id}-s`;
    sc.setAttribute('aria-label', t('taskWhen'));
    const row = f.appendChild(h('div', 'row end'));
    const ok = row.appendChild(ht('button', 'primary', 'save'));
    ok.type = 'submit';
    row.append(btn('', null, () => li.replaceWith(taskItem(task)), 'cancel'));
    f.onsubmit = formGuard(async e => {
      e.preventDefault();
      li.replaceWith(taskItem(await api('PATCH', `/v1/tasks/${enc(task.id)}`, { question: q.value, schedule: sc.value })));
      toast(t('saved'), 'ok');
    });
    li.replaceChildren(title, f);
    q.focus();
  };
  const facts = [task.allow,
    task.next_run ? t('nextRun', when(task.next_run)) : null,
    task.last_run ? t('lastRun', when(task.last_run)) + (task.last_status ? ` (${task.last_status})` : '') : t('neverRun')];
  li.append(h('small', 'mut', facts.filter(Boolean).join(' · ')));
  const log = h('ul', 'plain runs');
  const acts = li.appendChild(h('div', 'row'));
  acts.append(
    btn('', 'primary', guard(async () => {
      await api('POST', `/v1/tasks/${enc(task.id)}/run`);
      toast(t('runStarted', task.id), 'ok');
      // Follow the run (at most ~10 minutes), then show the task with its new status.
      for (let i = 0; i < 300 && li.isConnected; i++) {
        await new Promise(r => setTimeout(r, i < 10 ? 500 : 2000));
        const now = await api('GET', `/v1/tasks/${enc(task.id)}`);
        if (!now.running) { if (li.isConnected) li.replaceWith(taskItem(now)); return; }
      }
    }), 'runNow'),
    btn('', null, guard(async () => {
      if (log.childElementCount || log.dataset.open) { log.replaceChildren(); delete log.dataset.open; return; }
      const { data } = await api('GET', `/v1/tasks/${enc(task.id)}/runs?limit=20`);
      log.dataset.open = '1';
      log.replaceChildren(...(data || []).map(run => {
        const r = h('li', 'run');
        r.dataset.testid = 'task-run';
        r.append(h('small', 'mut', [when(run.started_at), run.trigger, run.status].filter(Boolean).join(' · ')));
        if (run.answer) r.append(fold(t('assistant'), run.answer));
        if (run.error) r.append(h('p', 'warn', run.error));
        return r;
      }));
      if (!log.children.length) log.append(ht('li', 'mut', 'noRuns'));
    }), 'taskLog'),
    btn('', null, () => { show('chat'); openSession(task.session); }, 'openChat'),
    btn('', null, edit, 'edit'),
    btn('', null, () => change({ paused: !task.paused }), task.paused ? 'resume' : 'pause'),
    btn('', 'danger-text', guard(async () => {
      if (!await ask(t('deleteTask', task.id), { danger: true, ok: t('delete') })) return;
      await api('DELETE', `/v1/tasks/${enc(task.id)}`);
      li.remove();
      toast(t('deleted'), 'ok');
    }), 'delete'));
  li.append(log);
  return li;
}

const addTask = formGuard(async e => {
  e.preventDefault();
  const question = $('#task-question').value.trim();
  if (!question) return;
  const task = await api('POST', '/v1/tasks', { schedule: scheduleText(), question, allow: $('#task-allow').value });
  $('#task-question').value = '';
  $('#task-value').value = '';
  toast(t('taskAdded', task.id), 'ok');
  await Promise.all([loadTasks(), loadSessions()]);
});

// The page's fixed controls (index.html), wired when the page is first shown.
$('#task-kind').onchange = taskKind;
$('#task-form').onsubmit = addTask;
taskKind();
