"""Regenerate, edit and resend any turn, and walk between branches, in headless
Chromium, with a second tab watching."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from chat.models import Message
from tests.browser.chat_page import ask, open_conversation, wait_until_done

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_tabs(live_server_url, context, login, conversation, alice):
    """The same conversation open in two tabs."""
    first = context.new_page()
    second = context.new_page()
    for page in (first, second):
        open_conversation(page, login, live_server_url, conversation, alice)
    return first, second


def shown_answer(page):
    return page.locator('article.assistant[data-status="done"] .answer')


def test_regenerate_replaces_the_answer_on_screen_in_both_tabs(
    two_tabs, conversation, simulator
):
    simulator.config.think_tokens = 0
    simulator.config.answer_text = "The old answer."
    first, second = two_tabs
    ask(first, "first question")
    wait_until_done(first)
    ask(first, "second question")
    wait_until_done(first, 2)
    wait_until_done(second, 2)
    old = Message.objects.filter(role="assistant").last()
    # Every answer offers to be regenerated.
    expect(first.locator(".regenerate:visible")).to_have_count(2)

    simulator.config.answer_text = "A fresh answer."
    first.locator("article.assistant").last.locator(".regenerate").click()
    for page in (first, second):
        expect(page.locator(f"#message-{old.pk}")).to_have_count(0)
        expect(shown_answer(page)).to_have_text(["The old answer.", "A fresh answer."])
        expect(page.locator("article.user .user-text")).to_have_text(
            ["first question", "second question"]
        )
        expect(page.locator(".version-number")).to_have_text(["2 / 2"])
    assert len(simulator.asked) == 3
    assert simulator.asked[-1].body["messages"] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "The old answer."},
        {"role": "user", "content": "second question"},
    ]
    assert Message.shown.count() == 4
    assert Message.objects.filter(replaced=True).count() == 2  # kept, not shown


def test_edit_and_resend_the_last_question_by_keyboard(
    two_tabs, conversation, simulator
):
    simulator.config.think_tokens = 0
    first, second = two_tabs
    ask(first, "first question")
    wait_until_done(first)
    ask(first, "secnd\nquestion")
    wait_until_done(first, 2)
    # Every question offers an edit.
    expect(first.locator(".edit-message:visible")).to_have_count(2)
    edit = first.locator("article.user").last.locator(".edit-message")

    edit.focus()
    first.keyboard.press("Enter")
    field = first.locator(".edit-input")
    expect(field).to_be_focused()
    expect(field).to_have_value("secnd\nquestion")
    first.keyboard.press("Escape")  # cancel: nothing sent, nothing changed
    expect(field).to_have_count(0)
    expect(edit).to_be_focused()
    assert len(simulator.asked) == 2

    first.keyboard.press("Enter")
    field.fill("   ")
    field.press("Enter")  # a blank question is not sent, and the field stays
    expect(first.locator("#alert")).to_have_text("Type a message before resending.")
    field.fill("second question")
    field.press("Shift+Enter")  # a new line, not a send
    expect(field).to_have_value("second question\n")
    field.press("Backspace")
    field.press("Enter")
    for page in (first, second):
        expect(page.locator("article.user .user-text")).to_have_text(
            ["first question", "second question"]
        )
        expect(page.locator(".edit-input")).to_have_count(0)
        wait_until_done(page, 2)
    expect(first.locator("#composer-input")).to_be_focused()
    assert simulator.asked[-1].body["messages"][-1] == {
        "role": "user",
        "content": "second question",
    }
    assert list(Message.shown.values_list("role", flat=True)) == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


def test_an_edit_refused_while_another_tab_streams_keeps_its_text(
    two_tabs, conversation, simulator
):
    simulator.config.think_tokens = 0
    first, second = two_tabs
    ask(first, "question")
    wait_until_done(first)
    first.locator(".edit-message").click()
    first.locator(".edit-input").fill("question, reworded")
    # Meanwhile the other tab asks something else, slowly.
    simulator.config.tps = 20
    simulator.config.answer_tokens = 400
    ask(second, "another question")
    expect(first.locator('article[data-status="streaming"]')).to_have_count(1)
    first.locator(".edit-resend").click()
    expect(first.locator("#alert")).to_have_text(
        "Wait for the current answer, or stop it."
    )
    expect(first.locator(".edit-input")).to_have_value("question, reworded")
    second.locator("#stop-button").click()
    expect(first.locator('article.assistant[data-status="stopped"]')).to_have_count(1)
    # No longer the last question, but any question can be asked again: the
    # other tab's question stays on the old branch.
    simulator.config.tps = 0
    simulator.config.answer_text = "Reworded, answered."
    first.locator(".edit-resend").click()
    for page in (first, second):
        expect(page.locator("article.user .user-text")).to_have_text(
            ["question, reworded"]
        )
        expect(shown_answer(page)).to_have_text(["Reworded, answered."])
    assert simulator.asked[-1].body["messages"] == [
        {"role": "user", "content": "question, reworded"}
    ]
    assert Message.objects.filter(content="another question", replaced=True).exists()


@pytest.fixture
def answered(conversation):
    """A question and its answer, stored before the tabs open."""
    conversation.messages.create(role="user", content="question")
    conversation.messages.create(role="assistant", content="The first answer.")


def test_choose_a_version_of_the_answer_by_keyboard_and_keep_it_after_a_reload(
    answered, two_tabs, simulator
):
    first, second = two_tabs
    expect(shown_answer(first)).to_have_text(["The first answer."])
    expect(first.locator(".versions")).to_have_count(0)  # one version: no control

    simulator.config.think_tokens = 0
    simulator.config.answer_text = "The second answer."
    first.locator(".regenerate:visible").click()
    for page in (first, second):
        expect(shown_answer(page)).to_have_text(["The second answer."])
        expect(page.locator(".version-number")).to_have_text("2 / 2")
    previous = first.get_by_role("button", name="Version 2 of 2, previous version")
    expect(
        first.get_by_role("button", name="Version 2 of 2, next version")
    ).to_be_disabled()

    previous.focus()
    first.keyboard.press("Enter")
    for page in (first, second):
        expect(shown_answer(page)).to_have_text(["The first answer."])
        expect(page.locator(".version-number")).to_have_text("1 / 2")
        expect(page.locator("article.user .user-text")).to_have_text(["question"])
    # The previous step is at its end: the next one has the focus, to go back.
    expect(
        first.get_by_role("button", name="Version 1 of 2, next version")
    ).to_be_focused()
    expect(
        first.get_by_role("button", name="Version 1 of 2, previous version")
    ).to_be_disabled()

    first.reload()
    expect(shown_answer(first)).to_have_text(["The first answer."])
    expect(first.locator(".version-number")).to_have_text("1 / 2")
    assert len(simulator.asked) == 1  # switching asks the model nothing
    assert list(Message.shown.values_list("content", flat=True)) == [
        "question",
        "The first answer.",
    ]


@pytest.fixture
def five_turns(conversation):
    """Five questions answered, stored before the tabs open."""
    for n in range(1, 6):
        conversation.messages.create(role="user", content=f"q{n}")
        conversation.messages.create(role="assistant", content=f"a{n}")


def turns(page):
    return page.locator("article.user .user-text, article.assistant .answer")


def test_edit_the_second_of_five_questions_then_walk_back_to_the_old_branch(
    five_turns, two_tabs, simulator
):
    first, second = two_tabs
    old_branch = [f"{kind}{n}" for n in range(1, 6) for kind in "qa"]
    expect(turns(first)).to_have_text(old_branch)
    expect(first.locator(".versions")).to_have_count(0)
    simulator.config.think_tokens = 0

    # Edit question two: a new branch, asked with the history above it only.
    simulator.config.answer_text = "a2b"
    first.locator("article.user").nth(1).locator(".edit-message").click()
    first.locator(".edit-input").fill("q2b")
    first.locator(".edit-input").press("Enter")
    for page in (first, second):
        expect(turns(page)).to_have_text(["q1", "a1", "q2b", "a2b"])
        expect(page.locator(".version-number")).to_have_text(["2 / 2"])
    assert simulator.asked[-1].body["messages"] == [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2b"},
    ]

    # Back at turn two with its version control: turns three to five return.
    first.get_by_role("button", name="Version 2 of 2, previous version").click()
    for page in (first, second):
        expect(turns(page)).to_have_text(old_branch)
        expect(page.locator(".version-number")).to_have_text(["1 / 2"])
    expect(
        first.get_by_role("button", name="Version 1 of 2, next version")
    ).to_be_focused()
    first.reload()
    expect(turns(first)).to_have_text(old_branch)
    expect(first.locator(".version-number")).to_have_text(["1 / 2"])
    expect(first.locator("#chat")).to_have_attribute("data-connected", "1")

    # A question on the old branch is asked with that branch's history.
    simulator.config.answer_text = "a6"
    ask(first, "q6")
    for page in (first, second):
        expect(turns(page)).to_have_text([*old_branch, "q6", "a6"])
    assert [m["content"] for m in simulator.asked[-1].body["messages"]] == [
        *old_branch,
        "q6",
    ]
    assert len(simulator.asked) == 2  # switching asks the model nothing


MATRIX_ANSWER = r"""A matrix:

$$
\begin{pmatrix} a_1 & b \\ c & d_2 \end{pmatrix}
$$

and inline $x_1 \\ y_2$ too."""

TEX_SOURCES = """() => [...document.querySelectorAll(
  'article.assistant .answer annotation[encoding="application/x-tex"]'
)].map((e) => e.textContent.trim())"""


def test_math_typesets_the_same_after_a_reload(
    live_server_url, page, login, conversation, alice, simulator
):
    """The server's markdown keeps TeX intact (`\\\\` rows, `_` subscripts)."""
    simulator.config.think_tokens = 0
    simulator.config.answer_text = MATRIX_ANSWER
    open_conversation(page, login, live_server_url, conversation, alice)
    ask(page)
    wait_until_done(page)
    streamed = page.evaluate(TEX_SOURCES)
    assert streamed == [
        r"\begin{pmatrix} a_1 & b \\ c & d_2 \end{pmatrix}",
        r"x_1 \\ y_2",
    ]
    page.reload()
    expect(page.locator("article.assistant .katex")).to_have_count(2)
    assert page.evaluate(TEX_SOURCES) == streamed
    expect(page.locator("article.assistant .math-source")).to_have_count(0)
