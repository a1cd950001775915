"""The chat page in headless Chromium: open a conversation, ask, wait for the
answer, read its words; the settings panel; a watch on the page's sockets; a
rich markdown answer and what it renders to."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from chat.models import Message
from tests.support.waiting import until_sync


def open_conversation(page, login, live_server_url, conversation, user):
    login(page, user)
    page.goto(live_server_url + conversation.get_absolute_url())
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")


def ask(page, text="Go"):
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def ask_from_home(page, text):
    """Type on the home page's composer and press Enter: the conversation opens
    and sends it."""
    expect(page.locator("#home-composer")).to_have_attribute("data-ready", "1")
    page.fill("#home-input", text)
    page.press("#home-input", "Enter")
    page.wait_for_url("**/c/*/")


def ask_until_checkpointed(page, login, live_server_url, conversation, user) -> Any:
    """Open the conversation, ask, and return the answer once a checkpoint of
    its text has landed (a page loaded now starts from stored text)."""
    open_conversation(page, login, live_server_url, conversation, user)
    ask(page, "Count slowly")
    expect(page.locator(".answer.streaming")).not_to_have_text("", timeout=15_000)
    return until_sync(
        lambda: (
            Message.objects.filter(role="assistant", status="streaming")
            .exclude(content="")
            .first()
        ),
        "no checkpoint landed",
    )


def wait_until_done(page, count=1):
    expect(page.locator('article.assistant[data-status="done"]')).to_have_count(
        count, timeout=20_000
    )


def open_settings(page, login, live_server_url, conversation, user):
    open_conversation(page, login, live_server_url, conversation, user)
    page.click("#settings-drawer > summary")
    expect(page.locator("#settings-panel")).to_be_visible()


def applied(page, change, status):
    """Make `change` in the settings panel; it is saved at once, with `status`.
    Returns once htmx has swapped the answer in: a change made on the panel it
    is about to replace would be lost with it."""
    with page.expect_response(lambda r: r.url.endswith("/settings/")) as saved:
        change()
    assert saved.value.status == status
    busy = ", ".join(
        f"#settings-panel.htmx-{state}"
        for state in ("request", "swapping", "settling", "added")
    )
    expect(page.locator(busy)).to_have_count(0)


def choose_model(page, profile):
    """Choose `profile` in the settings panel's model select (saved at once)."""
    applied(page, lambda: page.select_option("#id_model_profile", str(profile.pk)), 200)


def change_text(page, selector, text):
    page.fill(selector, text)
    page.press(selector, "Tab")  # the field's change event


def numbered_paragraphs(count: int, per_paragraph: int = 12) -> str:
    """Plain words w0 w1 ... in paragraphs: what is shown is what was sent."""
    return "".join(
        ("\n\n" if i and i % per_paragraph == 0 else " " if i else "") + f"w{i}"
        for i in range(count)
    )


def words(text: str) -> list[str]:
    return text.split()


def dom_words(locator) -> list[str]:
    """The words in the DOM, whether or not they are laid out: innerText leaves
    out blocks that `content-visibility: auto` skips off screen."""
    text = locator.evaluate(
        """el => {
          const copy = el.cloneNode(true);
          copy.normalize();  // adjacent text nodes of one word become one
          const walk = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
          const parts = [];
          while (walk.nextNode()) parts.push(walk.currentNode.data);
          return parts.join(" ");
        }"""
    )
    return words(text)


# Keeps the page's sockets reachable, and what the connection badge said.
WATCH_SOCKETS = """
window.__sockets = [];
window.__connection = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) { super(...args); window.__sockets.push(this); }
};
document.addEventListener("DOMContentLoaded", () => {
  const badge = document.getElementById("connection");
  new MutationObserver(() => window.__connection.push(badge.dataset.state))
    .observe(badge, { attributes: true, attributeFilter: ["data-state"] });
});
"""


def uses_up_the_quota_of_the_teams_model(page, simulator) -> Any:
    """From the home page, signed in: start a conversation, check that only the
    team's model is offered (not "Big", another team's), get one answer, then
    ask again and return the alert that refused it (the text stays in the
    composer, and the model was asked only once)."""
    ask_from_home(page, "Hello")
    expect(page.locator("#chat")).to_have_attribute("data-connected", "1")
    options = page.locator("#id_model_profile option")
    expect(options).to_have_count(2)  # the site default (theirs) and the model
    assert not [text for text in options.all_inner_texts() if "Big" in text]
    wait_until_done(page)
    ask(page, "And again")
    alert = page.locator("#alert")
    expect(alert).to_contain_text("Your quota is reached (")
    expect(page.locator("#composer-input")).to_have_value("And again")
    asked = [e.body["model"] for e in simulator.asked]
    assert asked == ["qwen3-demo:8b"]  # the second question never reached it
    return alert


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
