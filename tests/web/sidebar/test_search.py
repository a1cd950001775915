"""The search view (chat.web.sidebar.search) and a search hit's page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation, Message
from chat.models.conversations import AROUND_PAGES
from chat.models.paging import page_size
from tests.support.conversations import add_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def whales(alice: Any) -> Conversation:
    conversation = Conversation.objects.create(owner=alice, title="Whales")
    Message.objects.append_branch(
        [
            Message(conversation=conversation, role="user", content="Are whales fish?"),
            Message(
                conversation=conversation,
                role="assistant",
                content="No: whales are <b>mammals</b>. 鲸鱼是哺乳动物。",
            ),
        ]
    )
    return conversation


def _htmx(client: Client, **params: str) -> Any:
    return client.get(reverse("search"), params, HTTP_HX_REQUEST="true")


def test_results_link_to_the_message_with_a_marked_snippet(
    alice_client: Client, whales: Conversation
) -> None:
    response = _htmx(alice_client, q="mammals")
    assert response.status_code == 200
    body = response.content.decode()
    answer = whales.messages.get(role="assistant")
    assert f'href="/c/{whales.pk}/?message={answer.pk}#message-{answer.pk}"' in body
    assert "<mark>mammals</mark>" in body
    assert "&lt;b&gt;" in body  # the text is escaped, not rendered
    assert "<html" not in body  # a partial


def test_chinese_from_the_view(alice_client: Client, whales: Conversation) -> None:
    body = _htmx(alice_client, q="哺乳动物").content.decode()
    assert "<mark>哺乳动物</mark>" in body


def test_without_javascript_a_whole_page(alice_client: Client, whales: Any) -> None:
    response = alice_client.get(reverse("search"), {"q": "whales"})
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" in body and 'value="whales"' in body
    assert "<mark>whales</mark>" in body.lower() or "<mark>Whales</mark>" in body


def test_nothing_found_says_so(alice_client: Client, whales: Any) -> None:
    body = _htmx(alice_client, q="zebras").content.decode()
    assert "Nothing found for “zebras”." in body


def test_an_empty_query_shows_nothing(alice_client: Client, whales: Any) -> None:
    body = _htmx(alice_client, q="  ").content.decode()
    assert "search-hit" not in body and "Nothing found" not in body


def test_a_query_too_long_is_explained(alice_client: Client) -> None:
    response = _htmx(alice_client, q="x" * 500)
    assert response.status_code == 422
    assert (
        "Search for at most 200 characters (this is 500)." in response.content.decode()
    )


@pytest.mark.parametrize(
    "raw",
    [
        "%00",
        "a%00b",
        "%ED%A0%80",  # a lone surrogate, as UTF-8 would carry one
        "%FF%FE",  # not UTF-8 at all
        "%27%20OR%201%3D1%20--",
        "%22",
        "%25_%5C",
        "NEAR(",
        "*",
    ],
)
def test_odd_queries_are_answered(alice_client: Client, whales: Any, raw: str) -> None:
    response = alice_client.get(f"/search/?q={raw}", HTTP_HX_REQUEST="true")
    assert response.status_code == 200


def test_another_users_text_is_never_shown(bob: Any, whales: Any) -> None:
    client = Client()
    client.force_login(bob)
    assert "search-hit" not in _htmx(client, q="whales").content.decode()


def test_signed_out_is_sent_to_sign_in(client: Client) -> None:
    response = client.get(reverse("search"), {"q": "x"})
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_more_results_a_page_at_a_time(alice_client: Client, alice: Any) -> None:
    for n in range(25):
        conversation = Conversation.objects.create(owner=alice, title=f"T{n}")
        Message.objects.append_branch(
            [Message(conversation=conversation, role="user", content=f"krill {n}")]
        )
    body = _htmx(alice_client, q="krill").content.decode()
    assert body.count('class="search-hit"') == 20
    more = re.search(r'hx-get="([^"]+limit=40)"', body)
    assert more is not None
    body = alice_client.get(more.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true")
    text = body.content.decode()
    assert text.count('class="search-hit"') == 25
    assert "More results" not in text


def _shown_ids(body: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-message-id="(\d+)"', body)]


def test_a_hit_near_the_end_opens_a_page_down_to_the_newest(
    alice_client: Client, alice: Any
) -> None:
    conversation = Conversation.objects.create(owner=alice, title="Long")
    ids = add_messages(conversation, 3 * page_size())
    target = ids[page_size()]  # two pages from the end
    url = reverse("conversation", args=[conversation.pk])
    body = alice_client.get(url, {"message": target}).content.decode()
    shown = _shown_ids(body)
    assert target in shown and shown[-1] == ids[-1]
    assert shown.index(target) == page_size() // 2  # half a page above it
    assert f'data-target-message="{target}"' in body
    assert 'id="around-note"' not in body
    assert 'id="composer" autocomplete="off">' in body  # the composer is there


def test_a_hit_far_up_opens_a_page_of_its_own(alice_client: Client, alice: Any) -> None:
    conversation = Conversation.objects.create(owner=alice, title="Longer")
    ids = add_messages(conversation, (AROUND_PAGES + 3) * page_size())
    target = ids[page_size()]
    url = reverse("conversation", args=[conversation.pk])
    body = alice_client.get(url, {"message": target}).content.decode()
    shown = _shown_ids(body)
    assert target in shown and ids[-1] not in shown
    assert len(shown) == page_size()
    assert 'id="around-note"' in body
    assert 'id="composer" autocomplete="off" hidden>' in body
    assert f'hx-get="/c/{conversation.pk}/messages/before/{shown[0]}/"' in body or (
        f"/c/{conversation.pk}/messages/before/{shown[0]}/" in body
    )


@pytest.mark.parametrize("message", ["abc", "-1", "١٢", "9" * 40, ""])
def test_a_bad_message_parameter_opens_the_newest_page(
    alice_client: Client, whales: Conversation, message: str
) -> None:
    url = reverse("conversation", args=[whales.pk])
    response = alice_client.get(url, {"message": message})
    assert response.status_code == 200
    assert "data-target-message" not in response.content.decode()


def test_another_conversations_message_opens_the_newest_page(
    alice_client: Client, alice: Any, whales: Conversation
) -> None:
    other = Conversation.objects.create(owner=alice, title="Other")
    [message] = add_messages(other, 1)
    url = reverse("conversation", args=[whales.pk])
    body = alice_client.get(url, {"message": message}).content.decode()
    assert _shown_ids(body) == list(whales.messages.values_list("pk", flat=True))
