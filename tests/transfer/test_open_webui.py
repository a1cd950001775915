"""Open WebUI's exports, made by a real Open WebUI 0.12.4 (samples/README.md):
the branch on screen of each chat, its thinking, times, pins and archive, and
its model mapped to a profile of the same tag."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from chat.models import Conversation
from chat.transfer.imports import import_file
from tests.transfer.conftest import SAMPLES

pytestmark = pytest.mark.django_db


def sample(name: str):
    return json.loads((SAMPLES / name).read_text())


def load(owner, name: str, data: bytes | None = None):
    raw = data if data is not None else (SAMPLES / name).read_bytes()
    return import_file(owner, io.BytesIO(raw))


def contents(conversation: Conversation) -> list[tuple[str, str]]:
    return list(conversation.messages.order_by("pk").values_list("role", "content"))


def imported(owner, chat_id: str) -> Conversation:
    return Conversation.objects.get(owner=owner, import_key=f"open-webui:{chat_id}")


def test_export_all_chats_imports_every_chat_with_its_text(alice):
    chats = sample("open-webui-all-chats.json")
    summary = load(alice, "open-webui-all-chats.json")
    assert summary.source == "Open WebUI"
    assert summary.conversations == len(chats) == 7
    assert summary.messages == 20
    for chat in chats:
        conversation = imported(alice, chat["id"])
        assert conversation.title == chat["title"]
        assert conversation.imported_from == "open-webui"
        assert conversation.created_at == datetime.fromtimestamp(
            chat["created_at"], tz=UTC
        )
    chinese = imported(alice, chats[5]["id"])
    history = chats[5]["chat"]["history"]["messages"]
    assert contents(chinese)[0] == ("user", "法国的首都是哪里？")
    answers = [m["content"] for m in history.values() if m["role"] == "assistant"]
    assert [c for r, c in contents(chinese) if r == "assistant"] == answers
    assert "😊" in "".join(answers)  # the sample's emoji, kept


def test_the_branch_on_screen_is_imported_with_its_times(alice):
    chat = sample("open-webui-chat-branches.json")
    tree = chat["chat"]["history"]["messages"]
    load(alice, "open-webui-chat-branches.json")
    # The README: q1 → a1b (a regeneration) → q2b (an edit) → a2b.
    q1 = next(m for m in tree.values() if m["parentId"] is None)
    a1b = tree[q1["childrenIds"][1]]
    q2b = tree[a1b["childrenIds"][1]]
    a2b = tree[q2b["childrenIds"][0]]
    assert a2b["id"] == chat["chat"]["history"]["currentId"]
    path = [q1, a1b, q2b, a2b]
    conversation = imported(alice, chat["id"])
    assert contents(conversation) == [(m["role"], m["content"]) for m in path]
    rows = list(conversation.messages.order_by("pk"))
    assert [int(r.created_at.timestamp()) for r in rows] == [
        m["timestamp"] for m in path
    ]
    assert [r.parent_id for r in rows] == [None, *(r.pk for r in rows[:-1])]
    assert rows[1].model_tag == "llama-demo:3b"
    assert rows[3].output_tokens == a2b["usage"]["eval_count"]


def test_thinking_in_the_reasoning_output_is_kept(alice):
    chat = sample("open-webui-chat-thinking.json")
    load(alice, "open-webui-chat-thinking.json")
    answer = imported(alice, chat["id"]).messages.get(role="assistant")
    reasoning = next(
        item
        for m in chat["chat"]["history"]["messages"].values()
        for item in m.get("output", [])
        if item["type"] == "reasoning"
    )
    assert answer.thinking == reasoning["content"][0]["text"]
    assert answer.thinking and answer.thinking not in answer.content


def test_pins_archive_and_renames_are_kept(alice):
    load(alice, "open-webui-all-chats.json")
    by_title = {c.title: c for c in Conversation.objects.filter(owner=alice)}
    assert by_title["Remind me what HTTP 418 means."].pinned_at is not None
    assert by_title["Write a haiku about autumn."].archived_at is not None
    assert by_title["Cat names (renamed)"].pinned_at is None
    assert sum(c.archived_at is not None for c in by_title.values()) == 1


def test_models_map_to_profiles_of_the_same_tag(alice, demo_profile):
    summary = load(alice, "open-webui-all-chats.json")
    thinking = Conversation.objects.get(owner=alice, title__startswith="Why is the sky")
    assert thinking.model_profile == demo_profile  # qwen3-demo:8b
    others = Conversation.objects.filter(owner=alice).exclude(pk=thinking.pk)
    assert set(others.values_list("model_profile", flat=True)) == {None}
    assert summary.warnings == {
        "Conversations whose model is not here, set to the default (llama-demo:3b)": 6
    }


@pytest.mark.parametrize(
    "name",
    [
        "open-webui-all-chats.ndjson",
        "open-webui-all-chats-admin-db.json",
    ],
)
def test_the_other_exports_of_all_chats_import_the_same(alice, bob, name):
    load(alice, "open-webui-all-chats.json")
    load(bob, name)

    def keyed(owner):
        return {
            c.import_key: contents(c) for c in Conversation.objects.filter(owner=owner)
        }

    assert keyed(bob) == keyed(alice)


def test_one_chat_alone_or_as_the_menu_downloads_it(alice, bob):
    load(alice, "open-webui-chat-branches.json")
    load(bob, "open-webui-chat-branches.ui-download.json")
    [mine], [bobs] = (
        Conversation.objects.filter(owner=alice),
        Conversation.objects.filter(owner=bob),
    )
    assert contents(mine) == contents(bobs) and mine.import_key == bobs.import_key


def test_a_second_import_of_the_same_file_adds_nothing(alice):
    load(alice, "open-webui-all-chats.json")
    again = load(alice, "open-webui-all-chats.ndjson")
    assert (again.conversations, again.messages, again.already_imported) == (0, 0, 7)
    assert Conversation.objects.filter(owner=alice).count() == 7
    # One chat of it, exported on its own, is the same chat.
    single = load(alice, "open-webui-chat-english.json")
    assert single.already_imported == 1


def test_thinking_written_into_the_content_by_older_versions_is_split_out(alice):
    """Open WebUI before the `output` items put the reasoning into `content`
    (the 0.12.4 frontend still strips `<details type="reasoning">` blocks
    before reading code: see samples/README.md). Made from the thinking
    sample by moving its reasoning there."""
    chat = sample("open-webui-chat-thinking.json")
    for message in chat["chat"]["history"]["messages"].values():
        if message["role"] == "assistant":
            message.pop("output")
            message["content"] = (
                '<details type="reasoning" done="true" duration="2">\n'
                "<summary>Thought for 2 seconds</summary>\n"
                "> First line of thought.\n> Second line.\n</details>\n"
                + message["content"]
            )
    chat["id"] = "older"
    other = json.loads(json.dumps(chat))
    other["id"] = "tagged"
    for message in other["chat"]["history"]["messages"].values():
        if message["role"] == "assistant":
            message["content"] = "<think>Inline thought.</think>\nThe answer."
    load(alice, "", json.dumps([chat, other]).encode())
    older = imported(alice, "older").messages.get(role="assistant")
    assert older.thinking == "First line of thought.\nSecond line."
    assert not older.content.startswith("<details")
    tagged = imported(alice, "tagged").messages.get(role="assistant")
    assert (tagged.thinking, tagged.content) == ("Inline thought.", "The answer.")
