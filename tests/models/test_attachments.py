"""Attachments as the model keeps them: what a prompt carries, what the
history policy counts, files kept while a row names them, a version asked
again with the same files (chat.models.attachments)."""

from __future__ import annotations

import base64

import pytest
from django.core.files.storage import default_storage

from chat.models import Attachment, AttachmentRefused, turn_rows
from chat.models.attachment_prompts import prompt_message
from tests.files import samples
from tests.files.attaching import attach
from tests.files.s3 import s3_server, storage  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


@pytest.fixture
def vision(demo_profile):
    demo_profile.supports_vision = True
    demo_profile.save()
    return demo_profile


def test_a_question_carries_its_documents_before_its_text_and_its_images(
    alice, conversation, vision
):
    image = attach(alice, "a.png", samples.png())
    notes = attach(alice, "notes.md", b"# Plan\nship it")
    turn = turn_rows.begin_turn(
        conversation, "Thoughts?", attachments=[notes.public_id, image.public_id]
    )
    sent = turn.history[-1]
    assert sent["content"] == (
        "----- BEGIN ATTACHED FILE: notes.md -----\n# Plan\nship it\n"
        "----- END ATTACHED FILE: notes.md -----\n\nThoughts?"
    )
    assert [base64.b64decode(i) for i in sent["images"]] == [image.read()]
    assert prompt_message(turn.question, [notes, image]) == sent
    assert turn.answer.files_with_question == 2
    assert "2 files with the question" in turn.answer.history_summary


def test_fit_context_counts_files_and_drops_older_turns_for_them(
    alice, conversation, vision
):
    vision.default_history_policy = "fit"
    vision.context_length = 2048  # 512 kept for the answer
    vision.save()
    conversation.messages.create(role="user", content="old question " * 40)
    conversation.messages.create(role="assistant", content="old answer " * 40)
    notes = attach(alice, "notes.txt", b"x" * 5400)  # ~1,350 tokens
    turn = turn_rows.begin_turn(
        conversation, "Read this", attachments=[notes.public_id]
    )
    assert [m["content"][:12] for m in turn.history] == ["----- BEGIN "]
    assert turn.answer.history_sent == 1 and turn.answer.history_total == 3
    assert 1350 < turn.answer.prompt_tokens_estimate <= 2048 - 512


def test_a_refusal_stores_nothing(alice, conversation):
    image = attach(alice, "a.png", samples.png())
    with pytest.raises(AttachmentRefused, match="cannot see images"):
        turn_rows.begin_turn(conversation, "Look", attachments=[image.public_id])
    assert not conversation.messages.exists()
    image.refresh_from_db()
    assert image.message is None and image.conversation is None


def test_a_version_asked_again_shares_the_files_until_the_last_row_goes(
    alice, conversation, vision, django_capture_on_commit_callbacks
):
    image = attach(alice, "a.png", samples.png())
    first = turn_rows.begin_turn(conversation, "Look", attachments=[image.public_id])
    first.answer.status = "done"
    first.answer.content = "A red square."
    first.answer.save()
    retry = turn_rows.begin_regenerate(conversation)
    copy = Attachment.objects.get(message=retry.turn.question)
    assert copy.storage_name == image.storage_name and copy.pk != image.pk
    assert copy.public_id != image.public_id
    with django_capture_on_commit_callbacks(execute=True):
        Attachment.objects.filter(pk=image.pk).delete()
    assert default_storage.exists(copy.storage_name)
    with django_capture_on_commit_callbacks(execute=True):
        conversation.delete()
    assert not default_storage.exists(copy.storage_name)
    assert not default_storage.exists(copy.thumbnail_name)


def test_an_edit_keeps_the_files_or_takes_new_ones(alice, conversation, vision):
    notes = attach(alice, "notes.txt", b"first notes")
    turn = turn_rows.begin_turn(conversation, "Read", attachments=[notes.public_id])
    turn.answer.status = "done"
    turn.answer.save()
    kept = turn_rows.begin_edit(conversation, turn.question.pk, "Read again")
    assert [a.name for a in kept.turn.question.files] == ["notes.txt"]
    kept.turn.answer.status = "done"
    kept.turn.answer.save()
    other = attach(alice, "other.txt", b"other notes")
    replaced = turn_rows.begin_edit(
        conversation,
        kept.turn.question.pk,
        "Read this one",
        attachments=[other.public_id],
    )
    assert [a.name for a in replaced.turn.question.files] == ["other.txt"]
    assert "other notes" in replaced.turn.history[-1]["content"]


def test_earlier_pictures_are_left_out_for_a_model_without_vision(
    alice, conversation, vision
):
    image = attach(alice, "a.png", samples.png(1400, 1400))  # 2,500 patches
    first = turn_rows.begin_turn(conversation, "Look", attachments=[image.public_id])
    assert first.answer.prompt_tokens_estimate > 2500
    first.answer.status = "done"
    first.answer.content = "A red square."
    first.answer.save()
    vision.supports_vision = False
    vision.save()
    turn = turn_rows.begin_turn(conversation, "And in words?")
    assert [m.get("images") for m in turn.history] == [None, None, None]
    assert turn.answer.prompt_tokens_estimate < 100


def test_asking_a_picture_again_of_a_model_without_vision_is_refused(
    alice, conversation, vision
):
    image = attach(alice, "a.png", samples.png())
    first = turn_rows.begin_turn(conversation, "Look", attachments=[image.public_id])
    first.answer.status = "done"
    first.answer.content = "A red square."
    first.answer.save()
    vision.supports_vision = False
    vision.save()
    with pytest.raises(AttachmentRefused, match="cannot see images"):
        turn_rows.begin_regenerate(conversation)
    first.answer.refresh_from_db()
    assert not first.answer.replaced  # nothing changed


@pytest.mark.usefixtures("storage")
def test_an_image_is_read_from_storage_at_most_once_per_process(
    alice, conversation, vision, monkeypatch
):
    """A prompt carries a conversation's earlier images at every question: the
    process keeps them (`Attachment.base64`), from the upload on, so storage
    (an S3 round trip each) is not read again."""
    from django.core.cache import caches

    image = attach(alice, "a.png", samples.png())
    expected = base64.b64encode(image.read()).decode("ascii")
    reads = []
    read = Attachment.read

    def counted(self):
        reads.append(self.storage_name)
        return read(self)

    monkeypatch.setattr(Attachment, "read", counted)
    question = conversation.messages.create(role="user", content="See?")
    assert prompt_message(question, [image])["images"] == [expected]
    assert reads == []  # kept at the upload
    caches["prompt_images"].clear()  # as in another process
    for _ in range(3):
        assert prompt_message(question, [image])["images"] == [expected]
    assert reads == [image.storage_name]
