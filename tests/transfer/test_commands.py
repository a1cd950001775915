"""`manage.py import_conversations USERNAME FILE` and `export_conversations
USERNAME OUT.zip`."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from chat.models import Conversation
from tests.transfer.conftest import SAMPLES, zip_document

pytestmark = pytest.mark.django_db


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_import_tells_the_format_and_prints_a_summary(alice):
    output = command(
        "import_conversations", "alice", str(SAMPLES / "chatgpt-conversations.json")
    )
    assert output.splitlines()[0] == (
        "Imported from ChatGPT: 2 conversation(s), 6 message(s); "
        "0 skipped as already imported."
    )
    assert "Warning: Tool messages skipped: 1" in output
    again = command(
        "import_conversations", "alice", str(SAMPLES / "chatgpt-conversations.json")
    )
    assert "0 conversation(s), 0 message(s); 2 skipped" in again


def test_export_writes_the_zip_that_imports_back(alice, bob, tmp_path):
    command("import_conversations", "alice", str(SAMPLES / "open-webui-all-chats.json"))
    out = tmp_path / "alice.zip"
    assert command("export_conversations", "alice", str(out)) == (
        f"Exported 7 conversation(s) to {out}.\n"
    )
    document, markdown = zip_document(out.read_bytes())
    assert len(document["conversations"]) == len(markdown) == 7
    output = command("import_conversations", "bob", str(out))
    assert output.startswith(
        "Imported from a chatsite export: 7 conversation(s), 20 message(s)"
    )
    assert set(
        Conversation.objects.filter(owner=bob).values_list("imported_from", flat=True)
    ) == {"open-webui"}


def test_a_refused_file_an_unknown_user_or_a_missing_file_is_an_error(alice, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(CommandError, match="not valid JSON.*Nothing was imported"):
        command("import_conversations", "alice", str(bad))
    with pytest.raises(CommandError, match="There is no user 'nobody'"):
        command("import_conversations", "nobody", str(bad))
    with pytest.raises(CommandError, match="Cannot read"):
        command("import_conversations", "alice", str(tmp_path / "missing.json"))
    with pytest.raises(CommandError, match="too large"):
        command(
            "import_conversations",
            "alice",
            str(SAMPLES / "open-webui-all-chats.json"),
            "--max-mb",
            "0.01",
        )
    assert not Conversation.objects.exists()
