// The conversation page's elements, what it can do, and its two messages to
// the reader: the alert banner and the polite announcements.

export const chat = document.getElementById("chat");
export const list = document.getElementById("messages");
export const sentinel = document.getElementById("scroll-sentinel");
export const jumpButton = document.getElementById("jump-latest");
export const connection = document.getElementById("connection");
export const template = document.getElementById("answer-template");
const alertBox = document.getElementById("alert");
const announcer = document.getElementById("announcer");

// The one place that decides what this page can do. Shared and team pages
// (templates/chat/read_only.html) are read-only: no composer, model state, edit
// or regenerate, and a live shared link's socket only listens (it answers any
// owner frame with an error). Everything the owner's page alone has lives in
// `owner`, null on a read-only page, so no code path there can reach it.
export const owner =
  chat.dataset.readOnly === "1"
    ? null
    : {
        composer: document.getElementById("composer"),
        input: document.getElementById("composer-input"),
        sendButton: document.getElementById("send-button"),
        stopButton: document.getElementById("stop-button"),
        modelState: document.getElementById("model-state"),
      };

// `action` ({label, run}) adds a button that does what the text offers ("Send
// truncated"); the next alert takes it away.
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
    return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
  } catch {
    return "";
  }
}

export function announce(text) {
  announcer.textContent = "";
  announcer.textContent = text;
}
