"""Which pages may open our sockets: the site's own origin, whole.

Browsers send the session cookie with a WebSocket handshake to any port of the
host, whatever page opens it, so the page's `Origin` is the only thing telling
our pages from another app's on the same host (another port, an extension, a
`file:` or `null` origin). It must equal the site's own origin (scheme, host and
port, as the handshake reached us) or one of `CSRF_TRUSTED_ORIGINS`, the same
rule Django's CSRF check applies to a POST (`django.middleware.csrf`). Channels'
`AllowedHostsOriginValidator` compared host names only.

The site's scheme is `https` when the socket is TLS (`wss`), or when
`SECURE_PROXY_SSL_HEADER` says the proxy received it over TLS
(`TRUST_X_FORWARDED_PROTO`): a proxy's header is believed only when the site is
configured to trust it, as for `request.is_secure()`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}


class SameOriginValidator:
    """Refuses (HTTP 403) a socket whose page is not on the site's own origin."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if not allowed(scope):
            return await WebsocketDenier()(scope, receive, send)  # type: ignore[arg-type]
        return await self.application(scope, receive, send)


def allowed(scope: dict[str, Any]) -> bool:
    headers = _headers(scope)
    origin = _parse(headers.get("origin", ""))
    if origin is None:
        return False
    host = headers.get("host")
    if host is None:
        # Browsers always send Host (as do Daphne's clients); only an
        # in-process test scope has none: take the origin's host name, if the
        # site serves it, on the scheme's default port.
        name = origin[1]
        host = name if validate_host(name, _allowed_hosts()) else ""
    if not host or not validate_host(split_domain_port(host)[0], _allowed_hosts()):
        return False
    own = _parse(f"{_site_scheme(scope, headers)}://{host}")
    return origin == own or _trusted(origin)


def _allowed_hosts() -> list[str]:
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:  # Django's own development default
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {
        name.decode("latin1").lower(): value.decode("latin1")
        for name, value in scope.get("headers", ())
    }


def _site_scheme(scope: dict[str, Any], headers: dict[str, str]) -> str:
    if scope.get("scheme") == "wss":
        return "https"
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy is not None:
        name, secure = proxy
        header = name.removeprefix("HTTP_").replace("_", "-").lower()
        if headers.get(header, "").split(",")[0].strip() == secure:
            return "https"
    return "http"


Origin = tuple[str, str, int]


def _parse(value: str) -> Origin | None:
    """(scheme, host, port) of an http(s) origin; None for any other (`null`,
    `chrome-extension://...`, `ftp://...`, `file://`, malformed)."""
    try:
        parts: SplitResult = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _trusted(origin: Origin) -> bool:
    """One of CSRF_TRUSTED_ORIGINS; `https://*.example.com` takes subdomains."""
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in entry:
            scheme, _, pattern = entry.partition("://")
            name, _, port = pattern.replace("*", "", 1).partition(":")
            wanted = int(port) if port.isdigit() else DEFAULT_PORTS.get(scheme)
            if (
                origin[0] == scheme.lower()
                and origin[2] == wanted
                and is_same_domain(origin[1], name)
            ):
                return True
        elif _parse(entry) == origin:
            return True
    return False
