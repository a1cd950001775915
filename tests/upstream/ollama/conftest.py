from __future__ import annotations

import logging

import pytest

from chat.upstream import OllamaClient
from tests.upstream.fake_servers import Server
from tests.upstream.mock_clients import mock_http
from tests.upstream.ollama.answering import BASE


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def warnings_logged():
    """The warnings of "chat.upstream", however logging is configured."""
    handler = Records()
    logger = logging.getLogger("chat.upstream")
    logger.addHandler(handler)
    yield lambda: handler.records
    logger.removeHandler(handler)


@pytest.fixture
async def make_client():
    async with mock_http() as http_for:

        def make(server: Server) -> OllamaClient:
            return OllamaClient(BASE + "/", http=http_for(server))

        yield make
