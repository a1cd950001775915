from __future__ import annotations

from typing import Any

import pytest

from chat.upstream import OpenAIClient
from chat.upstream.openai import ThinkingControl
from tests.upstream.fake_servers import Server
from tests.upstream.mock_clients import mock_http
from tests.upstream.openai.answering import BASE


@pytest.fixture
async def make_client():
    async with mock_http() as http_for:

        def make(server: Server, **control: Any) -> OpenAIClient:
            thinking = ThinkingControl(**control)
            return OpenAIClient(BASE + "/v1/", http=http_for(server), thinking=thinking)

        yield make
