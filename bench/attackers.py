"""`bench.expensive_input`'s attackers: each in a loop of one request at a
time, its body written piece by piece, given up after REQUEST_TIMEOUT s (the
server may go on with it, as it would for a real attacker who leaves), all in
a process of their own so that their sending costs the stream's client
nothing."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import asdict, dataclass
from typing import Any

from bench.hostile_inputs import Body, attacks

REQUEST_TIMEOUT = 10.0  # an attack request, given up after
# Once the stream has ended: how long the attack requests in flight may still
# take (the bench's end).
STOP_GRACE = 3.0


@dataclass
class Outcome:
    answer: str  # the status code, or how it ended without one
    seconds: float  # to the status line (or to the end)
    sent: int  # body bytes written before the answer or the end


async def post(
    port: int, path: str, body: Body, headers: dict[str, str], give_up: float
) -> Outcome:
    """POST `body`, reading while writing: an answer the server gives before
    the body is all sent (an early 413) ends the sending. HTTP/1.1 by hand:
    a client library writes the whole body before it looks for an answer."""
    began = time.monotonic()
    sent = [0]
    writer: asyncio.StreamWriter | None = None
    answer: asyncio.Task[bytes] | None = None
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        f"Content-Type: {body.content_type}",
        f"Content-Length: {body.length}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    try:
        async with asyncio.timeout(give_up):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            answer = asyncio.create_task(reader.readline())
            with contextlib.suppress(ConnectionError):
                await _send(writer, body, answer, sent)
            status_line = await answer
    except TimeoutError:
        return Outcome("no answer (gave up)", time.monotonic() - began, sent[0])
    except ConnectionRefusedError:
        return Outcome("connection refused", time.monotonic() - began, sent[0])
    except OSError as error:
        ended = f"closed ({type(error).__name__})"
        return Outcome(ended, time.monotonic() - began, sent[0])
    finally:
        if answer is not None:
            answer.cancel()
        if writer is not None:
            writer.transport.abort()
    seconds = time.monotonic() - began
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return Outcome("closed without an answer", seconds, sent[0])
    return Outcome(parts[1].decode(), seconds, sent[0])


async def _send(
    writer: asyncio.StreamWriter,
    body: Body,
    answer: asyncio.Task[bytes],
    sent: list[int],
) -> None:
    """Write `body` (counted in `sent[0]`) until it is all written or `answer`
    has come: a server that answers and stops reading leaves a write waiting."""
    for chunk in body.chunks():
        writer.write(chunk)
        drained = asyncio.ensure_future(writer.drain())
        await asyncio.wait({drained, answer}, return_when=asyncio.FIRST_COMPLETED)
        if not drained.done():
            drained.cancel()
            return
        drained.result()  # a ConnectionError if the server closed it
        sent[0] += len(chunk)
        if answer.done():
            return


def request_headers(cookie: str | None, xhr: bool = False) -> dict[str, str]:
    """A signed-in user's (`cookie`) with a CSRF token, as the page's script
    sends them; none for a stranger."""
    if cookie is None:
        return {}
    token = secrets.token_hex(16)  # 32 characters: a CSRF secret Django takes
    headers = {"Cookie": f"{cookie}; csrftoken={token}", "X-CSRFToken": token}
    if xhr:
        headers["X-Requested-With"] = "XMLHttpRequest"
    return headers


async def keep_posting(
    port: int,
    path: str,
    body: Body,
    headers: dict[str, str],
    outcomes: list[Outcome],
    stopping: asyncio.Event,
    give_up: float,
    every: float = 0.0,
) -> None:
    """One request at a time, one every `every` s at most, each outcome onto
    `outcomes`, until `stopping`; cancelled, the request in flight counts as
    unanswered."""
    while not stopping.is_set():
        began = time.monotonic()
        try:
            outcome = await post(port, path, body, headers, give_up)
        except asyncio.CancelledError:
            seconds = time.monotonic() - began
            outcomes.append(Outcome("no answer when the bench ended", seconds, 0))
            raise
        outcomes.append(outcome)
        # Not a hot loop on a server gone away.
        pause = every if outcome.answer.isdigit() else max(every, 0.5)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                stopping.wait(), max(0.0, pause - (time.monotonic() - began))
            )


async def wind_down(loops: list[asyncio.Task[None]], stopping: asyncio.Event) -> None:
    """Stop the loops of `keep_posting`: their requests in flight get
    STOP_GRACE s, then are cancelled."""
    stopping.set()
    _, late = await asyncio.wait(loops, timeout=STOP_GRACE)
    for loop in late:
        loop.cancel()
    await asyncio.gather(*loops, return_exceptions=True)


def attackers(
    port: int, cookies: list[str], ready: Any, stop: Any, results: Any, bound: float
) -> None:
    """The attackers' process: every attack in a loop of its own until `stop`
    is set (or `bound` seconds); the requests then in flight get STOP_GRACE s
    more. Their outcomes, with each attack's label, go onto `results`."""

    async def run() -> list[tuple[str, list[Outcome]]]:
        chosen = attacks()
        found: list[list[Outcome]] = [[] for _ in chosen]
        stopping = asyncio.Event()
        loops = [
            asyncio.create_task(
                keep_posting(
                    port,
                    attack.path,
                    attack.body,
                    request_headers(cookie if attack.signed_in else None, attack.xhr),
                    outcomes,
                    stopping,
                    REQUEST_TIMEOUT,
                )
            )
            for attack, cookie, outcomes in zip(chosen, cookies, found, strict=True)
        ]
        ready.set()
        await asyncio.to_thread(stop.wait, bound)
        await wind_down(loops, stopping)
        return [(a.label, outcomes) for a, outcomes in zip(chosen, found, strict=True)]

    found = asyncio.run(run())
    results.put([(label, [asdict(o) for o in outcomes]) for label, outcomes in found])
