"""What a model profile sends: options, keep_alive, and how thinking is switched."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from chat.models import ModelProfile
from chat.upstream import ClientPool, OllamaClient, OpenAIClient, ThinkingControl
from chat.upstream.pool import thinking_control

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


def test_profile_options_come_on_top_of_the_qwen3_defaults():
    qwen = profile(options={"num_predict": 512, "stop": ["<|im_end|>"]})
    assert qwen.request_options(False) == {
        **NON_THINKING,
        "num_predict": 512,
        "stop": ["<|im_end|>"],
        "num_ctx": 8192,
    }


def test_num_ctx_is_the_profiles_context_length_whatever_the_options_say():
    assert profile(options={"num_ctx": 2048}).request_options()["num_ctx"] == 8192


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
        ("none", "parse", ThinkingControl(template_kwargs=False)),
    ],
)
def test_thinking_control(switch, tags, control):
    given = profile(thinking_switch=switch, think_tags=tags).server_settings()
    assert thinking_control(given["thinking_switch"], given["think_tags"]) == control


def test_new_profiles_switch_by_template_and_parse_tags():
    fresh = profile()
    assert (fresh.thinking_switch, fresh.think_tags, fresh.keep_alive) == (
        "template",
        "parse",
        "",
    )


def test_server_settings_are_the_seams_plain_values():
    given = profile(backend="openai", thinking_switch="soft", think_tags="off")
    assert given.server_settings() == {
        "backend": "openai",
        "base_url": "http://gpu:11434",
        "thinking_switch": "soft",
        "think_tags": "off",
    }


async def test_client_for_dispatches_on_the_backend():
    pool = ClientPool()
    try:
        ollama = pool.client_for(**profile(backend="ollama").server_settings())
        openai = pool.client_for(
            **profile(
                backend="openai", base_url="http://gpu:8000/v1", think_tags="off"
            ).server_settings()
        )
        assert isinstance(ollama, OllamaClient)
        assert isinstance(openai, OpenAIClient)
        assert openai.base_url == "http://gpu:8000"
        assert openai.thinking == ThinkingControl(parse_tags=False)
    finally:
        await pool.aclose()


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"temperature": 0.6, "top_p": 1, "top_k": 20, "min_p": 0.0, "seed": 7},
        {"num_predict": -1, "stop": ["<|im_end|>", "\n\n"], "use_mmap": False},
    ],
)
def test_valid_options(options):
    profile(options=options, keep_alive="1h30m").clean()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ([0.6], "Options are a JSON object"),
        ({"temprature": 0.6}, 'Unknown option "temprature" (known: '),
        ({"top_k": 2.5}, 'Option "top_k" must be a whole number.'),
        ({"temperature": "hot"}, 'Option "temperature" must be a number.'),
        ({"temperature": True}, 'Option "temperature" must be a number.'),
        ({"temperature": float("nan")}, 'Option "temperature" must be a number.'),
        ({"top_p": float("inf")}, 'Option "top_p" must be a number.'),
        ({"seed": 2**64}, 'Option "seed" must be a whole number.'),
        ({"min_p": -(2**70)}, 'Option "min_p" must be a number.'),
        ({"stop": "END"}, 'Option "stop" must be a list of strings.'),
        ({"use_mmap": 1}, 'Option "use_mmap" must be true or false.'),
        ({"num_ctx": 2048}, "set it there."),
    ],
)
def test_invalid_options_are_named(options, message):
    with pytest.raises(ValidationError) as info:
        profile(options=options).clean()
    [error] = info.value.message_dict["options"]
    assert message in error


@pytest.mark.parametrize(
    "value", ["", "600", "-1", "0", "30m", "1h30m", "1.5h", "500ms"]
)
def test_valid_keep_alive(value):
    profile(keep_alive=value).clean()


@pytest.mark.parametrize("value", ["forever", "30 m", "m", "1d", "-"])
def test_invalid_keep_alive(value):
    with pytest.raises(ValidationError) as info:
        profile(keep_alive=value).clean()
    assert "Keep alive is seconds" in info.value.message_dict["keep_alive"][0]


def test_both_fields_are_reported_at_once():
    with pytest.raises(ValidationError) as info:
        profile(options={"x": 1}, keep_alive="soon").clean()
    assert set(info.value.message_dict) == {"options", "keep_alive"}


@pytest.mark.django_db
def test_admin_form_names_a_bad_option_and_saves_nothing(client, admin_user):
    client.force_login(admin_user)
    form = {
        "tag": "qwen3:8b",
        "backend": "openai",
        "base_url": "http://10.0.0.5:8000/v1",
        "enabled": "on",
        "context_length": 8192,
        "default_thinking": "on",
        "parallel_slots": 0,
        "options": '{"temprature": 0.6}',
        "keep_alive": "",
        "thinking_switch": "both",
        "think_tags": "close_only",
        "first_token_timeout": 300,
        "image_max_side": 1568,
    }
    response = client.post("/admin/chat/modelprofile/add/", form)
    assert response.status_code == 200
    assert "Unknown option &quot;temprature&quot;" in response.content.decode()
    assert not ModelProfile.objects.exists()

    form["options"] = '{"temperature": 0.6}'
    response = client.post("/admin/chat/modelprofile/add/", form)
    assert response.status_code == 302
    saved = ModelProfile.objects.get()
    assert (saved.thinking_switch, saved.think_tags) == ("both", "close_only")


@pytest.mark.parametrize(
    "url",
    [
        "http://gpu-box:11434",  # a single-label host, as on a team's network
        "http://localhost:11434",
        "https://models.example.com/v1",
        "http://10.0.0.5:8000",
        "http://[::1]:11434",
    ],
)
def test_a_model_server_address_may_be_any_http_host(url):
    profile(base_url=url).full_clean(exclude=["tag"])


@pytest.mark.parametrize(
    "url",
    ["gpu-box:11434", "ftp://gpu-box", "http://", "http://gpu-box:port", "http://[::1"],
)
def test_a_bad_model_server_address_is_refused_clearly(url):
    with pytest.raises(ValidationError) as info:
        profile(base_url=url).full_clean()
    assert "http://gpu-box:11434" in info.value.message_dict["base_url"][0]


@pytest.mark.django_db
def test_the_admin_takes_a_single_label_host(client, admin_user):
    client.force_login(admin_user)
    form = {
        "tag": "qwen3:8b",
        "backend": "ollama",
        "base_url": "http://gpu-box:11434",
        "enabled": "on",
        "context_length": 8192,
        "default_thinking": "on",
        "parallel_slots": 0,
        "options": "{}",
        "keep_alive": "",
        "thinking_switch": "template",
        "think_tags": "parse",
        "first_token_timeout": 300,
        "image_max_side": 1568,
    }
    response = client.post("/admin/chat/modelprofile/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert ModelProfile.objects.get().base_url == "http://gpu-box:11434"
