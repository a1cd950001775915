"""Markdown rendering time, server and browser, for ordinary and hostile answers.

An answer is rendered on the server (``chat/rendering/markdown.py``: markdown-it-py with
the math rule of ``chat/rendering/math.py``, then nh3) for every page view, and in
the browser (``static/chat/markdown.js``) as it streams. Every rule must be
linear in the text, or one answer holds the process (and its other streams) for
seconds: ``"$1" × 7,500`` took 15 s when the inline math scan was quadratic.

Rows: an ordinary 20,000-character answer, ``"$1" × 7,500``, 100,000
characters of the characters that open inline syntax (``$ \\ ` * _ [``) at
random, and 100,000 ``[``; each beside twice that text: a linear rule takes
about twice as long for it (the ``x2`` column), a quadratic one four times.
The browser column renders the whole text once (``renderWhole``: markdown-it,
KaTeX, DOMPurify) in headless Chromium, the static files served from this
checkout.

Run alone: ``python -m bench.rendering [--no-browser]``.
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from bench.browser_texts import rich_answer

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = "http://bench.invalid"
PAGE = """<!doctype html><meta charset="utf-8">
<script src="/static/vendor/markdown-it/markdown-it.min.js"></script>
<script src="/static/vendor/dompurify/purify.min.js"></script>
<script src="/static/vendor/katex/katex.min.js"></script>
<body></body>"""
TIME_IN_PAGE = """async ([text, runs]) => {
  const { renderWhole } = await import("/static/chat/markdown.js");
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    renderWhole(text);
    times.push(performance.now() - start);
  }
  return times;
}"""


def ordinary_answer(chars: int = 20_000) -> str:
    text = rich_answer(chars // 5)
    return text[: text.rfind("\n\n", 0, chars)]


def hostile_mix(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("$\\`*_[") for _ in range(chars))


TEXTS: dict[str, Callable[[int], str]] = {
    # name: the text at a scale (1 or 2)
    "answer 20k chars": lambda k: ordinary_answer(20_000 * k),
    '"$1" x 7,500': lambda k: "$1" * 7_500 * k,
    "$\\`*_[ x 100k": lambda k: hostile_mix(100_000 * k),
    # Link text that never closes: markdown-it's link rule looks for the end of
    # the label at every `[` (linear, as markdown-it-py 4 bounds it, but slow).
    "[ x 100k": lambda k: "a " + "[" * 100_000 * k,
}


def runs_for(seconds: float) -> int:
    return 5 if seconds < 1 else 1


def server_ms(text: str) -> float:
    from chat.rendering.markdown import _render_html

    first = _timed(lambda: _render_html(text))
    rest = [_timed(lambda: _render_html(text)) for _ in range(runs_for(first) - 1)]
    return statistics.median([first, *rest]) * 1000


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def browser_ms(texts: list[str]) -> list[float]:
    from playwright.sync_api import Route, sync_playwright

    def serve(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN).split("?")[0]
        if path == "/":
            route.fulfill(body=PAGE, content_type="text/html")
            return
        file = (ROOT / path.lstrip("/")).resolve()
        if not file.is_relative_to(ROOT / "static") or not file.is_file():
            route.fulfill(status=404)
            return
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        route.fulfill(body=file.read_bytes(), content_type=kind)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        page = browser.new_page()
        page.route(f"{ORIGIN}/**", serve)
        page.goto(ORIGIN + "/")
        out = []
        for text in texts:
            first = page.evaluate(TIME_IN_PAGE, [text, 1])[0]
            times = page.evaluate(TIME_IN_PAGE, [text, runs_for(first / 1000)])
            out.append(statistics.median(times))
        browser.close()
    return out


def run(browser: bool = True) -> list[dict[str, Any]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    import django

    django.setup()
    rows = []
    for name, make in TEXTS.items():
        text, double = make(1), make(2)
        row: dict[str, Any] = {"text": name, "chars": len(text)}
        row["server_ms"] = server_ms(text)
        row["server_x2"] = server_ms(double) / row["server_ms"]
        if browser:
            once, twice = browser_ms([text, double])
            row["browser_ms"] = once
            row["browser_x2"] = twice / once
        rows.append(row)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "Rendering one whole answer, median ms (x2: the same kind of text at twice"
        " the length, relative; ~2 is linear, ~4 quadratic)."
    )
    print(f"{'text':<20} {'chars':>7} {'server':>9} {'x2':>5} {'browser':>9} {'x2':>5}")
    for row in rows:
        browser = (
            f"{row['browser_ms']:>9.1f} {row['browser_x2']:>5.1f}"
            if "browser_ms" in row
            else f"{'-':>9} {'-':>5}"
        )
        print(
            f"{row['text']:<20} {row['chars']:>7} {row['server_ms']:>9.1f}"
            f" {row['server_x2']:>5.1f} {browser}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-browser", action="store_true", help="the server's rendering only"
    )
    args = parser.parse_args()
    rows = run(browser=not args.no_browser)
    print_table(rows)
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "rendering.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
