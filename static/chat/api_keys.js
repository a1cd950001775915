// The user page's API keys (templates/chat/_api_keys.html): a new key is
// selected and copied on request. The section is swapped whole by its forms,
// so the listeners sit on the document.

import { copyToClipboard } from "./clipboard.js";
import { gettext } from "./i18n.js";

document.addEventListener("focusin", (event) => {
  const target = /** @type {HTMLInputElement} */ (event.target);
  if (target.classList?.contains("api-key-value")) target.select();
});

document.addEventListener("click", async (event) => {
  const button = /** @type {Element} */ (event.target).closest?.(/** @type {"button"} */ (".copy-api-key"));
  if (!button) return;
  const key = /** @type {HTMLInputElement} */ (document.getElementById(button.dataset.copies ?? ""));
  const copied = await copyToClipboard(key.value).catch(() => false);
  button.textContent = copied ? gettext("Copied") : gettext("Copy failed: select it and copy");
});

// A refusal (403: the site's API closed after the page was loaded) replaces
// the section too, so that it says why; htmx swaps no 4xx by itself
// (the htmx-config in templates/_base.html).
document.body.addEventListener("htmx:beforeSwap", (event) => {
  const section = document.getElementById("api-keys");
  if (event.detail.xhr.status === 403 && section?.contains(event.detail.elt)) {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});
