// The conversation list: a drawer behind the menu button on narrow screens,
// filtered as you type, renamed and deleted through small htmx views.

const sidebar = document.getElementById("sidebar");
const menuButton = document.getElementById("menu-button");
const closeButton = document.getElementById("sidebar-close");
const backdrop = document.getElementById("sidebar-backdrop");
const search = document.getElementById("conversation-search");
const items = document.getElementById("conversation-list");
const none = document.getElementById("conversation-none");
const errorBox = document.getElementById("sidebar-error");

const main = document.querySelector(".main");

// On a phone the open list covers the page: the page behind it takes no focus.
function setOpen(open, { focus = true } = {}) {
  document.body.classList.toggle("sidebar-open", open);
  menuButton?.setAttribute("aria-expanded", String(open));
  backdrop.hidden = !open;
  if (main) main.inert = open;
  if (!focus) return;
  if (open) search.focus();
  else menuButton?.focus();
}

function isOpen() {
  return document.body.classList.contains("sidebar-open");
}

function filter() {
  const query = search.value.trim().toLowerCase();
  let shown = 0;
  for (const item of items.children) {
    const match = !query || (item.dataset.title ?? "").includes(query);
    item.hidden = !match;
    if (match) shown++;
  }
  none.hidden = shown > 0 || (!query && items.children.length > 0);
  if (!items.children.length) none.textContent = "No conversations yet.";
  else if (query) none.textContent = "No conversation matches.";
}

function showError(text) {
  errorBox.textContent = text;
  errorBox.hidden = !text;
}

function wire() {
  menuButton?.addEventListener("click", () => setOpen(!isOpen()));
  closeButton.addEventListener("click", () => setOpen(false));
  backdrop.addEventListener("click", () => setOpen(false));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && isOpen()) setOpen(false);
  });
  // Wide again (a rotated tablet): the list is beside the page, not over it.
  window.matchMedia("(max-width: 760px)").addEventListener("change", (event) => {
    if (!event.matches && isOpen()) setOpen(false, { focus: false });
  });
  search.addEventListener("input", filter);
  search.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && search.value) {
      event.stopPropagation();
      search.value = "";
      filter();
    }
  });
  // Escape in the rename field cancels it.
  items.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target.name === "title") {
      event.stopPropagation();
      event.target.closest("form").querySelector(".rename-cancel").click();
    }
  });
  document.body.addEventListener("htmx:beforeRequest", () => showError(""));
  document.body.addEventListener("htmx:responseError", (event) => {
    if (!sidebar.contains(event.detail.elt)) return;
    const text = event.detail.xhr.responseText;
    showError(text && text.length < 300 ? text : "That did not work. Try again.");
  });
  document.body.addEventListener("htmx:sendError", () => showError("The server cannot be reached."));
  // After a rename or delete: the filter, and the page's title if it was this one.
  document.body.addEventListener("htmx:afterSwap", () => {
    filter();
    const current = items.querySelector('a[aria-current="page"]');
    const title = document.getElementById("conversation-title");
    if (current && title && title.textContent !== current.textContent) {
      title.textContent = current.textContent;
      document.title = `${current.textContent} · chatsite`;
    }
  });
}

if (sidebar) wire();
