"""Fetching a page for the model, safely: every hop's site checked against
the user's lists (`chat.tools.web.sites`) and its address against the guard
(`chat.tools.web.addresses`), redirects followed here (at most `REDIRECTS`),
and the connection made to the very address that was checked.

The address is pinned by putting it in the request's URL and keeping the
name where the server and the certificate look for it: in the `Host` header,
and, over TLS, as the name sent in the handshake and checked against the
certificate (httpcore's `sni_hostname` request extension,
httpcore/_async/connection.py). Letting httpx resolve the name again would
let a DNS server answer a public address to the check and 127.0.0.1 to the
connection. No proxy from the environment is used (it would resolve the
name itself), and each fetch has a client of its own (a pooled connection is
keyed by address, not by name).

Limits hold before the bytes are read: the media type (text/html or
text/plain) from the headers, then at most `max_bytes` of the body read as
a stream, decompressed here a bounded piece at a time (httpx's own decoder
would inflate a small gzip bomb whole), all within one deadline."""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass
from typing import Any

import httpx
from django.utils.translation import gettext as _

from chat.tools.web.addresses import Address, Exceptions, Refused, resolve
from chat.tools.web.sites import Sites

REDIRECTS = 5
MEDIA_TYPES = ("text/html", "text/plain")
_CHUNK = 64 * 1024
USER_AGENT = "chatsite-web-fetch/1 (a tool of a team's chat assistant)"


@dataclass(frozen=True)
class Rules:
    """What one user's fetches may do."""

    sites: Sites
    exceptions: Exceptions
    max_bytes: int
    seconds: float


@dataclass(frozen=True)
class Page:
    url: str  # where it was found, after the redirects
    media_type: str
    charset: str | None
    body: bytes
    cut: bool  # it was longer than `max_bytes`: the rest was not read


async def fetch(url: str, rules: Rules) -> Page:
    """The page at `url`; raises `Refused` (its text for the model)."""
    try:
        async with asyncio.timeout(rules.seconds):
            return await _follow(url, rules)
    except TimeoutError:
        raise Refused(
            _("The page did not arrive within %(seconds)s s.")
            % {"seconds": f"{rules.seconds:g}"}
        ) from None
    except httpx.HTTPError as exc:
        raise Refused(
            _("The page could not be fetched: %(error)s")
            % {"error": str(exc) or type(exc).__name__}
        ) from None


async def _follow(url: str, rules: Rules) -> Page:
    async with httpx.AsyncClient(
        trust_env=False, follow_redirects=False, timeout=rules.seconds
    ) as client:
        for _hop in range(REDIRECTS + 1):
            target, addresses = await _checked(url, rules)
            response = await _send(client, target, addresses)
            try:
                location = response.headers.get("location")
                if response.is_redirect and location:
                    url = str(target.join(location))
                    continue
                return await _page(url, response, rules.max_bytes)
            finally:
                await response.aclose()
    raise Refused(
        _("The page redirected more than %(count)s times.") % {"count": REDIRECTS}
    )


async def _checked(url: str, rules: Rules) -> tuple[httpx.URL, list[Address]]:
    """`url` and the addresses its host resolves to, each of them checked."""
    try:
        target = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        raise Refused(_("That is not a web address: %(url)s") % {"url": url}) from None
    if target.scheme not in ("http", "https") or not target.host:
        raise Refused(
            _("Only http and https addresses are fetched, not %(url)s") % {"url": url}
        )
    if target.userinfo:
        raise Refused(_("Addresses with a user name or password are not fetched."))
    if not rules.sites.permits(url):
        raise Refused(
            _("%(host)s is not among the sites you may reach.") % {"host": target.host}
        )
    host = target.raw_host.decode("ascii")
    port = target.port or (443 if target.scheme == "https" else 80)
    return target, await resolve(host, port, rules.exceptions)


async def _send(
    client: httpx.AsyncClient, target: httpx.URL, addresses: list[Address]
) -> httpx.Response:
    """The response of the first of `addresses` that takes the connection:
    a request to the address, the name kept where the server and the
    certificate look for it."""
    host = target.raw_host.decode("ascii")
    extensions: dict[str, Any] = {}
    if target.scheme == "https":
        extensions["sni_hostname"] = host
    headers = {
        "Host": target.netloc.decode("ascii"),
        "User-Agent": USER_AGENT,
        "Accept": "text/html, text/plain;q=0.9",
        "Accept-Encoding": "gzip, deflate, identity",
    }
    for index, address in enumerate(addresses, 1):
        pinned = target.copy_with(host=str(address))
        request = client.build_request(
            "GET", pinned, headers=headers, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            if index == len(addresses):
                raise
            # Its next address (an IPv6 and an IPv4 one, say), checked too.
    raise AssertionError("resolve() gives at least one address")


async def _page(url: str, response: httpx.Response, max_bytes: int) -> Page:
    if response.status_code >= 300:
        raise Refused(
            _("The page answered HTTP %(status)s.") % {"status": response.status_code}
        )
    content_type = response.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in MEDIA_TYPES:
        raise Refused(
            _(
                "The page is %(type)s; only HTML and plain text are read "
                "(nothing of it was read)."
            )
            % {"type": media_type or _("of no stated type")}
        )
    body, cut = await read_body(response, max_bytes)
    return Page(url, media_type, response.charset_encoding, body, cut)


async def read_body(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    """At most `max_bytes` of `response`'s body, decompressed, and whether
    there was more (left unread)."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    decoder: Any = None
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # a gzip or zlib header
    elif encoding not in ("", "identity"):
        raise Refused(
            _("The page is compressed as %(encoding)s, which is not read.")
            % {"encoding": encoding}
        )
    parts: list[bytes] = []
    size = 0
    async for chunk in response.aiter_raw(_CHUNK):
        if decoder is not None:
            try:
                # Never more than one byte past the limit, however small the
                # compressed chunk (0 would mean no limit: size <= max_bytes).
                chunk = decoder.decompress(chunk, max_bytes + 1 - size)
            except zlib.error:
                raise Refused(_("The page's compressed bytes are damaged.")) from None
        parts.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(parts)[:max_bytes], True
    return b"".join(parts), False
