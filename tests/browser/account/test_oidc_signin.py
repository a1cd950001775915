"""A signed-out person signs in through the real OpenID provider in Chromium
(tests/accounts/oidc_server.py), lands in the team their group maps to, is
offered only their team's models, and is refused once their quota is used."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from chat.models import GroupRule, ModelProfile, Team
from tests.accounts import oidc_server
from tests.accounts.oidc_server import BROWSER_CLIENT_ID, CLIENT_SECRET, PASSWORD
from tests.browser.chat_page import uses_up_the_quota_of_the_teams_model
from tests.conftest import ARTIFACTS
from tests.support.services.daphnes import Daphne, daphne_env

pytestmark = pytest.mark.django_db(transaction=True)

oidc_provider = oidc_server.oidc_provider


@pytest.fixture
def oidc_daphne(oidc_provider) -> Iterator[Daphne]:
    """The site in its own Daphne, configured for the provider from the
    environment as a deployment would be."""
    env = {
        **daphne_env(),
        "OIDC_ISSUER": oidc_provider.issuer,
        "OIDC_PROVIDER_NAME": "Test provider",
        "OIDC_CLIENT_ID": BROWSER_CLIENT_ID,
        "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_SCOPES": "openid email profile groups",
    }
    ARTIFACTS.mkdir(exist_ok=True)
    server = Daphne(env, ARTIFACTS / "oidc-daphne.log").start()
    yield server
    server.stop()


def test_sign_in_through_the_provider_lands_in_the_mapped_team(
    oidc_provider, oidc_daphne, page, admin_user
):
    # (admin_user: the site is set up, so "/" does not go to the first-run page)
    gpu = Team.objects.create(name="GPU")
    GroupRule.objects.create(group="gpu-users", team=gpu)
    oidc_provider.set_accounts({"uma": oidc_server.person("uma", groups=["gpu-users"])})
    site = f"http://127.0.0.1:{oidc_daphne.port}"

    page.goto(site + "/")
    expect(page).to_have_url(site + "/login/")
    page.click("text=Sign in with Test provider")
    page.fill("#login", "uma")
    page.fill("#password", PASSWORD)
    page.click("text=Continue")

    page.wait_for_url(site + "/")
    expect(page.locator("body")).not_to_contain_text("You are not signed in")
    uma = User.objects.get(username="uma")
    assert list(uma.teams.all()) == [gpu]


def test_a_provider_person_gets_their_teams_models_and_quota(
    oidc_provider, oidc_daphne, page, admin_user, demo_profile, simulator
):
    gpu = Team.objects.create(name="GPU", member_output_tokens=1)
    GroupRule.objects.create(group="gpu-users", team=gpu)
    demo_profile.teams.add(gpu)
    big = ModelProfile.objects.create(
        tag="big:70b", display_name="Big", base_url=simulator.url
    )
    big.teams.add(Team.objects.create(name="CPU"))
    oidc_provider.set_accounts({"uma": oidc_server.person("uma", groups=["gpu-users"])})
    site = f"http://127.0.0.1:{oidc_daphne.port}"

    page.goto(site + "/login/")
    page.click("text=Sign in with Test provider")
    page.fill("#login", "uma")
    page.fill("#password", PASSWORD)
    page.click("text=Continue")
    page.wait_for_url(site + "/")
    alert = uses_up_the_quota_of_the_teams_model(page, simulator)
    expect(alert).to_contain_text("of 1 output tokens); it resets at 00:00 UTC.")
