// The conversation page's one WebSocket: connecting, resuming what was streaming
// and reconnecting, and the server frames it handles (the handlers table).
// Protocol: README.md and chat/live/protocol/frames.py.

import { CLOSE_FORBIDDEN, CLOSE_GONE, CLOSE_NOT_FOUND, CLOSE_SIGNED_OUT } from "./close_codes.js";
import {
  deltaArrived,
  forget,
  insertMessage,
  isFollowing,
  liveAnswer,
  liveFor,
  showModelState,
  showQueued,
} from "./live_answer.js";
import { enhanceAnswer } from "./markdown.js";
import { clearSteps, settleSteps, stopTimers, toolHandlers } from "./tool_steps.js";
import { refreshQuotaLine } from "./quota.js";
import { announce, chat, connection, list, owner, showAlert } from "./page.js";
import {
  answerEnded,
  answerRemoved,
  answerStarted,
  echoed,
  giveBackUnsent,
  refused,
  timeFromSend,
} from "./turn.js";
import { gettext, interpolate } from "./i18n.js";

// After these the page does not reconnect (trying again would be refused again);
// the header says why ("Not allowed" for a code not named here).
const CLOSED_FOR_GOOD = new Set([CLOSE_SIGNED_OUT, CLOSE_FORBIDDEN, CLOSE_NOT_FOUND, CLOSE_GONE]);
const CLOSED_BECAUSE = {
  [CLOSE_SIGNED_OUT]: gettext("Signed out"),
  [CLOSE_NOT_FOUND]: gettext("No such link"),
  [CLOSE_GONE]: gettext("Link closed"),
};

/**
 * A stored message as the server sends it (chat/live/protocol/frames.py).
 * @typedef {object} Message
 * @property {number} id
 * @property {string} dom_id
 * @property {string} html  rendered and sanitized by the server
 * @property {string} status
 * @property {string} role
 * @property {string | null} client_id
 * @property {string} content
 * @property {string} thinking
 * @property {string} [error_detail]
 */

/**
 * A server frame: `type` says which of the other fields it has (README.md's
 * protocol tables).
 * @typedef {object} Frame
 * @property {string} type
 * @property {number} message_id
 * @property {number[]} message_ids
 * @property {Message} message
 * @property {string} delta
 * @property {number} [tokens]
 * @property {number} position
 * @property {string} status
 * @property {string} state
 * @property {string} code
 * @property {string} detail
 * @property {string} [content]
 * @property {number} id
 * @property {string} title
 * @property {string} call_id  a tool call's (tool_steps.js), and the fields below
 * @property {string} name
 * @property {string} source
 * @property {number} started  epoch ms
 * @property {boolean} ok
 * @property {string} [preview]
 * @property {number} [size]
 * @property {boolean} [cut]
 * @property {number} [ms]
 * @property {string | null} [error]
 * @property {{url: string, title?: string}[]} [citations]
 * @property {number} round
 */

// The socket and its reconnecting.
const link = {
  /** @type {WebSocket | null} */
  socket: null,
  retry: 0,
  /** @type {ReturnType<typeof setTimeout> | null} */
  retryTimer: null,
  // Opening the conversation and starting to type each ask the server, once per
  // page view, to load the model now, so the answer does not wait for the load.
  preloadAsked: new Set(),
};

// ---------------------------------------------------------------- server frames

/** @param {Message} message */
function replaceMessage(message) {
  const state = liveAnswer(message.id);
  const holder = document.createElement("template"); // inert: nothing loads yet
  holder.innerHTML = message.html; // rendered and sanitized by the server
  const fresh = /** @type {Element} */ (holder.content.firstElementChild);
  if (message.status !== "streaming") answerEnded(message.id, message.status);
  if (state) {
    forget(message.id);
    settleSteps(state.article, fresh);
    state.finish(message, fresh);
    if (message.role === "assistant") announceAnswer(message, state);
    return;
  }
  const current = document.getElementById(message.dom_id);
  if (current) current.replaceWith(fresh);
  else insertMessage(fresh);
  const answer = fresh.querySelector(".answer:not(.streaming)");
  if (answer) enhanceAnswer(/** @type {HTMLElement} */ (answer));
  if (isFollowing()) list.scrollTop = list.scrollHeight;
}

// One polite announcement per finished answer, never one per token.
/**
 * @param {Message} message
 * @param {LiveAnswer} state
 */
function announceAnswer(message, state) {
  /** @type {Record<string, string>} */
  const prefixes = { done: gettext("Answer"), stopped: gettext("Answer stopped"), error: gettext("Answer failed") };
  const prefix =
    prefixes[message.status] ??
    gettext("Answer");
  announce(interpolate(gettext("%(prefix)s: %(text)s"), { prefix, text: message.error_detail || state.summary(600) }));
}

// Messages a regenerate or an edit replaced (in this tab or another): gone from
// the page at once; the new turn's frames follow.
/** @param {number[]} ids */
function removeMessages(ids) {
  for (const id of ids) {
    if (liveAnswer(id)) forget(id);
    answerRemoved(id);
    const article = document.getElementById(`message-${id}`);
    if (article) stopTimers(article);
    if (article?.contains(document.activeElement)) owner?.input.focus({ preventScroll: true });
    article?.remove();
  }
}

/** @param {Frame} frame */
function renameConversation(frame) {
  /** @type {HTMLElement} */ (document.getElementById("conversation-title")).textContent = frame.title;
  const item = document.getElementById(`conversation-item-${frame.id}`);
  if (item) /** @type {HTMLElement} */ (item.querySelector("a")).textContent = frame.title;
  document.title = `${frame.title} · chatsite`;
  hadActivity();
}

// A new question is activity: the sidebar (static/chat/sidebar.js) moves the
// conversation's entry to the top of Today.
function hadActivity() {
  const id = Number(chat.dataset.conversationId);
  if (id) document.dispatchEvent(new CustomEvent("chat:activity", { detail: { id } }));
}

/** @param {Frame} frame */
function showMessage(frame) {
  echoed(frame.message.client_id);
  const fresh = !document.getElementById(frame.message.dom_id);
  replaceMessage(frame.message);
  if (fresh && frame.message.role === "user") hadActivity();
}

/** @param {Frame} frame */
function startAnswer(frame) {
  answerStarted(frame.message_id);
  timeFromSend(liveFor(frame.message_id)); // in view, if following (live_answer.js, `follower`)
}

/** @param {Frame} frame */
function queueAnswer(frame) {
  showQueued(liveFor(frame.message_id), frame.position);
}

/** @param {Frame} frame */
function addThinking(frame) {
  const state = liveFor(frame.message_id);
  state.add("thinking", frame.delta, performance.now(), frame.tokens);
  deltaArrived(state);
}

/** @param {Frame} frame */
function addContent(frame) {
  const state = liveFor(frame.message_id);
  state.add("content", frame.delta, performance.now(), frame.tokens);
  deltaArrived(state);
}

/** @param {Frame} frame */
function removeReplaced(frame) {
  removeMessages(frame.message_ids);
}

/** @param {Frame} frame */
function endAnswer(frame) {
  answerEnded(frame.message_id, frame.status);
  const state = liveAnswer(frame.message_id);
  if (state) stopTimers(state.article);
  refreshQuotaLine();
}

/** @param {Frame} frame */
function showModel(frame) {
  showModelState(frame.state);
  if (frame.state === "error") showAlert(frame.detail);
}

/** @param {Frame} frame */
function showRefusal(frame) {
  if (frame.code === "bad_offset") {
    resumeFromStart(frame.message_id);
    return;
  }
  // An answer's failure is shown in its footer (the stored message follows);
  // the banner is for what no message shows: a refused frame.
  if (frame.message_id !== null) return;
  showAlert(frame.detail);
  refused(frame.content);
  // The composer may offer another way (static/chat/composer.js: "Send truncated").
  document.dispatchEvent(new CustomEvent("chat:refused", { detail: { code: frame.code, detail: frame.detail } }));
}

/** @type {Record<string, (frame: Frame) => void>} */
export const handlers = {
  conversation: renameConversation,
  message: showMessage,
  start: startAnswer,
  queued: queueAnswer,
  thinking: addThinking,
  content: addContent,
  removed: removeReplaced,
  done: endAnswer,
  model: showModel,
  error: showRefusal,
  ...toolHandlers,
};

// ---------------------------------------------------------------- the socket

export function isOpen() {
  return link.socket !== null && link.socket.readyState === WebSocket.OPEN;
}

// The caller checked isOpen().
/** @param {object} frame */
export function sendFrame(frame) {
  /** @type {WebSocket} */ (link.socket).send(JSON.stringify(frame));
}

/**
 * @param {string} state
 * @param {string} text
 */
function setConnection(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
  if (state === "live") chat.dataset.connected = "1";
  else delete chat.dataset.connected;
}

function resumeStreaming() {
  for (const article of list.querySelectorAll(/** @type {"article"} */ ('article[data-status="streaming"]'))) {
    const state = liveFor(Number(article.dataset.messageId));
    sendFrame({
      type: "resume",
      message_id: state.id,
      offset: state.contentLength,
      thinking_offset: state.thinkingLength,
    });
  }
}

// A resume this page asked for was refused (`bad_offset`): it holds more of the
// answer than the server has written, and the server sends nothing more for
// that resume. The page asks again from the start, its copy dropped: the text
// comes whole, then live.
/** @param {number} messageId */
function resumeFromStart(messageId) {
  const state = liveAnswer(messageId);
  if (!state || !isOpen()) return; // ended meanwhile (its stored message came), or reconnecting: resumed then
  clearSteps(state);
  state.restart();
  sendFrame({ type: "resume", message_id: messageId, offset: 0, thinking_offset: 0 });
}

// A shared page's socket first sends what came after the page's messages
// (`?seen=N`, N the last one's ordinal): counted at each connect, as after a
// reconnect the page also has what came live, which would be sent again.
function socketPath() {
  const path = /** @type {string} */ (chat.dataset.wsPath);
  const url = new URL(path, location.href);
  if (!url.searchParams.has("seen")) return path;
  const shown = [...list.querySelectorAll(/** @type {"article"} */ ("article[data-message-id]"))].map((a) => Number(a.dataset.messageId) || 0);
  url.searchParams.set("seen", String(Math.max(0, ...shown)));
  return url.pathname + url.search;
}

export function connect() {
  clearTimeout(link.retryTimer ?? undefined);
  link.retryTimer = null;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}${socketPath()}`);
  link.socket = socket;
  socket.addEventListener("open", () => {
    link.retry = 0;
    setConnection("live", gettext("Connected"));
    resumeStreaming();
    preloadModel("opened");
    document.dispatchEvent(new Event("chat:connected")); // composer.js: the home page's question
  });
  socket.addEventListener("message", (event) => {
    /** @type {Frame} */
    const frame = JSON.parse(event.data);
    handlers[frame.type]?.(frame);
  });
  socket.addEventListener("close", (event) => {
    link.socket = null;
    if (giveBackUnsent()) showAlert(gettext("Disconnected before your message was confirmed: it is back in the box."));
    if (CLOSED_FOR_GOOD.has(event.code)) {
      setConnection("closed", /** @type {Record<number, string>} */ (CLOSED_BECAUSE)[event.code] ?? gettext("Not allowed"));
      return;
    }
    scheduleReconnect();
  });
}

// Exponential backoff with jitter, capped at 8 s; at once when the network returns.
function scheduleReconnect() {
  const delay = Math.min(8000, 250 * 2 ** link.retry++) * (0.8 + Math.random() * 0.4);
  const wait = Math.round(delay / 1000);
  setConnection(
    "reconnecting",
    wait > 1 ? interpolate(gettext("Reconnecting in %(seconds)s s…"), { seconds: wait }) : gettext("Reconnecting…"),
  );
  link.retryTimer = setTimeout(connect, delay);
}

// Allow / Deny on a tool call waiting for the user (tool_steps.js); once
// reconnected, the server asks again (its `tool_run` frame enables the buttons).
document.addEventListener("chat:approve", (event) => {
  if (isOpen()) sendFrame({ type: "approve", ...event.detail });
  else showAlert(gettext("Not connected: your choice was not sent. Choose again once reconnected."));
});

export function reconnectNow() {
  if (link.retryTimer !== null) connect();
}

// ---------------------------------------------------------------- the model loading

/** @param {string} reason */
export function preloadModel(reason) {
  if (!owner || link.preloadAsked.has(reason) || !isOpen()) return;
  link.preloadAsked.add(reason);
  sendFrame({ type: "preload" });
}
