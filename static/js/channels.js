// The Channels page: the chat platforms `evolve serve` answers on (Telegram, Feishu/Lark,
// DingTalk) with their state, the people paired with each and the pairing codes waiting
// for the owner's approval; a channel added, edited (secrets are written, never shown
// back), tested or removed. A server built without channels answers 404: the page says so.
import { $, api, ask, btn, enc, formGuard, guard, ht, toast } from './net.js';
import { I18N, t } from './i18n.js';
import { h } from './md.js';

Object.assign(I18N.en, {
  chanHint: 'Talk to Evolve from Telegram, Feishu/Lark or DingTalk. A stranger who writes to the bot gets a pairing code and nothing else until you approve it here.',
  chanNone: 'No channel yet: add one below.', chanMissing: 'Channels are not available in this build of Evolve (the server has no /v1/channels).',
  chan_running: 'running', chan_stopped: 'stopped', chan_error: 'error', chan_starting: 'starting',
  chanKind: 'Platform', chanName: 'Name', chanBaseUrl: 'API address', chanBaseHint: 'Empty: {0}',
  chanToken: 'Bot token', chanAppId: 'App ID', chanAppSecret: 'App secret', chanClientId: 'Client ID (AppKey)', chanClientSecret: 'Client secret (AppSecret)',
  chanSecretSet: 'set — leave empty to keep it', chanSecretIs: 'set', chanSecretNone: 'not set',
  chanAdd: 'Add a channel', chanEdit: 'Edit', chanSave: 'Save channel', chanTest: 'Test', chanRemove: 'Remove',
  chanRemoveAsk: 'Remove the channel {0}? Its paired people will need a new code.', chanSaved: 'Channel {0} saved', chanRemoved: 'Channel {0} removed',
  chanTestOk: '{0} answers: {1}', chanTestBad: '{0} does not answer: {1}',
  chanPaired: 'Paired', chanPairedNone: 'Nobody is paired yet.', chanUnpair: 'Unpair', chanUnpairAsk: 'Unpair {0}? They will need a new code to talk to Evolve.',
  chanPending: 'Waiting for approval', chanApprove: 'Approve', chanApproved: '{0} may talk to Evolve now',
  chanPairCode: 'Pairing code', chanPairHint: 'A code someone got from the bot', chanPairBtn: 'Approve code',
  chanSecretField: 'Secret', chanSecretsNote: 'Secrets are kept in config.toml (readable only by you) and never shown again.',
});
Object.assign(I18N.zh, {
  chanHint: '在 Telegram、飞书/Lark 或钉钉里与 Evolve 对话。陌生人给机器人发消息只会收到一个配对码，在这里批准之前什么也得不到。',
  chanNone: '还没有渠道：在下面添加一个。', chanMissing: '这个版本的 Evolve 不支持渠道（服务器没有 /v1/channels）。',
  chan_running: '运行中', chan_stopped: '已停止', chan_error: '出错', chan_starting: '启动中',
  chanKind: '平台', chanName: '名称', chanBaseUrl: 'API 地址', chanBaseHint: '留空：{0}',
  chanToken: '机器人令牌', chanAppId: 'App ID', chanAppSecret: 'App Secret', chanClientId: 'Client ID（AppKey）', chanClientSecret: 'Client Secret（AppSecret）',
  chanSecretSet: '已设置——留空则保留', chanSecretIs: '已设置', chanSecretNone: '未设置',
  chanAdd: '添加渠道', chanEdit: '编辑', chanSave: '保存渠道', chanTest: '测试', chanRemove: '移除',
  chanRemoveAsk: '移除渠道 {0}？已配对的人需要新的配对码。', chanSaved: '渠道 {0} 已保存', chanRemoved: '渠道 {0} 已移除',
  chanTestOk: '{0} 有响应：{1}', chanTestBad: '{0} 没有响应：{1}',
  chanPaired: '已配对', chanPairedNone: '还没有人配对。', chanUnpair: '解除配对', chanUnpairAsk: '解除与 {0} 的配对？对方需要新的配对码才能再与 Evolve 对话。',
  chanPending: '等待批准', chanApprove: '批准', chanApproved: '{0} 现在可以与 Evolve 对话了',
  chanPairCode: '配对码', chanPairHint: '对方从机器人那里收到的码', chanPairBtn: '批准配对码',
  chanSecretField: '密钥', chanSecretsNote: '密钥保存在 config.toml（只有你能读），不会再显示出来。',
});

/** Each platform: its default API address and the secrets it needs (field, label key). */
const KINDS = {
  telegram: { name: 'Telegram', base: 'https://api.telegram.org', fields: [['token', 'chanToken', true]] },
  feishu: { name: 'Feishu / Lark', base: 'https://open.feishu.cn', fields: [['app_id', 'chanAppId', false], ['app_secret', 'chanAppSecret', true]] },
  dingtalk: { name: 'DingTalk', base: 'https://api.dingtalk.com', fields: [['client_id', 'chanClientId', false], ['client_secret', 'chanClientSecret', true]] },
};

/** What a person is called on a card: their name, and the platform's id beside it. */
const who = p => p.name && p.name !== p.user ? `${p.name} (${p.user})` : String(p.user);

export async function loadChannels() {
  const box = $('#chan-list');
  let data;
  try {
    data = await api('GET', '/v1/channels');
  } catch (e) {
    if (e.status !== 404 && e.status !== 405) throw e;
    // Said in the page (not a toast): this server has no channels at all.
    const p = ht('p', 'card mut', 'chanMissing');
    p.dataset.testid = 'channels-missing';
    box.replaceChildren(p);
    $('#chan-add-box').hidden = $('#chan-pair').hidden = true;
    return;
  }
  $('#chan-add-box').hidden = $('#chan-pair').hidden = false;
  const list = data.channels || [];
  box.replaceChildren(...list.map(channelCard));
  if (!list.length) box.append(ht('p', 'mut', 'chanNone'));
  // A channel just saved starts on the server within a second or two: shown once it has.
  if (list.some(c => c.status === 'starting')) {
    clearTimeout(loadChannels.again);
    loadChannels.again = setTimeout(() => { if (box.isConnected) loadChannels().catch(() => {}); }, 1500);
  }
}

function channelCard(c) {
  const card = h('div', 'card chan');
  card.dataset.testid = 'channel';
  card.dataset.name = c.name;
  const title = card.appendChild(h('h3', null, c.name + ' '));
  const status = title.appendChild(h('span', 'badge ' + (c.status === 'running' ? 'good' : c.status === 'error' ? 'bad' : ''),
    t('chan_' + c.status) === 'chan_' + c.status ? c.status || '?' : t('chan_' + c.status)));
  status.dataset.testid = 'channel-status';
  title.append(h('small', 'mut', ' ' + ((KINDS[c.kind] || {}).name || c.kind)));
  if (c.detail) {
    const d = card.appendChild(h('p', c.status === 'error' ? 'err' : 'mut', c.detail));
    d.dataset.testid = 'channel-detail';
  }
  card.append(h('p', 'mut small', [c.base_url, `${t('chanSecretField')}: ${t(c.secret_set ? 'chanSecretIs' : 'chanSecretNone')}`]
    .filter(Boolean).join(' · ')));

  // Pairing codes first: someone is waiting for them.
  const pending = c.pending || [];
  if (pending.length) {
    card.append(ht('h4', null, 'chanPending'));
    const ul = card.appendChild(h('ul', 'plain'));
    for (const p of pending) {
      const li = ul.appendChild(h('li', 'row'));
      li.dataset.testid = 'channel-pending';
      li.append(h('code', null, p.code), h('span', null, who(p)));
      const ok = li.appendChild(btn('', 'primary', () => approve(p.code, who(p)), 'chanApprove'));
      ok.setAttribute('aria-label', t('chanApprove') + ': ' + who(p));
      ok.dataset.testid = 'channel-approve';
    }
  }
  card.append(ht('h4', null, 'chanPaired'));
  const paired = c.paired || [];
  if (!paired.length) card.append(ht('p', 'mut', 'chanPairedNone'));
  else {
    const ul = card.appendChild(h('ul', 'plain'));
    for (const p of paired) {
      const li = ul.appendChild(h('li', 'row'));
      li.dataset.testid = 'channel-paired';
      li.append(h('span', null, who(p)));
      const x = li.appendChild(btn('', 'danger-text', guard(async () => {
        if (!await askFirst(t('chanUnpairAsk', who(p)))) return;
        await api('DELETE', `/v1/channels/${enc(c.name)}/paired/${enc(p.user)}`);
        await loadChannels();
      }), 'chanUnpair'));
      x.setAttribute('aria-label', t('chanUnpair') + ': ' + who(p));
    }
  }
  const acts = card.appendChild(h('div', 'row'));
  const test = acts.appendChild(btn('', null, guard(async () => {
    test.disabled = true;
    try {
      const r = await api('POST', `/v1/channels/${enc(c.name)}/test`);
      // The answer stays on the card, above its buttons.
      let p = card.querySelector('[data-testid=channel-test]');
      if (!p) {
        p = h('p');
        p.dataset.testid = 'channel-test';
        p.setAttribute('role', 'status');
        acts.before(p);
      }
      p.className = r.ok ? 'good' : 'err';
      p.textContent = t(r.ok ? 'chanTestOk' : 'chanTestBad', c.name, r.detail || '');
    } finally { test.disabled = false; }
  }), 'chanTest'));
  test.dataset.testid = 'channel-test-btn';
  acts.append(btn('', null, () => editForm(c, card), 'chanEdit'));
  const rm = acts.appendChild(btn('', 'danger-text', guard(async () => {
    if (!await askFirst(t('chanRemoveAsk', c.name))) return;
    await api('DELETE', `/v1/channels/${enc(c.name)}`);
    toast(t('chanRemoved', c.name), 'ok');
    await loadChannels();
  }), 'chanRemove'));
  rm.dataset.testid = 'channel-remove';
  return card;
}

/** A yes/no question in the page's dialog, for what cannot be undone. */
const askFirst = msg => ask(msg, { danger: true, ok: t('ok') });

const approve = guard(async (code, name) => {
  await api('POST', '/v1/channels/pair', { code });
  toast(t('chanApproved', name || code), 'ok');
  await loadChannels();
});

/** The form of a channel: its platform's fields; a secret is a password field that starts
 * empty (an edit keeps the stored one unless a new one is typed). `c` null: a new channel. */
function channelForm(c) {
  const f = h('form', 'chan-form');
  f.dataset.testid = 'channel-form';
  const fields = f.appendChild(h('div', 'fields'));
  const label = (key, el, field) => {
    const l = fields.appendChild(h('label'));
    l.append(ht('span', null, key), el);
    if (field) el.dataset.field = field;
    return el;
  };
  const kind = label('chanKind', h('select'), 'kind');
  for (const [k, v] of Object.entries(KINDS)) kind.append(Object.assign(h('option', null, v.name), { value: k }));
  kind.value = c ? c.kind : 'telegram';
  kind.disabled = !!c;
  const name = label('chanName', h('input'), 'name');
  name.required = true;
  name.autocomplete = 'off';
  name.pattern = '[A-Za-z0-9_-]+';
  name.value = c ? c.name : 'telegram';
  name.readOnly = !!c;
  const base = label('chanBaseUrl', h('input'), 'base_url');
  base.type = 'url';
  base.autocomplete = 'off';
  base.value = c && c.base_url && c.base_url !== (KINDS[c.kind] || {}).base ? c.base_url : '';
  const secrets = fields.appendChild(h('div', 'fields'));
  const draw = () => {
    const k = KINDS[kind.value];
    base.placeholder = t('chanBaseHint', k.base);
    if (!c && (!name.value || KINDS[name.value])) name.value = kind.value;
    secrets.replaceChildren();
    for (const [field, key, secret] of k.fields) {
      const l = secrets.appendChild(h('label'));
      const input = h('input');
      input.name = field;
      input.dataset.field = field;
      input.autocomplete = secret ? 'new-password' : 'off';
      if (secret) {
        input.type = 'password';
        input.placeholder = t(c && c.secret_set ? 'chanSecretSet' : 'chanSecretNone');
      }
      // A new channel needs every secret; an edit keeps those left empty.
      input.required = !c || !secret && !c.secret_set;
      l.append(ht('span', null, key), input);
    }
  };
  kind.onchange = draw;
  draw();
  f.append(ht('p', 'mut small', 'chanSecretsNote'));
  const row = f.appendChild(h('div', 'row end'));
  const save = row.appendChild(ht('button', 'primary', 'chanSave'));
  save.type = 'submit';
  f.onsubmit = formGuard(async e => {
    e.preventDefault();
    const body = { kind: kind.value };
    if (base.value.trim()) body.base_url = base.value.trim();
    for (const input of secrets.querySelectorAll('input')) if (input.value.trim()) body[input.name] = input.value.trim();
    await api('PUT', `/v1/channels/${enc(name.value.trim())}`, body);
    toast(t('chanSaved', name.value.trim()), 'ok');
    if (!c) { f.reset(); draw(); $('#chan-add-box').open = false; }
    await loadChannels();
  });
  return f;
}

function editForm(c, card) {
  const old = card.querySelector('.chan-form');
  if (old) { old.remove(); return; }
  const f = channelForm(c);
  f.append(btn('', null, () => f.remove(), 'cancel'));
  card.append(f);
  f.querySelector('input:not([readonly])').focus();
}

// The page's fixed parts (index.html), wired when the page is first shown: the Add form
// and the pairing-code form.
$('#chan-add-box').append(channelForm(null));
$('#chan-pair').onsubmit = e => {
  e.preventDefault();
  const code = $('#chan-code').value.trim();
  if (!code) return;
  $('#chan-code').value = '';
  approve(code);
};
