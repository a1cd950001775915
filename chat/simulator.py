"""A bundled Ollama simulator: a real HTTP server speaking Ollama's native API.

It is the demo model when no real Ollama answers (``make run``), the model
server of the test suite, and the upstream of the benchmarks. It implements the
parts of Ollama's API a chat front end uses (see
``shared/research/protocols.md`` section 1):

- ``GET /`` ("Ollama is running"), ``GET /api/version``, ``GET /api/tags``,
  ``POST /api/show``, ``GET /api/ps``;
- ``POST /api/chat``, streamed (NDJSON, one token per chunk, each chunk written
  and flushed on its own, paced at ``tps`` with absolute deadlines) or not,
  with thinking, load-only requests, Ollama's error statuses and messages, and
  the final ``done`` chunk's metrics in nanoseconds.

Replies are deterministic for a given ``seed`` and last user message: a short
markdown answer (paragraphs, a bullet list, a fenced Python block when long
enough) preceded by plausible thinking prose. Tokens are words with their
leading space, long words are split in two pieces, and the text carries some
multi-byte UTF-8 ("—", "é", emoji).

Faults, set in the config (all counts are tokens already sent, thinking
included; they apply to every chat request, or to the next ``fault_requests``
ones):

- ``status``: answer with that HTTP status and ``{"error": ...}`` before any
  body (503 uses Ollama's "server busy" text);
- ``cut_after``: close the connection after N tokens, without a done chunk;
- ``error_after``: after N tokens write ``{"error": "model runner has
  unexpectedly stopped, ..."}`` and end the stream;
- ``malformed_after``: after N tokens write one truncated JSON line, then go on.

Endpoints that are not part of Ollama's API, for tests and benchmarks:

- ``GET /_sim/log`` -> ``{"requests": [entry, ...]}``, the last ``log_size``
  chat requests, oldest first. An entry is :class:`ChatLogEntry` as a dict:
  ``body`` (the parsed request), ``started`` (``time.time()``), ``status``,
  ``model``, ``thinking`` (whether thinking was produced), ``tokens_sent``,
  ``done_reason``, ``fault``, ``disconnected`` (the client went away before the
  end), ``finished`` (the response was completed as planned, including planned
  error answers), ``ended`` and ``times`` (with ``record_times``: one
  ``time.time()`` per token, taken right after its chunk was written).
- ``POST /_sim/reset`` clears the log and the loaded models and restores the
  config the server was started with.
- ``GET /_sim/config`` returns the live config; ``POST /_sim/config`` with a
  JSON object of :class:`SimulatorConfig` fields updates those fields (400 for
  an unknown field or a value of the wrong type). Changes apply to the next
  request.

From Python (tests)::

    with SimulatorServer(SimulatorConfig(tps=0, ttft_ms=0)) as sim:
        httpx.post(f"{sim.url}/api/chat", json={...})
        sim.config.cut_after = 5  # the live config, read at each request
        sim.log[-1].tokens_sent
        sim.reset()

The server runs in its own thread with its own event loop, so it serves both
synchronous tests and tests running in another asyncio loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import hashlib
import json
import random
import re
import signal
import socket
import threading
import time
import types
import typing
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from aiohttp import web

OLLAMA_VERSION = "0.12.6"
RUNNER_STOPPED = (
    "model runner has unexpectedly stopped, this may be due to resource "
    "limitations or an internal error, check ollama server logs for details"
)
SERVER_BUSY = "server busy, please try again.  maximum pending requests exceeded"
THINK_LEVELS = ("high", "medium", "low", "max")
DEFAULT_KEEP_ALIVE_S = 300.0
DEFAULT_NUM_CTX = 4096
MODIFIED_AT = "2025-10-14T09:30:00.000000000Z"
# Ollama's "forever" keep-alive is now + MaxInt64 ns, which lands in 2318.
FOREVER_S = 9_223_372_036.0


# -- configuration -----------------------------------------------------------


@dataclass(frozen=True)
class SimModel:
    """One model the simulator offers."""

    name: str
    family: str
    parameter_size: str
    context_length: int
    capabilities: tuple[str, ...] = ("completion",)
    quantization_level: str = "Q4_K_M"
    size: int = 5_000_000_000
    parameters: str = ""
    template: str = "{{ .Prompt }}"

    @property
    def thinks(self) -> bool:
        return "thinking" in self.capabilities

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.name.encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimModel:
        values = dict(data)
        if "capabilities" in values:
            values["capabilities"] = tuple(values["capabilities"])
        return cls(**values)


def default_models() -> list[SimModel]:
    return [
        SimModel(
            name="qwen3-demo:8b",
            family="qwen3",
            parameter_size="8.2B",
            context_length=40960,
            capabilities=("completion", "thinking"),
            size=5_225_376_047,
            parameters='temperature 0.6\ntop_k 20\ntop_p 0.95\nstop "<|im_end|>"',
            template=(
                "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}"
                "<|im_end|>\n{{ end }}<|im_start|>assistant\n"
            ),
        ),
        SimModel(
            name="llama-demo:3b",
            family="llama",
            parameter_size="3.2B",
            context_length=8192,
            size=2_019_393_189,
            parameters='stop "<|eot_id|>"',
            template=(
                "{{- range .Messages }}<|start_header_id|>{{ .Role }}"
                "<|end_header_id|>\n\n{{ .Content }}<|eot_id|>{{ end }}"
            ),
        ),
    ]


@dataclass
class SimulatorConfig:
    """Behaviour of the simulator; read afresh at the start of each request."""

    models: list[SimModel] = field(default_factory=default_models)
    tps: float = 80.0  # tokens per second; 0 = as fast as possible
    ttft_ms: float = 300.0  # prompt evaluation time before the first token
    load_ms: float = 0.0  # extra wait on a model's first (cold) request
    think_tokens: int = 50
    answer_tokens: int = 200
    seed: int = 0
    answer_text: str | None = None  # fixed answer, split into tokens by words
    thinking_text: str | None = None  # fixed thinking, split likewise
    content_in_done: bool = False  # last content token rides on the done chunk
    cut_after: int | None = None
    error_after: int | None = None
    malformed_after: int | None = None
    status: int | None = None
    status_message: str | None = None  # error text for ``status``
    fault_requests: int | None = None  # faults apply to the next N requests only
    record_times: bool = False
    log_size: int = 200
    version: str = OLLAMA_VERSION


class ConfigError(ValueError):
    """A config update names an unknown field or has a value of the wrong type."""


def update_config(config: SimulatorConfig, changes: Mapping[str, Any]) -> None:
    """Apply a partial update given as JSON-like values; all or nothing."""
    known = {f.name for f in dataclasses.fields(config)}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
    parsed = {name: _coerce_field(name, value) for name, value in changes.items()}
    for name, value in parsed.items():
        setattr(config, name, value)


def _coerce_field(name: str, value: Any) -> Any:
    if name == "models":
        return _coerce_models(value)
    hint = typing.get_type_hints(SimulatorConfig)[name]
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    allowed = typing.get_args(hint) if union else (hint,)
    if value is None and type(None) in allowed:
        return None
    if float in allowed and _is_number(value):
        return float(value)
    if int in allowed and isinstance(value, int) and not isinstance(value, bool):
        return value
    if (bool in allowed and isinstance(value, bool)) or (
        str in allowed and isinstance(value, str)
    ):
        return value
    raise ConfigError(f"invalid value for {name}: {json.dumps(value)}")


def _is_number(value: Any) -> typing.TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _coerce_models(value: Any) -> list[SimModel]:
    if not isinstance(value, list) or not value:
        raise ConfigError("models must be a non-empty list of objects")
    try:
        return [SimModel.from_dict(item) for item in value]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid models: {exc}") from exc


# -- observability -------------------------------------------------------------


@dataclass
class ChatLogEntry:
    """One ``/api/chat`` request, updated live while it streams."""

    body: Any
    started: float
    status: int = 200
    model: str | None = None
    thinking: bool = False
    tokens_sent: int = 0
    done_reason: str | None = None
    fault: str | None = None
    disconnected: bool = False
    finished: bool = False
    ended: float | None = None
    times: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def end(self, *, finished: bool) -> None:
        self.finished = finished
        self.ended = time.time()


@dataclass
class _Loaded:
    model: SimModel
    num_ctx: int
    ready_at: float  # loop time at which loading is complete
    expires_at: float  # wall-clock time


class SimulatorState:
    """Live config, request log and loaded models of one simulator app."""

    def __init__(self, config: SimulatorConfig) -> None:
        self.config = config
        self._initial = copy.deepcopy(config)
        self._lock = threading.Lock()
        self._log: deque[ChatLogEntry] = deque(maxlen=config.log_size)
        self.loaded: dict[str, _Loaded] = {}

    def record(self, entry: ChatLogEntry) -> None:
        with self._lock:
            if self._log.maxlen != self.config.log_size:
                self._log = deque(self._log, maxlen=self.config.log_size)
            self._log.append(entry)

    def entries(self) -> list[ChatLogEntry]:
        with self._lock:
            return list(self._log)

    def reset(self) -> None:
        """Clear the log and loaded models; restore the initial config in place."""
        with self._lock:
            self._log.clear()
            self.loaded.clear()
            for f in dataclasses.fields(self._initial):
                value = copy.deepcopy(getattr(self._initial, f.name))
                setattr(self.config, f.name, value)


STATE = web.AppKey("simulator_state", SimulatorState)


# -- model text ------------------------------------------------------------------

_TOPICS = (
    "streaming responses",
    "back-pressure",
    "connection pooling",
    "UTF-8 decoding",
    "rate limiting",
    "caching",
    "retries with back-off",
    "the café menu parser",
    "naïve tokenisers",
    "résumé parsing",
    "context windows",
    "async I/O",
)
_THINK_OPENERS = (
    "Okay — the user is asking about {topic}.",
    "Hmm — this question is about {topic}.",
    "Alright — let me think about {topic} for a moment.",
)
_THINK_SENTENCES = (
    "Let me think about what they actually need here.",
    "First, I should recall how {topic} works in practice.",
    "Maybe a short example would make this clearer.",
    "They probably want something concrete rather than a lecture.",
    "I could mention the trade-offs, but I should keep it brief.",
    "Wait, there is an edge case: what if the input is empty?",
    "A bulleted summary followed by a small code sample should work.",
    "I'll keep the tone friendly and the answer self-contained.",
    "Let me double-check the details before answering.",
    "Is there a simpler way to say this? Probably, yes.",
    "The naïve approach works, but it buffers too much.",
    "So the plan is: overview, key points, a snippet, then a summary.",
)
_INTRO_OPENERS = (
    "Sure — here's a quick overview of {topic}.",
    "Good question — {topic} is easier than it looks.",
    "Happy to help — let's walk through {topic}.",
)
_PROSE = (
    "The short version: {topic} is mostly about doing less work at the right moment.",
    "In practice, most problems with {topic} come from buffering in the wrong place.",
    "It helps to measure first, because guessing rarely pays off.",
    "Think of it as a pipeline where every stage passes data along at once.",
    "A good default is to keep things simple and optimise only what you observe.",
    "This works the same way locally or on a shared server 🚀.",
    "Small, boring building blocks tend to survive production best.",
    "When in doubt, write a test that reproduces the problem first.",
    "The café analogy helps: serve each cup when it's ready, not in batches ☕.",
)
_BULLETS = (
    "**Measure** the latency at each hop before changing anything.",
    "**Stream** results as they are produced instead of batching them.",
    "**Cache** what is expensive to compute and cheap to store.",
    "**Retry** with back-off, never in a tight loop.",
    "**Validate** input early and fail with a clear message.",
    "**Log** enough context to reproduce a problem later ✨.",
    "Keep the configuration in one place, e.g. a `settings.py` file.",
    "Prefer small functions with one job each.",
)
_HEADINGS = ("Details", "A closer look", "Common pitfalls", "Next steps", "Example")
_CODE = (
    "```python\nimport asyncio\n\n\nasync def relay(chunks, send):\n"
    "    async for chunk in chunks:\n        await send(chunk)\n```",
    "```python\ndef fibonacci(n: int) -> list[int]:\n    seq = [0, 1]\n"
    "    while len(seq) < n:\n        seq.append(seq[-1] + seq[-2])\n"
    "    return seq[:n]\n```",
    "```python\nfrom functools import lru_cache\n\n\n@lru_cache(maxsize=128)\n"
    'def greet(name: str) -> str:\n    return f"Bonjour, {name} 👋"\n```',
)
_CLOSINGS = (
    "Let me know if you'd like a deeper dive into any of these points.",
    "That should cover the common cases; edge cases deserve a test or two.",
    "In short: measure, simplify, and stream. 🙂",
    "If anything is unclear, just ask and I'll expand on it.",
)
_WORD_RE = re.compile(r"\s*\S+|\s+")


def split_tokens(text: str) -> list[str]:
    """Split text into word tokens (each with its leading whitespace), losslessly."""
    return _WORD_RE.findall(text)


def _word_pieces(text: str) -> list[str]:
    # Long plain words become two pieces, as a real tokenizer would split them.
    pieces: list[str] = []
    for token in split_tokens(text):
        core = token.lstrip()
        if len(core) >= 9 and core.rstrip(".,;").isalpha():
            cut = len(token) - len(core) + len(core) // 2 + 1
            pieces += [token[:cut], token[cut:]]
        else:
            pieces.append(token)
    return pieces


def _sentences(rng: random.Random, pool: Sequence[str], topic: str, n: int) -> str:
    return " ".join(s.format(topic=topic) for s in rng.sample(pool, n))


def _thinking_pieces(rng: random.Random, topic: str, count: int) -> list[str]:
    opener = rng.choice(_THINK_OPENERS).format(topic=topic)
    paragraphs = [f"{opener} {_sentences(rng, _THINK_SENTENCES, topic, 2)}"]
    # Blocks never start or end with whitespace, so pieces add up per block.
    size = len(_word_pieces(paragraphs[0]))
    while size < count:
        paragraphs.append(_sentences(rng, _THINK_SENTENCES, topic, 3))
        size += len(_word_pieces(paragraphs[-1]))
    pieces = _word_pieces("\n\n".join(paragraphs))
    pool = [t.format(topic=topic) for t in _THINK_SENTENCES]
    return _trim(rng, pieces, count, pool, _THINK_FILLERS)


def _answer_blocks(rng: random.Random, topic: str, count: int) -> list[str]:
    intro = rng.choice(_INTRO_OPENERS).format(topic=topic)
    blocks = [f"{intro} {_sentences(rng, _PROSE, topic, 2)}"]
    if count >= 40:
        blocks.append(_bullets(rng))
    if count >= 120:
        blocks.append(rng.choice(_CODE))
    return blocks


def _bullets(rng: random.Random) -> str:
    return "\n".join(f"- {b}" for b in rng.sample(_BULLETS, rng.randint(3, 4)))


def _section(rng: random.Random, topic: str, number: int) -> list[str]:
    blocks = [f"### {rng.choice(_HEADINGS)}", _sentences(rng, _PROSE, topic, 3)]
    if number % 3 == 1:
        blocks.append(_bullets(rng))
    elif number % 3 == 2:
        blocks.append(rng.choice(_CODE))
    return blocks


def _answer_pieces(rng: random.Random, topic: str, count: int) -> list[str]:
    blocks = _answer_blocks(rng, topic, count)
    closing = rng.choice(_CLOSINGS)
    size = sum(len(_word_pieces(b)) for b in [*blocks, closing])
    number = 0
    while size < count:
        number += 1
        section = _section(rng, topic, number)
        blocks += section
        size += sum(len(_word_pieces(b)) for b in section)
    pieces = _word_pieces("\n\n".join([*blocks, closing]))
    return _trim(rng, pieces, count, _CLOSINGS, _ANSWER_FILLERS)


_THINK_FILLERS = (
    "Right.",
    "Okay, good.",
    "That seems right.",
    "Yes, that should work.",
)
_ANSWER_FILLERS = ("Enjoy!", "Happy coding!", "Hope that helps!", "Good luck with it!")


def _trim(
    rng: random.Random,
    pieces: list[str],
    count: int,
    pool: Sequence[str],
    fillers: Sequence[str],
) -> list[str]:
    """Exactly ``count`` pieces that end on a whole sentence, outside code.

    Cuts back to the last clean sentence end, then fills the gap with whole
    sentences from ``pool`` and short ``fillers`` (1 to 4 pieces each).
    """
    keep = _clean_end(pieces[:count])
    result = pieces[:keep]
    gap = count - keep
    after_block = keep < len(pieces) and pieces[keep].startswith("\n")
    joiner = "" if keep == 0 else "\n\n" if after_block else " "
    while gap > 0:
        fits = [s for s in pool if len(_word_pieces(s)) <= gap]
        # fillers[i] is i + 1 pieces long, so any gap closes exactly.
        sentence = rng.choice(fits) if fits else fillers[min(gap, len(fillers)) - 1]
        added = _word_pieces(joiner + sentence)
        result += added
        gap -= len(added)
        joiner = " "
    return result


def _clean_end(pieces: list[str]) -> int:
    """How many leading pieces end on a sentence end outside a code fence."""
    best = 0
    in_code = False
    for i, piece in enumerate(pieces):
        if piece.count("```") % 2:
            in_code = not in_code
            if not in_code:
                best = i + 1
        elif not in_code and piece.endswith((".", "!", "?")):
            best = i + 1
    return best


@dataclass(frozen=True)
class Script:
    """What the model will say: thinking and content tokens, JSON-encoded too."""

    thinking: tuple[str, ...]
    content: tuple[str, ...]
    thinking_json: tuple[bytes, ...]
    content_json: tuple[bytes, ...]


def _encode(tokens: Sequence[str]) -> tuple[bytes, ...]:
    return tuple(json.dumps(t, ensure_ascii=False).encode() for t in tokens)


@lru_cache(maxsize=256)
def _script(
    seed: int,
    prompt: str,
    think_tokens: int,
    answer_tokens: int,
    thinking_text: str | None,
    answer_text: str | None,
) -> Script:
    rng = random.Random(f"{seed}\x00{prompt}")
    topic = rng.choice(_TOPICS)
    thinking = (
        split_tokens(thinking_text)
        if thinking_text is not None
        else _thinking_pieces(rng, topic, think_tokens)
    )
    content = (
        split_tokens(answer_text)
        if answer_text is not None
        else _answer_pieces(rng, topic, answer_tokens)
    )
    return Script(tuple(thinking), tuple(content), _encode(thinking), _encode(content))


def reply_script(
    config: SimulatorConfig, messages: Sequence[Any], *, think: bool
) -> Script:
    """The reply the simulator gives to ``messages`` (deterministic per seed)."""
    script = _script(
        config.seed,
        _last_user_text(messages),
        config.think_tokens,
        config.answer_tokens,
        config.thinking_text,
        config.answer_text,
    )
    if think:
        return script
    return Script((), script.content, (), script.content_json)


def _last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


# -- request parsing ------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class ChatRequest:
    name: str  # the model name as sent
    model: SimModel
    messages: list[Any]
    stream: bool
    think: bool
    options: dict[str, Any]
    keep_alive_s: float


@dataclass
class Faults:
    status: int | None = None
    status_message: str | None = None
    cut_after: int | None = None
    error_after: int | None = None
    malformed_after: int | None = None

    @property
    def mid_stream(self) -> bool:
        faults = (self.cut_after, self.error_after, self.malformed_after)
        return any(n is not None for n in faults)


def _find_model(config: SimulatorConfig, name: str) -> SimModel:
    full = name if ":" in name else f"{name}:latest"
    for model in config.models:
        if model.name == full:
            return model
    raise ApiError(404, f'model "{name}" not found, try pulling it first')


def _parse_think(value: Any) -> bool | str | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in THINK_LEVELS:
            return value
        raise ApiError(
            400,
            f"invalid think value: {json.dumps(value)} "
            '(must be "high", "medium", "low", "max", true, or false)',
        )
    raise ApiError(
        400, 'think must be a boolean or string ("high", "medium", "low", "max")'
    )


_DURATION_RE = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_keep_alive(value: Any) -> float:
    """Seconds from Ollama's keep_alive: a number of seconds or a Go duration."""
    if value is None:
        return DEFAULT_KEEP_ALIVE_S
    if _is_number(value):
        return FOREVER_S if value < 0 else float(int(value))
    if not isinstance(value, str):
        raise ApiError(400, f"invalid keep_alive: {json.dumps(value)}")
    text = value.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if body == "0":
        return 0.0
    parts = _DURATION_RE.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        raise ApiError(400, f'time: invalid duration "{value}"')
    seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    return FOREVER_S if sign < 0 else seconds


def parse_chat(config: SimulatorConfig, body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise ApiError(400, "json: cannot unmarshal request body into ChatRequest")
    think = _parse_think(body.get("think"))
    keep_alive_s = parse_keep_alive(body.get("keep_alive"))
    name = body.get("model")
    if not isinstance(name, str) or not name:
        raise ApiError(400, "model is required")
    messages = body.get("messages") or []
    options = body.get("options") or {}
    if not isinstance(messages, list) or not isinstance(options, dict):
        raise ApiError(400, "json: cannot unmarshal messages or options")
    model = _find_model(config, name)
    if think not in (None, False) and not model.thinks:
        raise ApiError(400, f'"{name}" does not support thinking')
    return ChatRequest(
        name=name,
        model=model,
        messages=messages,
        stream=body.get("stream") is not False,
        think=model.thinks if think is None else think is not False,
        options=options,
        keep_alive_s=keep_alive_s,
    )


def take_faults(config: SimulatorConfig) -> Faults:
    """The faults for this request, counting down ``fault_requests``."""
    if config.fault_requests is not None:
        if config.fault_requests <= 0:
            return Faults()
        config.fault_requests -= 1
    return Faults(
        status=config.status,
        status_message=config.status_message,
        cut_after=config.cut_after,
        error_after=config.error_after,
        malformed_after=config.malformed_after,
    )


def _status_text(status: int, message: str | None) -> str:
    if message is not None:
        return message
    if status == 503:
        return SERVER_BUSY
    if status >= 500:
        return RUNNER_STOPPED
    return f"simulated error {status}"


# -- response helpers ------------------------------------------------------------


@lru_cache(maxsize=4)
def _second_prefix(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def rfc3339(ns: int | None = None) -> str:
    """UTC time in Go's RFC3339Nano form (trailing zeros trimmed), as Ollama sends."""
    seconds, frac = divmod(time.time_ns() if ns is None else ns, 1_000_000_000)
    digits = f"{frac:09d}".rstrip("0")
    suffix = f".{digits}Z" if digits else "Z"
    return _second_prefix(seconds) + suffix


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(
        text=_dumps(obj), status=status, content_type="application/json"
    )


def error_response(status: int, message: str) -> web.Response:
    return json_response({"error": message}, status)


def _details(model: SimModel) -> dict[str, Any]:
    return {
        "parent_model": "",
        "format": "gguf",
        "family": model.family,
        "families": [model.family],
        "parameter_size": model.parameter_size,
        "quantization_level": model.quantization_level,
    }


def _parameter_count(model: SimModel) -> int:
    number = float(model.parameter_size.rstrip("BbMm") or 0)
    scale = 1e6 if model.parameter_size[-1:] in "Mm" else 1e9
    return int(number * scale)


def _prompt_tokens(messages: Sequence[Any]) -> int:
    # Roughly four characters per token plus a few template tokens per message.
    chars = sum(len(str(m.get("content", ""))) for m in messages if isinstance(m, dict))
    return max(1, chars // 4 + 4 * len(messages))


# -- the app ---------------------------------------------------------------------


def create_app(config: SimulatorConfig | None = None) -> web.Application:
    """The simulator as an aiohttp application (state under ``app[STATE]``)."""
    app = web.Application()
    app[STATE] = SimulatorState(config if config is not None else SimulatorConfig())
    app.router.add_get("/", _root)
    app.router.add_get("/api/version", _version)
    app.router.add_get("/api/tags", _tags)
    app.router.add_post("/api/show", _show)
    app.router.add_get("/api/ps", _ps)
    app.router.add_post("/api/chat", _chat)
    app.router.add_get("/_sim/log", _sim_log)
    app.router.add_post("/_sim/reset", _sim_reset)
    app.router.add_get("/_sim/config", _sim_get_config)
    app.router.add_post("/_sim/config", _sim_set_config)
    return app


async def _root(request: web.Request) -> web.Response:
    return web.Response(text="Ollama is running")


async def _version(request: web.Request) -> web.Response:
    return json_response({"version": request.app[STATE].config.version})


async def _tags(request: web.Request) -> web.Response:
    models = [
        {
            "name": m.name,
            "model": m.name,
            "modified_at": MODIFIED_AT,
            "size": m.size,
            "digest": m.digest,
            "details": _details(m),
        }
        for m in request.app[STATE].config.models
    ]
    return json_response({"models": models})


async def _show(request: web.Request) -> web.Response:
    try:
        body = await _read_json(request)
        name = (
            (body.get("model") or body.get("name")) if isinstance(body, dict) else None
        )
        if not isinstance(name, str) or not name:
            raise ApiError(400, "model is required")
        model = _find_model(request.app[STATE].config, name)
    except ApiError as exc:
        return error_response(exc.status, exc.message)
    return json_response(_show_body(model))


def _show_body(model: SimModel) -> dict[str, Any]:
    arch = model.family
    modelfile = (
        '# Modelfile generated by "ollama show"\n'
        f"# To build a new Modelfile based on this, replace FROM with:\n"
        f"# FROM {model.name}\n\nFROM /simulated/blobs/sha256-{model.digest}\n"
        f'TEMPLATE """{model.template}"""\n'
        + "".join(f"PARAMETER {line}\n" for line in model.parameters.splitlines())
    )
    return {
        "modelfile": modelfile,
        "parameters": model.parameters,
        "template": model.template,
        "details": _details(model),
        "model_info": {
            "general.architecture": arch,
            "general.parameter_count": _parameter_count(model),
            f"{arch}.context_length": model.context_length,
        },
        "capabilities": list(model.capabilities),
        "modified_at": MODIFIED_AT,
    }


async def _ps(request: web.Request) -> web.Response:
    state = request.app[STATE]
    now, ready = time.time(), asyncio.get_running_loop().time()
    # A model still loading (load_ms) is not listed until it is ready.
    loaded = [
        item
        for item in list(state.loaded.values())
        if item.expires_at > now and item.ready_at <= ready
    ]
    models = [
        {
            "name": item.model.name,
            "model": item.model.name,
            "size": item.model.size,
            "digest": item.model.digest,
            "details": _details(item.model),
            "expires_at": rfc3339(int(item.expires_at * 1e9)),
            "size_vram": item.model.size,
            "context_length": item.num_ctx,
        }
        for item in loaded
    ]
    return json_response({"models": models})


async def _read_json(request: web.Request) -> Any:
    raw = await request.read()
    if not raw.strip():
        raise ApiError(400, "missing request body")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"invalid JSON in request body: {exc}") from exc


# -- /api/chat -------------------------------------------------------------------


@dataclass
class _Timing:
    """Clock readings of one chat request, for the done chunk's metrics."""

    start_ns: int
    loaded_ns: int = 0
    first_ns: int = 0
    last_ns: int = 0


async def _chat(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    timing = _Timing(start_ns=time.perf_counter_ns())
    entry = ChatLogEntry(body=None, started=time.time())
    state.record(entry)
    try:
        entry.body = await _read_json(request)
        chat = parse_chat(state.config, entry.body)
    except ApiError as exc:
        entry.status = exc.status
        entry.end(finished=True)
        return error_response(exc.status, exc.message)
    entry.model = chat.model.name
    faults = take_faults(state.config)
    if faults.status is not None:
        entry.status, entry.fault = faults.status, "status"
        entry.end(finished=True)
        return error_response(
            faults.status, _status_text(faults.status, faults.status_message)
        )
    try:
        return await _serve_chat(request, state, chat, faults, entry, timing)
    except (ConnectionResetError, asyncio.CancelledError):
        # The client went away: stop generating at once, like Ollama.
        entry.disconnected = True
        entry.end(finished=False)
        raise


async def _serve_chat(
    request: web.Request,
    state: SimulatorState,
    chat: ChatRequest,
    faults: Faults,
    entry: ChatLogEntry,
    timing: _Timing,
) -> web.StreamResponse:
    await _load(state, chat)
    timing.loaded_ns = time.perf_counter_ns()
    try:
        if not chat.messages:
            return _load_only(chat, entry)
        config = state.config
        script = reply_script(config, chat.messages, think=chat.think)
        plan = _Plan.build(config, chat, script)
        entry.thinking = bool(script.thinking)
        if chat.stream:
            return await _stream(request, plan, faults, entry, timing)
        return await _respond_once(request, plan, faults, entry, timing)
    finally:
        _touch(state, chat)


async def _load(state: SimulatorState, chat: ChatRequest) -> None:
    """Mark the model loaded, waiting ``load_ms`` if it was cold (or reloads)."""
    loop = asyncio.get_running_loop()
    num_ctx = _num_ctx(chat)
    loaded = state.loaded.get(chat.model.name)
    cold = (
        loaded is None
        or loaded.expires_at <= time.time()
        or loaded.num_ctx != num_ctx
        or loaded.model != chat.model
    )
    if loaded is None or cold:
        ready_at = loop.time() + state.config.load_ms / 1000
        loaded = _Loaded(chat.model, num_ctx, ready_at, time.time() + FOREVER_S)
        state.loaded[chat.model.name] = loaded
    delay = loaded.ready_at - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


def _num_ctx(chat: ChatRequest) -> int:
    value = chat.options.get("num_ctx")
    if _is_number(value) and value > 0:
        return int(value)
    return min(DEFAULT_NUM_CTX, chat.model.context_length)


def _touch(state: SimulatorState, chat: ChatRequest) -> None:
    """Start the keep-alive countdown when a request ends (0 unloads at once)."""
    loaded = state.loaded.get(chat.model.name)
    if loaded is None:
        return
    if chat.keep_alive_s <= 0:
        state.loaded.pop(chat.model.name, None)
    else:
        loaded.expires_at = time.time() + chat.keep_alive_s


def _load_only(chat: ChatRequest, entry: ChatLogEntry) -> web.Response:
    # Ollama answers a load with c.JSON whatever "stream" says: one JSON
    # object, application/json, no trailing newline.
    reason = "unload" if chat.keep_alive_s <= 0 else "load"
    entry.done_reason = reason
    entry.end(finished=True)
    return json_response(
        {
            "model": chat.name,
            "created_at": rfc3339(),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": reason,
        }
    )


@dataclass
class _Plan:
    """The chunks one chat request will send, ready to write."""

    name: str
    prompt_tokens: int
    tps: float
    ttft_s: float
    content_in_done: bool
    record_times: bool
    done_reason: str
    pieces: list[tuple[bytes, bytes]]  # (message prefix, JSON string token)
    thinking: str
    content: str

    @classmethod
    def build(cls, config: SimulatorConfig, chat: ChatRequest, script: Script) -> _Plan:
        pieces = [(_THINK_MID, t) for t in script.thinking_json]
        pieces += [(_CONTENT_MID, t) for t in script.content_json]
        thinking, content = list(script.thinking), list(script.content)
        limit = chat.options.get("num_predict")
        done_reason = "stop"
        if _is_number(limit) and 0 < limit < len(pieces):
            done_reason = "length"
            pieces = pieces[: int(limit)]
            thinking = thinking[: int(limit)]
            content = content[: max(0, int(limit) - len(script.thinking))]
        return cls(
            name=chat.name,
            prompt_tokens=_prompt_tokens(chat.messages),
            tps=config.tps,
            ttft_s=config.ttft_ms / 1000,
            content_in_done=config.content_in_done,
            record_times=config.record_times,
            done_reason=done_reason,
            pieces=pieces,
            thinking="".join(thinking),
            content="".join(content),
        )

    def metrics(self, timing: _Timing, tokens: int) -> dict[str, Any]:
        """Ollama's done metrics in ns; zero values are omitted as Ollama does."""
        now = time.perf_counter_ns()
        tail = int(1e9 / self.tps) if self.tps > 0 else 0
        values = {
            "total_duration": now - timing.start_ns,
            "load_duration": timing.loaded_ns - timing.start_ns,
            "prompt_eval_count": self.prompt_tokens,
            "prompt_eval_duration": (timing.first_ns or now) - timing.loaded_ns,
            "eval_count": tokens,
            "eval_duration": max(1, timing.last_ns - timing.first_ns + tail)
            if tokens
            else 0,
        }
        return {k: v for k, v in values.items() if v}


_THINK_MID = b'","message":{"role":"assistant","content":"","thinking":'
_CONTENT_MID = b'","message":{"role":"assistant","content":'
_CHUNK_END = b'},"done":false}\n'


async def _stream(
    request: web.Request,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: _Timing,
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    t0 = loop.time() + plan.ttft_s
    await _sleep_until(loop, t0)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    _set_nodelay(request)
    head = b'{"model":' + _dumps(plan.name).encode() + b',"created_at":"'
    total = len(plan.pieces)
    in_stream = total - 1 if plan.content_in_done and _last_is_content(plan) else total
    interval = 1 / plan.tps if plan.tps > 0 else 0.0
    check_faults = faults.mid_stream
    for i in range(in_stream + 1):
        if interval and i < total:
            await _sleep_until(loop, t0 + i * interval)
        elif i % 64 == 63:
            await asyncio.sleep(0)  # let other streams and disconnects through
        if check_faults and await _fault(
            request, response, plan, faults, entry, i, in_stream
        ):
            return response
        if i == in_stream:
            break
        mid, token = plan.pieces[i]
        await response.write(
            b"".join((head, rfc3339().encode(), mid, token, _CHUNK_END))
        )
        _sent(entry, timing, plan)
    await _write_done(response, plan, entry, timing, in_stream < total)
    return response


def _last_is_content(plan: _Plan) -> bool:
    return bool(plan.pieces) and plan.pieces[-1][0] is _CONTENT_MID


def _sent(entry: ChatLogEntry, timing: _Timing, plan: _Plan) -> None:
    timing.last_ns = time.perf_counter_ns()
    if not entry.tokens_sent:
        timing.first_ns = timing.last_ns
    entry.tokens_sent += 1
    if plan.record_times:
        entry.times.append(time.time())


async def _write_done(
    response: web.StreamResponse,
    plan: _Plan,
    entry: ChatLogEntry,
    timing: _Timing,
    carries_last: bool,
) -> None:
    last = json.loads(plan.pieces[-1][1]) if carries_last else ""
    if carries_last:
        _sent(entry, timing, plan)
    done = {
        "model": plan.name,
        "created_at": rfc3339(),
        "message": {"role": "assistant", "content": last},
        "done": True,
        "done_reason": plan.done_reason,
        **plan.metrics(timing, entry.tokens_sent),
    }
    await response.write(_dumps(done).encode() + b"\n")
    await response.write_eof()
    entry.done_reason = plan.done_reason
    entry.end(finished=True)


async def _fault(
    request: web.Request,
    response: web.StreamResponse,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    sent: int,
    last: int,
) -> bool:
    """Inject the fault due after ``sent`` tokens; True when the stream is over.

    A cut or error set beyond the last token happens instead of the done chunk.
    """
    if faults.cut_after is not None and sent == min(faults.cut_after, last):
        entry.fault = "cut"
        _cut(request)
        entry.end(finished=False)
        return True
    if faults.error_after is not None and sent == min(faults.error_after, last):
        entry.fault = "error"
        await response.write(_dumps({"error": RUNNER_STOPPED}).encode() + b"\n")
        await response.write_eof()
        entry.end(finished=True)
        return True
    if faults.malformed_after is not None and sent == faults.malformed_after:
        entry.fault = "malformed"
        line = f'{{"model":{_dumps(plan.name)},"created_at":"{rfc3339()}","mess\n'
        await response.write(line.encode())
    return False


def _cut(request: web.Request) -> None:
    # close() (not abort()) so the tokens already written still reach the
    # client; the body simply stops without its terminating chunk.
    transport = request.transport
    if transport is not None:
        transport.close()


async def _respond_once(
    request: web.Request,
    plan: _Plan,
    faults: Faults,
    entry: ChatLogEntry,
    timing: _Timing,
) -> web.StreamResponse:
    loop = asyncio.get_running_loop()
    t0 = loop.time() + plan.ttft_s
    total = len(plan.pieces)
    cut = None if faults.cut_after is None else min(faults.cut_after, total)
    error = None if faults.error_after is None else min(faults.error_after, total)
    stop_at = min(n for n in (cut, error, total) if n is not None)
    last_token_at = t0 + max(0, stop_at - 1) / plan.tps if plan.tps > 0 else t0
    await _sleep_until(loop, t0)
    timing.first_ns = time.perf_counter_ns()
    await _sleep_until(loop, last_token_at)
    timing.last_ns = time.perf_counter_ns()
    entry.tokens_sent = stop_at
    if cut == stop_at:
        entry.fault = "cut"
        _cut(request)
        entry.end(finished=False)
        return web.Response()  # never reaches the client
    if error == stop_at:
        entry.fault, entry.status = "error", 500
        entry.end(finished=True)
        return error_response(500, RUNNER_STOPPED)
    entry.done_reason = plan.done_reason
    entry.end(finished=True)
    message = {"role": "assistant", "content": plan.content}
    if plan.thinking:
        message["thinking"] = plan.thinking
    return json_response(
        {
            "model": plan.name,
            "created_at": rfc3339(),
            "message": message,
            "done": True,
            "done_reason": plan.done_reason,
            **plan.metrics(timing, total),
        }
    )


async def _sleep_until(loop: asyncio.AbstractEventLoop, deadline: float) -> None:
    delay = deadline - loop.time()
    if delay > 0:
        await asyncio.sleep(delay)


def _set_nodelay(request: web.Request) -> None:
    # aiohttp already sets TCP_NODELAY on accept; make sure, since the whole
    # point is that each token leaves on its own packet.
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


# -- /_sim/* ---------------------------------------------------------------------


async def _sim_log(request: web.Request) -> web.Response:
    entries = request.app[STATE].entries()
    return json_response({"requests": [e.to_dict() for e in entries]})


async def _sim_reset(request: web.Request) -> web.Response:
    request.app[STATE].reset()
    return json_response({"ok": True})


async def _sim_get_config(request: web.Request) -> web.Response:
    return json_response(dataclasses.asdict(request.app[STATE].config))


async def _sim_set_config(request: web.Request) -> web.Response:
    state = request.app[STATE]
    try:
        changes = await _read_json(request)
        if not isinstance(changes, dict):
            raise ConfigError("expected a JSON object of config fields")
        update_config(state.config, changes)
    except (ApiError, ConfigError) as exc:
        return error_response(400, str(exc))
    return json_response(dataclasses.asdict(state.config))


# -- running it ------------------------------------------------------------------


async def start_site(
    app: web.Application,
    host: str,
    port: int,
    *,
    shutdown_timeout: float = 1.0,
    access_log: bool = False,
) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on host:port (0 = any free port); returns (runner, url)."""
    kwargs: dict[str, Any] = {} if access_log else {"access_log": None}
    runner = web.AppRunner(
        app,
        handler_cancellation=True,  # a client going away stops its generation
        shutdown_timeout=shutdown_timeout,
        **kwargs,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    url_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    return runner, f"http://{url_host}:{bound[1]}"


async def serve(
    config: SimulatorConfig,
    host: str = "127.0.0.1",
    port: int = 11434,
    *,
    on_ready: Callable[[str], None] | None = None,
    access_log: bool = False,
    handle_signals: bool = True,
) -> None:
    """Run the simulator until cancelled or, from the main thread, SIGINT/SIGTERM."""
    runner, url = await start_site(
        create_app(config), host, port, shutdown_timeout=2.0, access_log=access_log
    )
    stop = asyncio.Event()
    if handle_signals:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    try:
        if on_ready is not None:
            on_ready(url)
        await stop.wait()
    finally:
        await runner.cleanup()


class SimulatorServer:
    """The simulator in a background thread with its own event loop."""

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.app = create_app(config)
        self.host = host
        self.port = port
        self.url = ""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def state(self) -> SimulatorState:
        return self.app[STATE]

    @property
    def config(self) -> SimulatorConfig:
        return self.state.config

    @property
    def log(self) -> list[ChatLogEntry]:
        return self.state.entries()

    def reset(self) -> None:
        self.state.reset()

    def start(self) -> SimulatorServer:
        self._thread = threading.Thread(
            target=self._run, name="ollama-simulator", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> SimulatorServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start() if it failed early
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        runner, self.url = await start_site(self.app, self.host, self.port)
        self.port = int(self.url.rsplit(":", 1)[1])
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await runner.cleanup()
