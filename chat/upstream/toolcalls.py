"""Tool calls on the wire: the calls a model server sends, as `ToolCallDelta`s
(the history of a tool turn sent back is in `outgoing`).

Offered tools arrive in one of three forms (docs/tools.md, "The model servers"):
Ollama's `message.tool_calls` (whole calls, arguments as a JSON object, no id
before Ollama 0.12), OpenAI's streamed `delta.tool_calls` (the first piece of a
call with its index, id and name, then pieces of its arguments text; some
servers send a call whole in one piece, repeat its id and name in every piece,
leave out the index or skip one) and Qwen3's inline `<tool_call>` tags
(`tooltags`). `ToolCalls` numbers the calls of one reply 0, 1, 2... in the order
they begin, gives each the server's id or a made-up `call_<n>`, and makes a
reply that held calls end with `Finished(done_reason="tool_calls")` (Ollama
says "stop", and so do some OpenAI-compatible servers).

Nothing here runs for an answer without tools: the readers make a `ToolCalls`
only when tools were offered (the plain text path stays as it was).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

from chat.upstream.events import Event, Finished, ToolCallDelta

# The done reasons of a reply that ended because the model stopped writing;
# with calls in it, it stopped to have them run. ("length" stays: the calls
# were cut, and the engine should know.)
_STOPPED = ("", "stop", "tool_calls")


class _Call:
    """One call of a reply as its pieces arrive."""

    __slots__ = ("index", "id", "name", "held", "announced")

    def __init__(self, index: int, id: str) -> None:
        self.index = index
        self.id = id
        self.name = ""
        # Arguments that came before the name (the first delta carries it).
        self.held = ""
        self.announced = False


class ToolCalls:
    """The tool calls of one model reply, whichever form they arrive in."""

    __slots__ = ("count", "_keys", "_calls", "_last")

    def __init__(self) -> None:
        self.count = 0
        self._keys: dict[tuple[str, object], _Call] = {}
        self._calls: list[_Call] = []
        self._last: _Call | None = None

    def new_call(self) -> tuple[int, str]:
        """The index and made-up id of a call its caller tells itself (an
        inline tag)."""
        call = self._new("")
        call.announced = True
        return call.index, call.id

    def ollama(self, calls: object, events: list[Event]) -> None:
        """Append a delta per call of Ollama's `message.tool_calls` (whole calls,
        arguments as an object). A call whose id was seen is not repeated."""
        if calls is None:
            return  # most chunks: text
        for id, name, _, function in _pieces(calls):
            if id and ("id", id) in self._keys:
                continue
            call = self._new(id)
            call.name = name
            call.announced = True
            arguments = _arguments_text(function.get("arguments"))
            events.append(ToolCallDelta(call.index, call.id, name, arguments))

    def openai(self, pieces: object, events: list[Event]) -> None:
        """Append the deltas of one chunk's `delta.tool_calls` pieces."""
        if pieces is None:
            return  # most chunks: text
        for id, name, piece, function in _pieces(pieces):
            arguments = function.get("arguments")
            # Text, as the API says; an object from a server that sends one.
            text = "" if arguments is None else _arguments_text(arguments)
            if not (id or name or text):
                continue  # nothing to add to any call
            call = self._call_for(piece.get("index"), id, name)
            if call.announced:
                if text:
                    events.append(ToolCallDelta(call.index, arguments=text))
                continue
            if id:
                call.id = id
            call.name = call.name or name
            if not call.name:
                call.held += text
                continue
            call.announced = True
            arguments, call.held = call.held + text, ""
            events.append(ToolCallDelta(call.index, call.id, call.name, arguments))

    def close(self, events: list[Event]) -> None:
        """Append the calls whose name never came (so their text is not lost:
        the engine tells the model it named no tool)."""
        for call in self._calls:
            if not call.announced:
                call.announced = True
                events.append(ToolCallDelta(call.index, call.id, "", call.held))

    def finished(self, finished: Finished) -> Finished:
        """`finished`, with "tool_calls" as its reason when the reply held calls
        and stopped (rather than being cut by a length limit)."""
        if self.count and finished.done_reason in _STOPPED:
            return dataclasses.replace(finished, done_reason="tool_calls")
        return finished

    def _call_for(self, index: object, id: str, name: str) -> _Call:
        """The call a streamed piece belongs to: by its index, else by its id,
        else the last call (unless the piece names a new one)."""
        if isinstance(index, int) and not isinstance(index, bool):
            call = self._keys.get(("index", index))
            # A server that numbers every whole call 0: a new id and a name on
            # a call that has both is another call.
            if call is not None and not (id and name and call.name and id != call.id):
                return call
            call = self._new(id)
            self._keys["index", index] = call
            return call
        if id:
            return self._keys.get(("id", id)) or self._new(id)
        last = self._last
        if last is None or (name and last.name):
            return self._new("")
        return last

    def _new(self, id: str) -> _Call:
        call = _Call(self.count, id or f"call_{self.count}")
        self.count += 1
        if id:
            self._keys["id", id] = call
        self._calls.append(call)
        self._last = call
        return call


def _pieces(
    calls: object,
) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """The id, name, whole and function of each call of a `tool_calls` list."""
    if not isinstance(calls, list):
        return
    for call in calls:
        if isinstance(call, dict):
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            yield _text(call.get("id")), _text(function.get("name")), call, function


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _arguments_text(value: object) -> str:
    """Arguments as JSON text (Ollama sends an object; a string is kept)."""
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, ensure_ascii=False)
