// A tool turn's steps on the page, from the socket's frames (socket.js spreads
// `toolHandlers` into its table): a card per tool call
// (templates/chat/_tool_step.html) with its title and source, its arguments as
// the model writes them (pretty-printed once written), a live timer while it
// runs, the preview of its result, its error, Allow / Deny while it waits for
// the user; the next round's thoughts in a block of their own; the cited pages
// under the answer. What a frame brings is data: set as text (Text nodes,
// textContent), never parsed as markup. A stored answer's steps are drawn by
// the server with the same partials (chat/templatetags/tool_steps.py).
// None of this is on a token's path: a content or thinking delta costs what it
// did (live_answer.js); a call's arguments are appended to one Text node.

import { liveAnswer, liveFor } from "./live_answer.js";
import { list } from "./page.js";
import { gettext, interpolate, ngettext, number, seconds } from "./i18n.js";

const TIMER_EVERY_MS = 100;
const PRETTY_MAX_CHARS = 20000; // longer arguments are shown as written (chat/templatetags/tool_steps.py)
const UNSETTLED = new Set(["writing", "running", "awaiting_approval"]);

/** @type {Map<HTMLElement, ReturnType<typeof setInterval>>} */
const timers = new Map(); // a running call's card -> its one timer

/**
 * @param {ParentNode} root
 * @param {string} callId
 */
function findCard(root, callId) {
  for (const card of root.querySelectorAll(/** @type {"div"} */ ("div.tool-step"))) {
    if (card.dataset.callId === callId) return card;
  }
  return null;
}

/**
 * @param {HTMLElement} card
 * @param {string} selector
 */
function part(card, selector) {
  return /** @type {HTMLElement} */ (card.querySelector(selector));
}

/** @param {string} id */
function cloneTemplate(id) {
  const holder = /** @type {HTMLTemplateElement} */ (document.getElementById(id));
  return /** @type {HTMLElement} */ (/** @type {Element} */ (holder.content.firstElementChild).cloneNode(true));
}

// The status line's one Text node, changed in place by the timer.
/** @param {HTMLElement} card */
function statusNode(card) {
  const status = part(card, ".tool-status");
  if (status.childNodes.length !== 1 || !(status.firstChild instanceof Text)) status.replaceChildren("");
  return /** @type {Text} */ (status.firstChild);
}

/**
 * @param {HTMLElement} card
 * @param {string} text
 */
function setStatus(card, text) {
  const node = statusNode(card);
  if (node.data !== text) node.data = text;
}

/** @param {string} text */
export function prettyArguments(text) {
  if (text.length > PRETTY_MAX_CHARS) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text; // the model's malformed call, shown as it wrote it
  }
}

/** @param {HTMLElement} card */
function stopTimer(card) {
  clearInterval(timers.get(card));
  timers.delete(card);
}

// Every timer of an answer: it ended, was replaced or removed.
/** @param {Element} article */
export function stopTimers(article) {
  for (const card of timers.keys()) if (article.contains(card) || !card.isConnected) stopTimer(card);
}

/**
 * @param {HTMLElement} card
 * @param {number} started  epoch ms, the server's
 */
function startTimer(card, started) {
  stopTimer(card);
  const show = () => {
    const elapsed = Math.max(0, Date.now() - started);
    setStatus(card, interpolate(gettext("Running… %(duration)s"), { duration: seconds(elapsed) }));
  };
  show();
  timers.set(card, setInterval(show, TIMER_EVERY_MS));
}

/** @param {HTMLElement} card */
function argumentsWritten(card) {
  if (card.dataset.state !== "writing") return;
  const args = part(card, ".tool-args");
  args.textContent = prettyArguments(args.textContent ?? "");
}

// ---------------------------------------------------------------- the frames

// The model began writing a call: its card, after the steps so far. Sent again
// (a resume), the call's arguments start again from the first character.
/** @param {ServerFrame} frame */
function toolCall(frame) {
  const state = liveFor(frame.message_id);
  state.endThinking(performance.now());
  /** @type {HTMLElement | null} */
  let card = findCard(state.steps, frame.call_id);
  if (!card) {
    card = cloneTemplate("tool-step-template");
    card.dataset.callId = frame.call_id;
    card.dataset.state = "writing";
    state.steps.append(card);
  }
  if (card.dataset.state !== "writing") return;
  part(card, ".tool-title").textContent = frame.title || frame.name;
  part(card, ".tool-source").textContent = frame.source;
  part(card, ".tool-args").replaceChildren(document.createTextNode(""));
  setStatus(card, gettext("Writing the call…"));
}

/** @param {ServerFrame} frame */
function toolArgs(frame) {
  const card = findCard(liveFor(frame.message_id).steps, frame.call_id);
  if (!card || card.dataset.state !== "writing") return;
  const args = part(card, ".tool-args");
  if (args.lastChild instanceof Text) args.lastChild.appendData(frame.delta);
  else args.append(frame.delta);
}

/** @param {ServerFrame} frame */
function toolRun(frame) {
  const card = findCard(liveFor(frame.message_id).steps, frame.call_id);
  if (!card || !UNSETTLED.has(card.dataset.state ?? "")) return;
  argumentsWritten(card);
  const waiting = frame.state === "awaiting_approval";
  card.dataset.state = waiting ? "awaiting_approval" : "running";
  const approval = part(card, ".tool-approval");
  approval.hidden = !waiting;
  for (const button of approval.querySelectorAll("button")) button.disabled = false;
  if (waiting) {
    stopTimer(card);
    setStatus(card, gettext("Awaiting your approval"));
  } else startTimer(card, frame.started);
}

/** @param {ServerFrame} frame */
function toolResult(frame) {
  const state = liveFor(frame.message_id);
  const card = findCard(state.steps, frame.call_id);
  if (!card) return;
  stopTimer(card);
  argumentsWritten(card);
  card.dataset.state = frame.ok ? "done" : "error";
  part(card, ".tool-approval").hidden = true;
  const took = typeof frame.ms === "number" ? seconds(frame.ms) : "";
  setStatus(card, frame.ok ? took : [gettext("Failed"), took].filter(Boolean).join(" · "));
  const error = part(card, ".tool-error");
  error.textContent = frame.error ?? "";
  error.hidden = !frame.error;
  const result = /** @type {HTMLDetailsElement} */ (part(card, ".tool-result"));
  part(card, ".tool-preview").textContent = frame.preview ?? "";
  const size = typeof frame.size === "number" ? interpolate(ngettext("%(shown)s character", "%(shown)s characters", frame.size), { shown: number(frame.size) }) : "";
  part(card, ".tool-size").textContent = [size, frame.cut ? gettext("cut to the limit") : ""].filter(Boolean).join(" · ");
  result.hidden = !frame.preview;
  addCitations(state.citations, frame.citations ?? []);
}

// The next model call of the turn: its thoughts in a block of their own.
/** @param {ServerFrame} frame */
function nextRound(frame) {
  const state = liveFor(frame.message_id);
  const details = /** @type {HTMLDetailsElement} */ (cloneTemplate("step-thinking-template"));
  state.steps.append(details);
  state.thinkAgainIn(details);
}

/** @type {Record<string, (frame: ServerFrame) => void>} */
export const toolHandlers = {
  tool_call: toolCall,
  tool_args: toolArgs,
  tool_run: toolRun,
  tool_result: toolResult,
  round: nextRound,
};

// ---------------------------------------------------------------- citations

/** @param {string} url */
function webAddress(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : "";
  } catch {
    return "";
  }
}

// Numbered links under the answer, each page once; anything but a web address
// (a `javascript:` link from a page a tool read) is left out.
/**
 * @param {HTMLOListElement} citations
 * @param {{url: string, title?: string}[]} found
 */
function addCitations(citations, found) {
  const have = new Set([...citations.querySelectorAll("a")].map((a) => a.href));
  for (const citation of found) {
    const href = typeof citation?.url === "string" ? webAddress(citation.url) : "";
    if (!href || have.has(href)) continue;
    have.add(href);
    const link = document.createElement("a");
    link.href = href;
    link.target = "_blank";
    link.rel = "noopener noreferrer nofollow";
    link.textContent = citation.title || citation.url;
    const item = document.createElement("li");
    item.append(link);
    citations.append(item);
  }
  citations.hidden = !citations.children.length;
}

// ---------------------------------------------------------------- the end

// The stored answer came (socket.js `replaceMessage`): timers stop, and a call
// the page saw unfinished takes the server's card, as a reload would show it.
/**
 * @param {Element} article  the page's
 * @param {Element} fresh  the server's
 */
export function settleSteps(article, fresh) {
  stopTimers(article);
  for (const card of article.querySelectorAll(/** @type {"div"} */ ("div.tool-step"))) {
    if (!UNSETTLED.has(card.dataset.state ?? "")) continue;
    const stored = findCard(fresh, card.dataset.callId ?? "");
    if (stored) card.replaceWith(stored);
    else {
      card.dataset.state = "unfinished";
      part(card, ".tool-approval").hidden = true;
      setStatus(card, gettext("Not finished"));
    }
  }
  const stored = fresh.querySelector(".citations");
  if (stored && fresh.querySelector(".tool-step")) article.querySelector(".citations")?.replaceWith(stored);
}

// The answer is drawn again from its start (a refused resume, socket.js).
/** @param {LiveAnswer} state */
export function clearSteps(state) {
  stopTimers(state.article);
  state.steps.replaceChildren();
  state.citations.replaceChildren();
  state.citations.hidden = true;
}

// Allow / Deny: the page's socket sends the choice (socket.js, "chat:approve").
list.addEventListener("click", (event) => {
  const button = /** @type {Element} */ (event.target).closest?.(".tool-approval button");
  const card = /** @type {HTMLElement | null} */ (button?.closest("div.tool-step") ?? null);
  const article = /** @type {HTMLElement | null} */ (card?.closest("article[data-message-id]") ?? null);
  if (!button || !card || !article || !liveAnswer(Number(article.dataset.messageId))) return;
  for (const each of card.querySelectorAll(/** @type {"button"} */ (".tool-approval button"))) each.disabled = true;
  const detail = {
    message_id: Number(article.dataset.messageId),
    call_id: card.dataset.callId ?? "",
    allow: /** @type {HTMLElement} */ (button).dataset.allow === "1",
  };
  document.dispatchEvent(new CustomEvent("chat:approve", { detail }));
});
