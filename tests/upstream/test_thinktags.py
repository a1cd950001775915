from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chat.upstream import Delta
from chat.upstream.thinktags import ThinkTagSplitter


def split(pieces: list[str], *, opened: bool = False) -> list[Delta]:
    splitter = ThinkTagSplitter(opened=opened)
    deltas = [d for piece in pieces for d in splitter.feed(piece)]
    return deltas + splitter.close()


def joined(deltas: list[Delta]) -> tuple[str, str]:
    def text(kind: str) -> str:
        return "".join(d.text for d in deltas if d.kind == kind)

    return text("thinking"), text("content")


CASES = {
    "no tags": (["Hello", " world"], False, ("", "Hello world")),
    "Qwen3 thinking block": (
        ["<think>\nHmm, ok.\n</think>\n\nHello"],
        False,
        ("Hmm, ok.", "Hello"),
    ),
    "tags split across chunks": (
        ["<th", "ink>", "\nHmm", " ok\n</", "think", ">\n\nHel", "lo"],
        False,
        ("Hmm ok", "Hello"),
    ),
    "whitespace first chunk": (
        ["\n", "  ", "<think>a</think>b"],
        False,
        ("a", "b"),
    ),
    "empty block of /no_think": (
        ["<think>\n\n</think>\n\n", "Answer"],
        False,
        ("", "Answer"),
    ),
    "only the closing tag (Thinking-2507, R1), opened": (
        ["Let me", " see.\n", "</think>\n\n", "Yes."],
        True,
        ("Let me see.", "Yes."),
    ),
    "opened, and the model opens it anyway": (
        ["<think>\nLet me see.</think>Yes."],
        True,
        ("Let me see.", "Yes."),
    ),
    "closing tag first, not opened": (["</think>\n\nYes."], False, ("", "Yes.")),
    "a tag later in the answer is text": (
        ["Use <think> tags like", " </think>"],
        False,
        ("", "Use <think> tags like </think>"),
    ),
    "something that looks like a tag": (["<thinking>x"], False, ("", "<thinking>x")),
    "unfinished opening tag at the end": (["<thi"], False, ("", "<thi")),
    "unfinished closing tag at the end": (
        ["<think>abc </thi"],
        False,
        ("abc </thi", ""),
    ),
    "cut while thinking": (["<think>abc", " def"], False, ("abc def", "")),
    "a lone < inside the reasoning": (
        ["<think>a < b", " and c</think>d"],
        False,
        ("a < b and c", "d"),
    ),
    "inner whitespace of the reasoning is kept": (
        ["<think>a\n\n", "b</think>c"],
        False,
        ("a\n\nb", "c"),
    ),
    "nothing at all": ([], False, ("", "")),
}


@pytest.mark.parametrize(
    ("pieces", "opened", "expected"), CASES.values(), ids=CASES.keys()
)
def test_split(pieces, opened, expected):
    deltas = split(pieces, opened=opened)
    assert joined(deltas) == expected
    assert all(d.text for d in deltas)
    kinds = [d.kind for d in deltas]
    assert kinds == sorted(kinds, key=lambda k: k == "content")  # thinking first


def test_answer_text_passes_through_at_once():
    splitter = ThinkTagSplitter()
    assert splitter.feed("Hello") == [Delta("content", "Hello")]
    assert splitter.feed(" <") == [Delta("content", " <")]


def test_reasoning_is_not_held_back_beyond_a_possible_tag():
    splitter = ThinkTagSplitter()
    assert splitter.feed("<think>one two") == [Delta("thinking", "one two")]
    assert splitter.feed(" three </th") == [Delta("thinking", " three")]


def test_server_separated_reasoning_makes_the_content_answer():
    splitter = ThinkTagSplitter(opened=True)
    splitter.server_separates()
    assert splitter.feed("Yes.") == [Delta("content", "Yes.")]


def test_server_separates_after_reasoning_was_split_changes_nothing():
    splitter = ThinkTagSplitter(opened=True)
    assert splitter.feed("hmm ") == [Delta("thinking", "hmm")]
    splitter.server_separates()
    assert splitter.feed("more") == [Delta("thinking", " more")]


WORDS = st.sampled_from(
    ["a", "b ", " c", "\n", "\n\n", " ", "<", ">", "/", "think", "é", "🚀", "x y"]
)
TEXT = st.lists(WORDS, max_size=8).map("".join)


# No deadline: the machine is shared, and speed is the benchmark's business.
@settings(deadline=None)
@given(
    before=st.sampled_from(["", " ", "\n"]),
    opening=st.booleans(),
    reasoning=TEXT,
    closing=st.booleans(),
    answer=TEXT,
    opened=st.booleans(),
    data=st.data(),
)
def test_any_split_of_a_text_gives_the_same_reasoning_and_answer(
    before, opening, reasoning, closing, answer, opened, data
):
    text = before + ("<think>" if opening else "") + reasoning
    text += ("</think>\n\n" if closing else "") + answer
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]

    deltas = split(pieces, opened=opened)

    assert joined(deltas) == joined(split([text], opened=opened))
    kinds = [d.kind for d in deltas]
    assert kinds == sorted(kinds, key=lambda k: k == "content")
    assert all(d.text for d in deltas)


# No deadline: the machine is shared, and speed is the benchmark's business.
@settings(deadline=None)
@given(reasoning=TEXT, answer=TEXT, opened=st.booleans())
def test_a_thinking_block_is_split_out(reasoning, answer, opened):
    assume("<think>" not in reasoning and "</think>" not in reasoning)
    text = f"<think>\n{reasoning}\n</think>\n\n{answer}"
    assert joined(split([text], opened=opened)) == (reasoning.strip(), answer.lstrip())
