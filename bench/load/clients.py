"""The load bench's sockets: each asks, reads the answer and asks again."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from bench.load.site import Site


@dataclass
class Answer:
    message_id: int
    received: str = ""  # the content deltas, in order
    queued: bool = False  # a `queued` frame came before its text
    done: str | None = None  # the `done` frame's status
    final: str | None = None  # the content of its final `message` frame


@dataclass
class Socket:
    user: int
    conversation: int
    opened: bool = False
    refused: str | None = None  # why the handshake failed
    close_code: int | None = None  # the server's close code (1006: none)
    closed_early: bool = False  # the server closed it before we did
    answers: dict[int, Answer] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)  # `error` frames by code
    ws: Any = field(default=None, repr=False)


async def open_socket(site: Site, sock: Socket, cookie: str) -> None:
    url = f"ws://127.0.0.1:{site.web_port}/ws/conversations/{sock.conversation}/"
    headers = {"Cookie": cookie, "Origin": site.origin}
    try:
        sock.ws = await websockets.connect(
            url, additional_headers=headers, max_size=None, open_timeout=60
        )
        sock.opened = True
    except InvalidStatus as exc:
        sock.refused = f"HTTP {exc.response.status_code}"
    except (OSError, TimeoutError, websockets.WebSocketException) as exc:
        cause = exc.__cause__
        sock.refused = type(exc).__name__ + (f" ({cause})" if cause else "")


async def open_after(site: Site, sock: Socket, cookie: str, delay: float) -> None:
    await asyncio.sleep(delay)
    await open_socket(site, sock, cookie)


async def ask(ws: Any, n: int) -> None:
    frame = {"type": "send", "content": f"question {n}", "client_id": f"q{n}"}
    await ws.send(json.dumps(frame))


async def converse(sock: Socket, closing: asyncio.Event) -> None:
    """Ask, read the answer to its final message, ask again, until `closing`."""
    ws, asked, current = sock.ws, 1, None
    try:
        await ask(ws, asked)
        async for raw in ws:
            frame = json.loads(raw)
            kind, message_id = frame["type"], frame.get("message_id")
            if kind == "start":
                current = sock.answers.setdefault(message_id, Answer(message_id))
            elif kind == "queued" and message_id in sock.answers:
                sock.answers[message_id].queued |= not sock.answers[message_id].received
            elif kind == "content" and message_id in sock.answers:
                sock.answers[message_id].received += frame["delta"]
            elif kind == "done" and message_id in sock.answers:
                sock.answers[message_id].done = frame["status"]
            elif kind == "error":
                sock.errors[frame["code"]] += 1
                if frame["message_id"] is None and not closing.is_set():
                    await asyncio.sleep(0.5)  # e.g. busy: ask again in a moment
                    await ask(ws, asked)
            elif kind == "message" and frame["message"]["role"] == "assistant":
                answer = sock.answers.get(frame["message"]["id"])
                if answer is not None:
                    answer.final = frame["message"]["content"]
                if current is not None and answer is current and not closing.is_set():
                    asked += 1
                    await ask(ws, asked)
    except ConnectionClosed:
        pass
    sock.closed_early = not closing.is_set()
    sock.close_code = ws.close_code


async def probe_busy(site: Site, cookie: str, conversation: int) -> str:
    """A fresh socket asks once: the first reply's kind (`busy` if refused)."""
    probe = Socket(user=-1, conversation=conversation)
    await open_socket(site, probe, cookie)
    if probe.ws is None:
        return f"refused ({probe.refused})"
    try:
        await ask(probe.ws, 0)
        async with asyncio.timeout(30):
            async for raw in probe.ws:
                frame = json.loads(raw)
                if frame["type"] == "error":
                    return str(frame["code"])
                if frame["type"] in ("start", "queued"):
                    await probe.ws.send(json.dumps({"type": "stop"}))
                    return "started"
    except (ConnectionClosed, TimeoutError):
        return f"closed ({probe.ws.close_code})"
    finally:
        await probe.ws.close()
    return "no reply"
