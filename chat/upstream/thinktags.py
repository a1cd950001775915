"""Inline `<think>...</think>` reasoning, split out of a model's answer text.

Without a reasoning parser on the server (vLLM without `--reasoning-parser`,
llama.cpp `--reasoning-format none`, LM Studio with separation off) a thinking
model's raw text arrives as content: `<think>\\n...\\n</think>\\n\\n` and then the
answer. Templates that open the tag in the prompt (Qwen3-Thinking-2507,
DeepSeek-R1) make the output start with the reasoning and only close the tag;
a splitter made with `opened=True` expects that (and still accepts an opening
tag). See `docs/model-servers.md` section 2.6.

The splitter is incremental and holds back only what it cannot label yet: a
trailing piece that may be the start of a tag, and whitespace at the edges of
the reasoning (dropped, as it is at the start of the answer). However the text
is split into pieces, the reasoning and the answer come out the same.
"""

from __future__ import annotations

from typing import Literal

from chat.upstream.events import Delta

OPEN = "<think>"
CLOSE = "</think>"

State = Literal["unknown", "thinking", "answer"]


class ThinkTagSplitter:
    __slots__ = ("state", "_pending", "_strip", "emitted")

    def __init__(self, *, opened: bool = False) -> None:
        self.state: State = "thinking" if opened else "unknown"
        self._pending = ""
        # Whitespace at the start of the reasoning or the answer is dropped.
        self._strip = True
        self.emitted = False

    def feed(self, text: str) -> list[Delta]:
        """Return the thinking and content pieces `text` makes certain, in order."""
        if self.state == "answer" and not self._strip:
            return [Delta("content", text)] if text else []  # the hot path
        out: list[Delta] = []
        text = self._pending + text
        self._pending = ""
        while text:
            if self.state == "unknown":
                text = self._unknown(text)
            elif self.state == "thinking":
                text = self._thinking(text, out)
            else:
                if self._strip:
                    text = text.lstrip()
                    if not text:
                        break
                    self._strip = False
                out.append(Delta("content", text))
                break
        if out:
            self.emitted = True
        return out

    def close(self) -> list[Delta]:
        """Return what was held back when the text ends (an unfinished tag is text)."""
        rest, self._pending = self._pending, ""
        if self.state == "unknown":
            rest = rest.strip()
            return [Delta("content", rest)] if rest else []
        rest = rest.rstrip() if self.state == "thinking" else rest
        if self._strip:
            rest = rest.lstrip()
        return [Delta(_kind(self.state), rest)] if rest else []

    def server_separates(self) -> None:
        """The server sends reasoning in its own field: the content is all answer."""
        if not self.emitted and self.state == "thinking":
            self.state = "unknown"

    def _unknown(self, text: str) -> str:
        """Decide from the first non-blank text: a tag opens or closes thinking,
        anything else is the answer. Return the text still to handle."""
        start = text.lstrip()
        tags: tuple[tuple[str, State], ...] = ((OPEN, "thinking"), (CLOSE, "answer"))
        for tag, state in tags:
            if start.startswith(tag):
                self.state = state
                self._strip = True
                return start[len(tag) :]
            if tag.startswith(start):
                self._pending = text  # blank, or maybe the start of a tag
                return ""
        self.state = "answer"
        self._strip = True
        return start

    def _thinking(self, text: str, out: list[Delta]) -> str:
        if self._strip:
            text = text.lstrip()
            if not text:
                return ""
            if text.startswith(OPEN):  # an opening tag the splitter did not need
                return text[len(OPEN) :]
            if OPEN.startswith(text):
                self._pending = text
                return ""
            self._strip = False
        end = text.find(CLOSE)
        if end >= 0:
            reasoning = text[:end].rstrip()
            if reasoning:
                out.append(Delta("thinking", reasoning))
            self.state = "answer"
            self._strip = True
            return text[end + len(CLOSE) :]
        keep = partial_tag(text, CLOSE)
        body = text[: len(text) - keep]
        reasoning = body.rstrip()
        if reasoning:
            out.append(Delta("thinking", reasoning))
        self._pending = text[len(reasoning) :]
        return ""


def partial_tag(text: str, tag: str) -> int:
    """Return the length of the longest end of `text` that starts `tag` (but
    is not all of it): where the tag's first character is, in its last
    characters (`tooltags` asks this of every piece of an answer)."""
    start = max(0, len(text) - len(tag) + 1)
    while (at := text.find(tag[0], start)) >= 0:
        if tag.startswith(text[at:]):
            return len(text) - at
        start = at + 1
    return 0


def _kind(state: State) -> Literal["thinking", "content"]:
    return "thinking" if state == "thinking" else "content"
