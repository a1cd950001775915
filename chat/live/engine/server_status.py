"""What each model server is doing now, for the admin's status panel.

Per server (the distinct base URLs of the enabled model profiles): reachable or
not and its version (the same probe as `/healthz`), the models it holds in memory
(Ollama's `/api/ps`), and the answers streaming from it with their rate.

The streams are counted from the database, not from this process's runner: an
answer may run in any Daphne process, and every process checkpoints its running
answers into their rows about once a second (docs/latency.md, rule 5), which
costs the answers nothing more. A stream's rate, in estimated tokens
(`quotas.CHARS_PER_TOKEN`, as the throughput page's), is the text its last two
checkpoints seen by this process's panel added, over the time between them
(`Sampler`); for a stream seen once, its checkpointed text over the time since
the answer was created (which includes the wait for the first token).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from asgiref.sync import sync_to_async
from django.db.models import F
from django.db.models.functions import Length
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext

from chat.live.engine import loop_state
from chat.models import Message, ModelProfile
from chat.models.quotas import CHARS_PER_TOKEN
from chat.upstream import UpstreamError

# How long a model server has to answer its probe (here and `/healthz`'s).
MODEL_SERVER_TIMEOUT = 2.0

# A stream younger than this has too little text for a rate.
MIN_RATE_SECONDS = 0.5


@dataclass(frozen=True)
class LoadedModel:
    name: str
    size: int | None
    size_vram: int | None
    context_length: int | None
    expires_at: datetime | None

    @property
    def offloaded(self) -> bool:
        """Part of the model runs on the CPU (`size_vram` below `size`)."""
        return bool(self.size and self.size_vram is not None) and (
            (self.size_vram or 0) < (self.size or 0)
        )


@dataclass
class ServerStatus:
    url: str
    backend: str
    tags: list[str]
    reachable: bool = False
    version: str = ""
    ms: float | None = None
    error: str = ""
    loaded: list[LoadedModel] = field(default_factory=list)
    loaded_error: str = ""
    streams: int = 0
    tokens_per_second: float = 0.0

    @property
    def backend_label(self) -> str:
        return str(ModelProfile.Backend(self.backend).label)

    @property
    def is_ollama(self) -> bool:
        return self.backend == ModelProfile.Backend.OLLAMA


async def server_statuses() -> list[ServerStatus]:
    """Every enabled model server's status, probed at once."""
    servers = await sync_to_async(_servers_with_streams)()
    await asyncio.gather(*(_probe(server) for server in servers))
    return servers


def _servers_with_streams() -> list[ServerStatus]:
    servers: dict[str, ServerStatus] = {}
    profiles = ModelProfile.objects.filter(enabled=True).order_by("base_url", "tag")
    for profile in profiles:
        url = profile.base_url.rstrip("/")
        server = servers.setdefault(url, ServerStatus(url, profile.backend, []))
        server.tags.append(profile.tag)
    streaming = list(
        Message.objects.filter(status=Message.Status.STREAMING)
        .annotate(
            url=F("conversation__model_profile__base_url"),
            chars=Length("content") + Length("thinking"),
        )
        .values_list("pk", "url", "chars", "created_at", "updated_at")
    )
    rates = sampler.rates(
        [(pk, chars, created, updated) for pk, _, chars, created, updated in streaming]
    )
    for pk, url, *_ in streaming:
        streaming_on = servers.get((url or "").rstrip("/"))
        if streaming_on is None:  # its profile was disabled or removed meanwhile
            continue
        streaming_on.streams += 1
        streaming_on.tokens_per_second += rates.get(pk, 0.0)
    return list(servers.values())


@dataclass(frozen=True)
class _Sample:
    chars: int
    at: datetime  # the checkpoint's time (`updated_at`)
    rate: float | None


class Sampler:
    """Each streaming answer's rate (estimated tokens per second) from its
    checkpoints: the text added between the last two seen, over their interval.

    Kept per process: a panel served by another process starts over, from the
    average since the answer began.
    """

    def __init__(self) -> None:
        self._samples: dict[int, _Sample] = {}

    def rates(
        self, streams: list[tuple[int, int, datetime, datetime]]
    ) -> dict[int, float]:
        """`streams`: (message id, characters, created at, checkpointed at)."""
        samples: dict[int, _Sample] = {}
        for pk, chars, created_at, updated_at in streams:
            seen = self._samples.get(pk)
            if seen is not None and updated_at <= seen.at:
                samples[pk] = seen  # no checkpoint since: the same rate
                continue
            start = (seen.chars, seen.at) if seen is not None else (0, created_at)
            seconds = (updated_at - start[1]).total_seconds()
            rate = None
            if seconds >= MIN_RATE_SECONDS:
                rate = max(chars - start[0], 0) / CHARS_PER_TOKEN / seconds
            if seen is not None and rate is None:
                samples[pk] = seen  # too close to the last one: keep measuring from it
            else:
                samples[pk] = _Sample(chars, updated_at, rate)
        self._samples = samples  # finished answers drop out
        return {pk: sample.rate or 0.0 for pk, sample in samples.items()}


# Per process, not per event loop: its samples are plain numbers that any loop
# may read (the panel is served by whichever loop the request came in on), so
# it is not in `chat.live.engine.loop_state`; this module is its one owner.
sampler = Sampler()


async def _probe(server: ServerStatus) -> None:
    check = await check_model_server(server.url, server.backend, MODEL_SERVER_TIMEOUT)
    server.reachable = check["ok"]
    server.version = check.get("version", "")
    server.ms = check.get("ms")
    server.error = check.get("error", "")
    if not (server.reachable and server.is_ollama):
        return
    try:
        entries = await asyncio.wait_for(
            loop_state.clients().ollama(server.url).ps(), MODEL_SERVER_TIMEOUT
        )
    except (UpstreamError, TimeoutError) as exc:
        server.loaded_error = getattr(exc, "detail", "") or (
            gettext("/api/ps gave no answer within %(seconds)s s")
            % {"seconds": f"{MODEL_SERVER_TIMEOUT:.3g}"}
        )
        return
    server.loaded = [_loaded_model(entry) for entry in entries]


def _loaded_model(entry: dict[str, Any]) -> LoadedModel:
    expires = entry.get("expires_at")
    return LoadedModel(
        name=str(entry.get("name") or entry.get("model") or "?"),
        size=_int(entry.get("size")),
        size_vram=_int(entry.get("size_vram")),
        context_length=_int(entry.get("context_length")),
        expires_at=_datetime(expires),
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _datetime(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_datetime(value)
    except ValueError:  # well-formed but impossible, e.g. month 13
        return None


async def check_model_server(url: str, backend: str, limit: float) -> dict[str, Any]:
    """Whether the model server at `url` answers within `limit` seconds, its
    version (Ollama's) and how long it took (`/healthz` asks the same)."""
    start = time.perf_counter()
    try:
        version = await asyncio.wait_for(
            _server_version(url, backend), max(limit, 0.01)
        )
    except (UpstreamError, httpx.HTTPError, TimeoutError) as exc:
        return {"url": url, "ok": False, "error": failure(exc, limit)}
    ms = round((time.perf_counter() - start) * 1000, 1)
    return {"url": url, "ok": True, "ms": ms, "version": version}


async def _server_version(url: str, backend: str) -> str:
    if backend == ModelProfile.Backend.OLLAMA:
        return await loop_state.clients().ollama(url).version()
    # OpenAI-compatible servers have no version endpoint; /v1/models answering
    # with a model list proves the server is up.
    await loop_state.clients().openai(url).models()
    return ""


def failure(exc: BaseException, limit: float) -> str:
    """What a check that failed after waiting up to `limit` seconds says."""
    if isinstance(exc, TimeoutError):
        return f"no answer within {limit:.3g} s"
    if isinstance(exc, UpstreamError):
        return exc.detail
    return f"{type(exc).__name__}: {exc}".strip()
