"""What the simulated model says: deterministic thinking and answer tokens."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from chat.simulator.config import SimulatorConfig
from chat.simulator.received import text_of

_TOPICS = (
    "streaming responses",
    "back-pressure",
    "connection pooling",
    "UTF-8 decoding",
    "rate limiting",
    "caching",
    "retries with back-off",
    "the café menu parser",
    "naïve tokenisers",
    "résumé parsing",
    "context windows",
    "async I/O",
)

_THINK_OPENERS = (
    "Okay — the user is asking about {topic}.",
    "Hmm — this question is about {topic}.",
    "Alright — let me think about {topic} for a moment.",
)

_THINK_SENTENCES = (
    "Let me think about what they actually need here.",
    "First, I should recall how {topic} works in practice.",
    "Maybe a short example would make this clearer.",
    "They probably want something concrete rather than a lecture.",
    "I could mention the trade-offs, but I should keep it brief.",
    "Wait, there is an edge case: what if the input is empty?",
    "A bulleted summary followed by a small code sample should work.",
    "I'll keep the tone friendly and the answer self-contained.",
    "Let me double-check the details before answering.",
    "Is there a simpler way to say this? Probably, yes.",
    "The naïve approach works, but it buffers too much.",
    "So the plan is: overview, key points, a snippet, then a summary.",
)

_INTRO_OPENERS = (
    "Sure — here's a quick overview of {topic}.",
    "Good question — {topic} is easier than it looks.",
    "Happy to help — let's walk through {topic}.",
)

_PROSE = (
    "The short version: {topic} is mostly about doing less work at the right moment.",
    "In practice, most problems with {topic} come from buffering in the wrong place.",
    "It helps to measure first, because guessing rarely pays off.",
    "Think of it as a pipeline where every stage passes data along at once.",
    "A good default is to keep things simple and optimise only what you observe.",
    "This works the same way locally or on a shared server 🚀.",
    "Small, boring building blocks tend to survive production best.",
    "When in doubt, write a test that reproduces the problem first.",
    "The café analogy helps: serve each cup when it's ready, not in batches ☕.",
)

_BULLETS = (
    "**Measure** the latency at each hop before changing anything.",
    "**Stream** results as they are produced instead of batching them.",
    "**Cache** what is expensive to compute and cheap to store.",
    "**Retry** with back-off, never in a tight loop.",
    "**Validate** input early and fail with a clear message.",
    "**Log** enough context to reproduce a problem later ✨.",
    "Keep the configuration in one place, e.g. a `settings.py` file.",
    "Prefer small functions with one job each.",
)

_HEADINGS = ("Details", "A closer look", "Common pitfalls", "Next steps", "Example")

_CODE = (
    "```python\nimport asyncio\n\n\nasync def relay(chunks, send):\n"
    "    async for chunk in chunks:\n        await send(chunk)\n```",
    "```python\ndef fibonacci(n: int) -> list[int]:\n    seq = [0, 1]\n"
    "    while len(seq) < n:\n        seq.append(seq[-1] + seq[-2])\n"
    "    return seq[:n]\n```",
    "```python\nfrom functools import lru_cache\n\n\n@lru_cache(maxsize=128)\n"
    'def greet(name: str) -> str:\n    return f"Bonjour, {name} 👋"\n```',
)

_CLOSINGS = (
    "Let me know if you'd like a deeper dive into any of these points.",
    "That should cover the common cases; edge cases deserve a test or two.",
    "In short: measure, simplify, and stream. 🙂",
    "If anything is unclear, just ask and I'll expand on it.",
)

# A word with the whitespace before it; Chinese, Japanese and Korean text (no
# spaces between words) a character at a time, as real tokenizers emit it.
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef"
_WORD_RE = re.compile(rf"\s*[{_CJK}]|\s*[^\s{_CJK}]+|\s+")


def split_tokens(text: str) -> list[str]:
    """Split text into word tokens (each with its leading whitespace; CJK text a
    character at a time), losslessly."""
    return _WORD_RE.findall(text)


def _word_pieces(text: str) -> list[str]:
    # Long plain words become two pieces, as a real tokenizer would split them.
    pieces: list[str] = []
    for token in split_tokens(text):
        core = token.lstrip()
        if len(core) >= 9 and core.rstrip(".,;").isalpha():
            cut = len(token) - len(core) + len(core) // 2 + 1
            pieces += [token[:cut], token[cut:]]
        else:
            pieces.append(token)
    return pieces


def _sentences(rng: random.Random, pool: Sequence[str], topic: str, n: int) -> str:
    return " ".join(s.format(topic=topic) for s in rng.sample(pool, n))


def _thinking_pieces(rng: random.Random, topic: str, count: int) -> list[str]:
    opener = rng.choice(_THINK_OPENERS).format(topic=topic)
    paragraphs = [f"{opener} {_sentences(rng, _THINK_SENTENCES, topic, 2)}"]
    # Blocks never start or end with whitespace, so pieces add up per block.
    size = len(_word_pieces(paragraphs[0]))
    while size < count:
        paragraphs.append(_sentences(rng, _THINK_SENTENCES, topic, 3))
        size += len(_word_pieces(paragraphs[-1]))
    pieces = _word_pieces("\n\n".join(paragraphs))
    pool = [t.format(topic=topic) for t in _THINK_SENTENCES]
    return _trim(rng, pieces, count, pool, _THINK_FILLERS)


def _answer_blocks(rng: random.Random, topic: str, count: int) -> list[str]:
    intro = rng.choice(_INTRO_OPENERS).format(topic=topic)
    blocks = [f"{intro} {_sentences(rng, _PROSE, topic, 2)}"]
    if count >= 40:
        blocks.append(_bullets(rng))
    if count >= 120:
        blocks.append(rng.choice(_CODE))
    return blocks


def _bullets(rng: random.Random) -> str:
    return "\n".join(f"- {b}" for b in rng.sample(_BULLETS, rng.randint(3, 4)))


def _section(rng: random.Random, topic: str, number: int) -> list[str]:
    blocks = [f"### {rng.choice(_HEADINGS)}", _sentences(rng, _PROSE, topic, 3)]
    if number % 3 == 1:
        blocks.append(_bullets(rng))
    elif number % 3 == 2:
        blocks.append(rng.choice(_CODE))
    return blocks


def _answer_pieces(rng: random.Random, topic: str, count: int) -> list[str]:
    blocks = _answer_blocks(rng, topic, count)
    closing = rng.choice(_CLOSINGS)
    size = sum(len(_word_pieces(b)) for b in [*blocks, closing])
    number = 0
    while size < count:
        number += 1
        section = _section(rng, topic, number)
        blocks += section
        size += sum(len(_word_pieces(b)) for b in section)
    pieces = _word_pieces("\n\n".join([*blocks, closing]))
    return _trim(rng, pieces, count, _CLOSINGS, _ANSWER_FILLERS)


_THINK_FILLERS = (
    "Right.",
    "Okay, good.",
    "That seems right.",
    "Yes, that should work.",
)

_ANSWER_FILLERS = ("Enjoy!", "Happy coding!", "Hope that helps!", "Good luck with it!")


def _trim(
    rng: random.Random,
    pieces: list[str],
    count: int,
    pool: Sequence[str],
    fillers: Sequence[str],
) -> list[str]:
    """Exactly ``count`` pieces that end on a whole sentence, outside code.

    Cuts back to the last clean sentence end, then fills the gap with whole
    sentences from ``pool`` and short ``fillers`` (1 to 4 pieces each).
    """
    keep = _clean_end(pieces[:count])
    result = pieces[:keep]
    gap = count - keep
    after_block = keep < len(pieces) and pieces[keep].startswith("\n")
    joiner = "" if keep == 0 else "\n\n" if after_block else " "
    while gap > 0:
        fits = [s for s in pool if len(_word_pieces(s)) <= gap]
        # fillers[i] is i + 1 pieces long, so any gap closes exactly.
        sentence = rng.choice(fits) if fits else fillers[min(gap, len(fillers)) - 1]
        added = _word_pieces(joiner + sentence)
        result += added
        gap -= len(added)
        joiner = " "
    return result


def _clean_end(pieces: list[str]) -> int:
    """How many leading pieces end on a sentence end outside a code fence."""
    best = 0
    in_code = False
    for i, piece in enumerate(pieces):
        if piece.count("```") % 2:
            in_code = not in_code
            if not in_code:
                best = i + 1
        elif not in_code and piece.endswith((".", "!", "?")):
            best = i + 1
    return best


@dataclass(frozen=True)
class Script:
    """What the model will say: thinking and content tokens, JSON-encoded too."""

    thinking: tuple[str, ...]
    content: tuple[str, ...]
    thinking_json: tuple[bytes, ...]
    content_json: tuple[bytes, ...]

    @classmethod
    def of(cls, thinking: Sequence[str], content: Sequence[str]) -> Script:
        return cls(tuple(thinking), tuple(content), _encode(thinking), _encode(content))


def _encode(tokens: Sequence[str]) -> tuple[bytes, ...]:
    # backslashreplace: a lone surrogate (a fault to script) goes out as the JSON
    # escape "\\udXXX" that a faulty server would send.
    return tuple(
        json.dumps(t, ensure_ascii=False).encode("utf-8", "backslashreplace")
        for t in tokens
    )


@lru_cache(maxsize=256)
def _script(
    seed: int,
    prompt: str,
    think_tokens: int,
    answer_tokens: int,
    thinking_text: str | None,
    answer_text: str | None,
) -> Script:
    rng = random.Random(f"{seed}\x00{prompt}")
    topic = rng.choice(_TOPICS)
    thinking = (
        split_tokens(thinking_text)
        if thinking_text is not None
        else _thinking_pieces(rng, topic, think_tokens)
    )
    content = (
        split_tokens(answer_text)
        if answer_text is not None
        else _answer_pieces(rng, topic, answer_tokens)
    )
    return Script.of(thinking, content)


def reply_script(
    config: SimulatorConfig, messages: Sequence[Any], *, think: bool
) -> Script:
    """The reply the simulator gives to ``messages`` (deterministic per seed)."""
    script = _script(
        config.seed,
        last_user_text(messages),
        config.think_tokens,
        config.answer_tokens,
        config.thinking_text,
        config.answer_text,
    )
    if think:
        return script
    return Script((), script.content, (), script.content_json)


def last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return text_of(message.get("content", ""))
    return ""
