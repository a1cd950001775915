"""The allow and deny lists of sites: domains with their subdomains, the
site-wide lists and each of a user's teams', all of them held to; applied to
fetches (and their redirects) as to search results (test_search.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

from chat.models import Membership, Team, TeamWebSites
from chat.tools.web.sites import Lists, Sites, domains
from tests.tools.web.calling import fetched, tools
from tests.tools.web.pages import Web

pytestmark = pytest.mark.timeout(60)


def test_a_list_is_domains_one_a_line_or_with_commas() -> None:
    text = "Example.org\n https://docs.python.org/3/ , *.wiki.example.\n\nhost:8080\n"
    assert domains(text) == ("example.org", "docs.python.org", "wiki.example", "host")
    assert domains(["A.example", "a.example"]) == ("a.example",)


def test_a_domain_covers_its_subdomains_only() -> None:
    lists = Lists(allow=("example.org",), deny=("private.example.org",))
    assert lists.permits("example.org")
    assert lists.permits("docs.example.org")
    assert not lists.permits("private.example.org")
    assert not lists.permits("a.private.example.org")
    assert not lists.permits("notexample.org")
    assert not lists.permits("example.org.evil.example")
    assert Lists().permits("anything.example")


def test_a_site_must_pass_every_list() -> None:
    sites = Sites((Lists(deny=("evil.example",)), Lists(allow=("docs.example",))))
    assert sites.permits("https://docs.example/page")
    assert sites.permits("https://DOCS.example./page")
    assert not sites.permits("https://other.example/")
    # A second team's allow list does not open the first one's.
    both = Sites((Lists(allow=("a.example",)), Lists(allow=("b.example",))))
    assert not both.permits("https://a.example/") and not both.permits(
        "http://b.example"
    )
    assert not sites.permits("not a url")


@pytest.mark.django_db(transaction=True)
async def test_a_users_lists_are_the_sites_and_their_teams(
    alice: Any, bob: Any
) -> None:
    crew = await Team.objects.acreate(name="crew")
    await Membership.objects.acreate(team=crew, user=alice)
    await TeamWebSites.objects.acreate(
        team=crew, allow="example.org\nwiki.example", deny="secret.example.org"
    )
    others = await Team.objects.acreate(name="others")
    await TeamWebSites.objects.acreate(team=others, deny="example.org")
    with override_settings(WEB_SITES_DENY=["tracker.example"], WEB_SITES_ALLOW=[]):
        mine = await Sites.of(alice)
        theirs = await Sites.of(bob)
    assert mine.permits("https://docs.example.org/")
    assert not mine.permits("https://secret.example.org/")
    assert not mine.permits("https://python.org/")  # not on crew's allow list
    assert not mine.permits("https://tracker.example/")
    assert theirs.permits("https://python.org/")  # bob is on no team
    assert theirs.permits("https://example.org/")  # others' list is not his
    assert not theirs.permits("https://tracker.example/")


async def test_a_fetch_and_its_redirects_are_held_to_the_lists(web: Web) -> None:
    denied = Sites((Lists(deny=("127.0.0.1",)),))
    outcome = await fetched(tools(web, sites=denied), web.url("/article"))
    assert outcome.error == "127.0.0.1 is not among the sites you may reach."
    assert web.served == []
    only_localhost = Sites((Lists(allow=("localhost",)),))
    redirect = f"http://localhost:{web.port}/redirect?to={web.url('/article')}"
    outcome = await fetched(tools(web, sites=only_localhost), redirect)
    assert outcome.error == "127.0.0.1 is not among the sites you may reach."
    assert web.served == ["/redirect"]
