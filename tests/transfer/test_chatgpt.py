"""ChatGPT's conversations.json (samples/chatgpt-README.md): the branch that
ends at `current_node`, followed up to the root through edits and a tool
call; what is not text left out and counted."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime

import pytest

from chat.models import Conversation
from chat.transfer.imports import import_file
from tests.transfer.conftest import SAMPLES

pytestmark = pytest.mark.django_db

SAMPLE = SAMPLES / "chatgpt-conversations.json"


def contents(conversation: Conversation) -> list[tuple[str, str]]:
    return list(conversation.messages.order_by("pk").values_list("role", "content"))


def test_the_current_branch_is_followed_back_through_edits_and_tool_calls(alice):
    summary = import_file(alice, io.BytesIO(SAMPLE.read_bytes()))
    assert summary.source == "ChatGPT"
    assert (summary.conversations, summary.messages) == (2, 6)
    monads = Conversation.objects.get(owner=alice, title="Monads")
    assert monads.import_key == "chatgpt:6650a1b2-0000-4000-8000-000000000001"
    assert monads.imported_from == "chatgpt"
    assert contents(monads) == [
        ("user", "What is a monad, in one sentence?"),
        ("assistant", "A monoid in the category of endofunctors."),
        ("user", "Compute 2**10 with Python, please."),
        ("assistant", "2**10 is 1024."),
    ]
    mapping = json.loads(SAMPLE.read_text())[0]["mapping"]
    rows = list(monads.messages.order_by("pk"))
    assert [r.created_at for r in rows] == [
        datetime.fromtimestamp(mapping[n]["message"]["create_time"], tz=UTC)
        for n in ("u1b", "a1b", "u2b", "a2b")
    ]
    assert [r.parent_id for r in rows] == [None, *(r.pk for r in rows[:-1])]
    assert {r.model_tag for r in rows if r.role == "assistant"} == {"gpt-4o"}
    assert summary.warnings == {
        "Calls to tools skipped": 1,
        "Tool messages skipped": 1,
        "Images and files left out": 1,
        "Conversations whose model is not here, set to the default (gpt-4o)": 1,
        "Conversations whose model is not here, set to the default (o3)": 1,
    }


def test_reasoning_becomes_the_answers_thinking_and_images_are_left_out(alice):
    import_file(alice, io.BytesIO(SAMPLE.read_bytes()))
    dish = Conversation.objects.get(owner=alice, title="What dish is this?")
    assert contents(dish) == [
        ("user", "What dish is in this photo? 这是什么菜？"),
        ("assistant", "It is mapo tofu (麻婆豆腐)."),
    ]
    answer = dish.messages.get(role="assistant")
    assert answer.thinking == "Looking at the photo\n\nIt looks like mapo tofu."
    assert dish.archived_at is not None


def test_the_export_zip_is_read_for_its_conversations_json(alice):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("chat.html", "<html></html>")
        z.writestr("user.json", "{}")
        z.write(SAMPLE, "conversations.json")
    summary = import_file(alice, io.BytesIO(archive.getvalue()))
    assert summary.conversations == 2


def test_a_conversation_without_current_node_takes_its_newest_branch(alice):
    data = json.loads(SAMPLE.read_text())
    del data[0]["current_node"]
    summary = import_file(alice, io.BytesIO(json.dumps(data).encode()))
    monads = Conversation.objects.get(owner=alice, title="Monads")
    assert contents(monads)[-1] == ("assistant", "2**10 is 1024.")
    assert (
        summary.warnings[
            "Conversations without a current message: their newest branch taken"
        ]
        == 1
    )


def test_a_loop_in_the_tree_ends_the_walk(alice):
    data = json.loads(SAMPLE.read_text())
    data[0]["mapping"]["u1b"]["parent"] = "a2b"  # a cycle through the branch
    import_file(alice, io.BytesIO(json.dumps(data).encode()))
    monads = Conversation.objects.get(owner=alice, title="Monads")
    assert contents(monads)[0] == ("user", "What is a monad, in one sentence?")
