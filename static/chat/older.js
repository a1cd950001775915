// Long conversations: a conversation page shows only its newest messages
// (chat/models/paging.py); the control at the top of the list fetches the page before
// them when it comes near the view, or when pressed, and the page is inserted
// above without moving what the reader is looking at. Each inserted page brings
// the control for the one before it, until the first message.

import { gettext, interpolate, ngettext, number } from "./i18n.js";

const list = /** @type {HTMLElement} */ (document.getElementById("messages"));
const announcer = /** @type {HTMLElement} */ (document.getElementById("announcer"));
const NEAR_TOP = "800px 0px 0px 0px"; // start fetching this far above the view

let loading = false;

const nearTop = new IntersectionObserver(
  (entries) => {
    if (entries.some((entry) => entry.isIntersecting)) loadOlder();
  },
  { root: list, rootMargin: NEAR_TOP },
);

function control() {
  return document.getElementById("older-messages");
}

async function loadOlder() {
  const holder = control();
  if (!holder || loading) return;
  loading = true;
  const button = /** @type {HTMLButtonElement} */ (holder.querySelector("button"));
  holder.dataset.state = "loading";
  button.textContent = gettext("Loading older messages…");
  try {
    const response = await fetch(/** @type {string} */ (holder.dataset.olderUrl), {
      credentials: "same-origin",
      headers: { Accept: "text/html" },
    });
    if (!response.ok) throw new Error(`HTTP ${response.status}`); // i18n: not text
    insertAbove(holder, await response.text());
  } catch {
    holder.dataset.state = "failed";
    button.textContent = gettext("Could not load older messages: try again");
  } finally {
    loading = false;
  }
}

/**
 * @param {HTMLElement} holder
 * @param {string} html
 */
function insertAbove(holder, html) {
  const page = document.createElement("template"); // inert: nothing loads yet
  page.innerHTML = html; // rendered and sanitized by the server
  const count = page.content.querySelectorAll("article").length;
  const next = page.content.getElementById("older-messages");
  const hadFocus = holder.contains(document.activeElement);
  nearTop.unobserve(holder);
  // What is below the insertion keeps its distance from the list's bottom.
  const fromBottom = list.scrollHeight - list.scrollTop;
  holder.replaceWith(page.content);
  list.scrollTop = list.scrollHeight - fromBottom;
  list.dispatchEvent(new Event("older-messages")); // stream.js enhances its answers
  if (next) {
    nearTop.observe(next);
    if (hadFocus) /** @type {HTMLButtonElement} */ (next.querySelector("button")).focus({ preventScroll: true });
  }
  const shown = next
    ? ngettext("%(count)s older message shown.", "%(count)s older messages shown.", count)
    : ngettext("%(count)s older message shown, from the first.", "%(count)s older messages shown, from the first.", count);
  announcer.textContent = interpolate(shown, { count: number(count) });
}

list.addEventListener("click", (event) => {
  if (/** @type {Element} */ (event.target).closest(".load-older")) loadOlder();
});
// Observed once the page has scrolled to its newest message (stream.js does
// that as it starts), so the top of a short list loads at once, a long one not.
requestAnimationFrame(() => {
  const holder = control();
  if (holder) nearTop.observe(holder);
});
