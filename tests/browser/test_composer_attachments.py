"""The composer's attachments in Chromium (static/chat/attachments.js): files
come by the button, a drop and a paste, go up at once with a chip each (size,
token cost, thumbnail, remove), and go with the question; what the browser can
refuse is refused before anything is sent, and nothing typed is ever lost."""

from __future__ import annotations

import base64
import hashlib

import pytest
from playwright.sync_api import expect

from chat.models import Attachment, Conversation, Message, ModelProfile
from tests.browser.chat_page import (
    choose_model,
    open_conversation,
    open_settings,
    wait_until_done,
)
from tests.browser.csp import LISTENER
from tests.files import samples
from tests.support.waiting import until_sync

pytestmark = pytest.mark.django_db(transaction=True)

MB = 1024 * 1024

# A File built in the page from base64 bytes, then handed over as a user's
# paste (a ClipboardEvent carrying it, as a screenshot tool leaves it) or drop
# (dragenter, dragover, then drop with a DataTransfer), at the given element.
HAND_OVER = """
([how, selector, b64, name, type]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
  const target = document.querySelector(selector);
  const init = { bubbles: true, cancelable: true };
  if (how === "paste") {
    const event = new ClipboardEvent("paste", { ...init, clipboardData: data });
    return target.dispatchEvent(event);
  }
  target.dispatchEvent(new DragEvent("dragenter", { ...init, dataTransfer: data }));
  target.dispatchEvent(new DragEvent("dragover", { ...init, dataTransfer: data }));
  const dropping = document.getElementById("chat").dataset.dropping === "1";
  const drop = new DragEvent("drop", { ...init, dataTransfer: data });
  target.dispatchEvent(drop);
  return { dropping, taken: drop.defaultPrevented };
}
"""


def paste(page, raw: bytes, name: str, type: str) -> bool:
    """True when the page took the paste (prevented the default)."""
    payload = ["paste", "#composer-input", base64.b64encode(raw).decode(), name, type]
    return not page.evaluate(HAND_OVER, payload)


def drop(page, raw: bytes, name: str, type: str, on: str = "#messages") -> dict:
    """Whether the conversation showed where the file would land (`dropping`)
    and kept the browser from opening the file in place of the page (`taken`)."""
    payload = ["drop", on, base64.b64encode(raw).decode(), name, type]
    return page.evaluate(HAND_OVER, payload)


def a_file(name: str, type: str, raw: bytes) -> dict:
    return {"name": name, "mimeType": type, "buffer": raw}


def choose(page, *files: dict) -> None:
    """Files chosen in the attach button's dialog."""
    page.set_input_files("#attach-input", files=list(files))


def uploads_to(page) -> list[str]:
    """The methods of the requests the page makes to /attachments/…, as made."""
    made: list[str] = []
    page.on(
        "request",
        lambda request: (
            made.append(request.method) if "/attachments/" in request.url else None
        ),
    )
    return made


@pytest.fixture
def talk(alice, demo_profile):
    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


def chip(page, name: str):
    return page.locator(".file-chip", has_text=name)


def sha256(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


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


def test_a_file_over_the_limit_is_refused_before_it_is_sent(
    live_server_url, page, login, alice, talk, settings, tmp_path
):
    made = uploads_to(page)
    open_conversation(page, login, live_server_url, talk, alice)
    limit = int(page.get_attribute("#composer", "data-attach-max-bytes"))
    assert limit == settings.ATTACHMENT_MAX_BYTES
    page.fill("#composer-input", "Read this log")
    # On disk (a sparse file), so Chromium reads it itself: only its size counts.
    huge = tmp_path / "huge.log"
    with huge.open("wb") as file:
        file.truncate(limit + 5 * MB)
    page.set_input_files("#attach-input", huge)
    expect(page.locator("#alert")).to_have_text(
        f"huge.log is {(limit + 5 * MB) // MB} MB; the limit is {limit // MB} MB"
        " a file. It was not uploaded."
    )
    choose(page, a_file("tool.exe", "application/x-msdownload", b"MZ"))
    expect(page.locator("#alert")).to_contain_text(
        "tool.exe: this type of file cannot be attached"
    )
    expect(page.locator(".file-chip")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("Read this log")
    assert made == []


def test_too_many_files_are_refused_before_they_are_sent(
    live_server_url, page, login, alice, talk, settings
):
    open_conversation(page, login, live_server_url, talk, alice)
    most = settings.ATTACHMENT_MAX_FILES
    files = [
        a_file(f"n{i}.txt", "text/plain", f"note {i}".encode()) for i in range(most + 2)
    ]
    choose(page, *files)
    expect(page.locator(".file-chip")).to_have_count(most)
    expect(page.locator("#alert")).to_contain_text(
        f"n{most}.txt: at most {most} files go with one question."
    )
    expect(page.locator('.file-chip[data-status="ready"]')).to_have_count(most)
    assert Attachment.objects.count() == most


def test_a_refused_upload_keeps_the_typed_text_and_sends_nothing(
    live_server_url, page, login, alice, talk, simulator
):
    open_conversation(page, login, live_server_url, talk, alice)
    page.fill("#composer-input", "My careful question")
    # Text named .pdf: the server refuses it, with its reason on the chip.
    choose(page, a_file("report.pdf", "application/pdf", b"plain words"))
    failed = chip(page, "report.pdf")
    expect(failed).to_have_attribute("data-status", "failed")
    expect(failed.locator(".file-error")).to_contain_text("report.pdf")
    expect(failed.locator(".file-retry")).to_be_hidden()  # it would fail again
    expect(page.locator("#attach-status")).to_contain_text("report.pdf did not upload")

    page.press("#composer-input", "Enter")
    expect(page.locator("#alert")).to_contain_text(
        "Not sent: report.pdf cannot go with it (see the file)."
    )
    expect(page.locator("#composer-input")).to_have_value("My careful question")
    assert not Message.objects.exists()

    page.click("button[aria-label='Remove report.pdf']")
    page.press("#composer-input", "Enter")
    wait_until_done(page)
    expect(page.locator("article.user")).to_have_text("My careful question")
    assert not Attachment.objects.exists()


def test_an_upload_cut_off_can_be_retried(live_server_url, page, login, alice, talk):
    open_conversation(page, login, live_server_url, talk, alice)
    page.fill("#composer-input", "Typed before the cut")
    page.route("**/attachments/", lambda route: route.abort("connectionreset"))
    choose(page, a_file("trace.log", "text/plain", b"line\n" * 100))
    cut = chip(page, "trace.log")
    expect(cut).to_have_attribute("data-status", "failed")
    expect(cut.locator(".file-error")).to_have_text(
        "The upload was interrupted: check the connection and retry."
    )
    assert not Attachment.objects.exists()

    page.unroute("**/attachments/")
    cut.locator(".file-retry").click()
    expect(cut).to_have_attribute("data-status", "ready")
    expect(page.locator("#composer-input")).to_have_value("Typed before the cut")
    assert list(Attachment.objects.values_list("name", flat=True)) == ["trace.log"]


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


def test_a_model_without_vision_takes_documents_only_and_says_why(
    live_server_url, page, login, alice, demo_profile, talk
):
    made = uploads_to(page)
    open_conversation(page, login, live_server_url, talk, alice)
    why = f"{demo_profile.label} cannot see images: {demo_profile.vision_reason()}"
    accept = page.get_attribute("#attach-input", "accept").split(",")
    assert ".pdf" in accept and ".png" not in accept and ".jpg" not in accept
    expect(page.locator("#attach-button")).to_have_attribute(
        "title", f"Attach documents ({why})"
    )
    expect(page.locator("#attach-limits")).to_contain_text(f"No images: {why}")

    page.fill("#composer-input", "Look at this")
    assert paste(page, samples.png(), "image.png", "image/png")
    expect(page.locator("#alert")).to_contain_text(why)
    drop(page, samples.png(), "photo.png", "image/png")
    expect(page.locator("#alert")).to_have_text(f"photo.png: {why}")
    expect(page.locator(".file-chip")).to_have_count(0)
    expect(page.locator("#composer-input")).to_have_value("Look at this")
    assert made == []


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


def test_a_document_too_large_is_given_back_then_sent_truncated(
    live_server_url, page, login, alice, talk, simulator
):
    """The refusal says the numbers; the question and its file are back in the
    composer, and "Send truncated" sends them with the document cut to fit."""
    simulator.config.answer_tokens = 5
    open_conversation(page, login, live_server_url, talk, alice)
    choose(page, a_file("book.txt", "text/plain", b"many words here " * 20_000))
    book = chip(page, "book.txt")
    expect(book).to_have_attribute("data-status", "ready")
    page.fill("#composer-input", "Summarise the book")
    page.press("#composer-input", "Enter")

    alert = page.locator("#alert")
    expect(alert).to_contain_text("this model's context is")
    expect(page.locator("#composer-input")).to_have_value("Summarise the book")
    expect(book).to_have_attribute("data-status", "ready")
    expect(page.locator("#attach-summary")).to_contain_text("1 file")
    assert not Message.objects.exists()

    alert.get_by_role("button", name="Send truncated").click()
    wait_until_done(page)
    expect(page.locator("article.user")).to_contain_text("Summarise the book")
    expect(page.locator("#composer-input")).to_have_value("")
    [document] = Attachment.objects.all()
    assert document.message == Message.objects.get(role="user")
    [received] = simulator.asked[-1].received["documents"]
    assert received["name"] == "book.txt"
    assert 0 < received["chars"] < len(document.text)


def test_images_follow_the_model_chosen_in_the_settings(
    live_server_url, page, login, alice, demo_profile, talk, simulator
):
    """A saved settings change to a model with vision lets the composer take
    images, without reloading the page."""
    seer = ModelProfile.objects.create(
        tag="llava-demo:7b",
        base_url=simulator.url,
        context_length=8192,
        is_demo=True,
        supports_vision=True,
    )
    open_settings(page, login, live_server_url, talk, alice)
    assert ".png" not in page.get_attribute("#attach-input", "accept").split(",")
    choose_model(page, seer)
    expect(page.locator("#attach-button")).to_have_attribute("title", "Attach files")
    assert ".png" in page.get_attribute("#attach-input", "accept").split(",")
    assert paste(page, samples.png(), "image.png", "image/png")
    shot = chip(page, "Pasted image")
    expect(shot).to_have_attribute("data-status", "ready")
    assert Attachment.objects.get().kind == "image"

    # Back to a model without vision: the picture attached says it cannot go.
    choose_model(page, demo_profile)
    expect(shot).to_have_attribute("data-status", "failed")
    expect(shot.locator(".file-error")).to_have_text(
        f"{demo_profile.label} cannot see images: {demo_profile.vision_reason()}"
    )
    page.fill("#composer-input", "And this?")
    page.press("#composer-input", "Enter")
    expect(page.locator("#alert")).to_contain_text("Not sent: Pasted image")
    choose_model(page, seer)
    expect(shot).to_have_attribute("data-status", "ready")
    expect(page.locator("#composer-input")).to_have_value("And this?")


def test_a_refused_question_gives_back_its_text_and_its_files(
    live_server_url, page, login, alice, talk, simulator
):
    simulator.config.answer_tokens = 5
    open_conversation(page, login, live_server_url, talk, alice)
    choose(page, a_file("plan.txt", "text/plain", b"step one"))
    plan = chip(page, "plan.txt")
    expect(plan).to_have_attribute("data-status", "ready")
    # The file is removed meanwhile, by the same user elsewhere (another tab).
    token = page.evaluate(
        "JSON.parse(document.body.getAttribute('hx-headers'))['X-CSRFToken']"
    )
    url = live_server_url + Attachment.objects.get().to_dict()["url"]
    assert page.request.delete(url, headers={"X-CSRFToken": token}).status == 204

    page.fill("#composer-input", "Make a plan")
    page.press("#composer-input", "Enter")
    expect(page.locator("#alert")).to_contain_text("no longer available")
    expect(page.locator("#composer-input")).to_have_value("Make a plan")
    expect(plan).to_have_attribute("data-status", "ready")
    expect(page.locator("#attach-summary")).to_contain_text("1 file")
    assert not Message.objects.exists()

    plan.locator(".file-remove").click()
    page.press("#composer-input", "Enter")
    wait_until_done(page)
    expect(page.locator("article.user")).to_have_text("Make a plan")


def test_a_scanned_pdf_says_it_has_no_text(live_server_url, page, login, alice, talk):
    open_conversation(page, login, live_server_url, talk, alice)
    choose(page, a_file("scan.pdf", "application/pdf", samples.scanned_pdf()))
    scan = chip(page, "scan.pdf")
    expect(scan).to_have_attribute("data-status", "ready")
    expect(scan.locator(".file-note")).to_have_text(Attachment.objects.get().note)
    assert "scanned PDF: no text" in Attachment.objects.get().note
    expect(page.locator("#attach-status")).to_contain_text("scan.pdf uploaded")


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
