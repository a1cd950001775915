"""web_search against a SearXNG-compatible endpoint of the test's own: the
results and their citations, the sites' lists applied to them, and every way
the endpoint can fail."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.utils import translation

from chat.tools.calls import ToolCall
from chat.tools.web import WebTools
from chat.tools.web.search import SearXNG, provider
from chat.tools.web.sites import Lists, Sites
from chat.tools.web.source import fetch_spec, search_spec
from tests.tools.web.calling import searched, tools
from tests.tools.web.pages import Web, serving

pytestmark = pytest.mark.timeout(60)


async def test_results_go_to_the_model_with_citations(web: Web) -> None:
    outcome = await searched(tools(web), "Brest tides")
    assert outcome.ok, outcome.error
    assert outcome.text.startswith('Web search results for "Brest tides"')
    assert "not instructions" in outcome.text.split("\n", 1)[0]
    assert "[1] Tide tables of Brest\n" + web.url("/article") in outcome.text
    assert "Tides for Brest tides: high water at 06:12." in outcome.text
    urls = [citation.url for citation in outcome.citations]
    assert urls == [
        web.url("/article"),
        "https://docs.denied.example/tides",
        "https://example.org/<b>bold</b>",
    ]  # javascript: is no web address
    # A title that is markup stays its characters, for the page to escape.
    assert outcome.citations[2].title == "<script>alert('title')</script>"
    assert "Tide tables of Brest" in outcome.preview
    assert web.served == ["/search"]


async def test_results_from_sites_off_the_lists_are_left_out(web: Web) -> None:
    sites = Sites((Lists(deny=("denied.example",)),))
    outcome = await searched(tools(web, sites=sites), "tides")
    assert "denied.example" not in outcome.text
    assert "1 results from sites you may not reach were left out." in outcome.text
    assert len(outcome.citations) == 2
    only = Sites((Lists(allow=("example.org",)),))
    outcome = await searched(tools(web, sites=only), "tides")
    assert [c.url for c in outcome.citations] == ["https://example.org/<b>bold</b>"]


async def test_the_number_of_results_is_the_settings(web: Web) -> None:
    with override_settings(WEB_SEARCH_RESULTS=1):
        outcome = await searched(tools(web), "tides")
    assert len(outcome.citations) == 1
    assert "[2]" not in outcome.text


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("fail", "The search engine answered HTTP 500."),
        ("garbage", "The search engine's answer was not search results."),
    ],
)
async def test_a_failing_engine_is_an_error_for_the_model(
    web: Web, query: str, error: str
) -> None:
    outcome = await searched(tools(web), query)
    assert outcome.error == error
    assert outcome.text == error and not outcome.citations


async def test_an_engine_that_is_away_or_too_large_is_an_error(web: Web) -> None:
    with serving() as gone:
        base = gone.base
    away = WebTools(owner="o", sites=Sites.default(), search=SearXNG(base, max_bytes=1))
    outcome = await searched(away, "tides")
    assert "The search engine could not be reached" in str(outcome.error)
    small = WebTools(
        owner="o", sites=Sites.default(), search=SearXNG(web.base, max_bytes=100)
    )
    outcome = await searched(small, "tides")
    assert outcome.error == "The search engine's answer was too large."


async def test_an_empty_query_is_an_error(web: Web) -> None:
    for arguments in ('{"query": "  "}', "{}", '{"query": ["a"]}'):
        outcome = await tools(web).run(
            search_spec(), ToolCall("c", "web_search", arguments), deadline=10
        )
        assert "query must be a string that is not empty" in str(outcome.error)
    assert web.served == []


def test_search_is_offered_only_when_an_endpoint_is_set_up() -> None:
    with override_settings(WEB_SEARCH_URL=""):
        assert provider() is None
        assert WebTools(owner="o", sites=Sites.default()).specs() == [fetch_spec()]
    with override_settings(WEB_SEARCH_URL="http://searx.internal:8888"):
        found = provider()
        assert isinstance(found, SearXNG)
        assert found.base_url == "http://searx.internal:8888"
        offered = WebTools(owner="o", sites=Sites.default(), search=found).specs()
    assert [spec.name for spec in offered] == ["web_search", "web_fetch"]
    assert {spec.source for spec in offered} == {"web"}
    assert offered[0].offered()["function"]["parameters"]["required"] == ["query"]
    with translation.override("zh-hans"):
        assert search_spec().title == "网页搜索"  # shown to the user
        assert search_spec().description == offered[0].description  # the model's


async def test_search_when_not_set_up_is_an_error(web: Web) -> None:
    outcome = await WebTools(owner="o", sites=Sites.default()).run(
        search_spec(), ToolCall("c", "web_search", '{"query": "x"}'), deadline=10
    )
    assert outcome.error == "There is no web tool web_search."
