// Copying text to the clipboard, with or without the Clipboard API.

// `source` is a string or a promise of one (fetched on click: ClipboardItem
// keeps the click's user activation while the text is on its way).
/** @param {string | Promise<string>} source */
export async function copyToClipboard(source) {
  if (typeof source !== "string" && navigator.clipboard?.write && window.ClipboardItem) {
    try {
      const blob = Promise.resolve(source).then((text) => new Blob([text], { type: "text/plain" }));
      await navigator.clipboard.write([new ClipboardItem({ "text/plain": blob })]);
      return true;
    } catch {
      // fall through to the other ways
    }
  }
  const text = await source;
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return copyWithSelection(text); // plain http on a LAN has no Clipboard API
  }
}

/** @param {string} text */
function copyWithSelection(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand("copy");
  } catch {
    copied = false;
  }
  area.remove();
  return copied;
}
