"""The request options a model profile may set, checked, and Qwen3's defaults;
how an OpenAI-compatible server is told to think, and how its reasoning reads."""

from __future__ import annotations

import math
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _


class ThinkingSwitch(models.TextChoices):
    """How an OpenAI-compatible server is told to think or not."""

    TEMPLATE = "template", "chat_template_kwargs.enable_thinking"  # i18n: not text
    SOFT = "soft", _("/think or /no_think after the question (Qwen3)")
    BOTH = "both", _("Both")
    NONE = "none", _("Nothing (the server's own default)")


class ThinkTags(models.TextChoices):
    """Whether inline <think>...</think> in an OpenAI-compatible answer is reasoning."""

    PARSE = "parse", _("Split <think>…</think> out of the answer")
    CLOSE_ONLY = "close_only", _("Split; the answer may only close the tag")
    OFF = "off", _("Leave the answer as it is")


# Qwen's recommended sampling per mode (Qwen3 model card, "Best practices").
QWEN3_SAMPLING: dict[bool, dict[str, Any]] = {
    True: {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0},
    False: {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0},
}
SAMPLING_OPTIONS = ("temperature", "top_p", "top_k", "min_p")

# Ollama's option names (the OpenAI client renames the ones it knows) and the
# JSON type of each value.
OPTION_TYPES: dict[str, str] = {
    "temperature": "number",
    "top_p": "number",
    "top_k": "integer",
    "min_p": "number",
    "typical_p": "number",
    "num_predict": "integer",
    "num_keep": "integer",
    "seed": "integer",
    "stop": "strings",
    "repeat_penalty": "number",
    "repeat_last_n": "integer",
    "presence_penalty": "number",
    "frequency_penalty": "number",
    "mirostat": "integer",
    "mirostat_tau": "number",
    "mirostat_eta": "number",
    # Ollama's load-time options: a change reloads the model.
    "num_batch": "integer",
    "num_gpu": "integer",
    "main_gpu": "integer",
    "num_thread": "integer",
    "use_mmap": "boolean",
}

# Ollama's keep_alive: seconds (negative: for ever), or a Go duration.
_KEEP_ALIVE = re.compile(r"-?\d+|-?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+")


def validate_options(options: object) -> None:
    """Raise `ValidationError` naming each option that is unknown or mistyped."""
    if not isinstance(options, dict):
        raise ValidationError(
            _('Options are a JSON object, e.g. {"temperature": 0.6}.')
        )
    problems: list[str] = []
    for name, value in options.items():
        kind = OPTION_TYPES.get(name)
        if name == "num_ctx":
            problems.append(
                str(
                    _(
                        'num_ctx comes from the profile\'s "context length"; '
                        "set it there."
                    )
                )
            )
        elif kind is None:
            known = ", ".join(sorted(OPTION_TYPES))
            problems.append(
                _('Unknown option "%(name)s" (known: %(known)s).')
                % {"name": name, "known": known}
            )
        elif not _is(kind, value):
            problems.append(
                _('Option "%(name)s" must be %(kind)s.')
                % {"name": name, "kind": _article(kind)}
            )
    if problems:
        raise ValidationError(problems)


def validate_keep_alive(value: str) -> None:
    if value.strip() and not _KEEP_ALIVE.fullmatch(value.strip()):
        raise ValidationError(
            _(
                'Keep alive is seconds ("600", "-1" for always) or a duration '
                '("30m", "1h30m").'
            )
        )


def _is(kind: str, value: object) -> bool:
    if isinstance(value, bool) or kind == "boolean":
        return isinstance(value, bool) and kind == "boolean"
    # Sent as JSON with every request (`chat.upstream.retry.json_body`): a
    # NaN or an infinity is no JSON number, nor an integer past 64 bits a
    # number a model server reads.
    if isinstance(value, int) and abs(value) > 2**63 - 1:
        return False
    if kind == "integer":
        return isinstance(value, int)
    if kind == "number":
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value)
        )
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _article(kind: str) -> str:
    names = {
        "integer": _("a whole number"),
        "number": _("a number"),
        "boolean": _("true or false"),
    }
    return str(names.get(kind, _("a list of strings")))
