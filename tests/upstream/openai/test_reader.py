"""The OpenAI stream reader beyond the listed cases: a malformed event, the
close-only think tag profile, nothing read after [DONE], any split of a stream
and of its inline tags."""

from __future__ import annotations

import logging

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chat.upstream import Finished
from chat.upstream.thinktags import ThinkTagSplitter
from tests.upstream.openai.answering import DONE, USAGE, chunk, decode, event, text


def test_malformed_event_is_skipped_and_logged(caplog):
    reads = [
        event(chunk(content="a")),
        b'data: {"id":"x","obj\n\n',
        event(chunk(content="b")),
        DONE,
    ]
    with caplog.at_level(logging.WARNING, logger="chat.upstream"):
        events, error, reader = decode(reads)
    assert error is None
    assert text(events, "content") == "ab"
    assert reader.malformed == 1
    assert "not JSON" in caplog.text or "non-JSON" in caplog.text


def test_close_only_profile_splits_reasoning_without_an_opening_tag():
    reads = [
        event(chunk(content="Let me see.")),
        event(chunk(content="</think>\n\nYes.")),
        DONE,
    ]
    events, _, _ = decode(reads, splitter=ThinkTagSplitter(opened=True))
    assert (text(events, "thinking"), text(events, "content")) == (
        "Let me see.",
        "Yes.",
    )


def test_close_only_profile_on_a_server_that_parses_reasoning():
    reads = [event(chunk(reasoning_content="Hmm")), event(chunk(content="Yes.")), DONE]
    events, _, _ = decode(reads, splitter=ThinkTagSplitter(opened=True))
    assert (text(events, "thinking"), text(events, "content")) == ("Hmm", "Yes.")


def test_events_after_done_are_not_read():
    events, error, reader = decode([DONE + event(chunk(content="late"))])
    assert reader.finished and error is None
    assert events == [Finished(done_reason="")]


BODY_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["reasoning_content", "reasoning", "content"]),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=10),
    ),
    max_size=10,
)


@settings(deadline=None)
@given(pieces=BODY_EVENTS, pings=st.booleans(), crlf=st.booleans(), data=st.data())
def test_any_split_of_a_stream_gives_the_same_events(pieces, pings, crlf, data):
    body = b"".join(
        (b": ping\n\n" if pings else b"") + event(chunk(**{f: t})) for f, t in pieces
    )
    body += event({**chunk("stop"), "usage": USAGE}) + DONE
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=30)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    events, error, _ = decode(reads, splitter=None)
    whole, _, _ = decode([body], splitter=None)

    assert error is None
    assert events[-1] == Finished(
        done_reason="stop", prompt_tokens=26, output_tokens=282
    )
    for kind in ("thinking", "content"):
        assert text(events, kind) == text(whole, kind)
    assert text(events, "thinking") == "".join(t for f, t in pieces if f != "content")


@settings(deadline=None)
@given(
    reasoning=st.text(st.sampled_from("ab <>/\n\u00e9"), max_size=15),
    answer=st.text(st.sampled_from("cd <>/\n\U0001f680"), max_size=15),
    opened=st.booleans(),
    data=st.data(),
)
def test_inline_tags_split_anywhere_in_events_and_reads(
    reasoning, answer, opened, data
):
    assume("think>" not in reasoning + answer)
    raw = ("" if opened else "<think>\n") + reasoning + "\n</think>\n\n" + answer
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    body = b"".join(event(chunk(content=p)) for p in pieces if p) + DONE
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=20)))
    reads = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]

    events, error, _ = decode(reads, splitter=ThinkTagSplitter(opened=opened))

    assert error is None
    assert text(events, "thinking") == reasoning.strip()
    assert text(events, "content") == answer.lstrip()
