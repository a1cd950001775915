// The conversation page's stream: one WebSocket; each delta goes into the DOM the
// moment it arrives, unless drawing since the last animation frame already took
// IMMEDIATE_BUDGET_MS, in which case it joins the next frame (merging only when
// behind; never a timer or a typing queue). Markdown is rendered incrementally
// (markdown.js). Protocol: README.md and chat/live/frames.py.

import { IncrementalMarkdown, available as markdownAvailable, copyToClipboard, enhanceAnswer } from "./markdown.js";

const chat = document.getElementById("chat");
const list = document.getElementById("messages");
const sentinel = document.getElementById("scroll-sentinel");
const jumpButton = document.getElementById("jump-latest");
const connection = document.getElementById("connection");
const alertBox = document.getElementById("alert");
const announcer = document.getElementById("announcer");
const template = document.getElementById("answer-template");

// The one place that decides what this page can do. Shared and team pages
// (templates/chat/read_only.html) are read-only: no composer, model state, edit
// or regenerate, and a live shared link's socket only listens (it answers any
// owner frame with an error). Everything the owner's page alone has lives in
// `owner`, null on a read-only page, so no code path there can reach it.
const owner =
  chat.dataset.readOnly === "1"
    ? null
    : {
        composer: document.getElementById("composer"),
        input: document.getElementById("composer-input"),
        sendButton: document.getElementById("send-button"),
        stopButton: document.getElementById("stop-button"),
        modelState: document.getElementById("model-state"),
      };

const CLOSE_CODES_FINAL = new Set([4401, 4403, 4404, 4410]);
const THINKING_PREFERENCE = "chatsite.thinking"; // "open" | "closed" | absent
const FIGURES_EVERY_MS = 250;
const CATCH_UP_CHARS = 16000; // most text rendered in one frame (a reload's backlog)
const IMMEDIATE_BUDGET_MS = 4; // drawing between two frames, before merging

let socket = null;
let retry = 0;
let retryTimer = null;
let lastSent = null; // {clientId, content, at, stored, givenBack}: see giveBackUnsent
let streamingId = null;
let busy = false;
let ticker = null; // updates "thinking for N s" while no text arrives
let following = true; // the view sticks to the newest text

const live = new Map(); // message id -> LiveAnswer
let frameRequested = false;
let spentSinceFrame = 0; // ms spent drawing deltas as they came, since the last frame

// ---------------------------------------------------------------- helpers

function codePoints(text) {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) n--; // a surrogate pair is one code point
  }
  return n;
}

// crypto.randomUUID needs a secure context; teams often serve plain http on a LAN.
function newClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function seconds(ms) {
  const s = ms / 1000;
  return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

// Cut `text` at most `limit` UTF-16 units in, never inside a surrogate pair.
function headOf(text, limit) {
  if (text.length <= limit) return text.length;
  const c = text.charCodeAt(limit - 1);
  return c >= 0xd800 && c <= 0xdbff ? limit - 1 : limit;
}

function showAlert(text) {
  alertBox.textContent = text;
  alertBox.hidden = !text;
}

function announce(text) {
  announcer.textContent = "";
  announcer.textContent = text;
}

function thinkingPreference() {
  try {
    return localStorage.getItem(THINKING_PREFERENCE);
  } catch {
    return null; // storage disabled
  }
}

function rememberThinking(open) {
  try {
    localStorage.setItem(THINKING_PREFERENCE, open ? "open" : "closed");
  } catch {
    // storage disabled: the choice holds for this page only
  }
}

// ---------------------------------------------------------------- a streaming answer

class LiveAnswer {
  constructor(article) {
    this.article = article;
    this.id = Number(article.dataset.messageId);
    this.details = article.querySelector("details.thinking");
    this.label = article.querySelector(".thinking-label");
    this.thinkingScroll = article.querySelector(".thinking-scroll");
    this.thinkingNode = article.querySelector(".thinking-text").appendChild(document.createTextNode(""));
    this.answer = article.querySelector(".answer");
    this.figures = article.querySelector(".live-figures");
    this.thinkingLength = Number(article.dataset.thinkingLength || 0);
    this.contentLength = Number(article.dataset.contentLength || 0);
    // Seen from its start: its timings are this page's to measure. An answer the
    // page was served mid-way (a reload) began earlier, even with nothing
    // checkpointed yet.
    this.fresh = bornHere.has(article) && this.thinkingLength === 0 && this.contentLength === 0;
    this.renderer = markdownAvailable ? new IncrementalMarkdown(this.answer) : null;
    this.pendingThinking = "";
    this.pendingContent = this.renderer ? this.answer.textContent : ""; // the checkpoint
    this.textNode = this.renderer ? null : this.answer.appendChild(document.createTextNode(""));
    this.followThinking = true; // keep the newest thoughts in view (until scrolled)
    this.answering = this.contentLength > 0;
    this.sentAt = null; // when this tab sent the question (performance.now())
    this.firstDeltaAt = null;
    this.thinkingStart = null;
    this.thinkingEnd = null;
    this.deltas = 0;
    this.figuresAt = 0;
    if (!this.answering && thinkingPreference() === "closed") this.details.open = false;
  }

  add(kind, text, now) {
    this.deltas++;
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

  // Puts the waiting text in the DOM; true if anything changed.
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
    return changed;
  }

  appendContent(text) {
    if (this.renderer) this.renderer.append(text);
    else this.textNode.appendData(text);
  }

  // The first answer text: fold the thoughts away unless the reader wants them.
  startAnswer() {
    this.answering = true;
    if (this.details.open && thinkingPreference() !== "open") this.details.open = false;
  }

  // Live "thinking for N s" and the figures under the answer, a few times a second.
  tick(now) {
    if (now - this.figuresAt < FIGURES_EVERY_MS) return;
    this.figuresAt = now;
    this.updateThinkingLabel(now);
    this.updateFigures(now);
  }

  updateThinkingLabel(now) {
    if (this.details.hidden) return;
    let text;
    if (this.thinkingStart === null) {
      // Resumed after a reload: when the thinking began is not known here, but
      // the answer's first text says it has ended.
      if (!this.answering) return;
      text = "Thoughts";
    } else {
      text =
        this.thinkingEnd === null
          ? `Thinking… ${Math.floor((now - this.thinkingStart) / 1000)} s`
          : `Thought for ${seconds(this.thinkingEnd - this.thinkingStart)}`;
    }
    if (this.label.textContent !== text) this.label.textContent = text;
  }

  updateFigures(now) {
    if (!this.figures || this.firstDeltaAt === null) return;
    const parts = [];
    const elapsed = now - this.firstDeltaAt;
    if (this.deltas > 2 && elapsed > 300) {
      parts.push(`≈ ${Math.round(((this.deltas - 1) * 1000) / elapsed)} tok/s`);
    }
    if (this.sentAt !== null) parts.push(`first token ${seconds(this.firstDeltaAt - this.sentAt)}`);
    parts.push(`${plural(this.deltas, "token")} so far`);
    const text = parts.join(" · ");
    if (this.figures.textContent !== text) this.figures.textContent = text;
  }

  source() {
    return this.renderer ? this.renderer.source + this.pendingContent : null;
  }

  // The start of the answer's text, without reading layout.
  summary(limit) {
    let text = "";
    for (const block of this.answer.children) {
      text += `${block.textContent.trim()}\n`;
      if (text.length > limit) return `${text.slice(0, limit).trim()}…`;
    }
    return text.trim() || this.answer.textContent.slice(0, limit);
  }

  // The server's stored message: its figures, status and thinking time replace
  // ours; the answer keeps the page's rendering (no re-render, no jump), unless
  // the text differs from what the server stored (then the server's wins).
  finish(message, fresh) {
    this.catchUp(message);
    while (this.pending) this.apply();
    this.renderer?.finish();
    if (this.renderer && this.renderer.source !== message.content) {
      console.warn(`answer ${this.id}: the page's text differs from the stored answer`);
      this.article.dataset.resynced = "1";
      this.rerender(message.content);
    }
    if (this.thinkingNode.parentNode.textContent !== message.thinking) {
      console.warn(`answer ${this.id}: the page's thoughts differ from the stored ones`);
      this.article.dataset.resynced = "1";
      this.thinkingNode.parentNode.replaceChildren(message.thinking);
      this.details.hidden = !message.thinking;
    }
    this.answer.classList.remove("streaming");
    this.answer.dataset.enhanced = "1";
    const freshLabel = fresh.querySelector(".thinking-label");
    if (freshLabel) this.label.textContent = freshLabel.textContent;
    this.article.querySelector(".message-footer").replaceWith(fresh.querySelector(".message-footer"));
    this.article.dataset.status = message.status;
    this.article.dataset.contentLength = String(this.contentLength);
    this.article.dataset.thinkingLength = String(this.thinkingLength);
    this.article.removeAttribute("aria-busy");
  }

  // A socket that dropped near the end misses the last deltas (the stored message
  // comes instead of a resume): take them from the stored text.
  catchUp(message) {
    const thinking = this.thinkingNode.parentNode.textContent + this.pendingThinking;
    if (message.thinking.length > thinking.length && message.thinking.startsWith(thinking)) {
      this.pendingThinking += message.thinking.slice(thinking.length);
    }
    const content = this.source();
    if (content !== null && message.content.length > content.length && message.content.startsWith(content)) {
      this.pendingContent += message.content.slice(content.length);
    }
  }

  rerender(content) {
    this.renderer = new IncrementalMarkdown(this.answer);
    this.renderer.append(content);
    this.renderer.finish();
  }
}

// Answers whose placeholder this page made (from a live frame), not the server's.
const bornHere = new WeakSet();

function articleFor(messageId) {
  let article = document.getElementById(`message-${messageId}`);
  if (!article) {
    article = template.content.firstElementChild.cloneNode(true);
    bornHere.add(article);
    article.id = `message-${messageId}`;
    article.dataset.messageId = messageId;
    article.dataset.contentLength = "0";
    article.dataset.thinkingLength = "0";
    insertMessage(article);
  }
  return article;
}

function insertMessage(article) {
  document.getElementById("empty-hint")?.remove();
  sentinel.before(article);
}

function liveFor(messageId) {
  let state = live.get(messageId);
  if (!state) {
    state = new LiveAnswer(articleFor(messageId));
    live.set(messageId, state);
    watchThinkingScroll(state);
    ticker ??= setInterval(tickAll, 500);
  }
  return state;
}

function forget(messageId) {
  live.delete(messageId);
  if (!live.size) {
    clearInterval(ticker);
    ticker = null;
  }
}

function tickAll() {
  const now = performance.now();
  for (const state of live.values()) state.tick(now);
}

function watchThinkingScroll(state) {
  const stop = () => {
    state.followThinking = false;
  };
  state.thinkingScroll.addEventListener("wheel", stop, { passive: true });
  state.thinkingScroll.addEventListener("touchmove", stop, { passive: true });
}

// ---------------------------------------------------------------- frames to the DOM

// A delta is drawn at once while drawing since the last frame took less than
// IMMEDIATE_BUDGET_MS (always, at reading speeds: no waiting at all); beyond
// that it waits for the next frame, which draws everything that came meanwhile
// (merging only when behind, as the server does).
function deltaArrived(state) {
  if (spentSinceFrame < IMMEDIATE_BUDGET_MS) {
    const start = performance.now();
    state.apply();
    state.tick(start);
    spentSinceFrame += performance.now() - start;
  }
  requestFrame();
}

function requestFrame() {
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(drawFrame);
  }
}

function drawFrame() {
  frameRequested = false;
  spentSinceFrame = 0;
  const now = performance.now();
  let more = false;
  for (const state of live.values()) {
    state.apply();
    state.tick(now);
    more ||= state.pending;
  }
  followTail();
  if (more) requestFrame(); // a long backlog is drawn over several frames
}

// The only layout read of a frame, and only while following the newest text
// (the live thoughts' box is scrolled to its end without reading its height).
function followTail() {
  if (following) list.scrollTop = list.scrollHeight;
  for (const state of live.values()) {
    if (state.followThinking && !state.answering && !state.details.hidden && state.details.open) {
      state.thinkingScroll.scrollTop = 1e7; // clamped to the end
    }
  }
}

// ---------------------------------------------------------------- scrolling

// Whether the bottom is in view comes from an IntersectionObserver (no layout
// reads of ours); scrolling up by wheel, touch or keys stops following at once.
function watchScrolling() {
  new IntersectionObserver(
    ([entry]) => {
      following = entry.isIntersecting;
      jumpButton.hidden = following;
    },
    { root: list, rootMargin: "0px 0px 64px 0px" },
  ).observe(sentinel);
  const stopFollowing = () => {
    following = false;
  };
  list.addEventListener("wheel", (event) => event.deltaY < 0 && stopFollowing(), { passive: true });
  list.addEventListener("touchmove", stopFollowing, { passive: true });
  list.addEventListener("keydown", (event) => {
    if (["ArrowUp", "PageUp", "Home"].includes(event.key)) stopFollowing();
  });
  jumpButton.addEventListener("click", () => {
    following = true;
    jumpButton.hidden = true;
    list.scrollTop = list.scrollHeight;
    requestFrame(); // again once blocks never shown have their real height
    owner?.input.focus({ preventScroll: true });
  });
}

// ---------------------------------------------------------------- server frames

function replaceMessage(message) {
  const state = live.get(message.id);
  const holder = document.createElement("template"); // inert: nothing loads yet
  holder.innerHTML = message.html; // rendered and sanitized by the server
  const fresh = holder.content.firstElementChild;
  if (message.id === streamingId && message.status !== "streaming") {
    streamingId = null; // its "done" may have been lost with a dropped socket
    setBusy(false);
  }
  if (state) {
    forget(message.id);
    state.finish(message, fresh);
    if (message.role === "assistant") announceAnswer(message, state);
    requestFrame(); // the final footer is taller: keep following the end
    return;
  }
  const current = document.getElementById(message.dom_id);
  if (current) current.replaceWith(fresh);
  else insertMessage(fresh);
  const answer = fresh.querySelector(".answer:not(.streaming)");
  if (answer) enhanceAnswer(answer);
  if (following) list.scrollTop = list.scrollHeight;
}

// One polite announcement per finished answer, never one per token.
function announceAnswer(message, state) {
  const prefix = { done: "Answer", stopped: "Answer stopped", error: "Answer failed" }[message.status] ?? "Answer";
  announce(`${prefix}: ${message.error_detail || state.summary(600)}`);
}

// Waiting for a model slot: the placeholder's footer says where the answer is in
// line, until the first token's figures take its place.
function showQueued(state, position) {
  if (!state.figures || state.firstDeltaAt !== null) return;
  const text = `Queued — position ${position}`;
  if (state.figures.textContent === text) return;
  state.figures.textContent = text;
  announce(text);
}

function setBusy(value) {
  busy = value;
  if (!owner) return;
  owner.stopButton.hidden = !busy;
  owner.sendButton.hidden = busy;
  chat.dataset.busy = busy ? "1" : "";
}

const handlers = {
  conversation(frame) {
    document.getElementById("conversation-title").textContent = frame.title;
    const item = document.getElementById(`conversation-item-${frame.id}`);
    if (item) {
      item.dataset.title = frame.title.toLowerCase();
      item.querySelector("a").textContent = frame.title;
    }
    document.title = `${frame.title} · chatsite`;
  },
  message(frame) {
    if (lastSent && frame.message.client_id === lastSent.clientId) confirmSent();
    replaceMessage(frame.message);
  },
  start(frame) {
    streamingId = frame.message_id;
    setBusy(true);
    const state = liveFor(frame.message_id);
    if (lastSent?.stored && state.fresh && state.sentAt === null) {
      state.sentAt = lastSent.at;
      lastSent = null;
    }
    if (following) requestFrame();
  },
  queued(frame) {
    showQueued(liveFor(frame.message_id), frame.position);
  },
  thinking(frame) {
    const state = liveFor(frame.message_id);
    state.add("thinking", frame.delta, performance.now());
    deltaArrived(state);
  },
  content(frame) {
    const state = liveFor(frame.message_id);
    state.add("content", frame.delta, performance.now());
    deltaArrived(state);
  },
  removed(frame) {
    removeMessages(frame.message_ids);
  },
  done(frame) {
    if (frame.message_id === streamingId) {
      streamingId = null;
      setBusy(false);
    }
  },
  model(frame) {
    showModelState(frame.state);
    if (frame.state === "error") showAlert(frame.detail);
  },
  error(frame) {
    // An answer's failure is shown in its footer (the stored message follows);
    // the banner is for what no message shows: a refused frame.
    if (frame.message_id !== null) return;
    showAlert(frame.detail);
    // Refused before anything was stored: the text goes back, for good.
    giveBackUnsent();
    lastSent = null;
    setBusy(streamingId !== null);
  },
};

// ---------------------------------------------------------------- the socket

function setConnection(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
  if (state === "live") chat.dataset.connected = "1";
  else delete chat.dataset.connected;
}

function resumeStreaming() {
  for (const article of list.querySelectorAll('article[data-status="streaming"]')) {
    const state = liveFor(Number(article.dataset.messageId));
    socket.send(
      JSON.stringify({
        type: "resume",
        message_id: state.id,
        offset: state.contentLength,
        thinking_offset: state.thinkingLength,
      }),
    );
  }
}

// A shared page's socket first sends what came after the page's messages
// (`?seen=N`, N the last one's ordinal): counted at each connect, as after a
// reconnect the page also has what came live, which would be sent again.
function socketPath() {
  const url = new URL(chat.dataset.wsPath, location.href);
  if (!url.searchParams.has("seen")) return chat.dataset.wsPath;
  const shown = [...list.querySelectorAll("article[data-message-id]")].map((a) => Number(a.dataset.messageId) || 0);
  url.searchParams.set("seen", String(Math.max(0, ...shown)));
  return url.pathname + url.search;
}

function connect() {
  clearTimeout(retryTimer);
  retryTimer = null;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}${socketPath()}`);
  socket.addEventListener("open", () => {
    retry = 0;
    setConnection("live", "Connected");
    resumeStreaming();
    preloadModel("opened");
  });
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    handlers[frame.type]?.(frame);
  });
  socket.addEventListener("close", (event) => {
    socket = null;
    if (giveBackUnsent()) showAlert("Disconnected before your message was confirmed: it is back in the box.");
    if (CLOSE_CODES_FINAL.has(event.code)) {
      const why = { 4401: "Signed out", 4404: "No such link", 4410: "Link closed" };
      setConnection("closed", why[event.code] ?? "Not allowed");
      return;
    }
    scheduleReconnect();
  });
}

// Exponential backoff with jitter, capped at 8 s; at once when the network returns.
function scheduleReconnect() {
  const delay = Math.min(8000, 250 * 2 ** retry++) * (0.8 + Math.random() * 0.4);
  const wait = Math.round(delay / 1000);
  setConnection("reconnecting", wait > 1 ? `Reconnecting in ${wait} s…` : "Reconnecting…");
  retryTimer = setTimeout(connect, delay);
}

function reconnectNow() {
  if (retryTimer !== null) connect();
}

// ---------------------------------------------------------------- the model loading

// Opening the conversation and starting to type each ask the server, once per
// page view, to load the model now, so the answer does not wait for the load.
const preloadAsked = new Set();

function preloadModel(reason) {
  if (!owner || preloadAsked.has(reason) || socket?.readyState !== WebSocket.OPEN) return;
  preloadAsked.add(reason);
  socket.send(JSON.stringify({ type: "preload" }));
}

// "Loading model…" in the header (a role="status" region, so it is read out too),
// and in an answer still waiting for its first token.
function showModelState(state) {
  if (!owner) return;
  const { modelState } = owner;
  const loading = state === "loading";
  if (!loading && modelState.hidden) return; // the usual case: an answer's first text
  modelState.hidden = !loading;
  for (const answer of live.values()) {
    if (answer.firstDeltaAt === null && answer.figures) answer.figures.textContent = loading ? "Loading model…" : "";
  }
}

// ---------------------------------------------------------------- composer

// A sent question is the user's until the server echoes it (a `message` frame
// with its client_id): any failure before that (an `error` frame, the socket
// closing, a reconnect that never brings the echo) puts the text back in the
// composer once, unless something new was typed there. True if it did.
function giveBackUnsent() {
  if (!owner || !lastSent || lastSent.stored || lastSent.givenBack) return false;
  const { input } = owner;
  lastSent.givenBack = true;
  if (!input.value) {
    input.value = lastSent.content;
    input.dispatchEvent(new Event("input")); // the field grows back
  }
  setBusy(streamingId !== null);
  return true;
}

// The echo came after all (a late one, from another socket): the question is in
// the conversation, so the text given back goes, if it is still there untouched.
function confirmSent() {
  lastSent.stored = true;
  if (lastSent.givenBack && owner.input.value === lastSent.content) {
    owner.input.value = "";
    owner.input.dispatchEvent(new Event("input"));
  }
}

function send() {
  const { input } = owner;
  const content = input.value;
  if (!content.trim() || busy) return;
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    showAlert("Not connected: your message is kept, send it again once reconnected.");
    return;
  }
  showAlert("");
  const clientId = newClientId();
  lastSent = { clientId, content, at: performance.now(), stored: false, givenBack: false };
  socket.send(JSON.stringify({ type: "send", content, client_id: clientId }));
  input.value = "";
  input.dispatchEvent(new Event("input")); // the field shrinks back
  following = true;
  setBusy(true);
}

function stop() {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: "stop" }));
}

// Where CSS cannot size the field to its text (field-sizing), do it on input.
function growWithText() {
  const { input } = owner;
  if (CSS.supports("field-sizing", "content")) return;
  const grow = () => {
    input.style.height = "auto";
    input.style.height = `${input.scrollHeight}px`;
  };
  input.addEventListener("input", grow);
}

function wireComposer() {
  const { composer, input, stopButton } = owner;
  growWithText();
  input.addEventListener("input", () => preloadModel("typed"), { passive: true });
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    }
  });
  stopButton.addEventListener("click", () => {
    stop();
    input.focus();
  });
}

// The model's name is in the header, the composer's placeholder and the empty
// conversation's hint. A saved settings change swaps the header's label in
// (templates/chat/_model_label.html, out of band); the other two follow it.
function followModelName() {
  document.body.addEventListener("htmx:afterSettle", () => {
    const name = document.getElementById("model-label")?.dataset.modelName;
    if (!name) return;
    owner.input.placeholder = `Message ${name}`;
    for (const ref of document.querySelectorAll(".model-name-ref")) ref.textContent = name;
  });
}

// ---------------------------------------------------------------- regenerate, edit

// Messages a regenerate or an edit replaced (in this tab or another): gone from
// the page at once; the new turn's frames follow.
function removeMessages(ids) {
  for (const id of ids) {
    if (live.has(id)) forget(id);
    if (id === streamingId) streamingId = null;
    const article = document.getElementById(`message-${id}`);
    if (article?.contains(document.activeElement)) owner?.input.focus({ preventScroll: true });
    article?.remove();
  }
}

// A turn that replaces the last one: the server refuses it with an error frame
// (nothing changed) when it cannot be done.
function sendReplacing(frame) {
  if (busy) {
    showAlert("Wait for the current answer, or stop it.");
    return false;
  }
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    showAlert("Not connected: try again once reconnected.");
    return false;
  }
  showAlert("");
  socket.send(JSON.stringify(frame));
  following = true;
  setBusy(true);
  return true;
}

function regenerate() {
  if (sendReplacing({ type: "regenerate" })) owner.input.focus({ preventScroll: true });
}

// The question's text as typed (the server's partial breaks lines with <br>).
function typedText(element) {
  return Array.from(element.childNodes, (node) => (node.nodeName === "BR" ? "\n" : node.textContent)).join("");
}

// The last question becomes a field: Enter resends it, Esc gives it back.
function startEditing(article) {
  if (article.classList.contains("editing")) return;
  const form = document.getElementById("edit-template").content.firstElementChild.cloneNode(true);
  const field = form.querySelector("textarea");
  field.value = typedText(article.querySelector(".user-text"));
  article.classList.add("editing");
  article.append(form);
  const cancel = () => stopEditing(article);
  form.querySelector(".edit-cancel").addEventListener("click", cancel);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    resendEdited(article, field.value);
  });
  field.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      cancel();
    } else if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      resendEdited(article, field.value);
    }
  });
  field.focus();
  field.setSelectionRange(field.value.length, field.value.length);
}

function stopEditing(article) {
  article.querySelector(".edit-form")?.remove();
  article.classList.remove("editing");
  article.querySelector(".edit-message")?.focus();
}

// The field stays until the server replaces the question (a refusal keeps it).
function resendEdited(article, content) {
  if (!content.trim()) {
    showAlert("Type a message before resending.");
    return;
  }
  sendReplacing({ type: "edit", message_id: Number(article.dataset.messageId), content });
}

// ---------------------------------------------------------------- versions of the last answer

function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
  } catch {
    return "";
  }
}

// "‹ 2 / 3 ›": the server shows the chosen version and answers with the frames it
// sends the conversation's other tabs too (`removed`, then the version's question
// and answer), so this tab changes the same way with or without its socket.
async function showVersion(button) {
  if (busy) {
    showAlert("Wait for the current answer, or stop it.");
    return;
  }
  let response;
  try {
    response = await fetch(button.dataset.versionUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken() },
    });
  } catch {
    showAlert("Not connected: try again once reconnected.");
    return;
  }
  if (!response.ok) {
    showAlert(await response.text());
    return;
  }
  showAlert("");
  for (const frame of (await response.json()).frames) handlers[frame.type]?.(frame);
  // The pressed button was replaced with its answer: the same step keeps focus
  // (or the other, at either end), so the arrows can be pressed again.
  const control = list.querySelector("article:last-of-type .versions");
  if (!control) return;
  const steps = control.querySelectorAll(".version-step:not(:disabled)");
  const same = control.querySelector(`.version-step[data-step="${button.dataset.step}"]:not(:disabled)`);
  (same ?? steps[0])?.focus({ preventScroll: true });
  announce(`Version ${control.dataset.number} of ${control.dataset.count}`);
}

// ---------------------------------------------------------------- clicks in the list

async function copyFrom(button, source) {
  const copied = await copyToClipboard(source).catch(() => false);
  const label = button.querySelector("span") ?? button;
  const before = label.textContent;
  label.textContent = copied ? "Copied" : "Copy failed";
  announce(copied ? "Copied to the clipboard." : "Could not copy.");
  setTimeout(() => {
    label.textContent = before;
  }, 1500);
}

function answerSource(button) {
  const article = button.closest("article");
  const state = live.get(Number(article.dataset.messageId));
  if (state?.source() != null) return state.source();
  return fetch(button.dataset.sourceUrl, { credentials: "same-origin" }).then((response) => {
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return response.text();
  });
}

function wireList() {
  list.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (button?.classList.contains("copy-code")) {
      copyFrom(button, button.closest(".code-block").querySelector("code").textContent);
    } else if (button?.classList.contains("copy-answer")) {
      copyFrom(button, answerSource(button));
    } else if (owner && button?.classList.contains("regenerate")) {
      regenerate();
    } else if (owner && button?.classList.contains("version-step")) {
      showVersion(button);
    } else if (owner && button?.classList.contains("edit-message")) {
      startEditing(button.closest("article"));
    }
    // The reader opening or closing live thoughts says what they want next time.
    const summary = event.target.closest("details.thinking > summary");
    const article = summary?.closest('article[data-status="streaming"]');
    if (article) rememberThinking(!summary.parentElement.open);
  });
}

// Server-rendered answers get code highlighting and math when they come near.
function enhanceWhenVisible() {
  const observer = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        enhanceAnswer(entry.target);
      }
    },
    { root: list, rootMargin: "600px 0px" },
  );
  const observeNew = () => {
    for (const answer of list.querySelectorAll(".answer:not(.streaming):not([data-enhanced])")) observer.observe(answer);
  };
  observeNew();
  list.addEventListener("older-messages", observeNew); // a page older.js inserted
}

// ---------------------------------------------------------------- start

function start() {
  if (owner) {
    wireComposer();
    followModelName();
  }
  wireList();
  watchScrolling();
  enhanceWhenVisible();
  for (const article of list.querySelectorAll('article[data-status="streaming"]')) {
    liveFor(Number(article.dataset.messageId));
    setBusy(true);
  }
  list.scrollTop = list.scrollHeight;
  requestFrame(); // render a checkpointed answer as markdown; scroll once laid out
  // Ready to type, except on touch screens, where that would open the keyboard.
  if (window.matchMedia("(hover: hover) and (min-width: 761px)").matches) owner?.input.focus();
  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") reconnectNow();
  });
  if (chat.dataset.wsPath) connect(); // a snapshot has nothing to stream
}

start();
