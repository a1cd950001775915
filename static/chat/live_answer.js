// The live answers and when they are drawn: each delta goes into the DOM the
// moment it arrives, unless drawing since the last animation frame already took
// IMMEDIATE_BUDGET_MS, in which case it joins the next frame (merging only when
// behind; never a timer or a typing queue). Markdown is rendered incrementally
// (markdown.js).

import { IncrementalMarkdown, available as markdownAvailable } from "./markdown.js";
import { announce, jumpButton, list, owner, sentinel, template } from "./page.js";
import { gettext, interpolate, ngettext, number, seconds } from "./i18n.js";

const THINKING_PREFERENCE = "chatsite.thinking"; // "open" | "closed" | absent
const FIGURES_EVERY_MS = 250;
const CATCH_UP_CHARS = 16000; // most text rendered in one frame (a reload's backlog)
const IMMEDIATE_BUDGET_MS = 4; // drawing between two frames, before merging

// The answers this page is drawing and the scheduling of their frames.
const drawing = {
  /** @type {Map<number, LiveAnswer>} */
  live: new Map(), // message id -> LiveAnswer
  /** @type {WeakSet<HTMLElement>} */
  bornHere: new WeakSet(), // answers whose placeholder this page made (from a live frame), not the server's
  /** @type {ReturnType<typeof setInterval> | null} */
  ticker: null, // updates "thinking for N s" while no text arrives
  following: true, // the view sticks to the newest text
  frameRequested: false,
  spentSinceFrame: 0, // ms spent drawing deltas as they came, since the last frame
};

// ---------------------------------------------------------------- helpers

/** @param {string} text */
function codePoints(text) {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) n--; // a surrogate pair is one code point
  }
  return n;
}


// Cut `text` at most `limit` UTF-16 units in, never inside a surrogate pair.
/**
 * @param {string} text
 * @param {number} limit
 */
function headOf(text, limit) {
  if (text.length <= limit) return text.length;
  const c = text.charCodeAt(limit - 1);
  return c >= 0xd800 && c <= 0xdbff ? limit - 1 : limit;
}

function thinkingPreference() {
  try {
    return localStorage.getItem(THINKING_PREFERENCE);
  } catch {
    return null; // storage disabled
  }
}

/** @param {boolean} open */
export function rememberThinking(open) {
  try {
    localStorage.setItem(THINKING_PREFERENCE, open ? "open" : "closed");
  } catch {
    // storage disabled: the choice holds for this page only
  }
}

// ---------------------------------------------------------------- a streaming answer

// A thinking block's parts (templates/chat/_message.html, _step_thinking.html),
// its text node added: the thoughts are appended to it.
/** @param {HTMLDetailsElement} details */
function thoughtsIn(details) {
  return {
    details,
    label: /** @type {HTMLElement} */ (details.querySelector(".thinking-label")),
    scroll: /** @type {HTMLElement} */ (details.querySelector(".thinking-scroll")),
    node: /** @type {HTMLElement} */ (details.querySelector(".thinking-text")).appendChild(document.createTextNode("")),
  };
}

// The parts of an answer's article (templates/chat/_message.html) are there.
export class LiveAnswer {
  /** @param {HTMLElement} article */
  constructor(article) {
    this.article = article;
    this.id = Number(article.dataset.messageId);
    // A tool turn's steps (tool_steps.js) and the pages its tools cited.
    this.steps = /** @type {HTMLElement} */ (article.querySelector(".steps"));
    this.citations = /** @type {HTMLOListElement} */ (article.querySelector(".citations"));
    // The thoughts go to the newest round's block (a reload mid-turn has several).
    const blocks = article.querySelectorAll(/** @type {"details"} */ ("details.thinking"));
    const thoughts = thoughtsIn(blocks[blocks.length - 1]);
    this.details = thoughts.details;
    this.label = thoughts.label;
    this.thinkingScroll = thoughts.scroll;
    this.thinkingNode = thoughts.node;
    this.answer = /** @type {HTMLElement} */ (article.querySelector(".answer"));
    this.figures = article.querySelector(".live-figures");
    // The figures' one text node, whose data changes with each token: a new
    // node each time (textContent) restyled the page every token and relaid
    // out the answer's whole paragraph with it (a trace of the browser bench's
    // (bench/browser/) Chinese paragraph: 456 style recalculations against 9).
    this.figuresText = this.figures?.appendChild(document.createTextNode(""));
    this.thinkingLength = Number(article.dataset.thinkingLength || 0);
    this.contentLength = Number(article.dataset.contentLength || 0);
    // Seen from its start: its timings are this page's to measure. An answer the
    // page was served mid-way (a reload) began earlier, even with nothing
    // checkpointed yet.
    this.fresh = drawing.bornHere.has(article) && this.thinkingLength === 0 && this.contentLength === 0;
    this.renderer = markdownAvailable ? new IncrementalMarkdown(this.answer) : null;
    this.pendingThinking = "";
    this.pendingContent = this.renderer ? this.answer.textContent : ""; // the checkpoint
    this.textNode = this.renderer ? null : this.answer.appendChild(document.createTextNode(""));
    this.followThinking = true; // keep the newest thoughts in view (until scrolled)
    this.answering = this.contentLength > 0;
    /** @type {number | null} */
    this.sentAt = null; // when this tab sent the question (performance.now())
    /** @type {number | null} */
    this.firstDeltaAt = null;
    /** @type {number | null} */
    this.thinkingStart = null;
    /** @type {number | null} */
    this.thinkingEnd = null;
    this.deltas = 0; // tokens arrived, for the rate
    this.pendingDeltas = 0; // of those, the ones whose text is not drawn yet
    this.shownTokens = 0; // the ones whose text is on the page
    // A reload mid-answer starts from its checkpoint, drawn by the server: its
    // tokens are estimated as the model servers panel does (characters / 4).
    this.checkpointTokens = this.fresh ? 0 : Math.round((this.thinkingLength + this.contentLength) / 4);
    this.rateText = "";
    this.figuresAt = 0;
    if (!this.answering && thinkingPreference() === "closed") this.details.open = false;
  }

  /** @param {HTMLDetailsElement} details */
  useThoughts(details) {
    ({ details: this.details, label: this.label, scroll: this.thinkingScroll, node: this.thinkingNode } = thoughtsIn(details));
  }

  // A tool turn's next round (tool_steps.js): its thoughts go to a block of
  // their own, after the steps so far; it has not answered yet.
  /** @param {HTMLDetailsElement} details */
  thinkAgainIn(details) {
    this.apply(); // what came before the round, in the round before's block
    this.endThinking(performance.now());
    this.useThoughts(details);
    watchThinkingScroll(this);
    this.thinkingStart = this.thinkingEnd = null;
    this.followThinking = true;
    this.answering = false;
    if (thinkingPreference() === "closed") details.open = false;
  }

  // The round's thoughts ended (a tool call began): folded, with how long they took.
  /** @param {number} now */
  endThinking(now) {
    if (this.thinkingStart !== null && this.thinkingEnd === null) this.thinkingEnd = now;
    this.updateThinkingLabel(now);
    if (this.details.open && thinkingPreference() !== "open") this.details.open = false;
  }

  // All the thoughts on the page, every round's, as stored (joined).
  thoughts() {
    let text = "";
    for (const block of this.article.querySelectorAll(".thinking-text")) text += block.textContent;
    return text;
  }

  // `tokens`: how many the delta holds (a frame says so when the server merged
  // several, chat/live/protocol/frames.py).
  /**
   * @param {"thinking" | "content"} kind
   * @param {string} text
   * @param {number} now
   * @param {number} [tokens]
   */
  add(kind, text, now, tokens = 1) {
    this.deltas += tokens;
    this.pendingDeltas += tokens;
    if (this.firstDeltaAt === null) {
      this.firstDeltaAt = now;
      showModelState("ready"); // text is coming: the model is loaded
    }
    if (kind === "thinking") {
      if (this.thinkingStart === null && this.fresh) this.thinkingStart = now;
      this.pendingThinking += text;
      this.thinkingLength += codePoints(text);
    } else {
      if (this.thinkingStart !== null && this.thinkingEnd === null) this.thinkingEnd = now;
      this.pendingContent += text;
      this.contentLength += codePoints(text);
    }
  }

  get pending() {
    return this.pendingThinking.length + this.pendingContent.length > 0;
  }

  // Puts the waiting text in the DOM, and counts its tokens as shown once all
  // of it is there (a long backlog is drawn over several frames); true if
  // anything changed.
  apply() {
    let changed = false;
    if (this.pendingThinking) {
      this.details.hidden = false;
      this.thinkingNode.appendData(this.pendingThinking);
      this.pendingThinking = "";
      changed = true;
    }
    if (this.pendingContent) {
      if (!this.answering) this.startAnswer();
      const end = headOf(this.pendingContent, CATCH_UP_CHARS);
      this.appendContent(this.pendingContent.slice(0, end));
      this.pendingContent = this.pendingContent.slice(end);
      changed = true;
    }
    if (changed && !this.pending) {
      this.shownTokens += this.pendingDeltas;
      this.pendingDeltas = 0;
      this.showFigures();
    }
    return changed;
  }

  /** @param {string} text */
  appendContent(text) {
    if (this.renderer) this.renderer.append(text);
    else /** @type {Text} */ (this.textNode).appendData(text);
  }

  // The first answer text: fold the thoughts away unless the reader wants them.
  startAnswer() {
    this.answering = true;
    if (this.details.open && thinkingPreference() !== "open") this.details.open = false;
  }

  // Live "thinking for N s" and the figures under the answer, a few times a second.
  /** @param {number} now */
  tick(now) {
    if (now - this.figuresAt < FIGURES_EVERY_MS) return;
    this.figuresAt = now;
    this.updateThinkingLabel(now);
    this.updateFigures(now);
  }

  /** @param {number} now */
  updateThinkingLabel(now) {
    if (this.details.hidden) return;
    let text;
    if (this.thinkingStart === null) {
      // Resumed after a reload: when the thinking began is not known here, but
      // the answer's first text says it has ended.
      if (!this.answering) return;
      text = gettext("Thoughts");
    } else {
      text =
        this.thinkingEnd === null
          ? interpolate(gettext("Thinking… %(seconds)s s"), { seconds: number(Math.floor((now - this.thinkingStart) / 1000)) })
          : interpolate(gettext("Thought for %(duration)s"), { duration: seconds(this.thinkingEnd - this.thinkingStart) });
    }
    if (this.label.textContent !== text) this.label.textContent = text;
  }

  // The rate a few times a second (it needs a span of time to mean anything).
  /** @param {number} now */
  updateFigures(now) {
    if (!this.figures || this.firstDeltaAt === null) return;
    const elapsed = now - this.firstDeltaAt;
    if (this.deltas > 2 && elapsed > 300) {
      this.rateText = interpolate(gettext("≈ %(rate)s tok/s"), { rate: number(((this.deltas - 1) * 1000) / elapsed) });
    }
    this.showFigures();
  }

  // The count with the text it counts, in the same frame: it says what is on
  // the page, never what is still on its way or what was there a moment ago.
  showFigures() {
    if (!this.figures || this.firstDeltaAt === null) return;
    const parts = this.rateText ? [this.rateText] : [];
    if (this.sentAt !== null) parts.push(interpolate(gettext("first token %(wait)s"), { wait: seconds(this.firstDeltaAt - this.sentAt) }));
    const tokens = this.shownTokens + this.checkpointTokens;
    const count = { count: number(tokens) };
    parts.push(
      this.checkpointTokens
        ? interpolate(ngettext("≈ %(count)s token so far", "≈ %(count)s tokens so far", tokens), count)
        : interpolate(ngettext("%(count)s token so far", "%(count)s tokens so far", tokens), count),
    );
    this.setFigures(parts.join(" · "));
  }

  // True if the text changed.
  /** @param {string} text */
  setFigures(text) {
    if (!this.figuresText || this.figuresText.data === text) return false;
    this.figuresText.data = text;
    return true;
  }

  source() {
    return this.renderer ? this.renderer.source + this.pendingContent : null;
  }

  // The start of the answer's text, without reading layout.
  /** @param {number} limit */
  summary(limit) {
    let text = "";
    for (const block of this.answer.children) {
      text += `${(block.textContent ?? "").trim()}\n`;
      if (text.length > limit) return `${text.slice(0, limit).trim()}…`;
    }
    return text.trim() || this.answer.textContent.slice(0, limit);
  }

  // The server's stored message: its figures, status and thinking time replace
  // ours; the answer keeps the page's rendering (no re-render, no jump), unless
  // the text differs from what the server stored (then the server's wins).
  /**
   * @param {ServerMessage} message
   * @param {Element} fresh  the server's article for it
   */
  finish(message, fresh) {
    this.catchUp(message);
    while (this.pending) this.apply();
    this.renderer?.finish();
    if (this.renderer && this.renderer.source !== message.content) {
      console.warn(`answer ${this.id}: the page's text differs from the stored answer`);
      this.article.dataset.resynced = "1";
      this.rerender(message.content);
    }
    const thoughts = /** @type {HTMLElement} */ (this.thinkingNode.parentNode);
    // A tool turn's rounds each have their block, drawn as stored (tool_steps.js).
    if (!this.steps.childElementCount && thoughts.textContent !== message.thinking) {
      console.warn(`answer ${this.id}: the page's thoughts differ from the stored ones`);
      this.article.dataset.resynced = "1";
      thoughts.replaceChildren(message.thinking);
      this.details.hidden = !message.thinking;
    }
    this.answer.classList.remove("streaming");
    this.answer.dataset.enhanced = "1";
    const freshLabel = fresh.querySelector(".thinking-label");
    if (freshLabel) this.label.textContent = freshLabel.textContent;
    /** @type {Element} */ (this.article.querySelector(".message-footer")).replaceWith(/** @type {Element} */ (fresh.querySelector(".message-footer")));
    this.article.dataset.status = message.status;
    this.article.dataset.contentLength = String(this.contentLength);
    this.article.dataset.thinkingLength = String(this.thinkingLength);
    this.article.removeAttribute("aria-busy");
  }

  // A socket that dropped near the end misses the last deltas (the stored message
  // comes instead of a resume): take them from the stored text.
  /** @param {ServerMessage} message */
  catchUp(message) {
    const thinking = this.thoughts() + this.pendingThinking;
    if (message.thinking.length > thinking.length && message.thinking.startsWith(thinking)) {
      this.pendingThinking += message.thinking.slice(thinking.length);
    }
    const content = this.source();
    if (content !== null && message.content.length > content.length && message.content.startsWith(content)) {
      this.pendingContent += message.content.slice(content.length);
    }
  }

  /** @param {string} content */
  rerender(content) {
    this.renderer = new IncrementalMarkdown(this.answer);
    this.renderer.append(content);
    this.renderer.finish();
  }

  // The server refused to resume from what this page holds (`bad_offset`: more
  // than the answer has, so its next text would land in the wrong place): the
  // page drops its text, to be sent again from the start (socket.js).
  restart() {
    const first = /** @type {HTMLDetailsElement} */ (this.article.querySelector("details.thinking"));
    if (first !== this.details) this.useThoughts(first); // the steps went (tool_steps.js `clearSteps`)
    this.thinkingNode.data = "";
    /** @type {HTMLElement} */ (this.thinkingNode.parentNode).replaceChildren(this.thinkingNode);
    this.details.hidden = true;
    this.answer.replaceChildren();
    this.renderer = markdownAvailable ? new IncrementalMarkdown(this.answer) : null;
    this.textNode = this.renderer ? null : this.answer.appendChild(document.createTextNode(""));
    this.pendingThinking = this.pendingContent = "";
    this.thinkingLength = this.contentLength = 0;
    this.answering = false;
    this.fresh = false; // begun earlier: its timings are not this page's
    this.deltas = this.pendingDeltas = this.shownTokens = this.checkpointTokens = 0;
    this.firstDeltaAt = null;
    this.setFigures("");
  }
}

/** @param {number} messageId */
function articleFor(messageId) {
  let article = document.getElementById(`message-${messageId}`);
  if (!article) {
    article = /** @type {HTMLElement} */ (/** @type {Element} */ (template.content.firstElementChild).cloneNode(true));
    drawing.bornHere.add(article);
    article.id = `message-${messageId}`;
    article.dataset.messageId = String(messageId);
    article.dataset.contentLength = "0";
    article.dataset.thinkingLength = "0";
    insertMessage(article);
  }
  return article;
}

/** @param {Element} article */
export function insertMessage(article) {
  document.getElementById("empty-hint")?.remove();
  sentinel.before(article);
}

/** @param {number} messageId */
export function liveAnswer(messageId) {
  return drawing.live.get(messageId);
}

/** @param {number} messageId */
export function liveFor(messageId) {
  let state = drawing.live.get(messageId);
  if (!state) {
    state = new LiveAnswer(articleFor(messageId));
    drawing.live.set(messageId, state);
    follower.observe(state.article);
    watchThinkingScroll(state);
    drawing.ticker ??= setInterval(tickAll, 500);
  }
  return state;
}

/** @param {number} messageId */
export function forget(messageId) {
  const state = drawing.live.get(messageId);
  drawing.live.delete(messageId);
  // Followed until its final text and footer are laid out, then not: a reader
  // opening its thoughts later is not taken to its end. (Every live answer
  // leaves through here, finished or removed: `follower` keeps no other.)
  if (state) requestAnimationFrame(() => requestAnimationFrame(() => follower.unobserve(state.article)));
  if (!drawing.live.size) {
    clearInterval(drawing.ticker ?? undefined);
    drawing.ticker = null;
  }
}

function tickAll() {
  const now = performance.now();
  for (const state of drawing.live.values()) state.tick(now);
}

/** @param {LiveAnswer} state */
function watchThinkingScroll(state) {
  const stop = () => {
    state.followThinking = false;
  };
  state.thinkingScroll.addEventListener("wheel", stop, { passive: true });
  state.thinkingScroll.addEventListener("touchmove", stop, { passive: true });
}

// Waiting for a model slot: the placeholder's footer says where the answer is in
// line, until the first token's figures take its place.
/**
 * @param {LiveAnswer} state
 * @param {number} position
 */
export function showQueued(state, position) {
  if (!state.figures || state.firstDeltaAt !== null) return;
  const text = interpolate(gettext("Queued — position %(position)s"), { position: number(position) });
  if (state.setFigures(text)) announce(text);
}

// "Loading model…" in the header (a role="status" region, so it is read out too),
// and in an answer still waiting for its first token.
/** @param {string} state */
export function showModelState(state) {
  if (!owner) return;
  const { modelState } = owner;
  const loading = state === "loading";
  if (!loading && modelState.hidden) return; // the usual case: an answer's first text
  modelState.hidden = !loading;
  for (const answer of drawing.live.values()) {
    if (answer.firstDeltaAt === null) answer.setFigures(loading ? gettext("Loading model…") : "");
  }
}

// ---------------------------------------------------------------- frames to the DOM

// A delta is drawn at once while drawing since the last frame took less than
// IMMEDIATE_BUDGET_MS (always, at reading speeds: no waiting at all); beyond
// that it waits for the next frame, which draws everything that came meanwhile
// (merging only when behind, as the server does).
/** @param {LiveAnswer} state */
export function deltaArrived(state) {
  if (drawing.spentSinceFrame < IMMEDIATE_BUDGET_MS) {
    const start = performance.now();
    state.apply();
    state.tick(start);
    drawing.spentSinceFrame += performance.now() - start;
  }
  requestFrame();
}

export function requestFrame() {
  if (!drawing.frameRequested) {
    drawing.frameRequested = true;
    requestAnimationFrame(drawFrame);
  }
}

function drawFrame() {
  drawing.frameRequested = false;
  drawing.spentSinceFrame = 0;
  const now = performance.now();
  let more = false;
  for (const state of drawing.live.values()) {
    state.apply();
    state.tick(now);
    more ||= state.pending;
  }
  followThoughts();
  if (more) requestFrame(); // a long backlog is drawn over several frames
}

// The live thoughts' box is scrolled to its end without reading its height.
function followThoughts() {
  for (const state of drawing.live.values()) {
    if (state.followThinking && !state.answering && !state.details.hidden && state.details.open) {
      state.thinkingScroll.scrollTop = 1e7; // clamped to the end
    }
  }
}

// ---------------------------------------------------------------- scrolling

// While following, the view goes to the end each time an answer being drawn (or
// just finished: `forget`) changes size: the frame's one layout read, made after
// its layout, once content-visibility has settled which blocks are laid out
// (chat.css). Read in the animation frame, before that, a list block that grew
// and stopped being the newest counted at its old height: the scroll stopped
// short of the end, the sentinel left the view and following stopped by itself.
const follower = new ResizeObserver(() => {
  if (drawing.following) list.scrollTop = list.scrollHeight;
});

export function isFollowing() {
  return drawing.following;
}

// The page's own question or turn: the view goes back to the newest text.
export function followNewest() {
  drawing.following = true;
}

// A message asked for by a search hit: in view and marked, the newest not followed
// (again after the next frame, once answers rendered as markdown have their height).
/** @param {HTMLElement} article */
export function showMessage(article) {
  drawing.following = false;
  article.classList.add("search-target");
  article.scrollIntoView({ block: "center" });
  requestAnimationFrame(() => article.scrollIntoView({ block: "center" }));
}

// Whether the bottom is in view comes from an IntersectionObserver (no layout
// reads of ours); scrolling up by wheel, touch or keys stops following at once.
export function watchScrolling() {
  new IntersectionObserver(
    ([entry]) => {
      drawing.following = entry.isIntersecting;
      jumpButton.hidden = drawing.following;
    },
    { root: list, rootMargin: "0px 0px 64px 0px" },
  ).observe(sentinel);
  const stopFollowing = () => {
    drawing.following = false;
  };
  list.addEventListener("wheel", (event) => event.deltaY < 0 && stopFollowing(), { passive: true });
  list.addEventListener("touchmove", stopFollowing, { passive: true });
  list.addEventListener("keydown", (event) => {
    if (["ArrowUp", "PageUp", "Home"].includes(event.key)) stopFollowing();
  });
  jumpButton.addEventListener("click", () => {
    drawing.following = true;
    jumpButton.hidden = true;
    list.scrollTop = list.scrollHeight; // again as a live answer's blocks never shown get their height (`follower`)
    owner?.input.focus({ preventScroll: true });
  });
}
