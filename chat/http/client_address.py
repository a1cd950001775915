"""The address a request came from, for per-address limits (chat.accounts.throttle).

`X-Forwarded-For` is anyone's to write: it is believed only as far back as
the hops that are our own proxies (`TRUSTED_PROXIES`). The request's peer
(`REMOTE_ADDR`) must be one of them for its header to count at all, and the
header is read from the right (the proxy's own entry) leftwards for as long as
each address is a trusted proxy too; the first address that is not, is the
client. A client that reaches Daphne directly, or puts addresses of its own in
front of the proxy's, cannot choose the address it is counted under.

Daphne must therefore leave `REMOTE_ADDR` as the connection's peer: it is
started without `--proxy-headers`, which would replace the peer with the
header's first (client-written) entry (deploy/chatsite.service).
"""

from __future__ import annotations

from functools import cache
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    address = str(request.META.get("REMOTE_ADDR") or "")
    if not _trusted(address):
        return address
    forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR") or "")
    for hop in reversed([part.strip() for part in forwarded.split(",")]):
        if not hop:
            break
        address = hop
        if not _trusted(hop):
            break
    return address


def _trusted(address: str) -> bool:
    try:
        parsed = ip_address(address)
    except ValueError:
        return False
    networks = _networks(tuple(settings.TRUSTED_PROXIES))
    return any(parsed in network for network in networks)


@cache
def _networks(entries: tuple[str, ...]) -> tuple[IPv4Network | IPv6Network, ...]:
    return tuple(ip_network(entry, strict=False) for entry in entries)
