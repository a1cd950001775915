"""Fixtures of the transfer tests: a conversation with everything an export
must keep (versions on two branches, thinking, figures, settings, a folder, a
pin, a settings notice), a way to read a ZIP response, and a large export."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from chat.models import (
    Conversation,
    Folder,
    Message,
    ModelProfile,
    SettingsChange,
    turn_rows,
)
from chat.transfer.export import DOCUMENT_NAME
from tests.models import conftest as model_fixtures

SAMPLES = Path(__file__).parent / "samples"
thinker = model_fixtures.thinker  # the model tests' thinking model


def finish(turn: Any, content: str, thinking: str = "") -> Message:
    """The turn's answer, written, with figures."""
    turn = getattr(turn, "turn", turn)
    answer = turn.answer
    answer.content, answer.thinking, answer.status = content, thinking, "done"
    answer.output_tokens, answer.eval_ms, answer.total_ms = 42, 840.5, 1200.25
    answer.done_reason = "stop"
    answer.save()
    return answer


@pytest.fixture
def branched(alice: Any, thinker: ModelProfile) -> Conversation:
    """Three turns; turn 2 edited (its first version shown again), turn 3's
    answer regenerated; filed, pinned, with its own settings."""
    folder = Folder.objects.create(owner=alice, name="Research")
    conversation = Conversation.objects.create(
        owner=alice,
        model_profile=thinker,
        thinking="on",
        system_prompt="Answer briefly.",
        history_policy="last_n",
        history_last_n=6,
        temperature=0.4,
    )
    finish(
        turn_rows.begin_turn(conversation, "q1", client_id="c1"), "a1", thinking="hmm 1"
    )
    q2 = turn_rows.begin_turn(conversation, "q2", client_id="c2")
    finish(q2, "a2")
    finish(turn_rows.begin_edit(conversation, q2.question.pk, "q2 edited"), "a2 edited")
    turn_rows.show_version(conversation, q2.question.pk)  # back to the first version
    finish(turn_rows.begin_turn(conversation, "q3 — 中文"), "a3", thinking="思考")
    finish(turn_rows.begin_regenerate(conversation), "a3 again")
    SettingsChange.objects.create(conversation=conversation, text="Settings changed: x")
    Conversation.objects.filter(pk=conversation.pk).update(
        folder=folder, pinned_at=timezone.now() - timedelta(hours=1)
    )
    conversation.refresh_from_db()
    return conversation


def zip_document(content: bytes) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON document and the Markdown files of an export ZIP."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        document = json.loads(archive.read(DOCUMENT_NAME))
        markdown = {
            name: archive.read(name).decode()
            for name in archive.namelist()
            if name.endswith(".md")
        }
    return document, markdown


def open_webui_chats(chats: int) -> bytes:
    """An Open WebUI export of `chats` chats of ten messages."""
    items = []
    for n in range(chats):
        tree: dict[str, dict[str, object]] = {}
        parent = None
        for m in range(10):
            node = f"{n}-{m}"
            tree[node] = {
                "id": node,
                "parentId": parent,
                "role": "user" if m % 2 == 0 else "assistant",
                "content": f"message {m} of chat {n} " * 20,
                "timestamp": 1_700_000_000 + m,
            }
            parent = node
        history = {"currentId": parent, "messages": tree}
        items.append(
            {"id": f"c{n}", "title": f"Chat {n}", "chat": {"history": history}}
        )
    return json.dumps(items).encode()
