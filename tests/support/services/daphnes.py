"""Real Daphne processes (`python -m daphne`) on the test database, their
sockets over the network (the `websockets` client), and the Redis groups the
sockets' feeds join. The fixtures that start a pair per test module are in
`tests/live/conftest.py`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import websockets
from django.conf import settings
from django.db import connection
from redis import asyncio as aioredis

from chat.live.protocol.channel_events import conversation_group
from tests.support.waiting import until

ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT = 120.0  # seconds


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daphne_env(
    database_url: str | None = None, redis_url: str | None = None
) -> dict[str, str]:
    """A Daphne process's environment: the test database (or `database_url`)
    and the session's Redis (or `redis_url`), without the test process's
    DJANGO_ALLOW_ASYNC_UNSAFE."""
    if database_url is None:
        db = settings.DATABASES["default"]
        name = connection.settings_dict["NAME"]
        database_url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{name}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": settings.REDIS_URL if redis_url is None else redis_url,
        "DJANGO_SETTINGS_MODULE": "chatsite.settings",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


class Daphne:
    """One Daphne process on the test database and the session's Redis."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log, self.port = env, log, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> Daphne:
        self.launch()
        return self.wait_until_serving()

    def launch(self) -> None:
        """Start the process without waiting for it (`wait_until_serving`)."""
        self.port = free_port()  # a killed one's port may still be held
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "chatsite.serve",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                ],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_until_serving(self) -> Daphne:
        assert self.process is not None, "launch() first"
        # A bound for a loaded machine, not a budget: two processes starting
        # side by side (`start_all`) beside the other tests' work took over 30 s.
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/login/", timeout=1)
                return self
            except httpx.HTTPError:
                assert self.process.poll() is None, self.log.read_text()[-3000:]
                assert time.monotonic() < deadline, "daphne did not start"
                time.sleep(0.1)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(15)


def start_all(servers: list[Daphne]) -> list[Daphne]:
    """Start the servers side by side: each start is mostly a process importing
    Django and the site, so waiting for one before launching the next would
    double the wait."""
    try:
        for server in servers:
            server.launch()
        for server in servers:
            server.wait_until_serving()
    except BaseException:
        for server in servers:
            server.stop(signal.SIGKILL)
        raise
    return servers


async def open_socket(server: Daphne, conversation, cookie: str):
    return await websockets.connect(
        f"{server.ws}/ws/conversations/{conversation.pk}/",
        additional_headers={
            "Cookie": cookie,
            "Origin": f"http://127.0.0.1:{server.port}",
        },
    )


async def frames_until(ws, kind: str, timeout: float = 20) -> list[dict]:
    seen = []
    async with asyncio.timeout(timeout):
        async for raw in ws:
            frame = json.loads(raw)
            seen.append(frame)
            if frame["type"] == kind:
                return seen
    raise AssertionError(f"socket closed before {kind!r}")


async def send(ws, content: str = "hello") -> None:
    await ws.send(json.dumps({"type": "send", "content": content, "client_id": "x"}))


async def group_members(conversation_ids: list[int]) -> int:
    """How many channels the conversations' groups hold in Redis (the sockets
    whose feeds joined them, in every process)."""
    client = aioredis.Redis.from_url(settings.REDIS_URL)
    try:
        keys = [f"asgi:group:{conversation_group(pk)}" for pk in conversation_ids]
        return sum([int(await client.zcard(key)) for key in keys])
    finally:
        await client.aclose()


async def until_joined(conversation, sockets: int) -> None:
    """Until `sockets` sockets' feeds joined the conversation's group in Redis.
    A socket is open once accepted, and its feed joins after that
    (`ChatConsumer.connect`): only then does it hear answers run elsewhere."""

    async def joined() -> bool:
        return await group_members([conversation.pk]) >= sockets

    await until(joined, f"{sockets} sockets never joined {conversation}'s group")
