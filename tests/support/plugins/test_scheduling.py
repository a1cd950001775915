"""How the suite is split between pytest-xdist workers
(tests/support/plugins/scheduling.py) and
what each worker's servers are (tests/support/plugins/servers.py)."""

from __future__ import annotations

import pytest

from tests.support.plugins import servers
from tests.support.plugins.scheduling import units

COLLECTION = [  # as collected: browser tests sorted last (tests/conftest.py)
    "tests/live/test_a.py::test_one",
    "tests/live/test_a.py::test_two",
    "tests/test_servers.py::test_database",
    "tests/test_servers.py::test_redis",
    "tests/web/test_b.py::test_three[x]",
    "tests/web/test_b.py::test_three[y]",
    "tests/browser/test_chat.py::test_send",
    "tests/browser/test_chat.py::test_stop",
    "tests/test_servers.py::test_chromium",
]


def test_a_module_is_one_unit_in_the_collections_order():
    unit_of = units(COLLECTION)
    order = list(dict.fromkeys(unit_of[nodeid] for nodeid in COLLECTION))
    assert unit_of[COLLECTION[0]] == unit_of[COLLECTION[1]]
    assert unit_of[COLLECTION[4]] == unit_of[COLLECTION[5]]
    assert order == [
        "tests/live/test_a.py#1",
        "tests/test_servers.py#1",
        "tests/web/test_b.py#1",
        "tests/browser/test_chat.py::test_send",
        "tests/browser/test_chat.py::test_stop",
        "tests/test_servers.py#2",
    ]


def test_browser_tests_never_share_a_unit_with_the_tests_before_them():
    """docs/testing.md, G8: a module split by the browser sort is two units, so
    its browser tests are not run ahead of the async tests of later modules."""
    unit_of = units(COLLECTION)
    assert (
        unit_of["tests/test_servers.py::test_database"]
        != (unit_of["tests/test_servers.py::test_chromium"])
    )
    assert len({unit_of[n] for n in COLLECTION if "/browser/" in n}) == 2


@pytest.mark.parametrize(
    ("worker", "url", "expected"),
    [
        ("gw0", "redis://10.0.0.1:6379/0", "redis://10.0.0.1:6379/0"),
        ("gw1", "redis://10.0.0.1:6379/0", "redis://10.0.0.1:6379/1"),
        ("gw1", "redis://10.0.0.1:6379", "redis://10.0.0.1:6379/1"),
        ("gw2", "redis://:secret@host:6380/3", "redis://:secret@host:6380/5"),
        ("", "redis://10.0.0.1:6379/0", "redis://10.0.0.1:6379/0"),  # no xdist
        ("gw1", "unix:///run/redis.sock", "unix:///run/redis.sock"),
    ],
)
def test_workers_on_a_redis_from_the_environment_get_a_database_each(
    monkeypatch, worker, url, expected
):
    if worker:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    else:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert servers._worker_redis_url(url) == expected
