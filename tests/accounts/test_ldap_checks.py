"""The system checks of the LDAP settings (chat.checks.ldap_check)."""

from __future__ import annotations

from chat.checks import ldap_check


def ids() -> list[str]:
    return sorted(problem.id for problem in ldap_check(None))


def test_ldap_off_is_clean(settings):
    settings.LDAP_AUTH_URL = []
    settings.LDAP_AUTH_SEARCH_BASE = ""
    assert ids() == []


def test_a_complete_setup_over_start_tls_is_clean(settings):
    settings.DEBUG = False
    settings.LDAP_AUTH_URL = ["ldap://dc1.example.org"]
    settings.LDAP_AUTH_USE_TLS = True
    settings.LDAP_AUTH_SEARCH_BASE = "ou=people,dc=example,dc=org"
    settings.LDAP_AUTH_CONNECTION_USERNAME = "cn=reader,dc=example,dc=org"
    settings.LDAP_AUTH_CONNECTION_PASSWORD = "reader-secret"
    assert ids() == []


def test_a_missing_search_base_and_half_a_service_account(settings):
    settings.LDAP_AUTH_URL = ["ldaps://dc1.example.org"]
    settings.LDAP_AUTH_SEARCH_BASE = ""
    settings.LDAP_AUTH_CONNECTION_USERNAME = "cn=reader,dc=example,dc=org"
    settings.LDAP_AUTH_CONNECTION_PASSWORD = None
    assert ids() == ["chat.E110", "chat.E111"]


def test_passwords_in_clear_are_flagged_in_production(settings):
    settings.LDAP_AUTH_URL = ["ldaps://dc1.example.org", "ldap://dc2.example.org"]
    settings.LDAP_AUTH_SEARCH_BASE = "dc=example,dc=org"
    settings.LDAP_AUTH_USE_TLS = False
    settings.DEBUG = True
    assert ids() == []
    settings.DEBUG = False
    assert ids() == ["chat.W110"]
    assert "ldap://dc2.example.org" in ldap_check(None)[0].msg
