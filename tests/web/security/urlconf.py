"""The site's URLconf walked: every route, its parameters filled with the ids
given; the pages and sockets that are public by design."""

from __future__ import annotations

import itertools
import re

from django.urls import URLPattern, URLResolver, get_resolver

# Pages anyone may open, whatever their parameters say ("namespace:name" for
# namespaced ones).
PUBLIC_URL_NAMES = {"login", "logout", "setup", "home"}
# Sockets that are public by design (a share link's token is its authority).
PUBLIC_SOCKET_PREFIXES = ("ws/share/",)


PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def url_patterns(patterns=None, prefix="", namespace=""):
    """(route, pattern, namespace) of every URL pattern, includes flattened."""
    if patterns is None:
        patterns = get_resolver().url_patterns
    for entry in patterns:
        route = prefix + str(entry.pattern).lstrip("^").rstrip("$")
        if isinstance(entry, URLResolver):
            inner = entry.namespace or namespace
            yield from url_patterns(entry.url_patterns, route, inner)
        else:
            assert isinstance(entry, URLPattern)
            yield route, entry, namespace


def fill(route: str, values: dict[str, object]) -> str:
    return "/" + PARAMETER.sub(lambda m: str(values[m.group("name")]), route)


def urls_for(route: str, candidates: list[int]):
    """Every way of filling the route's parameters from the candidate ids."""
    names = [m.group("name") for m in PARAMETER.finditer(route)]
    for combination in itertools.product(candidates, repeat=len(names)):
        yield fill(route, dict(zip(names, combination, strict=True)))


# The API's paths (chat.api.urls): a key signs their requests in, not a cookie.
API_ROUTES = ("v1/", "api/")


def walked_routes(*, with_parameters: bool):
    for route, pattern, namespace in url_patterns():
        if "(" in route:
            # The admin's app index and catch-all take no object ids; elsewhere
            # a regex route would escape the walks, so it must not exist.
            assert namespace == "admin", f"{route}: the walks only fill path()"
            continue
        if bool(PARAMETER.search(route)) == with_parameters:
            yield route, pattern, namespace
