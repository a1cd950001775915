"""LDAP sign-in against a real slapd (tests/accounts/conftest.py): the site's
username and password form, chat.accounts.ldap, then the provisioning seam."""

from __future__ import annotations

import socket
import ssl
import uuid

import ldap3
import pytest
from django.contrib.auth import aauthenticate, get_user_model
from django.test import Client

from chat.accounts.ldap import NO_IDENTIFIER_MESSAGE, UNREACHABLE_MESSAGE, _identifier
from chat.models import AuditEvent, Conversation, ExternalAccount, GroupRule, Team
from tests.accounts.conftest import PEOPLE_AT_START
from tests.accounts.ldap_server import GROUPS, READER_DN, READER_PASSWORD
from tests.conftest import PASSWORDS
from tests.support.services.processes import _free_port
from tests.web.signing_in import sign_in

User = get_user_model()
TLS_ARGS = {"validate": ssl.CERT_REQUIRED}
WRONG = "Please enter a correct username and password"


def password(uid: str) -> str:
    return PEOPLE_AT_START[uid]["password"]


def signs_in(client: Client, uid: str, pw: str | None = None) -> bool:
    response = sign_in(client, uid, pw or password(uid))
    return response.status_code == 302 and "_auth_user_id" in client.session


def form_errors(response) -> str:
    assert response.status_code == 200, response.status_code
    return " ".join(response.context["form"].non_field_errors())


@pytest.fixture
def rules(db):
    gpu, cpu = Team.objects.create(name="GPU"), Team.objects.create(name="CPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    GroupRule.objects.create(group="cpu-users", team=cpu)
    GroupRule.objects.create(group="chat-admins", makes_staff=True)
    return gpu, cpu


def test_first_sign_in_creates_the_account(client, directory):
    assert signs_in(client, "carol")
    carol = User.objects.get(username="carol")
    assert (carol.email, carol.first_name, carol.last_name) == (
        "carol@example.org",
        "Carol",
        "Danvers",
    )
    assert not carol.has_usable_password()  # the directory checks it, never us
    link = ExternalAccount.objects.get(user=carol)
    assert link.method == "ldap"
    assert len(link.subject) == 36  # entryUUID, not the username
    assert AuditEvent.objects.filter(
        kind=AuditEvent.Kind.ACCOUNT_CREATED, subject=carol, method="ldap"
    ).exists()


def test_the_directory_spelling_of_the_username_is_kept(client, directory):
    assert signs_in(client, "CAROL", password("carol"))
    assert User.objects.filter(username="carol").count() == 1
    assert signs_in(Client(), "carol")
    assert User.objects.count() == 1


def test_later_sign_ins_update_name_and_email(client, directory):
    assert signs_in(client, "carol")
    directory.modify_user("carol", mail="carol@corp.example.org", givenName="Carrie")
    assert signs_in(Client(), "carol")
    carol = User.objects.get(username="carol")
    assert (carol.email, carol.first_name) == ("carol@corp.example.org", "Carrie")
    assert User.objects.count() == 1


def test_groups_map_to_teams_and_staff(client, directory, rules):
    gpu, cpu = rules
    directory.add_to_group("carol", "chat-admins")
    assert signs_in(client, "carol")
    carol = User.objects.get(username="carol")
    assert list(carol.teams.all()) == [gpu]
    assert carol.is_staff


def test_a_user_moved_between_groups_follows_at_next_sign_in(client, directory, rules):
    gpu, cpu = rules
    assert signs_in(client, "carol")
    carol = User.objects.get(username="carol")
    assert list(carol.teams.all()) == [gpu]
    directory.remove_from_group("carol", "gpu-users")
    directory.add_to_group("carol", "cpu-users")
    assert list(carol.teams.all()) == [gpu]  # nothing changes until she signs in
    assert signs_in(Client(), "carol")
    assert list(carol.teams.all()) == [cpu]
    moved = AuditEvent.objects.filter(
        kind=AuditEvent.Kind.MEMBERSHIP_CHANGED, subject=carol
    ).latest("pk")
    assert moved.detail["joined"] == ["CPU"] and moved.detail["left"] == ["GPU"]


def test_a_group_taken_away_takes_staff_away(client, directory, rules):
    directory.add_to_group("carol", "chat-admins")
    assert signs_in(client, "carol")
    directory.remove_from_group("carol", "chat-admins")
    assert signs_in(Client(), "carol")
    assert not User.objects.get(username="carol").is_staff


def test_groups_found_by_a_search_with_a_service_account(
    client, directory, settings, db
):
    """No memberOf: the groups naming the person's DN, searched as the
    service account; a rule may name a group by its full DN."""
    settings.CHATSITE_LDAP_GROUPS_ATTRIBUTE = ""
    settings.CHATSITE_LDAP_GROUP_SEARCH_BASE = GROUPS
    settings.LDAP_AUTH_CONNECTION_USERNAME = READER_DN
    settings.LDAP_AUTH_CONNECTION_PASSWORD = READER_PASSWORD
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group=f"cn=gpu-users,{GROUPS}", source="ldap", team=gpu)
    assert signs_in(client, "carol")
    assert list(User.objects.get(username="carol").teams.all()) == [gpu]


def test_rules_for_the_other_provider_are_not_applied(client, directory):
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", source="oidc", team=gpu)
    assert signs_in(client, "carol")
    assert not User.objects.get(username="carol").teams.exists()


def test_wrong_password(client, directory):
    response = sign_in(client, "carol", "not-her-password")
    assert WRONG in form_errors(response)
    assert not User.objects.filter(username="carol").exists()


def test_unknown_username(client, directory):
    assert WRONG in form_errors(sign_in(client, "nobody-here", "whatever-pw"))
    assert not User.objects.exists()


@pytest.mark.parametrize("typed", ["*", "car*", "carol)(uid=*", "uid=carol"])
def test_usernames_are_not_filters_or_dns(client, directory, typed):
    assert WRONG in form_errors(sign_in(client, typed, password("carol")))
    assert not User.objects.exists()


def test_the_user_filter_limits_who_may_sign_in(client, directory, settings):
    settings.CHATSITE_LDAP_USER_FILTER = f"memberOf=cn=gpu-users,{GROUPS}"
    assert WRONG in form_errors(sign_in(client, "dave", password("dave")))
    assert signs_in(client, "carol")


def test_ldap_unreachable(client, directory, settings, admin_user):
    """A clear message, no account, an audit event; local admins still sign in."""
    settings.LDAP_AUTH_URL = [f"ldap://127.0.0.1:{_free_port()}"]  # nothing there
    response = sign_in(client, "carol", password("carol"))
    assert UNREACHABLE_MESSAGE in form_errors(response)
    assert not User.objects.filter(username="carol").exists()
    assert AuditEvent.objects.filter(
        kind=AuditEvent.Kind.SIGN_IN_FAILED, username="carol", method="ldap"
    ).exists()
    assert signs_in(Client(), "admin", PASSWORDS["admin"])


def test_ldap_answering_nothing(client, directory, settings):
    """A server that takes the connection and never answers is an outage too,
    given up on after the timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts; no one ever reads
        settings.LDAP_AUTH_URL = [f"ldap://127.0.0.1:{silent.getsockname()[1]}"]
        settings.LDAP_AUTH_CONNECT_TIMEOUT = settings.LDAP_AUTH_RECEIVE_TIMEOUT = 1
        response = sign_in(client, "carol", password("carol"))
    assert UNREACHABLE_MESSAGE in form_errors(response)
    assert not User.objects.exists()


def test_start_tls_with_the_directory_certificate_checked(client, directory, settings):
    settings.LDAP_AUTH_USE_TLS = True
    settings.LDAP_AUTH_TLS_ARGS = {**TLS_ARGS, "ca_certs_file": str(directory.ca_file)}
    assert signs_in(client, "carol")


def test_start_tls_refuses_a_certificate_it_cannot_check(client, directory, settings):
    """The test CA is not among the system's: the password is never sent, and
    the person is told the directory does not answer."""
    settings.LDAP_AUTH_USE_TLS = True
    assert settings.LDAP_AUTH_TLS_ARGS == TLS_ARGS  # the site's own default
    response = sign_in(client, "carol", password("carol"))
    assert UNREACHABLE_MESSAGE in form_errors(response)
    assert not User.objects.exists()


def test_ldaps_checks_the_certificate_too(client, directory, settings):
    """As chatsite/settings.py sets it up for an ldaps:// URL: without the
    test CA the certificate does not check out."""
    settings.LDAP_AUTH_URL = [directory.ldaps_url]
    settings.LDAP_AUTH_CONNECT_ARGS = {"tls": ldap3.Tls(**TLS_ARGS)}
    response = sign_in(client, "carol", password("carol"))
    assert UNREACHABLE_MESSAGE in form_errors(response)
    tls = ldap3.Tls(**TLS_ARGS, ca_certs_file=str(directory.ca_file))
    settings.LDAP_AUTH_CONNECT_ARGS = {"tls": tls}
    assert signs_in(client, "carol")


def test_a_second_server_takes_over(client, directory, settings):
    settings.LDAP_AUTH_URL = [f"ldap://127.0.0.1:{_free_port()}", directory.url]
    assert signs_in(client, "carol")


def test_a_user_removed_from_the_directory_is_refused(client, directory, demo_profile):
    assert signs_in(client, "carol")
    carol = User.objects.get(username="carol")
    kept = Conversation.objects.create(owner=carol, model_profile=demo_profile)
    directory.remove_user("carol")
    assert WRONG in form_errors(sign_in(Client(), "carol", password("carol")))
    kept.refresh_from_db()
    assert kept.owner == carol  # their conversations stay theirs


def test_a_username_reused_in_the_directory_is_not_the_old_account(client, directory):
    assert signs_in(client, "carol")
    directory.remove_user("carol")
    directory.add_user("carol", givenName="Carol", sn="Other", password="new-pw-123")
    errors = form_errors(sign_in(Client(), "carol", "new-pw-123"))
    assert "already exists here and is not linked" in errors
    assert User.objects.get(username="carol").last_name == "Danvers"


def test_a_local_account_of_that_name_is_not_taken_over(client, directory, db):
    User.objects.create_user("carol", password="local-password-1")
    errors = form_errors(sign_in(client, "carol", password("carol")))
    assert "already exists here and is not linked" in errors
    assert not ExternalAccount.objects.exists()


def test_email_domain_allowlist(client, directory, settings):
    settings.CHATSITE_ALLOWED_EMAIL_DOMAINS = ["corp.example.org"]
    errors = form_errors(sign_in(client, "carol", password("carol")))
    assert "only for email addresses of corp.example.org" in errors
    assert not User.objects.exists()


def test_a_switched_off_account_is_refused(client, directory):
    assert signs_in(client, "carol")
    User.objects.filter(username="carol").update(is_active=False)
    errors = form_errors(sign_in(Client(), "carol", password("carol")))
    assert "switched off" in errors


def test_a_missing_identifier_attribute_is_refused(client, directory, settings):
    settings.CHATSITE_LDAP_ID_ATTRIBUTE = "employeeNumber"
    assert NO_IDENTIFIER_MESSAGE in form_errors(
        sign_in(client, "carol", password("carol"))
    )
    assert not User.objects.exists()


def test_ldap_off_asks_no_directory(client, directory, settings):
    settings.LDAP_AUTH_URL = []
    assert WRONG in form_errors(sign_in(client, "carol", password("carol")))


def test_local_accounts_sign_in_beside_the_directory(client, directory, alice):
    assert signs_in(client, "alice", PASSWORDS["alice"])


def test_an_active_directory_guid_reads_as_its_tools_write_it():
    """objectGUID is 16 bytes, little-endian in its first three fields."""
    guid = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    assert _identifier(guid.bytes_le) == str(guid)
    assert _identifier(b"bd5ca006-823a-1041-83e8-2d820e5277c1") == (
        "bd5ca006-823a-1041-83e8-2d820e5277c1"
    )


def test_attempts_during_an_outage_are_not_counted_as_failures(
    client, directory, settings
):
    """Else everyone who tried during an outage (an office behind one address
    even more) would be locked out for the window after it."""
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    settings.SIGNIN_FAILURES_PER_ADDRESS = 2
    working = settings.LDAP_AUTH_URL
    settings.LDAP_AUTH_URL = [f"ldap://127.0.0.1:{_free_port()}"]
    for _ in range(4):
        response = sign_in(client, "carol", password("carol"))
        assert UNREACHABLE_MESSAGE in form_errors(response)
    settings.LDAP_AUTH_URL = working
    assert signs_in(client, "carol")


def test_wrong_passwords_are_still_counted(client, directory, settings):
    settings.SIGNIN_FAILURES_PER_USERNAME = 2
    for _ in range(2):
        assert WRONG in form_errors(sign_in(client, "carol", "not-her-password"))
    response = sign_in(client, "carol", password("carol"))
    assert response.status_code == 429


@pytest.mark.django_db(transaction=True)  # docs/testing.md, G1
async def test_async_sign_in_asks_the_directory(directory):
    user = await aauthenticate(username="carol", password=password("carol"))
    assert user is not None and user.username == "carol"
    assert await aauthenticate(username="carol", password="not-her-password") is None


def test_local_passwords_off_keeps_the_directory_form_only(
    client, directory, settings, alice, admin_user
):
    settings.CHATSITE_LOCAL_SIGNIN = False
    page = client.get("/login/").content.decode()
    assert 'name="password"' in page  # the directory's passwords still sign in
    assert WRONG in form_errors(sign_in(client, "alice", PASSWORDS["alice"]))
    assert signs_in(client, "carol")
    # Staff keep the admin's own sign-in page with their local password.
    admin = Client()
    response = admin.post(
        "/admin/login/?next=/admin/",
        {"username": admin_user.username, "password": PASSWORDS["admin"]},
    )
    assert response.status_code == 302 and "_auth_user_id" in admin.session
