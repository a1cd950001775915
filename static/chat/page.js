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

export function showAlert(text) {
  alertBox.textContent = text;
  alertBox.hidden = !text;
}

export function announce(text) {
  announcer.textContent = "";
  announcer.textContent = text;
}
