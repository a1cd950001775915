"""A link's viewers never see the model server's address or its own error
text: an answer's failure is told them in the code's plain sentence
(chat.models.shared_messages.viewer_detail); the owner keeps the whole detail."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.live.protocol import frames
from chat.live.protocol.share_frames import Ordinals, for_viewer
from chat.models import Conversation, Message, ShareLink

pytestmark = pytest.mark.django_db

INTERNAL = "http://10.20.30.40:11434"
DETAIL = f"The model server at {INTERNAL} did not answer: connection refused."


@pytest.fixture
def failed(alice, demo_profile):
    conversation = Conversation.objects.create(owner=alice, model_profile=demo_profile)
    conversation.messages.create(role="user", content="Hello?")
    answer = conversation.messages.create(
        role="assistant",
        status=Message.Status.ERROR,
        error_code="upstream_unreachable",
        error_detail=DETAIL,
    )
    return conversation, answer


def test_the_shared_page_names_no_model_server(client, alice_client, failed):
    conversation, _ = failed
    _, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    shared = client.get(f"/s/{token}/").content.decode()
    assert INTERNAL not in shared and "10.20.30.40" not in shared
    assert "The model server could not be reached." in shared
    own = alice_client.get(reverse("conversation", args=[conversation.pk]))
    assert INTERNAL in own.content.decode()


def test_a_viewers_frames_name_no_model_server(failed):
    conversation, answer = failed
    link, token = ShareLink.create_for(conversation, mode=ShareLink.Mode.LIVE)
    ordinals = Ordinals(list(conversation.messages.values_list("pk", flat=True)))
    error = frames.error(answer.pk, "upstream_unreachable", DETAIL)
    message = frames.message(answer)
    assert INTERNAL in str(error) and INTERNAL in str(message)  # the owner's

    shown_error = for_viewer(error, link, token, ordinals)
    shown_message = for_viewer(message, link, token, ordinals)
    assert shown_error is not None and shown_message is not None
    assert INTERNAL not in str(shown_error) and INTERNAL not in str(shown_message)
    assert shown_error["detail"] == "The model server could not be reached."
    assert shown_message["message"]["error_detail"] == shown_error["detail"]
    # An error about the viewer's own frame keeps its detail.
    refused = frames.error(None, "read_only", "This shared conversation is read-only.")
    assert for_viewer(refused, link, token, ordinals) == refused
