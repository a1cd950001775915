// The owner's composer (send with its attachments, stop, the model's name) and
// the actions on the messages in the list: copy, regenerate, edit, the versions of a turn.

import {
  failedNames,
  hasFiles,
  idsOf,
  isUploading,
  takeForSend,
  uploadsSettled,
  wireAttachments,
} from "./attachments.js";
import { copyToClipboard } from "./clipboard.js";
import { followNewest, liveAnswer, rememberThinking } from "./live_answer.js";
import { announce, csrfToken, list, owner, showAlert } from "./page.js";
import { handlers, isOpen, preloadModel, sendFrame } from "./socket.js";
import { queueNext, wireQueue } from "./queued.js";
import { isBusy, questionSent, setBusy } from "./turn.js";
import { gettext, interpolate, ngettext } from "./i18n.js";

// crypto.randomUUID needs a secure context; teams often serve plain http on a LAN.
function newClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// ---------------------------------------------------------------- composer

// Enter while files are still uploading: the question goes once they are up
// (what is in the field then, so nothing typed meanwhile is lost), unless one
// failed. Enter again keeps waiting; Esc gives up (the text and files stay).
const sending = { waiting: false };

// Everything here but wireList runs on the owner's page only (stream.js), so
// `owner` is there.

/** @param {boolean} waiting */
function showWaiting(waiting) {
  const { composer, sendButton } = /** @type {Owner} */ (owner);
  sending.waiting = waiting;
  composer.dataset.waiting = waiting ? "1" : "";
  sendButton.setAttribute("aria-busy", waiting ? "true" : "false");
  const status = /** @type {HTMLElement} */ (document.getElementById("attach-status"));
  status.textContent = waiting ? gettext("Your message is sent once the files are uploaded.") : "";
}

/** @param {{truncate?: boolean, clientId?: string}} [options] */
async function send({ truncate = false, clientId = newClientId() } = {}) {
  const { input } = /** @type {Owner} */ (owner);
  const empty = () => !input.value.trim() && !hasFiles();
  if (empty() || sending.waiting) return;
  if (isBusy()) {
    queueWhileBusy();
    return;
  }
  if (isUploading()) {
    showWaiting(true);
    await uploadsSettled();
    if (!sending.waiting) return; // given up (Esc)
    showWaiting(false);
    if (empty() || isBusy()) return;
  }
  const failed = failedNames();
  if (failed.length) {
    const why = ngettext(
      "Not sent: %(names)s cannot go with it (see the file). Remove it, then send again.",
      "Not sent: %(names)s cannot go with it (see the files). Remove them, then send again.",
      failed.length,
    );
    showAlert(interpolate(why, { names: failed.join(", ") }));
    return;
  }
  if (!isOpen()) {
    showAlert(gettext("Not connected: your message is kept, send it again once reconnected."));
    return;
  }
  showAlert("");
  const content = input.value;
  const attachments = takeForSend();
  /** @type {{type: string, content: string, client_id: string, attachments?: (string | null)[], truncate_documents?: boolean}} */
  const frame = { type: "send", content, client_id: clientId };
  if (attachments.length) frame.attachments = idsOf(attachments);
  if (truncate) frame.truncate_documents = true;
  // The frame leaves first: the model server is asked before the page draws
  // the question (docs/latency.md, rule 8); its echo cannot come back before
  // this task ends.
  sendFrame(frame);
  questionSent(clientId, content, attachments);
  input.value = "";
  input.dispatchEvent(new Event("input")); // the field shrinks back
  followNewest();
  setBusy(true);
}

// Enter while an answer is being written: the text waits above the box and goes
// when the answer ends (queued.js). Files wait in the box: they go with a
// question sent when nothing is being written.
function queueWhileBusy() {
  const { input } = /** @type {Owner} */ (owner);
  if (hasFiles()) {
    showAlert(gettext("Wait for the current answer, or stop it."));
    return;
  }
  if (!input.value.trim()) return;
  queueNext(input.value);
  input.value = "";
  input.dispatchEvent(new Event("input"));
}

// A document too large for the model's context is refused with the numbers;
// the question and its files are back in the composer (turn.js), and the
// alert offers to send them again with the documents cut to fit.
/** @param {DocumentEventMap["chat:refused"]} event */
function offerTruncated(event) {
  if (event.detail.code !== "document_too_large") return;
  showAlert(event.detail.detail, { label: gettext("Send truncated"), run: () => send({ truncate: true }) });
}

function stop() {
  if (isOpen()) sendFrame({ type: "stop" });
}

/** @param {KeyboardEvent} event */
function command(event) {
  return event.ctrlKey || event.metaKey || event.altKey;
}

// Where CSS cannot size the field to its text (field-sizing), do it on input.
function growWithText() {
  const { input } = /** @type {Owner} */ (owner);
  if (CSS.supports("field-sizing", "content")) return;
  const grow = () => {
    input.style.height = "auto";
    input.style.height = `${input.scrollHeight}px`;
  };
  input.addEventListener("input", grow);
}

function wireComposer() {
  const { composer, input, stopButton } = /** @type {Owner} */ (owner);
  growWithText();
  input.addEventListener("input", () => preloadModel("typed"), { passive: true });
  wireAttachments();
  composer.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      send();
    } else if (event.key === "Escape" && sending.waiting) {
      event.preventDefault();
      showWaiting(false);
    } else if (event.key === "ArrowUp" && !input.value && !hasFiles() && !event.shiftKey && !command(event)) {
      const last = [...list.querySelectorAll(/** @type {"article"} */ ("article.user"))].at(-1);
      if (!last?.querySelector(".edit-message") || isBusy()) return;
      event.preventDefault();
      startEditing(last);
    }
  });
  // Esc stops the answer, from anywhere on the page but a dialog, a menu or a
  // field that gives Esc its own meaning (they take the key first).
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.defaultPrevented || !isBusy()) return;
    if (/** @type {Element} */ (event.target).closest?.("dialog, details[open], .edit-form")) return;
    if (document.body.classList.contains("sidebar-open")) return; // Esc closes it (sidebar.js)
    event.preventDefault();
    stop();
  });
  document.addEventListener("chat:refused", offerTruncated);
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
    /** @type {Owner} */ (owner).input.placeholder = interpolate(gettext("Message %(model)s"), { model: name });
    for (const ref of document.querySelectorAll(".model-name-ref")) ref.textContent = name;
  });
}

// The question typed on the home page (chat/web/conversations/views.py, FIRST_QUESTION):
// in the box at once, sent when the socket first opens, once per tab (a reload
// before the server stored it shows it in the box again, unsent). Any refusal
// leaves it in the box, like a question typed here.
function sendFirstQuestion() {
  const { composer, input } = /** @type {Owner} */ (owner);
  const { firstQuestion, firstClientId } = composer.dataset;
  if (!firstClientId) return;
  if (!input.value) {
    input.value = /** @type {string} */ (firstQuestion);
    input.dispatchEvent(new Event("input"));
  }
  const key = `chat:first-question:${firstClientId}`;
  if (sessionStorage.getItem(key)) return;
  document.addEventListener(
    "chat:connected",
    () => {
      if (sessionStorage.getItem(key) || input.value !== firstQuestion) return;
      sessionStorage.setItem(key, "sent");
      send({ clientId: firstClientId });
    },
    { once: true },
  );
}

export function wireOwner() {
  wireComposer();
  wireQueue({ send, hasFiles });
  sendFirstQuestion();
  followModelName();
}

// ---------------------------------------------------------------- regenerate, edit

// A new version of a turn (it and what follows leave the page, kept on their
// branch): the server refuses it with an error frame (nothing changed) when it
// cannot be done.
/** @param {object} frame */
function sendReplacing(frame) {
  if (isBusy()) {
    showAlert(gettext("Wait for the current answer, or stop it."));
    return false;
  }
  if (!isOpen()) {
    showAlert(gettext("Not connected: try again once reconnected."));
    return false;
  }
  showAlert("");
  sendFrame(frame);
  followNewest();
  setBusy(true);
  return true;
}

/** @param {HTMLElement} article */
function regenerate(article) {
  const frame = { type: "regenerate", message_id: Number(article.dataset.messageId) };
  if (sendReplacing(frame)) /** @type {Owner} */ (owner).input.focus({ preventScroll: true });
}

// The question's text as typed (the server's partial breaks lines with <br>).
/** @param {Element} element */
function typedText(element) {
  return Array.from(element.childNodes, (node) => (node.nodeName === "BR" ? "\n" : node.textContent)).join("");
}

// A question becomes a field: Enter resends it (a new version of its turn), Esc
// gives it back.
/** @param {HTMLElement} article */
function startEditing(article) {
  if (article.classList.contains("editing")) return;
  const template = /** @type {HTMLTemplateElement} */ (document.getElementById("edit-template"));
  const form = /** @type {HTMLFormElement} */ (/** @type {Element} */ (template.content.firstElementChild).cloneNode(true));
  const field = /** @type {HTMLTextAreaElement} */ (form.querySelector("textarea"));
  field.value = typedText(/** @type {Element} */ (article.querySelector(".user-text")));
  article.classList.add("editing");
  article.append(form);
  const cancel = () => stopEditing(article);
  /** @type {Element} */ (form.querySelector(".edit-cancel")).addEventListener("click", cancel);
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

/** @param {HTMLElement} article */
function stopEditing(article) {
  article.querySelector(".edit-form")?.remove();
  article.classList.remove("editing");
  article.querySelector(/** @type {"button"} */ (".edit-message"))?.focus();
}

// The field stays until the server replaces the question (a refusal keeps it).
/**
 * @param {HTMLElement} article
 * @param {string} content
 */
function resendEdited(article, content) {
  if (!content.trim()) {
    showAlert(gettext("Type a message before resending."));
    return;
  }
  sendReplacing({ type: "edit", message_id: Number(article.dataset.messageId), content });
}

// ---------------------------------------------------------------- versions of a turn

// "‹ 2 / 3 ›": the server shows the chosen version and answers with the frames it
// sends the conversation's other tabs too (`removed`, then the version's question,
// its answer and the branch below), so this tab changes the same way with or
// without its socket.
/** @param {HTMLButtonElement} button */
async function showVersion(button) {
  if (isBusy()) {
    showAlert(gettext("Wait for the current answer, or stop it."));
    return;
  }
  let response;
  try {
    response = await fetch(/** @type {string} */ (button.dataset.versionUrl), {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken() },
    });
  } catch {
    showAlert(gettext("Not connected: try again once reconnected."));
    return;
  }
  if (!response.ok) {
    showAlert(await response.text());
    return;
  }
  showAlert("");
  /** @type {{frames: ServerFrame[]}} */
  const { frames } = await response.json();
  for (const frame of frames) handlers[frame.type]?.(frame);
  // The pressed button was replaced with its answer's (the second message sent,
  // after its question): the same step keeps focus (or the other, at either
  // end), so the arrows can be pressed again.
  const answer = frames.filter((frame) => frame.type === "message")[1];
  const control = answer && document.getElementById(`message-${answer.message.id}`)?.querySelector(".versions");
  if (!control) return;
  const steps = control.querySelectorAll(/** @type {"button"} */ (".version-step:not(:disabled)"));
  const same = control.querySelector(/** @type {"button"} */ (`.version-step[data-step="${button.dataset.step}"]:not(:disabled)`));
  (same ?? steps[0])?.focus({ preventScroll: true });
  announce(interpolate(gettext("Version %(number)s of %(count)s"), /** @type {HTMLElement} */ (control).dataset));
}

// ---------------------------------------------------------------- clicks in the list

/**
 * @param {HTMLButtonElement} button
 * @param {string | Promise<string>} source
 */
async function copyFrom(button, source) {
  const copied = await copyToClipboard(source).catch(() => false);
  const label = button.querySelector("span") ?? button;
  const before = label.textContent;
  label.textContent = copied ? gettext("Copied") : gettext("Copy failed");
  announce(copied ? gettext("Copied to the clipboard.") : gettext("Could not copy."));
  setTimeout(() => {
    label.textContent = before;
  }, 1500);
}

/**
 * @param {HTMLButtonElement} button
 * @returns {string | Promise<string>}
 */
function answerSource(button) {
  const article = /** @type {HTMLElement} */ (button.closest("article"));
  const state = liveAnswer(Number(article.dataset.messageId));
  if (state?.source() != null) return /** @type {string} */ (state.source());
  return fetch(/** @type {string} */ (button.dataset.sourceUrl), { credentials: "same-origin" }).then((response) => {
    if (!response.ok) throw new Error(`HTTP ${response.status}`); // i18n: not text
    return response.text();
  });
}

export function wireList() {
  list.addEventListener("click", (event) => {
    const target = /** @type {Element} */ (event.target);
    const button = target.closest("button");
    if (button?.classList.contains("copy-code")) {
      copyFrom(button, /** @type {HTMLElement} */ (/** @type {Element} */ (button.closest(".code-block")).querySelector("code")).textContent);
    } else if (button?.classList.contains("copy-answer")) {
      copyFrom(button, answerSource(button));
    } else if (owner && button?.classList.contains("regenerate")) {
      regenerate(/** @type {HTMLElement} */ (button.closest("article")));
    } else if (owner && button?.classList.contains("version-step")) {
      showVersion(button);
    } else if (owner && button?.classList.contains("edit-message")) {
      startEditing(/** @type {HTMLElement} */ (button.closest("article")));
    }
    // The reader opening or closing live thoughts says what they want next time.
    const summary = target.closest("details.thinking > summary");
    const article = summary?.closest('article[data-status="streaming"]');
    if (summary && article) rememberThinking(!(/** @type {HTMLDetailsElement} */ (summary.parentElement).open));
  });
}
