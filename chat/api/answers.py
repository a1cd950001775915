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
from typing import Any

from chat.api.errors import ApiError, seconds_until
from chat.api.requests import ChatRequest
from chat.live.engine.runner import runner
from chat.live.engine.turn import beginning
from chat.live.protocol import frames
from chat.models import ApiKey, Conversation, ModelProfile, Turn, quotas, turn_rows


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
        else:
            return
        self._news = True
        self._wake.set()

    # The response's side.

    @property
    def finished(self) -> bool:
        return self.done is not None

    @property
    def has_text(self) -> bool:
        return bool(self._thinking or self._content)

    def take(self) -> tuple[str, str]:
        """(thinking, content) arrived since the last take."""
        thinking, content = "".join(self._thinking), "".join(self._content)
        self._thinking.clear()
        self._content.clear()
        return thinking, content

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
        chars = self.content_chars + self.thinking_chars
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
        api_key, request.model, request.messages, request.think, request.options, store
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
