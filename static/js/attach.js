// What goes with a question: pictures (scaled down to what the server takes) and other
// files (uploaded into the workspace, named in the message).
import { $, S, ask, guard, req, toast } from './net.js';
import { t } from './i18n.js';
import { h } from './md.js';

// What the server takes (llm/image.rs): PNG, JPEG, GIF or WebP, up to 2 MiB, 4 a message.
// A bigger picture (a phone photo) is scaled down here to IMAGE_SIDE pixels and sent as
// JPEG, so it fits and costs the model less.
const MAX_IMAGES = 4, IMAGE_SIDE = 1568, IMAGE_BYTES = 1536 * 1024;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

async function imageData(file) {
  const name = file.name || file.type || '?';
  if (!IMAGE_TYPES.includes(file.type)) throw new Error(t('notImage', name));
  const unreadable = () => new Error(t('imageUnreadable', name));
  const raw = await new Promise((ok, no) => {
    const r = new FileReader();
    r.onload = () => ok(r.result);
    r.onerror = () => no(unreadable());
    r.readAsDataURL(file);
  });
  const img = await new Promise((ok, no) => {
    const i = new Image();
    i.onload = () => ok(i);
    i.onerror = () => no(unreadable());
    i.src = raw;
  });
  const side = Math.max(img.naturalWidth, img.naturalHeight);
  if (file.size <= IMAGE_BYTES && side <= IMAGE_SIDE) return raw;
  const k = Math.min(1, IMAGE_SIDE / side), c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(img.naturalWidth * k));
  c.height = Math.max(1, Math.round(img.naturalHeight * k));
  const g = c.getContext('2d');
  g.fillStyle = '#fff'; // JPEG has no transparency
  g.fillRect(0, 0, c.width, c.height);
  g.drawImage(img, 0, 0, c.width, c.height);
  return c.toDataURL('image/jpeg', 0.85);
}

export function renderAttachments() {
  const box = $('#attachments');
  const files = S.files.map((f, i) => {
    const c = h('span', 'chip file', f.path);
    c.dataset.testid = 'attached-file';
    const x = c.appendChild(h('button', 'icon', '×'));
    x.type = 'button';
    x.title = t('removeFile');
    x.setAttribute('aria-label', t('removeFile'));
    x.onclick = () => { S.files.splice(i, 1); renderAttachments(); };
    return c;
  });
  box.replaceChildren(...files, ...S.images.map((src, i) => {
    const f = h('figure', 'att');
    const img = f.appendChild(h('img'));
    img.src = src;
    img.alt = '';
    img.dataset.testid = 'attached';
    const x = f.appendChild(h('button', 'icon', '×'));
    x.type = 'button';
    x.title = t('removeImage');
    x.setAttribute('aria-label', t('removeImage'));
    x.dataset.testid = 'remove-image';
    x.onclick = () => { S.images.splice(i, 1); renderAttachments(); };
    return f;
  }));
  box.hidden = !S.images.length && !S.files.length;
}

// Other files go into the workspace (POST /v1/workspace/files), and the message names
// them so the model can read them with its file tools. The server's body limit: 4 MiB.
const MAX_FILE_BYTES = 4 * 1024 * 1024;
const sizeText = n => n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KB' : (n / 1048576).toFixed(1) + ' MB';

async function uploadFile(file) {
  if (file.size > MAX_FILE_BYTES) throw new Error(t('fileTooBig', file.name, '4 MiB'));
  const path = replace => '/v1/workspace/files?name=' + encodeURIComponent(file.name) + (replace ? '&replace=true' : '');
  let r;
  try {
    r = await req('POST', path(false), file);
  } catch (e) {
    if (e.status !== 409 || /folder/.test(e.message)) throw e;
    // Never replaced without asking.
    if (!await ask(t('replaceFile', file.name), { danger: true, ok: t('replace') })) return toast(t('notReplaced', file.name), 'info');
    r = await req('POST', path(true), file);
  }
  const j = await r.json();
  S.files = S.files.filter(f => f.path !== j.path);
  S.files.push(j);
  renderAttachments();
}

/** The line a message gets for the files added with it. */
export const filesNote = files => '\n\n[' + t('filesAdded', files.map(f => `${f.path} (${sizeText(f.bytes)})`).join(', ')) + ']';

/** Adds picked, pasted or dropped files to the message being written: pictures as
 * images, anything else into the workspace. */
export const attach = guard(async files => {
  for (const f of files) {
    if (!IMAGE_TYPES.includes(f.type)) { await uploadFile(f); continue; }
    if (S.images.length >= MAX_IMAGES) throw new Error(t('tooManyImages', MAX_IMAGES));
    S.images.push(await imageData(f));
    renderAttachments();
  }
});
