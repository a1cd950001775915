"""The model server's text is made storable where it enters (`events.cleaned`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chat.upstream.events import Delta, Finished, ToolCallDelta, cleaned

# Any code point, lone surrogates and NUL included.
raw_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


@given(st.lists(st.tuples(st.sampled_from(["thinking", "content"]), raw_text)))
def test_cleaned_text_is_storable_and_counts_what_it_replaced(parts):
    events = [Delta(kind, text) for kind, text in parts]
    out = cleaned([*events, Finished("stop")])
    assert out[-1] == Finished("stop")
    for before, after in zip(events, out, strict=False):
        assert isinstance(after, Delta) and after.kind == before.kind
        after.text.encode("utf-8")  # no lone surrogate left
        assert "\x00" not in after.text
        assert len(after.text) == len(before.text)  # offsets stay in step
        bad = sum(c == "\x00" or 0xD800 <= ord(c) <= 0xDFFF for c in before.text)
        assert after.replaced == bad
        if not bad:
            assert after is before


def test_clean_reads_are_passed_through_as_they_are():
    events: list = [Delta("content", "fine 🙂"), Finished("stop")]
    assert cleaned(events) is events


@given(raw_text, raw_text, raw_text)
def test_cleaned_tool_calls_are_storable(id, name, arguments):
    call = ToolCallDelta(3, id, name, arguments)
    [after] = cleaned([call])
    assert after.index == 3
    for before, part in zip(
        (id, name, arguments), (after.id, after.name, after.arguments), strict=True
    ):
        part.encode("utf-8")
        assert "\x00" not in part and len(part) == len(before)
    if after == call:
        assert after is call
