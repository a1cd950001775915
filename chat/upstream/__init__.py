"""Clients for model servers: they yield `Event` lists and raise `UpstreamError`."""

from __future__ import annotations

from chat.upstream.events import Delta, Event, Finished, UpstreamError
from chat.upstream.ollama import ModelFacts, OllamaClient, model_facts
from chat.upstream.openai import OpenAIClient, ThinkingControl
from chat.upstream.pool import (
    aclose_all,
    client_for,
    http_client_for,
    ollama_client,
    openai_client,
)

__all__ = [
    "Delta",
    "Event",
    "Finished",
    "ModelFacts",
    "OllamaClient",
    "OpenAIClient",
    "ThinkingControl",
    "UpstreamError",
    "aclose_all",
    "client_for",
    "http_client_for",
    "model_facts",
    "ollama_client",
    "openai_client",
]
