"""An answer asked over the API (`chat.api`), in a conversation of its own."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _

from chat.models.conversations import Conversation
from chat.models.history import estimate_tokens, message_chars
from chat.models.messages import Message
from chat.models.profiles import ModelProfile, ThinkingMode
from chat.models.turn_rows.rows import (
    ClientTools,
    Pending,
    Turn,
)

if TYPE_CHECKING:
    from chat.models.api_keys import ApiKey


def api_profile(api_key: ApiKey, model: str) -> ModelProfile:
    """The enabled model profile named `model` that the key may ask (Ollama's
    "name" means "name:latest"); `ModelProfile.DoesNotExist` for none of that
    name, ModelForbidden for one the key or its owner may not use."""
    names = [model] if ":" in model else [model, f"{model}:latest"]
    for name in names:
        profile = api_key.usable_profiles().filter(tag=name).first()
        if profile is not None:
            return profile
    if ModelProfile.objects.filter(tag__in=names, enabled=True).exists():
        raise Conversation.ModelForbidden(
            f"The model {model} is not available to you with this key."
        )
    raise ModelProfile.DoesNotExist(f"The model {model} does not exist.")


def prepare_api_turn(
    api_key: ApiKey,
    profile: ModelProfile,
    messages: list[dict[str, Any]],
    *,
    think: bool | None,
    store: bool,
    options: dict[str, Any],
    tools: ClientTools | None = None,
) -> Pending:
    """An answer asked over the API (`chat.api`), in a conversation of its
    own: listed in the owner's list only when `store`, else kept for its
    figures (throughput, quotas) with the request's last question. The
    history sent is the request's own `messages`, as given. Its rows are
    written (`Pending.written`).

    `messages` are in the OpenAI shape the model-server clients take (an
    assistant's `tool_calls`, `tool` results); `tools`, the client's own
    (`ClientTools`). Rows are kept of the questions and of the answers with
    text: the calls and results of a request's history reach the model, and
    count in its prompt, but have no row of their own (a message has no role
    for them, nor a field for calls yet).

    Refused (nothing stored) with ModelForbidden or, before the model is
    asked, `quotas.QuotaReached`: the same checks as `begin_turn`."""
    from chat.models import quotas  # see _prepare

    owner = api_key.user
    if not (profile.enabled and profile.allowed_for(owner) and api_key.allows(profile)):
        raise Conversation.ModelForbidden(
            _("The model %(model)s is not available to this key.")
            % {"model": profile.tag}
        )
    quotas.lock(owner)
    left = quotas.check(owner)
    system = [m["content"] for m in messages if m["role"] == "system"]
    turns = [m for m in messages if _has_row(m)]
    questions = [m for m in turns if m["role"] == "user"]
    first = questions[0]["content"] if questions else ""
    conversation = Conversation.objects.create(
        owner=owner,
        model_profile=profile,
        thinking=ThinkingMode.DEFAULT
        if think is None
        else (ThinkingMode.ON if think else ThinkingMode.OFF),
        system_prompt="\n\n".join(system),
        listed=store,
        title=Conversation.title_from(first),
    )
    kept = turns if store else questions[-1:]
    rows = Message.objects.append_branch(
        [
            Message(
                conversation=conversation,
                role=m["role"],
                content=m["content"],
                source=Message.Source.API,
                api_key=api_key,
                written_by_asker=m["role"] == Message.Role.ASSISTANT,
            )
            for m in kept
        ]
    )
    chars = sum(message_chars(_prompt_text(m)) for m in messages)
    if tools is not None:
        chars += len(json.dumps(tools.tools, ensure_ascii=False))
    answer = Message(
        conversation=conversation,
        parent=rows[-1] if rows else None,
        role=Message.Role.ASSISTANT,
        status=Message.Status.STREAMING,
        model_tag=profile.tag,
        thinking_enabled=think,
        source=Message.Source.API,
        api_key=api_key,
        history_sent=len(messages),
        history_total=len(messages),
        prompt_chars=chars,
        prompt_tokens_estimate=estimate_tokens(
            chars, profile.estimated_chars_per_token
        ),
        context_tokens=profile.context_length,
    )
    options = dict(options)
    quotas.reserve(answer, profile, options, left)
    answer.save()
    question = rows[-1] if rows else answer
    turn = Turn(question, answer, profile, messages, False, options, tools)
    return Pending(conversation, turn, written=True)


def _has_row(message: dict[str, Any]) -> bool:
    """A question, or an answer with text (not one that only called tools)."""
    role = message["role"]
    if role == "assistant" and message.get("tool_calls"):
        return bool(message["content"].strip())
    return role in (Message.Role.USER, Message.Role.ASSISTANT)


def _prompt_text(message: dict[str, Any]) -> str:
    """What of a message the model reads: its text, and its calls' names and
    arguments."""
    calls = message.get("tool_calls") or ()
    texts = [message["content"]]
    texts.extend(c["function"]["name"] + c["function"]["arguments"] for c in calls)
    return "".join(texts)
