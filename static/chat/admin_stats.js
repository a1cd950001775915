// The model-servers page polls its panel with htmx; say when a refresh failed.
// (A listener in a file, not an hx-on attribute: the CSP allows no eval.)
document.addEventListener("htmx:afterRequest", (event) => {
  if (/** @type {Element} */ (event.target).id !== "model-servers") return;
  /** @type {HTMLElement} */ (document.getElementById("model-servers-stale")).hidden = event.detail.successful;
});
