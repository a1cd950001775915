// The turn in progress: whether the page is busy (an answer is being written or
// a question is on its way), which answer is streaming, and the question this
// tab sent until the server echoes it.

import { giveBack, sent, sentAfterAll } from "./attachments.js";
import { chat, owner } from "./page.js";

/**
 * @typedef {object} Sent  a question this tab sent: see giveBackUnsent
 * @property {string} clientId
 * @property {string} content
 * @property {AttachedFile[]} attachments
 * @property {number} at  performance.now() when it was sent
 * @property {boolean} stored
 * @property {boolean} givenBack
 */

const turn = {
  busy: false,
  /** @type {number | null} */
  streamingId: null, // the answer being written, until its `done` or stored message
  /** @type {Sent | null} */
  lastSent: null,
};

export function isBusy() {
  return turn.busy;
}

/** @param {boolean} value */
export function setBusy(value) {
  turn.busy = value;
  if (!owner) return;
  owner.stopButton.hidden = !turn.busy;
  owner.sendButton.hidden = turn.busy;
  chat.dataset.busy = turn.busy ? "1" : "";
}

/** @param {number} messageId */
export function answerStarted(messageId) {
  turn.streamingId = messageId;
  setBusy(true);
}

// Its `done`, or its stored message (the `done` may have been lost with a
// dropped socket), with how it ended: "done", "stopped" or "error" (queued.js
// sends the next message after "done").
/**
 * @param {number} messageId
 * @param {string} status
 */
export function answerEnded(messageId, status) {
  if (messageId === turn.streamingId) {
    turn.streamingId = null;
    setBusy(false);
    document.dispatchEvent(new CustomEvent("chat:turn-ended", { detail: { status } }));
  }
}

// A removed answer: one replaced, or the streaming one taken back (its turn
// was not stored after all), which ends the turn.
/** @param {number} messageId */
export function answerRemoved(messageId) {
  if (messageId === turn.streamingId) {
    turn.streamingId = null;
    setBusy(false);
  }
}

// `attachments`: the composer's files that went with it (attachments.js).
/**
 * @param {string} clientId
 * @param {string} content
 * @param {AttachedFile[]} [attachments]
 */
export function questionSent(clientId, content, attachments = []) {
  turn.lastSent = { clientId, content, attachments, at: performance.now(), stored: false, givenBack: false };
}

// The first token's time counts from the moment this tab sent the question,
// once the server has stored it, for an answer this page saw from its start.
/** @param {LiveAnswer} answer */
export function timeFromSend(answer) {
  if (turn.lastSent?.stored && answer.fresh && answer.sentAt === null) {
    answer.sentAt = turn.lastSent.at;
    turn.lastSent = null;
  }
}

// A sent question is the user's until the server echoes it (a `message` frame
// with its client_id): any failure before that (an `error` frame, the socket
// closing, a reconnect that never brings the echo) puts the text back in the
// composer once, unless something new was typed there, and its attachments
// back in their chips. True if it did.
export function giveBackUnsent() {
  const { lastSent } = turn;
  if (!owner || !lastSent || lastSent.stored || lastSent.givenBack) return false;
  lastSent.givenBack = true;
  putBack(lastSent.content);
  giveBack(lastSent.attachments);
  setBusy(turn.streamingId !== null);
  return true;
}

// A stored message with this tab's client_id: the question is in the conversation.
/** @param {string | null} clientId */
export function echoed(clientId) {
  if (turn.lastSent && clientId === turn.lastSent.clientId) confirmSent();
}

// The echo came after all (a late one, from another socket): the question is in
// the conversation, so the text given back goes, if it is still there untouched.
function confirmSent() {
  const { lastSent } = turn;
  if (!lastSent || !owner) return; // set only by the owner's questionSent
  lastSent.stored = true;
  if (lastSent.givenBack && owner.input.value === lastSent.content) {
    owner.input.value = "";
    owner.input.dispatchEvent(new Event("input"));
  }
  if (lastSent.givenBack) sentAfterAll(lastSent.attachments);
  else sent(lastSent.attachments);
}

// The text in the composer again, unless something new was typed there.
/** @param {string} content */
function putBack(content) {
  if (!owner) return;
  const { input } = owner;
  if (input.value) return;
  input.value = content;
  input.dispatchEvent(new Event("input")); // the field grows back
}

// Refused before anything was stored: the text goes back, for good. `content`:
// the question's text, when the server had shown and echoed it before its
// commit failed (the turn was taken back): it goes back all the same.
/** @param {string} [content] */
export function refused(content) {
  if (!giveBackUnsent() && content !== undefined && owner) putBack(content);
  turn.lastSent = null;
  setBusy(turn.streamingId !== null);
}
