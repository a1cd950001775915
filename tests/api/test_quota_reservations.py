"""An output-token quota holds under concurrency: ten API requests asked at once
by the official `openai` client, on the live server with PostgreSQL, take no
more than the limit (each admitted answer reserves what it may use, and the
model server is asked for no more); the others are refused with the quota's
own 429."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from chat.models import Message, SiteDefaults, quotas
from tests.api.conftest import ASK, MODEL, api_answers, no_answer_streaming

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 300
REQUESTS = 10


def ask_at_once(client: openai.OpenAI, **kwargs: Any) -> list[Any]:
    """REQUESTS answers asked together: each one's completion or its error."""
    start = threading.Barrier(REQUESTS)

    def one(_: int) -> Any:
        start.wait(timeout=30)
        try:
            return client.chat.completions.create(model=MODEL, messages=ASK, **kwargs)
        except openai.APIError as exc:
            return exc

    with ThreadPoolExecutor(REQUESTS) as pool:
        return list(pool.map(one, range(REQUESTS)))


@pytest.mark.parametrize(
    ("max_tokens", "admitted"),
    [(None, 1), (100, 3)],
    ids=["the-remaining-allowance", "max-tokens"],
)
def test_ten_requests_at_once_stay_within_the_token_quota(
    oa, alice, simulator, max_tokens, admitted
):
    site = SiteDefaults.load()
    site.user_output_tokens = LIMIT
    site.save()  # the default 3 running answers per user stays
    # 300 tokens an answer, unless it is asked for fewer; long enough to overlap.
    simulator.config.think_tokens, simulator.config.answer_tokens = 50, 250
    simulator.config.tps = 300
    extra = {} if max_tokens is None else {"max_tokens": max_tokens}

    results = ask_at_once(oa, **extra)
    no_answer_streaming()

    answered = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(answered) == admitted
    for error in refused:
        assert isinstance(error, openai.RateLimitError), error
        assert error.code == "quota_reached"
        assert error.body["message"].startswith(
            f"Your quota is reached ({LIMIT} of {LIMIT} output tokens)"
        )
    # Each admitted answer asked the model for no more than it reserved.
    reservation = max_tokens or LIMIT
    assert [e.body["options"]["num_predict"] for e in simulator.log] == [
        reservation
    ] * admitted
    stored = api_answers()
    assert [a.status for a in stored] == [Message.Status.DONE] * admitted
    used = quotas.usage(alice, "day")[1]
    assert used == sum(a.usage.completion_tokens for a in answered)
    assert used <= LIMIT  # the overshoot allowed is one reservation: here none
