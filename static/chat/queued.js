// The next message, typed while an answer is being written: shown above the
// composer ("Next, once the answer ends"), editable (back into the box) and
// cancellable, and sent by the composer when the answer ends normally. After a
// stop or a failure it goes back into the box instead: the reader decides again.
// Nothing here runs per token: only on Enter, on the card's buttons and at the
// answer's end (turn.js, "chat:turn-ended").

import { gettext } from "./i18n.js";
import { announce, owner } from "./page.js";

// Everything here runs on the owner's page only (composer.js), so `owner` is there.
const queue = {
  text: "",
  /** @type {HTMLElement | null} */
  card: null,
  /** @type {() => void} */
  send: () => {},
  /** @type {() => boolean} */
  hasFiles: () => false,
};

// Enter while busy: the box's text joins the queued message (one message, in
// the order typed).
/** @param {string} text */
export function queueNext(text) {
  queue.text = queue.text ? `${queue.text}\n\n${text}` : text;
  show();
  announce(gettext("Queued: it is sent when the answer ends."));
}

/**
 * @param {string} label
 * @param {string} className
 * @param {() => void} run
 */
function button(label, className, run) {
  const element = document.createElement("button");
  element.type = "button";
  element.className = className;
  element.textContent = label;
  element.addEventListener("click", run);
  return element;
}

function build() {
  const card = document.createElement("div");
  card.className = "queued-card";
  card.id = "queued-card";
  card.setAttribute("role", "group");
  card.setAttribute("aria-label", gettext("Queued message"));
  const label = document.createElement("span");
  label.className = "queued-label";
  label.textContent = gettext("Next, once the answer ends:");
  const text = document.createElement("p");
  text.className = "queued-text";
  const actions = document.createElement("span");
  actions.className = "queued-actions";
  actions.append(
    button(gettext("Edit"), "queued-edit", () => takeBack({ focus: true })),
    button(gettext("Cancel"), "queued-cancel", () => {
      clear();
      announce(gettext("Queued message cancelled."));
      /** @type {Owner} */ (owner).input.focus();
    }),
  );
  card.append(label, text, actions);
  /** @type {Owner} */ (owner).composer.prepend(card);
  return card;
}

function show() {
  queue.card ??= build();
  queue.card.hidden = !queue.text;
  /** @type {Element} */ (queue.card.querySelector(".queued-text")).textContent = queue.text;
}

function clear() {
  queue.text = "";
  show();
}

// The queued text back into the box, before whatever is typed there.
/** @param {{focus?: boolean}} [options] */
function takeBack({ focus = false } = {}) {
  const { input } = /** @type {Owner} */ (owner);
  const draft = input.value;
  input.value = draft ? `${queue.text}\n\n${draft}` : queue.text;
  input.dispatchEvent(new Event("input"));
  clear();
  if (focus) {
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  }
}

// At a normal end, what is queued goes as if typed in the box and sent (the
// composer's send(): if it cannot go, it stays in the box, and a failure before
// the server confirmed it gives it back there, turn.js). Only from an empty box
// without files: a draft typed meanwhile, or its files, would be mixed in, so
// then the queued text goes back into the box, before the draft.
/** @param {DocumentEventMap["chat:turn-ended"]} event */
function answerEnded(event) {
  if (!queue.text) return;
  const { input } = /** @type {Owner} */ (owner);
  if (event.detail.status === "done" && !input.value && !queue.hasFiles()) {
    input.value = queue.text;
    clear();
    queue.send();
    return;
  }
  takeBack();
  announce(gettext("The queued message is back in the box."));
}

// `send` and `hasFiles` come from the composer (composer.js).
/** @param {{send: () => void, hasFiles: () => boolean}} composer */
export function wireQueue({ send, hasFiles }) {
  queue.send = send;
  queue.hasFiles = hasFiles;
  document.addEventListener("chat:turn-ended", answerEnded);
}
