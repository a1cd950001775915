"""chatsite's export imported again gives the same document (modulo the
export's own time and owner): every version, branch, figure and time kept."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth import get_user_model

from chat.models import Conversation, Message
from chat.transfer.export import conversation_document, for_export, zip_stream
from chat.transfer.imports import import_file
from tests.transfer.conftest import zip_document

pytestmark = pytest.mark.django_db


def _comparable(document):
    return {k: v for k, v in document.items() if k not in ("exported_at", "owner")}


def test_an_export_imported_into_an_empty_account_exports_the_same(alice, branched):
    Conversation.objects.create(owner=alice, title="Empty one")
    first, _ = zip_document(b"".join(zip_stream(alice)))
    carol = get_user_model().objects.create_user("carol")

    summary = import_file(carol, io.BytesIO(json.dumps(first).encode()))

    again, _ = zip_document(b"".join(zip_stream(carol)))
    assert _comparable(again) == _comparable(first)
    assert (summary.conversations, summary.messages) == (2, 10)
    assert summary.warnings == {}


def test_the_document_holds_versions_thinking_figures_and_settings(branched):
    (doc,) = conversation_document(for_export(branched.owner).get())["conversations"]
    assert doc["settings"] == {
        "model": "qwen3:8b",
        "thinking": "on",
        "system_prompt": "Answer briefly.",
        "history_policy": "last_n",
        "history_last_n": 6,
        "temperature": 0.4,
    }
    assert doc["folder"] == "Research" and doc["pinned_at"] is not None
    shown = [(m["role"], m["content"]) for m in doc["messages"] if not m["replaced"]]
    assert shown == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2"),
        ("user", "q3 — 中文"),
        ("assistant", "a3 again"),
    ]
    hidden = [m["content"] for m in doc["messages"] if m["replaced"]]
    assert hidden == ["q2 edited", "a2 edited", "q3 — 中文", "a3"]
    by_number = {m["number"]: m for m in doc["messages"]}
    q2_versions = [m for m in doc["messages"] if m["content"].startswith("q2")]
    assert {m["parent"] for m in q2_versions} == {2}  # siblings under a1
    assert by_number[2]["thinking"] == "hmm 1"
    assert by_number[2]["figures"]["output_tokens"] == 42
    assert doc["notices"][0]["text"] == "Settings changed: x"


def test_imported_times_are_the_files_not_the_import(alice, branched):
    Message.objects.filter(conversation=branched).update(
        created_at="2024-01-02T03:04:05Z"
    )
    document = conversation_document(for_export(alice).get())
    carol = get_user_model().objects.create_user("carol")
    import_file(carol, io.BytesIO(json.dumps(document).encode()))
    imported = Conversation.objects.get(owner=carol)
    years = set(
        Message.objects.filter(conversation=imported).values_list(
            "created_at__year", flat=True
        )
    )
    assert years == {2024}
    assert imported.created_at == branched.created_at
    assert imported.updated_at == Conversation.objects.get(pk=branched.pk).updated_at
