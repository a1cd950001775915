"""axe-core (static/vendor/axe-core, vendored by scripts/vendor.sh) run on the
page under test, and its serious or critical violations in words.

No page loads axe: its source is evaluated through Playwright's `page.evaluate`,
which runs over the DevTools protocol and is not subject to the page's Content
Security Policy (chat.web.security), so the pages are checked under the policy
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
