"""The official `ollama` client against the live server, as against an Ollama:
`list()`, `show()`, `chat()` streamed and not (thinking apart, the figures in
Ollama's names and units), `/api/version`, and each refusal as the client's
`ResponseError` with its status."""

from __future__ import annotations

import ollama
import pytest
from django.utils import timezone

from chat.models import Message, SiteDefaults, quotas
from chat.simulator.script import reply_script
from tests.api.conftest import (
    ASK,
    MODEL,
    QUESTION,
    closed_port,
    issue,
    make_profile,
    ollama_client,
    stored_answer,
    team_of,
)

pytestmark = pytest.mark.django_db(transaction=True)

NS_PER_MS = 1_000_000


def expected_script(simulator, *, think: bool = True) -> tuple[str, str]:
    script = reply_script(simulator.config, ASK, think=think)
    return "".join(script.thinking), "".join(script.content)


def refused(call, *args, **kwargs) -> ollama.ResponseError:
    with pytest.raises(ollama.ResponseError) as caught:
        result = call(*args, **kwargs)
        if kwargs.get("stream"):
            list(result)  # a stream asks when it is read
    return caught.value


def chat(client: ollama.Client, **kwargs):
    kwargs.setdefault("model", MODEL)
    kwargs.setdefault("messages", ASK)
    return client.chat(**kwargs)


# ---- the models ----------------------------------------------------------------


def test_list_shows_the_models_the_key_may_ask(ol, alice, bob, demo_profile, simulator):
    demo_profile.family, demo_profile.parameter_size = "qwen3", "8.2B"
    demo_profile.quantization = "Q4_K_M"
    demo_profile.save()
    make_profile("llama-demo:3b", simulator.url, teams=[team_of("GPU", alice)])
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    make_profile("switched-off:1b", simulator.url, enabled=False)

    models = ol.list().models

    assert [m.model for m in models] == [MODEL, "llama-demo:3b"]
    details = models[0].details
    assert (details.family, details.parameter_size, details.quantization_level) == (
        "qwen3",
        "8.2B",
        "Q4_K_M",
    )
    assert details.families == ["qwen3"] and details.format == "gguf"
    assert len(models[0].digest) == 64 and models[0].modified_at is not None


def test_list_with_a_key_for_one_model(live_server_url, alice, demo_profile, simulator):
    other = make_profile("llama-demo:3b", simulator.url)
    with ollama_client(live_server_url, issue(alice, profiles=[other]).key) as client:
        assert [m.model for m in client.list().models] == ["llama-demo:3b"]


def test_show_describes_the_profile(ol, demo_profile):
    demo_profile.family = "qwen3"
    demo_profile.options = {"temperature": 0.6, "stop": ["<|im_end|>", "<|end|>"]}
    demo_profile.save()

    shown = ol.show(MODEL)

    assert shown.capabilities == ["completion", "thinking"]
    assert shown.modelinfo == {
        "general.architecture": "qwen3",
        "qwen3.context_length": 8192,
    }
    # num_ctx first, then the profile's options (stored as jsonb: in its order).
    lines = shown.parameters.splitlines()
    assert lines[0] == "num_ctx 8192"
    assert sorted(lines[1:]) == [
        'stop "<|end|>"',
        'stop "<|im_end|>"',
        "temperature 0.6",
    ]
    assert lines.index('stop "<|im_end|>"') < lines.index('stop "<|end|>"')
    assert shown.details.family == "qwen3"


def test_show_of_a_model_that_cannot_think(ol, simulator):
    make_profile("llama-demo:3b", simulator.url, supports_thinking=False)
    shown = ol.show("llama-demo:3b")
    assert shown.capabilities == ["completion"]
    assert shown.modelinfo["unknown.context_length"] == 4096


def test_a_name_without_a_tag_means_latest(ol, simulator):
    make_profile("mistral:latest", simulator.url)
    assert ol.show("mistral").capabilities == ["completion"]
    assert refused(ol.show, "qwen3-demo").status_code == 404


def test_show_refusals(ol, bob, simulator):
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    missing = refused(ol.show, "no-such-model:1b")
    assert (missing.status_code, missing.error) == (
        404,
        "The model no-such-model:1b does not exist.",
    )
    assert refused(ol.show, "ops-only:1b").status_code == 403
    assert refused(ol.show, "qwen3\x00").status_code == 400


# ---- answers -----------------------------------------------------------------


def test_a_streamed_thinking_answer_comes_apart_and_is_stored(ol, alice_key, simulator):
    parts = list(chat(ol, stream=True, think=True))

    *lines, last = parts
    thinking = "".join(p.message.thinking or "" for p in lines)
    content = "".join(p.message.content or "" for p in lines)
    assert (thinking, content) == expected_script(simulator)
    assert all(not p.done for p in lines) and last.done
    assert (last.message.content, last.message.thinking) == ("", None)
    assert {p.model for p in parts} == {MODEL}
    assert {p.message.role for p in parts} == {"assistant"}
    answer = stored_answer(Message.Status.DONE)
    assert (answer.thinking, answer.content) == (thinking, content)
    assert answer.source == Message.Source.API
    assert answer.api_key_id == alice_key.api_key.pk
    assert last.eval_count == answer.output_tokens == simulator.log[-1].tokens_sent
    assert last.prompt_eval_count == answer.prompt_tokens
    assert last.total_duration == int(answer.total_ms * NS_PER_MS)
    assert last.done_reason == "stop"
    entry = simulator.log[-1]
    assert entry.body["think"] is True and entry.body["messages"] == ASK


def test_a_whole_answer_with_its_figures(ol, simulator):
    response = chat(ol, stream=False, think=True)

    answer = stored_answer(Message.Status.DONE)
    assert response.done and response.done_reason == "stop"
    assert (response.message.thinking, response.message.content) == (
        answer.thinking,
        answer.content,
    )
    assert (answer.thinking, answer.content) == expected_script(simulator)
    assert response.eval_count == answer.output_tokens
    assert response.prompt_eval_count == answer.prompt_tokens
    assert response.total_duration == int(answer.total_ms * NS_PER_MS)
    assert response.eval_duration == int(answer.eval_ms * NS_PER_MS)
    assert response.prompt_eval_duration == int(
        (answer.prompt_eval_ms or 0) * NS_PER_MS
    )
    assert response.load_duration == int((answer.load_ms or 0) * NS_PER_MS)
    assert response.total_duration > 0 and response.eval_count > 0


def test_think_left_out_is_the_models_default(ol, demo_profile, simulator):
    chat(ol, stream=False)
    assert simulator.log[-1].body["think"] is True
    demo_profile.default_thinking = "off"
    demo_profile.save()
    response = chat(ol, stream=False)
    assert simulator.log[-1].body["think"] is False
    assert response.message.thinking is None


def test_thinking_off(ol, simulator):
    parts = list(chat(ol, stream=True, think=False))

    assert simulator.log[-1].body["think"] is False
    assert all(p.message.thinking is None for p in parts)
    content = "".join(p.message.content for p in parts)
    assert content == expected_script(simulator, think=False)[1]
    answer = stored_answer(Message.Status.DONE)
    assert (answer.thinking, answer.content, answer.thinking_enabled) == (
        "",
        content,
        False,
    )


def test_a_thinking_level_is_thinking_on(ol, demo_profile, simulator):
    demo_profile.default_thinking = "off"
    demo_profile.save()
    response = chat(ol, stream=False, think="high")
    assert simulator.log[-1].body["think"] is True
    assert response.message.thinking == expected_script(simulator)[0]


def test_options_reach_the_model_server(ol, simulator):
    response = chat(
        ol,
        stream=False,
        think=False,
        options={
            "temperature": 0.3,
            "top_p": 0.8,
            "top_k": 4,
            "repeat_penalty": 1.2,
            "seed": 11,
            "num_predict": 6,
            "stop": ["\n\n"],
            "num_ctx": 131072,
        },
    )

    options = simulator.log[-1].body["options"]
    assert options["temperature"] == 0.3
    assert options["top_p"] == 0.8
    assert options["top_k"] == 4
    assert options["repeat_penalty"] == 1.2
    assert options["seed"] == 11
    assert options["num_predict"] == 6
    assert options["stop"] == ["\n\n"]
    assert options["num_ctx"] == 8192  # the admin's, not the client's
    assert (response.done_reason, response.eval_count) == ("length", 6)
    assert stored_answer(Message.Status.DONE).done_reason == "length"


def test_version(http, alice_key):
    response = http.get("/api/version", headers=alice_key.headers)
    assert response.status_code == 200
    assert response.json() == {"version": "0.12.6"}
    assert response.headers["cache-control"] == "no-store"


def test_version_needs_a_key(http, demo_profile):
    response = http.get("/api/version")
    assert response.status_code == 401
    assert response.json()["error"].startswith("No API key")


def test_the_stream_is_ndjson_and_not_buffered(http, alice_key, simulator):
    with http.stream(
        "POST",
        "/api/chat",
        headers=alice_key.headers,
        json={"model": MODEL, "messages": ASK},
    ) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        assert response.headers["x-accel-buffering"] == "no"
        lines = list(response.iter_lines())
    assert (
        lines[-1].startswith('{"model": "qwen3-demo:8b"')
        and '"done": true' in (lines[-1])
    )
    assert all('"done":false' in line for line in lines[:-1])
    stored_answer(Message.Status.DONE)


# ---- refusals ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_wrong_key_is_401(live_server_url, demo_profile, simulator, stream):
    with ollama_client(live_server_url, "csk-" + "B" * 43) as client:
        error = refused(chat, client, stream=stream)
        assert (error.status_code, error.error) == (401, "That API key is not valid.")
        assert refused(client.list).status_code == 401
    assert not simulator.log


def test_a_revoked_key_is_401_at_once(ol, alice, alice_key, simulator):
    assert chat(ol, stream=False).message.content
    stored_answer(Message.Status.DONE)
    alice_key.api_key.revoke(actor=alice)
    error = refused(chat, ol, stream=True)
    assert (error.status_code, error.error) == (401, "That API key was revoked.")


def test_an_expired_key_is_401(live_server_url, alice, demo_profile):
    key = issue(alice, expires_at=timezone.now()).key
    with ollama_client(live_server_url, key) as client:
        error = refused(client.list)
    assert error.status_code == 401 and error.error.startswith("That API key expired")


def test_a_switched_off_owner_is_401(ol, alice):
    alice.is_active = False
    alice.save()
    assert refused(ol.list).error == "The account of that API key is switched off."


def test_the_api_switched_off_is_403(ol):
    site = SiteDefaults.load()
    site.api_enabled = False
    site.save()
    error = refused(ol.list)
    assert (error.status_code, error.error) == (
        403,
        "API access is not open to you on this site.",
    )


def test_model_refusals(ol, bob, simulator):
    make_profile("ops-only:1b", simulator.url, teams=[team_of("Ops", bob)])
    assert refused(chat, ol, model="ops-only:1b", stream=True).status_code == 403
    assert refused(chat, ol, model="nope:1b", stream=True).status_code == 404
    assert not simulator.log and not Message.objects.exists()


def test_a_reached_quota_is_429(ol, alice, simulator):
    site = SiteDefaults.load()
    site.user_output_tokens = 10
    site.save()
    # 38 tokens were it not for the limit: it is asked for the 10 left.
    chat(ol, stream=False)
    assert stored_answer(Message.Status.DONE).done_reason == "length"

    with pytest.raises(ollama.ResponseError) as caught:
        list(chat(ol, stream=True))

    assert caught.value.status_code == 429
    assert caught.value.error.startswith(
        "Your quota is reached (10 of 10 output tokens)"
    )
    assert quotas.usage(alice, "day") == (1, 10)


def test_a_model_server_that_is_down_is_503(live_server_url, alice):
    make_profile("down:1b", f"http://127.0.0.1:{closed_port()}")
    with ollama_client(live_server_url, issue(alice).key) as client:
        for stream in (False, True):
            error = refused(chat, client, model="down:1b", stream=stream)
            assert error.status_code == 503
            assert "down:1b" in error.error or "127.0.0.1" in error.error
    assert {m.error_code for m in Message.objects.filter(role="assistant")} == {
        "upstream_unreachable"
    }


def test_a_fault_after_the_first_token_comes_in_the_stream(ol, simulator):
    simulator.config.error_after = 3
    received = []
    with pytest.raises(ollama.ResponseError) as caught:
        for part in chat(ol, stream=True):
            received.append(part)
    assert "model runner has unexpectedly stopped" in caught.value.error
    answer = stored_answer(Message.Status.ERROR)
    assert "".join(p.message.thinking or "" for p in received) == answer.thinking
    assert answer.thinking


def test_images_are_400(ol, simulator):
    message = {"role": "user", "content": QUESTION, "images": ["iVBORw0KGgo="]}
    error = refused(chat, ol, messages=[message], stream=False)
    assert (error.status_code, error.error) == (400, "Images are not supported.")


def test_structured_output_is_400(ol, simulator):
    error = refused(chat, ol, format="json", stream=False)
    assert error.status_code == 400
    assert error.error == "Structured output (format) is not supported."


def test_invalid_json_is_400_in_ollamas_shape(http, alice_key):
    response = http.post(
        "/api/chat", headers=alice_key.headers, content=b'{"model": "x", '
    )
    assert response.status_code == 400
    assert response.json() == {"error": "The request body is not valid JSON."}
    assert not Message.objects.exists()
