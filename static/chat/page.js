// The conversation page's elements, what it can do, and its two messages to
// the reader: the alert banner and the polite announcements.

// Every page that loads these modules has them (templates/chat/_stream_head.html).
export const chat = /** @type {HTMLElement} */ (document.getElementById("chat"));
export const list = /** @type {HTMLElement} */ (document.getElementById("messages"));
export const sentinel = /** @type {HTMLElement} */ (document.getElementById("scroll-sentinel"));
export const jumpButton = /** @type {HTMLButtonElement} */ (document.getElementById("jump-latest"));
export const connection = /** @type {HTMLElement} */ (document.getElementById("connection"));
export const template = /** @type {HTMLTemplateElement} */ (document.getElementById("answer-template"));
const alertBox = /** @type {HTMLElement} */ (document.getElementById("alert"));
const announcer = /** @type {HTMLElement} */ (document.getElementById("announcer"));

// The one place that decides what this page can do. Shared and team pages
// (templates/chat/read_only.html) are read-only: no composer, model state, edit
// or regenerate, and a live shared link's socket only listens (it answers any
// owner frame with an error). Everything the owner's page alone has lives in
// `owner`, null on a read-only page, so no code path there can reach it.
/**
 * @typedef {object} Owner  the owner's page's own elements
 * @property {HTMLFormElement} composer
 * @property {HTMLTextAreaElement} input
 * @property {HTMLButtonElement} sendButton
 * @property {HTMLButtonElement} stopButton
 * @property {HTMLElement} modelState
 */

/** @type {Owner | null} */
export const owner =
  chat.dataset.readOnly === "1"
    ? null
    : {
        composer: /** @type {HTMLFormElement} */ (document.getElementById("composer")),
        input: /** @type {HTMLTextAreaElement} */ (document.getElementById("composer-input")),
        sendButton: /** @type {HTMLButtonElement} */ (document.getElementById("send-button")),
        stopButton: /** @type {HTMLButtonElement} */ (document.getElementById("stop-button")),
        modelState: /** @type {HTMLElement} */ (document.getElementById("model-state")),
      };

// `action` ({label, run}) adds a button that does what the text offers ("Send
// truncated"); the next alert takes it away.
/**
 * @param {string} text
 * @param {{label: string, run: () => void} | null} [action]
 */
export function showAlert(text, action = null) {
  alertBox.textContent = text;
  alertBox.hidden = !text;
  if (!text || !action) return;
  const button = document.createElement("button");
  button.type = "button";
  button.className = "alert-action";
  button.textContent = action.label;
  button.addEventListener("click", () => action.run(), { once: true });
  alertBox.append(" ", button);
}

// The CSRF token the page's POSTs carry (templates/_base.html's hx-headers).
export function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") ?? "")["X-CSRFToken"];
  } catch {
    return "";
  }
}

/** @param {string} text */
export function announce(text) {
  announcer.textContent = "";
  announcer.textContent = text;
}
