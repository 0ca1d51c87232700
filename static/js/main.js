// The entry module: wires every control of index.html to its handler and opens the chat
// named in the address.
import { $, S, ago, guard } from './net.js';
import { attach, filesNote, renderAttachments } from './attach.js';
import { send } from './chat.js';
import { LANG, applyI18n, store, t } from './i18n.js';
import { NARROW, drawer, placeholder, retryServer, setLang, shortcuts, show, theme } from './layout.js';
import { checkModel, loadConfig, switchProfile } from './model.js';
import { permAnswer, permAsk } from './perm.js';
import { runSearch } from './search.js';
import { loadSessions, newChat, openSession, renderSessions } from './sessions.js';

function init() {
  applyI18n();
  setLang(LANG);
  theme();
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', theme);
  // The other look, then this look chosen, then back to following the system.
  $('#theme-toggle').onclick = () => {
    const system = matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
    const now = store.get('evolve.theme');
    store.set('evolve.theme', !now ? (system === 'dark' ? 'light' : 'dark') : now !== system ? system : '');
    theme();
  };
  $('#lang-toggle').onclick = () => setLang(LANG === 'zh' ? 'en' : 'zh');
  $('#accent').onchange = () => { store.set('evolve.accent', $('#accent').value); theme(); };
  document.addEventListener('keydown', shortcuts);
  $('#menu').onclick = () => drawer(!document.body.classList.contains('drawer'));
  $('#backdrop').onclick = () => drawer(false);
  $('#new-chat').onclick = newChat;
  $('#new-chat-top').onclick = newChat;
  NARROW.addEventListener('change', placeholder);
  $('#messages').addEventListener('scroll', () => {
    const box = $('#messages');
    S.follow = box.scrollHeight - box.scrollTop - box.clientHeight < 160;
  }, { passive: true });
  for (const b of document.querySelectorAll('#nav button')) b.onclick = () => show(b.dataset.view);
  $('#session-filter').oninput = renderSessions;

  const input = $('#input');
  const grow = () => {
    input.style.height = 'auto';
    input.style.height = Math.min(input.scrollHeight, 220) + 'px';
  };
  input.oninput = grow;
  input.onkeydown = e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      $('#composer').requestSubmit();
    }
  };
  $('#composer').onsubmit = e => {
    e.preventDefault();
    if (S.busy) return;
    const images = S.images, files = S.files;
    // An image alone is asked about plainly (the API wants text with it).
    let text = input.value.trim() ? input.value : images.length ? t('imageAsk') : files.length ? t('filesAsk') : '';
    if (!text) return;
    if (files.length) text = text.trimEnd() + filesNote(files);
    input.value = '';
    S.images = [];
    S.files = [];
    renderAttachments();
    grow();
    send(text, null, images);
  };
  $('#attach').onclick = () => $('#attach-file').click();
  $('#attach-file').onchange = e => { attach([...e.target.files]); e.target.value = ''; };
  input.onpaste = e => {
    const files = [...(e.clipboardData && e.clipboardData.files) || []].filter(f => f.type.startsWith('image/'));
    if (files.length) { e.preventDefault(); attach(files); }
  };
  // Files dropped anywhere on the chat.
  const chat = $('#view-chat');
  chat.addEventListener('dragover', e => { if (e.dataTransfer.types.includes('Files')) { e.preventDefault(); chat.classList.add('dropping'); } });
  chat.addEventListener('dragleave', e => { if (e.target === chat || !chat.contains(e.relatedTarget)) chat.classList.remove('dropping'); });
  chat.addEventListener('drop', e => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    chat.classList.remove('dropping');
    attach([...e.dataTransfer.files]);
  });
  $('#stop').onclick = () => S.busy && S.busy.abort();
  // A suggested question on the empty chat is asked as it is.
  for (const b of document.querySelectorAll('#suggest button')) b.onclick = () => send(b.textContent);

  $('#perm-allow').onclick = () => permAnswer('yes');
  $('#perm-run').onclick = () => permAnswer('yes');
  $('#perm-always').onclick = () => permAnswer('always');
  $('#perm-deny').onclick = () => permAnswer('no');
  // Escape must not leave a turn waiting: it counts as Deny.
  $('#perm').oncancel = e => { e.preventDefault(); permAnswer('no'); };
  $('#pending-open').onclick = () => {
    $('#pending-banner').hidden = true;
    for (const p of S.pendingList || []) permAsk(p);
  };

  $('#export').onclick = e => { if (e.target.closest('a,button')) $('#export').open = false; };
  $('#print').onclick = () => window.print();
  // The printed page (or PDF), from the button or the browser's menu, starts with the
  // chat's title and dates.
  window.addEventListener('beforeprint', () => {
    const s = S.sessions.find(x => x.id === S.session);
    $('#print-title').textContent = (s && s.title) || t('untitled');
    $('#print-date').textContent = [s && t('printCreated', ago(s.created_at)),
      t('printPrinted', new Date().toLocaleString(LANG === 'zh' ? 'zh-CN' : undefined))].filter(Boolean).join(' · ');
  });

  $('#search-form').onsubmit = runSearch;
  $('#profile').onchange = switchProfile;
  $('#model-settings').onclick = () => show('settings');

  const hash = location.hash.match(/^#s=(.+)$/);
  guard(async () => {
    await loadSessions();
    if (hash) await openSession(decodeURIComponent(hash[1]));
  })();
  guard(loadConfig)();
  checkModel();
  $('#model-recheck').onclick = checkModel;
  $('#offline-retry').onclick = retryServer;
  input.focus();
}

document.addEventListener('DOMContentLoaded', init);