// Markdown → DOM, safely. Model and user text only ever becomes text nodes (textContent,
// append(string)); nothing is parsed as HTML, so `<img onerror=…>` shows as the text it
// is. Links become <a> only for absolute http(s) URLs (javascript:, data: and the rest
// stay text); an image is shown only when it is inline data (a data:image/png, jpeg, gif
// or webp URL; a click enlarges it), one from elsewhere is a link, never loaded (the page
// must not call out). Covers what chat answers use: paragraphs, headings, emphasis,
// inline code, fenced code (highlighted, with a copy button), nested lists, tables,
// blockquotes, rules, and math ($…$, $$…$$, \[…\]) as MathML. An unclosed fence
// (mid-stream) renders as code.
import { h, toast } from './net.js';
import { t } from './i18n.js';
import { texToMathML } from './math.js';

// `h` was born here; pages still take it from this module.
export { h };

/** The URL when it is absolute http(s), else null. */
function safeUrl(u) {
  if (!/^https?:\/\//i.test(u)) return null;
  try {
    const x = new URL(u);
    return x.protocol === 'http:' || x.protocol === 'https:' ? x.href : null;
  } catch { return null; }
}

function mdLink(href) {
  const a = h('a');
  a.href = href;
  a.target = '_blank';
  a.rel = 'noopener noreferrer nofollow';
  return a;
}

// Escape | code span | **strong** | __strong__ | ~~del~~ | *em* | _em_ | [text](url) | bare URL
// | $$math$$ | $math$ (no space inside its dollars, no digit after: "$5 and $10" stays text)
const INLINE = new RegExp([
  /\\([\\`*_{}[\]()#+\-.!|~>])/,
  /(`+)([^`]|[^`][\s\S]*?[^`])\2(?!`)/,
  /\*\*(?=\S)([\s\S]*?\S)\*\*/,
  /__(?=\S)([\s\S]*?\S)__(?![\p{L}\p{N}])/,
  /~~(?=\S)([\s\S]*?\S)~~/,
  /\*(?=[^\s*])([\s\S]*?[^\s*])\*/,
  /(?<![\p{L}\p{N}_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/,
  /!?\[((?:[^[\]]|\[[^\]]*\])*)\]\(\s*<?([^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)>?(?:\s+"[^"]*")?\s*\)/,
  /(https?:\/\/[^\s<>]*[^\s<>.,;:!?'")\]*_])/,
  /\$\$([^$]+?)\$\$/,
  /\$(?![\s$])((?:\\.|[^$\\\n])+?)(?<![\s\\])\$(?!\d)/,
].map(r => r.source).join('|'), 'gu');

/** Text with line breaks as <br>. */
export function mdText(el, s) {
  s.split('\n').forEach((p, i) => {
    if (i) el.append(h('br'));
    if (p) el.append(p);
  });
}

/** Renders inline Markdown of `s` into `el`. */
function mdInline(el, s) {
  let at = 0;
  for (const m of s.matchAll(INLINE)) {
    mdText(el, s.slice(at, m.index));
    at = m.index + m[0].length;
    let n;
    if (m[1] != null) { el.append(m[1]); continue; }
    if (m[3] != null) n = h('code', null, m[3]);
    else if (m[4] != null || m[5] != null) mdInline(n = h('strong'), m[4] ?? m[5]);
    else if (m[6] != null) mdInline(n = h('del'), m[6]);
    else if (m[7] != null || m[8] != null) mdInline(n = h('em'), m[7] ?? m[8]);
    else if (m[12] != null || m[13] != null) n = mathEl(m[12] ?? m[13], m[12] != null, m[0]);
    else if (m[0][0] === '!' && IMAGE.test(m[10])) n = mdImage(m[10], m[9]);
    else {
      const url = safeUrl(m[10] ?? m[11]);
      if (!url) { mdText(el, m[0]); continue; }
      n = mdLink(url);
      if (m[10] != null) mdInline(n, m[9] || url); else n.textContent = m[11];
    }
    el.append(n);
  }
  mdText(el, s.slice(at));
}

/** A formula as MathML; one it cannot read stays its source, as code. */
function mathEl(tex, display, raw) {
  try {
    const e = texToMathML(tex.trim(), display);
    e.dataset.testid = 'math';
    if (!display) return e;
    const d = h('div', 'math-block');
    d.append(e);
    return d;
  } catch {
    return h('code', null, raw);
  }
}

const IMAGE = /^data:image\/(png|jpe?g|gif|webp);base64,[A-Za-z0-9+/=]+$/;

/** An inline image; a click shows it large (Escape or a click closes it). */
function mdImage(src, alt) {
  const img = h('img', 'md-img');
  img.src = src;
  img.alt = alt || '';
  img.tabIndex = 0;
  img.dataset.testid = 'md-img';
  img.onclick = img.onkeydown = e => { if (e.type === 'click' || e.key === 'Enter') enlarge(src, alt); };
  return img;
}

export function enlarge(src, alt) {
  let d = document.querySelector('#lightbox');
  if (!d) {
    d = document.body.appendChild(h('dialog'));
    d.id = 'lightbox';
    d.onclick = () => d.close();
    d.setAttribute('aria-label', alt || 'image');
  }
  const img = h('img');
  img.src = src;
  img.alt = alt || '';
  d.replaceChildren(img);
  d.showModal();
}

// Code highlighting: comments, strings, numbers and keywords of the languages answers
// use, by one tokenizer (small, no library); the text stays exactly the code.
const HASH = /^(py|python|sh|bash|shell|zsh|console|yaml|yml|toml|rb|ruby|r|perl|pl|dockerfile|makefile|make|nix|conf|ini|ps1|powershell|elixir|ex)$/i;
const DASH = /^(sql|lua|haskell|hs)$/i;
const KEYWORDS = new Set(('as async await break case catch class const continue def default del do elif else enum ' +
  'except export extends false final finally fn for from func function go if impl import in interface let ' +
  'loop match mod mut new nil none not null or pass pub return self static struct super switch this throw ' +
  'true try type typeof use var void where while with yield echo fi then esac done local package defer ' +
  'chan range lambda raise select insert update delete where create table and int char bool string').split(' '));
const TK = {
  hash: /#[^\n]*/.source, dash: /--[^\n]*/.source, slash: /\/\/[^\n]*|\/\*[\s\S]*?\*\//.source,
  str: /("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)/.source,
  num: /\b(0x[\da-f]+|\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?)\b/.source, word: /([A-Za-z_$][\w$]*)/.source,
};
function highlight(code, lang) {
  const c = h('code');
  if (!lang || /^(text|txt|plain|md|markdown|diff|log|output)$/i.test(lang)) { c.textContent = code; return c; }
  const comment = HASH.test(lang) ? TK.hash : DASH.test(lang) ? TK.dash : TK.slash;
  const re = new RegExp(`(${comment})|${TK.str}|${TK.num}|${TK.word}`, 'gi');
  let at = 0;
  for (const m of code.matchAll(re)) {
    const cls = m[1] ? 'tk-c' : m[2] ? 'tk-s' : m[3] ? 'tk-n' : KEYWORDS.has(m[4].toLowerCase()) && m[4] ? 'tk-k' : '';
    if (!cls) continue;
    if (m.index > at) c.append(code.slice(at, m.index));
    c.append(h('span', cls, m[0]));
    at = m.index + m[0].length;
  }
  c.append(code.slice(at));
  return c;
}

export async function copyText(s) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(s);
  const ta = h('textarea', 'offscreen');
  ta.value = s;
  document.body.append(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error(t('copyFail'));
}

function codeBlock(code, lang) {
  const w = h('div', 'code'), bar = w.appendChild(h('div', 'code-bar'));
  bar.append(h('span', null, lang));
  // A diagram's source is shown as it is (drawing it would take a library bigger than the
  // whole page): said in the bar.
  if (/^mermaid$/i.test(lang)) bar.firstChild.textContent = t('mermaidSource');
  const b = bar.appendChild(h('button', 'copy', t('copy')));
  b.type = 'button';
  b.dataset.i18n = 'copy';
  b.dataset.testid = 'copy-code';
  b.onclick = () => copyText(code).then(() => {
    b.textContent = t('copied');
    setTimeout(() => { b.textContent = t('copy'); }, 1500);
  }, e => toast(e.message));
  w.appendChild(h('pre')).appendChild(highlight(code, lang));
  return w;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>/;
const LIST = /^( *)([-*+]|\d{1,9}[.)])(?:\s+(.*))?$/;
const MATH = /^ {0,3}(\$\$|\\\[)/;
const DELIM = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const blank = s => !s.trim();
const indent = s => s.match(/^ */)[0].length;

function startsBlock(L, i) {
  const l = L[i];
  return FENCE.test(l) || MATH.test(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l) || LIST.test(l) ||
    (l.includes('|') && i + 1 < L.length && L[i + 1].includes('|') && DELIM.test(L[i + 1]));
}

function cells(l) {
  return l.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '').split(/(?<!\\)\|/)
    .map(c => c.trim().replace(/\\\|/g, '|'));
}

function mdTable(L, i, out) {
  const head = cells(L[i]);
  const align = cells(L[i + 1]).map(c =>
    c.endsWith(':') ? (c.startsWith(':') ? 'center' : 'right') : '');
  const table = out.appendChild(h('div', 'tbl')).appendChild(h('table'));
  const row = (cs, tag, parent) => {
    const tr = parent.appendChild(h('tr'));
    head.forEach((_, k) => mdInline(tr.appendChild(h(tag, align[k] && 'a-' + align[k])), cs[k] || ''));
  };
  row(head, 'th', table.appendChild(h('thead')));
  const body = table.appendChild(h('tbody'));
  for (i += 2; i < L.length && !blank(L[i]) && L[i].includes('|'); i++) row(cells(L[i]), 'td', body);
  return i;
}

function mdList(L, i, out) {
  const first = L[i].match(LIST), base = first[1].length, ordered = /\d/.test(first[2]);
  const list = out.appendChild(h(ordered ? 'ol' : 'ul'));
  if (ordered && parseInt(first[2], 10) !== 1) list.start = parseInt(first[2], 10);
  while (i < L.length) {
    const m = L[i].match(LIST);
    if (!m || m[1].length !== base || /\d/.test(m[2]) !== ordered) break;
    const width = base + m[2].length + 1, body = [m[3] || ''];
    for (i++; i < L.length; i++) {
      const l = L[i];
      if (blank(l)) {
        let j = i;
        while (j < L.length && blank(L[j])) j++;
        if (j < L.length && indent(L[j]) > base) { body.push(...L.slice(i, j).map(() => '')); i = j - 1; continue; }
        break;
      }
      if (indent(l) > base) body.push(l.slice(Math.min(indent(l), width)));
      else if (startsBlock(L, i)) break;
      else body.push(l);
    }
    const li = list.appendChild(h('li'));
    const task = body[0].match(/^\[([ xX])\]\s+/);
    if (task) body[0] = body[0].slice(task[0].length);
    md(body.join('\n'), li);
    if (task) {
      // The box on the line of its text (in its paragraph when the text is one).
      li.className = 'task';
      const box = h('span', 'box', task[1] === ' ' ? '☐ ' : '☑ ');
      box.setAttribute('role', 'img');
      box.setAttribute('aria-label', t(task[1] === ' ' ? 'taskOpen' : 'taskDone'));
      (li.firstElementChild && li.firstElementChild.tagName === 'P' ? li.firstElementChild : li).prepend(box);
    }
  }
  return i;
}

/** Renders Markdown `src` into `out` (a new fragment when omitted) and returns it. */
export function md(src, out = document.createDocumentFragment()) {
  const L = String(src).replace(/\r\n?/g, '\n').replace(/^\t+/gm, x => '    '.repeat(x.length)).split('\n');
  let i = 0, m;
  while (i < L.length) {
    const l = L[i];
    if (blank(l)) { i++; continue; }
    if ((m = l.match(FENCE))) {
      const close = new RegExp(`^ {0,3}${m[1][0] === '`' ? '`' : '~'}{${m[1].length},}\\s*$`);
      const pad = indent(l), code = [];
      for (i++; i < L.length && !close.test(L[i]); i++) code.push(L[i].slice(Math.min(pad, indent(L[i]))));
      i++;
      out.append(codeBlock(code.join('\n'), m[2]));
    } else if ((m = l.match(MATH))) {
      // A formula on lines of its own, up to its closing $$ or \].
      const end = m[1] === '$$' ? '$$' : '\\]', lines = [l.trim().slice(2)];
      while (!lines.at(-1).includes(end) && ++i < L.length) lines.push(L[i]);
      i++;
      const tex = lines.join('\n'), at = tex.indexOf(end);
      out.append(mathEl(at >= 0 ? tex.slice(0, at) : tex, true, l.trim().slice(0, 2) + tex));
      if (at >= 0 && tex.slice(at + 2).trim()) mdInline(out.appendChild(h('p')), tex.slice(at + 2).trim());
    } else if ((m = l.match(HEADING))) {
      mdInline(out.appendChild(h('h' + m[1].length)), m[2]);
      i++;
    } else if (RULE.test(l)) {
      out.append(h('hr'));
      i++;
    } else if (QUOTE.test(l)) {
      const q = [];
      while (i < L.length && QUOTE.test(L[i])) q.push(L[i++].replace(/^ {0,3}> ?/, ''));
      md(q.join('\n'), out.appendChild(h('blockquote')));
    } else if (LIST.test(l) && (LIST.exec(l)[3] || /[-*+]/.test(l.trim()[0]))) {
      i = mdList(L, i, out);
    } else if (l.includes('|') && i + 1 < L.length && L[i + 1].includes('|') && DELIM.test(L[i + 1])) {
      i = mdTable(L, i, out);
    } else {
      const p = [l];
      for (i++; i < L.length && !blank(L[i]) && !startsBlock(L, i); i++) p.push(L[i]);
      mdInline(out.appendChild(h('p')), p.join('\n'));
    }
  }
  return out;
}
