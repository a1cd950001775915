"""The history builder: which earlier messages go with a question.

Earlier thinking is never sent, nor failed or empty answers; the system prompt
always is. "Fit the model's context" estimates tokens from characters (about four
a token, calibrated per model profile from the server's own prompt token counts)
and drops whole turns, oldest first, leaving room for the answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chat.models.attachment_prompts import attachment_chars, prompt_message
from chat.models.attachments import Attachment
from chat.models.messages import Message, Sendable
from chat.models.profiles import HistoryPolicy

# The chat template's few tokens around each message (role markers), counted as
# characters so that one ratio turns characters into tokens.
MESSAGE_OVERHEAD_CHARS = 16


@dataclass(frozen=True)
class Prompt:
    """The messages to send, and the account of them an answer records."""

    messages: list[dict[str, Any]]  # role, content; images (base64) if any
    sent: int  # conversation messages sent (the question included)
    total: int  # conversation messages that could have been sent
    chars: int  # what `tokens_estimate` was estimated from
    tokens_estimate: int
    context_tokens: int

    def figures(self) -> dict[str, int]:
        """The answer's record of what was sent (its `Message` fields)."""
        return {
            "history_sent": self.sent,
            "history_total": self.total,
            "prompt_tokens_estimate": self.tokens_estimate,
            "context_tokens": self.context_tokens,
            "prompt_chars": self.chars,
        }


def message_chars(content: str) -> int:
    return len(content) + MESSAGE_OVERHEAD_CHARS


def estimate_tokens(chars: int, chars_per_token: float) -> int:
    return math.ceil(chars / chars_per_token)


def tools_chars(tools: Sequence[Mapping[str, Any]]) -> int:
    """Characters of the tools offered with a request (their JSON: the chat
    template writes the specs into the prompt much as they are)."""
    return len(json.dumps(list(tools), ensure_ascii=False)) if tools else 0


def step_chars(messages: Iterable[Mapping[str, Any]]) -> int:
    """Characters of the messages a turn with tools adds to its next model
    call: each reply that asked for tools (its text and calls) and each tool's
    result, counted as `build_prompt` counts a message."""
    total = 0
    for message in messages:
        total += message_chars(str(message.get("content") or ""))
        calls = message.get("tool_calls")
        if calls:
            total += len(json.dumps(calls, ensure_ascii=False))
    return total


def count_sent(answer: Message, chars: int, chars_per_token: float) -> None:
    """Add `chars` to what `answer` says was sent (`prompt_chars`, and its
    token estimate): a turn with tools' specs, then its steps, so the figures
    are its last model call's, as the server's `prompt_tokens` are."""
    answer.prompt_chars = (answer.prompt_chars or 0) + chars
    answer.prompt_tokens_estimate = estimate_tokens(
        answer.prompt_chars, chars_per_token
    )


def sendable(messages: Iterable[Sendable]) -> list[Sendable]:
    """Finished questions and answers worth sending: not streaming, not failed,
    not empty."""
    return [m for m in messages if _worth_sending(m)]


def _worth_sending(message: Sendable) -> bool:
    if message.status == Message.Status.STREAMING:
        return False
    if message.role == Message.Role.USER:
        return True
    return (
        message.role == Message.Role.ASSISTANT
        and bool(message.content)
        and message.status != Message.Status.ERROR
    )


def turns(messages: Sequence[Sendable]) -> list[list[Sendable]]:
    """Whole turns: a question with the answers that follow it."""
    grouped: list[list[Sendable]] = []
    for message in messages:
        if message.role == Message.Role.USER or not grouped:
            grouped.append([message])
        else:
            grouped[-1].append(message)
    return grouped


def build_prompt(
    messages: Iterable[Sendable],
    *,
    system_prompt: str,
    policy: str,
    last_n: int,
    context_tokens: int,
    answer_tokens: int,
    chars_per_token: float,
    images: bool = True,
    files: Mapping[int, Sequence[Attachment]] | None = None,
) -> Prompt:
    """The prompt for the conversation's newest question (its last message);
    `files`: the messages' attachments by message id; without `images` (a
    model without vision) their pictures are left out."""
    files = files or {}
    candidates = sendable(messages)
    question: list[Sendable] = []
    earlier = candidates
    if candidates and candidates[-1].role == Message.Role.USER:
        question, earlier = candidates[-1:], candidates[:-1]

    def size(message: Sendable) -> int:
        # A message's text, its documents' blocks, its images' token estimates.
        attached = files.get(message.pk, ())
        if not attached:
            return message_chars(message.content)
        return message_chars(message.content) + attachment_chars(
            attached, chars_per_token, images=images
        )

    fixed = sum(size(m) for m in question)
    if system_prompt:
        fixed += message_chars(system_prompt)

    if policy == HistoryPolicy.NONE:
        chosen: list[Sendable] = []
    elif policy == HistoryPolicy.LAST_N:
        chosen = earlier[-last_n:] if last_n > 0 else []
    elif policy == HistoryPolicy.FIT:
        room = (context_tokens - answer_tokens) * chars_per_token - fixed
        chosen = _newest_turns_within(earlier, room, size)
    else:
        chosen = earlier

    sent = chosen + question
    prompt = [{"role": "system", "content": system_prompt}] if system_prompt else []
    prompt += [prompt_message(m, files.get(m.pk, ()), images=images) for m in sent]
    chars = fixed + sum(size(m) for m in chosen)
    return Prompt(
        messages=prompt,
        sent=len(sent),
        total=len(candidates),
        chars=chars,
        tokens_estimate=estimate_tokens(chars, chars_per_token),
        context_tokens=context_tokens,
    )


def _newest_turns_within(
    messages: Sequence[Sendable], room: float, size_of: Callable[[Sendable], int]
) -> list[Sendable]:
    """The newest whole turns whose characters fit in `room`; an older turn is
    never sent without the newer ones."""
    kept: list[Sendable] = []
    for turn in reversed(turns(messages)):
        size = sum(size_of(m) for m in turn)
        if size > room:
            break
        room -= size
        kept[:0] = turn
    return kept
