"""A bundled model-server simulator: a real HTTP server speaking Ollama's native
API and the OpenAI-compatible one.

It is the demo model when no real Ollama answers (``make run``), the model
server of the test suite, and the upstream of the benchmarks. It implements the
parts of Ollama's API a chat front end uses (see
``docs/model-servers.md`` section 1):

- ``GET /`` ("Ollama is running"), ``GET /api/version``, ``GET /api/tags``,
  ``POST /api/show``, ``GET /api/ps``;
- ``POST /api/chat``, streamed (NDJSON, one token per chunk, each chunk written
  and flushed on its own, paced at ``tps`` with absolute deadlines) or not,
  with thinking, load-only requests, Ollama's error statuses and messages, and
  the final ``done`` chunk's metrics in nanoseconds;
- ``GET /v1/models`` and ``POST /v1/chat/completions`` (server-sent events or
  one JSON answer), with reasoning in ``delta.reasoning_content``,
  ``delta.reasoning``, inline ``<think>`` tags or only a closing tag (config
  ``reasoning``, or a request's ``sim_reasoning``), ``usage`` when
  ``stream_options.include_usage``, llama.cpp's ``timings`` (config
  ``timings``) and ``: ping`` comments (config ``sse_ping``); see ``openai``.

Replies are deterministic for a given ``seed`` and last user message: a short
markdown answer (paragraphs, a bullet list, a fenced Python block when long
enough) preceded by plausible thinking prose. Tokens are words with their
leading space, long words are split in two pieces, and the text carries some
multi-byte UTF-8 ("—", "é", emoji).

The package: ``config`` (what it simulates), ``state`` (log, loaded models),
``script`` (the text), ``faults``, ``wire`` (HTTP helpers), ``ollama`` and
``openai`` (the two protocols), ``toolcalls`` (tool calling in both, and
Qwen3's inline form: when a reply calls tools, the rule, the script
``tool_script``/``tool_loop`` and ``tool_format``), ``app`` (the app and the
ways to run it).

Faults, set in the config, for both protocols (all counts are tokens already
sent, thinking included; they apply to every chat request, or to the next
``fault_requests`` ones):

- ``status``: answer with that HTTP status and ``{"error": ...}`` before any
  body (503 uses Ollama's "server busy" text);
- ``cut_after``: close the connection after N tokens, without a done chunk;
- ``error_after``: after N tokens write ``{"error": "model runner has
  unexpectedly stopped, ..."}`` (OpenAI: ``data: {"error": {...}}`` and
  ``[DONE]``) and end the stream;
- ``malformed_after``: after N tokens write one truncated JSON line, then go on.

Endpoints that are not part of Ollama's API, for tests and benchmarks:

- ``GET /_sim/log`` -> ``{"requests": [entry, ...]}``, the last ``log_size``
  chat requests, oldest first. An entry is :class:`ChatLogEntry` as a dict:
  ``body`` (the parsed request), ``started`` (``time.time()``), ``status``,
  ``model``, ``thinking`` (whether thinking was produced), ``tokens_sent``,
  ``done_reason``, ``fault``, ``load_only`` (an Ollama chat without messages,
  which only loads or unloads the model), ``disconnected`` (the client went
  away before the end), ``finished`` (the response was completed as planned,
  including planned error answers), ``ended`` and ``times`` (with ``record_times``: one
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

from chat.simulator.app import (
    SimulatorServer,
    create_app,
    serve,
    start_site,
)
from chat.simulator.config import (
    OLLAMA_VERSION,
    REASONING_STYLES,
    RUNNER_STOPPED,
    SERVER_BUSY,
    TOOL_FORMATS,
    ConfigError,
    SimModel,
    SimulatorConfig,
    default_models,
    update_config,
)
from chat.simulator.ollama import parse_chat
from chat.simulator.ollama_models import parse_keep_alive
from chat.simulator.script import Script, reply_script, split_tokens
from chat.simulator.state import STATE, ChatLogEntry, SimulatorState

__all__ = [
    "OLLAMA_VERSION",
    "REASONING_STYLES",
    "RUNNER_STOPPED",
    "SERVER_BUSY",
    "STATE",
    "TOOL_FORMATS",
    "ChatLogEntry",
    "ConfigError",
    "Script",
    "SimModel",
    "SimulatorConfig",
    "SimulatorServer",
    "SimulatorState",
    "create_app",
    "default_models",
    "parse_chat",
    "parse_keep_alive",
    "reply_script",
    "serve",
    "split_tokens",
    "start_site",
    "update_config",
]
