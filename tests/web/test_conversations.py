from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from chat.models import Conversation, Message, ModelProfile, turn_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def profile():
    return ModelProfile.objects.create(
        tag="qwen3-demo:8b",
        base_url="http://127.0.0.1:1",
        supports_thinking=True,
        is_demo=True,
    )


@pytest.fixture
def own(alice, profile):
    return Conversation.objects.create(owner=alice, model_profile=profile, title="Mine")


def test_first_visit_with_no_users_offers_to_create_the_admin(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url == reverse("setup")
    response = client.post(
        reverse("setup"),
        {
            "username": "root",
            "password1": "a-long-pass-phrase-9",
            "password2": "a-long-pass-phrase-9",
        },
    )
    assert response.status_code == 302
    user = get_user_model().objects.get()
    assert user.is_superuser and user.is_staff
    assert client.get("/").status_code == 200


def test_setup_is_closed_once_a_user_exists(client, alice):
    assert client.get(reverse("setup")).url == reverse("home")


def test_setup_form_errors_are_shown(client):
    response = client.post(
        reverse("setup"), {"username": "root", "password1": "a", "password2": "b"}
    )
    assert response.status_code == 200
    assert not get_user_model().objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in(client, alice, own):
    assert client.get("/").url == reverse("login")
    assert client.get(own.get_absolute_url()).url.startswith(reverse("login"))


def test_sign_in_page_works(client, alice):
    response = client.post(
        reverse("login"), {"username": "alice", "password": "password-alice-123"}
    )
    assert response.status_code == 302


def test_new_conversation_uses_the_default_model(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"))
    conversation = Conversation.objects.get()
    assert response.url == conversation.get_absolute_url()
    assert conversation.model_profile == profile and conversation.owner == alice


def test_new_conversation_needs_post(client, alice):
    client.force_login(alice)
    assert client.get(reverse("new_conversation")).status_code == 405


def test_the_home_page_is_a_composer(client, alice, profile):
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert 'id="home-composer"' in page and 'name="content"' in page
    assert f'action="{reverse("new_conversation")}"' in page


def test_a_question_from_home_goes_to_its_new_conversation_page(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "\nHello <b>"})
    conversation = Conversation.objects.get()
    assert response.url == conversation.get_absolute_url()
    assert not conversation.messages.exists()  # the page sends it, over its socket
    page = client.get(response.url).content.decode()
    assert 'data-first-question="\nHello &lt;b&gt;"' in page
    carried = client.session["chat.first_question"]
    assert f'data-first-client-id="{carried["client_id"]}"' in page
    # Until it is stored, a reload carries it again; then never again.
    assert "data-first-question" in client.get(response.url).content.decode()
    conversation.messages.create(
        role=Message.Role.USER, content="\nHello <b>", client_id=carried["client_id"]
    )
    assert "data-first-question" not in client.get(response.url).content.decode()
    assert "chat.first_question" not in client.session


def test_the_home_question_is_only_for_its_own_conversation(client, alice, own):
    own.messages.create(role=Message.Role.USER, content="Earlier")
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "Hi"})
    assert response.url != own.get_absolute_url()
    assert (
        "data-first-question" not in client.get(own.get_absolute_url()).content.decode()
    )


def test_a_blank_question_from_home_only_opens_a_conversation(client, alice, profile):
    client.force_login(alice)
    response = client.post(reverse("new_conversation"), {"content": "  "})
    assert response.status_code == 302
    assert "chat.first_question" not in client.session


def test_a_too_long_question_from_home_stays_in_its_field(
    client, alice, profile, settings
):
    client.force_login(alice)
    settings.MESSAGE_MAX_CHARS = 5
    response = client.post(reverse("new_conversation"), {"content": "too long"})
    assert response.status_code == 422
    page = response.content.decode()
    assert ">\ntoo long</textarea>" in page and 'id="home-error"' in page
    assert not Conversation.objects.exists()


def test_conversation_page_shows_messages_and_marks_the_demo(client, alice, own):
    own.messages.create(role="user", content="<b>hi</b>")
    own.messages.create(
        role="assistant",
        content="**bold** answer",
        thinking="hmm",
        thinking_ms=2500,
        status="done",
    )
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert "&lt;b&gt;hi&lt;/b&gt;" in page
    assert "<strong>bold</strong> answer" in page
    assert "Thought for 2.5 s" in page
    assert "demo model" in page
    assert f'data-ws-path="/ws/conversations/{own.pk}/"' in page


def test_streaming_answer_renders_its_partial_text_and_offsets(client, alice, own):
    own.messages.create(
        role="assistant", content="héllo 👋", thinking="ab", status="streaming"
    )
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert 'data-status="streaming"' in page
    assert 'data-content-length="7"' in page and 'data-thinking-length="2"' in page
    assert '<div class="answer streaming">héllo 👋</div>' in page


def test_someone_elses_conversation_is_not_found(client, bob, own):
    client.force_login(bob)
    assert client.get(own.get_absolute_url()).status_code == 404
    assert (
        client.post(
            reverse("set_thinking", args=[own.pk]), {"thinking": "off"}
        ).status_code
        == 404
    )


def test_sidebar_lists_only_my_conversations(client, alice, bob, own):
    bobs = Conversation.objects.create(owner=bob, title="Bobs secret")
    for conversation in (own, bobs):  # (one that never got a message is not listed)
        conversation.messages.create(role="user", content="hello")
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert "Mine" in page and "Bobs secret" not in page


def test_thinking_toggle_saves_and_returns_the_partial(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("set_thinking", args=[own.pk]),
        {"thinking": "off"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "chat/_thinking_toggle.html"
    own.refresh_from_db()
    assert own.thinking == "off"


def test_thinking_toggle_without_htmx_redirects_back(client, alice, own):
    client.force_login(alice)
    response = client.post(reverse("set_thinking", args=[own.pk]), {"thinking": "on"})
    assert response.url == own.get_absolute_url()


def test_thinking_toggle_rejects_unknown_values(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("set_thinking", args=[own.pk]),
        {"thinking": "maybe"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    own.refresh_from_db()
    assert own.thinking == "default"


def test_thinking_toggle_is_disabled_for_a_model_without_thinking(
    client, alice, own, profile
):
    profile.supports_thinking = False
    profile.save()
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    assert 'name="thinking" disabled' in page
    assert "has no thinking mode" in page


def test_home_says_when_no_model_is_set_up(client, admin_user):
    client.force_login(admin_user)
    page = client.get("/").content.decode()
    assert "No model is set up yet" in page
    assert reverse("admin:chat_modelprofile_changelist") in page


# Sidebar: rename and delete (htmx), and the answer's source for its copy button.


def htmx(page_path=None):
    """Headers of an htmx request made from ``page_path``."""
    headers = {"HTTP_HX_REQUEST": "true"}
    if page_path:
        headers["HTTP_HX_CURRENT_URL"] = f"http://testserver{page_path}"
    return headers


def test_rename_form_and_rename(client, alice, own):
    client.force_login(alice)
    url = reverse("rename_conversation", args=[own.pk])
    form = client.get(url, **htmx())
    assert form.status_code == 200
    assert [t.name for t in form.templates][0] == "chat/_rename_form.html"
    assert 'value="Mine"' in form.content.decode()
    response = client.post(url, {"title": "  Renamed  "}, **htmx("/"))
    assert response.status_code == 200
    assert [t.name for t in response.templates][0] == "chat/_conversation_item.html"
    page = response.content.decode()
    assert ">Renamed</a>" in page and 'aria-current="page"' not in page
    own.refresh_from_db()
    assert own.title == "Renamed"


def test_renaming_from_the_conversations_own_page_marks_it_current(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]),
        {"title": "Here"},
        **htmx(own.get_absolute_url()),
    )
    assert 'aria-current="page"' in response.content.decode()


@pytest.mark.parametrize(
    ("language", "says"),
    [("en", "Give it a title."), ("zh-CN,zh;q=0.9", "请填写标题。")],
)
def test_rename_refuses_an_empty_title(client, alice, own, language, says):
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]),
        {"title": "   "},
        HTTP_ACCEPT_LANGUAGE=language,
        **htmx(),
    )
    assert response.status_code == 422  # swapped in by htmx (see _base.html)
    assert says in response.content.decode()  # in the reader's language
    own.refresh_from_db()
    assert own.title == "Mine"


def test_rename_without_htmx_has_its_own_page_and_redirects(client, alice, own):
    client.force_login(alice)
    url = reverse("rename_conversation", args=[own.pk])
    page = client.get(url)
    assert page.status_code == 200 and "<html" in page.content.decode()
    response = client.post(url, {"title": "Plain form"})
    assert response.url == own.get_absolute_url()
    own.refresh_from_db()
    assert own.title == "Plain form"


def test_rename_needs_a_csrf_token(alice, own):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(
        reverse("rename_conversation", args=[own.pk]), {"title": "x"}, **htmx()
    )
    assert response.status_code == 403


def test_cancel_returns_the_sidebar_entry(client, alice, own):
    client.force_login(alice)
    response = client.get(reverse("conversation_item", args=[own.pk]), **htmx())
    assert response.status_code == 200
    assert f'id="conversation-item-{own.pk}"' in response.content.decode()


def test_delete_removes_the_conversation_and_its_messages(client, alice, own):
    own.messages.create(role="user", content="hi")
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx("/"))
    assert response.status_code == 200 and response.content == b""
    assert "HX-Redirect" not in response
    assert not Conversation.objects.exists()
    assert not Message.objects.exists()


def test_deleting_the_open_conversation_sends_the_page_home(client, alice, own):
    client.force_login(alice)
    response = client.post(
        reverse("delete_conversation", args=[own.pk]), **htmx(own.get_absolute_url())
    )
    assert response["HX-Redirect"] == reverse("home")


def test_delete_without_htmx_redirects_home(client, alice, own):
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]))
    assert response.url == reverse("home")
    assert not Conversation.objects.exists()


def test_delete_needs_post(client, alice, own):
    client.force_login(alice)
    assert client.get(reverse("delete_conversation", args=[own.pk])).status_code == 405
    assert Conversation.objects.exists()


def test_delete_waits_for_a_running_answer(client, alice, own):
    own.messages.create(role="assistant", status="streaming", content="partial")
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx())
    assert response.status_code == 409
    assert "stop it first" in response.content.decode()
    assert Conversation.objects.exists()


def test_delete_is_allowed_once_a_streaming_answer_is_orphaned(client, alice, own):
    answer = own.messages.create(role="assistant", status="streaming")
    Message.objects.filter(pk=answer.pk).update(
        updated_at=timezone.now() - timedelta(minutes=1)
    )
    client.force_login(alice)
    response = client.post(reverse("delete_conversation", args=[own.pk]), **htmx())
    assert response.status_code == 200
    assert not Conversation.objects.exists()


def test_message_source_is_the_markdown_as_plain_text(client, alice, own):
    answer = own.messages.create(
        role="assistant", status="done", content="**bold** <b>x</b> é 👋"
    )
    client.force_login(alice)
    response = client.get(reverse("message_source", args=[own.pk, answer.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == "**bold** <b>x</b> é 👋"


def test_finished_answers_carry_a_copy_button(client, alice, own):
    answer = own.messages.create(role="assistant", status="done", content="Hi")
    client.force_login(alice)
    page = client.get(own.get_absolute_url()).content.decode()
    source = reverse("message_source", args=[own.pk, answer.pk])
    assert f'data-source-url="{source}"' in page


@pytest.mark.parametrize(
    ("name", "method", "extra"),
    [
        ("conversation_item", "get", ()),
        ("rename_conversation", "get", ()),
        ("rename_conversation", "post", ()),
        ("delete_conversation", "post", ()),
        ("message_source", "get", ("answer",)),
    ],
)
def test_someone_elses_conversation_cannot_be_touched(
    client, bob, own, name, method, extra
):
    answer = own.messages.create(role="assistant", status="done", content="secret")
    args = [own.pk] + [answer.pk for _ in extra]
    client.force_login(bob)
    response = getattr(client, method)(
        reverse(name, args=args), {"title": "pwned"} if method == "post" else {}
    )
    assert response.status_code == 404
    own.refresh_from_db()
    assert own.title == "Mine"


def test_signed_out_visitors_are_sent_to_sign_in(client, own):
    response = client.post(reverse("delete_conversation", args=[own.pk]))
    assert response.url.startswith(reverse("login"))
    assert Conversation.objects.exists()


def test_a_message_of_another_conversation_is_not_found(client, alice, own, profile):
    other = Conversation.objects.create(owner=alice, model_profile=profile)
    answer = other.messages.create(role="assistant", status="done", content="x")
    client.force_login(alice)
    url = reverse("message_source", args=[own.pk, answer.pk])
    assert client.get(url).status_code == 404


# The versions of a turn ("‹ 1 / 2 ›").


@pytest.fixture
def regenerated(own):
    """A question answered twice (a regenerate); the second answer shown."""
    own.messages.create(role="user", content="the question")
    own.messages.create(role="assistant", content="The first answer.")
    turn = turn_rows.begin_regenerate(own).turn
    turn.answer.content, turn.answer.status = "The second answer.", "done"
    turn.answer.save()
    return own


def versions(conversation):
    """The first turn's versions: (question, answer) ids, oldest first."""
    questions = Message.objects.filter(
        conversation=conversation, role="user", parent=None
    ).order_by("pk")
    return [[q.pk, Message.objects.get(parent=q).pk] for q in questions]


def test_the_last_answer_shows_its_versions(client, alice, regenerated):
    client.force_login(alice)
    html = client.get(regenerated.get_absolute_url()).content.decode()
    assert html.count('class="versions"') == 1
    assert '<span class="version-number">2 / 2</span>' in html
    assert 'aria-label="Version 2 of 2, previous version"' in html
    assert 'aria-label="Version 2 of 2, next version" title="Next version">' in html


def test_show_version_swaps_in_the_chosen_version(client, alice, regenerated):
    first, second = versions(regenerated)
    client.force_login(alice)
    response = client.post(reverse("show_version", args=[regenerated.pk, first[0]]))
    assert response.status_code == 200
    sent = response.json()["frames"]
    assert sent[0] == {"type": "removed", "message_ids": second}
    assert [f["message"]["id"] for f in sent[1:]] == first
    answer_html = sent[2]["message"]["html"]
    assert "The first answer." in answer_html
    assert '<span class="version-number">1 / 2</span>' in answer_html
    # A reload shows the chosen version.
    html = client.get(regenerated.get_absolute_url()).content.decode()
    assert "The first answer." in html and "The second answer." not in html
    assert '<span class="version-number">1 / 2</span>' in html


def test_show_version_is_refused_while_an_answer_is_written(client, alice, regenerated):
    first, _ = versions(regenerated)
    regenerated.messages.filter(role="assistant").update(status="streaming")
    client.force_login(alice)
    url = reverse("show_version", args=[regenerated.pk, first[0]])
    response = client.post(url)
    assert response.status_code == 409
    assert response.content.decode() == "Wait for the current answer, or stop it."
    assert "The second answer." in regenerated.messages.values_list(
        "content", flat=True
    )


def test_show_version_of_something_else_is_not_found(client, alice, regenerated):
    earlier = regenerated.messages.create(role="assistant", content="not a question")
    client.force_login(alice)
    for message_id in (earlier.pk, 10_000, 2**70):
        url = reverse("show_version", args=[regenerated.pk, message_id])
        response = client.post(url)
        assert response.status_code == 404
    assert client.get(url).status_code == 405


def test_show_version_needs_the_csrf_token(alice, regenerated):
    first, second = versions(regenerated)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = reverse("show_version", args=[regenerated.pk, first[0]])
    assert client.post(url).status_code == 403
    assert list(regenerated.messages.values_list("pk", flat=True)) == second
