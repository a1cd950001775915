// The conversation list: a drawer behind the menu button on narrow screens;
// sections (Pinned, folders, date groups) rendered by the server
// (chat.web.sidebar), the date groups a page at a time as they are scrolled
// (htmx, the `.sidebar-more` sentinel); one "…" menu per entry; folders that
// fold away and take a dragged conversation. This module keeps the date-grouped
// list in order when an entry comes back to it or has new activity.

import { gettext } from "./i18n.js";

// Typed as present: a page without the sidebar runs nothing here (`wire`), and
// one with it has these parts (templates/chat/_sidebar.html); `menuButton`,
// `dated` and `main` are checked where used.
const sidebar = /** @type {HTMLElement} */ (document.getElementById("sidebar"));
const menuButton = document.getElementById("menu-button");
const closeButton = /** @type {HTMLElement} */ (document.getElementById("sidebar-close"));
const backdrop = /** @type {HTMLElement} */ (document.getElementById("sidebar-backdrop"));
const search = /** @type {HTMLInputElement} */ (document.getElementById("conversation-search"));
const lists = /** @type {HTMLElement} */ (document.getElementById("conversation-list"));
const dated = document.getElementById("dated-list");
const none = /** @type {HTMLElement} */ (document.getElementById("conversation-none"));
const errorBox = /** @type {HTMLElement} */ (document.getElementById("sidebar-error"));

const main = /** @type {HTMLElement | null} */ (document.querySelector(".main"));

// On a phone the open list covers the page: the page behind it takes no focus.
/**
 * @param {boolean} open
 * @param {{focus?: boolean}} [options]
 */
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

/** @param {string} text */
function showError(text) {
  errorBox.textContent = text;
  errorBox.hidden = !text;
}

// ---------------------------------------------------------------- the date groups

// An entry's place: newest activity first, then highest id (the server's order,
// chat.models.sidebar.page). `data-key` is microseconds since 1970.
/**
 * @typedef {[number, number]} Place
 * @param {HTMLElement} item
 * @returns {Place}
 */
function place(item) {
  return [Number(item.dataset.key), Number(item.id.slice(item.id.lastIndexOf("-") + 1))];
}

/**
 * @param {Place} a
 * @param {Place} b
 */
function newer(a, b) {
  return a[0] !== b[0] ? a[0] > b[0] : a[1] > b[1];
}

// The last entry loaded, from the sentinel's `after=<micros>-<id>`; null when
// everything is loaded.
/** @returns {Place | null} */
function loadedUpTo() {
  const more = /** @type {HTMLElement} */ (dated).querySelector(":scope > .sidebar-more");
  if (!more) return null;
  const after = new URL(/** @type {string} */ (more.getAttribute("hx-get")), location.href).searchParams.get("after");
  const [key, id] = (after ?? "").split("-").map(Number);
  return [key, id];
}

/** @param {string} group */
function heading(group) {
  const li = document.createElement("li");
  li.className = "group-heading";
  const title = document.createElement("h2");
  title.className = "group-title";
  title.textContent = group;
  li.append(title);
  return li;
}

// Moving a node out and back in takes the focus from whatever inside it had it
// (a rename or move form being typed in): it is given back.
/** @param {() => void} move */
function keepingFocus(move) {
  const active = /** @type {HTMLElement | null} */ (document.activeElement);
  move();
  if (active && active !== document.activeElement && active.isConnected) active.focus({ preventScroll: true });
}

// Entries in date order with one heading per group. An entry placed among them
// (unpinned, restored, out of a folder) that belongs below what is loaded yet
// is dropped: it comes with its page. Nothing moves when all is in order, so
// focus stays where it is.
function tidy() {
  if (!dated) return;
  const upTo = loadedUpTo();
  const items = /** @type {HTMLElement[]} */ ([...dated.querySelectorAll(":scope > .conversation-item")]);
  /** @type {HTMLElement[]} */
  const kept = [];
  for (const item of items) {
    if (item.dataset.place && item.dataset.place !== "dated") item.remove();
    else if (upTo && newer(upTo, place(item))) item.remove();
    else kept.push(item);
  }
  kept.sort((a, b) => (newer(place(a), place(b)) ? -1 : 1));
  /** @type {(string | HTMLElement)[]} */
  const wanted = [];
  /** @type {string | null | undefined} */
  let group = null;
  for (const item of kept) {
    if (item.dataset.group !== group) {
      group = item.dataset.group;
      wanted.push(/** @type {string} */ (group));
    }
    wanted.push(item);
  }
  const shown = [...dated.children].filter((li) => !li.classList.contains("sidebar-more"));
  const same =
    shown.length === wanted.length &&
    shown.every((li, n) =>
      typeof wanted[n] === "string"
        ? li.classList.contains("group-heading") && (li.textContent ?? "").trim() === wanted[n]
        : li === wanted[n],
    );
  if (!same) {
    const more = dated.querySelector(":scope > .sidebar-more");
    keepingFocus(() => {
      for (const li of shown) if (li.classList.contains("group-heading")) li.remove();
      for (const entry of wanted) dated.insertBefore(typeof entry === "string" ? heading(entry) : entry, more);
    });
  }
  const empty = document.getElementById("current-new");
  if (empty && !empty.children.length) empty.remove();
  none.hidden = lists.querySelector(".conversation-item") !== null;
}

// New activity in the open conversation (static/chat/socket.js): its entry
// goes to the top of Today, unless it is pinned or in a folder; an entry not
// loaded yet is fetched.
/** @param {number} id */
async function moveToToday(id) {
  if (!dated || document.getElementById("archived-banner")) return;
  let item = document.getElementById(`conversation-item-${id}`);
  if (item && !(item.parentElement === dated || item.parentElement?.id === "current-new")) return;
  if (!item) {
    const url = /** @type {string} */ (dated.dataset.itemUrl).replace("/0/", `/${id}/`);
    const response = await fetch(url, { headers: { "HX-Request": "true", "HX-Current-URL": location.href } });
    if (!response.ok) return;
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    item = /** @type {HTMLElement | null} */ (template.content.querySelector(".conversation-item"));
    if (!item || item.dataset.place !== "dated" || document.getElementById(item.id)) return;
    htmx.process(item);
  }
  const first = /** @type {HTMLElement | null} */ (dated.querySelector(":scope > .conversation-item"));
  const now = Date.now() * 1000;
  item.dataset.key = String(first && first !== item ? Math.max(now, Number(first.dataset.key) + 1) : now);
  // The same heading as the server's (chat/models/sidebar.py), in the same language.
  item.dataset.group = gettext("Today");
  const entry = item;
  keepingFocus(() => dated.prepend(entry));
  tidy();
}

// ---------------------------------------------------------------- menus

/** @type {{menu: HTMLElement, button: HTMLElement} | null} */
let openMenu = null;

/** @param {HTMLElement} menu */
function menuItems(menu) {
  return /** @type {HTMLElement[]} */ ([...menu.querySelectorAll('[role="menuitem"]')]);
}

/**
 * @param {HTMLElement} button
 * @param {"first" | "last" | null} [focus]
 */
function showMenu(button, focus = "first") {
  if (openMenu) closeMenu();
  const menu = /** @type {HTMLElement} */ (document.getElementById(/** @type {string} */ (button.getAttribute("aria-controls"))));
  menu.hidden = false;
  button.setAttribute("aria-expanded", "true");
  // Fixed to the button, so the scrolling list does not clip it.
  const box = button.getBoundingClientRect();
  const height = menu.offsetHeight;
  const below = box.bottom + height < window.innerHeight;
  menu.style.top = `${below ? box.bottom + 2 : Math.max(4, box.top - height - 2)}px`;
  menu.style.left = `${Math.max(4, box.right - menu.offsetWidth)}px`;
  openMenu = { menu, button };
  const items = menuItems(menu);
  if (focus) (focus === "last" ? items.at(-1) : items[0])?.focus();
}

/** @param {{returnFocus?: boolean}} [options] */
function closeMenu({ returnFocus = false } = {}) {
  if (!openMenu) return;
  const { menu, button } = openMenu;
  openMenu = null;
  menu.hidden = true;
  button.setAttribute("aria-expanded", "false");
  if (returnFocus && button.isConnected) button.focus();
}

/** @param {KeyboardEvent} event */
function onMenuKey(event) {
  const { menu } = /** @type {NonNullable<typeof openMenu>} */ (openMenu);
  const items = menuItems(menu);
  const at = items.indexOf(/** @type {HTMLElement} */ (document.activeElement));
  /** @param {number} n */
  const go = (n) => items[(n + items.length) % items.length].focus();
  if (event.key === "ArrowDown") go(at + 1);
  else if (event.key === "ArrowUp") go(at - 1);
  else if (event.key === "Home") go(0);
  else if (event.key === "End") go(items.length - 1);
  else if (event.key === "Escape") {
    event.stopPropagation();
    closeMenu({ returnFocus: true });
  } else if (event.key === "Tab") {
    closeMenu();
    return;
  } else return;
  event.preventDefault();
}

function wireMenus() {
  sidebar.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest(".item-menu-button"));
    if (button) {
      const open = openMenu?.button === button;
      if (open) closeMenu();
      // A click from the keyboard (Enter, Space) moves into the menu.
      else showMenu(button, event.detail === 0 ? "first" : null);
      return;
    }
    if (/** @type {Element} */ (event.target).closest('[role="menuitem"]')) closeMenu({ returnFocus: true });
  });
  sidebar.addEventListener("keydown", (event) => {
    const button = /** @type {HTMLElement | null | undefined} */ (/** @type {Element} */ (event.target).closest?.(".item-menu-button"));
    if (button && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      showMenu(button, event.key === "ArrowUp" ? "last" : "first");
    } else if (openMenu && openMenu.menu.contains(/** @type {Node} */ (event.target))) onMenuKey(event);
  });
  document.addEventListener("click", (event) => {
    const target = /** @type {Node | null} */ (event.target);
    if (openMenu && !openMenu.menu.contains(target) && !openMenu.button.contains(target)) closeMenu();
  });
  lists.addEventListener("scroll", () => closeMenu(), { passive: true });
}

// ---------------------------------------------------------------- folders

const FOLDED = "chatsite.foldedFolders";

function folded() {
  try {
    return new Set(JSON.parse(localStorage.getItem(FOLDED) ?? "[]"));
  } catch {
    return new Set();
  }
}

/**
 * @param {Element} toggle
 * @param {boolean} fold
 */
function setFolded(toggle, fold) {
  toggle.setAttribute("aria-expanded", String(!fold));
  /** @type {HTMLElement} */ (document.getElementById(/** @type {string} */ (toggle.getAttribute("aria-controls")))).hidden = fold;
}

/** @param {Element} root */
function applyFolded(root) {
  const ids = folded();
  for (const toggle of root.querySelectorAll(".folder-toggle")) {
    setFolded(toggle, ids.has(/** @type {HTMLElement} */ (toggle.closest(".folder-heading")).dataset.folderId));
  }
}

/** @param {Element} toggle */
function toggleFolder(toggle) {
  const id = /** @type {HTMLElement} */ (toggle.closest(".folder-heading")).dataset.folderId;
  const ids = folded();
  const fold = toggle.getAttribute("aria-expanded") === "true";
  if (fold) ids.add(id);
  else ids.delete(id);
  try {
    localStorage.setItem(FOLDED, JSON.stringify([...ids]));
  } catch {
    // (storage full or refused: the folder still folds for this page)
  }
  setFolded(toggle, fold);
}

/** @param {Element} form */
function cancelFolderForm(form) {
  /** @type {Element} */ (form.closest(".folder-form-slot")).replaceChildren();
}

// Drag a conversation onto a folder's heading: the same move as its menu's
// "Move to folder…" (the keyboard's way), its swaps out of band.
const DRAG_TYPE = "application/x-chatsite-conversation";
/** @type {HTMLElement | null} */
let dragged = null;

function wireDragging() {
  sidebar.addEventListener("dragstart", (event) => {
    const item = /** @type {HTMLElement | null | undefined} */ (/** @type {Element} */ (event.target).closest?.(".conversation-item[data-move-url]"));
    if (!item) return;
    dragged = item;
    const data = /** @type {DataTransfer} */ (event.dataTransfer);
    data.setData(DRAG_TYPE, item.id);
    data.effectAllowed = "move";
    item.classList.add("dragging");
  });
  sidebar.addEventListener("dragend", () => {
    dragged?.classList.remove("dragging");
    dragged = null;
    for (const target of sidebar.querySelectorAll(".drop-target")) target.classList.remove("drop-target");
  });
  sidebar.addEventListener("dragover", (event) => {
    const target = /** @type {Element} */ (event.target).closest?.(".folder-heading");
    if (!target || !dragged) return;
    event.preventDefault();
    /** @type {DataTransfer} */ (event.dataTransfer).dropEffect = "move";
    target.classList.add("drop-target");
  });
  sidebar.addEventListener("dragleave", (event) => {
    const target = /** @type {Element} */ (event.target).closest?.(".folder-heading");
    if (target && !target.contains(/** @type {Node | null} */ (event.relatedTarget))) target.classList.remove("drop-target");
  });
  sidebar.addEventListener("drop", (event) => {
    const target = /** @type {HTMLElement | null | undefined} */ (/** @type {Element} */ (event.target).closest?.(".folder-heading"));
    if (!target || !dragged) return;
    event.preventDefault();
    target.classList.remove("drop-target");
    htmx.ajax("POST", /** @type {string} */ (dragged.dataset.moveUrl), {
      source: dragged,
      values: { folder: /** @type {string} */ (target.dataset.folderId) },
      swap: "none",
    });
  });
}

// ---------------------------------------------------------------- wiring

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
  wireMenus();
  wireDragging();
  applyFolded(sidebar);
  sidebar.addEventListener("click", (event) => {
    const toggle = /** @type {Element} */ (event.target).closest(".folder-toggle");
    if (toggle) toggleFolder(toggle);
    const cancel = /** @type {Element} */ (event.target).closest(".folder-cancel");
    if (cancel) cancelFolderForm(/** @type {HTMLFormElement} */ (cancel.closest("form")));
  });
  // Escape in a rename, move or folder form cancels it.
  lists.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    const form = /** @type {Element} */ (event.target).closest?.("form");
    if (!form) return;
    event.stopPropagation();
    if (form.classList.contains("folder-form")) cancelFolderForm(form);
    else form.querySelector(/** @type {"button"} */ (".rename-cancel"))?.click();
  });
  document.body.addEventListener("htmx:beforeRequest", () => showError(""));
  document.body.addEventListener("htmx:responseError", (event) => {
    if (!sidebar.contains(event.detail.elt) && event.detail.elt !== document.body) return;
    const text = event.detail.xhr.responseText;
    showError(text && text.length < 300 ? text : gettext("That did not work. Try again."));
  });
  document.body.addEventListener("htmx:sendError", () => showError(gettext("The server cannot be reached.")));
  document.body.addEventListener("htmx:load", (event) => applyFolded(event.detail.elt));
  // An entry that moves away (pinned, archived, filed) takes the focus with it:
  // it goes to the next entry of its list (past a date group's heading if it
  // was the last of its group), else the one before, instead of the page's start.
  /** @type {HTMLElement | null} */
  let focusAfter = null;
  document.body.addEventListener("htmx:oobBeforeSwap", (event) => {
    const gone = event.detail.target;
    if (!gone.contains(document.activeElement) || !gone.classList.contains("conversation-item")) return;
    const entries = [.../** @type {HTMLElement} */ (gone.parentElement).children].filter((li) => li.classList.contains("conversation-item"));
    const at = entries.indexOf(gone);
    focusAfter = (entries[at + 1] ?? entries[at - 1])?.querySelector("a") ?? null;
  });
  document.body.addEventListener("htmx:afterSettle", () => {
    if (focusAfter?.isConnected && (document.activeElement ?? document.body) === document.body) focusAfter.focus();
    focusAfter = null;
  });
  // After a swap: the date groups in order, and the page's title if this
  // conversation was renamed.
  document.body.addEventListener("htmx:afterSettle", () => {
    tidy();
    const current = lists.querySelector('a[aria-current="page"]');
    const title = document.getElementById("conversation-title");
    if (current && title && title.textContent !== current.textContent) {
      title.textContent = current.textContent;
      document.title = `${current.textContent} · chatsite`;
    }
  });
  document.addEventListener("chat:activity", (event) => moveToToday(event.detail.id));
}

if (sidebar) wire();
