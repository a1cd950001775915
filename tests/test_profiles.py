"""What a model profile sends: options, keep_alive, and how thinking is switched."""

from __future__ import annotations

import pytest

from chat.models import Conversation, ModelProfile
from chat.upstream import OllamaClient, OpenAIClient, ThinkingControl
from chat.upstream.pool import aclose_all, client_for, thinking_control

THINKING = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "min_p": 0.0}
NON_THINKING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "min_p": 0.0}


def profile(**fields) -> ModelProfile:
    fields = {"tag": "qwen3:8b", "base_url": "http://gpu:11434", **fields}
    return ModelProfile(context_length=8192, **fields)


@pytest.mark.parametrize(
    ("tag", "think", "expected"),
    [
        ("qwen3:8b", True, THINKING),
        ("qwen3:8b", False, NON_THINKING),
        ("qwen3:8b", None, THINKING),  # thinking is Qwen3's default
        ("Qwen/Qwen3-30B-A3B-Thinking-2507", None, THINKING),
        ("qwen3:4b-instruct-2507-q4_K_M", None, NON_THINKING),
        ("Qwen/Qwen3-4B-Instruct-2507", True, THINKING),
        ("llama3.2:3b", True, {}),
        ("qwen2.5:7b", False, {}),
    ],
)
def test_qwen3_profiles_default_to_the_recommended_sampling(tag, think, expected):
    assert profile(tag=tag).request_options(think) == {**expected, "num_ctx": 8192}


def test_a_profile_that_sets_sampling_gets_no_qwen3_defaults():
    options = profile(options={"top_p": 0.9, "seed": 1}).request_options(True)
    assert options == {"top_p": 0.9, "seed": 1, "num_ctx": 8192}


def test_profile_options_and_conversation_overrides():
    qwen = profile(options={"num_predict": 512, "stop": ["<|im_end|>"]})
    options = qwen.request_options(False, {"temperature": 0.2, "top_k": None})
    assert options == {
        **NON_THINKING,
        "temperature": 0.2,
        "num_predict": 512,
        "stop": ["<|im_end|>"],
        "num_ctx": 8192,
    }


def test_num_ctx_is_the_profiles_context_length_whatever_the_options_say():
    assert profile(options={"num_ctx": 2048}).request_options()["num_ctx"] == 8192


def test_conversation_sampling_overrides():
    assert Conversation().sampling_overrides() == {}
    assert Conversation(temperature=0.0).sampling_overrides() == {"temperature": 0.0}


@pytest.mark.parametrize(
    ("value", "sent"),
    [("", None), ("  ", None), ("30m", "30m"), ("-1", -1), ("0", 0), ("600", 600)],
)
def test_keep_alive_as_ollama_takes_it(value, sent):
    assert profile(keep_alive=value).keep_alive_value == sent


@pytest.mark.parametrize(
    ("switch", "tags", "control"),
    [
        ("template", "parse", ThinkingControl()),
        (
            "soft",
            "off",
            ThinkingControl(template_kwargs=False, soft_switch=True, parse_tags=False),
        ),
        ("both", "close_only", ThinkingControl(soft_switch=True, opened=True)),
    ],
)
def test_thinking_control(switch, tags, control):
    assert thinking_control(profile(thinking_switch=switch, think_tags=tags)) == control


def test_new_profiles_switch_by_template_and_parse_tags():
    fresh = profile()
    assert (fresh.thinking_switch, fresh.think_tags, fresh.keep_alive) == (
        "template",
        "parse",
        "",
    )


async def test_client_for_dispatches_on_the_backend():
    try:
        ollama = client_for(profile(backend="ollama"))
        openai = client_for(
            profile(backend="openai", base_url="http://gpu:8000/v1", think_tags="off")
        )
        assert isinstance(ollama, OllamaClient)
        assert isinstance(openai, OpenAIClient)
        assert openai.base_url == "http://gpu:8000"
        assert openai.thinking == ThinkingControl(parse_tags=False)
    finally:
        await aclose_all()
