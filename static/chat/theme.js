// The sidebar's theme select (templates/chat/_theme_select.html): the page takes
// the theme at once (html[data-theme], and the code highlighting's sheets,
// templates/chat/_stream_head.html), and htmx saves it for the next pages. A
// save that fails puts the theme back (the sidebar shows why, sidebar.js).

const select = /** @type {HTMLSelectElement | null} */ (document.getElementById("theme-select"));

const SHEET_MEDIA = {
  light: { light: "all", dark: "not all", system: "(prefers-color-scheme: light)" }, // i18n: not text
  dark: { light: "not all", dark: "all", system: "(prefers-color-scheme: dark)" }, // i18n: not text
};

/** @param {string} theme */
function apply(theme) {
  document.documentElement.dataset.theme = theme;
  for (const sheet of document.querySelectorAll(/** @type {"link"} */ ("link[data-code-theme]"))) {
    const media = /** @type {Record<string, Record<string, string>>} */ (SHEET_MEDIA);
    sheet.media = media[/** @type {string} */ (sheet.dataset.codeTheme)][theme];
  }
}

function wire() {
  if (!select) return;
  let saved = select.value;
  select.addEventListener("change", () => apply(select.value));
  /** @type {HTMLFormElement} */ (select.form).addEventListener("htmx:afterRequest", (event) => {
    if (event.detail.successful) saved = select.value;
    else {
      select.value = saved;
      apply(saved);
    }
  });
}

wire();
