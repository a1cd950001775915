// The conversation page's script (templates/chat/_stream_head.html): it wires
// the page's parts and opens the stream. The parts: page.js (elements, alert,
// announcements), turn.js (the turn in progress), live_answer.js (the live
// answers and their frames), socket.js (the WebSocket and the server frames'
// handlers), composer.js (composer and message actions), attachments.js (the
// composer's files), clipboard.js, close_codes.js, markdown.js. Protocol:
// README.md and chat/live/protocol/frames.py.

import { wireList, wireOwner } from "./composer.js";
import { liveFor, requestFrame, showMessage, watchScrolling } from "./live_answer.js";
import { enhanceAnswer } from "./markdown.js";
import { chat, list, owner } from "./page.js";
import { connect, reconnectNow } from "./socket.js";
import { setBusy } from "./turn.js";

// Server-rendered answers get code highlighting and math when they come near.
function enhanceWhenVisible() {
  const observer = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        observer.unobserve(entry.target);
        enhanceAnswer(/** @type {HTMLElement} */ (entry.target));
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

function start() {
  if (owner) wireOwner();
  wireList();
  watchScrolling();
  enhanceWhenVisible();
  for (const article of list.querySelectorAll(/** @type {"article"} */ ('article[data-status="streaming"]'))) {
    liveFor(Number(article.dataset.messageId));
    setBusy(true);
  }
  const target = chat.dataset.targetMessage && document.getElementById(`message-${chat.dataset.targetMessage}`);
  if (target) showMessage(target); // a search hit (chat/web/sidebar/search.py)
  else list.scrollTop = list.scrollHeight;
  requestFrame(); // render a checkpointed answer as markdown (in view once laid out: `follower`)
  // Ready to type, except on touch screens, where that would open the keyboard.
  if (!target && window.matchMedia("(hover: hover) and (min-width: 761px)").matches) owner?.input.focus();
  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") reconnectNow();
  });
  if (chat.dataset.wsPath) connect(); // a snapshot has nothing to stream
}

start();
