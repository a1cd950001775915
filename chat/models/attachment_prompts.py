"""What a question's files put into the prompt: a document as a block of text
between two lines naming it (cut to fit the context when the asker agrees), a
picture as base64 (Ollama's `images`; the OpenAI client makes content parts
of them), and what each costs in tokens and characters. The rows themselves
are `chat.models.attachments`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chat.models.messages import Sendable

if TYPE_CHECKING:
    from chat.models.attachments import Attachment

# A picture's cost to a vision model, estimated as one token per 28x28 patch
# (Qwen2.5-VL's patch size; LLaVA and Gemma 3 use a fixed few hundred).
IMAGE_PATCH = 28
# How a document's text is put into the question: a block whose first and last
# lines name the file (the simulator counts these, chat/simulator/received.py).
BLOCK_START = "----- BEGIN ATTACHED FILE: {name} -----"
BLOCK_END = "----- END ATTACHED FILE: {name} -----"
SEPARATOR = "\n\n"
TRUNCATED = "\n[... the rest of the file was left out to fit the model's context]"


def document_block(name: str, text: str, limit: int | None = None) -> str:
    """A document as it goes into the question (its first `limit` characters,
    with a line saying the rest was left out)."""
    if limit is not None and limit < len(text):
        text = text[:limit] + TRUNCATED
    start, end = BLOCK_START.format(name=name), BLOCK_END.format(name=name)
    return f"{start}\n{text}\n{end}"


def image_tokens(width: int, height: int) -> int:
    return max(1, math.ceil(width / IMAGE_PATCH) * math.ceil(height / IMAGE_PATCH))


def cut_to_fit(
    documents: list[Attachment], room_tokens: int, chars_per_token: float
) -> None:
    """Share the room left between the documents, in order: each keeps what
    fits of its text."""
    room_chars = max(0, int(room_tokens * chars_per_token))
    for attachment in documents:
        # Its block's lines, and the blank line after it (`prompt_message`).
        overhead = len(attachment.block(0)) + len(SEPARATOR)
        keep = max(0, min(len(attachment.text), room_chars - overhead))
        if keep < len(attachment.text):
            attachment.sent_chars = keep
        room_chars -= keep + overhead
        attachment.tokens = math.ceil(len(attachment.block()) / chars_per_token)


def prompt_message(
    message: Sendable, attachments: Sequence[Attachment] = (), *, images: bool = True
) -> dict[str, Any]:
    """A message as it is sent to the model with its `attachments`: their
    documents' blocks before its text, their images (base64, Ollama's
    `images`; the OpenAI client turns them into content parts)."""
    if not attachments:
        return {"role": message.role, "content": message.content}
    content = message.content
    blocks = [a.block() for a in attachments if not a.is_image]
    if blocks:
        content = SEPARATOR.join([*blocks, content] if content else blocks)
    sent: dict[str, Any] = {"role": message.role, "content": content}
    pictures = [a.base64() for a in attachments if a.is_image] if images else []
    if pictures:
        sent["images"] = pictures
    return sent


def attachment_chars(
    attachments: Sequence[Attachment], chars_per_token: float, *, images: bool = True
) -> int:
    """What a message's `attachments` add to the prompt, in characters
    (images counted by their token estimate)."""
    total = 0
    for attachment in attachments:
        if attachment.is_image:
            total += math.ceil(attachment.tokens * chars_per_token) if images else 0
        else:
            total += len(attachment.block()) + len(SEPARATOR)
    return total
