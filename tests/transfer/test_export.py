"""The export ZIP holds the files sent in each conversation, beside its
Markdown, and still imports (chat.transfer.export)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.contrib.auth import get_user_model

from chat.transfer.export import zip_stream
from chat.transfer.imports import import_file
from tests.files import samples
from tests.files.attaching import attach

pytestmark = pytest.mark.django_db


def test_the_zip_holds_each_sent_file_under_its_conversation(alice, conversation):
    conversation.title = "Quarterly report"
    conversation.save()
    first = conversation.messages.create(role="user", content="first")
    answer = conversation.messages.create(role="assistant", content="ok", parent=first)
    question = conversation.messages.create(
        role="user", content="Read this", parent=answer
    )
    pdf = attach(alice, "Q3 report.pdf", samples.pdf(), conversation=conversation)
    pdf.message = question
    pdf.save()
    attach(alice, "unsent.txt", b"never sent", conversation=conversation)
    content = b"".join(zip_stream(alice))
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        files = [n for n in archive.namelist() if n.startswith("files/")]
        assert files == [
            f"files/00001-quarterly-report/00003-{pdf.public_id[:8]}-q3-report.pdf"
        ]
        assert archive.read(files[0]) == pdf.read()
    carol = get_user_model().objects.create_user("carol")
    summary = import_file(carol, io.BytesIO(content))
    assert (summary.conversations, summary.messages) == (1, 3)
