"""Usernames that look alike (chat.accounts.usernames): refused in the admin's
user forms as on the sign-up pages and at a provider's first sign-in
(tests/accounts/test_provisioning.py, tests/web/teams/test_invitations.py); those from
before are listed, never a crash."""

from __future__ import annotations

import html
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from chat.accounts.usernames import look_alike_groups, skeleton

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "name", ["PV_LOCAL", "pv_local ", "pv_loсal", "ｐｖ＿ｌｏｃａｌ", "pv_1ocal"]
)
def test_look_alikes_share_a_skeleton(name):
    assert skeleton(name) == skeleton("pv_local")


@pytest.mark.parametrize("name", ["pv_locals", "pv-local", "张三", "bob"])
def test_other_names_do_not(name):
    assert skeleton(name) != skeleton("pv_local")


def _add(admin_client, username):
    return admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": username,
            "password1": "a-long-password-1",
            "password2": "a-long-password-1",
            "usable_password": "true",
        },
    )


def test_the_admin_cannot_add_a_look_alike(admin_client, alice, django_user_model):
    response = _add(admin_client, "aliсe")  # a Cyrillic с
    assert response.status_code == 200
    assert "looks like the existing account “alice”" in html.unescape(
        response.content.decode()
    )
    assert _add(admin_client, "dave").status_code == 302
    assert django_user_model.objects.filter(username="dave").exists()


def test_the_admin_cannot_rename_into_a_look_alike(admin_client, alice, bob):
    url = reverse("admin:auth_user_change", args=[bob.pk])
    form = {
        "username": "aliсe",  # a Cyrillic с
        "email": bob.email,
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
    }
    response = admin_client.post(url, form)
    assert "looks like the existing account “alice”" in html.unescape(
        response.content.decode()
    )
    bob.refresh_from_db()
    assert bob.username == "bob"
    # Its own name, kept, is no look-alike of itself.
    assert admin_client.post(url, {**form, "username": "bob"}).status_code == 302


def test_existing_look_alikes_are_listed(django_user_model, alice):
    django_user_model.objects.create_user("ALICE")
    django_user_model.objects.create_user("aliсe")
    django_user_model.objects.create_user("carol")
    assert look_alike_groups() == [["alice", "ALICE", "aliсe"]]
    out = StringIO()
    call_command("look_alike_usernames", stdout=out)
    assert "'alice', 'ALICE', 'aliсe'" in out.getvalue()
    assert "1 group of usernames that look alike." in out.getvalue()
