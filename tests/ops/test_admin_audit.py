"""The Django admin's identity parts: Groups hidden, group rules, the read-only
audit log, and the admin's changes of access, quotas and memberships audited
(chat.admin, chat.ops.admin_audit)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import AuditEvent, GroupRule, Membership, SiteDefaults, Team
from tests.ops.admin_forms import posted

pytestmark = pytest.mark.django_db

Kind = AuditEvent.Kind


def changes() -> list[AuditEvent]:
    return list(AuditEvent.objects.exclude(kind=Kind.SIGN_IN).order_by("pk"))


def test_django_groups_are_hidden_and_group_rules_shown(admin_client):
    html = admin_client.get(reverse("admin:index")).content.decode()
    assert reverse("admin:chat_grouprule_changelist") in html
    assert "/admin/auth/group/" not in html
    assert admin_client.get("/admin/auth/group/").status_code == 404


def test_a_group_rule_is_made_in_the_admin(admin_client):
    team = Team.objects.create(name="GPU")
    response = admin_client.post(
        reverse("admin:chat_grouprule_add"),
        {"group": "gpu-users", "source": "any", "team": team.pk, "team_role": "member"},
    )
    assert response.status_code == 302
    rule = GroupRule.objects.get()
    assert (rule.group, rule.team, rule.makes_staff) == ("gpu-users", team, False)
    listing = admin_client.get(reverse("admin:chat_grouprule_changelist"))
    assert "gpu-users" in listing.content.decode()


def test_a_group_rule_without_a_group_is_refused(admin_client):
    response = admin_client.post(
        reverse("admin:chat_grouprule_add"),
        {"group": "", "source": "any", "team_role": "member"},
    )
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not GroupRule.objects.exists()


def test_the_audit_log_in_the_admin_is_read_only(admin_client, alice):
    event = AuditEvent.record(Kind.SIGN_IN, subject=alice, address="192.0.2.1")
    listing = admin_client.get(reverse("admin:chat_auditevent_changelist"))
    assert listing.status_code == 200 and "192.0.2.1" in listing.content.decode()
    assert admin_client.get(reverse("admin:chat_auditevent_add")).status_code == 403
    change = reverse("admin:chat_auditevent_change", args=[event.pk])
    page = admin_client.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    response = admin_client.post(change, {"kind": "sign_out", "address": "x"})
    assert response.status_code == 403
    delete = reverse("admin:chat_auditevent_delete", args=[event.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    event.refresh_from_db()
    assert (event.kind, event.address) == (Kind.SIGN_IN, "192.0.2.1")


# --- Access changes: a model profile's teams ---


def test_limiting_a_model_to_teams_is_audited(admin_client, admin_user, demo_profile):
    gpu, ops = Team.objects.create(name="GPU"), Team.objects.create(name="Ops")
    url = reverse("admin:chat_modelprofile_change", args=[demo_profile.pk])
    response = admin_client.post(
        url, posted(admin_client.get(url), teams=[gpu, ops]), REMOTE_ADDR="192.0.2.4"
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert set(demo_profile.teams.all()) == {gpu, ops}
    [event] = changes()
    assert (event.kind, event.actor, event.address) == (
        Kind.ACCESS_CHANGED,
        admin_user,
        "192.0.2.4",
    )
    assert event.detail["added"] == ["GPU", "Ops"] and event.detail["removed"] == []
    assert event.detail["object"] == str(demo_profile)

    admin_client.post(url, posted(admin_client.get(url), teams=[ops]))
    last = changes()[-1]
    assert (last.detail["removed"], last.detail["now"]) == (["GPU"], ["Ops"])


def test_saving_a_model_without_changing_its_teams_records_nothing(
    admin_client, demo_profile
):
    url = reverse("admin:chat_modelprofile_change", args=[demo_profile.pk])
    response = admin_client.post(url, posted(admin_client.get(url), display_name="X"))
    assert response.status_code == 302
    assert changes() == []


# --- Quota changes ---


def test_a_site_quota_change_is_audited(admin_client, admin_user):
    site = SiteDefaults.load()
    url = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    data = posted(admin_client.get(url), user_output_tokens=5000, quota_period="month")
    assert admin_client.post(url, data).status_code == 302
    [event] = changes()
    assert (event.kind, event.actor) == (Kind.QUOTA_CHANGED, admin_user)
    assert event.detail["changes"] == {
        "quota_period": ["day", "month"],
        "user_output_tokens": [0, 5000],
    }


def test_a_bad_quota_is_refused_and_not_audited(admin_client):
    site = SiteDefaults.load()
    url = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    data = posted(admin_client.get(url), user_answers=-3)
    response = admin_client.post(url, data)
    assert response.status_code == 200
    assert (
        "Ensure this value is greater than or equal to 0." in response.content.decode()
    )
    assert changes() == []


# --- The site's API: on or off, and for which teams ---


def test_switching_the_api_off_and_limiting_it_to_teams_is_audited(
    admin_client, admin_user
):
    gpu = Team.objects.create(name="GPU")
    site = SiteDefaults.load()
    url = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    data = posted(admin_client.get(url), api_enabled=False, api_teams=[gpu])
    response = admin_client.post(url, data, REMOTE_ADDR="192.0.2.6")
    assert response.status_code == 302, response.content.decode()[:2000]
    site.refresh_from_db()
    assert not site.api_enabled and list(site.api_teams.all()) == [gpu]
    switched, teams = changes()
    assert (switched.kind, switched.actor, switched.address) == (
        Kind.ACCESS_CHANGED,
        admin_user,
        "192.0.2.6",
    )
    assert switched.detail["changes"] == {"api_enabled": [True, False]}
    assert (teams.kind, teams.detail["field"], teams.detail["added"]) == (
        Kind.ACCESS_CHANGED,
        "api_teams",
        ["GPU"],
    )


def test_saving_the_site_defaults_without_touching_the_api_records_nothing(
    admin_client,
):
    site = SiteDefaults.load()
    url = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    assert admin_client.post(url, posted(admin_client.get(url))).status_code == 302
    assert changes() == []
    site.refresh_from_db()
    assert site.api_enabled


# --- Teams in the admin ---


@pytest.fixture
def team(alice, bob):
    team = Team.objects.create(name="Research")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    Membership.objects.create(team=team, user=bob)
    return team


def test_team_quota_and_membership_changes_in_the_admin_are_audited(
    admin_client, admin_user, team, alice, bob, django_user_model
):
    carol = django_user_model.objects.create_user("carol")
    url = reverse("admin:chat_team_change", args=[team.pk])
    page = admin_client.get(url)
    forms = page.context["inline_admin_formsets"][0].formset.forms
    index = {form.instance.user_id: i for i, form in enumerate(forms)}
    data = posted(
        page,
        member_answers=20,
        **{
            f"memberships-{index[bob.pk]}-role": "admin",
            f"memberships-{index[alice.pk]}-DELETE": True,
            "memberships-TOTAL_FORMS": len(forms) + 1,
            f"memberships-{len(forms)}-user": carol.pk,
            f"memberships-{len(forms)}-role": "member",
            f"memberships-{len(forms)}-team": team.pk,
        },
    )
    response = admin_client.post(url, data, REMOTE_ADDR="192.0.2.5")
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert dict(team.memberships.values_list("user__username", "role")) == {
        "bob": "admin",
        "carol": "member",
    }
    found = {(e.kind, e.username): e for e in changes()}
    quota = found[(Kind.QUOTA_CHANGED, "")]
    assert quota.detail["changes"] == {"member_answers": [0, 20]}
    assert found[(Kind.MEMBERSHIP_CHANGED, "alice")].detail["left"] is True
    assert found[(Kind.MEMBERSHIP_CHANGED, "carol")].detail["joined"] is True
    role = found[(Kind.ROLE_CHANGED, "bob")]
    assert role.detail["role"] == ["member", "admin"]
    assert (role.actor, role.address, role.detail["via"]) == (
        admin_user,
        "192.0.2.5",
        "admin",
    )
    assert len(found) == 4


def test_saving_a_team_unchanged_records_nothing(admin_client, team):
    url = reverse("admin:chat_team_change", args=[team.pk])
    assert admin_client.post(url, posted(admin_client.get(url))).status_code == 302
    assert changes() == []


def test_the_team_admin_links_the_team_page(admin_client, team):
    html = admin_client.get(reverse("admin:chat_team_change", args=[team.pk]))
    assert reverse("team_manage", args=[team.pk]) in html.content.decode()


# --- People: staff and switched-off accounts ---


def test_making_someone_staff_is_a_role_change(admin_client, admin_user, alice):
    url = reverse("admin:auth_user_change", args=[alice.pk])
    page = admin_client.get(url)
    assert 'name="groups"' not in page.content.decode()
    response = admin_client.post(
        url, posted(page, is_staff=True), REMOTE_ADDR="192.0.2.6"
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    alice.refresh_from_db()
    assert alice.is_staff
    [event] = changes()
    assert (event.kind, event.actor, event.subject, event.address) == (
        Kind.ROLE_CHANGED,
        admin_user,
        alice,
        "192.0.2.6",
    )
    assert event.detail["changes"] == {"is_staff": [False, True]}


def test_switching_an_account_off_is_an_access_change(admin_client, alice):
    url = reverse("admin:auth_user_change", args=[alice.pk])
    admin_client.post(url, posted(admin_client.get(url), is_active=False))
    [event] = changes()
    assert (event.kind, event.subject) == (Kind.ACCESS_CHANGED, alice)
    assert event.detail["changes"] == {"is_active": [True, False]}


def test_a_user_saved_unchanged_records_nothing(admin_client, alice):
    url = reverse("admin:auth_user_change", args=[alice.pk])
    assert admin_client.post(url, posted(admin_client.get(url))).status_code == 302
    assert changes() == []


def test_a_new_user_in_the_admin_still_works(admin_client, django_user_model):
    response = admin_client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "erin",
            "password1": "a long pass phrase 42",
            "password2": "a long pass phrase 42",
            "usable_password": "true",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert django_user_model.objects.filter(username="erin").exists()
