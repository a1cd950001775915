// The quiet quota line near the composer (templates/chat/_quota_line.html):
// each finished answer uses some of the user's quotas, so the line is fetched
// again, and shown once a limit is 80 % used.

export async function refreshQuotaLine() {
  const line = document.getElementById("quota-line");
  if (!line) return; // a read-only page has no composer
  let response;
  try {
    response = await fetch(/** @type {string} */ (line.dataset.url), { credentials: "same-origin" });
  } catch {
    return; // offline: the line stays as it was until the next answer
  }
  if (!response.ok) return;
  const holder = document.createElement("template");
  holder.innerHTML = (await response.text()).trim();
  const fresh = holder.content.getElementById("quota-line");
  if (fresh) line.replaceWith(fresh);
}
