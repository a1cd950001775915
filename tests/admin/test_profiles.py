"""The admin's model profiles and site defaults (chat.admin.profiles)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat.models import Conversation, ModelProfile, SiteDefaults, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def profiles():
    first = ModelProfile.objects.create(
        tag="qwen3:8b", base_url="http://127.0.0.1:1", supports_thinking=True
    )
    second = ModelProfile.objects.create(
        tag="qwen3:32b", base_url="http://127.0.0.1:1", supports_thinking=True
    )
    return first, second


PROFILE_FORM = {
    "tag": "qwen3:8b",
    "display_name": "",
    "enabled": "on",
    "backend": "ollama",
    "base_url": "http://127.0.0.1:1",
    "parallel_slots": "2",
    "keep_alive": "",
    "thinking_switch": "template",
    "think_tags": "parse",
    "first_token_timeout": "300",
    "image_max_side": "1568",
    "supports_thinking": "on",
    "context_length": "16384",
    "default_thinking": "off",
    "default_history_policy": "fit",
    "default_history_last_n": "",
    "options": '{"temperature": 0.7}',
}


def site_form(**values):
    data = {
        "default_profile": "",
        "default_thinking": "default",
        "default_history_policy": "all",
        "default_history_last_n": "20",
        "generations_per_user": "3",
        "quota_period": "day",
        "user_output_tokens": "0",
        "user_answers": "0",
        "api_enabled": "on",  # a checkbox: left out, it would switch the API off
    }
    data.update({k: str(v) for k, v in values.items()})
    return data


def test_an_admin_changes_the_default_model_and_thinking_and_new_conversations_follow(
    admin_client, alice_client, alice, profiles
):
    first, second = profiles
    alice_client.post(reverse("new_conversation"))
    before = Conversation.objects.get(owner=alice)
    assert before.model_profile == first and before.thinking == "default"
    # (Asked: the next "New conversation" makes a new one, not this one again.)
    before.messages.create(role="user", content="hello")

    site = SiteDefaults.load()
    change = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    response = admin_client.post(
        change,
        site_form(
            default_profile=second.pk,
            default_thinking="off",
            default_history_policy="last_n",
            default_history_last_n=4,
        ),
    )
    assert response.status_code == 302, response.content.decode()[:2000]

    alice_client.post(reverse("new_conversation"))
    after = Conversation.objects.filter(owner=alice).exclude(pk=before.pk).get()
    assert after.model_profile == second and after.thinking == "off"
    effective = after.effective_settings()
    assert effective.thinking.value is False
    assert str(effective.history.value) == "last 4 messages"
    assert effective.history.level == "site"
    # What the home page offers follows too.
    assert "qwen3:32b" in alice_client.get("/").content.decode()


def test_site_defaults_are_one_row_that_cannot_be_added_twice_or_deleted(admin_client):
    add = reverse("admin:chat_sitedefaults_add")
    assert admin_client.get(add).status_code == 200  # none yet
    site = SiteDefaults.load()
    assert admin_client.get(add).status_code == 403
    delete = reverse("admin:chat_sitedefaults_delete", args=[site.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert SiteDefaults.objects.count() == 1
    listing = admin_client.get(reverse("admin:chat_sitedefaults_changelist"))
    assert listing.status_code == 302
    assert listing.url == reverse("admin:chat_sitedefaults_change", args=[site.pk])


def test_the_site_defaults_page_works_before_the_row_exists(admin_client):
    listing = admin_client.get(reverse("admin:chat_sitedefaults_changelist"))
    assert admin_client.get(listing.url).status_code == 200
    assert SiteDefaults.objects.count() == 1


def test_bad_site_defaults_are_refused_with_the_reason(admin_client):
    site = SiteDefaults.load()
    change = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    response = admin_client.post(change, site_form(default_history_last_n=-3))
    assert response.status_code == 200
    assert "greater than or equal to 0" in response.content.decode()
    site.refresh_from_db()
    assert site.default_history_last_n == 20


def test_the_profile_page_groups_its_fields(admin_client, profiles):
    first, _ = profiles
    response = admin_client.get(
        reverse("admin:chat_modelprofile_change", args=[first.pk])
    )
    html = response.content.decode()
    assert response.status_code == 200
    for heading in ("Server", "Model", "Defaults for its conversations"):
        assert f">{heading}<" in html
    for name in (
        "base_url",
        "enabled",
        "parallel_slots",
        "default_thinking",
        "default_history_policy",
        "options",
    ):
        assert f'name="{name}"' in html
    assert "Characters per token" in html  # learnt, shown read-only


def test_a_profile_saved_in_the_admin_keeps_its_defaults(admin_client, profiles):
    first, _ = profiles
    change = reverse("admin:chat_modelprofile_change", args=[first.pk])
    response = admin_client.post(change, PROFILE_FORM)
    assert response.status_code == 302, response.content.decode()[:2000]
    first.refresh_from_db()
    assert first.default_thinking == "off" and first.default_history_policy == "fit"
    assert first.options == {"temperature": 0.7} and first.context_length == 16384


def test_only_staff_reach_the_site_defaults(alice_client):
    response = alice_client.get(reverse("admin:chat_sitedefaults_changelist"))
    assert response.status_code == 302 and "login" in response.url


# Access and quotas in the admin.


def test_a_profile_is_limited_to_teams_in_the_admin(admin_client, profiles, alice):
    from chat.models import Team

    first, _ = profiles
    team = Team.objects.create(name="GPU")
    change = reverse("admin:chat_modelprofile_change", args=[first.pk])
    html = admin_client.get(change).content.decode()
    assert ">Who may use it<" in html
    assert 'data-field-name="teams"' in html  # filter_horizontal's two lists
    response = admin_client.post(change, {**PROFILE_FORM, "teams": [team.pk]})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(first.teams.all()) == [team]
    assert not first.allowed_for(alice)


def test_site_quotas_are_set_in_the_admin(admin_client):
    site = SiteDefaults.load()
    change = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    assert ">Quota of each user<" in admin_client.get(change).content.decode()
    form = site_form(quota_period="month", user_output_tokens=5000, user_answers=40)
    assert admin_client.post(change, form).status_code == 302
    site.refresh_from_db()
    assert (site.quota_period, site.user_output_tokens, site.user_answers) == (
        "month",
        5000,
        40,
    )


def test_a_negative_quota_is_refused_in_the_admin(admin_client):
    site = SiteDefaults.load()
    change = reverse("admin:chat_sitedefaults_change", args=[site.pk])
    response = admin_client.post(change, site_form(user_answers=-1))
    assert response.status_code == 200
    assert "greater than or equal to 0" in response.content.decode()
    site.refresh_from_db()
    assert site.user_answers == 0


CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}


def test_a_team_page_in_the_admin_speaks_chinese(admin_client):
    # The field and model names come from the models' verbose names, the
    # choices from their labels: untranslated, Django would show "Quota period".
    team = Team.objects.create(name="研发")
    html = admin_client.get(
        reverse("admin:chat_team_change", args=[team.pk]), **CHINESE
    ).content.decode()
    assert '<html lang="zh-hans"' in html
    for words in ("名称", "配额周期", "团队回答数", "每位成员输出 token", "成员"):
        assert words in html, words
    for words in ("Quota period", "Team answers", "Member output tokens", ">Name"):
        assert words not in html, words


def test_the_admin_index_names_the_models_in_chinese(admin_client):
    html = admin_client.get(reverse("admin:index"), **CHINESE).content.decode()
    for words in ("团队", "模型配置", "站点默认设置", "分享链接", "模型名称"):
        assert words in html, words
    # "Model name": Django's own, missing from its catalog (chatsite/django_strings.py).
    for words in ("Teams", "Model profiles", "Share links", "Model name"):
        assert words not in html, words


def test_a_refused_profile_says_why_in_chinese(admin_client, profiles):
    change = reverse("admin:chat_modelprofile_change", args=[profiles[0].pk])
    html = admin_client.post(
        change, {**PROFILE_FORM, "backend": "nonsense"}, **CHINESE
    ).content.decode()
    assert "<title>错误：" in html and "请更正以下错误。" in html
    assert "后端" in html and "OpenAI 兼容" in html  # the field and its choices
    assert "OpenAI-compatible" not in html
