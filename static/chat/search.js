// Search over one's conversations (chat/web/sidebar/search.py): Ctrl+K (⌘K) or the
// sidebar's search box opens the dialog; typing asks the server (htmx, the
// form's hx-sync drops a stale request); ↑ ↓ move through the results and
// Enter opens one, at its message.

// The dialog is on every signed-in page (templates/_base.html), with its parts;
// `wire` checks it all the same.
const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("search-dialog"));
const input = /** @type {HTMLInputElement} */ (document.getElementById("search-input"));
const form = /** @type {HTMLFormElement} */ (document.getElementById("search-form"));
const results = /** @type {HTMLElement} */ (document.getElementById("search-results"));
const sidebarBox = /** @type {HTMLInputElement | null} */ (document.getElementById("conversation-search"));

function hits() {
  return [...results.querySelectorAll(/** @type {"a"} */ (".search-hit"))];
}

function activeIndex() {
  return hits().findIndex((hit) => hit.classList.contains("active"));
}

/** @param {number} index */
function activate(index) {
  const all = hits();
  all.forEach((hit, n) => {
    hit.classList.toggle("active", n === index);
    if (n === index) {
      hit.setAttribute("aria-current", "true");
      hit.scrollIntoView({ block: "nearest" });
    } else hit.removeAttribute("aria-current");
  });
}

/** @param {string} [text] */
export function open(text) {
  if (!dialog.open) dialog.showModal();
  if (typeof text === "string" && text !== input.value) {
    input.value = text;
    htmx.trigger(input, "input");
  }
  input.focus();
  input.select();
}

// The hit ↑ ↓ chose since the text last changed (its address): results that come
// late for that same text keep it chosen instead of moving back to the first.
/** @type {string | null} */
let chosen = null;

function activateNewResults() {
  activate(Math.max(0, hits().findIndex((hit) => hit.href === chosen)));
}

/** @param {KeyboardEvent} event */
function onKey(event) {
  if (event.key === "Escape") {
    // Closes at once, keeping the text (a search box would clear it first).
    event.preventDefault();
    dialog.close();
    return;
  }
  const all = hits();
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    if (!all.length) return;
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    const next = (activeIndex() + step + all.length) % all.length;
    activate(next);
    chosen = all[next].href;
  } else if (event.key === "Enter" && event.target === input && all.length) {
    event.preventDefault();
    window.location.assign(all[Math.max(0, activeIndex())].href);
  }
}

function wire() {
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "k") {
      event.preventDefault();
      open();
    }
  });
  dialog.addEventListener("keydown", onKey);
  // A click on the backdrop (the dialog itself, outside its content) closes it.
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) dialog.close();
  });
  // New results: the first is the one Enter opens, unless one was chosen for
  // this text (`chosen`).
  results.addEventListener("htmx:afterSwap", activateNewResults);
  form.addEventListener("htmx:afterSwap", activateNewResults);
  form.addEventListener("input", () => {
    chosen = null;
  });
  if (sidebarBox) {
    sidebarBox.setAttribute("aria-haspopup", "dialog");
    // Not on focus: closing the dialog gives the focus back to this box.
    const handOver = () => {
      const text = sidebarBox.value;
      sidebarBox.value = "";
      open(text || undefined);
    };
    sidebarBox.addEventListener("click", handOver);
    sidebarBox.addEventListener("input", handOver);
  }
}

if (dialog) wire();
