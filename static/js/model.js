// The header's profile picker and version, and whether the model server answers (the banner
// above the chat).
import { $, api, guard, offline, options, toast, webText } from './net.js';
import { t } from './i18n.js';

export async function loadConfig() {
  const [cfg, health] = await Promise.all([api('GET', '/v1/config'), api('GET', '/health').catch(() => null)]);
  const names = (cfg.profiles || []).map(p => typeof p === 'string' ? p : p.name);
  const sel = $('#profile');
  if (cfg.profile && !names.includes(cfg.profile)) names.unshift(cfg.profile);
  // The top level of config.toml is a profile too: it stays listed after switching away.
  if (!names.includes('default')) names.unshift('default');
  options(sel, names, v => v === 'default' ? t('default') : v, cfg.profile || 'default');
  sel.closest('label').hidden = names.length < 2;
  // The version, and the model that answers now (a profile switch can change it).
  $('#version').textContent = [health && 'v' + health.version, cfg.model && cfg.model.main].filter(Boolean).join(' · ');
}

export const switchProfile = guard(async () => {
  const profile = $('#profile').value;
  await api('POST', '/v1/config/profile', { profile });
  toast(t('profileSet', profile), 'ok');
  await loadConfig();
  await checkModel();
});

// Whether the model server answers, asked when the page opens (and after a profile
// switch), so a wrong or missing server is said before anything is sent: which URL,
// the error, and how to fix it.
export let modelState = null;
export async function checkModel() {
  try { modelState = await api('GET', '/v1/settings/model'); } catch (e) { if (e.offline) offline(true); return; }
  renderModel();
}

export function renderModel() {
  const m = modelState, banner = $('#model-banner');
  if (!m) return;
  const title = $('#model-banner-title'), detail = $('#model-banner-detail'), hint = $('#model-banner-hint');
  if (!m.reachable) {
    title.textContent = t('modelDown', m.base_url);
    detail.textContent = webText(m.cause || m.error || '', m.said);
    hint.textContent = t(m.base_url_is_default ? 'modelHintDefault' : 'modelHintOther');
    banner.hidden = false;
  } else if (m.served === false && m.models.length) {
    title.textContent = t('modelNotServed', m.model, m.base_url);
    detail.textContent = '';
    hint.textContent = t('modelChoose', m.models.slice(0, 10).join(', '));
    banner.hidden = false;
  } else {
    banner.hidden = true;
  }
}
