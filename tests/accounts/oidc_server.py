"""A real OpenID provider for the sign-in tests: the npm `oidc-provider`
package (`tests/accounts/oidc_provider/`, installed by
`scripts/ensure-oidc-provider.sh`) in a node process on a free port, and a
person's walk through the authorization-code flow with httpx.

Fixtures: `oidc_provider` (session): the running provider, whose accounts a
test sets with `provider.set_accounts({...})` (read at every look-up);
`oidc_site` (function): the settings pointing the site at it, and an httpx
client serving the site in-process (`http://testserver`) and talking to the
provider over the network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import pytest
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections

from chat.accounts import oidc
from tests.support.services.daphnes import free_port
from tests.support.waiting import until_sync

HERE = Path(__file__).resolve().parent / "oidc_provider"
ROOT = HERE.parents[2]
LOG = ROOT / "test-artifacts" / "oidc-provider.log"
CLIENT_ID = "chatsite"
CLIENT_SECRET = "chatsite-test-secret-1234567890"
# The browser test's Daphne has a port of its own: a native client may use
# any port on a loopback redirect (RFC 8252, 7.3), which oidc-provider allows.
BROWSER_CLIENT_ID = "chatsite-browser"
SITE = "http://testserver"
PASSWORD = "provider-password-123"


def person(login: str, **claims: Any) -> dict[str, Any]:
    """An account at the provider; `claims` override the defaults."""
    return {
        "password": PASSWORD,
        "sub": f"sub-{login}",
        "preferred_username": login,
        "email": f"{login}@example.org",
        "email_verified": True,
        "given_name": login.capitalize(),
        "family_name": "Tester",
        "groups": [],
        **claims,
    }


class Provider:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.accounts = directory / "accounts.json"
        self.config = directory / "config.json"
        self.process: subprocess.Popen[bytes] | None = None
        self.set_accounts({})
        client = {
            "client_secret": CLIENT_SECRET,
            "grant_types": ["authorization_code"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post",
        }
        self.config.write_text(
            json.dumps(
                {
                    "port": self.port,
                    "issuer": self.issuer,
                    "accounts": str(self.accounts),
                    "clients": [
                        {
                            **client,
                            "client_id": CLIENT_ID,
                            "redirect_uris": [f"{SITE}/oidc/callback/"],
                        },
                        {
                            **client,
                            "client_id": BROWSER_CLIENT_ID,
                            "application_type": "native",
                            "redirect_uris": ["http://127.0.0.1/oidc/callback/"],
                        },
                    ],
                }
            )
        )

    def set_accounts(self, accounts: dict[str, dict[str, Any]]) -> None:
        tmp = self.accounts.with_suffix(".tmp")
        tmp.write_text(json.dumps(accounts))
        tmp.replace(self.accounts)  # the provider never reads half a file

    def start(self) -> Provider:
        LOG.parent.mkdir(exist_ok=True)
        with LOG.open("ab") as out:
            self.process = subprocess.Popen(
                ["node", str(HERE / "provider.mjs"), str(self.config)],
                cwd=HERE,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        until_sync(self._answers, "the OpenID provider answers discovery", timeout=30)
        return self

    def _answers(self) -> bool:
        assert self.process is not None and self.process.poll() is None, (
            LOG.read_text()[-3000:]
        )
        try:
            url = f"{self.issuer}/.well-known/openid-configuration"
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(15)


def _installed() -> bool:
    return (
        shutil.which("node") is not None
        and (HERE / "node_modules" / "oidc-provider").is_dir()
    )


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    if not _installed():
        ci = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes", "on"}
        message = "no test OpenID provider: run scripts/ensure-oidc-provider.sh"
        if ci:
            pytest.fail(message)
        pytest.skip(message)
    provider = Provider(tmp_path_factory.mktemp("oidc-provider")).start()
    yield provider
    provider.stop()


def configure(settings: Any, issuer: str, **overrides: Any) -> None:
    """Point the site at `issuer` (the test provider's client by default)."""
    values = {
        "OIDC_ISSUER": issuer,
        "OIDC_PROVIDER_NAME": "Test provider",
        "OIDC_RP_CLIENT_ID": CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_RP_SCOPES": "openid email profile groups",
        "OIDC_TIMEOUT": 5,
        **overrides,
    }
    for name, value in values.items():
        setattr(settings, name, value)
    oidc.forget_discovery()


class _Site(WSGIHandler):
    """The site as WSGI, keeping the test's database connection (and its
    transaction) open across requests, as Django's test client does."""

    def __call__(self, environ: Any, start_response: Any) -> Any:
        signals.request_started.disconnect(close_old_connections)
        signals.request_finished.disconnect(close_old_connections)
        try:
            response = super().__call__(environ, start_response)
            body = b"".join(response)
            response.close()
            return [body]
        finally:
            signals.request_started.connect(close_old_connections)
            signals.request_finished.connect(close_old_connections)


def site_client() -> httpx.Client:
    """The site in-process at http://testserver; anything else over the network."""
    return httpx.Client(
        mounts={SITE: httpx.WSGITransport(app=_Site())},
        base_url=SITE,
        timeout=10,
    )


@pytest.fixture
def oidc_site(settings: Any, oidc_provider: Provider) -> Iterator[httpx.Client]:
    configure(settings, oidc_provider.issuer)
    with site_client() as client:
        yield client
    oidc.forget_discovery()


def follow(client: httpx.Client, response: httpx.Response) -> httpx.Response:
    """Follow redirects at the provider, stopping at the first one to the site."""
    while response.is_redirect:
        location = urljoin(str(response.url), response.headers["location"])
        if urlsplit(location).netloc == urlsplit(SITE).netloc:
            return response
        response = client.get(location)
    return response


def to_provider(client: httpx.Client) -> httpx.Response:
    """Press "Sign in with …": the provider's login page."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start.text
    return follow(client, client.get(start.headers["location"]))


def login_at_provider(
    client: httpx.Client, page: httpx.Response, login: str, password: str = PASSWORD
) -> str:
    """Submit the provider's login form: the callback URL it sends back to."""
    assert page.status_code == 200 and 'name="login"' in page.text, page.text
    action = page.text.split('action="', 1)[1].split('"', 1)[0]
    answer = client.post(
        urljoin(str(page.url), action), data={"login": login, "password": password}
    )
    back = follow(client, answer)
    assert back.is_redirect, back.text
    location = back.headers["location"]
    assert location.startswith(f"{SITE}/oidc/callback/"), location
    return location


def sign_in(
    client: httpx.Client, login: str, password: str = PASSWORD
) -> httpx.Response:
    """The whole flow; the site's answer to the callback."""
    callback = login_at_provider(client, to_provider(client), login, password)
    return client.get(callback)
