"""A Chinese reader in Chromium: the page, and what the page's script writes
(the connection, the live figures, the thinking label), in Chinese; the model's
words and the user's exactly as written."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message, UserSettings
from tests.browser.chat_page import ask, dom_words, words

pytestmark = pytest.mark.django_db(transaction=True)

# Words that are also in the interface's catalog: an answer made of them must
# still read in English.
ANSWER = "Copy Send Stop Connected Thoughts Regenerate the answer."


def test_the_sign_in_page_follows_the_browsers_language(live_server_url, browser):
    context = browser.new_context(locale="zh-CN")
    try:
        page = context.new_page()
        page.goto(live_server_url + "/login/")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
        expect(page.locator("h1")).to_have_text("登录 chatsite")
        expect(page.locator("button[type=submit]")).to_have_text("登录")
    finally:
        context.close()


def test_a_chinese_reader_sees_the_page_and_its_script_in_chinese(
    live_server_url, page, login, alice, demo_profile, simulator
):
    # An English browser: the choice stored on the user's page wins.
    UserSettings.objects.create(user=alice, language="zh-hans")
    simulator.config.tps = 15
    simulator.config.think_tokens = 6
    simulator.config.answer_text = ANSWER
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("#connection")).to_have_text("已连接")
    expect(page.locator("#send-button")).to_have_attribute("aria-label", "发送")
    expect(page.locator("#composer-input")).to_have_attribute(
        "placeholder", re.compile(r"^给 .+ 发消息$")
    )

    ask(page, "Send Copy Stop")
    figures = page.locator('article.assistant[data-status="streaming"] .live-figures')
    expect(figures).to_contain_text(re.compile(r"目前 \d+ 个 token"), timeout=15_000)
    expect(figures).to_contain_text("首个 token")
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=20_000)
    expect(done.locator("details.thinking summary")).to_have_text(
        re.compile(r"^已思考 \d+(\.\d)? 秒$")
    )
    expect(done.locator(".copy-answer")).to_have_attribute(
        "aria-label", "以 Markdown 格式复制回答"
    )

    answer = Message.objects.get(role="assistant")
    assert answer.content.strip() == ANSWER
    assert dom_words(done.locator(".answer")) == words(ANSWER)
    expect(page.locator("article.user")).to_have_text("Send Copy Stop")
    # The title is the user's words too.
    expect(page.locator("#conversation-title")).to_have_text("Send Copy Stop")


def test_an_english_reader_keeps_english(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 0
    simulator.config.answer_text = ANSWER
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#connection")).to_have_text("Connected")
    ask(page)
    done = page.locator('article.assistant[data-status="done"]')
    expect(done.locator(".figures")).to_contain_text(re.compile(r"\d+ tokens"))


def test_a_chinese_reader_attaches_files_in_chinese(
    live_server_url, page, login, alice, demo_profile
):
    UserSettings.objects.create(user=alice, language="zh-hans")
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    # The demo model sees no images: documents only, and why.
    expect(page.locator("#attach-button")).to_have_attribute("aria-label", "添加文档")
    expect(page.locator("#attach-button")).to_have_attribute(
        "title", re.compile("无法识别图片：其服务器的能力列表中没有视觉。")
    )
    page.set_input_files(
        "#attach-input",
        files=[
            {
                "name": "notes.md",
                "mimeType": "text/markdown",
                "buffer": b"# Notes\n" * 50,
            },
            {"name": "empty.txt", "mimeType": "text/plain", "buffer": b""},
        ],
    )
    # Refused in the browser (attachments.js), and the chip drawn by it.
    expect(page.locator("#alert")).to_have_text("empty.txt 是空文件。未上传。")
    expect(page.locator('.file-chip[data-status="ready"]')).to_have_count(1)
    expect(page.locator(".file-chip .file-remove")).to_have_attribute(
        "aria-label", "移除 notes.md"
    )
    expect(page.locator(".file-chip .file-size")).to_have_text("400 B")
    expect(page.locator(".file-chip .file-tokens")).to_contain_text(
        re.compile(r"约 \d+ 个 token")
    )
    expect(page.locator("#attach-summary")).to_contain_text(
        "1 个文件 · 随此提问发送：约"
    )
    expect(page.locator("#attach-status")).to_contain_text("notes.md 已上传")
