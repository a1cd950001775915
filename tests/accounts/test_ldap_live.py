"""LDAP sign-in on a real Daphne configured only by the CHATSITE_LDAP_*
environment variables (README, "Sign-in with LDAP or Active Directory"), over
StartTLS to the test slapd: with httpx, and once in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat.models import GroupRule, ModelProfile, Team
from tests.accounts.conftest import GROUPS_AT_START, PEOPLE_AT_START
from tests.accounts.ldap_server import PEOPLE, Slapd
from tests.browser.chat_page import uses_up_the_quota_of_the_teams_model
from tests.support.services.daphnes import Daphne, daphne_env

pytestmark = pytest.mark.django_db(transaction=True)


def _daphne(test_mode, slapd: Slapd, tmp_path_factory, **env: str):
    if test_mode == "sqlite":
        pytest.skip("a Daphne process needs PostgreSQL and Redis")
    env = {
        **daphne_env(),
        "CHATSITE_LDAP_CA_FILE": str(slapd.ca_file),
        "CHATSITE_LDAP_SEARCH_BASE": PEOPLE,
        "CHATSITE_LDAP_GROUPS_ATTRIBUTE": "memberOf",
        **env,
    }
    return Daphne(env, tmp_path_factory.mktemp("ldap-daphne") / "daphne.log")


@pytest.fixture(scope="module")
def ldap_daphne(test_mode, slapd, tmp_path_factory, django_db_setup):
    """StartTLS on ldap://."""
    server = _daphne(
        test_mode,
        slapd,
        tmp_path_factory,
        CHATSITE_LDAP_URL=slapd.url,
        CHATSITE_LDAP_START_TLS="true",
    )
    yield server.start()
    server.stop()


@pytest.fixture
def site(ldap_daphne: Daphne, slapd: Slapd) -> Iterator[str]:
    slapd.reset(PEOPLE_AT_START, GROUPS_AT_START)
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    yield f"http://127.0.0.1:{ldap_daphne.port}"


def test_sign_in_over_http(site):
    assert sign_in_over_http(site).status_code == 302
    carol = get_user_model().objects.get(username="carol")
    assert [t.name for t in carol.teams.all()] == ["GPU"]


def test_ldaps_checks_the_certificate(
    slapd, test_mode, tmp_path_factory, django_db_setup
):
    """ldaps:// without the test CA: refused, the password never sent
    (ldap3's own default would check no certificate at all)."""
    server = _daphne(
        test_mode,
        slapd,
        tmp_path_factory,
        CHATSITE_LDAP_URL=slapd.ldaps_url,
        CHATSITE_LDAP_CA_FILE="",
    ).start()
    try:
        slapd.reset(PEOPLE_AT_START, GROUPS_AT_START)
        response = sign_in_over_http(f"http://127.0.0.1:{server.port}")
    finally:
        server.stop()
    assert response.status_code == 200
    assert "does not answer just now" in response.text
    assert not get_user_model().objects.exists()


def sign_in_over_http(site: str) -> httpx.Response:
    with httpx.Client(base_url=site) as client:
        page = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token, page.text
        response = client.post(
            "/login/",
            data={
                "csrfmiddlewaretoken": token[1],
                "username": "carol",
                "password": PEOPLE_AT_START["carol"]["password"],
            },
            headers={"Referer": site + "/login/"},
        )
        if response.status_code == 302:
            assert client.get("/").status_code == 200
        return response


@pytest.mark.browser
def test_sign_in_in_chromium(site, page):
    page.goto(site + "/login/")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", PEOPLE_AT_START["carol"]["password"])
    page.click("[type=submit]")
    expect(page).not_to_have_url(re.compile(r"/login/"))
    page.goto(site + "/login/")
    page.fill("input[name=username]", "dave")
    page.fill("input[name=password]", "not-his-password")
    page.click("[type=submit]")
    expect(page.locator("body")).to_contain_text("correct username and password")


@pytest.mark.browser
def test_a_directory_person_gets_their_teams_models_and_quota(
    site, page, demo_profile, simulator
):
    gpu = Team.objects.get(name="GPU")
    gpu.member_answers = 1
    gpu.save()
    demo_profile.teams.add(gpu)
    big = ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url=simulator.url
    )
    big.teams.add(Team.objects.create(name="CPU"))

    page.goto(site + "/login/")
    page.fill("input[name=username]", "carol")
    page.fill("input[name=password]", PEOPLE_AT_START["carol"]["password"])
    page.click("[type=submit]")
    alert = uses_up_the_quota_of_the_teams_model(page, simulator)
    expect(alert).to_have_text(
        "Your quota is reached (1 of 1 answers); it resets at 00:00 UTC."
    )
