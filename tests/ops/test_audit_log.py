"""The audit log's staff page (chat.ops.audit_log): newest first, filters by
kind, person and address, a page at a time; staff only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import AuditEvent
from chat.ops.audit_log import PER_PAGE

pytestmark = pytest.mark.django_db

Kind = AuditEvent.Kind
URL = reverse("admin_audit_log")


def rows(response) -> list[str]:
    html = response.content.decode()
    if "<tbody>" not in html:
        return []
    return html.split("<tbody>")[1].split("</tbody>")[0].split("<tr")[1:]


@pytest.fixture
def log(alice, bob, admin_user):
    AuditEvent.objects.all().delete()  # admin_client's own sign-in
    AuditEvent.record(
        Kind.SIGN_IN, actor=alice, subject=alice, address="192.0.2.1", method="oidc"
    )
    AuditEvent.record(
        Kind.SIGN_IN_FAILED,
        username="mallory",
        address="198.51.100.9",
        method="password",
    )
    AuditEvent.record(
        Kind.ROLE_CHANGED,
        actor=alice,
        subject=bob,
        address="192.0.2.1",
        team="Research",
    )


def test_the_admin_index_links_the_audit_log(admin_client):
    assert f'href="{URL}"' in admin_client.get(reverse("admin:index")).content.decode()


def test_anonymous_and_non_staff_are_sent_to_the_admin_login(client, alice_client):
    for someone in (client, alice_client):
        response = someone.get(URL)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))


def test_the_log_lists_the_newest_first_with_actor_subject_and_address(
    admin_client, log
):
    response = admin_client.get(URL)
    assert response.status_code == 200
    listed = rows(response)
    assert len(listed) == 3
    assert "Role changed" in listed[0] and "alice" in listed[0] and "bob" in listed[0]
    assert "team: Research" in listed[0]
    assert "Sign-in failed" in listed[1] and "mallory" in listed[1]
    assert "198.51.100.9" in listed[1] and "password" in listed[1]
    assert "Signed in" in listed[2] and "oidc" in listed[2]


def test_filter_by_kind(admin_client, log):
    listed = rows(admin_client.get(URL, {"kind": Kind.SIGN_IN_FAILED}))
    assert len(listed) == 1 and "mallory" in listed[0]


def test_filter_by_person_matches_actor_subject_or_username(admin_client, log):
    assert len(rows(admin_client.get(URL, {"user": "alice"}))) == 2
    assert len(rows(admin_client.get(URL, {"user": "BOB"}))) == 1
    assert len(rows(admin_client.get(URL, {"user": "mallory"}))) == 1


def test_filter_by_address(admin_client, log):
    assert len(rows(admin_client.get(URL, {"address": "192.0.2.1"}))) == 2


def test_nothing_matching_says_so(admin_client, log):
    response = admin_client.get(URL, {"user": "nobody"})
    assert (
        response.status_code == 200 and "No events match." in response.content.decode()
    )


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"kind": "made_up"}, "Select a valid choice."),
        ({"user": "x" * 151}, "Ensure this value has at most 150 characters"),
        ({"address": "1" * 46}, "Ensure this value has at most 45 characters"),
    ],
)
def test_a_bad_filter_is_explained(admin_client, log, query, error):
    response = admin_client.get(URL, query)
    assert response.status_code == 400
    assert error in response.content.decode()
    assert rows(response) == []


def test_paging_keeps_the_filter(admin_client, alice):
    AuditEvent.objects.all().delete()
    AuditEvent.objects.bulk_create(
        AuditEvent(
            kind=Kind.SIGN_IN, username="alice", address=f"10.0.{i // 256}.{i % 256}"
        )
        for i in range(PER_PAGE + 5)
    )
    AuditEvent.record(Kind.SIGN_OUT, username="alice")
    first = admin_client.get(URL, {"kind": Kind.SIGN_IN})
    html = first.content.decode()
    assert len(rows(first)) == PER_PAGE
    assert "Page 1 of 2" in html and "kind=sign_in&amp;page=2" in html
    second = admin_client.get(URL, {"kind": Kind.SIGN_IN, "page": 2})
    assert (
        len(rows(second)) == 5 and "kind=sign_in&amp;page=1" in second.content.decode()
    )


@pytest.mark.parametrize(("page", "shown"), [("99", 2), ("abc", 1), ("-1", 2)])
def test_a_page_out_of_range_shows_the_nearest(admin_client, alice, page, shown):
    AuditEvent.objects.all().delete()
    AuditEvent.objects.bulk_create(
        AuditEvent(kind=Kind.SIGN_IN, username="alice") for _ in range(PER_PAGE + 1)
    )
    response = admin_client.get(URL, {"page": page})
    assert response.status_code == 200
    assert f"Page {shown} of 2" in response.content.decode()


def test_a_post_is_refused(admin_client):
    assert admin_client.post(URL).status_code == 405
