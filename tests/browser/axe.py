"""axe-core (static/vendor/axe-core, vendored by scripts/vendor.sh) run on the
page under test, and its serious or critical violations in words.

No page loads axe: its source is evaluated through Playwright's `page.evaluate`,
which runs over the DevTools protocol and is not subject to the page's Content
Security Policy (chat.http.security), so the pages are checked under the policy
they ship with. (`page.add_script_tag(content=...)` would be an inline script,
which that policy refuses.)"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

SERIOUS = ("serious", "critical")

RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.map((n) => ({
      target: n.target.join(" "),
      summary: n.failureSummary,
    })),
  }));
}"""


@cache
def _source() -> str:
    path = Path(settings.BASE_DIR) / "static" / "vendor" / "axe-core" / "axe.min.js"
    return path.read_text()


def violations(page: Any) -> list[dict[str, Any]]:
    """axe's serious and critical violations on the page as it is now."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(_source())
    found: list[dict[str, Any]] = page.evaluate(RUN)
    return [v for v in found if v["impact"] in SERIOUS]


def describe(where: str, found: list[dict[str, Any]], nodes: int = 4) -> str:
    """The violations at `where` as lines: rule, impact, help, then the first
    `nodes` elements with axe's summary of what to fix."""
    lines = []
    for v in found:
        lines.append(f"{where}: {v['id']} ({v['impact']}): {v['help']}")
        for node in v["nodes"][:nodes]:
            summary = " ".join(str(node["summary"]).split())
            lines.append(f"    {node['target']}: {summary}")
        if len(v["nodes"]) > nodes:
            lines.append(f"    ... and {len(v['nodes']) - nodes} more")
    return "\n".join(lines)


# Whether the focused element shows a ring (its outline, or a spread
# box-shadow on a box around it), where its outline is drawn (offset and
# width) and which ancestor cuts it off: one that clips its overflow
# (overflow other than visible) and holds the element itself whole, but not
# its ring. An element already cut by that ancestor (scrolled partly away) is
# not the ring's fault.
CLIPPED_RING = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const box = el.getBoundingClientRect();
  if (!box.width || !box.height) return null;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "")
    + [...e.classList].map((c) => "." + c).join("");
  const style = getComputedStyle(el);
  if (style.outlineStyle === "none" || parseFloat(style.outlineWidth) === 0) {
    // A box around the control may be its ring (the composer's): a box-shadow
    // spread around it, 0 0 0 <n>px.
    for (let a = el.parentElement, up = 0; a && up < 3; a = a.parentElement, up++) {
      if (/0px 0px 0px [1-9]/.test(getComputedStyle(a).boxShadow)) return null;
    }
    return name(el) + ": no focus outline";
  }
  const grow = parseFloat(style.outlineOffset) + parseFloat(style.outlineWidth);
  const ring = [box.left - grow, box.top - grow, box.right + grow, box.bottom + grow];
  for (let a = el.parentElement; a; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.overflowX === "visible" && s.overflowY === "visible") continue;
    const r = a.getBoundingClientRect();
    const left = r.left + a.clientLeft, top = r.top + a.clientTop;
    const clip = [left, top, left + a.clientWidth, top + a.clientHeight];
    const inside = (b) => b[0] >= clip[0] - 0.5 && b[1] >= clip[1] - 0.5
      && b[2] <= clip[2] + 0.5 && b[3] <= clip[3] + 0.5;
    if (!inside([box.left, box.top, box.right, box.bottom])) return null;
    if (!inside(ring)) return name(el) + ": its focus ring is clipped by " + name(a);
  }
  return null;
}"""


def clipped_focus_rings(page: Any, presses: int) -> list[str]:
    """Tab through the page `presses` times (the keyboard, so :focus-visible
    applies); each focused element whose focus ring cannot be seen whole."""
    found: list[str] = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        problem = page.evaluate(CLIPPED_RING)
        if problem and problem not in found:
            found.append(problem)
    return found
