"""A tool turn's steps in Chromium: a stored answer's steps drawn by the server
(reload shows them), and the live frames of a tool turn drawn by the page.

The engine's tool loop is built on its own branch: until it is merged, the live
test feeds the frames of chat/live/protocol/frames.py's contract through the
page's own frame table (static/chat/socket.js `handlers`), as its socket does;
once merged, a test asking the simulator for a tool turn takes its place."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import open_conversation

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = '<img src=x onerror="window.__pwned=1"><b>bold</b>'

STORED = [
    {"kind": "thinking", "text": "Search first."},
    {
        "kind": "tool",
        "id": "call_1",
        "name": "web__search",
        "title": "Web search",
        "source": "web",
        "arguments": '{"query":"chatsite"}',
        "ok": True,
        "preview": HOSTILE,
        "text": HOSTILE,
        "size": 12345,
        "cut": True,
        "ms": 420.0,
        "error": None,
        "citations": [
            {"url": "https://example.org/a", "title": "Page A"},
            {"url": "javascript:window.__pwned=1", "title": "Evil"},
        ],
    },
    {"kind": "thinking", "text": "Now answer."},
    {
        "kind": "tool",
        "id": "call_2",
        "name": "everything__echo",
        "title": "Echo",
        "source": "mcp:1",
        "arguments": "{broken",
        "ok": False,
        "preview": "",
        "size": 0,
        "cut": False,
        "ms": 60000.0,
        "error": "The tool did not answer in 60 s.",
        "citations": [],
    },
    {"kind": "content", "text": "The answer."},
]


def test_a_stored_answers_steps_are_drawn_in_order_as_text(
    live_server_url, page, login, alice, conversation
):
    Message.objects.create(conversation=conversation, role="user", content="Find it")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="The answer.",
        thinking="Search first.Now answer.",
        steps=STORED,
    )
    open_conversation(page, login, live_server_url, conversation, alice)
    answer = page.locator("article.assistant")
    expect(answer.locator(".answer")).to_have_text("The answer.")
    first = answer.locator("details.thinking").first
    expect(first.locator(".thinking-text")).to_have_text("Search first.")
    steps = answer.locator(".steps > *")
    expect(steps).to_have_count(3)
    search, thoughts, echo = steps.nth(0), steps.nth(1), steps.nth(2)
    expect(search.locator(".tool-title")).to_have_text("Web search")
    expect(search.locator(".tool-source")).to_have_text("web")
    expect(search.locator(".tool-status")).to_have_text("0.4 s")
    expect(search.locator(".tool-args")).to_have_text('{\n  "query": "chatsite"\n}')
    # The result is collapsed, and text when opened: no markup, nothing run.
    preview = search.locator(".tool-preview")
    expect(preview).to_be_hidden()
    search.locator(".tool-result summary").click()
    expect(preview).to_have_text(HOSTILE)
    expect(search.locator(".tool-size")).to_have_text(
        "12,345 characters · cut to the limit"
    )
    expect(thoughts.locator(".thinking-text")).to_have_text(
        "Now answer.", use_inner_text=False
    )
    expect(echo).to_have_attribute("data-state", "error")
    expect(echo.locator(".tool-status")).to_have_text("Failed · 60 s")
    expect(echo.locator(".tool-error")).to_have_text("The tool did not answer in 60 s.")
    expect(echo.locator(".tool-args")).to_have_text("{broken")
    expect(echo.locator(".tool-result")).to_be_hidden()
    links = answer.locator(".citations a")
    expect(links).to_have_count(1)
    expect(links).to_have_attribute("href", "https://example.org/a")
    expect(links).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(links).to_have_attribute("target", "_blank")
    assert page.evaluate("window.__pwned") is None
    assert answer.locator(".tool-step img, .tool-step b").count() == 0


# The page's frame table, as its socket calls it; the approvals it would send.
FEED = """
async (frames) => {
  const link = document.querySelector('link[rel="modulepreload"][href*="/socket"]');
  const href = link.href;
  const { handlers } = await import(href);
  for (const frame of frames) handlers[frame.type](frame);
}
"""
CATCH_APPROVALS = """
() => {
  window.__sent = [];
  const nativeSend = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const frame = JSON.parse(data);
    if (frame.type === "approve") window.__sent.push(frame);
    else nativeSend.call(this, data);
  };
}
"""
ID = 900001


def frame(type_, **fields):
    return {"type": type_, "message_id": ID, **fields}


def test_the_live_frames_of_a_tool_turn_are_drawn_as_they_come(
    live_server_url, page, login, alice, conversation
):
    open_conversation(page, login, live_server_url, conversation, alice)
    page.evaluate(CATCH_APPROVALS)
    feed = lambda *frames: page.evaluate(FEED, list(frames))  # noqa: E731
    article = page.locator(f"#message-{ID}")
    feed(
        frame("thinking", delta="I will search."),
        frame(
            "tool_call",
            call_id="c1",
            name="web__search",
            title="Web search",
            source="web",
        ),
        frame("tool_args", call_id="c1", delta='{"query":'),
    )
    card = article.locator(".tool-step").first
    expect(card.locator(".tool-title")).to_have_text("Web search")
    expect(card.locator(".tool-status")).to_have_text("Writing the call…")
    expect(card.locator(".tool-args")).to_have_text('{"query":')
    feed(frame("tool_args", call_id="c1", delta=' "chatsite"}'))
    expect(card.locator(".tool-args")).to_have_text('{"query": "chatsite"}')

    # Running: pretty-printed, and a timer from the server's start.
    started = page.evaluate("Date.now()") - 2000
    feed(frame("tool_run", call_id="c1", state="running", started=started))
    expect(card.locator(".tool-args")).to_have_text('{\n  "query": "chatsite"\n}')
    expect(card.locator(".tool-status")).to_have_text(re.compile(r"^Running… 2\.\d s$"))
    expect(card.locator(".tool-status")).to_have_text(re.compile(r"^Running… 3\.\d s$"))

    feed(
        frame(
            "tool_result",
            call_id="c1",
            ok=True,
            preview=HOSTILE,
            size=42,
            cut=False,
            ms=3456.0,
            error=None,
            citations=[
                {"url": "https://example.org/a", "title": "Page A"},
                {"url": "javascript:window.__pwned=1", "title": "Evil"},
                {"url": "https://example.org/a", "title": "Again"},
                {"url": "http://example.com/b", "title": ""},
            ],
        )
    )
    expect(card).to_have_attribute("data-state", "done")
    expect(card.locator(".tool-status")).to_have_text("3.5 s")
    page.wait_for_timeout(300)  # the timer stopped: the status stays
    expect(card.locator(".tool-status")).to_have_text("3.5 s")
    card.locator(".tool-result summary").click()
    expect(card.locator(".tool-preview")).to_have_text(HOSTILE)
    expect(card.locator(".tool-size")).to_have_text("42 characters")

    # A call that waits for the user: Allow sends the page's choice.
    feed(
        frame(
            "tool_call", call_id="c2", name="mcp__rm", title="Remove", source="mcp:1"
        ),
        frame("tool_args", call_id="c2", delta="{bad json"),
        frame("tool_run", call_id="c2", state="awaiting_approval", started=started),
    )
    second = article.locator(".tool-step").nth(1)
    expect(second.locator(".tool-status")).to_have_text("Awaiting your approval")
    expect(second.locator(".tool-args")).to_have_text("{bad json")
    second.get_by_role("button", name="Allow").click()
    expect(second.get_by_role("button", name="Allow")).to_be_disabled()
    sent = page.evaluate("window.__sent")
    assert sent == [
        {"type": "approve", "message_id": ID, "call_id": "c2", "allow": True}
    ]
    feed(
        frame(
            "tool_result",
            call_id="c2",
            ok=False,
            preview="",
            size=0,
            cut=False,
            ms=12.0,
            error="Denied by the tool's server.",
            citations=[],
        ),
        frame("round", round=1),
        frame("thinking", delta="Now I know."),
        frame("content", delta="It is **here**."),
    )
    expect(second.locator(".tool-approval")).to_be_hidden()
    expect(second.locator(".tool-status")).to_have_text("Failed · 0.0 s")
    expect(second.locator(".tool-error")).to_have_text("Denied by the tool's server.")
    # The order of the steps: the first round's thoughts, the calls, the next
    # round's thoughts, the answer, its sources.
    expect(
        article.locator("details.thinking").first.locator(".thinking-text")
    ).to_have_text("I will search.")
    expect(article.locator(".steps > *")).to_have_count(3)
    expect(
        article.locator(".steps > details.step-thinking .thinking-text")
    ).to_have_text("Now I know.")
    expect(article.locator(".answer")).to_contain_text("It is here.")
    links = article.locator(".citations a")
    expect(links).to_have_count(2)
    expect(links.nth(0)).to_have_text("Page A")
    expect(links.nth(1)).to_have_text("http://example.com/b")
    for link in (links.nth(0), links.nth(1)):
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(link).to_have_attribute("target", "_blank")
    assert page.evaluate("window.__pwned") is None
