// /docs: the API reference rendered from /openapi.json, with no outside viewer (strict
// CSP): every operation with its parameters, body and answers; schemas at the end.
'use strict';
const api = document.getElementById('api');
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
};
const json = v => el('pre', null, JSON.stringify(v, null, 2));

function operation(path, method, op) {
  const d = el('details', 'card op');
  const s = d.appendChild(el('summary'));
  s.append(el('b', 'verb ' + method, method.toUpperCase()), ' ', el('code', null, path), ' ', el('span', 'mut', op.summary || ''));
  if (op.description) d.append(el('p', null, op.description));
  if (op.parameters && op.parameters.length) {
    const ul = d.appendChild(el('ul'));
    for (const p of op.parameters) {
      const li = ul.appendChild(el('li'));
      li.append(el('code', null, p.name), ` (${p.in}${p.required ? ', required' : ''}) `, p.description || '');
    }
  }
  const body = op.requestBody && op.requestBody.content;
  if (body) for (const [type, b] of Object.entries(body)) d.append(el('h4', null, 'Body: ' + type), json(b.schema || {}));
  for (const [code, r] of Object.entries(op.responses || {})) {
    d.append(el('h4', null, `${code} ${r.description || ''}`));
    for (const b of Object.values(r.content || {})) if (b.schema) d.append(json(b.schema));
  }
  return d;
}

fetch('/openapi.json').then(r => {
  if (!r.ok) throw new Error(`/openapi.json answered HTTP ${r.status}`);
  return r.json();
}).then(spec => {
  const info = spec.info || {};
  api.replaceChildren(el('h1', null, `${info.title || 'Evolve API'} ${info.version || ''}`));
  if (info.description) api.append(el('p', null, info.description));
  for (const [path, ops] of Object.entries(spec.paths || {})) {
    for (const [method, op] of Object.entries(ops)) {
      if (/^(get|put|post|patch|delete)$/.test(method)) api.append(operation(path, method, op));
    }
  }
  const schemas = Object.entries((spec.components || {}).schemas || {});
  if (schemas.length) api.append(el('h2', null, 'Schemas'));
  for (const [name, schema] of schemas) {
    const d = api.appendChild(el('details', 'card op'));
    d.append(el('summary', null, name), json(schema));
  }
}).catch(e => api.append(el('p', 'err', `Cannot show the API: ${e.message}`)));
