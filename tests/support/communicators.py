"""Sockets of the site in-process (channels' `WebsocketCommunicator` on the ASGI
application): the owner's conversation socket and a shared link's viewer."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from channels import testing
from django.contrib.auth.models import AnonymousUser

from chat.models import Message
from chatsite.asgi import application
from tests.support.plugins.timeouts import task_stack
from tests.support.waiting import DEADLINE


class WebsocketCommunicator(testing.WebsocketCommunicator):  # type: ignore[misc]
    """Channels' communicator, whose waits all end. Past a wait's timeout,
    channels' cancels the application and then waits for it without a bound:
    an application that does not end when cancelled (a read of Redis that
    swallowed its cancellation, chat/live/engine/processes/layer.py) hung the suite
    there. This
    one gives it `ENDING_SECONDS` and fails with where it is stuck.

    And a wait for the application's answer lasts `DEADLINE` unless the test
    says otherwise: channels' 1 s failed handshakes beside CPU-burning
    processes (its first event closes stale database connections in a thread
    and connects to Redis)."""

    async def connect(self, timeout: float = DEADLINE) -> Any:
        return await super().connect(timeout)

    async def receive_from(self, timeout: float = DEADLINE) -> Any:
        return await super().receive_from(timeout)

    async def receive_json_from(self, timeout: float = DEADLINE) -> Any:
        return await super().receive_json_from(timeout)

    async def wait(self, timeout: float = 1) -> None:
        done, _ = await asyncio.wait([self.future], timeout=timeout)
        if done:
            with contextlib.suppress(asyncio.CancelledError):
                self.future.result()
        else:
            await self._end()

    async def receive_output(self, timeout: float = DEADLINE) -> Any:
        if self.future.done():
            self.future.result()
        try:
            async with asyncio.timeout(timeout):
                return await self.output_queue.get()
        except TimeoutError:
            if self.future.done():
                self.future.result()
            else:
                await self._end()
            raise

    async def _end(self) -> None:
        """Cancel the application, and wait a bounded time for it to end."""
        self.future.cancel()
        done, _ = await asyncio.wait([self.future], timeout=ENDING_SECONDS)
        if not done:
            raise AssertionError(
                f"the application did not end {ENDING_SECONDS:g} s after its"
                f" cancellation:\n{task_stack(self.future)}"
            )
        with contextlib.suppress(asyncio.CancelledError):
            self.future.result()


# Seconds an application gets to end once cancelled.
ENDING_SECONDS = DEADLINE

# Channels' origin check refuses a socket without one (docs/testing.md, G4).
ORIGIN = (b"origin", b"http://127.0.0.1")


async def connect(user, conversation) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def open_viewer(token: str, user=None, query: str = "") -> WebsocketCommunicator:
    path = f"/ws/share/{token}/{query}"
    viewer = WebsocketCommunicator(application, path, headers=[ORIGIN])
    viewer.scope["user"] = user or AnonymousUser()
    connected, _ = await viewer.connect()
    assert connected
    return viewer


async def frames_until(
    communicator, kind: str, timeout: float = DEADLINE
) -> list[dict]:
    """Every frame up to and including the first of type `kind`."""
    seen = []
    while True:
        frame = await communicator.receive_json_from(timeout=timeout)
        seen.append(frame)
        if frame["type"] == kind:
            return seen


def text_of(frames: list[dict], kind: str) -> str:
    """The text of the `kind` deltas ("thinking", "content") among `frames`."""
    return "".join(f["delta"] for f in frames if f["type"] == kind)


async def send(communicator, content: str = "Hello there") -> None:
    await communicator.send_json_to(
        {"type": "send", "content": content, "client_id": "c-1"}
    )


async def answer_of(conversation) -> Message:
    return await conversation.messages.filter(role="assistant").alast()


async def assert_failed_with(
    conversation, frames: list[dict], final: dict, code: str, question: str
) -> None:
    """The answer ended in the error `code`, told (with a detail) and stored,
    and the question `question` kept: what a failed model server leaves."""
    error = next(f for f in frames if f["type"] == "error")
    assert error["code"] == code and error["detail"]
    assert frames[-1]["status"] == "error"
    assert final["message"]["error_code"] == code
    assert await conversation.messages.filter(role="user", content=question).aexists()
    answer = await answer_of(conversation)
    assert answer.status == Message.Status.ERROR and answer.error_detail
