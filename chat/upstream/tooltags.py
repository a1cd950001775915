"""Qwen3's inline `<tool_call>` tags, split out of a model's answer text.

Without a tool parser on the server (vLLM without `--tool-call-parser`,
llama.cpp without `--jinja`) a Qwen3 model that calls a tool writes the call
into its answer: `<tool_call>\\n{"name": "search", "arguments": {"q": "..."}}\\n
</tool_call>`. `ToolTagSplitter` takes the answer text (after `thinktags` took
the reasoning out: a tag the model writes while thinking is not a call) and
gives the text around the tags as content and each call as `ToolCallDelta`s:
the name once it is known, then the `arguments` value as its pieces arrive,
found by following the JSON's strings and brackets (`JSONValueEnd`) rather
than by parsing it whole at the end. Like `thinktags`, it holds back only a
trailing piece that may be the start of a tag, so a tag cut anywhere across
network reads is found.

Text between the tags that is not a JSON call is never lost: a call whose
name cannot be read goes to the engine with no name and its whole text as the
arguments (the engine tells the model so). Made only when tools were offered.
"""

from __future__ import annotations

import json
import re

from chat.upstream.events import Delta, Event, ToolCallDelta
from chat.upstream.thinktags import ThinkTagSplitter, partial_tag
from chat.upstream.toolcalls import ToolCalls

OPEN = "<tool_call>"
CLOSE = "</tool_call>"

_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
# Qwen's template says "arguments"; some fine-tunes write "parameters".
_ARGUMENTS = re.compile(r'"(?:arguments|parameters)"\s*:\s*')
# The name and the start of the arguments come first in a call: past this
# much text without them it is not the JSON of a call (read whole at the end).
_LOOK_LIMIT = 16 * 1024


class ToolTagSplitter:
    """Content and tool calls out of answer text; wraps the reply's
    `ThinkTagSplitter` when the profile reads `<think>` tags too."""

    __slots__ = ("calls", "_think", "_pending", "_call", "_strip")

    def __init__(self, calls: ToolCalls, think: ThinkTagSplitter | None) -> None:
        # The reply's calls, numbered with those the server parsed itself.
        self.calls = calls
        self._think = think
        self._pending = ""
        self._call: _TagCall | None = None
        # Whitespace after a call (between calls, at the end) is dropped.
        self._strip = False

    def feed(self, text: str) -> list[Event]:
        """Return the events `text` makes certain, in order."""
        if self._think is None:
            return self._split(text)
        return self._after_thinking(self._think.feed(text))

    def close(self) -> list[Event]:
        """Return what was held back when the text ends: an unfinished tag is
        text, an unclosed call is a call."""
        out = [] if self._think is None else self._after_thinking(self._think.close())
        rest, self._pending = self._pending, ""
        if self._call is not None:
            self._call.feed(rest, out)
            self._call.close(out)
            self._call = None
        elif rest:  # the start of an opening tag, never finished
            out.append(Delta("content", rest))
        return out

    def server_separates(self) -> None:
        if self._think is not None:
            self._think.server_separates()

    def _after_thinking(self, deltas: list[Delta]) -> list[Event]:
        out: list[Event] = []
        for delta in deltas:
            if delta.kind == "content":
                out += self._split(delta.text)
            else:
                out.append(delta)
        return out

    def _split(self, text: str) -> list[Event]:
        if (
            "<" not in text
            and self._call is None
            and not (self._pending or self._strip)
        ):
            return [Delta("content", text)] if text else []  # the hot path
        out: list[Event] = []
        text = self._pending + text
        self._pending = ""
        while text:
            call = self._call
            if call is None:
                if self._strip:
                    text = text.lstrip()
                    if not text:
                        break
                    self._strip = False
                start = text.find(OPEN)
                if start < 0:
                    keep = partial_tag(text, OPEN)
                    if keep:
                        text, self._pending = text[:-keep], text[-keep:]
                    if text:
                        out.append(Delta("content", text))
                    break
                if start:
                    out.append(Delta("content", text[:start]))
                self._call = _TagCall(*self.calls.new_call())
                text = text[start + len(OPEN) :]
                continue
            end = text.find(CLOSE)
            if end < 0:
                keep = partial_tag(text, CLOSE)
                call.feed(text[: len(text) - keep], out)
                self._pending = text[len(text) - keep :]
                break
            call.feed(text[:end], out)
            call.close(out)
            self._call = None
            self._strip = True
            text = text[end + len(CLOSE) :]
        return out


class _TagCall:
    """The text of one `<tool_call>` as it arrives: its name read from the
    JSON's start, its arguments value streamed."""

    __slots__ = ("index", "id", "name", "_body", "_raw", "_held", "_value", "_done")

    def __init__(self, index: int, id: str) -> None:
        self.index = index
        self.id = id
        self.name: str | None = None
        # The call's JSON outside its arguments value, and all of it while the
        # name is not known (read whole at the end if it never is).
        self._body = ""
        self._raw: list[str] | None = []
        # The arguments written before the name (the first delta carries it).
        self._held: list[str] = []
        self._value: JSONValueEnd | None = None
        self._done = False

    def feed(self, text: str, out: list[Event]) -> None:
        if not text:
            return
        if self._raw is not None:
            self._raw.append(text)
        if self._value is not None and not self._done:
            self._arguments(text, out)
        else:
            self._body += text
            self._look(out)

    def close(self, out: list[Event]) -> None:
        if self.name is None:
            out.append(self._whole())
        elif self._value is None:
            # No arguments key: `{"name": "now"}` is a call without arguments;
            # any other key goes to the model's arguments, for the engine's
            # check to name.
            out.append(ToolCallDelta(self.index, arguments=_rest_of(self._body)))

    def _arguments(self, text: str, out: list[Event]) -> None:
        value = self._value
        assert value is not None
        if not value.started:
            text = text.lstrip()
            if not text:
                return
        end = value.feed(text)
        piece = text if end < 0 else text[:end]
        if piece:
            if self.name is None:
                self._held.append(piece)
            else:
                out.append(ToolCallDelta(self.index, arguments=piece))
        if end >= 0:
            self._done = True
            self._body += text[end:]
            self._look(out)

    def _look(self, out: list[Event]) -> None:
        """Find the name and the start of the arguments in the text so far."""
        if len(self._body) > _LOOK_LIMIT:
            return
        if self._value is None:
            found = _ARGUMENTS.search(self._body)
            if found is not None:
                rest = self._body[found.end() :]
                self._body = self._body[: found.start()]
                self._value = JSONValueEnd()
                self._name(out)  # from the text before the arguments
                self._arguments(rest, out)
                return
        self._name(out)

    def _name(self, out: list[Event]) -> None:
        if self.name is not None:
            return
        found = _NAME.search(self._body)
        if found is None:
            return
        try:
            self.name = json.loads(f'"{found.group(1)}"')
        except ValueError:
            self.name = found.group(1)
        self._raw = None
        held, self._held = "".join(self._held), []
        out.append(ToolCallDelta(self.index, self.id, self.name or "", held))

    def _whole(self) -> ToolCallDelta:
        """The call of a tag whose name was not found while it streamed: read
        whole, or given as it is (no name: the engine reports it)."""
        raw = "".join(self._raw or ()).strip()
        try:
            call = json.loads(raw)
        except (ValueError, RecursionError):
            call = None
        if isinstance(call, dict) and isinstance(call.get("name"), str):
            arguments = call.get("arguments", call.get("parameters", {}))
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            return ToolCallDelta(self.index, self.id, call["name"], arguments)
        return ToolCallDelta(self.index, self.id, "", raw)


def _rest_of(body: str) -> str:
    """The JSON text of a call's keys but its name: `{}` for a bare call."""
    try:
        call = json.loads(body)
    except (ValueError, RecursionError):
        return body.strip()
    if not isinstance(call, dict):
        return body.strip()
    rest = {key: value for key, value in call.items() if key != "name"}
    return json.dumps(rest, ensure_ascii=False)


_OUTSIDE = re.compile(r'[{}\[\]",]')
_INSIDE = re.compile(r'["\\]')


class JSONValueEnd:
    """Where a JSON value ends, in text fed piece by piece: its strings and
    brackets followed with a regular expression from one to the next (a large
    value is not walked a character at a time in Python). It does not check
    the JSON; the engine parses the whole arguments."""

    __slots__ = ("started", "_depth", "_string", "_escape")

    def __init__(self) -> None:
        self.started = False
        self._depth = 0
        self._string = False
        self._escape = False

    def feed(self, text: str) -> int:
        """Return where in `text` the value ended (the index after it), or -1."""
        size = len(text)
        at = 0
        if text and not text.isspace():
            self.started = True
        if self._escape and size:
            self._escape = False
            at = 1  # the character a backslash at the end of the last piece escaped
        while at < size:
            if self._string:
                found = _INSIDE.search(text, at)
                if found is None:
                    return -1
                at = found.end()
                if found.group() == "\\":
                    if at == size:
                        self._escape = True
                        return -1
                    at += 1
                    continue
                self._string = False
                if self._depth == 0:
                    return at  # a string value
                continue
            found = _OUTSIDE.search(text, at)
            if found is None:
                return -1
            mark = found.group()
            if mark == '"':
                self._string = True
                at = found.end()
            elif mark in "{[":
                self._depth += 1
                at = found.end()
            elif self._depth == 0:
                return found.start()  # the call's own `,` or `}` after a scalar
            elif mark == ",":
                at = found.end()
            else:
                self._depth -= 1
                at = found.end()
                if self._depth == 0:
                    return at
        return -1
