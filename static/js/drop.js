// On the Tools and Settings pages: an `{"mcpServers": …}` JSON file (Claude Desktop, Cursor,
// VS Code's "servers") adds its MCP servers; a config.toml sets the model settings of its
// [model] table. Either way the page shows what would change and asks first.
import { $, api, ask, guard, req, toast } from './net.js';
import { t } from './i18n.js';
import { checkModel } from './model.js';

async function importFile(file) {
  const text = await file.text();
  let doc = null;
  try { doc = JSON.parse(text); } catch { /* not JSON: a config.toml */ }
  if (doc && typeof doc === 'object') return importMcp(file.name, doc);
  return importConfig(file.name, file);
}

async function importMcp(name, doc) {
  const servers = doc.mcpServers || doc.servers || (doc.mcp && doc.mcp.servers);
  if (!servers || typeof servers !== 'object' || Array.isArray(servers)) throw new Error(t('importNoServers', name));
  const have = new Map(((await api('GET', '/v1/mcp')).data || []).map(s => [s.name, s.source]));
  const plan = Object.entries(servers).map(([n, spec]) => {
    const how = spec && (spec.url || [spec.command, ...(spec.args || [])].filter(Boolean).join(' '));
    const src = have.get(n);
    return { n, spec, how: how || '?', act: src === 'config' ? 'skip' : src ? 'replace' : 'add' };
  });
  if (!plan.length) throw new Error(t('importNoServers', name));
  const lines = plan.map(p => `${p.act === 'add' ? '+' : p.act === 'replace' ? '~' : '–'} ${t('import_' + p.act, p.n)}: ${p.how}`);
  if (!plan.some(p => p.act !== 'skip')) return toast([t('importNothing', name), ...lines].join('\n'), 'info');
  if (!await ask(t('importMcpAsk', name) + '\n\n' + lines.join('\n'), { ok: t('importDo') })) return;
  const done = [], failed = [];
  for (const p of plan.filter(p => p.act !== 'skip')) {
    try {
      await api('POST', '/v1/mcp/servers', { ...p.spec, name: p.n, replace: p.act === 'replace' });
      done.push(p.n);
    } catch (e) { failed.push(`${p.n}: ${e.message}`); }
  }
  if (done.length) toast(t('importedMcp', done.join(', ')), 'ok');
  for (const f of failed) toast(f);
}

async function importConfig(name, file) {
  let r;
  try {
    r = await (await req('POST', '/v1/settings/model/import', file)).json();
  } catch (e) { throw new Error(`${name}: ${e.message}`); }
  const lines = r.changes.map(c => `${t('importField_' + c.field)}: ${c.from || '—'} → ${c.to || '—'}`);
  const rest = r.left_out.length ? '\n\n' + t('importLeftOut', r.left_out.join(', ')) : '';
  if (!lines.length) return toast(t('importNothing', name) + rest, 'info');
  if (!await ask(t('importConfigAsk', name) + '\n\n' + lines.join('\n') + rest, { ok: t('importDo') })) return;
  await req('POST', '/v1/settings/model/import?apply=true', file);
  toast(t('importedConfig', name), 'ok');
  await checkModel();
}

/** Files dropped on a page that imports them; `reload` shows the page again after. */
export function importDrops(view, reload) {
  const el = $(view);
  el.addEventListener('dragover', e => { if (e.dataTransfer.types.includes('Files')) { e.preventDefault(); el.classList.add('dropping'); } });
  el.addEventListener('dragleave', e => { if (!el.contains(e.relatedTarget)) el.classList.remove('dropping'); });
  el.addEventListener('drop', e => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    el.classList.remove('dropping');
    guard(async () => {
      for (const f of e.dataTransfer.files) await importFile(f);
      if (reload) await reload();
    })();
  });
}
