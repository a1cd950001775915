// The conversation page's share dialog: the Share button opens it (htmx fills
// it), and a new link's address is selected and copied on request.

import { copyToClipboard } from "./clipboard.js";
import { gettext } from "./i18n.js";

const button = document.getElementById("share-button");
const dialog = document.getElementById("share-dialog");

function wire() {
  // Reopened, the dialog shows its placeholder until htmx brings the links as
  // they are now: the last visit's buttons (a link since revoked, a form
  // already sent) would otherwise be there to click meanwhile, and their
  // answers dropped when the fresh body replaces them.
  const body = document.getElementById("share-dialog-body");
  const placeholder = body.innerHTML;
  dialog.addEventListener("close", () => {
    body.innerHTML = placeholder;
  });
  button.addEventListener("click", () => dialog.showModal());
  dialog.addEventListener("focusin", (event) => {
    if (event.target.classList.contains("share-url")) event.target.select();
  });
  dialog.addEventListener("click", async (event) => {
    const copy = event.target.closest(".copy-share-url");
    if (!copy) return;
    const copied = await copyToClipboard(dialog.querySelector(".share-url").value).catch(() => false);
    copy.textContent = copied ? gettext("Copied") : gettext("Copy failed: select it and copy");
  });
}

if (button && dialog) wire();
