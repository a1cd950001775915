"""Screenshots of every page of the tour (bench/tour.py) in light and dark, on a
desktop (1280x800) and a phone (390x844), in English and Chinese: to see that
the pages look like one product. The accessibility test walks the same tour
(tests/browser/test_accessibility.py).

A throwaway SQLite database, the simulator as the model server and a Daphne, as
``bench/browser_site.py`` has them; a second Daphne with OpenID Connect sign-in on
(its provider never asked) shows the sign-in page with its button and the
failed sign-in page. The language is the browser's (``Accept-Language`` from
the context's locale; the users keep "as the browser", README "Languages"), the
theme both the browser's and every user's setting.

Run: ``python -m bench.screenshots [--out DIR] [--only NAME ...]
[--languages en zh-Hans] [--themes light dark] [--viewports desktop phone]``.
The images go to ``test-artifacts/screenshots/<language>-<theme>-<viewport>/``
(``NN-<page>.png``); the pages checked are printed at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import tour
from bench.common import ROOT, free_port, spawn, spawn_simulator, terminate
from bench.common import wait_until_up as wait_for

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
LOCALES = {"en": "en-US", "zh-Hans": "zh-CN"}
MODEL = "qwen3-demo:8b"
SSO_STOPS = [tour.Stop("sign-in-sso", "/login/", None), tour.OIDC_FAILED]


def _environment(tmp: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp}/screenshots.sqlite3",
        "DEBUG": "true",  # as bench/browser.py: WhiteNoise serves the app's files
        "DJANGO_SETTINGS_MODULE": "chatsite.settings",
    }
    env.pop("REDIS_URL", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


def _daphne(env: dict[str, str], port: int) -> Any:
    return spawn(
        env,
        "-m",
        "chatsite.serve",
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
    )


def shoot(
    browser: Any,
    base_url: str,
    stops: list[tour.Stop],
    numbers: dict[str, int],
    out: Path,
    language: str,
    theme: str,
    viewport: str,
) -> list[str]:
    """Walk `stops` in one context; the images written, named by their
    `numbers` (their place in the whole tour)."""
    width, height = tour.VIEWPORTS[viewport]
    context = browser.new_context(
        viewport={"width": width, "height": height},
        color_scheme=theme,
        locale=LOCALES[language],
    )
    context.set_default_timeout(20_000)
    folder = out / f"{language}-{theme}-{viewport}"
    folder.mkdir(parents=True, exist_ok=True)
    made: list[str] = []

    def look(page: Any, stop: tour.Stop) -> None:
        path = folder / f"{numbers[stop.name]:02d}-{stop.name}.png"
        page.screenshot(path=str(path), full_page=True)
        made.append(str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path))

    tour.visit(context, base_url, stops, look)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "test-artifacts" / "screenshots"
    )
    parser.add_argument("--only", nargs="*", help="page names (default: every page)")
    parser.add_argument("--languages", nargs="*", default=list(LOCALES))
    parser.add_argument("--themes", nargs="*", default=list(tour.THEMES))
    parser.add_argument("--viewports", nargs="*", default=list(tour.VIEWPORTS))
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="chatsite-screenshots-")
    env = _environment(tmp.name)
    os.environ.update(env)
    os.environ.pop("REDIS_URL", None)
    # This process's ORM calls run beside sync Playwright's event loop, which
    # Django would refuse (docs/testing.md, G9); the servers do not inherit it.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)

    sim_port, web_port, sso_port = free_port(), free_port(), free_port()
    sso_env = {
        **env,
        "OIDC_ISSUER": "http://127.0.0.1:9/",
        "OIDC_PROVIDER_NAME": "Example SSO",
        "OIDC_CLIENT_ID": "chatsite",
        "OIDC_CLIENT_SECRET": "secret",
    }
    processes = [
        spawn_simulator(env, sim_port),
        _daphne(env, web_port),
        _daphne(sso_env, sso_port),
    ]
    site, sso = f"http://127.0.0.1:{web_port}", f"http://127.0.0.1:{sso_port}"
    try:
        for url in (f"http://127.0.0.1:{sim_port}/api/version", f"{site}/login/"):
            wait_for(url, timeout=60)
        wait_for(f"{sso}/login/", timeout=60)
        run(args, site, sso, f"http://127.0.0.1:{sim_port}")
    finally:
        terminate(processes)
        tmp.cleanup()


def run(args: argparse.Namespace, site: str, sso: str, simulator: str) -> None:
    from playwright.sync_api import sync_playwright

    from chat.models import ModelProfile

    def chosen(stops: list[tour.Stop]) -> list[tour.Stop]:
        return [s for s in stops if not args.only or s.name in args.only]

    combos = [
        (language, theme, viewport)
        for language in args.languages
        for theme in args.themes
        for viewport in args.viewports
    ]
    made: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        # The setup page exists only while no one has an account.
        setup = list(tour.SETUP)
        numbers = {stop.name: n for n, stop in enumerate(setup, 1)}
        for combo in combos:
            made += shoot(browser, site, chosen(setup), numbers, args.out, *combo)
        profile = ModelProfile.objects.create(
            tag=MODEL, base_url=simulator, supports_thinking=True, is_demo=True
        )
        stops = tour.populate(profile)
        tour_stops = [*setup, *stops, *SSO_STOPS]
        numbers = {stop.name: n for n, stop in enumerate(tour_stops, 1)}
        for language, theme, viewport in combos:
            tour.set_theme(theme)
            combo = (language, theme, viewport)
            made += shoot(browser, site, chosen(stops), numbers, args.out, *combo)
            made += shoot(browser, sso, chosen(SSO_STOPS), numbers, args.out, *combo)
        browser.close()
    checked = [f"{stop.name:24} {stop.path}" for stop in chosen(tour_stops)]
    print(f"{len(made)} screenshots in {args.out}")
    print(
        f"languages {', '.join(args.languages)}; themes {', '.join(args.themes)}; "
        f"viewports {', '.join(args.viewports)}"
    )
    print(f"pages checked ({len(checked)}):")
    for name in checked:
        print(f"  {name}")


if __name__ == "__main__":
    main()
