"""Clients for model servers: they yield `Event` lists and raise `UpstreamError`."""

from __future__ import annotations

from chat.upstream.events import Delta, Event, Finished, ToolCallDelta, UpstreamError
from chat.upstream.ollama import ModelFacts, OllamaClient, model_facts
from chat.upstream.openai import OpenAIClient, ThinkingControl
from chat.upstream.pool import ClientPool, thinking_control

__all__ = [
    "ClientPool",
    "Delta",
    "Event",
    "Finished",
    "ModelFacts",
    "OllamaClient",
    "OpenAIClient",
    "ThinkingControl",
    "ToolCallDelta",
    "UpstreamError",
    "model_facts",
    "thinking_control",
]
