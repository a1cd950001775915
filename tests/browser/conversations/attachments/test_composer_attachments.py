"""The composer's attachments in Chromium (static/chat/attachments.js): files
come by the button, a drop and a paste, go up at once with a chip each (size,
token cost, thumbnail, remove), and go with the question. What is refused:
test_attachment_refusals.py."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Attachment, Conversation, Message
from tests.browser.chat_page import (
    open_conversation,
    wait_until_done,
)
from tests.browser.conversations.attachments.attachment_page import (
    a_file,
    chip,
    choose,
    drop,
    paste,
    sha256,
    uploads_to,
)
from tests.browser.csp import LISTENER
from tests.files import samples
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def talk(alice, demo_profile):
    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


# The done-when path of attachments, over both wire protocols (Ollama's
# `images`, OpenAI's `image_url` content parts).
@pytest.mark.parametrize("backend", ["ollama", "openai"])
def test_a_screenshot_pasted_and_a_pdf_dropped_go_with_the_question(
    live_server_url, page, login, alice, demo_profile, talk, simulator, backend
):
    demo_profile.supports_vision = True
    demo_profile.backend = backend
    demo_profile.save()
    simulator.config.answer_tokens = 5
    page.add_init_script(LISTENER)
    open_conversation(page, login, live_server_url, talk, alice)
    page.fill("#composer-input", "What do these say?")

    assert paste(page, samples.png(800, 600), "image.png", "image/png")
    pdf = samples.pdf("Quarterly revenue rose")
    assert drop(page, pdf, "report.pdf", "application/pdf") == {
        "dropping": True,
        "taken": True,
    }

    shot = chip(page, "Pasted image")
    report = chip(page, "report.pdf")
    expect(shot).to_have_attribute("data-status", "ready")
    expect(report).to_have_attribute("data-status", "ready")
    image = Attachment.objects.get(kind="image")
    document = Attachment.objects.get(kind="document")
    # The picture shows at once (from the file), then as the server's thumbnail.
    expect(shot.locator("img.file-thumb")).to_have_attribute(
        "src", image.to_dict()["thumbnail_url"]
    )
    assert image.tokens and document.tokens
    expect(report.locator(".file-tokens")).to_have_text(f"~{document.tokens:,} tokens")
    summary = page.locator("#attach-summary")
    expect(summary).to_contain_text("2 files")
    expect(summary).to_contain_text(f"~{image.tokens + document.tokens:,} tokens")
    expect(page.locator("#composer-input")).to_have_value("What do these say?")

    page.press("#composer-input", "Enter")
    wait_until_done(page)
    question = page.locator("article.user")
    expect(question.locator(".attachments li")).to_have_count(2)
    expect(page.locator(".file-chip")).to_have_count(0)
    expect(summary).to_be_hidden()
    sent = Message.objects.get(role="user")
    assert set(sent.attachments.all()) == {image, document}
    received = simulator.asked[-1].received
    assert [i["sha256"] for i in received["images"]] == [sha256(image.read())]
    assert "Quarterly revenue rose" in document.text
    assert received["documents"] == [
        {
            "name": "report.pdf",
            "chars": len(document.text),
            "sha256": sha256(document.text),
        }
    ]
    assert page.evaluate("window.__cspViolations") == []


def test_attach_by_the_keyboard_and_remove_a_chip(
    live_server_url, page, login, alice, talk
):
    made = uploads_to(page)
    files = [
        a_file("notes.md", "text/markdown", b"# Notes\n" * 50),
        a_file("data.csv", "text/csv", b"a,b\n1,2\n" * 40),
    ]
    # The file dialog is answered as it opens (listening from before the page
    # loads: Chromium then hands every dialog to the test).
    page.on("filechooser", lambda chooser: chooser.set_files(files))
    open_conversation(page, login, live_server_url, talk, alice)
    page.focus("#composer-input")
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#attach-button")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator('.file-chip[data-status="ready"]')).to_have_count(2)
    expect(chip(page, "notes.md").locator(".file-size")).to_have_text("400 B")
    expect(chip(page, "notes.md").locator(".file-tokens")).to_contain_text("tokens")

    page.click("button[aria-label='Remove notes.md']")
    expect(page.locator(".file-chip")).to_have_count(1)
    # Focus stays in the list, on the next file's remove.
    expect(page.locator("button[aria-label='Remove data.csv']")).to_be_focused()
    until_sync(
        lambda: list(Attachment.objects.values_list("name", flat=True)) == ["data.csv"],
        "the removed file was not deleted on the server",
    )
    assert made == ["POST", "POST", "DELETE"]
    expect(page.locator("#attach-status")).to_have_text("notes.md removed.")


def test_enter_while_a_file_uploads_sends_once_it_is_up(
    live_server_url, page, login, alice, talk, simulator
):
    simulator.config.answer_tokens = 5
    open_conversation(page, login, live_server_url, talk, alice)
    held = []  # the upload, held by the browser until the test lets it go
    page.route("**/attachments/", lambda route: held.append(route))
    with page.expect_request("**/attachments/"):
        choose(page, a_file("minutes.txt", "text/plain", b"We agreed to ship."))
    expect(chip(page, "minutes.txt")).to_have_attribute("data-status", "uploading")
    page.fill("#composer-input", "Summarise the minutes")
    page.press("#composer-input", "Enter")
    expect(page.locator("#composer")).to_have_attribute("data-waiting", "1")
    expect(page.locator("#send-button")).to_have_attribute("aria-busy", "true")
    # Still uploading: the question waits in the box, the model is not asked.
    expect(page.locator("#composer-input")).to_have_value("Summarise the minutes")
    assert page.locator("article.user").count() == 0

    [upload] = held  # handed to the test while it waited above
    upload.continue_()
    wait_until_done(page)
    expect(page.locator("article.user")).to_contain_text("Summarise the minutes")
    expect(page.locator("#composer")).to_have_attribute("data-waiting", "")
    expect(page.locator("#composer-input")).to_have_value("")
    [sent] = Attachment.objects.all()
    assert sent.message == Message.objects.get(role="user")
    received = simulator.asked[-1].received
    assert [d["name"] for d in received["documents"]] == ["minutes.txt"]


def test_text_pastes_as_text(live_server_url, page, login, alice, talk):
    """A clipboard with text and a picture of it (a spreadsheet's cells, say)
    pastes the text; nothing is attached."""
    open_conversation(page, login, live_server_url, talk, alice)
    taken = page.evaluate(
        """() => {
          const data = new DataTransfer();
          data.setData("text/plain", "a\\tb");
          const bytes = new Uint8Array([1]);
          const picture = new File([bytes], "a.png", { type: "image/png" });
          data.items.add(picture);
          const init = { bubbles: true, cancelable: true, clipboardData: data };
          const event = new ClipboardEvent("paste", init);
          return !document.getElementById("composer-input").dispatchEvent(event);
        }"""
    )
    assert not taken
    expect(page.locator(".file-chip")).to_have_count(0)


def test_a_file_dropped_beside_the_conversation_is_ignored(
    live_server_url, page, login, alice, talk
):
    """Not attached, and not opened by the browser in place of the page."""
    made = uploads_to(page)
    open_conversation(page, login, live_server_url, talk, alice)
    page.fill("#composer-input", "Half a thought")
    dropped = drop(page, b"notes", "notes.txt", "text/plain", on="#sidebar")
    assert dropped == {"dropping": False, "taken": True}
    expect(page.locator(".file-chip")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("Half a thought")
    assert made == []


def test_esc_gives_up_waiting_for_the_upload(live_server_url, page, login, alice, talk):
    open_conversation(page, login, live_server_url, talk, alice)
    held = []
    page.route("**/attachments/", lambda route: held.append(route))
    with page.expect_request("**/attachments/"):
        choose(page, a_file("draft.md", "text/markdown", b"# Draft"))
    page.fill("#composer-input", "Not yet")
    page.press("#composer-input", "Enter")
    expect(page.locator("#composer")).to_have_attribute("data-waiting", "1")
    page.press("#composer-input", "Escape")
    expect(page.locator("#composer")).to_have_attribute("data-waiting", "")

    [upload] = held
    upload.continue_()
    expect(chip(page, "draft.md")).to_have_attribute("data-status", "ready")
    # Uploaded, and still not sent: the question and its file wait in the box.
    expect(page.locator("#composer-input")).to_have_value("Not yet")
    assert page.locator("article.user").count() == 0
    assert not Message.objects.exists()
