"""Export from the conversation page and the user page, import there, the
file's size limit (the body's: tests/http/test_request_bodies.py), and the
staff export in the user admin."""

from __future__ import annotations

import io
import json
import secrets

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat.models import AuditEvent, Conversation, Message
from chat.transfer.export import document_pieces, zip_stream
from tests.support.refusals import refused
from tests.transfer import conftest as transfer_fixtures
from tests.transfer.conftest import SAMPLES, open_webui_chats, zip_document

pytestmark = pytest.mark.django_db

# The transfer tests' fixtures: a branched conversation and its model.
branched, thinker = transfer_fixtures.branched, transfer_fixtures.thinker

OWUI = SAMPLES / "open-webui-all-chats.json"


def upload(client, raw: bytes, name="export.json", **extra):
    return client.post(
        reverse("import_conversations"),
        {"file": _named(raw, name)},
        HTTP_X_REQUESTED_WITH="XMLHttpRequest",
        **extra,
    )


def _named(raw: bytes, name: str):
    file = io.BytesIO(raw)
    file.name = name
    return file


# --------------------------------------------------------------- export


def test_a_conversation_downloads_as_markdown_with_its_shown_branch(
    alice_client, branched
):
    branched.title = '../../etc/passwd\r\nX-Evil: 1 "quoted"'
    branched.save()
    response = alice_client.get(
        reverse("export_conversation", args=[branched.pk, "md"])
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == (
        'attachment; filename="etcpasswd-x-evil-1-quoted.md"'
    )
    text = response.content.decode()
    assert "a3 again" in text and "q2 edited" not in text  # the shown branch
    assert "> **Thinking**\n>\n> hmm 1" in text


def test_a_conversation_downloads_as_json_that_imports_again(
    alice_client, bob_client, branched
):
    response = alice_client.get(
        reverse("export_conversation", args=[branched.pk, "json"])
    )
    assert response["Content-Disposition"].startswith("attachment; filename=")
    document = json.loads(response.content)
    assert [c["title"] for c in document["conversations"]] == [branched.title]
    assert document["folders"][0]["name"] == "Research"
    result = upload(bob_client, response.content)
    assert result.status_code == 200
    assert "10 messages" in result.content.decode()


def test_a_title_in_chinese_keeps_its_letters_in_the_file_name(alice_client, alice):
    conversation = Conversation.objects.create(owner=alice, title="章鱼 的 故事")
    response = alice_client.get(
        reverse("export_conversation", args=[conversation.pk, "md"])
    )
    assert response["Content-Disposition"] == (
        "attachment; filename*=utf-8''"
        "%E7%AB%A0%E9%B1%BC-%E7%9A%84-%E6%95%85%E4%BA%8B.md"
    )


def test_someone_elses_conversation_or_an_unknown_format_is_a_404(
    bob_client, alice_client, branched
):
    assert (
        bob_client.get(
            reverse("export_conversation", args=[branched.pk, "md"])
        ).status_code
        == 404
    )
    assert (
        alice_client.get(
            reverse("export_conversation", args=[branched.pk, "pdf"])
        ).status_code
        == 404
    )
    assert Client().get(reverse("export_all")).status_code == 302  # sign in first


def test_all_conversations_stream_as_a_zip_with_json_and_markdown(
    alice_client, alice, branched
):
    Conversation.objects.create(owner=alice, title="Second")
    response = alice_client.get(reverse("export_all"))
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith(
        'attachment; filename="chatsite-alice-'
    )
    document, markdown = zip_document(b"".join(response.streaming_content))
    assert [c["title"] for c in document["conversations"]] == [branched.title, "Second"]
    assert sorted(markdown) == ["markdown/00001-q1.md", "markdown/00002-second.md"]


def test_the_export_reads_conversations_a_chunk_at_a_time(alice, settings):
    """The memory an export takes does not grow with the conversations: they
    are read `TRANSFER_EXPORT_CHUNK` at a time, each chunk's messages with it,
    and the document is written out before the next chunk is read."""
    settings.TRANSFER_EXPORT_CHUNK = 2
    for n in range(5):
        Conversation.objects.create(owner=alice, title=f"c{n}").messages.create(
            role="user", content=f"q{n}"
        )
    pieces = document_pieces(alice)
    with CaptureQueriesContext(connection) as queries:
        next(pieces), next(pieces)  # the head, then the first conversation
        first = len(_message_reads(queries))
        rest = list(pieces)
    assert len(rest) == 5  # four more conversations and the end
    assert (first, len(_message_reads(queries))) == (1, 3)  # ceil(5 / 2) chunks


def _message_reads(queries) -> list[str]:
    return [q["sql"] for q in queries if 'FROM "chat_message"' in q["sql"]]


def test_the_zip_is_sent_before_the_last_conversation_is_read(alice, settings):
    settings.TRANSFER_EXPORT_CHUNK = 1
    for n in range(4):
        Conversation.objects.create(owner=alice, title=f"c{n}").messages.create(
            role="user",
            content=secrets.token_hex(100_000),  # 200 kB, about 100 kB zipped
        )
    stream = zip_stream(alice)
    with CaptureQueriesContext(connection) as queries:
        first = next(stream)
        read = len(_message_reads(queries))
    assert first.startswith(b"PK") and read < 4
    assert len(first) + sum(len(p) for p in stream) > 0


# --------------------------------------------------------------- import


def test_an_upload_is_imported_and_summarised(alice_client, alice):
    response = upload(alice_client, OWUI.read_bytes())
    assert response.status_code == 200
    text = response.content.decode()
    assert (
        "Imported from Open WebUI:" in text and "7 conversations, 20 messages" in text
    )
    again = upload(alice_client, OWUI.read_bytes()).content.decode()
    assert "0 conversations, 0 messages; 7 skipped as already imported" in again
    assert Conversation.objects.filter(owner=alice).count() == 7


def test_an_imported_conversation_says_where_it_came_from(alice_client, alice):
    upload(alice_client, OWUI.read_bytes())
    conversation = Conversation.objects.filter(owner=alice).first()
    page = alice_client.get(conversation.get_absolute_url()).content.decode()
    assert "Imported from Open WebUI." in page
    assert 'id="export-menu"' in page


def test_a_refused_file_says_why_and_imports_nothing(alice_client, alice):
    response = upload(alice_client, b'{"not": "an export"}')
    assert response.status_code == 422
    assert "not an export chatsite can read" in response.content.decode()
    assert "Nothing was imported." in response.content.decode()
    missing = alice_client.post(
        reverse("import_conversations"), HTTP_X_REQUESTED_WITH="XMLHttpRequest"
    )
    assert missing.status_code == 422 and "Choose a file" in missing.content.decode()
    assert not Conversation.objects.filter(owner=alice).exists()


def test_without_the_script_the_result_is_a_notice_on_the_user_page(alice_client):
    response = alice_client.post(
        reverse("import_conversations"),
        {"file": _named(OWUI.read_bytes(), "x.json")},
        follow=True,
    )
    assert response.redirect_chain == [(reverse("account"), 302)]
    assert (
        "Imported from Open WebUI: 7 conversations, 20 messages."
        in response.content.decode()
    )


def test_a_database_error_mid_import_removes_what_was_stored(alice_client, alice):
    """The 25th of 30 conversations holds a message the database refuses (a
    real trigger): the two batches stored before it are removed."""
    chats = json.loads(open_webui_chats(30))
    chats[24]["chat"]["history"]["messages"]["24-3"]["content"] = "refused"
    with refused("refuse_import", "INSERT", "chat_message", "content", "refused"):
        response = upload(alice_client, json.dumps(chats).encode())
    assert response.status_code == 422
    assert (
        "The file holds a value this site cannot store; nothing was imported."
        in response.content.decode()
    )
    assert not Conversation.objects.filter(owner=alice).exists()
    assert not Message.objects.exists()


def test_an_upload_over_the_limit_is_stopped_while_it_is_received(
    alice_client, alice, settings
):
    settings.TRANSFER_IMPORT_MAX_BYTES = 5_000  # the sample is 29 kB
    response = upload(alice_client, OWUI.read_bytes())
    assert response.status_code == 413
    assert not Conversation.objects.filter(owner=alice).exists()


def test_a_file_name_of_thousands_of_characters_is_refused_like_other_files(
    alice_client, alice, caplog
):
    """Django cannot read a form part whose headers pass 1,024 bytes: the page
    hears why, as it hears any other refusal, and nothing is logged as a
    failure of the site (as for attachments:
    tests/web/conversations/attachments/test_uploads.py)."""
    response = upload(alice_client, OWUI.read_bytes(), "a" * 5000 + ".json")
    assert response.status_code == 400
    assert '<p class="import-error error-text" role="alert">' in (
        response.content.decode()
    )
    assert (
        "The upload could not be read. If the file&#x27;s name is very long, "
        "rename the file and try again."
    ) in response.content.decode()
    assert not Conversation.objects.filter(owner=alice).exists()
    assert not [r for r in caplog.records if r.exc_info or r.levelname == "ERROR"]


def test_the_import_checks_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert upload(client, OWUI.read_bytes()).status_code == 403
    assert not Conversation.objects.filter(owner=alice).exists()


def test_the_user_page_offers_export_and_import(alice_client):
    page = alice_client.get(reverse("account")).content.decode()
    assert reverse("export_all") in page
    assert 'id="import-form"' in page and 'data-max-bytes="209715200"' in page
    assert "chat/transfer" in page  # its module (a hashed name in production)


# --------------------------------------------------------------- staff


def test_staff_export_a_users_conversations_from_the_user_admin(
    admin_client, admin_user, alice, branched
):
    response = admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "export_conversations", "_selected_action": [alice.pk]},
    )
    assert isinstance(response, StreamingHttpResponse)
    document, _ = zip_document(b"".join(response.streaming_content))
    assert document["owner"] == "alice" and len(document["conversations"]) == 1
    event = AuditEvent.objects.get(kind=AuditEvent.Kind.DATA_EXPORTED)
    assert (event.actor, event.subject, event.detail) == (
        admin_user,
        alice,
        {"conversations": 1},
    )


def test_staff_export_one_user_at_a_time(admin_client, alice, bob):
    response = admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "export_conversations", "_selected_action": [alice.pk, bob.pk]},
        follow=True,
    )
    assert "Select one user to export at a time." in response.content.decode()
    assert not AuditEvent.objects.filter(kind=AuditEvent.Kind.DATA_EXPORTED).exists()
