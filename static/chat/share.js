// The conversation page's share dialog: the Share button opens it (htmx fills
// it), and a new link's address is selected and copied on request.

import { copyToClipboard } from "./clipboard.js";
import { gettext } from "./i18n.js";

const button = document.getElementById("share-button");
const dialog = /** @type {HTMLDialogElement | null} */ (document.getElementById("share-dialog"));

function wire() {
  if (!button || !dialog) return;
  // Reopened, the dialog shows its placeholder until htmx brings the links as
  // they are now: the last visit's buttons (a link since revoked, a form
  // already sent) would otherwise be there to click meanwhile, and their
  // answers dropped when the fresh body replaces them.
  const body = /** @type {HTMLElement} */ (document.getElementById("share-dialog-body"));
  const placeholder = body.innerHTML;
  dialog.addEventListener("close", () => {
    body.innerHTML = placeholder;
  });
  button.addEventListener("click", () => dialog.showModal());
  dialog.addEventListener("focusin", (event) => {
    const target = /** @type {HTMLInputElement} */ (event.target);
    if (target.classList.contains("share-url")) target.select();
  });
  dialog.addEventListener("click", async (event) => {
    const copy = /** @type {Element} */ (event.target).closest(".copy-share-url");
    if (!copy) return;
    const copied = await copyToClipboard(/** @type {HTMLInputElement} */ (dialog.querySelector(".share-url")).value).catch(() => false);
    copy.textContent = copied ? gettext("Copied") : gettext("Copy failed: select it and copy");
  });
}

wire();
