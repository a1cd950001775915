// Markdown for answers: incremental while an answer streams, sanitized always.
//
// A streaming answer's text only grows. It is cut at block boundaries that later
// text cannot change: an unindented line after a blank line, a top-level code
// fence or $$ block opening or closing, a heading, the next item of a top-level
// list. Text before the last boundary is rendered once into its own element and
// never touched again ("frozen": code highlighted, math typeset); only the tail
// after it is re-rendered when text arrives. An open top-level code fence in the
// tail is appended to as plain text, so a long code block costs nothing per frame.
//
// Everything inserted as HTML goes through DOMPurify. Uses the vendored UMD
// globals markdownit, DOMPurify, hljs and katex; without markdown-it or DOMPurify
// the answer is shown as plain text.

import { gettext, interpolate } from "./i18n.js";

// Typed as present: DOMPurify is used only when `available`, hljs and katex
// each after a check of its own.
const { markdownit, DOMPurify, hljs, katex } =
  /** @type {Window & Required<Pick<Window, "DOMPurify" | "hljs" | "katex">>} */ (window);

export const available = Boolean(markdownit && DOMPurify);

/** @type {PurifyConfig & {RETURN_DOM_FRAGMENT: true}} */
const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  ADD_TAGS: ["semantics", "annotation"], // KaTeX's MathML keeps its TeX source
  ADD_ATTR: ["encoding", "target"],
  // As on the server (chat/rendering/markdown.py keeps no image source): an image in
  // model output would be a request the page's policy refuses (img-src), with
  // a violation logged, or a tracking pixel if the policy ever allowed it.
  FORBID_TAGS: ["img"],
};
const HIGHLIGHT_MAX_CHARS = 12000; // hljs costs ~2 ms per KB: stay far under 50 ms

const md = available ? createParser() : null;

if (available) {
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    }
  });
}

function createParser() {
  // The same dialect as the server (chat/rendering/markdown.py), plus math.
  const parser = /** @type {NonNullable<typeof markdownit>} */ (markdownit)("commonmark", { html: false, linkify: false });
  parser.enable(["table", "strikethrough"]);
  parser.inline.ruler.before("escape", "math_inline", mathInlineRule);
  parser.block.ruler.before("fence", "math_block", mathBlockRule, {
    alt: ["paragraph", "reference", "blockquote", "list"],
  });
  parser.renderer.rules.math_inline = (tokens, i, _o, env) =>
    renderMath(tokens[i].content, tokens[i].markup, env);
  parser.renderer.rules.math_block = (tokens, i, _o, env) =>
    `<div class="math-display">${renderMath(tokens[i].content, "$$", env)}</div>\n`;
  return parser;
}

// ---------------------------------------------------------------- math

/** @type {Record<string, string>} */
const DELIMITERS = { $: "$", $$: "$$", "\\(": "\\)", "\\[": "\\]" };

/** @param {number} code */
function isSpace(code) {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

/** @param {number} code */
function isDigit(code) {
  return code >= 48 && code <= 57;
}

// Inline math starting at `start`: {open, content, end} or null. `$…$` follows
// pandoc: no space inside the dollars, no digit right after the closing one, so
// "$5 and $10" stays text. The span closes at the first closing delimiter after
// the opening one that may close: not escaped by a backslash and, for `$`, with
// no space before it and no digit after it. The same rules as the server's
// (chat/rendering/math.py).
/**
 * @param {string} src
 * @param {number} start
 */
export function matchInlineMath(src, start) {
  let open = null;
  if (src.startsWith("$$", start)) open = "$$";
  else if (src[start] === "$") open = "$";
  else if (src.startsWith("\\(", start)) open = "\\(";
  else if (src.startsWith("\\[", start)) open = "\\[";
  if (!open) return null;
  const close = DELIMITERS[open];
  const from = start + open.length;
  if (open === "$" && (from >= src.length || isSpace(src.charCodeAt(from)))) return null;
  const end = closerAfter(src, close, from);
  if (end === -1) return null;
  return { open, content: src.slice(from, end), end: end + close.length };
}

// Whether a closing delimiter may close depends on its neighbours only, not on
// where the math opened: so the closers of a text are listed once, and each
// opener bisects. The parser tries the rule at every `$` and `\` of one text in
// turn, so the last text's lists are kept. (Searching forward from every opener
// was quadratic: "$1" × 7,500, where no `$` may close, froze the page.)
/** @type {{src: string | null, positions: Map<string, number[]>}} */
let closers = { src: null, positions: new Map() };

/**
 * @param {string} src
 * @param {string} close
 * @param {number} from
 */
function closerAfter(src, close, from) {
  if (closers.src !== src) closers = { src, positions: new Map() };
  let positions = closers.positions.get(close);
  if (!positions) {
    positions = closersIn(src, close);
    closers.positions.set(close, positions);
  }
  let low = 0;
  let high = positions.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (positions[middle] <= from) low = middle + 1;
    else high = middle;
  }
  return low < positions.length ? positions[low] : -1;
}

/**
 * @param {string} src
 * @param {string} close
 */
function closersIn(src, close) {
  const dollar = close === "$";
  const found = [];
  // Never at 0: math has an opener before its closer.
  for (let end = src.indexOf(close, 1); end !== -1; end = src.indexOf(close, end + 1)) {
    const before = src.charCodeAt(end - 1);
    const spaced = dollar && isSpace(before);
    const digit = dollar && isDigit(src.charCodeAt(end + 1));
    if (before !== 92 && !spaced && !digit) found.push(end);
  }
  return found;
}

/**
 * @param {MarkdownInlineState} state
 * @param {boolean} silent
 */
function mathInlineRule(state, silent) {
  const found = matchInlineMath(state.src, state.pos);
  if (!found || found.end > state.posMax) return false;
  if (!silent) {
    const token = state.push("math_inline", "math", 0);
    token.content = found.content;
    token.markup = found.open;
  }
  state.pos = found.end;
  return true;
}

/**
 * @param {MarkdownBlockState} state
 * @param {number} startLine
 * @param {number} endLine
 * @param {boolean} silent
 */
function mathBlockRule(state, startLine, endLine, silent) {
  const start = state.bMarks[startLine] + state.tShift[startLine];
  if (state.sCount[startLine] - state.blkIndent >= 4) return false;
  const first = state.src.slice(start, state.eMarks[startLine]);
  const open = first.startsWith("$$") ? "$$" : first.startsWith("\\[") ? "\\[" : null;
  if (!open) return false;
  const close = DELIMITERS[open];
  const lines = [first.slice(open.length)];
  if (lines[0].includes(close) && !endsWithClose(lines[0], close)) return false; // inline
  if (silent) return true;
  let line = startLine;
  let closed = endsWithClose(lines[0], close);
  while (!closed && ++line < endLine) {
    const text = state.src.slice(state.bMarks[line] + state.tShift[line], state.eMarks[line]);
    lines.push(text);
    closed = endsWithClose(text, close);
  }
  if (closed) lines[lines.length - 1] = lines[lines.length - 1].trimEnd().slice(0, -close.length);
  state.line = Math.min(line, endLine) + 1;
  const token = state.push("math_block", "math", 0);
  token.block = true;
  token.content = lines.join("\n").trim();
  token.markup = open;
  token.map = [startLine, state.line];
  return true;
}

/**
 * @param {string} text
 * @param {string} close
 */
function endsWithClose(text, close) {
  const trimmed = text.trimEnd();
  return trimmed.length >= close.length && trimmed.endsWith(close);
}

/** @param {string} text */
function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => /** @type {Record<string, string>} */ ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

// While a block is still open its math is shown as source; frozen blocks get KaTeX.
/**
 * @param {string} tex
 * @param {string} open
 * @param {MarkdownEnv} env
 */
function renderMath(tex, open, env) {
  const display = open === "$$" || open === "\\[";
  if (env.pending || !katex) {
    const source = `${open}${tex}${DELIMITERS[open]}`;
    return `<span class="math-pending">${escapeHtml(source)}</span>`;
  }
  try {
    return katex.renderToString(tex, {
      displayMode: display,
      throwOnError: false,
      trust: false,
      strict: "ignore",
      maxSize: 20,
      maxExpand: 500,
    });
  } catch {
    return `<code class="math-error">${escapeHtml(tex)}</code>`;
  }
}

// ---------------------------------------------------------------- rendering

// Parsed once in an inert document (nothing loads or runs there), sanitized in
// place, then moved into the page: one HTML parse per render, no copy.
const inert = available ? document.implementation.createHTMLDocument("") : null;
/** @type {PurifyConfig & {IN_PLACE: true}} */
const PURIFY_IN_PLACE = { ...PURIFY, RETURN_DOM_FRAGMENT: false, IN_PLACE: true };

/**
 * @param {string} text
 * @param {boolean} pending
 */
function render(text, pending) {
  // Called only when `available`: `inert` and `md` are there.
  const box = /** @type {Document} */ (inert).createElement("div");
  box.innerHTML = /** @type {MarkdownIt} */ (md).render(text, { pending });
  DOMPurify.sanitize(box, PURIFY_IN_PLACE);
  const fragment = document.createDocumentFragment();
  fragment.append(...box.childNodes);
  return fragment;
}

/**
 * @param {HTMLElement} pre
 * @param {HTMLElement} code
 */
function codeBlockChrome(pre, code) {
  const block = document.createElement("div");
  block.className = "code-block";
  const header = document.createElement("div");
  header.className = "code-header";
  const lang = document.createElement("span");
  lang.className = "code-lang";
  lang.textContent = languageOf(code) || gettext("text");
  const copy = document.createElement("button");
  copy.type = "button";
  copy.className = "copy-code";
  copy.textContent = gettext("Copy");
  copy.setAttribute("aria-label", interpolate(gettext("Copy %(language)s code"), { language: lang.textContent }));
  header.append(lang, copy);
  pre.replaceWith(block);
  block.append(header, pre);
  return block;
}

/** @param {Element} code */
function languageOf(code) {
  const match = /(?:^|\s)language-([^\s]+)/.exec(code.className);
  return match ? match[1] : "";
}

// Code blocks get a header with a copy button (and, once final, highlighting);
// tables get a scrolling wrapper so a wide one does not widen the page.
/**
 * @param {ParentNode} root
 * @param {boolean} final
 */
function decorate(root, final) {
  for (const code of root.querySelectorAll(/** @type {"code"} */ ("pre > code"))) {
    const pre = /** @type {HTMLElement} */ (code.parentElement);
    if (!pre.parentElement?.classList.contains("code-block")) codeBlockChrome(pre, code);
    if (final) queueHighlight(code);
  }
  for (const table of root.querySelectorAll("table")) {
    if (table.parentElement?.classList.contains("table-wrap")) continue;
    const wrap = document.createElement("div");
    wrap.className = "table-wrap";
    table.replaceWith(wrap);
    wrap.append(table);
  }
}

// ---------------------------------------------------------------- highlighting

/** @type {HTMLElement[]} */
const highlightQueue = [];
let highlightScheduled = false;
/** @type {(fn: IdleRequestCallback) => void} */
const whenIdle = window.requestIdleCallback
  ? (fn) => window.requestIdleCallback(fn, { timeout: 500 })
  : (fn) => setTimeout(() => fn({ timeRemaining: () => 8, didTimeout: true }), 16);

/** @param {HTMLElement} code */
function queueHighlight(code) {
  if (!hljs) return;
  highlightQueue.push(code);
  if (!highlightScheduled) {
    highlightScheduled = true;
    whenIdle(runHighlightQueue);
  }
}

// Highlighting is off the hot path: in idle time, as many blocks as fit (hljs
// takes about 2 ms per KB), and always at least one.
/** @param {IdleDeadline} deadline */
function runHighlightQueue(deadline) {
  do {
    const code = highlightQueue.shift();
    if (code) highlight(code);
  } while (highlightQueue.length && deadline.timeRemaining() > 2 + highlightQueue[0].textContent.length / 400);
  highlightScheduled = highlightQueue.length > 0;
  if (highlightScheduled) whenIdle(runHighlightQueue);
}

/** @param {HTMLElement} code */
function highlight(code) {
  const language = languageOf(code);
  if (!code.isConnected || !language || !hljs.getLanguage(language)) return;
  const text = code.textContent;
  if (text.length > HIGHLIGHT_MAX_CHARS) return;
  const html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
  code.replaceChildren(DOMPurify.sanitize(html, PURIFY));
  code.classList.add("hljs");
}

// ---------------------------------------------------------------- block scanner

const FENCE_OPEN = /^(`{3,}|~{3,})(.*)$/;
const PLAIN_TEXT = /^[^\n\r\\`*_~[\]()<>&$]+$/u;
const PROSE_LINE = /^(?:\p{L}|[*_"'(][^\s*_]|\*\*[^\s*]|__[^\s_])/u;
const LIST_ITEM = /^(?:([-*+])|(\d{1,9})[.)])(?:[ \t]|$)/;
const HEADING = /^#{1,6}(?:[ \t]|$)/;

// Where `text` ends without the spaces and tabs markdown trims from the end of a
// paragraph (only those: a no-break or ideographic space stays).
/** @param {string} text */
function trimmedEnd(text) {
  let end = text.length;
  while (end > 0 && (text[end - 1] === " " || text[end - 1] === "\t")) end--;
  return end;
}

// Finds the boundaries in a growing text. Lines are classified once, when their
// newline arrives; only the first character of an incomplete line is looked at.
/**
 * An open code fence or $$ block; `code`: a fence, not math.
 * @typedef {{marker: string, code: boolean, top: boolean, start: number, contentStart: number}} Fence
 */

class BlockScanner {
  constructor() {
    this.lineStart = 0; // start of the first line not yet complete
    this.scanned = 0; // where the search for the next newline resumes
    this.boundary = 0;
    this.afterBlank = false;
    /** @type {Fence | null} */
    this.fence = null; // inside a code fence / $$ block
    /** @type {"bullet" | "ordered" | null} */
    this.list = null; // inside a top-level list
  }

  // `added`: what `text` gained since the last scan. A piece without a newline,
  // on a line whose first character was already seen, changes nothing; it is
  // settled without reading `text`, which a string grown piece by piece would
  // have to copy whole (flatten) first: that would cost each token the
  // answer's length.
  /**
   * @param {string} text
   * @param {string | null} [added]
   */
  scan(text, added = null) {
    if (added !== null && !added.includes("\n") && this.lineStart < text.length - added.length) {
      this.scanned = text.length;
      return this.boundary;
    }
    let newline;
    while ((newline = text.indexOf("\n", this.scanned)) !== -1) {
      this.line(text.slice(this.lineStart, newline), this.lineStart, newline + 1);
      this.lineStart = this.scanned = newline + 1;
    }
    this.scanned = text.length;
    // After a blank line, an unindented character starts a new top-level block.
    if (this.afterBlank && !this.fence && this.lineStart < text.length) {
      const c = text.charCodeAt(this.lineStart);
      if (c !== 32 && c !== 9) this.cut(this.lineStart);
    }
    return this.boundary;
  }

  /** @param {number} position */
  cut(position) {
    if (position > this.boundary) this.boundary = position;
  }

  // An open top-level fence that starts the tail and whose first line is complete.
  /** @param {number} position */
  openFenceAt(position) {
    const fence = this.fence;
    return fence && fence.top && fence.code && fence.start === position ? fence : null;
  }

  /**
   * @param {string} text
   * @param {number} start
   * @param {number} next
   */
  line(text, start, next) {
    const body = text.trimStart();
    const indent = text.length - body.length;
    if (this.fence) {
      if (this.closesFence(body)) {
        if (this.fence.top) this.cut(next);
        this.fence = null;
      }
      return;
    }
    if (!body.trim()) {
      this.afterBlank = start > 0;
      return;
    }
    const afterBlank = this.afterBlank;
    this.afterBlank = false;
    if (indent === 0 && afterBlank) this.cut(start);
    if (indent <= 3 && this.opensBlock(body, indent === 0, start, next)) return;
    if (indent > 0) return;
    if (HEADING.test(body)) {
      this.cut(start);
      this.cut(next);
      this.list = null;
      return;
    }
    this.listLine(body, afterBlank, start);
  }

  /**
   * @param {string} body
   * @param {boolean} top
   * @param {number} start
   * @param {number} next
   */
  opensBlock(body, top, start, next) {
    const fence = FENCE_OPEN.exec(body);
    if (fence && !(fence[1][0] === "`" && fence[2].includes("`"))) {
      this.fence = { marker: fence[1], code: true, top, start, contentStart: next };
    } else if (top && body.startsWith("$$")) {
      const single = body.length > 2 && endsWithClose(body.slice(2), "$$");
      this.cut(start);
      if (single) this.cut(next);
      else this.fence = { marker: "$$", code: false, top, start, contentStart: next };
    } else {
      return false;
    }
    if (top) {
      this.cut(start);
      this.list = null;
    }
    return true;
  }

  /** @param {string} body */
  closesFence(body) {
    const marker = /** @type {Fence} */ (this.fence).marker;
    if (marker === "$$") return endsWithClose(body, "$$");
    const trimmed = body.trimEnd();
    return (
      trimmed.length >= marker.length &&
      trimmed[0] === marker[0] &&
      [...trimmed].every((c) => c === marker[0])
    );
  }

  // The next item of a top-level list is a boundary too (lists are merged back
  // together in the DOM), so a 1,000-item list does not stay in the tail.
  /**
   * @param {string} body
   * @param {boolean} afterBlank
   * @param {number} start
   */
  listLine(body, afterBlank, start) {
    const item = LIST_ITEM.exec(body);
    if (item) {
      const kind = item[1] ? "bullet" : "ordered";
      if (this.list === kind) this.cut(start);
      this.list = kind;
    } else if (afterBlank) {
      this.list = null;
    }
  }
}

// ---------------------------------------------------------------- the renderer

export class IncrementalMarkdown {
  /** @param {HTMLElement} container */
  constructor(container) {
    this.container = container;
    this.source = "";
    this.frozenEnd = 0;
    this.scanner = new BlockScanner();
    /** @type {HTMLElement | null} */
    this.tail = null;
    /** @type {string | null} */
    this.tailSource = null;
    /** @type {{node: Text, end: number, fence: Fence} | null} */
    this.codeTail = null; // an open fence being appended to
    /** @type {{node: Text, held: string} | null} */
    this.prose = null; // the tail's one paragraph line (`proseTail`)
  }

  /** @param {string} text */
  append(text) {
    if (!text) return;
    if (!this.tail) this.start();
    this.source += text;
    const boundary = this.scanner.scan(this.source, text);
    if (boundary > this.frozenEnd) this.freeze(boundary);
    else if (this.appendText(text)) return;
    this.renderTail();
  }

  // The answer ended: whatever is left is final.
  finish() {
    if (!this.tail) return;
    if (this.source.length > this.frozenEnd) this.freeze(this.source.length);
    this.tail.replaceChildren();
  }

  start() {
    this.tail = document.createElement("div");
    this.tail.className = "md-tail";
    this.container.classList.add("md");
    this.container.replaceChildren(this.tail);
  }

  // The methods below run after start(): `tail` is there.

  /** @param {number} end */
  freeze(end) {
    const chunk = this.source.slice(this.frozenEnd, end);
    this.frozenEnd = end;
    this.tailSource = null;
    this.codeTail = null;
    const fragment = render(chunk, false);
    decorate(fragment, true);
    if (LIST_ITEM.test(chunk)) mergeList(this.lastFrozenElement(), fragment);
    if (!fragment.firstElementChild) return; // all of it joined the list before
    const block = document.createElement("div");
    block.className = "md-block";
    markHeadings(block, fragment);
    block.append(fragment);
    /** @type {HTMLElement} */ (this.tail).before(block);
  }

  lastFrozenElement() {
    const block = /** @type {HTMLElement} */ (this.tail).previousElementSibling;
    return block ? block.lastElementChild : null;
  }

  renderTail() {
    this.prose = null;
    const fence = this.scanner.openFenceAt(this.frozenEnd);
    if (fence) {
      this.appendCode(fence);
      return;
    }
    const text = this.source.slice(this.frozenEnd);
    if (text === this.tailSource) return;
    this.tailSource = text;
    this.codeTail = null;
    const fragment = render(text, true);
    decorate(fragment, false);
    if (LIST_ITEM.test(text)) continueList(this.lastFrozenElement(), fragment);
    const tail = /** @type {HTMLElement} */ (this.tail);
    markHeadings(tail, fragment);
    tail.replaceChildren(fragment);
    this.prose = this.proseTail(text);
  }

  // Whether the tail is one paragraph that plain text may simply extend: its
  // last line starts like prose (so it is no list item, heading, break, fence
  // or table row, with or without more words), and its DOM is that paragraph,
  // ending in text. Then {node, held}: `held` is its trailing whitespace, which
  // markdown trims from a paragraph's end until more text follows it.
  /** @param {string} text */
  proseTail(text) {
    if (!PROSE_LINE.test(text.slice(text.lastIndexOf("\n") + 1))) return null;
    const tail = /** @type {HTMLElement} */ (this.tail);
    const last = tail.lastElementChild;
    const node = last && last.tagName === "P" && last === tail.firstElementChild ? last.lastChild : null;
    if (!node || node.nodeType !== Node.TEXT_NODE) return null;
    return { node: /** @type {Text} */ (node), held: text.slice(trimmedEnd(text)) };
  }

  // The usual token (" word", "word ", a few CJK characters) continuing the
  // tail's paragraph line: markdown would render the tail exactly as it is now
  // plus those characters, so they are appended as text, in script time that
  // does not grow with the paragraph. (Chromium then shapes the paragraph again
  // whole, however its text is split into nodes: a trace of a long Chinese
  // paragraph measured the same with one node as with nodes of 256
  // characters, so it is one node.) Not for a newline, nor any character that opens or
  // closes inline syntax; the whitespace markdown would trim at the end is held
  // back until text follows it.
  /** @param {string} added */
  appendText(added) {
    const prose = this.prose;
    this.prose = null; // settled again below, or by the next full render
    if (!prose || this.codeTail || !PLAIN_TEXT.test(added)) return false;
    const combined = prose.held + added;
    const end = trimmedEnd(combined);
    if (end > 0) prose.node.appendData(combined.slice(0, end));
    this.prose = { node: prose.node, held: combined.slice(end) };
    this.tailSource = null; // the tail's source is read again only for a full render
    return true;
  }

  // An open fence: append the new code as text. An incomplete last line that
  // may be the closing fence is held back until its newline says what it is.
  /** @param {Fence} fence */
  appendCode(fence) {
    if (!this.codeTail || this.codeTail.fence !== fence) {
      this.codeTail = { fence, end: fence.contentStart, node: this.codeShell(fence) };
    }
    let end = this.source.length;
    const lineStart = this.source.lastIndexOf("\n", end - 1) + 1;
    if (lineStart >= fence.contentStart && /^\s*[`~]*$/.test(this.source.slice(lineStart))) {
      end = lineStart;
    }
    if (end > this.codeTail.end) {
      this.codeTail.node.appendData(this.source.slice(this.codeTail.end, end));
      this.codeTail.end = end;
    }
  }

  /** @param {Fence} fence */
  codeShell(fence) {
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    const info = this.source.slice(fence.start, fence.contentStart).trim().slice(fence.marker.length);
    const language = info.trim().split(/\s+/)[0];
    if (language) code.className = `language-${language}`;
    pre.append(code);
    /** @type {HTMLElement} */ (this.tail).replaceChildren(pre);
    codeBlockChrome(pre, code);
    return code.appendChild(document.createTextNode(""));
  }
}

// The whole text at once, all final: what the incremental rendering must equal.
/** @param {string} text */
export function renderWhole(text) {
  const fragment = render(text, false);
  decorate(fragment, true);
  return fragment;
}

// Blocks that start or end with a heading space themselves as the heading would
// (see chat.css).
/**
 * @param {HTMLElement} block
 * @param {DocumentFragment} fragment
 */
function markHeadings(block, fragment) {
  /** @param {Element | null} element */
  const heading = (element) => Boolean(element && /^H[1-6]$/.test(element.tagName));
  block.classList.toggle("heading-first", heading(fragment.firstElementChild));
  block.classList.toggle("heading-last", heading(fragment.lastElementChild));
}

// A list item frozen on its own joins the list frozen before it.
/**
 * @param {Element | null} previous
 * @param {DocumentFragment} fragment
 */
function mergeList(previous, fragment) {
  const list = fragment.firstElementChild;
  if (!previous || !list || previous.tagName !== list.tagName || !/^[OU]L$/.test(list.tagName)) {
    return;
  }
  previous.append(...list.children);
  list.remove();
}

// The tail's list continues the frozen one: same numbering, no gap between them.
/**
 * @param {Element | null} previous
 * @param {DocumentFragment} fragment
 */
function continueList(previous, fragment) {
  const list = /** @type {HTMLOListElement | null} */ (fragment.firstElementChild);
  if (!previous || !list || previous.tagName !== list.tagName || !/^[OU]L$/.test(list.tagName)) {
    return;
  }
  list.classList.add("md-continued");
  if (list.tagName === "OL") {
    list.start = (/** @type {HTMLOListElement} */ (previous).start || 1) + previous.childElementCount;
  }
}

// ---------------------------------------------------------------- finished answers

// An answer rendered by the server (chat/rendering/markdown.py): code chrome and
// highlighting, wide tables, and $…$ / $$…$$ math typeset where the text has it.
/** @param {HTMLElement} answer */
export function enhanceAnswer(answer) {
  if (!available || answer.dataset.enhanced) return;
  answer.dataset.enhanced = "1";
  decorate(answer, true);
  for (const link of answer.querySelectorAll(/** @type {"a"} */ ("a[href]"))) link.target = "_blank";
  if (katex) typesetSources(answer);
  if (katex && answer.textContent.includes("$")) typesetText(answer);
}

// The server's math spans (chat/rendering/math.py): the TeX with its delimiters.
/** @param {HTMLElement} root */
function typesetSources(root) {
  for (const span of root.querySelectorAll(".math-source")) {
    const text = span.textContent ?? "";
    const found = matchInlineMath(text, 0);
    if (!found || found.end !== text.length) continue;
    span.replaceWith(DOMPurify.sanitize(renderMath(found.content, found.open, {}), PURIFY));
  }
}

/** @param {HTMLElement} root */
function typesetText(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    /** @param {Text} node */
    acceptNode: (node) =>
      /** @type {HTMLElement} */ (node.parentElement).closest("code, pre, .katex") || !node.data.includes("$")
        ? NodeFilter.FILTER_REJECT
        : NodeFilter.FILTER_ACCEPT,
  });
  /** @type {Text[]} */
  const nodes = [];
  while (walker.nextNode()) nodes.push(/** @type {Text} */ (walker.currentNode));
  for (const node of nodes) typesetNode(node);
}

/** @param {Text} node */
function typesetNode(node) {
  const text = node.data;
  let html = "";
  let last = 0;
  for (let i = text.indexOf("$"); i !== -1; i = text.indexOf("$", i)) {
    const found = matchInlineMath(text, i);
    if (!found) {
      i += 1;
      continue;
    }
    html += escapeHtml(text.slice(last, i)) + renderMath(found.content, found.open, {});
    last = i = found.end;
  }
  if (!html) return;
  html += escapeHtml(text.slice(last));
  node.replaceWith(DOMPurify.sanitize(html, PURIFY));
}

// ---------------------------------------------------------------- warming up

// A page's first streamed answer would pay for compiling the renderer's code
// (markdown-it, DOMPurify and this module's) on its first tokens: 10-14 ms on
// the first token in a Chromium trace of the browser bench (bench/browser/),
// its slowest. A short answer is rendered off the page in idle time instead,
// once, through the same paths (a paragraph token by token, a list, a fence).
const WARM_UP =
  "Warm **up** with `code` and a [link](https://example.org/) here.\n\n" + // i18n: not text (never shown)
  "- one\n- two\n\n```python\nprint(1)\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end"; // i18n: not text

if (available) {
  whenIdle(() => {
    const renderer = new IncrementalMarkdown(document.createElement("div"));
    for (const piece of /** @type {string[]} */ (WARM_UP.match(/[\s\S]{1,5}/g))) renderer.append(piece);
    renderer.finish();
  });
}
