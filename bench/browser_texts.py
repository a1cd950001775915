"""The answers `bench.browser` has the simulator stream (plain words in
paragraphs, Chinese, rich markdown, token i being the word w<i>) and the long
history its conversations start with."""

from __future__ import annotations

import random
from typing import Any

from bench.browser_site import MODEL


def plain_answer(tokens: int, per_paragraph: int = 40) -> str:
    """``w0 w1 …`` in paragraphs: token i is the word ``w{i}``."""
    return "".join(
        ("\n\n" if i and i % per_paragraph == 0 else " " if i else "") + f"w{i}"
        for i in range(tokens)
    )


CHINESE = "流式输出的每个字都应该立刻显示在页面上不要等待也不要合并"


def chinese_answer(tokens: int) -> str:
    """One paragraph without spaces, as Chinese is written: ``w0流w1式…``, a
    character between markers, each its own token (the simulator splits CJK
    text a character at a time): marker i is token 2i."""
    return "".join(f"w{i}{CHINESE[i % len(CHINESE)]}" for i in range(tokens // 2))


_WORDS = [
    "the", "stream", "socket", "token", "model", "answer", "frame", "browser",
    "server", "latency", "buffer", "render", "block", "markdown", "code", "table",
    "list", "value", "thread", "queue", "event", "loop", "write", "read",
    "request", "response", "client", "worker", "budget", "measure", "simple",
    "fast", "small", "large",
]  # fmt: skip


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words[rng.randrange(n)] = f"**{rng.choice(_WORDS)}**"
    if rng.random() < 0.3:
        words[rng.randrange(n)] = f"`{rng.choice(_WORDS)}()`"
    return " ".join(words).capitalize() + "."


def _section(rng: random.Random, index: int) -> str:
    parts = [f"## Part {index}: {rng.choice(_WORDS)} and {rng.choice(_WORDS)}"]
    parts.append(" ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(3)))
    parts.append("\n".join(f"- {_sentence(rng, rng.randint(4, 9))}" for _ in range(4)))
    if index % 2:
        lines = [f"def {rng.choice(_WORDS)}_{index}(value):"]
        lines += [
            f"    {rng.choice(_WORDS)} = value + {k}  # {rng.choice(_WORDS)}"
            for k in range(rng.randint(6, 14))
        ]
        lines.append("    return value")
        parts.append("```python\n" + "\n".join(lines) + "\n```")
    if index % 3 == 0:
        rows = [
            f"| {rng.choice(_WORDS)} | {rng.randint(1, 999)} | {rng.choice(_WORDS)} |"
            for _ in range(4)
        ]
        parts.append("| name | value | note |\n|---|---|---|\n" + "\n".join(rows))
    if index % 4 == 0:
        parts.append(
            f"The cost is $O(n \\log n)$ and $\\sum_{{i=1}}^{{{index}}} i$ in all."
        )
    parts.append("\n".join(f"{k}. {_sentence(rng, 6)}" for k in range(1, 4)))
    return "\n\n".join(parts)


def rich_answer(tokens: int, seed: int = 1) -> str:
    """A long markdown answer (headings, lists, code, tables, math) of about
    ``tokens`` simulator tokens (one per whitespace-separated word)."""
    rng = random.Random(seed)
    sections: list[str] = []
    count = 0
    while count < tokens:
        sections.append(_section(rng, len(sections) + 1))
        count += len(sections[-1].split())
    return "\n\n".join(sections)


def history_messages(conversation_id: int, count: int) -> list[Any]:
    """``count`` finished messages (questions and markdown answers)."""
    from chat.models import Message

    out = []
    for i in range(count):
        if i % 2 == 0:
            out.append(
                Message(
                    conversation_id=conversation_id,
                    role="user",
                    content=f"Question {i // 2}: how does the {_WORDS[i % 30]} work?",
                )
            )
        else:
            out.append(
                Message(
                    conversation_id=conversation_id,
                    role="assistant",
                    status="done",
                    model_tag=MODEL,
                    content=rich_answer(350, seed=i),
                )
            )
    return out
