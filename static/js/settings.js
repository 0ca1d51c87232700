// The Settings view: the model server (base URL with presets, a write-only API key,
// main and cheap model from the server's list, context window), doctor's checks on what
// is typed (Test, not saved), Save (PUT /v1/settings/model, then the banner's check
// again) and the profile. Its strings are registered here.
import { $, api, ask, btn, guard, ht, options, toast, webText } from './net.js';
import { importDrops } from './drop.js';
import { I18N, t, tOr } from './i18n.js';
import { placeholder } from './layout.js';
import { h } from './md.js';
import { checkModel, loadConfig } from './model.js';

Object.assign(I18N.en, {
  setModel: 'Model server', setBaseUrl: 'Base URL',
  setPreset: 'Presets…', setKey: 'API key', setKeySet: 'set — leave empty to keep it', setKeyUnset: 'not set',
  setClear: 'Clear', setMain: 'Main model', setCheap: 'Cheap model (memory, evaluation)', setCtx: 'Context window (tokens)',
  setTest: 'Test', setSave: 'Save', setSaved: 'Saved to config.toml ({0}); the next message uses it',
  setKeyCleared: 'API key cleared', setEnv: '{0} is set in the environment and wins over this: unset it and restart serve to use the value saved here',
  setState: 'Profile {0} · {1}', setUp: 'the server answers', setDown: 'the server does not answer', setChecks: 'Checks',
  setTesting: 'Testing…', setOther: 'Other…', setLlamaNote: 'evolve serve uses port 8080 too: start llama-server with --port 8081 (and use :8081 here), or run serve with --port.',
  setFile: 'Saved in config.toml of your Evolve folder, in [model] of the active profile; the file keeps its comments.',
  'check_server reachable': 'server reachable', 'check_model list': 'model list', 'check_main model': 'main model',
  'check_cheap model': 'cheap model', check_completion: 'completion', 'check_cheap completion': 'cheap completion', 'check_tool calling': 'tool calling',
});
Object.assign(I18N.zh, {
  setModel: '模型服务', setBaseUrl: '服务地址（Base URL）',
  setPreset: '预设…', setKey: 'API 密钥', setKeySet: '已设置——留空则保持不变', setKeyUnset: '未设置',
  setClear: '清除', setMain: '主模型', setCheap: '辅助模型（记忆、评估）', setCtx: '上下文窗口（token）',
  setTest: '测试', setSave: '保存', setSaved: '已保存到 config.toml（{0}），下一条消息起生效',
  setKeyCleared: 'API 密钥已清除', setEnv: '环境变量 {0} 已设置，优先于这里的值：取消它并重启 serve 才会用这里保存的值',
  setState: '配置 {0} · {1}', setUp: '服务有响应', setDown: '服务没有响应', setChecks: '检查结果',
  setTesting: '测试中…', setOther: '其他…', setLlamaNote: 'evolve serve 默认也用 8080 端口：用 --port 8081 启动 llama-server（这里填 :8081），或用 --port 换 serve 的端口。',
  setFile: '保存在 Evolve 目录的 config.toml 中当前配置的 [model] 里，文件中的注释会保留。',
  'check_server reachable': '服务可达', 'check_model list': '模型列表', 'check_main model': '主模型',
  'check_cheap model': '辅助模型', check_completion: '补全', 'check_cheap completion': '辅助模型补全', 'check_tool calling': '工具调用',
  'hint_check the address and that the server runs, or pick a preset beside the address': '检查地址是否正确、服务是否在运行，或在地址旁选一个预设',
  'hint_choose one of the models the server lists in the field above, then Save': '在上方字段中选择服务列出的一个模型，然后保存',
});

const PRESETS = [
  ['Ollama', 'http://127.0.0.1:11434/v1'], ['llama.cpp server', 'http://127.0.0.1:8080/v1'],
  ['OpenAI', 'https://api.openai.com/v1'], ['DeepSeek', 'https://api.deepseek.com/v1'],
  ['Qwen / DashScope', 'https://dashscope.aliyuncs.com/compatible-mode/v1'],
  ['Moonshot', 'https://api.moonshot.cn/v1'], ['OpenRouter', 'https://openrouter.ai/api/v1'],
];
const ENV_VAR = { base_url: 'OPENAI_BASE_URL', api_key: 'OPENAI_API_KEY', model: 'EVOLVE_MODEL', cheap_model: 'EVOLVE_CHEAP_MODEL' };
const SET = { m: null, cfg: null, checks: null, models: null };
const setId = f => '#set-' + f.replace('_', '-');

/** One labelled field: the control, then the field's error and environment notes. */
function setField(key, field, control, ...extra) {
  const l = h('label', 'set-field');
  l.append(ht('span', null, key), control, ...extra, h('small', 'err'), h('small', 'mut env'));
  l.dataset.field = field;
  control.id = setId(field).slice(1);
  return l;
}

function buildSettings() {
  const box = $('#view-settings');
  if (box.firstChild) return;
  const form = h('form', 'card set-form');
  form.id = 'set-form';
  form.noValidate = true;
  const preset = h('select');
  preset.id = 'set-preset';
  preset.onchange = () => {
    if (preset.value) $('#set-base-url').value = preset.value;
    $('#set-llama').hidden = !preset.value.includes(':8080/');
    preset.value = '';
  };
  const note = ht('small', 'mut', 'setLlamaNote');
  note.id = 'set-llama';
  note.hidden = true;
  const url = h('input');
  Object.assign(url, { type: 'url', autocomplete: 'off', spellcheck: false, placeholder: PRESETS[0][1] });
  const key = h('input');
  Object.assign(key, { type: 'password', autocomplete: 'new-password' });
  const clear = btn('', 'danger-text', clearKey, 'setClear');
  clear.id = 'set-clear';
  const model = field => {
    const sel = h('select'), text = h('input');
    sel.id = setId(field).slice(1) + '-list';
    text.autocomplete = 'off';
    sel.onchange = () => { text.hidden = sel.value !== ''; if (sel.value) text.value = sel.value; };
    return setField(field === 'model' ? 'setMain' : 'setCheap', field, text, sel);
  };
  const ctx = h('input');
  Object.assign(ctx, { type: 'number', min: 1, step: 1, inputMode: 'numeric' });
  const profile = h('select');
  profile.onchange = guard(setProfile);
  const row = h('div', 'row set-inline');
  row.append(key, clear);
  const keyField = setField('setKey', 'api_key', row);
  key.id = 'set-api-key';
  row.id = '';
  const buttons = h('div', 'row end');
  const test = btn('', null, guard(runTest), 'setTest');
  test.id = 'set-test';
  const save = ht('button', 'primary', 'setSave');
  save.id = 'set-save';
  buttons.append(test, save);
  // Usable once the settings in use are read (Test and Save compare with them).
  test.disabled = save.disabled = true;
  const checks = h('ul', 'set-checks');
  checks.id = 'set-checks';
  const state = h('p', 'mut');
  state.id = 'set-state';
  form.append(ht('h3', null, 'setModel'), state, setField('profile', 'profile', profile),
    setField('setBaseUrl', 'base_url', url, preset, note), keyField, model('model'), model('cheap_model'),
    setField('setCtx', 'context_window', ctx), ht('p', 'mut', 'setFile'), ht('p', 'mut', 'importHint'), buttons, checks);
  form.onsubmit = e => { e.preventDefault(); guard(saveSettings)(); };
  box.append(form);
}

export async function loadSettings() {
  buildSettings();
  const [m, cfg] = await Promise.all([api('GET', '/v1/settings/model'), api('GET', '/v1/config')]);
  Object.assign(SET, { m, cfg, checks: null, models: null });
  $('#set-test').disabled = $('#set-save').disabled = false;
  $('#set-base-url').value = m.base_url;
  $('#set-api-key').value = '';
  $('#set-context-window').value = m.context_window;
  $('#set-model').value = m.model;
  $('#set-cheap-model').value = m.cheap_model;
  fieldErrors({});
  renderSettings();
}

/** Re-renders what depends on the language or on the last answer. */
function renderSettings() {
  const m = SET.m;
  if (!m || !$('#set-form')) return;
  $('#set-state').textContent = t('setState', m.profile === 'default' ? t('default') : m.profile, t(m.reachable ? 'setUp' : 'setDown'));
  $('#set-api-key').placeholder = t(m.api_key_set ? 'setKeySet' : 'setKeyUnset');
  $('#set-clear').hidden = !m.api_key_set;
  const preset = $('#set-preset');
  options(preset, ['', ...PRESETS.map(p => p[1])], v => v ? PRESETS.find(p => p[1] === v)[0] + ' — ' + v : t('setPreset'), '');
  for (const f of ['model', 'cheap_model']) {
    const text = $(setId(f)), sel = $(setId(f) + '-list'), list = SET.models || m.models || [];
    const cur = text.value.trim();
    const names = [...new Set([...list, ...(cur ? [cur] : [])])];
    options(sel, [...names, ''], v => v || t('setOther'), cur);
    sel.hidden = !list.length;
    text.hidden = list.length > 0 && sel.value !== '';
  }
  const names = (SET.cfg.profiles || []).map(p => typeof p === 'string' ? p : p.name);
  if (!names.includes('default')) names.unshift('default');
  if (!names.includes(m.profile)) names.push(m.profile);
  options($('#set-profile'), names, v => v === 'default' ? t('default') : v, m.profile);
  $('#set-profile').closest('label').hidden = names.length < 2;
  for (const l of document.querySelectorAll('.set-field')) {
    const env = (m.overridden_by_env || []).includes(l.dataset.field);
    l.querySelector('.env').textContent = env ? t('setEnv', ENV_VAR[l.dataset.field]) : '';
  }
  const ul = $('#set-checks');
  ul.replaceChildren();
  if (SET.checks === 'run') ul.append(ht('li', 'mut', 'setTesting'));
  else if (SET.checks) {
    for (const c of SET.checks) {
      const li = ul.appendChild(h('li', c.ok ? 'ok' : 'fail'));
      li.dataset.testid = 'set-check';
      const hint = c.hint ? ' — ' + tOr('hint_' + c.hint, webText(c.hint)) : '';
      li.append(h('b', null, (c.ok ? '✓ ' : '✗ ') + tOr('check_' + c.name, c.name)), h('span', null, ' ' + webText(c.detail, c.said) + hint));
    }
  }
}

/** The fields that differ from what is in use (the key only when typed). */
function settingsBody() {
  const m = SET.m, b = {};
  const url = $('#set-base-url').value.trim(), key = $('#set-api-key').value;
  if (url !== m.base_url) b.base_url = url;
  if (key) b.api_key = key;
  for (const f of ['model', 'cheap_model']) {
    const sel = $(setId(f) + '-list'), v = (!sel.hidden && sel.value ? sel.value : $(setId(f)).value).trim();
    if (v !== m[f]) b[f] = v;
  }
  const ctx = $('#set-context-window').value.trim();
  if (ctx !== String(m.context_window)) b.context_window = /^\d+$/.test(ctx) ? Number(ctx) : ctx;
  return b;
}

/** Shows each error next to its field; one without a field as a toast. */
function fieldErrors(errs) {
  for (const l of document.querySelectorAll('.set-field')) l.querySelector('.err').textContent = errs[l.dataset.field] || '';
}
async function settingsCall(method, path, body) {
  fieldErrors({});
  const r = await fetch(path, { method, credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json().catch(() => ({}));
  if (r.ok) return j;
  const e = j.error || {};
  if (e.param && document.querySelector(`.set-field[data-field="${e.param}"]`)) {
    fieldErrors({ [e.param]: webText(e.message, e.said) });
    return null;
  }
  throw new Error(webText(e.message, e.said) || `HTTP ${r.status}`);
}

async function runTest() {
  SET.checks = 'run';
  renderSettings();
  const r = await settingsCall('POST', '/v1/settings/model/test', settingsBody()).catch(e => { SET.checks = null; throw e; });
  SET.checks = r ? r.checks : null;
  if (r && r.models.length) {
    SET.models = r.models;
    // A model the server does not list cannot answer: the first listed one is chosen
    // (Save keeps it), instead of leaving the one that fails selected.
    for (const f of ['model', 'cheap_model']) if (!r.models.includes($(setId(f)).value.trim())) $(setId(f)).value = r.models[0];
  }
  renderSettings();
}

async function saveSettings() {
  const m = await settingsCall('PUT', '/v1/settings/model', settingsBody());
  if (!m) return;
  SET.m = m;
  SET.models = null;
  $('#set-api-key').value = '';
  renderSettings();
  toast(t('setSaved', m.profile), 'ok');
  await checkModel();
  guard(loadConfig)();
}

async function clearKey() {
  if (!await ask(t('setKey') + ': ' + t('setClear') + '?', { danger: true, ok: t('setClear') })) return;
  const m = await settingsCall('PUT', '/v1/settings/model', { api_key: '' });
  if (!m) return;
  SET.m = m;
  renderSettings();
  toast(t('setKeyCleared'), 'ok');
  await checkModel();
}

async function setProfile() {
  const profile = $('#set-profile').value;
  await api('POST', '/v1/config/profile', { profile });
  toast(t('profileSet', profile), 'ok');
  await loadSettings();
  await checkModel();
  await loadConfig();
}

// Drawn again in the other language; a config.toml dropped on the page is imported.
document.addEventListener('evolve:lang', renderSettings);
importDrops('#view-settings', loadSettings);
