// Every signed-in page's shortcuts: Ctrl+Shift+O (⌘⇧O) a new conversation,
// Ctrl+/ (⌘/) the list of shortcuts (templates/chat/_shortcuts_dialog.html).
// Ctrl+K is search.js's; Esc and ↑ are the conversation page's (composer.js).

const dialog = document.getElementById("shortcuts-dialog");

function command(event) {
  return (event.ctrlKey || event.metaKey) && !event.altKey;
}

function onKey(event) {
  if (!command(event) || event.defaultPrevented) return;
  if (event.shiftKey && event.key.toLowerCase() === "o") {
    const form = document.querySelector(".new-chat-form");
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
