"""A stored answer's steps as the page draws them (chat/templatetags/tool_steps.py,
templates/chat/_message.html): the first round's thoughts in the answer's
thinking block, each tool call and later round's thoughts in order, the cited
pages under the answer; every field from the model or a tool shown as text."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from chat.models import Conversation, Message
from chat.templatetags.tool_steps import pretty_arguments, safe_link, steps_of

pytestmark = pytest.mark.django_db

STEPS = [
    {"kind": "thinking", "text": "I should search. "},
    {"kind": "thinking", "text": "Then fetch."},
    {
        "kind": "tool",
        "id": "call_1",
        "name": "web__search",
        "title": "Web search",
        "source": "web",
        "arguments": '{"query":"chatsite"}',
        "ok": True,
        "preview": "<script>alert(1)</script> found 2",
        "text": "found 2 (what the model got)",
        "size": 1234,
        "cut": True,
        "ms": 420.0,
        "error": None,
        "citations": [
            {"url": "https://example.org/a", "title": "A page"},
            {"url": "javascript:alert(1)", "title": "Evil"},
            {"url": "https://example.org/a", "title": "A page again"},
        ],
    },
    {"kind": "content", "text": "Let me look closer."},
    {"kind": "thinking", "text": "Round two."},
    {
        "kind": "tool",
        "id": "call_2",
        "name": "everything__echo",
        "title": "",
        "source": "mcp:1",
        "arguments": "{not json",
        "ok": False,
        "preview": "",
        "size": 0,
        "cut": False,
        "ms": 60000.0,
        "error": "The tool did not answer in 60 s.",
        "citations": [{"url": "http://example.com/b", "title": ""}],
    },
    {"kind": "content", "text": " The answer."},
]


@pytest.fixture
def answer(alice):
    conversation = Conversation.objects.create(owner=alice)
    return Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Let me look closer. The answer.",
        thinking="I should search. Then fetch.Round two.",
        steps=STEPS,
    )


def test_the_steps_in_order_with_the_first_rounds_thoughts_apart(answer):
    shown = steps_of(answer)
    assert shown.thinking == "I should search. Then fetch."
    assert [step.kind for step in shown.steps] == ["tool", "thinking", "tool"]
    first, thoughts, second = shown.steps
    assert first.state == "done" and first.arguments == '{\n  "query": "chatsite"\n}'
    assert first.size == 1234 and first.cut and first.ms == 420.0
    assert thoughts.text == "Round two."
    assert second.state == "error" and second.title == "everything__echo"
    assert second.arguments == "{not json"  # as the model wrote it
    assert shown.citations == [
        {"url": "https://example.org/a", "title": "A page"},
        {"url": "http://example.com/b", "title": "http://example.com/b"},
    ]


def test_the_page_draws_them_as_text(answer):
    html = render_to_string("chat/_message.html", {"message": answer})
    assert html.index("I should search.") < html.index('data-call-id="call_1"')
    assert html.index('data-call-id="call_1"') < html.index("Round two.")
    assert html.index("Round two.") < html.index('data-call-id="call_2"')
    assert html.index('data-call-id="call_2"') < html.index('class="answer"')
    assert html.index('class="answer"') < html.index('class="citations"')
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; found 2" in html
    assert "1,234 characters · cut to the limit" in html
    assert "0.4 s" in html and "Failed · 60 s" in html
    assert "The tool did not answer in 60 s." in html
    assert "javascript:" not in html
    assert html.count('rel="noopener noreferrer nofollow"') == 2
    assert 'href="https://example.org/a" target="_blank"' in html


def test_an_unfinished_call_says_so(answer):
    answer.steps = [{"kind": "tool", "id": "c", "name": "slow", "ok": None}]
    html = render_to_string("chat/_message.html", {"message": answer})
    assert 'data-state="unfinished"' in html and "Not finished" in html


def test_an_answer_without_tool_steps_is_drawn_as_before(answer):
    answer.steps = [{"kind": "thinking", "text": "x"}, {"kind": "content", "text": "y"}]
    shown = steps_of(answer)
    assert (
        shown.thinking == answer.thinking and shown.steps == [] and not shown.citations
    )
    html = render_to_string("chat/_message.html", {"message": answer})
    assert (
        'class="tool-step"' not in html
        and 'class="citations" aria-label="Sources" hidden' in html
    )


@pytest.mark.parametrize(
    "steps",
    [
        None,
        "steps",
        {"kind": "tool"},
        [1, "two", None],
        [
            {
                "kind": "tool",
                "id": 3,
                "title": ["x"],
                "ok": "yes",
                "size": "big",
                "ms": True,
                "citations": "x",
            }
        ],
        [{"kind": "tool", "citations": [None, {"url": 5}, {"url": "https://[bad"}]}],
    ],
)
def test_malformed_steps_are_read_without_failing(answer, steps):
    answer.steps = steps
    render_to_string("chat/_message.html", {"message": answer})
    shown = steps_of(answer)
    for step in shown.steps:
        assert isinstance(step.title, str) and step.size is None and step.ms is None
    assert shown.citations == []


def test_an_object_without_steps_is_its_thinking(answer):
    class Old:
        thinking = "old thoughts"

    assert steps_of(Old()).thinking == "old thoughts"  # type: ignore[arg-type]


def test_long_arguments_are_shown_as_written():
    long = '{"a": "' + "x" * 30_000 + '"}'
    assert pretty_arguments(long) == long
    assert pretty_arguments('{"a":"是"}') == '{\n  "a": "是"\n}'


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://example.org/x?y=1", True),
        ("http://example.org", True),
        ("javascript:alert(1)", False),
        ("data:text/html,hi", False),
        ("//example.org", False),
        ("https://", False),
        ("https://" + "a" * 3000 + ".org", False),
    ],
)
def test_only_web_addresses_become_links(url, kept):
    assert (safe_link(url) == url) is kept
