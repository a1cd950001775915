"""Headless Chromium (a pytest plugin, loaded with ``-p
tests.support.plugins.chromium``;
pytest-playwright is not used): ``playwright``, ``browser`` (session),
``context``, ``page`` (function), Debian's Chromium through Playwright. Tests
using them are marked ``browser`` here and run last (tests/conftest.py). A
failing test's page is saved as a screenshot in ``test-artifacts/``."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.plugins.live_server import ARTIFACTS
from tests.support.services.processes import _in_ci

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PLAYWRIGHT_FIXTURES = frozenset({"playwright", "browser", "context", "page"})


def pytest_itemcollected(item: pytest.Item) -> None:
    # Before `-m` deselection runs, so `-m "not browser"` excludes these.
    if PLAYWRIGHT_FIXTURES & set(getattr(item, "fixturenames", ())):
        item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"_report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def playwright() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright: Any) -> Iterator[Any]:
    """Headless Chromium from ``$CHROMIUM`` (default ``/usr/bin/chromium``)."""
    if not os.access(CHROMIUM, os.X_OK):
        reason = (
            f"Chromium not found at {CHROMIUM} "
            "(run scripts/ensure-chromium.sh, or set CHROMIUM=/path/to/chromium)"
        )
        if _in_ci():
            pytest.fail(f"CI=true: {reason}", pytrace=False)
        pytest.skip(reason)
    try:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
    except Exception as exc:
        if _in_ci():
            raise
        pytest.skip(f"Chromium at {CHROMIUM} does not start: {exc}")
    from playwright.sync_api import expect

    expect.set_options(timeout=10_000)  # a busy 2-core box
    yield browser
    browser.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(15_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    page = context.new_page()
    yield page
    report = getattr(request.node, "_report_call", None)
    if report is not None and report.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]
        try:
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        except Exception as exc:  # the page may be gone
            sys.stderr.write(f"screenshot failed: {exc}\n")
