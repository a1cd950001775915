from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_busy_retry_pauses(settings):
    """A busy server is asked again at once: the retries' pauses are not tested
    here but in `test_retry`."""
    settings.UPSTREAM_BUSY_RETRY_DELAYS = (0.0, 0.0, 0.0)
