"""`/metrics`: who may read it, and what it says after answers finished."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured
from django.test import AsyncClient
from prometheus_client.parser import text_string_to_metric_families

from chat.live.engine import loop_state
from chat.models import Conversation, Message, Ticket
from chat.ops.metrics import REGISTRY, observe_answer, queue_length
from chatsite.asgi import application
from chatsite.env import env_token
from tests.support.communicators import ORIGIN, WebsocketCommunicator

TOKEN = "metrics-token-0123456789"
MODEL = "qwen3-demo:8b"


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.METRICS_TOKEN = TOKEN


def samples(body: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong-token-0123456789", f"Basic {TOKEN}"]
)
def test_refused_without_token_or_staff(client, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 403
    assert "metrics token" in response.content.decode()


@pytest.mark.django_db
def test_refused_to_signed_in_non_staff(alice_client):
    assert alice_client.get("/metrics").status_code == 403


@pytest.mark.django_db
def test_no_token_configured_means_no_token_works(client, settings):
    settings.METRICS_TOKEN = ""
    response = client.get("/metrics", headers={"Authorization": "Bearer "})
    assert response.status_code == 403


@pytest.mark.smoke
@pytest.mark.django_db
def test_token_gets_the_metrics(client):
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert "no-store" in response["Cache-Control"]
    found = samples(response.content.decode())
    assert found[("chatsite_queue_length", ())] == 0


@pytest.mark.django_db
def test_staff_session_gets_the_metrics(admin_client):
    response = admin_client.get("/metrics")
    assert response.status_code == 200
    assert "chatsite_active_streams" in response.content.decode()


@pytest.mark.smoke
@pytest.mark.django_db
def test_active_streams_and_the_queue_are_counted_in_the_database(
    client, conversation, alice, demo_profile
):
    answers = [
        Message.objects.create(
            conversation=conversation,
            role=Message.Role.ASSISTANT,
            status=Message.Status.STREAMING,
            model_tag=MODEL,
        )
        for _ in range(6)
    ]
    Message.objects.create(
        conversation=conversation, role=Message.Role.ASSISTANT, model_tag=MODEL
    )
    # One admitted, one waiting for a slot; one running its tools (its slot
    # given back: `chat.live.engine.turn.slots`), one waiting again after
    # them; the others predate admission tickets.
    Ticket.objects.create(
        message=answers[0], user=alice, profile=demo_profile, served=1
    )
    Ticket.objects.create(message=answers[1], user=alice, profile=demo_profile)
    Ticket.objects.create(
        message=answers[2], user=alice, profile=demo_profile, paused=True
    )
    Ticket.objects.create(
        message=answers[3], user=alice, profile=demo_profile, priority=True
    )
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    found = samples(response.content.decode())
    assert found[("chatsite_active_streams", (("model", MODEL),))] == 3
    assert found[("chatsite_paused_answers", (("model", MODEL),))] == 1
    assert found[("chatsite_queue_length", ())] == 2
    assert queue_length() == 2


def counts_before() -> dict[str, float]:
    return {
        "done": value(
            "chatsite_answers_total", model=MODEL, status="done", source="chat"
        ),
        "tokens": value("chatsite_output_tokens_total", model=MODEL),
        "first": value("chatsite_first_token_seconds_count", model=MODEL),
        "rate": value("chatsite_decode_tokens_per_second_count", model=MODEL),
        "total": value("chatsite_answer_seconds_count", model=MODEL),
    }


@pytest.mark.django_db(transaction=True)
async def test_a_finished_answer_is_counted(simulator, alice, demo_profile):
    conversation = await Conversation.objects.acreate(
        owner=alice, model_profile=demo_profile
    )
    # Read in a worker thread: a connection opened in the test's own async
    # context would outlive the test.
    before = await sync_to_async(counts_before)()
    socket = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.pk}/", headers=[ORIGIN]
    )
    socket.scope["user"] = alice
    assert (await socket.connect())[0]
    await socket.send_json_to({"type": "send", "content": "hi", "client_id": "c1"})
    while (await socket.receive_json_from(timeout=10))["type"] != "done":
        pass
    await socket.disconnect()
    await loop_state.clients().aclose()
    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    assert answer.output_tokens  # the simulator reports its counts

    client = AsyncClient()
    response = await client.get(
        "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    found = samples(response.content.decode())
    labels = (("model", MODEL),)
    done = (("model", MODEL), ("source", "chat"), ("status", "done"))
    assert found[("chatsite_answers_total", done)] == before["done"] + 1
    assert found[("chatsite_output_tokens_total", labels)] == (
        before["tokens"] + answer.output_tokens
    )
    assert found[("chatsite_first_token_seconds_count", labels)] == before["first"] + 1
    assert found[("chatsite_decode_tokens_per_second_count", labels)] == (
        before["rate"] + 1
    )
    assert found[("chatsite_answer_seconds_count", labels)] == before["total"] + 1


@pytest.mark.django_db  # reading the registry also counts the streams
def test_a_stopped_answer_counts_but_its_rate_does_not():
    message = Message(
        pk=1,
        model_tag="stop:1b",
        status=Message.Status.STOPPED,
        output_tokens=5,
        eval_ms=100,
        first_token_ms=20,
        total_ms=200,
    )
    observe_answer(message)
    stopped = {"model": "stop:1b", "status": "stopped", "source": "chat"}
    assert value("chatsite_answers_total", **stopped) >= 1
    assert value("chatsite_output_tokens_total", model="stop:1b") >= 5
    assert value("chatsite_decode_tokens_per_second_count", model="stop:1b") == 0


def test_a_broken_answer_never_breaks_its_save(caplog):
    message = Message(pk=2, model_tag="odd:1b", status="done", output_tokens=-3)
    observe_answer(message)  # a counter cannot go down: logged, not raised
    assert "not counted" in caplog.text


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("raw", "expected"), [(None, ""), ("  ", ""), (f" {TOKEN} ", TOKEN)]
)
def test_env_token(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("METRICS_TOKEN", raising=False)
    else:
        monkeypatch.setenv("METRICS_TOKEN", raw)
    assert env_token("METRICS_TOKEN") == expected


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("raw", "error"), [("short", "at least 16"), ("a b" * 8, "must not contain spaces")]
)
def test_env_token_refuses_weak_or_odd_values(monkeypatch, raw, error):
    monkeypatch.setenv("METRICS_TOKEN", raw)
    with pytest.raises(ImproperlyConfigured, match=error):
        env_token("METRICS_TOKEN")


@pytest.mark.django_db
def test_scraped_over_plain_http_when_https_only(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/admin/").status_code == 301  # the rest is redirected
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200


@pytest.mark.django_db  # reading the registry also counts the streams
def test_a_call_of_no_known_tool_is_counted_as_unknown():
    # Whatever name the model wrote: one series, not one per name.
    steps = [
        {"kind": "content", "text": "Let me look."},
        {"kind": "tool", "name": "made_up_tool", "source": "", "ok": False, "ms": 2},
        {"kind": "tool", "name": "web_search", "source": "web", "ok": True, "ms": 500},
    ]
    before = {
        "unknown": value(
            "chatsite_tool_calls_total", source="none", tool="unknown", ok="false"
        ),
        "search": value(
            "chatsite_tool_call_seconds_sum", source="web", tool="web_search"
        ),
        "calls": value("chatsite_model_calls_total", model="tools:1b"),
        "tools": value("chatsite_answer_tool_seconds_count", model="tools:1b"),
    }
    message = Message(
        pk=3, model_tag="tools:1b", status="done", steps=steps, model_calls=2,
        tool_ms=502,
    )  # fmt: skip
    observe_answer(message)
    assert (
        value("chatsite_tool_calls_total", source="none", tool="unknown", ok="false")
        == before["unknown"] + 1
    )
    assert (
        value(
            "chatsite_tool_calls_total", source="none", tool="made_up_tool", ok="false"
        )
        == 0
    )
    assert value(
        "chatsite_tool_call_seconds_sum", source="web", tool="web_search"
    ) == pytest.approx(before["search"] + 0.5)
    assert value("chatsite_model_calls_total", model="tools:1b") == before["calls"] + 2
    assert value("chatsite_answer_tool_seconds_count", model="tools:1b") == (
        before["tools"] + 1
    )
