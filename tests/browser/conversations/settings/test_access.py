"""A conversation whose model became forbidden, in Chromium: the page says so,
its settings offer the models the user may use, and after choosing one the
conversation answers again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, ModelProfile, Team
from tests.browser.chat_page import applied, ask, open_conversation, wait_until_done

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_forbidden_model_is_named_and_an_allowed_one_chosen(
    live_server_url, page, login, alice, demo_profile, simulator
):
    big = ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url=simulator.url
    )
    big.teams.add(Team.objects.create(name="GPU"))
    conversation = Conversation.objects.create(owner=alice, model_profile=big)

    open_conversation(page, login, live_server_url, conversation, alice)
    expect(page.locator("#model-problem")).to_contain_text(
        "Big is not available to you any more."
    )
    expect(page.locator("#model-label")).to_have_text("Model not available to you")
    options = page.locator("#id_model_profile option")
    expect(options).to_have_text(
        ["Site default (qwen3-demo:8b (demo model))", "qwen3-demo:8b (demo model)"]
    )
    applied(
        page, lambda: page.select_option("#id_model_profile", str(demo_profile.pk)), 200
    )
    expect(page.locator("#model-problem")).to_have_count(0)
    expect(page.locator("#model-label .model-name")).to_have_text(
        "qwen3-demo:8b (demo model)"
    )
    ask(page, "Hello again")
    wait_until_done(page)
    assert [entry.body["model"] for entry in simulator.asked] == ["qwen3-demo:8b"]
