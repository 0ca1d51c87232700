// TeX math → MathML (which Chromium, Firefox and Safari draw natively): the common part
// of what answers write — fractions, roots, sub- and superscripts, Greek letters, sums,
// products, integrals and limits, functions, relations and arrows, \text, \left…\right,
// matrices and cases. Every piece of the source becomes a text node of a MathML element,
// never markup; a formula this does not understand (an unbalanced brace) throws, and the
// caller shows its source instead.

const NS = 'http://www.w3.org/1998/Math/MathML';

/** A MathML element with `kids` (elements or text) and attributes. */
function mml(tag, kids = [], attrs = {}) {
  const e = document.createElementNS(NS, tag);
  for (const k of [].concat(kids)) e.append(k);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

const GREEK = {
  alpha: 'α', beta: 'β', gamma: 'γ', delta: 'δ', epsilon: 'ϵ', varepsilon: 'ε', zeta: 'ζ', eta: 'η', theta: 'θ',
  vartheta: 'ϑ', iota: 'ι', kappa: 'κ', lambda: 'λ', mu: 'μ', nu: 'ν', xi: 'ξ', pi: 'π', varpi: 'ϖ', rho: 'ρ',
  varrho: 'ϱ', sigma: 'σ', varsigma: 'ς', tau: 'τ', upsilon: 'υ', phi: 'ϕ', varphi: 'φ', chi: 'χ', psi: 'ψ', omega: 'ω',
  Gamma: 'Γ', Delta: 'Δ', Theta: 'Θ', Lambda: 'Λ', Xi: 'Ξ', Pi: 'Π', Sigma: 'Σ', Upsilon: 'Υ', Phi: 'Φ', Psi: 'Ψ', Omega: 'Ω',
};
// Operators and symbols written as one character.
const SYMBOL = {
  times: '×', cdot: '⋅', div: '÷', pm: '±', mp: '∓', ast: '∗', star: '⋆', circ: '∘', bullet: '∙',
  leq: '≤', le: '≤', geq: '≥', ge: '≥', neq: '≠', ne: '≠', approx: '≈', equiv: '≡', sim: '∼', simeq: '≃', cong: '≅',
  propto: '∝', ll: '≪', gg: '≫', in: '∈', notin: '∉', ni: '∋', subset: '⊂', supset: '⊃', subseteq: '⊆', supseteq: '⊇',
  cup: '∪', cap: '∩', setminus: '∖', emptyset: '∅', varnothing: '∅', forall: '∀', exists: '∃', neg: '¬', lnot: '¬',
  land: '∧', wedge: '∧', lor: '∨', vee: '∨', to: '→', rightarrow: '→', leftarrow: '←', gets: '←', Rightarrow: '⇒',
  Leftarrow: '⇐', leftrightarrow: '↔', Leftrightarrow: '⇔', iff: '⇔', implies: '⇒', mapsto: '↦', uparrow: '↑', downarrow: '↓',
  infty: '∞', partial: '∂', nabla: '∇', hbar: 'ℏ', ell: 'ℓ', Re: 'ℜ', Im: 'ℑ', aleph: 'ℵ', angle: '∠', perp: '⊥',
  parallel: '∥', mid: '∣', ldots: '…', dots: '…', cdots: '⋯', vdots: '⋮', ddots: '⋱', prime: '′', degree: '°',
  langle: '⟨', rangle: '⟩', lfloor: '⌊', rfloor: '⌋', lceil: '⌈', rceil: '⌉', vert: '|', Vert: '‖', lvert: '|', rvert: '|',
  oplus: '⊕', otimes: '⊗', dagger: '†', triangle: '△', square: '□', checkmark: '✓', '{': '{', '}': '}', '|': '‖',
  '%': '%', '$': '$', '#': '#', '&': '&', _: '_',
};
// Big operators: limits go under and over them in a display formula.
const BIG = { sum: '∑', prod: '∏', coprod: '∐', int: '∫', iint: '∬', iiint: '∭', oint: '∮', bigcup: '⋃', bigcap: '⋂', lim: 'lim', max: 'max', min: 'min', sup: 'sup', inf: 'inf', limsup: 'lim sup', liminf: 'lim inf' };
const FUNCS = new Set(['sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh',
  'log', 'ln', 'lg', 'exp', 'det', 'dim', 'ker', 'deg', 'gcd', 'arg', 'Pr', 'mod', 'bmod']);
const SPACE = { ',': '0.17em', ':': '0.22em', ';': '0.28em', ' ': '0.25em', quad: '1em', qquad: '2em', '!': '0em' };
const FONTS = { mathrm: 'normal', textrm: 'normal', mathbf: 'bold', textbf: 'bold', mathit: 'italic', textit: 'italic',
  mathbb: 'double-struck', mathcal: 'script', mathscr: 'script', mathfrak: 'fraktur', mathsf: 'sans-serif', boldsymbol: 'bold-italic' };
const MATRIX = { matrix: ['', ''], pmatrix: ['(', ')'], bmatrix: ['[', ']'], Bmatrix: ['{', '}'], vmatrix: ['|', '|'], Vmatrix: ['‖', '‖'], cases: ['{', ''], aligned: ['', ''], array: ['', ''] };
const ACCENT = { hat: '^', bar: '¯', overline: '¯', vec: '→', tilde: '~', widetilde: '~', dot: '˙', ddot: '¨', widehat: '^' };

/** The tokens of a TeX formula: \commands, \\ (a new row), single characters, runs of digits. */
function tokens(src) {
  const out = [];
  const re = /\\([A-Za-z]+)\s*|\\\\|\\(.)|(\d+(?:\.\d+)?)|(\s+)|([\s\S])/g;
  for (const x of src.matchAll(re)) {
    if (x[1] != null) out.push({ cmd: x[1] });
    else if (x[0] === '\\\\') out.push({ row: true });
    else if (x[2] != null) out.push({ cmd: x[2] });
    else if (x[3] != null) out.push({ num: x[3] });
    else if (x[4] == null) out.push({ ch: x[5] });
  }
  return out;
}

class Parser {
  constructor(src, display) { this.t = tokens(src); this.i = 0; this.display = display; }
  peek() { return this.t[this.i]; }
  next() { return this.t[this.i++]; }

  /** Atoms with their scripts until `stop` (a token test) or the end. */
  list(stop) {
    const kids = [];
    while (this.i < this.t.length && !(stop && stop(this.peek()))) {
      const tk = this.peek();
      if (tk.ch === '}') throw new Error('unbalanced }');
      let base = this.atom();
      if (base == null) continue;
      let sub = null, sup = null;
      for (;;) {
        const s = this.peek();
        if (s && s.ch === '_' && !sub) { this.next(); sub = this.arg(); }
        else if (s && s.ch === '^' && !sup) { this.next(); sup = this.arg(); }
        else if (s && s.ch === "'") { this.next(); sup = mml('mo', '′'); }
        else break;
      }
      if (sub || sup) {
        const under = this.display && base.dataset_big;
        const tag = sub && sup ? (under ? 'munderover' : 'msubsup') : sub ? (under ? 'munder' : 'msub') : (under ? 'mover' : 'msup');
        base = mml(tag, [base, ...(sub ? [sub] : []), ...(sup ? [sup] : [])]);
      }
      kids.push(base);
    }
    return kids;
  }

  /** One argument: a {group} or a single token. */
  arg() {
    const tk = this.peek();
    if (!tk) throw new Error('missing argument');
    if (tk.ch === '{') return this.group();
    return this.atom();
  }

  group() {
    this.next(); // {
    const kids = this.list(x => x.ch === '}');
    if (!this.next()) throw new Error('unclosed {');
    return kids.length === 1 ? kids[0] : mml('mrow', kids);
  }

  /** The raw text of a {…} argument (for \text, \begin). */
  text() {
    if (!this.peek() || this.peek().ch !== '{') throw new Error('{ expected');
    this.next();
    let s = '', depth = 1;
    for (let tk = this.next(); tk; tk = this.next()) {
      if (tk.ch === '{') depth++;
      if (tk.ch === '}' && !--depth) return s;
      s += tk.cmd != null ? (SYMBOL[tk.cmd] || '\\' + tk.cmd) : tk.num ?? tk.ch ?? '';
    }
    throw new Error('unclosed {');
  }

  atom() {
    const tk = this.next();
    if (tk.num != null) return mml('mn', tk.num);
    if (tk.row) return mml('mspace', [], { linebreak: 'newline' });
    if (tk.ch != null) {
      if (tk.ch === '{') { this.i--; return this.group(); }
      if (/[A-Za-z]/.test(tk.ch)) return mml('mi', tk.ch);
      if (tk.ch === '~') return mml('mspace', [], { width: '0.25em' });
      if (/[([]/.test(tk.ch)) return mml('mo', tk.ch, { stretchy: 'false' });
      if (/[)\]]/.test(tk.ch)) return mml('mo', tk.ch, { stretchy: 'false' });
      return mml('mo', tk.ch === '-' ? '−' : tk.ch === '*' ? '∗' : tk.ch);
    }
    const c = tk.cmd;
    if (c in GREEK) return mml('mi', GREEK[c], /^[A-Z]/.test(c) ? { mathvariant: 'normal' } : {});
    if (c in BIG) {
      const e = mml(c.length > 4 || /^(lim|max|min|sup|inf)/.test(c) ? 'mi' : 'mo', BIG[c], c.startsWith('lim') || c === 'max' || c === 'min' || c === 'sup' || c === 'inf' ? {} : { largeop: 'true' });
      e.dataset_big = true;
      return e;
    }
    if (FUNCS.has(c)) return mml('mi', c === 'bmod' ? 'mod' : c);
    if (c in SYMBOL) return mml(/[A-Za-z∞∂∇ℏℓℜℑℵ∅]/.test(SYMBOL[c]) ? 'mi' : 'mo', SYMBOL[c]);
    if (c in SPACE) return mml('mspace', [], { width: SPACE[c] });
    if (c === 'frac' || c === 'dfrac' || c === 'tfrac') return mml('mfrac', [this.arg(), this.arg()]);
    if (c === 'binom') return mml('mrow', [mml('mo', '('), mml('mfrac', [this.arg(), this.arg()], { linethickness: '0' }), mml('mo', ')')]);
    if (c === 'sqrt') {
      if (this.peek() && this.peek().ch === '[') {
        this.next();
        const n = this.list(x => x.ch === ']');
        this.next();
        const x = this.arg();
        return mml('mroot', [x, n.length === 1 ? n[0] : mml('mrow', n)]);
      }
      return mml('msqrt', [this.arg()]);
    }
    if (c === 'text' || c === 'textnormal' || c === 'mbox' || c === 'operatorname') return mml(c === 'operatorname' ? 'mi' : 'mtext', this.text(), c === 'operatorname' ? { mathvariant: 'normal' } : {});
    if (c in FONTS) {
      const x = this.arg();
      for (const e of [x, ...x.querySelectorAll('*')]) if (e.localName === 'mi' || e.localName === 'mn') e.setAttribute('mathvariant', FONTS[c]);
      return x;
    }
    if (c in ACCENT) return mml('mover', [this.arg(), mml('mo', ACCENT[c])], { accent: 'true' });
    if (c === 'left' || c === 'right' || c === 'big' || c === 'Big' || c === 'bigg' || c === 'Bigg') {
      const d = this.next();
      const s = !d ? '' : d.cmd != null ? SYMBOL[d.cmd] || '' : d.ch === '.' ? '' : d.ch;
      return mml('mo', s, { stretchy: c === 'left' || c === 'right' ? 'true' : 'false', fence: 'true' });
    }
    if (c === 'begin') {
      const env = this.text();
      if (!(env in MATRIX)) throw new Error('unknown environment ' + env);
      if (env === 'array' && this.peek() && this.peek().ch === '{') this.text(); // column spec
      const rows = [[[]]];
      for (;;) {
        const nx = this.peek();
        if (!nx) throw new Error('unclosed ' + env);
        if (nx.cmd === 'end') { this.next(); this.text(); break; }
        if (nx.row) { this.next(); rows.push([[]]); continue; }
        if (nx.ch === '&') { this.next(); rows.at(-1).push([]); continue; }
        const before = this.i;
        const got = this.list(x => x.row || x.ch === '&' || x.cmd === 'end');
        if (this.i === before) throw new Error('stuck');
        rows.at(-1).at(-1).push(...got);
      }
      const table = mml('mtable', rows.filter(r => r.some(c => c.length)).map(r => mml('mtr', r.map(c => mml('mtd', c.length === 1 ? c : [mml('mrow', c)])))),
        env === 'cases' || env === 'aligned' ? { columnalign: 'left' } : {});
      const [l, r] = MATRIX[env];
      return mml('mrow', [...(l ? [mml('mo', l)] : []), table, ...(r ? [mml('mo', r)] : [])]);
    }
    // A command this does not know: shown as written.
    return mml('mtext', '\\' + c);
  }
}

/** A <math> element for the TeX `src` (`display`: a formula on its own line); throws on
 * what it cannot read. */
export function texToMathML(src, display) {
  const p = new Parser(src, display);
  const kids = p.list(null);
  const root = mml('math', [mml('mrow', kids)], display ? { display: 'block' } : {});
  root.setAttribute('alttext', src);
  return root;
}
