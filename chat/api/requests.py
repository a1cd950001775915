"""The body of a chat request, in either dialect, read into one `ChatRequest`:
validated with a clear 400 for what is wrong, unknown fields ignored (as the
OpenAI API's clients expect of compatible servers).

Options are named as Ollama names them, as everywhere in the site
(`ModelProfile.request_options`); the OpenAI client of `chat.upstream` renames
them for an OpenAI-compatible model server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from chat.api import tools
from chat.api.errors import ApiError, bad_request
from chat.models import ClientTools

ROLES = ("system", "user", "assistant", "tool")
# Sampling options a client may set (`num_ctx` is not one: the context is the
# admin's, per model profile, and sets how much memory the model server uses).
NUMBERS = ("temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty")
OLLAMA_NUMBERS = (*NUMBERS, "repeat_penalty")
INTEGERS = ("top_k", "seed")
MAX_STOP_SEQUENCES = 16
# OpenAI's reasoning efforts: "none" and "minimal" ask for no thinking.
NO_REASONING = ("none", "minimal")
REASONING = ("low", "medium", "high", "xhigh")


@dataclass
class ChatRequest:
    model: str
    messages: list[dict[str, Any]]  # the OpenAI shape (`chat.api.tools`)
    stream: bool
    think: bool | None = None  # None: the model's default
    options: dict[str, Any] = field(default_factory=dict)
    include_usage: bool = False  # OpenAI's stream_options.include_usage
    tools: ClientTools | None = None  # the client's own (`chat.api.tools`)


def max_body_bytes() -> int:
    """The largest request body taken: a socket's largest message many times
    over (a request carries its whole history), at least 1 MiB."""
    return max(1024 * 1024, 8 * 4 * settings.MESSAGE_MAX_CHARS)


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object of a request body; ApiError 413 over the limit, 400
    otherwise."""
    if len(body) > max_body_bytes():
        raise ApiError(
            413,
            "request_too_large",
            f"The request body is {len(body):,} bytes or more; the limit is "
            f"{max_body_bytes():,}.",
        )
    try:
        data = json.loads(body)
        # JSON may escape lone surrogates ("\ud800"), which no database stores.
        json.dumps(data, ensure_ascii=False).encode()
    except RecursionError:
        raise bad_request("The request body is nested too deeply.") from None
    except UnicodeError:
        raise bad_request(
            "The request body holds text that is not valid Unicode."
        ) from None
    except ValueError:
        raise bad_request("The request body is not valid JSON.") from None
    if not isinstance(data, dict):
        raise bad_request("The request body must be a JSON object.")
    return data


def openai_chat(data: dict[str, Any]) -> ChatRequest:
    """A `POST /v1/chat/completions` body."""
    n = data.get("n", 1)
    if n is not None and n != 1:
        raise bad_request("Only n=1 is supported: ask once per answer.", "n")
    request = ChatRequest(
        model=_model(data),
        messages=_messages(data.get("messages"), _openai_content, "openai"),
        stream=_flag(data, "stream", default=False),
        tools=tools.offered(data, "openai"),
    )
    options = request.options
    for name in NUMBERS:
        _number(data, name, options)
    for name in INTEGERS:
        _integer(data, name, options)
    limit = data.get("max_completion_tokens", data.get("max_tokens"))
    if limit is not None:
        options["num_predict"] = _positive(limit, "max_tokens")
    _stop(data.get("stop"), options)
    request.think = _openai_thinking(data)
    stream_options = data.get("stream_options")
    if stream_options is not None:
        if not isinstance(stream_options, dict):
            raise bad_request("stream_options must be an object.", "stream_options")
        request.include_usage = bool(stream_options.get("include_usage", False))
    return request


def ollama_chat(data: dict[str, Any]) -> ChatRequest:
    """A `POST /api/chat` body."""
    fmt = data.get("format")
    if fmt not in (None, ""):
        raise bad_request("Structured output (format) is not supported.")
    request = ChatRequest(
        model=_model(data),
        messages=_messages(data.get("messages"), _ollama_content, "ollama"),
        stream=_flag(data, "stream", default=True),
        tools=tools.offered(data, "ollama"),
    )
    given = data.get("options")
    if given is not None:
        if not isinstance(given, dict):
            raise bad_request("options must be an object.")
        options = request.options
        for name in OLLAMA_NUMBERS:
            _number(given, name, options)
        for name in INTEGERS:
            _integer(given, name, options)
        limit = given.get("num_predict")
        if limit is not None and limit != -1:
            options["num_predict"] = _positive(limit, "num_predict")
        _stop(given.get("stop"), options)
    think = data.get("think")
    if think is None or isinstance(think, bool):
        request.think = think
    elif think in REASONING:  # gpt-oss' levels: some thinking
        request.think = True
    else:
        raise bad_request('think must be true, false, "low", "medium" or "high".')
    return request


def _model(data: dict[str, Any]) -> str:
    return model_name(data.get("model"))


def model_name(model: Any) -> str:
    """A request's model name, trimmed; ApiError 400 for none, or for one no
    model can have (the database refuses to even look up a NUL character)."""
    if not isinstance(model, str) or not model.strip():
        raise bad_request("Name the model: model is required.", "model")
    if len(model) > 200:
        raise bad_request("model is too long.", "model")
    if "\x00" in model:
        raise bad_request("model contains a NUL character.", "model")
    return model.strip()


def _flag(data: dict[str, Any], name: str, *, default: bool) -> bool:
    value = data.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"{name} must be true or false.", name)
    return value


def _messages(
    value: Any, content_of: Any, dialect: tools.Dialect
) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not value:
        raise bad_request("messages must be a non-empty list.", "messages")
    messages = []
    history = tools.History(dialect)
    for index, item in enumerate(value):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise bad_request(f"{where} must be an object.", "messages")
        role = item.get("role")
        if role == "developer":  # OpenAI's newer name for the system prompt
            role = "system"
        if role not in ROLES:
            raise bad_request(
                f"{where}.role must be system, user, assistant or tool.", "messages"
            )
        content = content_of(item, where)
        message: dict[str, Any] = {"role": role, "content": content}
        size = len(content)
        if item.get("tool_calls") and role != "assistant":
            raise bad_request(f"{where}: only an assistant calls tools.", "messages")
        if item.get("tool_calls"):
            message["tool_calls"] = history.calls(item["tool_calls"], index)
            size += sum(len(c["function"]["arguments"]) for c in message["tool_calls"])
        elif role == "tool":
            message["tool_call_id"], message["name"] = history.result(item, where)
        if size > settings.MESSAGE_MAX_CHARS:
            raise bad_request(
                f"{where} is {size:,} characters; the limit is "
                f"{settings.MESSAGE_MAX_CHARS:,}.",
                "messages",
            )
        if "\x00" in content:
            raise bad_request(f"{where} contains a NUL character.", "messages")
        messages.append(message)
    last = messages[-1]
    if last["role"] != "tool" and (
        last["role"] != "user" or not last["content"].strip()
    ):
        raise bad_request(
            "The last message must be the user's question, and not blank, or a "
            "tool's result.",
            "messages",
        )
    return messages


def _openai_content(item: dict[str, Any], where: str) -> str:
    """A message's text: a string, or text parts (images are not supported)."""
    content = item.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"{where}.content must be a string or a list of parts.")
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("image_url", "input_image", "image"):
            raise bad_request("Images are not supported.", "messages")
        elif kind in ("input_audio", "file", "audio"):
            raise bad_request(f"Content of type {kind} is not supported.", "messages")
        else:
            raise bad_request(
                f"{where}.content has a part that is not text.", "messages"
            )
    return "\n".join(texts)


def _ollama_content(item: dict[str, Any], where: str) -> str:
    if item.get("images"):
        raise bad_request("Images are not supported.")
    content = item.get("content", "")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise bad_request(f"{where}.content must be a string.")
    return content


def _number(data: dict[str, Any], name: str, options: dict[str, Any]) -> None:
    value = data.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"{name} must be a number.", name)
    if value != value or value in (float("inf"), float("-inf")):
        raise bad_request(f"{name} must be a finite number.", name)
    if isinstance(value, int) and abs(value) > 2**63 - 1:
        # As for integers: no model server reads a number past 64 bits.
        raise bad_request(f"{name} must be a finite number.", name)
    options[name] = value


def _integer(data: dict[str, Any], name: str, options: dict[str, Any]) -> None:
    value = data.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**63 - 1:
        raise bad_request(f"{name} must be an integer.", name)
    options[name] = value


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise bad_request(f"{name} must be a positive integer.", name)
    return min(value, 2**31 - 1)


def _stop(value: Any, options: dict[str, Any]) -> None:
    if value is None:
        return
    stops = [value] if isinstance(value, str) else value
    if (
        not isinstance(stops, list)
        or not all(isinstance(s, str) and s for s in stops)
        or len(stops) > MAX_STOP_SEQUENCES
    ):
        raise bad_request(
            f"stop must be a string or a list of at most {MAX_STOP_SEQUENCES} "
            "non-empty strings.",
            "stop",
        )
    if stops:
        options["stop"] = stops


def _openai_thinking(data: dict[str, Any]) -> bool | None:
    """Thinking on or off: `chat_template_kwargs.enable_thinking` (vLLM,
    SGLang), `reasoning_effort` (OpenAI), `think` (Ollama's own); None: the
    model's default."""
    kwargs = data.get("chat_template_kwargs")
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise bad_request("chat_template_kwargs must be an object.")
        enable = kwargs.get("enable_thinking")
        if enable is not None:
            if not isinstance(enable, bool):
                raise bad_request("enable_thinking must be true or false.")
            return enable
    effort = data.get("reasoning_effort")
    if effort is not None:
        if effort in NO_REASONING:
            return False
        if effort in REASONING:
            return True
        raise bad_request(
            "reasoning_effort must be none, minimal, low, medium or high.",
            "reasoning_effort",
        )
    think = data.get("think")
    if think is None or isinstance(think, bool):
        return think
    raise bad_request("think must be true or false.", "think")
