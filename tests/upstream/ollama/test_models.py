"""The Ollama client's other endpoints (version, tags, show, load) and a model's
facts read from /api/show."""

from __future__ import annotations

import httpx
import pytest

from chat.upstream import UpstreamError, model_facts
from tests.upstream.fake_servers import Server, answer, raising, stream_of
from tests.upstream.ollama.answering import done, line, refused

# --- the other endpoints -------------------------------------------------------

SHOW = {
    "details": {
        "family": "qwen3",
        "parameter_size": "8.2B",
        "quantization_level": "Q4_K_M",
    },
    "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960},
    "capabilities": ["completion", "tools", "thinking"],
}


async def test_version_tags_show(make_client):
    replies = {
        "/api/version": {"version": "0.12.5"},
        "/api/tags": {"models": [{"name": "qwen3:8b"}, "junk"]},
        "/api/show": SHOW,
    }
    server = Server(lambda request: httpx.Response(200, json=replies[request.url.path]))
    client = make_client(server)
    assert await client.version() == "0.12.5"
    assert await client.tags() == [{"name": "qwen3:8b"}]
    assert await client.show("qwen3:8b") == SHOW
    assert server.body == {"model": "qwen3:8b"}
    assert [r.method for r in server.requests] == ["GET", "GET", "POST"]


async def test_show_unknown_model(make_client):
    server = answer(404, b'{"error":"model \\"nope\\" not found"}')
    with pytest.raises(UpstreamError) as info:
        await make_client(server).show("nope")
    assert info.value.code == "model_not_found"


async def test_tags_on_something_else(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(404, b"Not Found")).tags()
    assert info.value.code == "upstream_error"
    assert "has no /api/tags (HTTP 404): Not Found." in info.value.detail


@pytest.mark.parametrize("content", [b"<html></html>", b"[]", b'{"models": 3}'])
async def test_tags_malformed(make_client, content):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(200, content)).tags()
    assert info.value.code == "malformed"


async def test_version_unreachable(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(raising(refused())).version()
    assert info.value.code == "upstream_unreachable"


async def test_load(make_client):
    server = stream_of(line(done(done_reason="load")))
    await make_client(server).load("qwen3:8b", "1h", options={"num_ctx": 8192})
    assert server.body == {
        "model": "qwen3:8b",
        "messages": [],
        "stream": True,
        "options": {"num_ctx": 8192},
        "keep_alive": "1h",
    }


async def test_load_error(make_client):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(404, b'{"error":"not found"}')).load("nope")
    assert info.value.code == "model_not_found"


@pytest.mark.parametrize(
    ("show", "expected"),
    [
        (SHOW, (True, 40960, "qwen3", "8.2B", "Q4_K_M")),
        (
            {
                "details": {"family": "llama"},
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": 8192,
                },
                "capabilities": ["completion"],
            },
            (False, 8192, "llama", "", ""),
        ),
        (
            {"capabilities": ["completion", "vision"]},
            (False, None, "", "", "", True),
        ),
        ({}, (False, None, "", "", "")),
        (
            {"model_info": {"qwen3.context_length": 5}, "capabilities": None},
            (False, None, "", "", ""),
        ),
    ],
)
def test_model_facts(show, expected):
    facts = model_facts(show)
    if len(expected) == 5:
        expected = (*expected, False)  # no vision
    assert (
        facts.supports_thinking,
        facts.context_length,
        facts.family,
        facts.parameter_size,
        facts.quantization,
        facts.supports_vision,
    ) == expected


def test_model_facts_say_whether_a_model_calls_tools():
    assert model_facts({"capabilities": ["completion", "tools"]}).supports_tools
    assert not model_facts({"capabilities": ["completion", "thinking"]}).supports_tools
    assert not model_facts({"capabilities": "tools"}).supports_tools  # not a list
