"""The browser bench's run: a site and Chromium, the scenarios in order."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from bench.browser.measure import measure_long_answer, measure_streams, measure_ttft
from bench.browser.scenarios import COLD_START, SCENARIOS, TTFT_SAMPLES, Scenario
from bench.browser.site import Site

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every tab is a window of its own and in view; never throttle its frames.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]


async def run_browser_bench(
    scenarios: list[Scenario] | None = None,
    *,
    ttft_samples: int = TTFT_SAMPLES,
    long_answer: bool = True,
    chromium_args: list[str] | None = None,
    browser_nice: int = 0,
) -> list[dict[str, Any]]:
    """Start a site and Chromium, run the scenarios, return one row each."""
    from playwright.async_api import async_playwright

    site = Site()
    site.start()
    try:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS if chromium_args is None else chromium_args,
                headless=True,
            )
            try:
                rows = []
                if ttft_samples:
                    # The first question a fresh server process is asked: it
                    # pays for what is loaded or connected on first use.
                    for floor in (False, True):
                        rows.append(
                            await measure_ttft(browser, site, 1, floor, COLD_START)
                        )
                # Warm-up: the first answer of a process pays for imports, and
                # the browser's first Chinese characters for finding a font
                # that has them (about 20 ms of the page's first two tokens,
                # charged to whichever side came first).
                for chinese in (False, True):
                    for floor in (False, True):
                        await measure_streams(
                            browser,
                            site,
                            Scenario("warm-up", 1, 0, 20, chinese=chinese),
                            floor=floor,
                        )
                for s in SCENARIOS if scenarios is None else scenarios:
                    for floor in (False, True) if s.floor else (False,):
                        rows.append(
                            await measure_streams(browser, site, s, browser_nice, floor)
                        )
                if ttft_samples:
                    for floor in (False, True):
                        rows.append(
                            await measure_ttft(browser, site, ttft_samples, floor)
                        )
                if long_answer:
                    rows.append(await measure_long_answer(browser, site))
                return against_floor(rows)
            finally:
                await browser.close()
    finally:
        site.stop()


def against_floor(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with a floor row beside it gets its ratio to the floor's."""
    by_name = {r["scenario"]: r for r in rows}
    for row in rows:
        floor = by_name.get(f"{row['scenario']} [floor]")
        if floor is None:
            continue
        for key in ("p99_ms", "ttft_added_p50_ms"):
            if key in row:
                row[f"x_floor_{key[:-3]}"] = row[key] / max(floor[key], 0.1)
    return rows


def run(**options: Any) -> list[dict[str, Any]]:
    return asyncio.run(run_browser_bench(**options))
