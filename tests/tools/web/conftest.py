"""The web tools' tests reach a web of their own (pages.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools.web.pages import Web, serving


@pytest.fixture
def web() -> Iterator[Web]:
    with serving() as served:
        yield served
