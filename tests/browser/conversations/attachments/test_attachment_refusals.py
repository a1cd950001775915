"""The composer's attachments in Chromium when something is refused or goes
wrong (static/chat/attachments.js): what the browser can refuse is refused
before anything is sent, a model without vision takes documents only, an
upload cut off can be retried, and nothing typed is ever lost."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Attachment, Conversation, Message, ModelProfile
from tests.browser.chat_page import (
    choose_model,
    open_conversation,
    open_settings,
    wait_until_done,
)
from tests.browser.conversations.attachments.attachment_page import (
    MB,
    a_file,
    chip,
    choose,
    drop,
    paste,
    uploads_to,
)
from tests.files import samples

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def talk(alice, demo_profile):
    return Conversation.objects.create(owner=alice, model_profile=demo_profile)


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
