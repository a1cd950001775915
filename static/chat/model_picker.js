// The composer's model picker (templates/chat/_model_picker.html): a button and
// a listbox with a filter. Type to filter, ↑ ↓ to move, Enter to choose, Esc to
// close. On a conversation it sets the model through the settings panel (its
// select, then the form's htmx save: one endpoint, its notice and errors); on
// the home page, the model the new conversation starts with. Which models are
// loaded is asked when the menu opens, never while the page loads.

// Typed as present: a page without it has `wire` return at once, and nothing
// else here runs.
const picker = /** @type {HTMLElement} */ (document.getElementById("model-picker"));
const LOADED_FRESH_MS = 10_000;
/** @type {{active: HTMLElement | null, loadedAt: number}} */
const state = { active: null, loadedAt: -Infinity };

function parts() {
  return {
    button: /** @type {HTMLButtonElement} */ (document.getElementById("model-picker-button")),
    popup: /** @type {HTMLElement} */ (document.getElementById("model-picker-popup")),
    filter: /** @type {HTMLInputElement} */ (document.getElementById("model-picker-filter")),
    empty: /** @type {HTMLElement} */ (document.getElementById("model-picker-empty")),
    options: /** @type {HTMLElement[]} */ ([...picker.querySelectorAll(".model-option")]),
  };
}

function visible() {
  return parts().options.filter((option) => !option.hidden);
}

/** @param {HTMLElement | null} option */
function activate(option) {
  const { filter, options } = parts();
  state.active = option;
  for (const each of options) each.classList.toggle("active", each === option);
  if (option) {
    filter.setAttribute("aria-activedescendant", option.id);
    option.scrollIntoView({ block: "nearest" });
  } else filter.removeAttribute("aria-activedescendant");
}

async function showLoaded() {
  if (performance.now() - state.loadedAt < LOADED_FRESH_MS) return;
  state.loadedAt = performance.now();
  /** @type {number[]} */
  let loaded;
  try {
    const response = await fetch(/** @type {string} */ (picker.dataset.loadedUrl), { credentials: "same-origin" });
    if (!response.ok) return;
    ({ loaded } = await response.json());
  } catch {
    return; // the badges are a hint: without them the menu still works
  }
  for (const option of parts().options) {
    /** @type {HTMLElement} */ (option.querySelector(".picker-loaded")).hidden = !loaded.includes(Number(option.dataset.value));
  }
}

function open() {
  const { button, popup, filter, options } = parts();
  popup.hidden = false;
  button.setAttribute("aria-expanded", "true");
  filter.value = "";
  applyFilter();
  activate(options.find((option) => option.getAttribute("aria-selected") === "true") ?? visible()[0] ?? null);
  filter.focus();
  showLoaded();
}

/** @param {{focus?: boolean}} [options] */
function close({ focus = true } = {}) {
  const { button, popup } = parts();
  if (popup.hidden) return;
  popup.hidden = true;
  button.setAttribute("aria-expanded", "false");
  if (focus) button.focus();
}

function applyFilter() {
  const { filter, empty, options } = parts();
  const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const option of options) option.hidden = !words.every((word) => /** @type {string} */ (option.dataset.search).includes(word));
  const shown = visible();
  empty.hidden = shown.length > 0 || options.length === 0;
  if (!state.active || !shown.includes(state.active)) activate(shown[0] ?? null);
}

/** @param {HTMLElement} option */
function choose(option) {
  for (const each of parts().options) each.setAttribute("aria-selected", String(each === option));
  close();
  const home = /** @type {HTMLInputElement | null} */ (document.getElementById("home-model"));
  if (home) {
    home.value = /** @type {string} */ (option.dataset.value);
    /** @type {Element} */ (picker.querySelector(".model-name-ref")).textContent = /** @type {string} */ (option.dataset.name);
    document.getElementById("home-input")?.focus();
    return;
  }
  const panel = /** @type {HTMLFormElement | null} */ (document.getElementById("settings-panel"));
  const select = panel?.querySelector(/** @type {"select"} */ ("#id_model_profile"));
  if (!panel || !select) return;
  select.value = /** @type {string} */ (option.dataset.value);
  panel.requestSubmit(); // htmx saves it; the names follow (composer.js, followModelName)
  document.getElementById("composer-input")?.focus();
}

/** @param {KeyboardEvent} event */
function onFilterKey(event) {
  const shown = visible();
  const at = state.active ? shown.indexOf(state.active) : -1;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    if (!shown.length) return;
    const step = event.key === "ArrowDown" ? 1 : -1;
    activate(shown[(at + step + shown.length) % shown.length]);
  } else if (event.key === "Home" || event.key === "End") {
    if (!shown.length) return;
    event.preventDefault();
    activate(event.key === "Home" ? shown[0] : shown[shown.length - 1]);
  } else if (event.key === "Enter") {
    event.preventDefault();
    if (state.active) choose(state.active);
  } else if (event.key === "Escape") {
    event.preventDefault(); // not the page's Esc (which stops an answer)
    close();
  } else if (event.key === "Tab") {
    close({ focus: false });
  }
}

function wire() {
  if (!picker) return;
  const { button, filter, popup } = parts();
  button.addEventListener("click", () => (popup.hidden ? open() : close()));
  button.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    open();
  });
  filter.addEventListener("input", applyFilter);
  filter.addEventListener("keydown", onFilterKey);
  popup.addEventListener("click", (event) => {
    const option = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest(".model-option"));
    if (option) choose(option);
  });
  document.addEventListener("pointerdown", (event) => {
    if (!picker.contains(/** @type {Node | null} */ (event.target))) close({ focus: false });
  });
  // The settings panel changed the model (its select): the list follows.
  document.body.addEventListener("htmx:afterSettle", () => {
    const value = document.querySelector(/** @type {"select"} */ ("#settings-panel #id_model_profile"))?.value;
    if (value === undefined) return;
    for (const option of parts().options) option.setAttribute("aria-selected", String(option.dataset.value === value));
  });
  picker.dataset.ready = "1"; // clicks are handled from here on (the tests wait for it)
}

wire();
