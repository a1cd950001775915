"""The staff pages in headless Chromium: the status panel polls live, the
throughput chart is drawn."""

from __future__ import annotations

from datetime import timedelta

import pytest
from playwright.sync_api import expect

from chat.models import Conversation
from tests.support.answers import answer

pytestmark = pytest.mark.django_db(transaction=True)


def test_model_server_panel_loads_and_refreshes(
    live_server_url, page, login, admin_user, demo_profile, simulator
):
    login(page, admin_user)
    page.goto(live_server_url + "/admin/")
    page.click("text=Model servers")
    server = page.locator(f'section.model-server[data-url="{simulator.url}"]')
    expect(server).to_contain_text("Reachable")
    expect(server).to_contain_text(simulator.config.version)
    first = page.locator(".checked-at").inner_text()
    # The panel is fetched again every 5 s, without a reload.
    expect(page.locator(".checked-at")).not_to_have_text(first, timeout=12_000)


def test_throughput_chart_is_drawn(live_server_url, page, login, admin_user, alice):
    conversation = Conversation.objects.create(owner=alice)
    for hours, tokens in ((1, 20), (3, 40)):
        answer(conversation, ago=timedelta(hours=hours), model_tag="a:1b",
               output_tokens=tokens, eval_ms=1000,
               first_token_ms=100 * hours)  # fmt: skip
    login(page, admin_user)
    page.goto(live_server_url + "/admin/")
    page.click("text=Throughput per model")
    page.select_option("#id_range", "24h")
    page.click("text=Show")
    chart = page.locator("figure.line-chart svg").first
    expect(chart).to_be_visible()
    expect(chart.locator("circle.point")).to_have_count(2)
    box = chart.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100


def test_model_server_panel_says_when_a_refresh_failed(
    live_server_url, page, login, admin_user, demo_profile, simulator
):
    login(page, admin_user)
    page.goto(live_server_url + "/admin/stats/model-servers/")
    expect(page.locator("section.model-server")).to_contain_text("Reachable")
    stale = page.locator("#model-servers-stale")
    expect(stale).to_be_hidden()
    # The site goes away (for this page): the last figures stay, marked stale.
    page.route("**/model-servers/panel/", lambda route: route.abort())
    expect(stale).to_be_visible(timeout=12_000)
    expect(stale).to_contain_text("may be out of date")
    expect(page.locator("section.model-server")).to_contain_text("Reachable")
    page.unroute("**/model-servers/panel/")
    expect(stale).to_be_hidden(timeout=12_000)
