"""Close codes are written in one place on each side: `chat/sockets/close_codes.py`
for the server, `static/chat/close_codes.js` for the browser, with the same
names and values."""

from __future__ import annotations

import re
from pathlib import Path

from chat.sockets import close_codes

ROOT = Path(__file__).resolve().parents[3]
JS = ROOT / "static" / "chat" / "close_codes.js"
EXPORT = re.compile(r"^export const (CLOSE_[A-Z0-9_]+) = (\d+);$")
ASSIGNMENT = re.compile(r"^(CLOSE_[A-Z0-9_]+) = (\d+)\b", re.MULTILINE)


def python_codes() -> dict[str, int]:
    return {
        name: value
        for name, value in vars(close_codes).items()
        if name.startswith("CLOSE_") and isinstance(value, int)
    }


def js_codes() -> dict[str, int]:
    assert JS.exists(), (
        f"{JS.relative_to(ROOT)} is missing: the browser's close codes, one line "
        "each, `export const CLOSE_<NAME> = <int>;`, named as in "
        "chat/sockets/close_codes.py"
    )
    exported: dict[str, int] = {}
    for line in JS.read_text().splitlines():
        match = EXPORT.match(line.strip())
        if match:
            exported[match[1]] = int(match[2])
    assert exported, f"no `export const CLOSE_<NAME> = <int>;` line in {JS.name}"
    return exported


def test_each_python_code_has_one_name():
    codes = python_codes()
    assert len(set(codes.values())) == len(codes), codes


def test_the_browser_codes_are_the_servers_by_name_and_value():
    server = python_codes()
    for name, value in js_codes().items():
        assert name in server, f"{name} is not in chat/sockets/close_codes.py"
        assert value == server[name], f"{name}: {value} in the JS, {server[name]}"


def test_the_browser_knows_every_code_it_does_not_reconnect_after():
    """The page gives up (no reconnect) on these: it must name each."""
    exported = js_codes()
    server = python_codes()
    for value in sorted(close_codes.FINAL):
        name = next(n for n, v in server.items() if v == value)
        assert exported.get(name) == value, f"{name} ({value}) missing in the JS"


def test_no_other_module_writes_a_close_code_of_its_own():
    server = set(python_codes().values())
    literal = re.compile(r"\b(" + "|".join(map(str, sorted(server))) + r")\b")
    for path in sorted((ROOT / "chat").rglob("*.py")):
        if path.name == "close_codes.py" or "migrations" in path.parts:
            continue
        text = path.read_text()
        assert not ASSIGNMENT.search(text), f"{path.relative_to(ROOT)} names a code"
        assert not re.search(r"code=\d", text), f"{path.relative_to(ROOT)}"
    for path in sorted((ROOT / "static" / "chat").glob("*.js")):
        if path == JS:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not literal.search(line), f"{path.name}:{number}: {line.strip()}"
