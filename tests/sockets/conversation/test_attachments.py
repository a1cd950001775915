"""Files sent with a question over the owner's socket: bound to the question,
refused with the reason (nothing stored), and what reached the model server
over both protocols, as the simulator reports it (chat.simulator.received)."""

from __future__ import annotations

import hashlib

import pytest
from asgiref.sync import sync_to_async

from chat.models import Attachment, Message
from tests.files import samples
from tests.files.attaching import attach
from tests.files.s3 import s3_server, storage  # noqa: F401 (fixtures)
from tests.support.communicators import connect, frames_until
from tests.support.waiting import idle

# Every test twice: files in the media folder, then in a bucket of a real
# S3-compatible server (tests/files/s3.py).
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("storage"),
]

attach_async = sync_to_async(attach)


@pytest.fixture
def vision(demo_profile):
    demo_profile.supports_vision = True
    demo_profile.save()
    return demo_profile


async def send_files(communicator, ids, content="What do these show?", **extra):
    await communicator.send_json_to(
        {
            "type": "send",
            "content": content,
            "client_id": "c-1",
            "attachments": ids,
            **extra,
        }
    )


def document(text: str) -> dict:
    return {
        "name": "report.pdf",
        "chars": len(text),
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }


@pytest.mark.parametrize("backend", ["ollama", "openai"])
async def test_an_image_and_a_pdf_reach_the_model_server(
    alice, conversation, vision, simulator, backend
):
    vision.backend = backend
    await vision.asave()
    image = await attach_async(alice, "screen.png", samples.png(300, 200))
    pdf = await attach_async(alice, "report.pdf", samples.pdf("Revenue rose 12"))
    communicator = await connect(alice, conversation)
    await send_files(communicator, [image.public_id, pdf.public_id])
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"
    echo = frames[0]["message"]
    assert f"/attachments/{image.public_id}/thumbnail/" in echo["html"]
    assert "report.pdf" in echo["html"]
    entry = simulator.log[-1]
    assert entry.protocol == backend
    assert entry.received == {
        "images": [{"bytes": image.size, "sha256": image.sha256}],
        "documents": [document("Revenue rose 12")],
    }
    sent = entry.body["messages"][-1]
    if backend == "openai":
        assert [part["type"] for part in sent["content"]] == ["text", "image_url"]
        assert sent["content"][1]["image_url"]["url"].startswith(
            "data:image/jpeg;base64,"
        )
        text = sent["content"][0]["text"]
    else:
        assert len(sent["images"]) == 1
        text = sent["content"]
    assert text.endswith(
        "Revenue rose 12\n----- END ATTACHED FILE: report.pdf -----"
        "\n\nWhat do these show?"
    )
    question = await Message.objects.aget(pk=echo["id"])
    bound = [a async for a in Attachment.objects.filter(message=question)]
    assert [a.pk for a in bound] == [image.pk, pdf.pk]
    assert all(a.conversation_id == conversation.pk for a in bound)


async def test_earlier_images_go_again_with_the_history(
    alice, conversation, vision, simulator
):
    image = await attach_async(alice, "screen.png", samples.png())
    communicator = await connect(alice, conversation)
    await send_files(communicator, [image.public_id], content="")
    await frames_until(communicator, "done")
    await idle(conversation.pk)
    await communicator.send_json_to(
        {"type": "send", "content": "And now?", "client_id": "c-2"}
    )
    await frames_until(communicator, "done")
    await communicator.disconnect()
    received = simulator.log[-1].received
    assert received["images"] == [{"bytes": image.size, "sha256": image.sha256}]
    first = simulator.log[-1].body["messages"][0]
    assert first["content"] == "" and len(first["images"]) == 1


async def test_a_regenerated_answer_is_asked_with_the_same_files(
    alice, conversation, vision, simulator
):
    pdf = await attach_async(alice, "report.pdf", samples.pdf("Revenue rose 12"))
    communicator = await connect(alice, conversation)
    await send_files(communicator, [pdf.public_id])
    await frames_until(communicator, "done")
    await idle(conversation.pk)
    await communicator.send_json_to({"type": "regenerate"})
    await frames_until(communicator, "done")
    await communicator.disconnect()
    assert simulator.log[-1].received["documents"] == [document("Revenue rose 12")]
    assert await Attachment.objects.filter(storage_name=pdf.storage_name).acount() == 2


async def refused(communicator, ids, code="attachment_refused", **extra) -> dict:
    await send_files(communicator, ids, **extra)
    # (after an answer, its final `message` frame may come first)
    frame = (await frames_until(communicator, "error"))[-1]
    assert frame["code"] == code
    return frame


async def test_an_image_for_a_model_without_vision_is_refused_before_anything_is_sent(
    alice, conversation, simulator
):
    image = await attach_async(alice, "screen.png", samples.png())
    communicator = await connect(alice, conversation)
    frame = await refused(communicator, [image.public_id])
    await communicator.disconnect()
    assert frame["detail"] == (
        "qwen3-demo:8b (demo model) cannot see images: its server does not list "
        "vision among its capabilities. Remove the image or choose a model with "
        "vision."
    )
    assert not await conversation.messages.aexists()
    assert simulator.log == []
    await image.arefresh_from_db()
    assert image.message_id is None


async def test_someone_elses_or_an_already_sent_file_is_refused(
    alice, bob, conversation, vision, simulator
):
    theirs = await attach_async(bob, "notes.txt", b"bob's notes")
    mine = await attach_async(alice, "notes.txt", b"my notes")
    communicator = await connect(alice, conversation)
    frame = await refused(communicator, [theirs.public_id])
    assert "no longer available (removed, or not yours)" in frame["detail"]
    await send_files(communicator, [mine.public_id])
    await frames_until(communicator, "done")
    await idle(conversation.pk)
    frame = await refused(communicator, [mine.public_id])
    await communicator.disconnect()
    assert frame["detail"] == (
        "notes.txt was already sent with another question: attach it again."
    )
    assert await conversation.messages.acount() == 2


async def test_too_many_files_on_one_question_are_refused(
    alice, conversation, vision, settings
):
    settings.ATTACHMENT_MAX_FILES = 2
    ids = [(await attach_async(alice, f"{i}.txt", b"x")).public_id for i in range(3)]
    communicator = await connect(alice, conversation)
    frame = await refused(communicator, ids)
    await communicator.disconnect()
    assert frame["detail"] == (
        "3 files are attached; at most 2 can go with one question."
    )
    assert not await conversation.messages.aexists()


async def test_a_document_over_the_context_is_refused_with_numbers_or_truncated(
    alice, conversation, vision, simulator
):
    # 8,192 tokens of context, 2,048 kept for the answer; 50,004 tokens (49k) of text.
    text = "word " * 40_000
    big = await attach_async(alice, "big.log", text.encode(), profile=vision)
    communicator = await connect(alice, conversation)
    # Its own code: the composer offers to send them truncated.
    frame = await refused(communicator, [big.public_id], code="document_too_large")
    assert frame["detail"].startswith("The attached documents are ~49k tokens; ")
    assert "this model's context is 8k (~6k left for them)" in frame["detail"]
    assert not await conversation.messages.aexists()
    await send_files(communicator, [big.public_id], truncate_documents=True)
    frames = await frames_until(communicator, "done")
    await communicator.disconnect()
    assert frames[-1]["status"] == "done"
    sent = simulator.log[-1].received["documents"]
    assert len(sent) == 1 and 20_000 < sent[0]["chars"] < len(text)
    await big.arefresh_from_db()
    assert big.sent_chars is not None and big.sent_chars < len(text)
    answer = await conversation.messages.filter(role="assistant").alast()
    assert answer.prompt_tokens_estimate <= 8192 - 2048


async def test_an_upload_for_another_conversation_cannot_be_sent_here(
    alice, conversation, vision, demo_profile
):
    from chat.models import Conversation

    other = await Conversation.objects.acreate(owner=alice, model_profile=demo_profile)
    pdf = await attach_async(alice, "a.txt", b"hello", conversation=other)
    communicator = await connect(alice, conversation)
    frame = await refused(communicator, [pdf.public_id])
    await communicator.disconnect()
    assert "no longer available" in frame["detail"]
    assert not await conversation.messages.aexists()
