"""Every URL of the site, walked: every POST needs a CSRF token, no page shows
bob an object of alice's by its id, the admin's pages send non-staff away."""

from __future__ import annotations

import itertools

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation, Message
from tests.web.security.urlconf import (
    API_ROUTES,
    PUBLIC_URL_NAMES,
    urls_for,
    walked_routes,
)

# --------------------------------------------------------------------------
# HTTP: CSRF on every POST, nobody else's objects by id


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "alice"])
def test_every_post_needs_a_csrf_token(alice, signed_in):
    client = Client(enforce_csrf_checks=True)
    if signed_in:
        client.force_login(alice)
    conversation = Conversation.objects.create(owner=alice)
    seen = set()
    for route, pattern, namespace in itertools.chain(
        walked_routes(with_parameters=False), walked_routes(with_parameters=True)
    ):
        url = next(urls_for(route, [conversation.pk]))
        response = client.post(url, {"title": "x", "username": "alice"})
        if route.lstrip("^").startswith(API_ROUTES):
            # The API is signed in by a key, never by the session cookie, so
            # CSRF cannot apply: without a key it refuses (chat.api.auth).
            assert response.status_code in (401, 404, 405), (url, response.status_code)
            continue
        assert response.status_code in (403, 405), (url, response.status_code)
        if response.status_code == 403:
            assert b"CSRF" in response.content, url
        seen.add(f"{namespace}:{pattern.name}" if namespace else pattern.name)
    assert {
        "login",
        "logout",
        "setup",
        "new_conversation",
        "rename_conversation",
        "delete_conversation",
        "set_thinking",
        "admin:login",
        "admin:chat_conversation_change",
    } <= seen


@pytest.fixture
def alices_objects(alice):
    """Ids of everything alice owns; bob owns nothing, so no id is his."""
    conversation = Conversation.objects.create(owner=alice, title="alice's secret")
    question = Message.objects.create(
        conversation=conversation, role="user", content="secret question"
    )
    answer = Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="secret answer",
        status=Message.Status.DONE,
    )
    return [conversation.pk, question.pk, answer.pk]


@pytest.mark.django_db
def test_no_page_shows_bob_an_object_of_alices_by_id(bob_client, alices_objects):
    walked = set()
    for route, pattern, namespace in walked_routes(with_parameters=True):
        name = f"{namespace}:{pattern.name}" if namespace else pattern.name
        if namespace == "admin" or name in PUBLIC_URL_NAMES:
            continue  # the admin: see the next test
        for url in urls_for(route, alices_objects):
            get, post = bob_client.get(url), bob_client.post(url)
            statuses = (get.status_code, post.status_code)
            assert set(statuses) <= {404, 405} and 404 in statuses, (url, statuses)
        walked.add(name)
    assert {
        "conversation",
        "conversation_item",
        "set_thinking",
        "rename_conversation",
        "delete_conversation",
        "message_source",
        "show_version",
    } <= walked
    assert Conversation.objects.get(pk=alices_objects[0]).title == "alice's secret"
    assert Message.objects.filter(conversation_id=alices_objects[0]).count() == 2


@pytest.mark.django_db
def test_admin_pages_send_non_staff_to_the_admin_sign_in(bob_client, alices_objects):
    walked = 0
    for route, _pattern, namespace in walked_routes(with_parameters=True):
        if namespace != "admin":
            continue
        for url in urls_for(route, alices_objects[:2]):
            response = bob_client.get(url)
            assert response.status_code == 302, url
            assert response.url.startswith(reverse("admin:login")), url
            walked += 1
    assert walked > 10
