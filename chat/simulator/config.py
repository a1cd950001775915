"""The simulator's configuration: its models and how it behaves, changed live."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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

# Where the OpenAI-compatible side puts reasoning: a delta field (llama.cpp,
# SGLang, older vLLM: reasoning_content; newer vLLM, Ollama /v1: reasoning), or
# inline in the content in <think> tags, or only closing the tag (the prompt
# opened it: Qwen3-Thinking-2507, DeepSeek-R1).
REASONING_STYLES = ("reasoning_content", "reasoning", "tags", "close_tag")

# How the OpenAI-compatible side writes tool calls: as a server with a tool
# parser does (vLLM's --tool-call-parser, llama.cpp --jinja, LM Studio, SGLang:
# `delta.tool_calls`), or as one without: Qwen3's inline `<tool_call>` tags in
# the content (chat/simulator/toolcalls/__init__.py).
TOOL_FORMATS = ("parser", "tags")


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
    def calls_tools(self) -> bool:
        return "tools" in self.capabilities

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
            # Qwen3-VL: calls tools, thinks and sees pictures.
            capabilities=("completion", "tools", "thinking", "vision"),
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
    # Tokens written together in one network write (Ollama's chat side), as a
    # model server ahead of its reader delivers them: the relay reads several
    # at once.
    burst: int = 1
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
    # The OpenAI-compatible side (``/v1``): where reasoning goes (one of
    # REASONING_STYLES; a request's ``sim_reasoning`` field overrides it), SSE
    # ``: ping`` comments before each event, llama.cpp's ``timings``.
    reasoning: str = "reasoning_content"
    sse_ping: bool = False
    timings: bool = False
    # Tool calls (chat/simulator/toolcalls/__init__.py): how the OpenAI side
    # writes them (one of TOOL_FORMATS; a request's ``sim_tool_format``
    # overrides it); the calls of each model reply after the question, in
    # order, instead of the rule (a list of rounds, each a list of
    # {"name", "arguments": object or JSON text, "id"?}); and whether the last
    # scripted round repeats forever (a model stuck in a loop of calls).
    tool_format: str = "parser"
    tool_script: list[Any] | None = None
    tool_loop: bool = False


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
    if name == "tool_script":
        return _coerce_tool_script(value)
    hint = typing.get_type_hints(SimulatorConfig)[name]
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    allowed = typing.get_args(hint) if union else (hint,)
    if value is None and type(None) in allowed:
        return None
    if float in allowed and is_number(value):
        return float(value)
    if int in allowed and isinstance(value, int) and not isinstance(value, bool):
        return value
    if (bool in allowed and isinstance(value, bool)) or (
        str in allowed and isinstance(value, str)
    ):
        return value
    raise ConfigError(f"invalid value for {name}: {json.dumps(value)}")


def is_number(value: Any) -> typing.TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _coerce_models(value: Any) -> list[SimModel]:
    if not isinstance(value, list) or not value:
        raise ConfigError("models must be a non-empty list of objects")
    try:
        return [SimModel.from_dict(item) for item in value]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invalid models: {exc}") from exc


def _coerce_tool_script(value: Any) -> list[Any] | None:
    """A script of tool calls: a list of rounds, each a list of calls."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(r, list) for r in value):
        raise ConfigError("tool_script must be a list of rounds, each a list of calls")
    for call in (call for round_ in value for call in round_):
        if (
            not isinstance(call, dict)
            or set(call) - {"name", "arguments", "id"}
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments", {}), dict | str)
            or not isinstance(call.get("id", ""), str)
        ):
            raise ConfigError(
                'a scripted call is {"name": str, "arguments": object or JSON '
                f'text, "id": str (optional)}}, not {json.dumps(call)}'
            )
    return value
