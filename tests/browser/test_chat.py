"""The whole path in headless Chromium: sign in, send, watch it stream, stop."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Conversation, Message
from tests.browser.chat_page import (
    WATCH_SOCKETS,
    ask,
    ask_from_home,
    ask_until_checkpointed,
    dom_words,
    numbered_paragraphs,
    open_conversation,
    wait_until_done,
    words,
)
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


def test_sign_in_send_and_watch_the_answer_stream(
    live_server_url, page, alice, demo_profile, simulator
):
    simulator.config.tps = 25
    simulator.config.think_tokens = 10
    simulator.config.answer_tokens = 60
    page.goto(live_server_url + "/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "password-alice-123")
    page.click("button[type=submit]")
    # The home page is the composer: Enter starts the conversation and sends.
    ask_from_home(page, "Tell me about streams")
    expect(page.locator(".chat-header .badge")).to_have_text("demo")

    streaming = page.locator('article.assistant[data-status="streaming"] .answer')
    # Text is on screen while the answer is still being written.
    expect(streaming).not_to_have_text("", timeout=15_000)
    assert page.locator('article.assistant[data-status="streaming"]').count() == 1
    expect(page.locator("article.user")).to_have_text("Tell me about streams")
    expect(page.locator('article.assistant[data-status="done"]')).to_have_count(
        1, timeout=20_000
    )
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done" and answer.thinking
    shown = page.locator('article.assistant[data-status="done"] .answer').inner_text()
    assert answer.content.split()[0] in shown
    expect(page.locator("details.thinking summary")).to_contain_text("Thought for")
    assert Conversation.objects.get().title == "Tell me about streams"


def test_the_home_question_is_sent_once_even_after_a_reload(
    live_server_url, page, login, alice, demo_profile, simulator
):
    login(page, alice)
    page.goto(live_server_url + "/")
    ask_from_home(page, "Only once")
    wait_until_done(page)
    expect(page.locator("#composer-input")).to_have_value("")
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    expect(page.locator("article.user")).to_have_count(1)
    expect(page.locator("#composer-input")).to_have_value("")
    assert Message.objects.filter(role="user").count() == 1
    assert [e.body["messages"][-1]["content"] for e in simulator.asked] == ["Only once"]


def test_stop_keeps_the_partial_answer(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 400
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    login(page, alice)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    page.fill("#composer-input", "Write a long essay")
    page.click("#send-button")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator(".message-footer .status")).to_have_text("Stopped.")
    expect(page.locator("#stop-button")).to_be_hidden()
    answer = Message.objects.get(role="assistant")
    assert answer.status == "stopped"
    assert answer.content
    entry = simulator.asked[-1]
    assert entry.disconnected


def test_reload_mid_answer_resumes_without_losing_or_doubling_text(
    live_server_url, page, login, alice, demo_profile, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 5
    simulator.config.answer_text = numbered_paragraphs(90)
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    # A checkpoint has landed, so the reloaded page starts from stored text.
    ask_until_checkpointed(page, login, live_server_url, conversation, alice)
    page.add_init_script(CAPTURE_CHECKPOINT)
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    done = page.locator('article.assistant[data-status="done"]')
    expect(done).to_have_count(1, timeout=20_000)
    answer = Message.objects.get(role="assistant")
    assert answer.status == "done"
    assert page.evaluate("window.__checkpointed"), "the reloaded page showed no text"
    # Every word once, in order: nothing lost, nothing doubled.
    assert dom_words(done.locator(".answer")) == words(answer.content)
    assert done.locator(".thinking-text").text_content() == answer.thinking
    # ... and the page never had to fall back to the stored text to get there.
    assert done.get_attribute("data-resynced") is None


# The streaming answer's text as the reloaded page first shows it.
CAPTURE_CHECKPOINT = """
document.addEventListener("DOMContentLoaded", () => {
  const article = document.querySelector('article[data-status="streaming"]');
  window.__checkpointed = article ? article.querySelector(".answer").textContent : "";
});
"""


def test_the_thinking_toggle_changes_what_the_model_is_asked(
    live_server_url, page, login, conversation, alice, simulator
):
    open_conversation(page, login, live_server_url, conversation, alice)
    for mode, think in (("off", False), ("on", True)):
        with page.expect_response(lambda r: r.url.endswith("/thinking/")) as saved:
            page.select_option("#thinking-mode", mode)
        assert saved.value.ok
        ask(page, f"Thinking {mode}")
        wait_until_done(page, 1 if mode == "off" else 2)
        assert simulator.asked[-1].body["think"] is think
    thoughts = page.locator("article.assistant details.thinking")
    expect(thoughts.nth(0)).to_be_hidden()  # no thinking was asked for
    expect(thoughts.nth(1)).to_be_attached()


def test_thinking_is_live_then_folds_away_unless_kept_open(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 40
    simulator.config.think_tokens = 60
    simulator.config.answer_tokens = 30
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    thinking = page.locator('article[data-status="streaming"] details.thinking')
    # Live: open, its text growing, a running counter while no answer is out.
    expect(thinking).to_have_attribute("open", "", timeout=10_000)
    expect(thinking.locator(".thinking-text")).not_to_have_text("")
    expect(thinking.locator("summary")).to_contain_text("Thinking…")
    assert page.locator('article[data-status="streaming"] .answer').inner_text() == ""
    # The answer starts: the thoughts fold away by themselves.
    expect(thinking).not_to_have_attribute("open", "", timeout=10_000)
    wait_until_done(page)
    summary = page.locator("article.assistant details.thinking summary")
    expect(summary).to_have_text(re.compile(r"^Thought for \d+(\.\d)? s$"))
    answer = Message.objects.get(role="assistant")
    assert (
        answer.thinking_ms
        and f"{answer.thinking_ms / 1000:.1f}" in summary.inner_text()
    )

    # Opening them while the next answer streams keeps them open, now and later.
    ask(page, "Again")
    thinking = page.locator('article[data-status="streaming"] details.thinking')
    expect(thinking).to_have_attribute("open", "", timeout=10_000)
    thinking.locator("summary").click()  # closed by the reader ...
    thinking.locator("summary").click()  # ... and opened again: keep it open
    assert page.evaluate("localStorage.getItem('chatsite.thinking')") == "open"
    wait_until_done(page, 2)
    expect(page.locator("article.assistant details.thinking").nth(1)).to_have_attribute(
        "open", ""
    )


def test_text_shows_up_token_by_token_with_live_figures(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(60)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"]')
    expect(streaming.locator(".answer")).to_contain_text("w3", timeout=10_000)
    shown = words(streaming.locator(".answer").inner_text())
    assert 0 < len(shown) < 60  # on screen long before the end
    figures = streaming.locator(".live-figures")
    expect(figures).to_contain_text("tok/s")
    expect(figures).to_contain_text("first token")
    wait_until_done(page)
    done = page.locator('article.assistant[data-status="done"]')
    expect(done.locator(".live-figures")).to_have_count(0)
    expect(done.locator(".figures")).to_contain_text("tok/s")
    expect(done).not_to_have_attribute("aria-busy", "true")


def test_markdown_code_tables_and_math_render_with_copy_buttons(
    live_server_url, context, page, login, conversation, alice, simulator
):
    context.grant_permissions(
        ["clipboard-read", "clipboard-write"], origin=live_server_url
    )
    simulator.config.tps = 60
    simulator.config.think_tokens = 0
    simulator.config.answer_text = RICH_ANSWER
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"] .answer')
    # Finished blocks are rendered while the answer is still being written.
    expect(streaming.locator("h2")).to_have_text("Streams", timeout=10_000)
    expect(streaming.locator("strong").first).to_have_text("bold")
    wait_until_done(page)
    answer = page.locator('article.assistant[data-status="done"] .answer')
    assert_rich_answer(answer)
    copy = answer.locator(".code-block .copy-code")
    expect(copy).to_have_count(1)
    copy.click()
    expect(copy).to_have_text("Copied")
    clipboard = page.evaluate("navigator.clipboard.readText()")
    assert clipboard == RICH_ANSWER.split("```python\n")[1].split("```")[0]
    page.locator("article.assistant .copy-answer").click()
    expect(page.locator("article.assistant .copy-answer")).to_contain_text("Copied")
    stored = Message.objects.get(role="assistant").content
    assert page.evaluate("navigator.clipboard.readText()") == stored

    # The same after a reload, from the server's HTML.
    page.reload()
    answer = page.locator('article.assistant[data-status="done"] .answer')
    assert_rich_answer(answer)
    page.locator("article.assistant .copy-answer").click()
    expect(page.locator("article.assistant .copy-answer")).to_contain_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == stored


def assert_rich_answer(answer):
    expect(answer.locator("h2")).to_have_text("Streams")
    expect(answer.locator("ol > li")).to_have_count(3)
    expect(answer.locator("table th")).to_have_text(["backend", "format"])
    expect(answer.locator(".code-block .code-lang")).to_have_text("python")
    expect(answer.locator("pre code.hljs .hljs-keyword").first).to_have_text("async")
    expect(answer.locator(".katex").first).to_be_visible()
    expect(answer).to_contain_text("$5 and $10")  # prices are not math
    expect(answer.locator("a[href='https://example.org/']")).to_have_attribute(
        "rel", re.compile("noopener")
    )


RICH_ANSWER = """## Streams

Some **bold** text, `inline code` and a [link](https://example.org/).

1. first
2. second
3. third

```python
async def relay(stream):
    async for chunk in stream:
        yield chunk
```

| backend | format |
|---|---|
| Ollama | NDJSON |

Energy: $E = mc^2$, and it costs $5 and $10.

$$
\\int_0^1 x^2\\,dx = \\frac{1}{3}
$$

Done.
"""

HOSTILE_ANSWER = "\n\n".join(
    [
        """Hello <script>alert("script")</script> and <img src=x """
        """onerror="alert('img')"> there.""",
        """<svg onload="alert('svg')"><circle r=1 /></svg> and """
        """<iframe src="javascript:alert('frame')"></iframe>""",
        """A [link](javascript:alert('link')) and <a href="javascript:alert('a')">"""
        """anchor</a> and ![pic](javascript:alert('pic'))""",
        """<details open ontoggle="alert('toggle')">x</details> """
        """[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)""",
        r"""Math $\href{javascript:alert('tex')}{click}$ and $\htmlId{x}{y}$ end.""",
    ]
)

FIND_ACTIVE_CONTENT = r"""() => {
  const root = document.getElementById("messages");
  const bad = [];
  for (const el of root.querySelectorAll("*")) {
    const tag = el.tagName;
    if (["SCRIPT", "IFRAME", "OBJECT", "EMBED"].includes(tag)) bad.push(tag);
    for (const attr of el.attributes) {
      const value = attr.value.replace(/\s/g, "").toLowerCase();
      if (attr.name.startsWith("on")) bad.push(`${tag}[${attr.name}]`);
      const url = ["href", "src", "action", "formaction", "xlink:href"];
      if (url.includes(attr.name) && /^(javascript|vbscript|data):/.test(value)) {
        bad.push(`${tag}[${attr.name}=${value}]`);
      }
    }
  }
  return bad;
}"""


def test_model_output_is_inert_while_streaming_and_after(
    live_server_url, page, login, conversation, alice, simulator
):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    simulator.config.tps = 40
    simulator.config.think_tokens = 0
    simulator.config.answer_text = HOSTILE_ANSWER
    simulator.config.thinking_text = "<img src=x onerror=alert('thinking')>"
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    streaming = page.locator('article[data-status="streaming"]')
    expect(streaming.locator(".answer")).to_contain_text("Hello", timeout=10_000)
    while streaming.count():  # check at many points of the stream
        assert page.evaluate(FIND_ACTIVE_CONTENT) == []
        page.wait_for_timeout(40)
    wait_until_done(page)
    answer = page.locator("article.assistant .answer")
    expect(answer).to_contain_text('<script>alert("script")</script>')
    expect(answer).to_contain_text("onerror")
    for link in answer.locator(
        "a"
    ).all():  # markdown links to javascript: are not links
        assert (link.get_attribute("href") or "").startswith("http")
    assert page.evaluate(FIND_ACTIVE_CONTENT) == []
    page.reload()
    wait_until_done(page)
    page.wait_for_timeout(300)  # the enhancement of server-rendered answers
    assert page.evaluate(FIND_ACTIVE_CONTENT) == []
    assert dialogs == []


def test_stop_button_stops_and_enter_sends_shift_enter_breaks(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 20
    simulator.config.think_tokens = 0
    simulator.config.answer_tokens = 400
    open_conversation(page, login, live_server_url, conversation, alice)
    page.fill("#composer-input", "line one")
    page.press("#composer-input", "Shift+Enter")
    page.keyboard.type("line two")
    assert page.input_value("#composer-input") == "line one\nline two"
    page.press("#composer-input", "Enter")
    expect(page.locator("article.user")).to_have_count(1)
    # The question is shown before its commit (docs/latency.md, rule 8): wait
    # for the stored row, not for the article.
    until_sync(
        lambda: Message.objects.filter(role="user").exists(),
        "the question was not stored",
    )
    assert Message.objects.get(role="user").content == "line one\nline two"
    expect(page.locator("#send-button")).to_be_hidden()
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    page.click("#stop-button")
    expect(page.locator('article.assistant[data-status="stopped"]')).to_be_visible()
    expect(page.locator("#send-button")).to_be_visible()
    # The model server hears of the stop when its next write fails.
    until_sync(lambda: simulator.asked[-1].disconnected, "the model never saw the stop")


def test_scrolling_up_pauses_following_and_offers_a_jump_back(
    live_server_url, browser, login, conversation, alice, simulator
):
    simulator.config.tps = 60
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(240, per_paragraph=6)
    page = browser.new_context(viewport={"width": 900, "height": 500}).new_page()
    open_conversation(page, login, live_server_url, conversation, alice)
    messages = page.locator("#messages")
    gap = "el => el.scrollHeight - el.scrollTop - el.clientHeight"
    ask(page)
    page.wait_for_function(
        "() => { const m = document.getElementById('messages');"
        " return m.scrollHeight > m.clientHeight + 300; }"
    )
    # Following the newest text: the frame after a token scrolls to it (wait
    # for that scroll, not for the token: under load the two are apart).
    page.wait_for_function(f"() => ({gap})(document.getElementById('messages')) < 5")
    assert streaming_now(page)
    jump = page.locator("#jump-latest")
    expect(jump).to_be_hidden()
    messages.hover()
    page.mouse.wheel(0, -400)
    expect(jump).to_be_visible()
    top = messages.evaluate("el => el.scrollTop")
    page.wait_for_timeout(500)  # more text arrives meanwhile: the view stays put
    assert streaming_now(page)
    assert messages.evaluate("el => el.scrollTop") == top
    jump.click()
    expect(jump).to_be_hidden()
    # Back at the newest text, and following it again (the frame after the
    # click scrolls: wait for that, not for a fixed time).
    page.wait_for_function(
        "() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.scrollTop - m.clientHeight < 5; }",
        timeout=10_000,
    )
    page.context.close()


def streaming_now(page):
    return page.locator('article[data-status="streaming"]').count() == 1


def test_a_dropped_socket_shows_reconnecting_and_resumes_exactly(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 30
    simulator.config.think_tokens = 0
    simulator.config.answer_text = numbered_paragraphs(100)
    page.add_init_script(WATCH_SOCKETS)
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    expect(page.locator(".answer.streaming")).to_contain_text("w5", timeout=10_000)
    page.evaluate("window.__sockets.at(-1).close()")
    # The page may reconnect faster than a locator polls: wait for the new
    # socket, and read the states the badge went through from its observer.
    page.wait_for_function(
        "() => window.__sockets.length === 2 && window.__sockets[1].readyState === 1"
    )
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    assert "reconnecting" in page.evaluate("window.__connection")
    wait_until_done(page)
    answer = Message.objects.get(role="assistant")
    done = page.locator('article.assistant[data-status="done"]')
    assert dom_words(done.locator(".answer")) == words(answer.content)
    assert done.get_attribute("data-resynced") is None


# Every text the screen reader region was given.
WATCH_ANNOUNCEMENTS = """
window.__announced = [];
document.addEventListener("DOMContentLoaded", () => {
  const region = document.getElementById("announcer");
  const record = () => region.textContent && __announced.push(region.textContent);
  new MutationObserver(record)
    .observe(region, { childList: true, characterData: true, subtree: true });
});
"""


def test_a_finished_answer_is_announced_once(
    live_server_url, page, login, conversation, alice, simulator
):
    simulator.config.tps = 60
    simulator.config.think_tokens = 5
    simulator.config.answer_text = numbered_paragraphs(40)
    page.add_init_script(WATCH_ANNOUNCEMENTS)
    open_conversation(page, login, live_server_url, conversation, alice)
    assert page.locator("#messages").get_attribute("aria-live") is None
    ask(page)
    wait_until_done(page)
    page.wait_for_timeout(200)
    announced = page.evaluate("window.__announced")
    assert len(announced) == 1 and announced[0].startswith("Answer: w0 w1")
    expect(page.locator("#announcer")).to_have_attribute("aria-live", "polite")


def entry_action(page, conversation, action):
    """Choose `action` in the entry's "…" menu."""
    entry = page.locator(f"#conversation-item-{conversation.pk}")
    entry.locator(".item-menu-button").click()
    entry.get_by_role("menuitem", name=action).click()


def test_sidebar_renames_and_deletes(live_server_url, page, login, alice, demo_profile):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))

    def make(title):
        conversation = Conversation.objects.create(
            owner=alice, model_profile=demo_profile, title=title
        )
        conversation.messages.create(role="user", content=title)
        return conversation

    current, gamma, delta = (
        make("Alpha notes"),
        make("Gamma plans"),
        make("Delta ideas"),
    )
    open_conversation(page, login, live_server_url, current, alice)
    items = page.locator("#dated-list > li.conversation-item")
    expect(items).to_have_count(3)

    entry = page.locator(f"#conversation-item-{gamma.pk}")
    entry_action(page, gamma, "Rename")
    field = page.locator(f"#rename-{gamma.pk}")
    expect(field).to_be_focused()
    field.fill("")
    field.press("Enter")  # the browser refuses an empty title itself
    field.fill("Gamma, renamed")
    field.press("Enter")
    expect(entry.locator("a")).to_have_text("Gamma, renamed")
    gamma.refresh_from_db()
    assert gamma.title == "Gamma, renamed"

    # Renaming the open conversation renames the page too.
    entry = page.locator(f"#conversation-item-{current.pk}")
    entry_action(page, current, "Rename")
    page.locator(f"#rename-{current.pk}").fill("Alpha, final")
    page.locator(f"#rename-{current.pk}").press("Enter")
    expect(page.locator("#conversation-title")).to_have_text("Alpha, final")
    expect(entry.locator("a")).to_have_attribute("aria-current", "page")

    entry_action(page, delta, "Delete")
    expect(page.locator(f"#conversation-item-{delta.pk}")).to_have_count(0)
    assert dialogs and "Delta ideas" in dialogs[-1]
    assert not Conversation.objects.filter(pk=delta.pk).exists()

    # Deleting the open conversation leaves its page.
    entry_action(page, current, "Delete")
    page.wait_for_url(live_server_url + "/")
    assert list(Conversation.objects.values_list("title", flat=True)) == [
        "Gamma, renamed"
    ]


def test_phone_width_puts_the_sidebar_behind_a_menu_button(
    live_server_url, browser, login, conversation, alice
):
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    open_conversation(page, login, live_server_url, conversation, alice)
    sidebar = page.locator("#sidebar")
    menu = page.locator("#menu-button")
    expect(sidebar).to_be_hidden()
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(sidebar).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#conversation-search")).to_be_focused()
    page.keyboard.press("Escape")
    expect(sidebar).to_be_hidden()
    expect(menu).to_be_focused()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone
    page.context.close()


# Feeds documents to the incremental renderer in pieces of every size and
# compares the result with rendering the whole document at once.
COMPARE_RENDERINGS = r"""async ([docs, sizes]) => {
  const { IncrementalMarkdown, renderWhole } = await import("/static/chat/markdown.js");
  // Block wrappers and highlighting aside; and a list split into items is tight
  // where the whole list may be loose (<li><p>…</p></li>): the same on screen.
  const flat = (container) => {
    for (const wrapper of container.querySelectorAll(".md-block, .md-tail, li > p")) {
      wrapper.replaceWith(...wrapper.childNodes);
    }
    for (const code of container.querySelectorAll("code")) {
      code.textContent = code.textContent;
      code.classList.remove("hljs");
    }
    return container.innerHTML.replace(/\s*(<[^>]*>)\s*/g, "$1").replace(/\s+/g, " ");
  };
  const failures = [];
  for (const doc of docs) {
    const whole = document.createElement("div");
    whole.append(renderWhole(doc));
    const want = flat(whole);
    // This much rendered in one go, by length: computed once for all sizes.
    const inOneGo = new Map();
    const oneGo = (end) => {
      if (!inOneGo.has(end)) {
        const fresh = document.createElement("div");
        new IncrementalMarkdown(fresh).append(doc.slice(0, end));
        inOneGo.set(end, flat(fresh));
      }
      return inOneGo.get(end);
    };
    for (const size of sizes) {
      const container = document.createElement("div");
      const renderer = new IncrementalMarkdown(container);
      for (let i = 0; i < doc.length; i += size) {
        renderer.append(doc.slice(i, i + size));
        if (size > 4) continue;
        // While streaming too: the same as rendering this much in one go.
        const [now, then] = [flat(container.cloneNode(true)), oneGo(i + size)];
        if (now !== then) failures.push({ size, at: i + size, got: now, want: then });
      }
      renderer.finish();
      const got = flat(container);
      if (got !== want) failures.push({ size, doc: doc.slice(0, 60), got, want });
    }
  }
  return failures;
}"""

DOCUMENTS = [
    RICH_ANSWER,
    "Intro line\n- a\n- b\n  continued\n- c\n\nAfter the list.\n",
    "1. one\n1. two\n1. three\n\n   indented paragraph of three\n\n1. four\n\nEnd\n",
    "Text before\n```js\nconst a = 1;\n\nconst b = 2;\n```\nText after\n\n"
    "~~~\ntilde\n~~~\n",
    "# Title\nParagraph right under.\n## Sub\n> quote\n> more\n\n---\n\nLast *one*.\n",
    "- item\n\n    ```\n    code in item\n\n    more code\n    ```\n\n- next item\n",
    "Inline $a_1 + b_1$ math and \\\\(x\\\\) too.\n\n$$x^2$$\n\n$$\ny = 2\n\n$$\n\nend",
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nText *after* the table with `code`.",
    "Para\nSetext\n---\n\n* x\n* y\n\n  * nested\n* z\n",
    "> - quoted list\n> - two\n\n2) paren\n3) list\n- other kind\n",
    "A\n\n    indented code\n\n    more\n\nB\n# Heading\nC  \nhard break\n\n***\n",
    "Last fence is never closed\n```\ncode\n\nstill code",
    "Last math is never closed\n\n$$\nx = 1",
    "**Note:** some words here and more\nsecond line words *open emphasis\n\n"
    '_emph_ words and __strong__x words ok\n\n"Quoted" text (aside) words.\n\n'
    "2024 was a year\n2024. was\n\nSetext words\n--- more\n\nA | B\n--|--\nc | d\n\n"
    "Words then\n=== and\n\n(Paren) words  \nhard break words\n",
    # One long paragraph, as models write it: tokens with their space after,
    # runs of spaces and tabs, spaces markdown trims (no-break, ideographic),
    # soft breaks, and Chinese without any space.
    "Tokens with the space after them " * 12
    + "then  two\tspaces and a tab, \u00a0nbsp\u3000ideographic\u00a0 end.\n"
    + "A soft break, then more words " * 6
    + "\n\n这是一个很长的中文段落，模型一个字一个字地写出来，没有空格。" * 4
    + "Mixed 中文 and English words, 还有标点！？\u3000\n\nLast words.   ",
]


def shares(documents: list[str], count: int) -> list[list[str]]:
    """The documents in `count` shares of about equal work (a character at a
    time re-renders every prefix: the work grows as the length squared)."""
    out: list[list[str]] = [[] for _ in range(count)]
    for doc in sorted(documents, key=len, reverse=True):
        min(out, key=lambda share: sum(len(d) ** 2 for d in share)).append(doc)
    return out


def test_incremental_rendering_matches_rendering_the_whole_answer(
    live_server_url, page, login, conversation, alice
):
    open_conversation(page, login, live_server_url, conversation, alice)
    other = page.context.new_page()  # its own renderer process: a second core
    other.goto(page.url)
    expect(other.locator("#chat")).to_have_attribute("data-connected", "1")
    pages = [page, other]
    sizes = [1, 2, 3, 5, 8, 13, 64]
    # Started on both pages at once; each result is awaited afterwards.
    for tab, docs in zip(pages, shares(DOCUMENTS, len(pages)), strict=True):
        tab.evaluate(
            f"(args) => {{ window.__compared = ({COMPARE_RENDERINGS})(args); }}",
            [docs, sizes],
        )
    failures = [f for tab in pages for f in tab.evaluate("() => window.__compared")]
    assert failures == []
    assert sum(map(len, shares(DOCUMENTS, len(pages)))) == len(DOCUMENTS)


# Streams a paragraph a character at a time; its text, its child nodes, and how
# many characters were appended to the text node it ends with (not rendered).
STREAM_PARAGRAPH = r"""async (text) => {
  const { IncrementalMarkdown } = await import("/static/chat/markdown.js");
  const renderer = new IncrementalMarkdown(document.createElement("div"));
  let appended = 0;
  for (const c of text) {
    const before = renderer.tail?.querySelector("p")?.lastChild;
    renderer.append(c);
    if (before && before === renderer.tail.querySelector("p").lastChild) appended++;
  }
  const p = renderer.tail.querySelector("p");
  return [p.textContent, [...p.childNodes].map((n) => n.nodeType), appended];
}"""


def test_a_long_paragraph_streams_by_appending_to_its_text(
    live_server_url, page, login, conversation, alice
):
    # A Chinese answer is often one paragraph of thousands of characters: each
    # token is appended to the paragraph's text, not rendered again with it
    # (static/chat/markdown.js, `appendText`).
    open_conversation(page, login, live_server_url, conversation, alice)
    text = "这是一个很长的中文段落，模型一个字一个字地写出来，没有空格。" * 60
    shown, nodes, appended = page.evaluate(STREAM_PARAGRAPH, text)
    assert shown == text
    assert nodes == [3]  # one text node
    # (The first characters start the paragraph: rendered, not appended.)
    assert appended >= len(text) - 2


LAYOUT_DOCUMENT = """## Heading one

First paragraph with **bold** and `code`.
Second line of the same paragraph.

- item a
- item b

1. one
2. two

```python
x = 1
```

| a | b |
|---|---|
| 1 | 2 |

> quoted text

### Heading two
Paragraph right under a heading.

Final paragraph.
"""

# Read after the browser's next rendering update: a block frozen since the last
# one is sized by its content-visibility placeholder (static/chat/chat.css) until
# then, and a synchronous read sees that, not what is painted.
BLOCK_POSITIONS = """async () => {
  await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
  const answer = document.querySelector("article.assistant .answer");
  const top = answer.getBoundingClientRect().top;
  const blocks = answer.querySelectorAll("p, h2, h3, li, pre, table, blockquote");
  return [...blocks].map((e) => {
    const box = e.getBoundingClientRect();
    return [e.tagName, Math.round(box.top - top), Math.round(box.height)];
  });
}"""


def test_a_streamed_answer_is_laid_out_as_the_server_renders_it(
    live_server_url, page, login, conversation, alice, simulator
):
    """Frozen blocks space themselves like one document: what was streamed looks
    the same as the server's rendering of the stored answer after a reload."""
    simulator.config.tps = 200
    simulator.config.think_tokens = 0
    simulator.config.answer_text = LAYOUT_DOCUMENT
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    wait_until_done(page)
    streamed = page.evaluate(BLOCK_POSITIONS)
    page.reload()
    wait_until_done(page)
    assert page.evaluate(BLOCK_POSITIONS) == streamed


# Content-Security-Policy violations, as the page reports them.
RECORD_CSP_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


def test_pages_work_under_the_content_security_policy(
    live_server_url, page, login, conversation, alice, simulator
):
    page.add_init_script(RECORD_CSP_VIOLATIONS)
    simulator.config.tps = 200
    simulator.config.think_tokens = 5
    simulator.config.answer_text = RICH_ANSWER
    login(page, alice)
    response = page.goto(live_server_url + conversation.get_absolute_url())
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    # htmx works: the thinking toggle posts and swaps its partial in.
    with page.expect_response(lambda r: r.url.endswith("/thinking/")) as saved:
        page.select_option("#thinking-mode", "on")
    assert saved.value.ok
    ask(page)
    wait_until_done(page)
    assert_rich_answer(page.locator('article.assistant[data-status="done"] .answer'))
    assert page.evaluate("window.__cspViolations") == []
    page.reload()
    wait_until_done(page)
    page.wait_for_timeout(300)  # the enhancement of server-rendered answers
    assert_rich_answer(page.locator('article.assistant[data-status="done"] .answer'))
    assert page.evaluate("window.__cspViolations") == []
    page.goto(live_server_url + "/")
    expect(page.locator("#sidebar")).to_be_visible()
    assert page.evaluate("window.__cspViolations") == []
