"""The composer's model picker in Chromium: a filterable listbox worked from
the keyboard, with the models' badges and which one the server has loaded;
choosing sets the conversation's model (its settings), or on the home page the
new conversation's."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, ModelProfile
from tests.browser.chat_page import (
    ask,
    ask_from_home,
    open_conversation,
    wait_until_done,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def llama(simulator):
    return ModelProfile.objects.create(
        tag="llama-demo:3b",
        display_name="Llama",
        base_url=simulator.url,
        parameter_size="3.2B",
        quantization="Q4_K_M",
        supports_vision=True,
    )


@pytest.fixture
def conversation(alice, demo_profile):
    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


def test_the_picker_chooses_the_conversations_model_from_the_keyboard(
    live_server_url, page, login, alice, conversation, demo_profile, llama, simulator
):
    simulator.config.answer_tokens = 5
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page, "Warm up")  # the demo model is in the server's memory now
    wait_until_done(page)
    button = page.locator("#model-picker-button")
    expect(button).to_contain_text(demo_profile.label)
    button.click()
    expect(page.locator("#model-picker-filter")).to_be_focused()
    demo = page.locator(f"#model-option-{demo_profile.pk}")
    other = page.locator(f"#model-option-{llama.pk}")
    expect(demo).to_have_attribute("aria-selected", "true")
    expect(demo.locator(".picker-loaded")).to_be_visible()
    expect(demo).to_contain_text("thinking")
    expect(other.locator(".picker-badge")).to_have_text(
        ["3.2B", "Q4_K_M", "vision", "loaded"], use_inner_text=False
    )
    expect(other.locator(".picker-loaded")).to_be_hidden()

    page.keyboard.type("llam")
    expect(demo).to_be_hidden()
    page.keyboard.press("Escape")  # closes the menu only
    expect(page.locator("#model-picker-popup")).to_be_hidden()
    expect(button).to_be_focused()
    button.press("ArrowDown")
    page.keyboard.type("llama")
    with page.expect_response(lambda r: r.url.endswith("/settings/")) as saved:
        page.keyboard.press("Enter")
    assert saved.value.status == 200
    expect(button).to_contain_text("Llama")
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", "Message Llama"
    )
    conversation.refresh_from_db()
    assert conversation.model_profile == llama


def test_the_home_picker_sets_the_new_conversations_model(
    live_server_url, page, login, alice, demo_profile, llama, simulator
):
    simulator.config.answer_tokens = 5
    login(page, alice)
    page.goto(live_server_url + "/")
    expect(page.locator("#model-picker")).to_have_attribute("data-ready", "1")
    page.click("#model-picker-button")
    page.click(f"#model-option-{llama.pk}")
    expect(page.locator("#model-picker-button")).to_contain_text("Llama")
    expect(page.locator("#home-input")).to_be_focused()
    ask_from_home(page, "Which model?")
    wait_until_done(page)
    assert Conversation.objects.get().model_profile == llama
    asked = [e.body["model"] for e in simulator.asked]
    assert asked == ["llama-demo:3b"]
