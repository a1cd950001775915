"""axe-core on every page of the site (the tour in bench/tour.py), in light and
dark, on a desktop and a phone: no serious or critical violation.

One browser context per theme and viewport walks the whole tour; the theme is
both the browser's (`color_scheme`, for signed-out pages and the admin) and
every user's setting (`html[data-theme]`, chat.web.account.views)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bench import tour
from tests.browser.axe import clipped_focus_rings, describe, violations
from tests.conftest import ARTIFACTS
from tests.support.services.daphnes import Daphne, daphne_env

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [
    pytest.param(theme, viewport, id=f"{theme}-{viewport}")
    for theme in tour.THEMES
    for viewport in tour.VIEWPORTS
]


def check(
    browser: Any, base_url: str, stops: list[tour.Stop], theme: str, viewport: str
) -> list[str]:
    """Walk `stops` in a new context; the violations found, in words."""
    width, height = tour.VIEWPORTS[viewport]
    context = browser.new_context(
        viewport={"width": width, "height": height},
        color_scheme=theme,
        locale="en-US",
    )
    context.set_default_timeout(15_000)
    failures: list[str] = []

    def look(page: Any, stop: tour.Stop) -> None:
        found = violations(page)
        if found:
            failures.append(describe(f"{stop.name} ({stop.path})", found))
            ARTIFACTS.mkdir(exist_ok=True)
            name = f"axe-{theme}-{viewport}-{stop.name}"
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    tour.visit(context, base_url, stops, look)
    return failures


@pytest.mark.parametrize(("theme", "viewport"), CASES)
def test_every_page_passes_axe(live_server_url, browser, demo_profile, theme, viewport):
    failures = check(browser, live_server_url, list(tour.SETUP), theme, viewport)
    stops = tour.populate(demo_profile)
    tour.set_theme(theme)
    failures += check(browser, live_server_url, stops, theme, viewport)
    assert not failures, "axe found serious or critical violations:\n" + "\n".join(
        failures
    )


@pytest.fixture(scope="module")
def oidc_site(django_db_setup, django_db_blocker) -> Iterator[Daphne]:
    """The site with OpenID Connect sign-in on (its provider never asked: the
    failed page is reached by a callback with an unknown state)."""
    with django_db_blocker.unblock():
        env = {
            **daphne_env(),
            "OIDC_ISSUER": "http://127.0.0.1:9/",
            "OIDC_PROVIDER_NAME": "Example SSO",
            "OIDC_CLIENT_ID": "chatsite",
            "OIDC_CLIENT_SECRET": "secret",
        }
    ARTIFACTS.mkdir(exist_ok=True)
    server = Daphne(env, ARTIFACTS / "axe-oidc-daphne.log").start()
    yield server
    server.stop()


@pytest.mark.parametrize(("theme", "viewport"), CASES)
def test_the_single_sign_on_pages_pass_axe(browser, oidc_site, theme, viewport):
    base_url = f"http://127.0.0.1:{oidc_site.port}"
    stops = [tour.Stop("sign-in-sso", "/login/", None), tour.OIDC_FAILED]
    failures = check(browser, base_url, stops, theme, viewport)
    assert not failures, "axe found serious or critical violations:\n" + "\n".join(
        failures
    )


FOCUS_STOPS = (
    "conversation",
    "share-dialog-new-link",
    "account-new-key",
    "team-manage",
)


@pytest.mark.parametrize("viewport", list(tour.VIEWPORTS))
def test_focus_rings_are_seen_whole(live_server_url, browser, demo_profile, viewport):
    """Tabbing through the pages with the most controls: every focused element
    shows its whole ring (the code block's Copy button's was cut off by the
    block's rounded corners)."""
    stops = [s for s in tour.populate(demo_profile) if s.name in FOCUS_STOPS]
    width, height = tour.VIEWPORTS[viewport]
    context = browser.new_context(viewport={"width": width, "height": height})
    failures: list[str] = []

    def look(page: Any, stop: tour.Stop) -> None:
        failures.extend(f"{stop.name}: {p}" for p in clipped_focus_rings(page, 60))

    try:
        assert [s.name for s in tour.walk(context, live_server_url, stops, look)] == [
            *FOCUS_STOPS
        ]
    finally:
        context.close()
    assert not failures, "\n".join(failures)
