"""LDAP / Active Directory sign-in: the site's username and password form
checks the password against the directory (django-python3-ldap over ldap3),
then signs the person in through `chat.accounts.provisioning.provision` with
their directory groups, like every provider.

Settings (README, "Sign-in with LDAP or Active Directory"): chatsite/settings.py
turns the `CHATSITE_LDAP_*` variables into the library's `LDAP_AUTH_*` settings
and the few of our own read here. The backend comes after Django's
`ModelBackend`, so local accounts (the admins) sign in whatever the directory
does.

What the library does: connect (StartTLS if asked), bind as the person
(`format_username`), rebind as the service account if one is set, and look the
person up. What it does not do, and we do: create or update the account (its own
`update_or_create` would skip the seam's checks: allowed email domains, an
unlinked account of that name, switched-off accounts, the audit log), read the
groups, and tell "wrong password" from "the directory does not answer" (it
logs both and returns nothing).

A refusal is raised as a `ValidationError`: `django.contrib.auth.authenticate`
lets it through, and the sign-in form shows its message in place of "wrong
username or password" (Django's forms turn a `ValidationError` from `clean`
into a form error).
"""

from __future__ import annotations

import logging
import uuid
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import ldap3
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext, gettext_noop
from django_python3_ldap import ldap as library
from django_python3_ldap import utils as library_utils
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import parse_dn

from chat.accounts.provisioning import Identity, Refused, provision
from chat.accounts.throttle import NOT_CHECKED
from chat.http.client_address import client_address
from chat.models import AuditEvent

logger = logging.getLogger(__name__)

UNREACHABLE = NOT_CHECKED  # the sign-in throttle does not count these
REFUSED = "ldap_refused"
UNREACHABLE_MESSAGE = gettext_noop(
    "The directory server (LDAP) that checks passwords here does not answer "
    "just now, so you cannot sign in with your directory account. Try again in a "
    "few minutes; if it goes on, tell your admins."
)
NO_IDENTIFIER_MESSAGE = gettext_noop(
    "The directory did not send the identifier this site needs for your "
    "account, so it cannot sign you in. Tell your admins (the LDAP settings "
    "name an identifier attribute the directory does not have)."
)


class LDAPBackend(ModelBackend):
    """Signs a directory person in; None when the directory does not know the
    username or the password is wrong (the form then says so)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if not (settings.LDAP_AUTH_URL and username and password):
            return None
        address = client_address(request) if request is not None else ""
        entry = _directory_entry(username, password, address)
        if entry is None:
            return None
        try:
            return provision(_identity(entry), address=address)
        except Refused as refusal:  # audited by provision
            raise ValidationError(str(refusal), code=REFUSED) from refusal

    async def aauthenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        # ModelBackend's own would check a local password: ldap3 blocks, so
        # the directory is asked in a thread.
        return await sync_to_async(self.authenticate)(
            request, username, password, **kwargs
        )


@dataclass(frozen=True)
class Entry:
    """A person's directory entry (as ldap3 decodes it, and `raw` as sent)
    and their groups' names."""

    dn: str
    attributes: dict[str, Any]
    raw: dict[str, Any]
    groups: list[str]

    def first(self, name: str) -> Any:
        value = self.attributes.get(name) if name else None
        if isinstance(value, list | tuple):
            value = value[0] if value else None
        return value


def _directory_entry(username: str, password: str, address: str) -> Entry | None:
    bound, entry, broke = False, None, False
    try:
        with library.connection(username=username, password=password) as found:
            if found is not None:
                bound = True
                entry = _look_up(found, username)
    except LDAPException as exc:
        # The library unbinds in a `finally`, and ldap3's unbind raises on a
        # connection that a failed StartTLS or the server closed; or the
        # search failed half-way.
        logger.warning("LDAP connection ended with an error: %s", exc)
        broke = True
    if entry is not None:
        return entry
    if (bound and not broke) or _directory_answers():
        return None  # wrong password, or no such person (for the search)
    AuditEvent.record(
        AuditEvent.Kind.SIGN_IN_FAILED,
        username=username,
        address=address,
        method="ldap",
        reason="the directory does not answer",
    )
    raise ValidationError(gettext(UNREACHABLE_MESSAGE), code=UNREACHABLE)


def _look_up(found: Any, username: str) -> Entry | None:
    """The person's entry, searched on the library's bound connection."""
    # The bound ldap3 connection: the library hands it to its own hooks
    # (LDAP_AUTH_SYNC_USER_RELATIONS' `connection`) the same way.
    conn: ldap3.Connection = found._connection
    if not found.has_user(username=username):
        return None  # bound, but outside the search base or the user filter
    result = (conn.response or [{}])[0]
    dn, attributes = str(result["dn"]), dict(result["attributes"])
    raw = dict(result.get("raw_attributes") or {})
    return Entry(dn, attributes, raw, _groups(conn, dn, attributes, username))


def _groups(
    conn: ldap3.Connection, dn: str, attributes: dict[str, Any], username: str
) -> list[str]:
    """Each group once by its full DN and once by its name (its DN's first
    value, e.g. the cn): a sign-in rule may name either (GroupRule.group)."""
    dns: list[str] = []
    if settings.CHATSITE_LDAP_GROUPS_ATTRIBUTE:  # e.g. memberOf
        value = attributes.get(settings.CHATSITE_LDAP_GROUPS_ATTRIBUTE) or []
        dns += [str(v) for v in (value if isinstance(value, list) else [value])]
    if settings.CHATSITE_LDAP_GROUP_SEARCH_BASE:
        search_filter = settings.CHATSITE_LDAP_GROUP_FILTER.format(
            dn=escape_filter_chars(dn), username=escape_filter_chars(username)
        )
        conn.search(
            settings.CHATSITE_LDAP_GROUP_SEARCH_BASE,
            search_filter,
            ldap3.SUBTREE,
            attributes=[],
        )
        # Skips search references (Active Directory's referrals at the root).
        found = conn.response or []
        dns += [str(r["dn"]) for r in found if r["type"] == "searchResEntry"]
    names: list[str] = []
    for group_dn in dict.fromkeys(dns):
        names.append(group_dn)
        try:
            names.append(str(parse_dn(group_dn)[0][1]))
        except (LDAPException, IndexError):
            logger.warning("LDAP group DN %r does not parse", group_dn)
    return list(dict.fromkeys(names))


def _identity(entry: Entry) -> Identity:
    fields = settings.LDAP_AUTH_USER_FIELDS
    raw_id = entry.raw.get(settings.CHATSITE_LDAP_ID_ATTRIBUTE) or [b""]
    subject = _identifier(raw_id[0])
    if not subject:
        logger.error(
            "LDAP entry %s has no %s (CHATSITE_LDAP_ID_ATTRIBUTE)",
            entry.dn,
            settings.CHATSITE_LDAP_ID_ATTRIBUTE,
        )
        raise ValidationError(gettext(NO_IDENTIFIER_MESSAGE), code=REFUSED)
    return Identity(
        method="ldap",
        subject=subject,
        username=str(entry.first(fields["username"]) or ""),
        email=str(entry.first(fields.get("email", "")) or ""),
        email_verified=True,  # the directory is the authority on its addresses
        first_name=str(entry.first(fields.get("first_name", "")) or ""),
        last_name=str(entry.first(fields.get("last_name", "")) or ""),
        groups=tuple(entry.groups),
    )


def _identifier(raw: bytes) -> str:
    """The identifier as the directory sent it: entryUUID as text, Active
    Directory's objectGUID as 16 bytes (written little-endian, the way AD's
    own tools show it). Read raw: without the schema (the library asks for
    none), ldap3 turns some GUIDs into text and others not."""
    if len(raw) == 16:
        return str(uuid.UUID(bytes_le=raw))
    return raw.decode("utf-8", errors="replace")


def _directory_answers() -> bool:
    """Whether any directory server answers an LDAP request (an anonymous
    bind, accepted or refused: either is an answer), over StartTLS if set.
    Only asked after a failed sign-in, to tell a wrong password from an
    outage."""
    for url in _urls():
        server = ldap3.Server(
            url,
            get_info=ldap3.NONE,
            connect_timeout=settings.LDAP_AUTH_CONNECT_TIMEOUT,
            # ldaps:// is set up in LDAP_AUTH_CONNECT_ARGS (chatsite/settings.py)
            tls=settings.LDAP_AUTH_CONNECT_ARGS.get("tls")
            or ldap3.Tls(**settings.LDAP_AUTH_TLS_ARGS),
        )
        conn = ldap3.Connection(
            server, receive_timeout=settings.LDAP_AUTH_RECEIVE_TIMEOUT
        )
        try:
            conn.open()
            if settings.LDAP_AUTH_USE_TLS:
                conn.start_tls(read_server_info=False)
            conn.bind(read_server_info=False)
            return True
        except LDAPException as exc:
            logger.warning("LDAP server %s does not answer: %s", url, exc)
        finally:
            with suppress(LDAPException):  # (raises on a broken connection)
                conn.unbind()
    return False


def _urls() -> list[str]:
    urls = settings.LDAP_AUTH_URL
    return list(urls) if isinstance(urls, list | tuple) else [urls]


# -- hooks named in the LDAP_AUTH_* settings (chatsite/settings.py)


def format_username(fields: dict[str, str]) -> str:
    """The name to bind as: the service account's DN as it is; a person as
    DOMAIN\\name or name@domain for Active Directory, else
    `<username attribute>=<name>,<search base>` (the library's OpenLDAP form)."""
    name = fields["username"]
    if name == settings.LDAP_AUTH_CONNECTION_USERNAME:
        return name
    if settings.LDAP_AUTH_ACTIVE_DIRECTORY_DOMAIN:
        if "." in settings.LDAP_AUTH_ACTIVE_DIRECTORY_DOMAIN:
            return str(library_utils.format_username_active_directory_principal(fields))
        return str(library_utils.format_username_active_directory(fields))
    return str(library_utils.format_username_openldap(fields))


def format_search_filters(ldap_fields: dict[str, str]) -> list[str]:
    """The library's filters, and `CHATSITE_LDAP_USER_FILTER` (e.g. only the
    members of one group) when set."""
    filters: list[str] = library_utils.format_search_filters(ldap_fields)
    extra = settings.CHATSITE_LDAP_USER_FILTER
    if extra:
        filters.append(extra if extra.startswith("(") else f"({extra})")
    return filters
