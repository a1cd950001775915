"""What the simulator says a request carried: pictures over both protocols and
documents in the text (chat.simulator.received)."""

from __future__ import annotations

import base64
import hashlib

from chat.simulator.received import received, text_of

PICTURE = b"\x89PNG\r\n\x1a\n fake picture bytes"
ENCODED = base64.b64encode(PICTURE).decode()
DIGEST = hashlib.sha256(PICTURE).hexdigest()
BLOCK = (
    "----- BEGIN ATTACHED FILE: notes.md -----\n# Notes\nline two\n"
    "----- END ATTACHED FILE: notes.md -----\n\nSummarise"
)


def test_ollama_images_and_a_document_block_are_counted():
    report = received([{"role": "user", "content": BLOCK, "images": [ENCODED]}])
    assert report == {
        "images": [{"bytes": len(PICTURE), "sha256": DIGEST}],
        "documents": [
            {
                "name": "notes.md",
                "chars": len("# Notes\nline two"),
                "sha256": hashlib.sha256(b"# Notes\nline two").hexdigest(),
            }
        ],
    }


def test_openai_content_parts_are_counted_the_same():
    parts = [
        {"type": "text", "text": BLOCK},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{ENCODED}"}},
    ]
    ollama = received([{"role": "user", "content": BLOCK, "images": [ENCODED]}])
    assert received([{"role": "user", "content": parts}]) == ollama
    assert text_of(parts) == BLOCK


def test_plain_text_and_bad_base64_are_told_apart():
    assert received([{"role": "user", "content": "hi"}]) == {
        "images": [],
        "documents": [],
    }
    bad = received([{"role": "user", "content": "", "images": ["not base64!"]}])
    assert bad["images"] == [{"bytes": 0, "sha256": "", "invalid": True}]
