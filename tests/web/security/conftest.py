"""Every test of the site's defences starts with no sign-in failures counted."""

from __future__ import annotations

import pytest

from tests.web.signing_in import fresh_cache


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    """Sign-in failure counts live in the cache."""
    fresh_cache(settings)
