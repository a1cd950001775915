"""What the OpenAI client sends: the options renamed, the thinking switches, the
body of a chat request, images as content parts."""

from __future__ import annotations

import pytest

from chat.upstream.openai import openai_options
from chat.upstream.outgoing import soft_switched
from tests.upstream.fake_servers import stream_of
from tests.upstream.openai.answering import BASE, DONE, MODEL, collect

# --- the request ---------------------------------------------------------------


def test_openai_options_renames_and_drops():
    options = {
        "num_ctx": 8192,
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
        "seed": 7,
        "stop": ["<|im_end|>"],
        "num_predict": 512,
        "mirostat": 2,
    }
    assert openai_options(options) == {
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "min_p": 0.0,
        "seed": 7,
        "stop": ["<|im_end|>"],
        "max_tokens": 512,
    }


@pytest.mark.parametrize("num_predict", [-1, -2, 0, None])
def test_unlimited_num_predict_sends_no_max_tokens(num_predict):
    assert openai_options({"num_predict": num_predict}) == {}


def test_soft_switch_goes_after_the_last_user_message():
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
    ]
    assert soft_switched(messages, False)[2] == {
        "role": "user",
        "content": "second /no_think",
    }
    assert soft_switched(messages, True)[2]["content"] == "second /think"
    assert messages[2]["content"] == "second"  # the stored history is untouched
    assert soft_switched([{"role": "system", "content": "s"}], True) == [
        {"role": "system", "content": "s"}
    ]


BODIES = {
    "thinking on, template switch": (
        {},
        {"think": True},
        {"chat_template_kwargs": {"enable_thinking": True}},
        "hi",
    ),
    "thinking off, template switch": (
        {},
        {"think": False},
        {"chat_template_kwargs": {"enable_thinking": False}},
        "hi",
    ),
    "no thinking capability: nothing sent": (
        {"soft_switch": True},
        {"think": None},
        {},
        "hi",
    ),
    "soft switch only": (
        {"template_kwargs": False, "soft_switch": True},
        {"think": False},
        {},
        "hi /no_think",
    ),
    "both switches": (
        {"soft_switch": True},
        {"think": True},
        {"chat_template_kwargs": {"enable_thinking": True}},
        "hi /think",
    ),
    "options": (
        {},
        {"options": {"num_ctx": 4096, "temperature": 0.7, "num_predict": 100}},
        {"temperature": 0.7, "max_tokens": 100},
        "hi",
    ),
}


@pytest.mark.parametrize(
    ("control", "kwargs", "fields", "question"), BODIES.values(), ids=BODIES.keys()
)
async def test_request_body(make_client, control, kwargs, fields, question):
    server = stream_of(DONE)
    await collect(make_client(server, **control), **kwargs)
    request = server.requests[-1]
    assert request.url == BASE + "/v1/chat/completions"
    assert request.headers["accept-encoding"] == "identity"
    assert server.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": question}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **fields,
    }


def test_images_become_content_parts_with_data_urls():
    from chat.upstream.outgoing import with_content_parts

    png, jpeg = "iVBORw0KGgo=", "/9j/4AAQ"
    message = {"role": "user", "content": "What is this?", "images": [png, jpeg]}
    assert with_content_parts(message) == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
            {
                "type": "image_url",
                "image_url": {"url": f"data:image/jpeg;base64,{jpeg}"},
            },
        ],
    }
    plain = {"role": "user", "content": "hi"}
    assert with_content_parts(plain) is plain
