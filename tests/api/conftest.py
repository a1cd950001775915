"""The API's fixtures: keys, the official clients pointed at the live server,
and the stored answers they leave.

Every test that asks for an answer over the live server also waits, at its
end, until the server has no answer streaming any more: its final save lands
before the next test's flush (an answer saved after the flush would write into
the next test's tables)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import ollama
import openai
import pytest

from chat.models import ApiKey, Membership, Message, ModelProfile, Team
from tests.support.waiting import until_sync

# Bounds for a busy 2-core machine, not budgets: a passing test never waits them.
CLIENT_TIMEOUT = 30.0
# The demo profile's tag (`tests.support.plugins.fixtures.demo_profile`), a thinking
# model of the simulator, and a question for it.
MODEL = "qwen3-demo:8b"
QUESTION = "Why is the sky blue?"
ASK = [{"role": "user", "content": QUESTION}]


@dataclass
class Issued:
    """A key as its owner got it: the row and the secret."""

    api_key: ApiKey
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


def issue(user: Any, name: str = "tests", **kwargs: Any) -> Issued:
    api_key, key = ApiKey.issue(user, name, **kwargs)
    return Issued(api_key, key)


@pytest.fixture
def alice_key(alice: Any, demo_profile: Any) -> Issued:
    return issue(alice)


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_profile(tag: str, base_url: str, **fields: Any) -> ModelProfile:
    teams = fields.pop("teams", ())
    profile = ModelProfile.objects.create(tag=tag, base_url=base_url, **fields)
    if teams:
        profile.teams.set(teams)
    return profile


def team_of(name: str, *users: Any) -> Team:
    team = Team.objects.create(name=name)
    for user in users:
        Membership.objects.create(team=team, user=user)
    return team


def openai_client(live_server_url: str, key: str) -> openai.OpenAI:
    """The official client, with no retries of its own (a 429 or 503 is the
    answer under test, not something to ask again)."""
    return openai.OpenAI(
        base_url=f"{live_server_url}/v1",
        api_key=key,
        max_retries=0,
        timeout=CLIENT_TIMEOUT,
    )


def ollama_client(live_server_url: str, key: str) -> ollama.Client:
    return ollama.Client(
        host=live_server_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=CLIENT_TIMEOUT,
    )


@pytest.fixture
def oa(live_server_url: str, alice_key: Issued) -> Iterator[openai.OpenAI]:
    """Alice's official `openai` client."""
    with openai_client(live_server_url, alice_key.key) as client:
        yield client


@pytest.fixture
def ol(live_server_url: str, alice_key: Issued) -> Iterator[ollama.Client]:
    """Alice's official `ollama` client."""
    with ollama_client(live_server_url, alice_key.key) as client:
        yield client


@pytest.fixture
def http(live_server_url: str) -> Iterator[httpx.Client]:
    """Plain HTTP to the live server, for what the official clients hide."""
    with httpx.Client(base_url=live_server_url, timeout=CLIENT_TIMEOUT) as client:
        yield client


def api_answers() -> list[Message]:
    return list(
        Message.objects.answers()
        .filter(source=Message.Source.API)
        .select_related("conversation", "api_key")
        .order_by("pk")
    )


def stored_answer(status: str | None = None) -> Message:
    """The one answer asked over the API, once its final save landed (and, with
    `status`, once it ended so)."""

    def ended() -> Message | None:
        answers = api_answers()
        assert len(answers) <= 1, f"more than one API answer: {answers}"
        if not answers or answers[0].status == Message.Status.STREAMING:
            return None
        if status is not None:
            assert answers[0].status == status, answers[0].status
        return answers[0]

    return until_sync(ended, f"no API answer ended {status or ''}")


def no_answer_streaming() -> None:
    until_sync(
        lambda: not Message.objects.filter(status=Message.Status.STREAMING).exists(),
        "an answer was still streaming at the end of the test",
    )


@pytest.fixture(autouse=True)
def _answers_saved(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "live_server_url" in request.fixturenames or "daphnes" in request.fixturenames:
        no_answer_streaming()
