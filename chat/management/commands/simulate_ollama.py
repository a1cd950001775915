"""Run the bundled model-server simulator in the foreground (see chat/simulator/)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from chat.simulator import REASONING_STYLES, TOOL_FORMATS, SimulatorConfig, serve

# Command-line flags that map one to one onto SimulatorConfig fields.
_NUMBER_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("tps", float, "tokens per second (0 = as fast as possible)"),
    ("ttft_ms", float, "time to first token, in ms"),
    ("load_ms", float, "extra wait on a model's first (cold) request, in ms"),
    ("think_tokens", int, "thinking tokens per reply (thinking models)"),
    ("answer_tokens", int, "answer tokens per reply"),
    ("seed", int, "seed of the generated text"),
)
_FAULT_FLAGS: tuple[tuple[str, str], ...] = (
    ("cut_after", "close the connection after N tokens (no done chunk)"),
    ("error_after", "write an error line after N tokens and end the stream"),
    ("malformed_after", "write one malformed line after N tokens, then go on"),
    ("status", "answer every chat request with this HTTP status"),
    ("fault_requests", "apply the faults to the next N chat requests only"),
)


class Command(BaseCommand):
    help = "Serve a simulated Ollama (native API) for demos, tests and benchmarks."
    requires_system_checks: list[str] = []  # needs no database or app checks

    def add_arguments(self, parser: ArgumentParser) -> None:
        defaults = SimulatorConfig()
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=11434, help="0 = any free")
        for name, kind, text in _NUMBER_FLAGS:
            parser.add_argument(
                _flag(name), type=kind, default=getattr(defaults, name), help=text
            )
        for name, text in _FAULT_FLAGS:
            parser.add_argument(_flag(name), type=int, default=None, help=text)
        parser.add_argument("--status-message", default=None)
        parser.add_argument("--answer-text", default=None, help="fixed answer text")
        parser.add_argument("--thinking-text", default=None, help="fixed thinking")
        parser.add_argument(
            "--content-in-done",
            action="store_true",
            help="send the last content token on the done chunk",
        )
        parser.add_argument(
            "--record-times",
            action="store_true",
            help="log a timestamp per token (GET /_sim/log)",
        )
        parser.add_argument(
            "--reasoning",
            choices=REASONING_STYLES,
            default=defaults.reasoning,
            help="OpenAI-compatible side: where thinking goes by default",
        )
        parser.add_argument(
            "--tool-format",
            choices=TOOL_FORMATS,
            default=defaults.tool_format,
            help="OpenAI-compatible side: tool calls in delta.tool_calls (a server "
            "with a tool parser) or as <tool_call> tags in the content",
        )
        parser.add_argument(
            "--sse-ping",
            action="store_true",
            help="OpenAI-compatible side: a ': ping' comment before each event",
        )
        parser.add_argument(
            "--timings",
            action="store_true",
            help="OpenAI-compatible side: llama.cpp's timings on the last chunk",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        config = SimulatorConfig(
            **{name: options[name] for name, _, _ in _NUMBER_FLAGS},
            **{name: options[name] for name, _ in _FAULT_FLAGS},
            status_message=options["status_message"],
            answer_text=options["answer_text"],
            thinking_text=options["thinking_text"],
            content_in_done=options["content_in_done"],
            record_times=options["record_times"],
            reasoning=options["reasoning"],
            tool_format=options["tool_format"],
            sse_ping=options["sse_ping"],
            timings=options["timings"],
        )
        main = serve(
            config,
            options["host"],
            options["port"],
            on_ready=self._announce,
            access_log=options["verbosity"] >= 2,
        )
        # As in the site's own process (chatsite/asgi.py): what start-up built
        # (Django, the simulator) lives as long as the process; a full
        # collection walking it stalls every stream for tens of milliseconds,
        # which a real model server does not.
        gc.collect()
        gc.freeze()
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(main)

    def _announce(self, url: str) -> None:
        self.stdout.write(
            f"Model server simulator (demo models; Ollama and /v1) listening on {url}"
        )
        self.stdout.flush()


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
