"""Qwen3's inline `<tool_call>` tags split out of the answer text: the calls
streamed as their text arrives, however it is cut; the text around them kept;
every malformed call still a call, its text never lost."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chat.upstream import Delta, Event, ToolCallDelta
from chat.upstream.thinktags import ThinkTagSplitter, partial_tag
from chat.upstream.toolcalls import ToolCalls
from chat.upstream.tooltags import JSONValueEnd, ToolTagSplitter


def split(pieces: list[str], *, think: ThinkTagSplitter | None = None) -> list[Event]:
    splitter = ToolTagSplitter(ToolCalls(), think)
    events: list[Event] = []
    for piece in pieces:
        events += splitter.feed(piece)
    return events + splitter.close()


def content(events: list[Event]) -> str:
    return "".join(
        e.text for e in events if isinstance(e, Delta) and e.kind == "content"
    )


def calls(events: list[Event]) -> list[tuple[str, str, str]]:
    """(id, name, arguments) of each call, its pieces joined."""
    found: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            entry = found.setdefault(event.index, ["", "", ""])
            entry[0] = entry[0] or event.id
            entry[1] = entry[1] or event.name
            entry[2] += event.arguments
    return [(i, n, a) for i, n, a in (found[k] for k in sorted(found))]


QWEN = (
    "I'll check both.\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo, \\"NO\\" {}"}}\n'
    "</tool_call>"
)
QWEN_CALLS = [
    ("call_0", "get_weather", '{"city": "Paris"}'),
    ("call_1", "get_weather", '{"city": "Oslo, \\"NO\\" {}"}'),
]


def test_qwen3_calls_whole():
    events = split([QWEN])
    assert content(events) == "I'll check both.\n\n"
    assert calls(events) == QWEN_CALLS
    # The name comes first, alone, as soon as it is known.
    assert events[1] == ToolCallDelta(0, "call_0", "get_weather", "")


def test_arguments_stream_as_they_arrive():
    splitter = ToolTagSplitter(ToolCalls(), None)
    assert splitter.feed('<tool_call>\n{"name": "f", "arguments": {"q": "a') == [
        ToolCallDelta(0, "call_0", "f", ""),
        ToolCallDelta(0, arguments='{"q": "a'),
    ]
    assert splitter.feed("bc") == [ToolCallDelta(0, arguments="bc")]
    assert splitter.feed('"}}\n</tool') == [ToolCallDelta(0, arguments='"}')]
    assert splitter.feed("_call>Done.") == [Delta("content", "Done.")]
    assert splitter.close() == []


@settings(deadline=None)
@given(data=st.data())
def test_any_cut_of_the_text_gives_the_same_calls(data):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(QWEN)), max_size=25)))
    pieces = [QWEN[a:b] for a, b in zip([0, *cuts], [*cuts, len(QWEN)], strict=True)]
    events = split(pieces)
    assert content(events) == "I'll check both.\n\n"
    assert calls(events) == QWEN_CALLS


ARGUMENT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text('ab{}[]",:\\ <>/é\n'),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text('k{}"\\', max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(deadline=None)
@given(
    arguments=st.dictionaries(st.text(max_size=4), ARGUMENT_VALUES, max_size=4),
    before=st.text("ab <>\n", max_size=8),
    data=st.data(),
)
def test_any_arguments_cut_anywhere_arrive_as_written(arguments, before, data):
    written = json.dumps(arguments, ensure_ascii=False)
    assume("</tool_call>" not in written and "<tool_call>" not in before)
    raw = f'{before}<tool_call>\n{{"name": "f", "arguments": {written}}}\n</tool_call>'
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=20)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    events = split(pieces)
    assert content(events) == before
    assert calls(events) == [("call_0", "f", written)]
    assert json.loads(calls(events)[0][2]) == arguments


# The text between the tags, and the name and arguments of its call.
MALFORMED = {
    "arguments not JSON": (
        '{"name": "f", "arguments": {city: Paris}}',
        ("f", "{city: Paris}"),
    ),
    "arguments never closed": (
        '{"name": "f", "arguments": {"a": [1, 2',
        ("f", '{"a": [1, 2'),
    ),
    "not JSON at all: no name, the whole text": (
        'get_weather(city="Paris")',
        ("", 'get_weather(city="Paris")'),
    ),
    "arguments before the name": (
        '{"arguments": {"name": "Bob"}, "name": "greet"}',
        ("greet", '{"name": "Bob"}'),
    ),
    "no arguments key: a bare call": ('{"name": "now"}', ("now", "{}")),
    "another key for the arguments goes to the engine's check": (
        '{"name": "f", "args": {"a": 1}}',
        ("f", '{"args": {"a": 1}}'),
    ),
    "parameters for arguments": (
        '{"name": "f", "parameters": {"a": 1}}',
        ("f", '{"a": 1}'),
    ),
    "an escaped name": ('{"name": "f\\u00e9", "arguments": {}}', ("fé", "{}")),
    "an empty tag": ("", ("", "")),
}


@pytest.mark.parametrize(("body", "call"), MALFORMED.values(), ids=MALFORMED.keys())
@pytest.mark.parametrize("closed", [True, False], ids=["closed", "never closed"])
def test_malformed_calls_are_calls_and_keep_their_text(body, call, closed):
    raw = f"<tool_call>{body}" + ("</tool_call>" if closed else "")
    for pieces in ([raw], list(raw)):  # whole, and one character at a time
        events = split(pieces)
        assert calls(events) == [("call_0", *call)]
        assert content(events) == ""


def test_an_unfinished_opening_tag_at_the_end_is_text():
    events = split(["Hello <tool_", "ca"])
    assert content(events) == "Hello <tool_ca"
    assert calls(events) == []


def test_text_that_looks_like_a_tag_is_text():
    events = split(["a <tool>", " b <tool_cal", "l_x> c"])
    assert content(events) == "a <tool> b <tool_call_x> c"


def test_whitespace_after_a_call_is_dropped_text_after_it_kept():
    raw = '<tool_call>{"name": "f", "arguments": {}}</tool_call>\n\n  Then this.'
    events = split(list(raw))
    assert content(events) == "Then this."
    assert split(['<tool_call>{"name": "f"}</tool_call>\n']) == [
        ToolCallDelta(0, "call_0", "f", ""),
        ToolCallDelta(0, arguments="{}"),
    ]


def test_tags_written_while_thinking_are_not_calls():
    raw = (
        "<think>\nI could write <tool_call>{}</tool_call> now.\n</think>\n\n"
        '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    )
    events = split(list(raw), think=ThinkTagSplitter())
    thinking = "".join(
        e.text for e in events if isinstance(e, Delta) and e.kind == "thinking"
    )
    assert thinking == "I could write <tool_call>{}</tool_call> now."
    assert calls(events) == [("call_0", "f", "{}")]
    assert content(events) == ""


def test_huge_arguments_are_followed_in_linear_time():
    # One 4 MB string, in 4 KiB pieces: the scanner jumps between quotes and
    # brackets, so this takes milliseconds (a walk per character or a search
    # from the start on every piece would take seconds).
    written = json.dumps({"text": "x" * 4_000_000, "list": list(range(1000))})
    raw = f'<tool_call>{{"name": "f", "arguments": {written}}}</tool_call>'
    pieces = [raw[i : i + 4096] for i in range(0, len(raw), 4096)]
    started = time.process_time()
    events = split(pieces)
    assert time.process_time() - started < 2.0
    assert calls(events) == [("call_0", "f", written)]


def test_huge_text_that_is_not_a_call_is_kept_whole():
    body = "y" * 100_000
    assert calls(split([f"<tool_call>{body}", "</tool_call>"])) == [
        ("call_0", "", body)
    ]


def test_json_value_end():
    cases = {
        '{"a": 1}, "name"': 8,
        '"text \\" }"}': 11,
        "[1, [2]]}": 8,
        "12}": 2,
        "true, ": 4,
        '{"a": "}"': -1,
    }
    for text, end in cases.items():
        assert JSONValueEnd().feed(text) == end, text
    value = JSONValueEnd()  # a backslash at the end of a piece
    assert [value.feed(p) for p in ['{"a": "x\\', '"', '"}']] == [-1, -1, 2]


def test_partial_tag():
    assert partial_tag("abc <tool_c", "<tool_call>") == 7
    assert partial_tag("abc <", "<tool_call>") == 1
    assert partial_tag("<a <tool", "<tool_call>") == 5
    assert partial_tag("abc", "<tool_call>") == 0
    assert partial_tag("x</thi", "</think>") == 5
