// The conversation page's share dialog: the Share button opens it (htmx fills
// it), and a new link's address is selected and copied on request.

import { copyToClipboard } from "./clipboard.js";
import { gettext } from "./i18n.js";

const button = document.getElementById("share-button");
const dialog = document.getElementById("share-dialog");

function wire() {
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
