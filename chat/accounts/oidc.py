"""OpenID Connect sign-in: mozilla-django-oidc's code flow (PKCE on), its
endpoints found from the issuer's `/.well-known/openid-configuration`, and the
person it vouches for signed in through `chat.accounts.provisioning.provision`.

Every way the flow can fail ends as `SignInFailed` with a sentence for the
person; `chat.web.account.oidc_views` shows it on one page and records it in the audit
log (unless `provision` already did). Nothing is stored before `provision`,
which works in one transaction: no failure leaves a half account.

Found nowhere in mozilla-django-oidc and added here: the ID token's `iss` and
`aud` are checked (its `_verify_jws` turns audience checks off), the UserInfo
`sub` must be the ID token's (OpenID Connect Core 5.3.2), and its
`authenticate` only runs for our callback (which passes the PKCE verifier), so
the password form's `authenticate(username=, password=)` never reaches the
provider.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from django.utils.translation import gettext, gettext_noop
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from chat.accounts.provisioning import Identity, Refused, provision
from chat.http.client_address import client_address

DISCOVERY_TTL = 300  # seconds a provider's discovery document is reused

UNREACHABLE = gettext_noop(
    "The sign-in service ({name}) did not answer in time, so you cannot sign in "
    "with it right now. Try again in a few minutes"
)
CREDENTIALS = gettext_noop(
    "The sign-in service ({name}) refused this site's own credentials, so nobody "
    "can sign in with it until an admin fixes the site's settings."
)
CODE_REFUSED = gettext_noop(
    "The sign-in service ({name}) refused the sign-in code (it may have been "
    "used already or have expired). Start again from the sign-in page."
)
UNTRUSTED = gettext_noop(
    "The answer of the sign-in service ({name}) could not be verified (it may "
    "have been altered on the way), so you were not signed in. Start again."
)
BAD_GROUPS = gettext_noop(
    "The sign-in service ({name}) sent your groups in a form this site cannot "
    "read (it expects a list of group names), so you were not signed in. Tell "
    "an admin."
)
NO_USERNAME = gettext_noop(
    "The sign-in service ({name}) did not say who you are (no “{claim}” claim), "
    "so you were not signed in. Tell an admin."
)


class SignInFailed(Exception):
    """The sign-in failed; `str(exc)` is the message for the person.
    `audited`: already in the audit log (provision's refusals are);
    `status`: the HTTP status of the page that says so."""

    def __init__(self, message: str, *, audited: bool = False, status: int = 400):
        super().__init__(message)
        self.audited = audited
        self.status = status


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def provider_name() -> str:
    return str(settings.OIDC_PROVIDER_NAME)


def _say(template: str, **values: str) -> str:
    # Marked where defined (gettext_noop), translated here.
    return gettext(template).format(name=provider_name(), **values)


def unreachable() -> SignInFailed:
    message = _say(UNREACHABLE)
    if settings.CHATSITE_LOCAL_SIGNIN:
        message += gettext("; accounts with a password here can still sign in below.")
    else:
        message += gettext(".")
    return SignInFailed(message, status=503)


# ---------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Discovery:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_discovered: dict[str, tuple[float, Discovery]] = {}
_discovered_lock = threading.Lock()


def discover() -> Discovery:
    """The issuer's endpoints, fetched at most every DISCOVERY_TTL seconds;
    SignInFailed when the provider is down, slow or answers nonsense."""
    issuer = str(settings.OIDC_ISSUER).rstrip("/")
    with _discovered_lock:
        cached = _discovered.get(issuer)
    if cached is not None and time.monotonic() - cached[0] < DISCOVERY_TTL:
        return cached[1]
    try:
        response = requests.get(
            f"{issuer}/.well-known/openid-configuration",
            timeout=settings.OIDC_TIMEOUT,
            verify=settings.OIDC_VERIFY_SSL,
        )
        response.raise_for_status()
        document = response.json()
        found = Discovery(
            issuer=str(document["issuer"]),
            authorization_endpoint=str(document["authorization_endpoint"]),
            token_endpoint=str(document["token_endpoint"]),
            userinfo_endpoint=str(document["userinfo_endpoint"]),
            jwks_uri=str(document["jwks_uri"]),
        )
    except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
        raise unreachable() from exc
    if found.issuer.rstrip("/") != issuer:
        # OpenID Connect Discovery 4.3: the document must name the issuer it
        # was fetched from, or its tokens' `iss` check means nothing.
        raise SignInFailed(_say(UNTRUSTED), status=502)
    with _discovered_lock:
        _discovered[issuer] = (time.monotonic(), found)
    return found


def forget_discovery() -> None:
    with _discovered_lock:
        _discovered.clear()


_ENDPOINT_SETTINGS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's `get_settings`, with the provider's endpoints
    taken from discovery instead of settings."""
    if name in _ENDPOINT_SETTINGS:
        return getattr(discover(), _ENDPOINT_SETTINGS[name])
    return getattr(settings, name, *default)


# ---------------------------------------------------------------- claims


def groups_from(claims: dict[str, Any]) -> tuple[str, ...]:
    """The groups claim: absent is no groups; a single name (some providers
    send one group as a string) is one group; anything but names refused."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(g, str) for g in value):
        return tuple(value)
    raise SignInFailed(_say(BAD_GROUPS))


def _text(claims: dict[str, Any], name: str) -> str:
    value = claims.get(name)
    return value.strip() if isinstance(value, str) else ""


def identity_from(claims: dict[str, Any]) -> Identity:
    username = _text(claims, settings.OIDC_USERNAME_CLAIM)
    if not username:
        raise SignInFailed(_say(NO_USERNAME, claim=settings.OIDC_USERNAME_CLAIM))
    verified = claims.get("email_verified", True)
    return Identity(
        method="oidc",
        subject=str(claims["sub"]),
        username=username[:150],
        email=_text(claims, settings.OIDC_EMAIL_CLAIM),
        # Only a real `true` counts (some providers send the string "false").
        email_verified=verified is True,
        first_name=_text(claims, settings.OIDC_FIRST_NAME_CLAIM),
        last_name=_text(claims, settings.OIDC_LAST_NAME_CLAIM),
        groups=groups_from(claims),
    )


# ---------------------------------------------------------------- the backend


class OIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    """Settings and endpoints are read at sign-in, not when Django builds the
    backend (it does so for every password sign-in and every request's
    `get_user`): a provider that is down must not break either."""

    request: HttpRequest
    get_settings: ClassVar[Any] = staticmethod(setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or not enabled() or "code_verifier" not in kwargs:
            return None
        found = discover()
        self.OIDC_OP_TOKEN_ENDPOINT = found.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = found.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks_uri
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.issuer = found.issuer
        try:
            return super().authenticate(request, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise unreachable() from exc
        except requests.HTTPError as exc:
            raise _token_refusal(exc.response) from exc
        except (SuspiciousOperation, jwt.PyJWTError, KeyError, ValueError) as exc:
            raise SignInFailed(_say(UNTRUSTED)) from exc

    def get_user(self, user_id: Any) -> Any:
        # mozilla-django-oidc's get_user skips ModelBackend's is_active check:
        # a switched-off account would stay signed in until its session ends.
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != self.issuer or self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token for another issuer or client")
        self.id_claims = payload
        return payload

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> Any:
        claims: dict[str, Any] = self.get_userinfo(access_token, id_token, payload)
        if claims.get("sub") != payload.get("sub"):
            # (Not SuspiciousOperation: mozilla-django-oidc's authenticate
            # swallows that one here.)
            raise SignInFailed(_say(UNTRUSTED))
        identity = identity_from(claims)
        try:
            return provision(identity, address=client_address(self.request))
        except Refused as refusal:
            raise SignInFailed(str(refusal), audited=True) from refusal


def _token_refusal(response: requests.Response | None) -> SignInFailed:
    """The token endpoint said no (RFC 6749, 5.2)."""
    if response is None or response.status_code >= 500:
        return unreachable()
    try:
        error = str(response.json().get("error", ""))
    except (ValueError, AttributeError):
        error = ""
    if error == "invalid_client" or response.status_code == 401:
        return SignInFailed(_say(CREDENTIALS), status=502)
    return SignInFailed(_say(CODE_REFUSED))
