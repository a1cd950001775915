// The user page's import (templates/chat/_transfer.html): the file is sent
// with XMLHttpRequest, whose upload events give a progress bar (fetch has
// none), then the server's result (chat/_import_result.html) is shown. A file
// over the limit is refused here before it is sent; the server checks again.

import { gettext, interpolate, number } from "./i18n.js";

// The form's parts are there whenever the form is.
const form = /** @type {HTMLFormElement | null} */ (document.getElementById("import-form"));
const progress = /** @type {HTMLProgressElement} */ (document.getElementById("import-progress"));
const status = /** @type {HTMLElement} */ (document.getElementById("import-status"));
const result = /** @type {HTMLElement} */ (document.getElementById("import-result"));
const button = /** @type {HTMLButtonElement} */ (document.getElementById("import-button"));

/** @param {number} bytes */
function megabytes(bytes) {
  return interpolate(gettext("%(size)s MB"), { size: number(bytes / 1e6, bytes < 1e7 ? 1 : 0) });
}

/** @param {string} text */
function showError(text) {
  const p = document.createElement("p");
  p.className = "import-error error-text";
  p.setAttribute("role", "alert");
  p.textContent = text;
  result.replaceChildren(p);
}

function finish() {
  button.disabled = false;
  progress.hidden = true;
  status.textContent = "";
}

form?.addEventListener("submit", (event) => {
  event.preventDefault();
  const file = /** @type {FileList} */ (/** @type {HTMLInputElement} */ (form.elements.namedItem("file")).files)[0];
  if (!file) return;
  const max = Number(form.dataset.maxBytes);
  if (file.size > max) {
    showError(
      interpolate(gettext("The file is too large: imports are limited to %(limit)s. Nothing was imported."), {
        limit: form.dataset.limit,
      }),
    );
    return;
  }
  const xhr = new XMLHttpRequest();
  xhr.open("POST", form.action);
  xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
  xhr.setRequestHeader("X-CSRFToken", /** @type {HTMLInputElement} */ (form.elements.namedItem("csrfmiddlewaretoken")).value);
  xhr.upload.addEventListener("progress", (e) => {
    if (!e.lengthComputable) return;
    progress.value = Math.round((e.loaded / e.total) * 100);
    status.textContent = interpolate(gettext("Uploading… %(done)s of %(total)s"), {
      done: megabytes(e.loaded),
      total: megabytes(e.total),
    });
  });
  xhr.upload.addEventListener("load", () => {
    // Uploaded: the server reads and stores it (indeterminate from here).
    progress.removeAttribute("value");
    status.textContent = gettext("Importing…");
  });
  xhr.addEventListener("load", () => {
    finish();
    if ((xhr.getResponseHeader("Content-Type") || "").startsWith("text/html")) {
      // Our own template, its text escaped by Django.
      result.innerHTML = xhr.responseText;
      if (xhr.status === 200) form.reset();
    } else {
      showError(xhr.responseText || interpolate(gettext("The import failed (HTTP %(status)s)."), { status: xhr.status }));
    }
  });
  xhr.addEventListener("error", () => {
    finish();
    showError(gettext("The upload was interrupted: check the connection and try again. Nothing was imported."));
  });
  button.disabled = true;
  progress.hidden = false;
  progress.value = 0;
  result.replaceChildren();
  status.textContent = gettext("Uploading…");
  xhr.send(new FormData(form));
});
