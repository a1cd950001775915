"""The place in line on the conversation page, in headless Chromium, also after a
reload."""

from __future__ import annotations

from playwright.sync_api import expect

from chat.models import Message
from tests.live.engine.admission.queueing import on_database, slow_answers


@on_database
def test_the_page_shows_the_place_in_line_also_after_a_reload(
    live_server_url, page, context, login, alice, limits, conversations, simulator
):
    limits(0, 1)
    first, second = conversations(alice, 2)
    slow_answers(simulator, tps=20, tokens=400)
    login(page, alice)
    page.goto(live_server_url + first.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.fill("#composer-input", "Runs first")
    page.press("#composer-input", "Enter")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)

    other = context.new_page()
    other.goto(live_server_url + second.get_absolute_url())
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    other.fill("#composer-input", "Waits its turn")
    other.press("#composer-input", "Enter")
    waiting = other.locator('article.assistant[data-status="streaming"]')
    expect(waiting.locator(".live-figures")).to_have_text("Queued — position 1")
    expect(other.locator("#stop-button")).to_be_visible()

    other.reload()
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    expect(waiting.locator(".live-figures")).to_have_text("Queued — position 1")

    simulator.config.tps = 200
    page.click("#stop-button")
    done = other.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=20_000)
    expect(done.locator(".live-figures")).to_have_count(0)
    answer = Message.objects.get(conversation=second, role="assistant")
    assert answer.status == Message.Status.DONE and answer.content
    assert answer.content.split()[0] in done.locator(".answer").inner_text()
