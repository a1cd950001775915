// The composer's attachments (templates/chat/_composer.html): files added by
// the attach button, a drop on the conversation or a paste go up at once, one
// XMLHttpRequest each (its upload events give the chip's progress bar; fetch
// has none), while the user keeps typing. Each file is a chip (name, size, the
// tokens it will cost, remove; a thumbnail for a picture; why it failed, with
// retry). A question takes the uploaded ones with it (`takeForSend`); a refused
// question gives them back (`giveBack`, from turn.js). What the browser knows
// (size, count, type, a model that cannot read images) is refused here before
// anything is sent; the server checks it all again.

import { gettext, interpolate, ngettext, number } from "./i18n.js";
import { csrfToken, owner, showAlert } from "./page.js";

// The files in the composer, in order, and the sends waiting for their uploads.
/**
 * @typedef {object} Item  a file in the composer, from its chip to the question it goes with
 * @property {File} file
 * @property {string} name
 * @property {number} size
 * @property {boolean} image
 * @property {string} status  "uploading", "ready" or "failed"
 * @property {string | null} id  the server's, once uploaded
 * @property {number | null} tokens
 * @property {string} note
 * @property {string} [error]
 * @property {boolean} [retryable]
 * @property {XMLHttpRequest | null} [xhr]
 * @property {HTMLElement} [chip]
 * @property {string} [preview]  an object URL of the picture
 * @property {boolean} [removed]
 * @property {boolean} [blind]  a picture the current model cannot see
 */

const tray = {
  /** @type {Item[]} */
  items: [],
  /** @type {(() => void)[]} */
  idle: [], // resolvers of uploadsSettled()
};

// ---------------------------------------------------------------- reading the composer

function composer() {
  return /** @type {Owner} */ (owner).composer;
}

/** @param {string} list */
function extensions(list) {
  return list
    .split(",")
    .map((ext) => ext.trim().toLowerCase())
    .filter(Boolean);
}

// The limits the server set on the composer (data attributes).
function limits() {
  const data = composer().dataset;
  return {
    url: /** @type {string} */ (data.attachUrl),
    maxBytes: Number(data.attachMaxBytes),
    maxFiles: Number(data.attachMaxFiles),
    accept: extensions(data.attachAccept ?? ""),
    images: extensions(data.attachImageAccept ?? ""),
    vision: data.vision === "1" || data.vision === "true",
    visionReason: visionReason(data.visionReason),
  };
}

// "qwen3:8b cannot see images: <why>", as the server words its refusal.
/** @param {string | undefined} why */
function visionReason(why) {
  const name = document.getElementById("model-label")?.dataset.modelName;
  return name ? interpolate(gettext("%(model)s cannot see images: %(reason)s"), { model: name, reason: why }) : /** @type {string} */ (why);
}

/** @param {string} name */
function extensionOf(name) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot).toLowerCase() : "";
}

// ---------------------------------------------------------------- words

/** @param {number} bytes */
function byteSize(bytes) {
  if (bytes < 1024) return interpolate(gettext("%(size)s B"), { size: number(bytes) });
  if (bytes < 1024 * 1024) return interpolate(gettext("%(size)s KB"), { size: number(bytes / 1024) });
  const mb = bytes / (1024 * 1024);
  const tenth = mb < 10 && Math.round(mb * 10) % 10 !== 0;
  return interpolate(gettext("%(size)s MB"), { size: tenth ? number(mb, 1) : number(mb) });
}

/** @param {number} tokens */
function tokenCount(tokens) {
  if (tokens < 10000) return interpolate(ngettext("~%(count)s token", "~%(count)s tokens", tokens), { count: number(tokens) });
  return interpolate(gettext("~%(thousands)sk tokens"), { thousands: number(Math.round(tokens / 1000)) });
}

/** @param {number} count */
function fileCount(count) {
  return interpolate(ngettext("%(count)s file", "%(count)s files", count), { count: number(count) });
}

// Upload news for screen readers, one polite message at a time.
/** @param {string} text */
function tell(text) {
  const status = /** @type {HTMLElement} */ (document.getElementById("attach-status"));
  status.textContent = "";
  status.textContent = text;
}

// ---------------------------------------------------------------- adding files

// Chromium names any pasted picture (a screenshot) "image.png"; give it a name
// that tells two apart.
/** @param {File} file */
function pastedName(file) {
  if (file.name && file.name !== "image.png") return file.name;
  const stamp = new Date().toISOString().slice(0, 19).replace("T", " ").replaceAll(":", ".");
  const ext = (file.type.split("/")[1] || "png").replace("jpeg", "jpg");
  return interpolate(gettext("Pasted image %(stamp)s.%(ext)s"), { stamp, ext });
}

// Why the browser will not send this file, or null.
/**
 * @param {File} file
 * @param {string} name
 * @param {boolean} image
 * @param {number} room
 * @param {ReturnType<typeof limits>} rules
 */
function refusal(file, name, image, room, rules) {
  if (image && !rules.vision) return `${name}: ${rules.visionReason}`;
  if (!rules.accept.includes(extensionOf(name))) {
    return interpolate(gettext("%(name)s: this type of file cannot be attached (%(accepted)s)."), {
      name,
      accepted: rules.accept.join(" "),
    });
  }
  if (file.size > rules.maxBytes) {
    return interpolate(gettext("%(name)s is %(size)s; the limit is %(limit)s a file. It was not uploaded."), {
      name,
      size: byteSize(file.size),
      limit: byteSize(rules.maxBytes),
    });
  }
  if (file.size === 0) return interpolate(gettext("%(name)s is empty. It was not uploaded."), { name });
  if (room <= 0) {
    return interpolate(
      ngettext("%(name)s: at most %(count)s file goes with one question.", "%(name)s: at most %(count)s files go with one question.", rules.maxFiles),
      { name, count: number(rules.maxFiles) },
    );
  }
  return null;
}

// Files from the button, a drop or a paste: those the browser can accept go up
// at once; the others are named in the alert, with why.
/**
 * @param {File[]} files
 * @param {{pasted?: boolean}} [options]
 */
export function addFiles(files, { pasted = false } = {}) {
  const rules = limits();
  const refused = [];
  let room = rules.maxFiles - tray.items.length;
  for (const file of files) {
    const name = pasted ? pastedName(file) : file.name;
    const image = rules.images.includes(extensionOf(name)) || (!extensionOf(name) && file.type.startsWith("image/"));
    const why = refusal(file, name, image, room, rules);
    if (why) {
      refused.push(why);
      continue;
    }
    room -= 1;
    /** @type {Item} */
    const item = { file, name, size: file.size, image, status: "uploading", id: null, tokens: null, note: "" };
    chipFor(item);
    tray.items.push(item);
    upload(item);
  }
  showAlert(refused.join(" "));
  showTray();
  const taken = files.length - refused.length;
  if (taken) tell(interpolate(ngettext("Uploading %(count)s file…", "Uploading %(count)s files…", taken), { count: number(taken) }));
}

// ---------------------------------------------------------------- chips

/**
 * @template {keyof ChipParts} K
 * @param {Item} item
 * @param {K} name
 * @returns {ChipParts[K]}
 */
function part(item, name) {
  return /** @type {ChipParts[K]} */ (/** @type {HTMLElement} */ (item.chip).querySelector(`.file-${name}`));
}

/**
 * The parts of a chip (templates/chat/_composer.html, #file-chip-template).
 * @typedef {object} ChipParts
 * @property {HTMLElement} name
 * @property {HTMLElement} size
 * @property {HTMLButtonElement} remove
 * @property {HTMLButtonElement} retry
 * @property {HTMLProgressElement} progress
 * @property {HTMLImageElement} thumb
 * @property {HTMLElement} icon
 * @property {HTMLElement} error
 * @property {HTMLElement} tokens
 * @property {HTMLElement} note
 */

/** @param {Item} item */
function chipFor(item) {
  const template = /** @type {HTMLTemplateElement} */ (document.getElementById("file-chip-template"));
  const chip = /** @type {HTMLElement} */ (/** @type {Element} */ (template.content.firstElementChild).cloneNode(true));
  item.chip = chip;
  chip.dataset.kind = item.image ? "image" : "document";
  part(item, "name").textContent = item.name;
  part(item, "name").title = item.name;
  part(item, "size").textContent = byteSize(item.size);
  part(item, "remove").setAttribute("aria-label", interpolate(gettext("Remove %(name)s"), { name: item.name }));
  part(item, "remove").title = gettext("Remove");
  part(item, "retry").setAttribute("aria-label", interpolate(gettext("Retry %(name)s"), { name: item.name }));
  part(item, "progress").setAttribute("aria-label", interpolate(gettext("Uploading %(name)s"), { name: item.name }));
  part(item, "remove").addEventListener("click", () => removeItem(item));
  part(item, "retry").addEventListener("click", () => upload(item));
  if (item.image) {
    // The picture at once, from the file itself; the server's thumbnail after.
    item.preview = URL.createObjectURL(item.file);
    showThumbnail(item, item.preview);
  }
  /** @type {HTMLElement} */ (document.getElementById("attachment-list")).append(chip);
}

/**
 * @param {Item} item
 * @param {string} src
 */
function showThumbnail(item, src) {
  const thumb = part(item, "thumb");
  thumb.src = src;
  thumb.hidden = false;
  part(item, "icon").classList.add("covered");
}

/** @param {Item} item */
function showStatus(item) {
  const chip = /** @type {HTMLElement} */ (item.chip);
  chip.dataset.status = item.status;
  part(item, "progress").hidden = item.status !== "uploading";
  part(item, "retry").hidden = item.status !== "failed" || !item.retryable;
  part(item, "error").textContent = item.status === "failed" ? (item.error ?? "") : ""; // i18n: not text
  part(item, "tokens").textContent = item.tokens == null ? "" : tokenCount(item.tokens);
  part(item, "note").textContent = item.status === "ready" ? item.note : ""; // i18n: not text
}

// The list and its sum ("2 files · ~1,840 tokens · 1 uploading"), shown with
// the chips, before the question is sent.
function showTray() {
  const list = /** @type {HTMLElement} */ (document.getElementById("attachment-list"));
  const summary = /** @type {HTMLElement} */ (document.getElementById("attach-summary"));
  list.hidden = tray.items.length === 0;
  summary.hidden = tray.items.length === 0;
  /** @type {Owner} */ (owner).input.required = tray.items.length === 0; // files may go without words
  if (!tray.items.length) {
    summary.textContent = "";
    return;
  }
  const counted = tray.items.filter((item) => item.tokens != null);
  const tokens = counted.reduce((sum, item) => sum + /** @type {number} */ (item.tokens), 0);
  const uploading = tray.items.filter((item) => item.status === "uploading").length;
  const failed = tray.items.filter((item) => item.status === "failed").length;
  const parts = [fileCount(tray.items.length)];
  if (counted.length) parts.push(interpolate(gettext("%(tokens)s with this question"), { tokens: tokenCount(tokens) }));
  if (uploading) parts.push(interpolate(gettext("%(count)s uploading"), { count: number(uploading) }));
  if (failed) parts.push(interpolate(gettext("%(count)s failed"), { count: number(failed) }));
  summary.textContent = parts.join(" · ");
  summary.dataset.tokens = String(tokens);
}

// ---------------------------------------------------------------- uploading

/**
 * @param {Item} item
 * @param {string} error
 * @param {boolean} retryable
 */
function failed(item, error, retryable) {
  item.status = "failed";
  item.error = error;
  item.retryable = retryable;
  showStatus(item);
  tell(interpolate(gettext("%(name)s did not upload: %(error)s"), { name: item.name, error }));
}

/**
 * @param {Item} item
 * @param {{id: string, tokens?: number | null, note?: string, name?: string, thumbnail_url?: string}} body  the server's answer
 */
function uploaded(item, body) {
  item.status = "ready";
  item.id = body.id;
  item.tokens = body.tokens ?? null;
  item.note = body.note ?? "";
  if (body.name && body.name !== item.name) {
    item.name = body.name;
    part(item, "name").textContent = body.name;
  }
  if (body.thumbnail_url) showThumbnail(item, body.thumbnail_url);
  showStatus(item);
  const done =
    item.tokens == null
      ? interpolate(gettext("%(name)s uploaded."), { name: item.name })
      : interpolate(gettext("%(name)s uploaded, %(tokens)s."), { name: item.name, tokens: tokenCount(item.tokens) });
  tell(item.note ? `${done} ${item.note}` : done);
}

/**
 * @param {XMLHttpRequest} xhr
 * @returns {string}
 */
function errorText(xhr) {
  try {
    const { error } = JSON.parse(xhr.responseText);
    if (error) return error;
  } catch {
    // not the server's JSON: a proxy's page, say
  }
  if (xhr.status === 413) return gettext("The file is larger than the server accepts.");
  return interpolate(gettext("The upload failed (HTTP %(status)s)."), { status: xhr.status });
}

// A refusal (a file too large, of the wrong type) would be refused again.
/** @param {number} status */
function retryable(status) {
  return status >= 500 || [0, 408, 429].includes(status);
}

/** @param {Item} item */
function upload(item) {
  const { url } = limits();
  const xhr = new XMLHttpRequest();
  item.xhr = xhr;
  item.status = "uploading";
  item.error = "";
  const progress = part(item, "progress");
  progress.value = 0;
  showStatus(item);
  showTray();
  xhr.open("POST", url);
  xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
  xhr.setRequestHeader("X-CSRFToken", csrfToken());
  xhr.upload.addEventListener("progress", (event) => {
    if (event.lengthComputable) progress.value = Math.round((event.loaded / event.total) * 100);
  });
  // Sent: the server reads and checks it (indeterminate from here).
  xhr.upload.addEventListener("load", () => progress.removeAttribute("value"));
  xhr.addEventListener("load", () => {
    if (item.removed) {
      if (xhr.status === 201) forget(JSON.parse(xhr.responseText).id);
      return;
    }
    if (xhr.status === 201) uploaded(item, JSON.parse(xhr.responseText));
    else failed(item, errorText(xhr), retryable(xhr.status));
    finished(item);
  });
  xhr.addEventListener("error", () => {
    if (item.removed) return;
    failed(item, gettext("The upload was interrupted: check the connection and retry."), true);
    finished(item);
  });
  xhr.addEventListener("abort", () => finished(item));
  const form = new FormData();
  form.append("file", item.file, item.name);
  // The server counts the tokens for (and asks about images of) the model of
  // the conversation's next answer, which a settings change may have changed
  // since the page was drawn: so no model is named here.
  const conversation = /** @type {HTMLElement} */ (document.getElementById("chat")).dataset.conversationId;
  if (conversation) form.append("conversation", conversation);
  xhr.send(form);
}

/** @param {Item} item */
function finished(item) {
  item.xhr = null;
  showTray();
  if (!isUploading()) for (const resolve of tray.idle.splice(0)) resolve();
}

export function isUploading() {
  return tray.items.some((item) => item.status === "uploading");
}

// Resolves once no file in the composer is still uploading.
/** @returns {Promise<void>} */
export function uploadsSettled() {
  if (!isUploading()) return Promise.resolve();
  return new Promise((resolve) => {
    tray.idle.push(resolve);
  });
}

export function hasFiles() {
  return tray.items.length > 0;
}

export function failedNames() {
  return tray.items.filter((item) => item.status === "failed").map((item) => item.name);
}

// ---------------------------------------------------------------- removing

// An unsent attachment the server keeps: it goes (a failure to say so leaves
// it unsent, and the server clears unsent files on its own).
/** @param {string} id */
function forget(id) {
  fetch(`${limits().url}${id}/`, {
    method: "DELETE",
    credentials: "same-origin",
    headers: { "X-CSRFToken": csrfToken(), "X-Requested-With": "XMLHttpRequest" },
  }).catch(() => {});
}

/** @param {Item} item */
function drop(item) {
  if (item.preview) URL.revokeObjectURL(item.preview);
  item.chip?.remove();
  tray.items = tray.items.filter((other) => other !== item);
}

/** @param {Item} item */
function removeItem(item) {
  const index = tray.items.indexOf(item);
  item.removed = true;
  if (item.xhr) item.xhr.abort();
  else if (item.id !== null) forget(item.id);
  drop(item);
  showTray();
  if (!isUploading()) for (const resolve of tray.idle.splice(0)) resolve();
  // Focus stays in the list (the next chip's remove), or goes to the field.
  const next = tray.items[Math.min(index, tray.items.length - 1)];
  (next ? part(next, "remove") : /** @type {Owner} */ (owner).input).focus();
  tell(interpolate(gettext("%(name)s removed."), { name: item.name }));
}

// ---------------------------------------------------------------- a question takes them

// The uploaded files go with the question: they leave the composer (kept here
// until the server stores the question or refuses it).
export function takeForSend() {
  const taken = tray.items.filter((item) => item.status === "ready");
  for (const item of taken) item.chip?.remove();
  tray.items = tray.items.filter((item) => item.status !== "ready");
  showTray();
  return taken;
}

/** @param {Item[]} items */
export function idsOf(items) {
  return items.map((item) => item.id);
}

// A refused or unconfirmed question: its files come back, before any added since.
/** @param {Item[]} items */
export function giveBack(items) {
  const list = /** @type {HTMLElement} */ (document.getElementById("attachment-list"));
  const back = items.filter((item) => !tray.items.includes(item));
  list.prepend(.../** @type {HTMLElement[]} */ (back.map((item) => item.chip)));
  tray.items = [...back, ...tray.items];
  showTray();
}

// The question was stored after all (a late echo): files given back and still
// untouched go, without deleting them (they are the message's now).
/** @param {Item[]} items */
export function sentAfterAll(items) {
  for (const item of items) if (tray.items.includes(item)) drop(item);
  showTray();
}

// The question is stored: its previews are no longer needed.
/** @param {Item[]} items */
export function sent(items) {
  for (const item of items) if (item.preview && !tray.items.includes(item)) URL.revokeObjectURL(item.preview);
}

// ---------------------------------------------------------------- images and the model

// The attach button offers documents only when the model cannot read images,
// and says why (its description and title).
export function followVision() {
  const rules = limits();
  const input = /** @type {HTMLInputElement} */ (document.getElementById("attach-input"));
  const button = /** @type {HTMLButtonElement} */ (document.getElementById("attach-button"));
  const accepted = rules.vision ? rules.accept : rules.accept.filter((ext) => !rules.images.includes(ext));
  input.accept = accepted.join(",");
  const each = interpolate(ngettext("Up to %(count)s file, %(size)s each.", "Up to %(count)s files, %(size)s each.", rules.maxFiles), {
    count: number(rules.maxFiles),
    size: byteSize(rules.maxBytes),
  });
  const images = rules.vision ? "" : interpolate(gettext("No images: %(reason)s"), { reason: rules.visionReason });
  /** @type {HTMLElement} */ (document.getElementById("attach-limits")).textContent = images ? `${each} ${images}` : each;
  button.title = rules.vision
    ? gettext("Attach files")
    : interpolate(gettext("Attach documents (%(reason)s)"), { reason: rules.visionReason });
  button.setAttribute("aria-label", rules.vision ? gettext("Attach files") : gettext("Attach documents"));
  composer().dataset.imagesOff = rules.vision ? "" : "1";
}

// A saved settings change may bring another model (templates/chat/_model_label.html,
// swapped in out of band): the composer follows what it can read.
function followModel() {
  document.body.addEventListener("htmx:afterSettle", () => {
    const label = document.getElementById("model-label");
    if (!label || label.dataset.vision === undefined) return;
    composer().dataset.vision = label.dataset.vision;
    composer().dataset.visionReason = label.dataset.visionReason ?? "";
    followVision();
    markPictures();
  });
}

// Pictures already attached cannot go to a model that does not see them: they
// say so (as the server would refuse them), and are ready again if the next
// model sees.
function markPictures() {
  const rules = limits();
  for (const item of tray.items) {
    if (!item.image || item.id === null) continue;
    if (!rules.vision && item.status === "ready") {
      item.blind = true;
      failed(item, rules.visionReason, false);
    } else if (rules.vision && item.blind) {
      item.blind = false;
      item.status = "ready";
      showStatus(item);
    }
  }
  showTray();
}

// ---------------------------------------------------------------- button, drop, paste

/** @param {DragEvent} event */
function carriesFiles(event) {
  return Array.from(event.dataTransfer?.types ?? []).includes("Files"); // i18n: not text
}

// Files dropped anywhere on the conversation or the composer. Dropped
// elsewhere (the sidebar), they are ignored: the browser would otherwise open
// the file in place of the page, and what was typed with it.
function wireDrop() {
  const area = /** @type {HTMLElement} */ (document.getElementById("chat"));
  for (const type of /** @type {const} */ (["dragover", "drop"])) {
    document.addEventListener(type, (event) => {
      if (carriesFiles(event)) event.preventDefault();
    });
  }
  let depth = 0; // dragenter/dragleave pairs: children enter and leave too
  const done = () => {
    depth = 0;
    delete area.dataset.dropping;
  };
  area.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event) || composer().hidden) return;
    event.preventDefault();
    depth += 1;
    area.dataset.dropping = "1";
  });
  area.addEventListener("dragover", (event) => {
    if (!carriesFiles(event) || composer().hidden) return;
    event.preventDefault();
    /** @type {DataTransfer} */ (event.dataTransfer).dropEffect = "copy";
  });
  area.addEventListener("dragleave", () => {
    depth -= 1;
    if (depth <= 0) done();
  });
  area.addEventListener("drop", (event) => {
    if (!carriesFiles(event) || composer().hidden) return;
    event.preventDefault();
    done();
    addFiles(Array.from(/** @type {DataTransfer} */ (event.dataTransfer).files));
    /** @type {Owner} */ (owner).input.focus({ preventScroll: true });
  });
}

// A pasted screenshot (files and no text on the clipboard) is attached; text
// pastes as text, even when the clipboard also holds a picture of it.
function wirePaste() {
  /** @type {Owner} */ (owner).input.addEventListener("paste", (event) => {
    const data = event.clipboardData;
    if (!data?.files.length || data.types.includes("text/plain")) return;
    event.preventDefault();
    addFiles(Array.from(data.files), { pasted: true });
  });
}

export function wireAttachments() {
  const input = /** @type {HTMLInputElement} */ (document.getElementById("attach-input"));
  /** @type {HTMLElement} */ (document.getElementById("attach-button")).addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    addFiles(Array.from(input.files ?? []));
    input.value = ""; // the same file may be chosen again
    /** @type {Owner} */ (owner).input.focus({ preventScroll: true });
  });
  followVision();
  followModel();
  wireDrop();
  wirePaste();
}
