"""An answer asked over the API: begun like a socket's turn
(`chat.live.engine.turn.beginning`: access, quotas, its place in the fair queue, all in
one
commit), run by the runner like any other answer (`chat.live.engine.runner`), and
read by the HTTP response through a sink, `ApiAnswer`.

The relay never waits for an HTTP client (docs/latency.md, rules 1 and 2): the
sink only appends each frame's text to what the response has not written yet
and wakes the response. The response takes everything new at once, so a client
that reads slowly gets bigger chunks, never a longer queue; what is held for it
is at most the answer's own text, which the generation holds anyway.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from chat.api.errors import ApiError, seconds_until
from chat.api.requests import ChatRequest
from chat.live.engine.runner import runner
from chat.live.engine.turn import beginning
from chat.live.protocol import frames
from chat.models import ApiKey, Conversation, ModelProfile, Turn, quotas, turn_rows


@dataclass
class CallMade:
    """A tool call the model writes for the client (`turn_rows.ClientTools`):
    `index` orders the calls of the answer; `arguments`, its JSON text so far."""

    index: int
    id: str
    name: str
    arguments: list[str] = field(default_factory=list)
    sent: bool = False  # given whole to the client (Ollama's way)

    def arguments_text(self) -> str:
        return "".join(self.arguments)


@dataclass
class CallPiece:
    """What a streamed response has not written yet of a call: its start
    (`first`: the id and the name) and/or the next piece of its arguments."""

    call: CallMade
    first: bool
    arguments: str


class ApiAnswer:
    """The runner's `Sink` for one API request: what the response has still to
    write, and how the answer ended."""

    def __init__(self, turn: Turn) -> None:
        self.conversation_id = turn.answer.conversation_id
        self.message_id = turn.answer.pk
        self.model = turn.profile.tag
        self.prompt_tokens_estimate = turn.answer.prompt_tokens_estimate or 0
        self._thinking: list[str] = []  # not yet taken
        self._content: list[str] = []
        self.thinking_chars = 0  # all of it so far
        self.content_chars = 0
        self.calls: list[CallMade] = []  # the tool calls the model wrote
        self._calls_by_id: dict[str, CallMade] = {}
        self._pieces: list[CallPiece] = []  # not yet taken
        self.call_chars = 0
        tools = turn.client_tools
        self._one_call = tools is not None and not tools.parallel
        self.waiting = False  # queued for a slot, or the model is loading
        self.error: ApiError | None = None
        self.done: frames.DoneFrame | None = None
        self._wake = asyncio.Event()
        self._news = False  # something arrived that `wait` has not returned for
        # The silence of `wait(seconds)`: its timer and when it ends (loop time).
        self._silence: asyncio.TimerHandle | None = None
        self._silent_at = 0.0
        self._closed = False

    # The runner's side (a `chat.live.engine.generation.Sink`): never awaits.

    async def send_frame(self, frame: frames.ServerFrame) -> None:
        if frame["type"] == "content":
            self._content.append(frame["delta"])
            self.content_chars += len(frame["delta"])
        elif frame["type"] == "thinking":
            self._thinking.append(frame["delta"])
            self.thinking_chars += len(frame["delta"])
        elif frame["type"] == "error" and frame["message_id"] is not None:
            self.error = ApiError.from_upstream(frame["code"], frame["detail"])
        elif frame["type"] == "done":
            self.done = frame
        elif frame["type"] == "queued" or (
            frame["type"] == "model" and frame["state"] == "loading"
        ):
            self.waiting = True
        elif not self._tool_frame(cast(Mapping[str, Any], frame)):
            return
        self._news = True
        self._wake.set()

    def _tool_frame(self, frame: Mapping[str, Any]) -> bool:
        """A frame of a tool call the model writes (`tool_call`, then its
        `tool_args`); False for any other frame."""
        kind = frame["type"]
        if kind == "tool_call":
            if frame["call_id"] in self._calls_by_id:
                return False  # told twice (a socket's resume, say): one call
            if self._one_call and self.calls:
                return False  # parallel_tool_calls false: the first call only
            call = CallMade(len(self.calls), frame["call_id"], frame["name"])
            self.calls.append(call)
            self._calls_by_id[call.id] = call
            self._pieces.append(CallPiece(call, True, ""))
            return True
        if kind == "tool_args":
            made = self._calls_by_id.get(frame["call_id"])
            if made is None:
                return False
            made.arguments.append(frame["delta"])
            self.call_chars += len(frame["delta"])
            last = self._pieces[-1] if self._pieces else None
            if last is not None and last.call is made:
                last.arguments += frame["delta"]
            else:
                self._pieces.append(CallPiece(made, False, frame["delta"]))
            return True
        return False

    # The response's side.

    @property
    def finished(self) -> bool:
        return self.done is not None

    @property
    def has_text(self) -> bool:
        """Something to write: text, or a tool call."""
        return bool(self._thinking or self._content or self._pieces)

    def take(self) -> tuple[str, str]:
        """(thinking, content) arrived since the last take."""
        thinking, content = "".join(self._thinking), "".join(self._content)
        self._thinking.clear()
        self._content.clear()
        return thinking, content

    def take_calls(self) -> list[CallPiece]:
        """The pieces of tool calls arrived since the last take, in order."""
        pieces, self._pieces = self._pieces, []
        return pieces

    def whole_calls(self) -> list[CallMade]:
        """The calls not given yet that the model finished writing (a later
        call began, or the answer ended), each given once."""
        done = self.calls if self.finished else self.calls[:-1]
        whole = [call for call in done if not call.sent]
        for call in whole:
            call.sent = True
        self._pieces.clear()  # given whole: no pieces to write
        return whole

    async def wait(self, seconds: float | None = None) -> bool:
        """Until something new arrived (True) or `seconds` passed (False).

        One timer serves a run of waits: a streamed response waits once per
        token, and a timer armed and cancelled each time (`asyncio.timeout`)
        made a token's wait, news and take cost 10.9 µs where they cost 5.6
        with one. It rings when the first wait's time is up; a later wait has
        moved that time on, so it is armed again for what is left."""
        if not self._news:
            if seconds is not None:
                self._silent_for(seconds)
            await self._wake.wait()  # something new, or the silence ended
        self._wake.clear()
        news, self._news = self._news, False
        return news

    def _silent_for(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        self._silent_at = loop.time() + seconds
        if self._silence is not None and self._silence.when() > self._silent_at:
            self._silence.cancel()  # a shorter wait than the last
            self._silence = None
        if self._silence is None:
            self._silence = loop.call_at(self._silent_at, self._ring)

    def _ring(self) -> None:
        loop = asyncio.get_running_loop()
        # Within a millisecond is time: uvloop's timers count whole ones.
        if self._silent_at - loop.time() > 0.001:
            self._silence = loop.call_at(self._silent_at, self._ring)
        else:
            self._silence = None
            self._wake.set()

    async def opened(self, seconds: float) -> None:
        """Until the response should open: the first text, the end, a place in
        the queue or a loading model (the client then hears that it waits), or
        `seconds` of silence. An answer that fails before its first
        token so still gets an HTTP status of its own (503 for a model box
        that is down)."""
        while not (self.has_text or self.finished or self.waiting):
            if not await self.wait(seconds):
                return

    def stats(self) -> dict[str, Any]:
        return self.done["stats"] if self.done is not None else {}

    def usage(self) -> tuple[int, int]:
        """(prompt tokens, output tokens): the model server's counts, else
        estimates (the same as the quotas': characters over four)."""
        stats = self.stats()
        prompt = stats.get("prompt_tokens") or self.prompt_tokens_estimate
        chars = self.content_chars + self.thinking_chars + self.call_chars
        output = stats.get("output_tokens") or math.ceil(chars / quotas.CHARS_PER_TOKEN)
        return int(prompt), int(output)

    def close(self) -> None:
        """The response is over (written, or its client went away): an answer
        still running is stopped, which closes the model server's request."""
        if self._closed:
            return
        self._closed = True
        if self._silence is not None:
            self._silence.cancel()
        if self.done is None:
            runner.stop(self.conversation_id)
        runner.unsubscribe(self.conversation_id, self)


def find_profile(api_key: ApiKey, model: str) -> ModelProfile:
    """The enabled model profile named `model` that the key may ask
    (`turn_rows.api_profile`); ApiError 404 for none of that name, 403 for one
    the key or its owner may not use."""
    try:
        return turn_rows.api_profile(api_key, model)
    except (ModelProfile.DoesNotExist, Conversation.ModelForbidden) as exc:
        raise refused(beginning.Refused.of(exc)) from None


async def begin(api_key: ApiKey, request: ChatRequest, *, store: bool) -> ApiAnswer:
    """Begin the answer (`chat.live.engine.turn.beginning`, as a socket's) and hand it
    to the
    runner; ApiError when it is refused (nothing is stored then)."""
    begun = await beginning.begin(ask_of(api_key, request, store), ApiAnswer)
    if isinstance(begun, beginning.Refused):
        raise refused(begun)
    assert isinstance(begun.sink, ApiAnswer)
    return begun.sink


def ask_of(api_key: ApiKey, request: ChatRequest, store: bool) -> beginning.ApiQuestion:
    """The turn the request asks for."""
    return beginning.ApiQuestion(
        api_key,
        request.model,
        request.messages,
        request.think,
        request.options,
        store,
        request.tools,
    )


# A refused answer's HTTP status, by its code
# (`chat.live.engine.turn.beginning.REFUSALS`), and
# the request's field it is about.
STATUSES: dict[str, tuple[int, str | None]] = {
    "model_not_found": (404, "model"),
    "model_forbidden": (403, "model"),
    "quota_reached": (429, None),
}


def refused(refusal: beginning.Refused) -> ApiError:
    if refusal.code == "not_stored":
        return not_stored()
    status, param = STATUSES.get(refusal.code, (400, None))
    retry = seconds_until(refusal.resets_at)
    return ApiError(status, refusal.code, refusal.detail, param, retry_after=retry)


def not_stored() -> ApiError:
    return ApiError(503, "not_stored", "The question could not be stored: try again.")
