// The home page's composer (templates/chat/index.html): Enter posts the question,
// which creates the conversation; its page sends it (composer.js, sendFirstQuestion).
// Shift+Enter is a new line, as in the conversation's composer.

const form = /** @type {HTMLFormElement | null} */ (document.getElementById("home-composer"));
const input = /** @type {HTMLTextAreaElement} */ (document.getElementById("home-input"));

function wireHome() {
  if (!form) return; // no model set up yet
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    if (input.value.trim()) form.requestSubmit();
  });
  // One conversation per question, however often Enter is pressed meanwhile.
  form.addEventListener("submit", (event) => {
    if (form.dataset.sending || !input.value.trim()) {
      event.preventDefault();
      return;
    }
    form.dataset.sending = "1";
  });
  // Back to the page from the conversation (bfcache): it can send again.
  window.addEventListener("pageshow", () => delete form.dataset.sending);
  // Enter is handled from here on (a module runs after the page is shown: a
  // key pressed before is a new line). The browser tests wait for it.
  form.dataset.ready = "1";
}

wireHome();
