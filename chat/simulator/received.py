"""What a chat request carried besides text, for tests to assert what reached
the model server: the pictures (Ollama's `images`, base64; OpenAI's
`image_url` content parts, data URLs) and the documents put into the text as
the site delimits them (chat/models/attachment_prompts.py, BLOCK_START and
BLOCK_END). Each is counted with its size and a SHA-256 of its bytes (a
picture) or its text (a document)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from typing import Any

BLOCK = re.compile(
    r"^----- BEGIN ATTACHED FILE: (?P<name>.+?) -----\n(?P<text>.*?)\n"
    r"----- END ATTACHED FILE: (?P=name) -----$",
    re.MULTILINE | re.DOTALL,
)


def received(messages: Sequence[Any]) -> dict[str, Any]:
    """`{"images": [{"bytes", "sha256"}...], "documents": [{"name", "chars",
    "sha256"}...]}` over all of a request's messages, in order."""
    images: list[dict[str, Any]] = []
    documents: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        for picture in message.get("images") or []:
            images.append(_picture(str(picture)))
        content = message.get("content")
        texts: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text":
                    texts.append(str(part.get("text", "")))
                elif part.get("type") == "image_url":
                    url = (part.get("image_url") or {}).get("url", "")
                    images.append(_picture(str(url).partition("base64,")[2]))
        for text in texts:
            for block in BLOCK.finditer(text):
                body = block["text"]
                documents.append(
                    {
                        "name": block["name"],
                        "chars": len(body),
                        "sha256": hashlib.sha256(body.encode()).hexdigest(),
                    }
                )
    return {"images": images, "documents": documents}


def _picture(encoded: str) -> dict[str, Any]:
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return {"bytes": 0, "sha256": "", "invalid": True}
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def text_of(content: Any) -> str:
    """A message's text: the string, or the text parts of content parts."""
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return str(content or "")
