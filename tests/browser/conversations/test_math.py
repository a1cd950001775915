"""The browser's inline math scan (static/chat/markdown.js) in Chromium: the same
spans as the scan it replaced and as the server's, with work linear in the text."""

from __future__ import annotations

import random

import pytest

from chat.rendering.math import match_inline_math
from tests.browser.chat_page import open_conversation
from tests.rendering.math_texts import NEVER_CLOSING, PIECES

pytestmark = pytest.mark.django_db(transaction=True)

# The scan as it was, the definition of the rules: from every opener, forward
# through every closing delimiter until one may close.
REFERENCE = r"""
const DELIMITERS = { $: "$", $$: "$$", "\\(": "\\)", "\\[": "\\]" };
const isSpace = (code) => code === 32 || code === 9 || code === 10 || code === 13;
const isDigit = (code) => code >= 48 && code <= 57;
function referenceMatch(src, start) {
  let open = null;
  if (src.startsWith("$$", start)) open = "$$";
  else if (src[start] === "$") open = "$";
  else if (src.startsWith("\\(", start)) open = "\\(";
  else if (src.startsWith("\\[", start)) open = "\\[";
  if (!open) return null;
  const close = DELIMITERS[open];
  const from = start + open.length;
  const spaceFirst = from >= src.length || isSpace(src.charCodeAt(from));
  if (open === "$" && spaceFirst) return null;
  let end = src.indexOf(close, from);
  while (end !== -1) {
    const escaped = src.charCodeAt(end - 1) === 92;
    const spaced = open === "$" && isSpace(src.charCodeAt(end - 1));
    const digit = open === "$" && isDigit(src.charCodeAt(end + 1));
    if (end > from && !escaped && !spaced && !digit) {
      return { open, content: src.slice(from, end), end: end + close.length };
    }
    end = src.indexOf(close, end + 1);
  }
  return null;
}
"""

COMPARE = (
    "async (texts) => {"
    + REFERENCE
    + r"""
  const { matchInlineMath } = await import("/static/chat/markdown.js");
  const differences = [];
  const ends = texts.map((text) => {
    const found = [];
    for (let start = 0; start <= text.length; start++) {
      const got = matchInlineMath(text, start);
      const want = referenceMatch(text, start);
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        differences.push({ text, start, got, want });
      }
      found.push(got ? got.end : -1);
    }
    return found;
  });
  return { differences: differences.slice(0, 5), ends };
}"""
)


def corpus(count: int = 1500, seed: int = 11) -> list[str]:
    """Ordinary text as far as math goes (the pieces of tests/rendering/test_math)."""
    rng = random.Random(seed)
    return [
        "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        for _ in range(count)
    ]


def server_ends(text: str) -> list[int]:
    found = (match_inline_math(text, start) for start in range(len(text) + 1))
    return [math.end if math else -1 for math in found]


def test_the_scan_finds_what_the_old_scan_and_the_server_find(
    live_server_url, page, login, conversation, alice
):
    open_conversation(page, login, live_server_url, conversation, alice)
    texts = corpus()
    result = page.evaluate(COMPARE, texts)
    assert result["differences"] == []
    # The server's rules are the browser's, but for spaces and digits outside
    # ASCII (Python's str.isspace and str.isdigit).
    for text, ends in zip(texts, result["ends"], strict=True):
        if text.isascii():
            assert ends == server_ends(text), text


# Counts the characters that the string methods look at while `matchInlineMath`
# is tried at every position of the text, as the inline parser does.
LOOKED_AT = r"""async (text) => {
  const { matchInlineMath } = await import("/static/chat/markdown.js");
  const methods = ["indexOf", "charCodeAt", "startsWith", "slice", "at"];
  const saved = methods.map((name) => String.prototype[name]);
  let looked = 0;
  const counted = {
    indexOf(sub, from = 0) {
      const found = saved[0].call(this, sub, from);
      looked += (found === -1 ? this.length : found + sub.length) - from;
      return found;
    },
    charCodeAt(i) { looked += 1; return saved[1].call(this, i); },
    startsWith(prefix, from) {
      looked += prefix.length;
      return saved[2].call(this, prefix, from);
    },
    slice(a, b) {
      const part = saved[3].call(this, a, b);
      looked += part.length;
      return part;
    },
    at(i) { looked += 1; return saved[4].call(this, i); },
  };
  methods.forEach((name) => { String.prototype[name] = counted[name]; });
  try {
    for (let start = 0; start < text.length; start++) {
      looked += 1; // text[start]
      matchInlineMath(text, start);
    }
  } finally {
    methods.forEach((name, i) => { String.prototype[name] = saved[i]; });
  }
  return looked;
}"""


def test_a_paragraph_of_openers_that_never_close_is_scanned_once(
    live_server_url, page, login, conversation, alice
):
    """`"$1" × 7,500` froze the page: each `$` searched through every later one."""
    open_conversation(page, login, live_server_url, conversation, alice)
    for piece in NEVER_CLOSING:
        text = piece * 1500
        assert page.evaluate(LOOKED_AT, text) < 40 * len(text), piece
