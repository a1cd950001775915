"""Bad input refused with a clear message and nothing stored; what can be
mended (NUL, lone surrogates, unknown roles, dates in the future) mended and
counted; an imported conversation continues like any other."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone, translation

from chat.models import Conversation, Folder, Message, turn_rows
from chat.transfer import imports
from chat.transfer.export import conversation_document, for_export
from chat.transfer.imports import import_file
from chat.transfer.incoming import ImportRefused
from tests.transfer.conftest import SAMPLES

pytestmark = pytest.mark.django_db


def run(owner, raw: bytes, **kwargs):
    return import_file(owner, io.BytesIO(raw), **kwargs)


def refused(owner, raw: bytes, **kwargs) -> str:
    with pytest.raises(ImportRefused) as caught:
        run(owner, raw, **kwargs)
    assert not Conversation.objects.filter(owner=owner).exists()
    return str(caught.value)


def owui_chat(chat_id: str, *messages: dict) -> dict:
    """An Open WebUI chat of `messages` in a row (role, content, timestamp)."""
    tree, parent = {}, None
    for n, message in enumerate(messages):
        node_id = f"{chat_id}-{n}"
        tree[node_id] = {
            "id": node_id,
            "parentId": parent,
            "childrenIds": [],
            **message,
        }
        if parent:
            tree[parent]["childrenIds"].append(node_id)
        parent = node_id
    return {
        "id": chat_id,
        "title": chat_id,
        "created_at": 1_700_000_000,
        "updated_at": 1_700_000_100,
        "chat": {"history": {"currentId": parent, "messages": tree}},
    }


def owui(*chats: dict) -> bytes:
    return json.dumps(list(chats)).encode()


def test_invalid_json_is_refused(alice):
    message = refused(alice, b'[{"id": "x", "chat": ')
    assert "not valid JSON" in message and "cut off" in message
    assert "not valid JSON" in refused(alice, b"{'single': 'quotes'}")


def test_a_truncated_export_is_refused(alice):
    whole = (SAMPLES / "open-webui-all-chats.json").read_bytes()
    message = refused(alice, whole[: len(whole) * 2 // 3])
    assert "cut off" in message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"hello": "world"}',
        b"[1, 2, 3]",
        b'[{"messages": []}]',
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "日本語のテキスト".encode("utf-16"),
    ],
)
def test_a_file_that_is_no_export_is_refused(alice, raw):
    message = refused(alice, raw)
    assert "chatsite can import its own export" in message


def test_an_empty_file_or_list_is_refused(alice):
    assert refused(alice, b"") == "The file is empty."
    assert refused(alice, b"[]") == "The file holds no conversations."


def test_a_file_over_the_limit_is_refused(alice):
    raw = owui(owui_chat("big", {"role": "user", "content": "x" * 5000}))
    assert "too large" in refused(alice, raw, limit=4000)
    assert run(alice, raw, limit=len(raw)).conversations == 1


def test_a_zip_bomb_is_refused_after_reading_no_more_than_the_limit(alice):
    archive = io.BytesIO()
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z,
        z.open("conversations.json", "w") as entry,
    ):
        entry.write(b"[")
        for _ in range(64):
            entry.write(b" " * 1_000_000)  # 64 MB of spaces
        entry.write(b"]")
    assert len(archive.getvalue()) < 200_000
    message = refused(alice, archive.getvalue(), limit=2_000_000)
    assert "too large once unpacked" in message


def test_a_damaged_zip_is_refused(alice):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(SAMPLES / "chatgpt-conversations.json", "conversations.json")
    message = refused(alice, archive.getvalue()[:-200])
    assert "damaged or incomplete" in message
    other = io.BytesIO()
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("photos/cat.jpg", b"...")
    assert "neither" in refused(alice, other.getvalue())


def test_json_nested_too_deeply_is_refused(alice):
    assert "too deeply nested" in refused(alice, b"[" * 200_000 + b"]" * 200_000)


def test_nul_characters_are_removed_and_lone_surrogates_replaced(alice):
    raw = owui(
        owui_chat(
            "odd",
            {"role": "user", "content": "a\u0000b\u0000c", "timestamp": 1_700_000_000},
            {
                "role": "assistant",
                "content": "bad \ud800 half",
                "timestamp": 1_700_000_001,
            },
        )
    )
    assert b"\\u0000" in raw and b"\\ud800" in raw  # escaped, as JSON writes them
    summary = run(alice, raw)
    stored = Message.objects.filter(conversation__owner=alice).order_by("pk")
    assert [m.content for m in stored] == ["abc", "bad \ufffd half"]
    assert summary.warnings == {
        "NUL characters removed": 2,
        "Invalid characters (lone surrogates) replaced by �": 1,
    }


def test_unknown_roles_are_skipped_and_counted(alice):
    raw = owui(
        owui_chat(
            "roles",
            {"role": "user", "content": "q1"},
            {"role": "critic", "content": "nice"},
            {"role": "assistant", "content": "a1"},
            {"role": "tool", "content": "{}"},
            {"role": "assistant", "content": "a1, continued"},
        )
    )
    summary = run(alice, raw)
    conversation = Conversation.objects.get(owner=alice)
    rows = list(conversation.messages.order_by("pk"))
    assert [(m.role, m.content) for m in rows] == [
        ("user", "q1"),
        ("assistant", "a1\n\na1, continued"),
    ]
    assert rows[1].parent_id == rows[0].pk
    assert summary.warnings == {
        "Messages with an unknown role skipped (critic)": 1,
        "Messages with an unknown role skipped (tool)": 1,
        "Messages of one role in a row joined into one": 1,
    }


def test_dates_in_the_future_are_set_to_the_time_of_the_import(alice):
    later = int((timezone.now() + timedelta(days=400)).timestamp())
    chat = owui_chat("future", {"role": "user", "content": "q", "timestamp": later})
    chat["created_at"] = chat["updated_at"] = later
    before = timezone.now()
    summary = run(alice, owui(chat))
    conversation = Conversation.objects.get(owner=alice)
    message = conversation.messages.get()
    for moment in (
        conversation.created_at,
        conversation.updated_at,
        message.created_at,
    ):
        assert before <= moment <= timezone.now()
    assert summary.warnings["Dates in the future set to the time of the import"] == 3


def test_a_file_whose_tenth_conversation_is_invalid_imports_nothing(
    alice, branched, bob, monkeypatch
):
    monkeypatch.setattr(imports, "BATCH", 3)  # nine stored before the tenth
    document = conversation_document(for_export(alice).get())
    one = document["conversations"][0]
    document["conversations"] = [
        json.loads(json.dumps({**one, "key": f"chatsite:{n}"})) for n in range(12)
    ]
    document["conversations"][9]["messages"][3] = {
        **one["messages"][3],
        "role": "system",
    }
    message = refused(bob, json.dumps(document).encode())
    assert message == (
        "Conversation 10, message 4 has the role 'system': only \"user\" and "
        '"assistant" are chatsite\'s.'
    )
    with translation.override("zh-hans"):  # said in the importer's language
        assert refused(bob, json.dumps(document).encode()) == (
            "第 10 个对话的第 4 条消息的角色是 'system'：chatsite 只有“user”和"
            "“assistant”两种角色。"
        )
    assert not Folder.objects.filter(owner=bob).exists()
    document["conversations"][9]["messages"][3] = one["messages"][3]
    assert run(bob, json.dumps(document).encode()).conversations == 12


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda m: m[1].update(parent=5), "follows 5, not a message before it"),
        (lambda m: m[2].update(parent=1), "follows a message of its own role"),
        (lambda m: m[4].update(replaced=False), "shown beside another version"),
        (lambda m: m[0].update(created_at="yesterday"), "is not a time with its zone"),
    ],
)
def test_a_broken_tree_in_chatsite_export_is_refused(
    alice, branched, bob, change, says
):
    document = conversation_document(for_export(alice).get())
    messages = document["conversations"][0]["messages"]
    # Message 5 ("q2 edited") is off the branch; message 4 is its shown sibling.
    assert messages[4]["replaced"] and not messages[2]["replaced"]
    change(messages)
    assert says in refused(bob, json.dumps(document).encode())


def test_an_export_from_a_newer_chatsite_is_refused(alice):
    raw = json.dumps({"format": "chatsite.conversations", "version": 99}).encode()
    assert "version 99" in refused(alice, raw)


def test_the_same_conversation_twice_in_one_file_is_imported_once(alice):
    chat = owui_chat("twice", {"role": "user", "content": "q"})
    summary = run(alice, owui(chat, chat))
    assert (summary.conversations, summary.already_imported) == (1, 1)


def test_an_imported_conversation_is_asked_nothing_until_continued(
    alice, demo_profile, simulator
):
    raw = (SAMPLES / "open-webui-chat-thinking.json").read_bytes()
    run(alice, raw)
    conversation = Conversation.objects.get(owner=alice)
    assert conversation.model_profile == demo_profile
    assert simulator.log == [] and simulator.ps_requests == 0
    imported_answer = conversation.messages.get(role="assistant")
    turn = turn_rows.begin_turn(conversation, "And at sunset?")
    assert turn.question.parent == imported_answer
    assert [m["content"] for m in turn.history if m["role"] != "system"] == [
        "Why is the sky blue? Keep it short.",
        imported_answer.content,
        "And at sunset?",
    ]


# ------------------------------------------------------------ hostile files


def deflated(name: str, pieces, *, packed_lie: int | None = None) -> bytes:
    """A ZIP of one entry written from `pieces`; its directory saying the entry
    is `packed_lie` bytes packed if given (a bomb hiding its ratio)."""
    archive = io.BytesIO()
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z,
        z.open(name, "w") as entry,
    ):
        for piece in pieces:
            entry.write(piece)
    raw = bytearray(archive.getvalue())
    if packed_lie is not None:
        at = raw.index(b"PK\x01\x02")  # the central directory's entry
        struct.pack_into("<I", raw, at + 20, packed_lie)
    return bytes(raw)


def tiny_lists(megabytes: int):
    """`[[],[],...]`: about 23 million Python lists per 70 MB, 1.8 GB in all
    once json.loads builds them (issue 40)."""
    yield b"[[]"
    for _ in range(megabytes):
        yield b",[]" * 333_333
    yield b"]"


def peak_growth(work) -> int:
    """How much this process's peak resident memory grew while `work` ran
    (Linux: the peak is reset first, /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = _status("VmHWM")
    work()
    return _status("VmHWM") - before


def _status(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(field)


def test_a_70_kb_zip_bomb_is_refused_by_its_ratio_before_it_is_inflated(alice):
    bomb = deflated("conversations.json", tiny_lists(70))
    assert len(bomb) < 150_000
    growth = peak_growth(lambda: refused_here(alice, bomb))
    assert "too large once unpacked" in refused_here.message
    assert "times its packed size" in refused_here.message
    assert growth < 50_000_000  # main: +1.78 GB


def test_a_zip_whose_directory_lies_about_its_packed_size_is_refused(alice):
    """The directory says 1 MB packed (70 times, a ratio an export may have);
    the archive is 68 kB: its own size is what counts."""
    bomb = deflated("conversations.json", tiny_lists(70), packed_lie=1_000_000)
    with zipfile.ZipFile(io.BytesIO(bomb)) as z:
        assert z.getinfo("conversations.json").compress_size == 1_000_000
    growth = peak_growth(lambda: refused_here(alice, bomb))
    assert "too large once unpacked" in refused_here.message
    assert growth < 50_000_000  # main: +1.78 GB


def test_a_file_of_tiny_values_costs_one_conversation_at_a_time(alice):
    """Not packed at all: 20 MB of `[[],[],...]` is refused at its first
    item, and never built whole."""
    raw = b"".join(tiny_lists(20))
    growth = peak_growth(lambda: refused_here(alice, raw))
    assert "not an export chatsite can read" in refused_here.message
    assert growth < 50_000_000  # main: about +500 MB


def test_json_nested_deeper_than_any_export_is_refused(alice):
    chat = owui_chat("deep", {"role": "user", "content": "q"})
    chat["chat"]["extra"] = json.loads("[" * 100 + "]" * 100)
    message = refused(alice, owui(chat))
    assert "too deeply nested" in message and "64 levels" in message


def test_a_conversation_with_a_huge_string_is_refused_while_it_is_read(alice):
    """One string of 40 MB (a conversation is at most 32 MB): refused while
    ijson reads it, not after it has been built."""
    head = b'[{"id": "big", "chat": {"history": {"messages": {}}, "x": "'
    raw = head + b"a" * 40_000_000 + b'"}}]'
    growth = peak_growth(lambda: refused_here(alice, raw))
    assert "one of its conversations is larger than" in refused_here.message
    assert growth < 80_000_000  # main: the file, its text and the string


def refused_here(owner, raw: bytes) -> None:
    """`refused`, its message kept on the function (for `peak_growth`)."""
    refused_here.message = refused(owner, raw)


refused_here.message = ""
