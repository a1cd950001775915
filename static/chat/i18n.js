// The interface's words in the page's language (<html lang>, chosen by the
// server: chat/web/account/languages.py). Strings come from Django's JavaScript catalog,
// loaded by templates/_base.html before the modules; without it (a page that
// does not load it) the English is shown as written. Mark every shown string
// with gettext / ngettext (tests/test_translations.py finds unmarked ones and
// `manage.py makemessages -d djangojs` collects the marked).

const catalog = () => globalThis.django ?? {};

export const language = document.documentElement.lang || "en";

/** @param {string} text */
export function gettext(text) {
  const translate = catalog().gettext;
  return translate ? translate(text) : text;
}

/**
 * @param {string} singular
 * @param {string} plural
 * @param {number} count
 */
export function ngettext(singular, plural, count) {
  const translate = catalog().ngettext;
  if (translate) return translate(singular, plural, count);
  return count === 1 ? singular : plural;
}

// interpolate("%(count)s tokens", { count: 3 }): named values only.
/**
 * @param {string} format
 * @param {Record<string, unknown>} values
 */
export function interpolate(format, values) {
  return format.replace(/%\((\w+)\)s/g, (_, name) => String(values[name]));
}

const whole = new Intl.NumberFormat(language, { maximumFractionDigits: 0 });
const tenths = new Intl.NumberFormat(language, { minimumFractionDigits: 1, maximumFractionDigits: 1 });

// A count or a rate in the language's digits and grouping.
/**
 * @param {number} value
 * @param {number} [digits]
 */
export function number(value, digits = 0) {
  return (digits ? tenths : whole).format(value);
}

// "1.2 s" under ten seconds, "12 s" above (as chat/templatetags/chat_tags.py).
/** @param {number} ms */
export function seconds(ms) {
  const s = ms / 1000;
  return interpolate(gettext("%(seconds)s s"), { seconds: s < 10 ? number(s, 1) : number(Math.round(s)) });
}
