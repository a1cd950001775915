"""The LDAP sign-in tests' directory: one throwaway slapd per test session
(tests/accounts/ldap_server.py), emptied and filled again for each test, and
the site's settings pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.accounts.ldap_server import PEOPLE, SLAPADD, SLAPD, Slapd
from tests.support.services.processes import _in_ci
from tests.web.signing_in import fresh_cache

PEOPLE_AT_START = {
    "carol": {
        "givenName": "Carol",
        "sn": "Danvers",
        "mail": "carol@example.org",
        "password": "carol-directory-pw",
    },
    "dave": {
        "givenName": "Dave",
        "sn": "Lister",
        "mail": "dave@example.org",
        "password": "dave-directory-pw",
    },
}
GROUPS_AT_START = {"gpu-users": ["carol"], "cpu-users": ["dave"], "chat-admins": []}


@pytest.fixture(scope="session")
def slapd() -> Iterator[Slapd]:
    if not (SLAPD.exists() and SLAPADD.exists()):
        message = f"{SLAPD} is missing: run scripts/ensure-slapd.sh (make test does)"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    server = Slapd().start()
    yield server
    server.stop()


@pytest.fixture
def directory(slapd: Slapd, settings, db) -> Slapd:
    """The directory with `PEOPLE_AT_START` and `GROUPS_AT_START`, the site
    signing people in against it (groups from memberOf), and a sign-in failure
    count of the test's own."""
    slapd.reset(PEOPLE_AT_START, GROUPS_AT_START)
    fresh_cache(settings)
    settings.LDAP_AUTH_URL = [slapd.url]
    settings.LDAP_AUTH_SEARCH_BASE = PEOPLE
    settings.CHATSITE_LDAP_GROUPS_ATTRIBUTE = "memberOf"
    settings.CHATSITE_LDAP_GROUP_SEARCH_BASE = ""
    settings.LDAP_AUTH_CONNECT_TIMEOUT = settings.LDAP_AUTH_RECEIVE_TIMEOUT = 5
    return slapd
