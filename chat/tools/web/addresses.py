"""Which addresses a fetch may connect to: public ones only, checked after the
name is resolved, unless the admin allow-lists a host or a network
(`WEB_FETCH_PRIVATE_ALLOW`).

A page the model asks for is fetched by the site, from inside the site's
network: without this a question could make the site read its own admin
pages on 127.0.0.1, a database's HTTP port on 10.0.0.5 or the cloud's
metadata service on 169.254.169.254 (its credentials) and hand them to the
model. Every address a name resolves to is checked, not only the first (a
name with one public and one private record is refused), and the fetch then
connects to the address that was checked (`chat.tools.web.fetching`: no
second resolution a rebinding DNS server could answer differently)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.translation import gettext as _

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Addresses that carry an IPv4 address inside an IPv6 one, routed to it by
# translators: checked as that IPv4 address (64:ff9b::7f00:1 is 127.0.0.1).
_NAT64 = (
    ipaddress.IPv6Network("64:ff9b::/96"),
    ipaddress.IPv6Network("64:ff9b:1::/48"),
)


class Refused(Exception):
    """A fetch the guard refuses; `str(exc)` says why, for the model."""


@dataclass(frozen=True)
class Exceptions:
    """What the admin let through: host names (any address they resolve to)
    and networks."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> Exceptions:
        hosts: set[str] = set()
        networks: list[Network] = []
        for entry in entries:
            entry = entry.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allow(self, host: str, address: Address) -> bool:
        if host.lower().rstrip(".") in self.hosts:
            return True
        return any(address in network for network in self.networks)


def public(address: Address) -> bool:
    """Whether `address` is on the public internet: not private, loopback,
    link-local (169.254.169.254, the metadata services), unique-local,
    shared (100.64/10), multicast, reserved or unspecified; an IPv6 address
    that embeds an IPv4 one (mapped, 6to4, Teredo, NAT64) is judged by it."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded(address)
        if embedded is not None:
            return public(embedded)
    return address.is_global and not (
        address.is_multicast
        or address.is_reserved
        or address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_unspecified
    )


def _embedded(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]  # the client's address
    if any(address in network for network in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


async def resolve(host: str, port: int, exceptions: Exceptions) -> list[Address]:
    """The addresses to connect to for `host`, in the resolver's order: every
    one of them public or let through. Raises `Refused`."""
    try:
        literal: Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        addresses = await _lookup(host, port)
    for address in addresses:
        if not (public(address) or exceptions.allow(host, address)):
            raise Refused(
                _(
                    "Refused: %(host)s is at %(address)s, a private or reserved "
                    "address this site does not fetch from."
                )
                % {"host": host, "address": address}
            )
    return addresses


async def _lookup(host: str, port: int) -> list[Address]:
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise Refused(_("The name %(host)s was not found.") % {"host": host}) from None
    addresses: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in found:
        # An IPv6 link-local address comes with its zone ("fe80::1%eth0").
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Refused(_("The name %(host)s was not found.") % {"host": host})
    return addresses
