"""Lines of a streamed body and their JSON values (`chat.upstream.lines`)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chat.upstream.lines import complete_lines, json_value

# Any code point, lone surrogates included: JSON may escape them ("\ud800").
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()  # NaN and the infinities too (`json.dumps` writes them)
    | any_text,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4)
    ),
    max_leaves=12,
)


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(json_values)
def test_a_line_is_read_as_the_standard_library_reads_it(value):
    escaped = json.dumps(value)  # lone surrogates as \u escapes
    assert same(json_value(escaped.encode()), json.loads(escaped))
    assert same(json_value(escaped), json.loads(escaped))


def test_an_integer_past_64_bits_is_read_as_a_float():
    # The one difference: no count or duration a model server sends is that
    # large, and none would fit the database's integer columns.
    assert json_value(b"18446744073709551616") == float(2**64)
    assert json_value(b"-9223372036854775809") == -float(2**63)


@pytest.mark.parametrize(
    "line",
    [b"", b"{", b"<html>", b'{"a": 1} x', b"\xff\xfe", b"[" * 100_000],
)
def test_what_is_not_json_raises_as_the_standard_library_does(line):
    with pytest.raises((ValueError, RecursionError)) as ours:
        json_value(line)
    with pytest.raises((ValueError, RecursionError)) as theirs:
        json.loads(line)
    assert isinstance(ours.value, type(theirs.value))


def test_lines_are_split_as_bytes_and_the_rest_kept():
    buffer = bytearray()
    assert complete_lines(buffer, b'{"a"') == []
    assert complete_lines(buffer, b': "\xc3') == []
    assert complete_lines(buffer, b'\xa9"}\n{"b"') == [b'{"a": "\xc3\xa9"}']
    assert bytes(buffer) == b'{"b"'
