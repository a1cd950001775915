"""No Python module of the project grows past 450 lines (migrations aside,
which Django writes): a module that long holds more than one thing, and its
package should say what (docs/development.md)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 450
TREES = ("chat", "chatsite", "tests", "bench", "scripts", "docs")
LEFT_OUT = ("migrations", "node_modules", "samples")


def modules() -> list[Path]:
    return sorted(
        path
        for tree in TREES
        for path in (ROOT / tree).rglob("*.py")
        if not set(path.relative_to(ROOT).parts) & set(LEFT_OUT)
    )


def test_every_module_is_under_the_limit() -> None:
    found = modules()
    assert len(found) > 300  # the walk sees the tree
    long = [
        f"{path.relative_to(ROOT)}: {lines} lines"
        for path in found
        if (lines := len(path.read_text().splitlines())) > LIMIT
    ]
    assert not long, "\n".join(long)
