"""API keys in the admin (chat.admin.records.ApiKeyAdmin): listed for staff, read
only, never added there, revoked by an action that is audited; and the site's
API switch in Site defaults."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from chat.models import ApiKey, AuditEvent, SiteDefaults, Team

pytestmark = pytest.mark.django_db

LIST = reverse("admin:chat_apikey_changelist")


@pytest.fixture
def keys(alice, bob):
    laptop, _ = ApiKey.issue(alice, "laptop")
    report, _ = ApiKey.issue(bob, "nightly report")
    AuditEvent.objects.all().delete()
    return laptop, report


def revoke(client, *api_keys, **extra):
    data = {"action": "revoke_selected", "_selected_action": [k.pk for k in api_keys]}
    return client.post(LIST, data, **extra)


def test_staff_see_everyones_keys_with_their_state_and_use(admin_client, keys):
    laptop, report = keys
    ApiKey.objects.filter(pk=laptop.pk).update(
        last_used_at=timezone.now(), last_used_from="192.0.2.10"
    )
    report.revoke(actor=None)
    page = admin_client.get(LIST).content.decode()
    for expected in ("laptop", "nightly report", "alice", "bob", "192.0.2.10"):
        assert expected in page
    assert f"{laptop.shown}…" in page and "revoked" in page and "active" in page


def test_keys_are_found_by_owner_name_and_shown_beginning(admin_client, keys):
    laptop, report = keys
    for query, found in (("bob", report), ("laptop", laptop), (laptop.shown, laptop)):
        listed = admin_client.get(LIST, {"q": query}).context["cl"].result_list
        assert list(listed) == [found]


def test_keys_are_filtered_by_state_and_owner(admin_client, keys, alice):
    laptop, report = keys
    report.revoke(actor=None)

    def listed(**filters):
        return set(admin_client.get(LIST, filters).context["cl"].result_list)

    assert listed(state="revoked") == {report}
    assert listed(state="active") == {laptop}
    assert listed(state="expired") == set()
    assert listed(user__id__exact=alice.pk) == {laptop}


def test_keys_are_not_added_changed_or_deleted_in_the_admin(admin_client, keys):
    laptop, _ = keys
    assert admin_client.get(reverse("admin:chat_apikey_add")).status_code == 403
    change = reverse("admin:chat_apikey_change", args=[laptop.pk])
    page = admin_client.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert admin_client.post(change, {"name": "renamed"}).status_code == 403
    delete = reverse("admin:chat_apikey_delete", args=[laptop.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    laptop.refresh_from_db()
    assert laptop.name == "laptop"


def test_revoking_keys_in_the_admin_is_audited(admin_client, admin_user, keys):
    laptop, report = keys
    response = revoke(admin_client, laptop, report, REMOTE_ADDR="192.0.2.20")
    assert response.status_code == 302
    assert {k.state for k in ApiKey.objects.all()} == {"revoked"}
    events = AuditEvent.objects.filter(kind=AuditEvent.Kind.API_KEY_REVOKED)
    assert {(e.username, e.actor, e.address, e.method) for e in events} == {
        ("alice", admin_user, "192.0.2.20", "admin"),
        ("bob", admin_user, "192.0.2.20", "admin"),
    }
    assert ApiKey.objects.get(pk=laptop.pk).revoked_by == admin_user


def test_revoking_keys_already_revoked_says_so_and_records_nothing(admin_client, keys):
    laptop, report = keys
    laptop.revoke(actor=None)
    AuditEvent.objects.all().delete()
    response = revoke(admin_client, laptop, report, follow=True)
    assert "Revoked 1 key (1 already were)." in response.content.decode()
    assert AuditEvent.objects.get().username == "bob"


def test_staff_who_may_only_view_keys_cannot_revoke_them(
    client, django_user_model, keys
):
    viewer = django_user_model.objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_apikey"))
    client.force_login(viewer)
    page = client.get(LIST)
    assert page.status_code == 200 and "revoke_selected" not in page.content.decode()
    revoke(client, *keys)
    assert {k.state for k in ApiKey.objects.all()} == {"active"}


def test_the_sites_api_switch_and_teams_are_in_site_defaults(admin_client):
    team = Team.objects.create(name="GPU")
    site = SiteDefaults.load()
    page = admin_client.get(reverse("admin:chat_sitedefaults_change", args=[site.pk]))
    html = page.content.decode()
    assert ">API<" in html and 'name="api_enabled"' in html
    # filter_horizontal's two lists, offering the teams.
    assert 'class="selectfilter" data-field-name="API for teams"' in html
    assert f'<option value="{team.pk}">GPU</option>' in html


def test_the_keys_state_is_in_the_admins_language(admin_client, keys):
    html = admin_client.get(LIST, HTTP_ACCEPT_LANGUAGE="zh-CN").content.decode()
    assert "有效" in html and ">active<" not in html
