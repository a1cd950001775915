"""An answer asked over the API: begun like a socket's turn (access, quotas,
its place in the fair queue, all in one commit), run by the runner like any
other answer (`chat.live.runner`), and read by the HTTP response through a
sink, `ApiAnswer`.

The relay never waits for an HTTP client (docs/latency.md, rules 1 and 2): the
sink only appends each frame's text to what the response has not written yet
and wakes the response. The response takes everything new at once, so a client
that reads slowly gets bigger chunks, never a longer queue; what is held for it
is at most the answer's own text, which the generation holds anyway.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import DatabaseError, transaction

from chat.api.errors import ApiError, seconds_until
from chat.api.requests import ChatRequest
from chat.live import admission, early, frames
from chat.live.runner import runner
from chat.models import ApiKey, Conversation, ModelProfile, ThinkingMode, Turn, quotas
from chat.models.admission import Line

logger = logging.getLogger(__name__)


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

    # The runner's side (a `chat.live.generation.Sink`): never awaits.

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
    """The enabled model profile named `model` that the key may ask (Ollama's
    "name" means "name:latest"); ApiError 404 for none of that name, 403 for
    one the key or its owner may not use."""
    names = [model] if ":" in model else [model, f"{model}:latest"]
    for name in names:
        profile = api_key.usable_profiles().filter(tag=name).first()
        if profile is not None:
            return profile
    if ModelProfile.objects.filter(tag__in=names, enabled=True).exists():
        raise ApiError(
            403,
            "model_forbidden",
            f"The model {model} is not available to you with this key.",
            "model",
        )
    raise ApiError(
        404, "model_not_found", f"The model {model} does not exist.", "model"
    )


def _begin(
    api_key: ApiKey,
    request: ChatRequest,
    store: bool,
    admitted: Callable[[tuple[Turn, admission.Plan]], None],
) -> tuple[Turn, admission.Plan]:
    """Store the request's question and its answer's placeholder and take the
    answer's place in line, in one commit (as `chat.sockets.turns.begin`);
    `admitted` hears of an answer that holds a slot before the commit
    (`chat.live.early`)."""
    profile = find_profile(api_key, request.model)
    if request.think is None:
        think = profile.think_flag(ThinkingMode.DEFAULT)
    else:  # a model that cannot think is not asked to (never a 400 for it)
        think = request.think if profile.supports_thinking else None
    options = profile.request_options(think)
    options.update(request.options)
    with transaction.atomic():
        # The site's row first: the lock order (chat.models.admission).
        line, _ = Line.read()
        turn = Conversation.begin_api_turn(
            api_key,
            profile,
            request.messages,
            think=think,
            store=store,
            options=options,
        )
        plan = admission.take_ticket(
            turn.answer,
            profile,
            api_key.user_id,
            lambda p: admitted((turn, p)),
            line,
        )
    return turn, plan


async def begin(api_key: ApiKey, request: ChatRequest, *, store: bool) -> ApiAnswer:
    """Begin the answer and hand it to the runner; ApiError when it is refused
    (nothing is stored then)."""
    try:
        stored, admitted, asked = await early.store(
            partial(_begin, api_key, request, store)
        )
        turn, plan = stored.result() if admitted is None else admitted
    except Conversation.ModelForbidden as exc:
        raise ApiError(403, "model_forbidden", str(exc), "model") from None
    except quotas.QuotaReached as exc:
        retry = seconds_until(exc.resets_at)
        raise ApiError(429, "quota_reached", str(exc), retry_after=retry) from None
    except DatabaseError:
        logger.exception("an API answer could not be stored")
        raise not_stored() from None
    answer = ApiAnswer(turn)
    conversation_id = answer.conversation_id
    # A conversation of its own, new: nobody else can hold its claim.
    claimed = runner.claim(conversation_id)
    assert claimed, "a new conversation was claimed already"
    runner.subscribe(conversation_id, answer)
    # Admitted before the commit, the model server is asked now (docs/latency.md,
    # rules 8 and 9); an API turn tells no socket (its conversation is new).
    committed = None if admitted is None else early.told(stored, lambda _: [], asked)
    # Started from a context of its own: the request's holds Django's
    # per-request executor for `sync_to_async`, which quits when the response
    # ends, and the answer's task (and the runner's, if this starts them) would
    # inherit it and outlive it.
    started = runner.start(
        turn.profile,
        turn.answer,
        turn.history,
        turn.options,
        plan=plan,
        stored=committed,
    )
    try:
        await asyncio.create_task(started, context=contextvars.Context())
    except BaseException:
        answer.close()
        raise
    failed = stored.exception() if committed is not None and stored.done() else None
    if failed is not None:
        # The runner closed the upstream request and stored nothing.
        logger.error("an API answer could not be stored", exc_info=failed)
        runner.unsubscribe(answer.conversation_id, answer)
        raise not_stored()
    return answer


def not_stored() -> ApiError:
    return ApiError(503, "not_stored", "The question could not be stored: try again.")
