"""The settings panel in headless Chromium: change the model and history, see
the notice and the header follow, and the next question sends what was set."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, ModelProfile
from tests.browser.chat_page import applied, change_text, choose_model, open_settings

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def llama(simulator):
    return ModelProfile.objects.create(
        tag="llama-demo:3b", base_url=simulator.url, context_length=8192, is_demo=True
    )


def test_the_settings_panel_changes_what_the_next_question_sends(
    live_server_url, page, login, alice, conversation, llama, simulator
):
    for n in (1, 2, 3):
        conversation.messages.create(role="user", content=f"question {n}")
        conversation.messages.create(role="assistant", content=f"answer {n}")
    open_settings(page, login, live_server_url, conversation, alice)
    panel = page.locator("#settings-panel")
    expect(panel.locator(".setting-source").nth(0)).to_contain_text(
        "set for this conversation"
    )

    # Each change is saved as it is made (like the header's thinking select);
    # bad input: a clear error next to its field, and what was typed stays.
    choose_model(page, llama)
    applied(page, lambda: page.select_option("#id_history_policy", "last_n"), 422)
    expect(
        page.locator(".setting:has(#id_history_last_n) .error-text")
    ).to_contain_text("Say how many earlier messages to send.")
    applied(page, lambda: change_text(page, "#id_history_last_n", "2"), 200)
    applied(page, lambda: change_text(page, "#id_temperature", "7"), 422)
    expect(page.locator(".setting:has(#id_temperature) .error-text")).to_contain_text(
        "less than or equal to 2"
    )
    expect(page.locator("#id_temperature")).to_have_value("7")
    assert Conversation.objects.get().temperature is None

    applied(page, lambda: change_text(page, "#id_temperature", "0.3"), 200)
    applied(
        page,
        lambda: change_text(page, "#id_system_prompt", "Answer like a pirate."),
        200,
    )
    # One notice: each change rewrote it in its place (nothing asked between).
    notice = page.locator("#messages .settings-change")
    expect(notice).to_have_count(1)
    expect(notice).to_have_text(
        "Settings changed: model → llama-demo:3b (demo model), "
        "history → last 2 messages, temperature → 0.3, system prompt → changed"
    )
    expect(panel).to_contain_text("Saved: applies from the next message.")
    expect(page.locator("#model-label .model-name")).to_have_text(
        "llama-demo:3b (demo model)"
    )
    # The header's thinking toggle follows: this model cannot think.
    expect(page.locator("#thinking-mode")).to_be_disabled()
    expect(page.locator("#settings-thinking")).to_be_disabled()
    expect(panel).to_contain_text("last 2 messages · set for this conversation")

    page.fill("#composer-input", "question 4")
    page.press("#composer-input", "Enter")
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(4, timeout=20_000)
    request = simulator.asked[-1].body
    assert request["model"] == "llama-demo:3b"
    assert request["messages"] == [
        {"role": "system", "content": "Answer like a pirate."},
        {"role": "user", "content": "question 3"},
        {"role": "assistant", "content": "answer 3"},
        {"role": "user", "content": "question 4"},
    ]
    assert request["options"]["temperature"] == 0.3
    assert "think" not in request
    expect(done.last.locator(".history-sent")).to_contain_text("3 of 7 messages, ~")

    # The notices stay in their place after a reload.
    page.reload()
    notice = page.locator("#messages > .settings-change")
    expect(notice).to_have_count(1)
    position = page.evaluate(
        "[...document.querySelectorAll('#messages > *')]"
        ".findIndex(e => e.classList.contains('settings-change'))"
    )
    assert position == 6  # after the three earlier turns, before question 4
    assert Conversation.objects.get().model_profile == llama
