"""The favicon and the installable web app's manifest, as Chromium reads them
(under the site's CSP: manifest-src)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_chromium_reads_the_manifest_and_its_icons(
    live_server_url, page, login, alice, demo_profile
):
    login(page, alice)
    page.goto(live_server_url + "/")
    cdp = page.context.new_cdp_session(page)
    app = cdp.send("Page.getAppManifest")
    assert app["url"].startswith(live_server_url) and app["errors"] == []
    data = json.loads(app["data"])
    assert data["display"] == "standalone" and data["name"] == "chatsite"
    icons = [
        page.locator("link[rel=icon]").nth(n).get_attribute("href") for n in (0, 1)
    ]
    folder = app["url"].rsplit("/", 1)[0]
    icons += [f"{folder}/{icon['src']}" for icon in data["icons"]]
    for href in icons:
        response = page.request.get(href if "://" in href else live_server_url + href)
        assert response.status == 200 and response.headers["content-type"].startswith(
            "image/"
        )
