"""The OpenAI client's base URL and the models its server lists."""

from __future__ import annotations

import httpx
import pytest

from chat.upstream import OpenAIClient, UpstreamError
from tests.upstream.fake_servers import answer, raising
from tests.upstream.openai.answering import BASE


def test_base_url_with_or_without_v1():
    http = httpx.AsyncClient()
    assert OpenAIClient("http://h:1/v1", http=http).base_url == "http://h:1"
    assert OpenAIClient("http://h:1/", http=http).base_url == "http://h:1"


async def test_models_lists_the_served_models(make_client):
    body = b'{"object":"list","data":[{"id":"a","object":"model"},7]}'
    server = answer(200, body)
    assert await make_client(server).models() == [{"id": "a", "object": "model"}]
    assert server.requests[-1].url == BASE + "/v1/models"


@pytest.mark.parametrize(
    ("status", "content", "code", "detail"),
    [
        (404, b"404 page not found", "upstream_error", "an OpenAI-compatible server"),
        (200, b"<html></html>", "malformed", "an OpenAI-compatible model list"),
        (200, b'{"data": 3}', "malformed", "an OpenAI-compatible model list"),
        (503, b"Loading model", "upstream_busy", "Loading model."),
    ],
)
async def test_models_errors(make_client, status, content, code, detail):
    with pytest.raises(UpstreamError) as info:
        await make_client(answer(status, content)).models()
    assert info.value.code == code and detail in info.value.detail


async def test_models_unreachable(make_client):
    server = raising(httpx.ConnectError("All connection attempts failed"))
    with pytest.raises(UpstreamError) as info:
        await make_client(server).models()
    assert info.value.code == "upstream_unreachable"
