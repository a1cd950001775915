"""The fetch guard: which addresses are public, the admin's exceptions, every
address of a name checked, and the connection made to the address checked
(no second resolution)."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from chat.tools.web import addresses
from chat.tools.web.addresses import Address, Exceptions, Refused, public, resolve
from tests.tools.web.calling import fetched, tools
from tests.tools.web.pages import Web, serving

pytestmark = pytest.mark.timeout(60)

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # the cloud metadata services
    "100.100.100.200",  # Alibaba's, in the shared 100.64/10
    "0.0.0.0",
    "224.0.0.251",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.0.170",
    "198.18.0.1",
    "::1",
    "::",
    "fc00::1",
    "fd00:ec2::254",  # AWS's metadata over IPv6
    "fe80::a9fe:a9fe",
    "ff02::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2001:db8::1",  # documentation
]
PUBLIC = ["93.184.215.14", "1.1.1.1", "8.8.8.8", "2606:4700::1111", "::ffff:1.1.1.1"]


@pytest.mark.parametrize("text", REFUSED)
def test_private_and_reserved_addresses_are_not_public(text: str) -> None:
    assert not public(ipaddress.ip_address(text))


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_are(text: str) -> None:
    assert public(ipaddress.ip_address(text))


def test_exceptions_are_host_names_or_networks() -> None:
    allowed = Exceptions.parse(["Intranet.Example.", "10.0.0.0/8", "fd00::1", " "])
    assert allowed.hosts == frozenset({"intranet.example"})
    assert allowed.allow("INTRANET.example", ipaddress.ip_address("192.168.0.9"))
    assert allowed.allow("other", ipaddress.ip_address("10.9.9.9"))
    assert allowed.allow("other", ipaddress.ip_address("fd00::1"))
    assert not allowed.allow("other", ipaddress.ip_address("fd00::2"))
    assert not allowed.allow("sub.intranet.example", ipaddress.ip_address("127.0.0.1"))


async def test_a_name_is_refused_when_any_of_its_addresses_is_private(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def lookup(host: str, port: int) -> list[Address]:
        return [ipaddress.ip_address("1.1.1.1"), ipaddress.ip_address("10.0.0.7")]

    monkeypatch.setattr(addresses, "_lookup", lookup)
    with pytest.raises(Refused, match="mixed.example is at 10.0.0.7"):
        await resolve("mixed.example", 80, Exceptions())


async def test_the_connection_goes_to_the_address_checked(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rebind.invalid` exists in no DNS (.invalid never does): the fetch
    reaches the server only because it connects to the address the guard
    resolved and checked, never resolving the name again; the server still
    sees the name."""
    looked_up: list[str] = []

    async def lookup(host: str, port: int) -> list[Address]:
        looked_up.append(host)
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(addresses, "_lookup", lookup)
    outcome = await fetched(tools(web), f"http://rebind.invalid:{web.port}/host")
    assert outcome.ok, outcome.error
    assert f"You asked for rebind.invalid:{web.port}" in outcome.text
    assert looked_up == ["rebind.invalid"]
    # And the same name, its address refused, is never connected to.
    guarded = tools(web, exceptions=Exceptions())
    outcome = await fetched(guarded, f"http://rebind.invalid:{web.port}/host")
    assert "rebind.invalid is at 127.0.0.1" in str(outcome.error)
    assert web.served == ["/host"]


async def test_a_name_that_is_not_found_is_refused() -> None:
    with pytest.raises(Refused, match="was not found"):
        await resolve("no-such-host.invalid", 80, Exceptions())


async def test_an_unreachable_allowed_address_is_an_error(web: Web) -> None:
    # A port nobody listens on (a server's, once it is closed).
    with serving() as gone:
        port = gone.port
    outcome = await fetched(tools(web), f"http://127.0.0.1:{port}/article")
    assert "could not be fetched" in str(outcome.error)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A key and a self-signed certificate for pinned.invalid."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=pinned.invalid"]
        + ["-addext", "subjectAltName=DNS:pinned.invalid"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return key, cert


async def test_over_tls_the_name_is_sent_and_the_certificate_checked(
    certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TLS server on 127.0.0.1 with a certificate no authority signed: the
    handshake reaches it at the address checked with the name as its SNI, and
    the certificate is refused (it is checked, against that name)."""
    key, cert = certificate
    names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with contextlib.suppress(OSError), context.wrap_socket(connection, True):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def lookup(host: str, port: int) -> list[Address]:
        return [ipaddress.ip_address("127.0.0.1")]

    monkeypatch.setattr(addresses, "_lookup", lookup)
    try:
        with serving() as web:
            outcome = await fetched(tools(web), f"https://pinned.invalid:{port}/")
    finally:
        thread.join(10)
        listener.close()
    assert names == ["pinned.invalid"]
    assert "CERTIFICATE_VERIFY_FAILED" in str(outcome.error)
