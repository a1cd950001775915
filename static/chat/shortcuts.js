// Every signed-in page's shortcuts: Ctrl+Shift+O (⌘⇧O) a new conversation,
// Ctrl+/ (⌘/) the list of shortcuts (templates/chat/_shortcuts_dialog.html).
// Ctrl+K is search.js's; Esc and ↑ are the conversation page's (composer.js).

const dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("shortcuts-dialog"));

/** @param {KeyboardEvent} event */
function command(event) {
  return (event.ctrlKey || event.metaKey) && !event.altKey;
}

/** @param {KeyboardEvent} event */
function onKey(event) {
  if (!command(event) || event.defaultPrevented) return;
  if (event.shiftKey && event.key.toLowerCase() === "o") {
    const form = document.querySelector(/** @type {"form"} */ (".new-chat-form"));
    if (!form) return;
    event.preventDefault();
    form.requestSubmit();
  } else if (event.key === "/" && dialog) {
    event.preventDefault();
    if (dialog.open) dialog.close();
    else dialog.showModal();
  }
}

document.addEventListener("keydown", onKey);
