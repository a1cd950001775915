"""MCP servers an admin adds as sources of tools (`chat.tools.mcp` talks to
them), and the credential each user gives for one."""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.offering import OfferedQuerySet

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

# A header name as HTTP has them (RFC 9110 token characters, the usual ones).
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


def default_tool_timeout() -> int:
    return int(settings.TOOL_CALL_TIMEOUT)


class ToolServer(models.Model):
    """An MCP server: reached at a Streamable HTTP address, or a command the
    site starts and keeps running (one process per server in each site
    process, `chat.tools.mcp.stdio`). Offered to everyone or to chosen teams,
    as model profiles are (`chat.models.offering`)."""

    class Transport(models.TextChoices):
        HTTP = "http", _("Streamable HTTP (an address)")
        STDIO = "stdio", _("stdio (a command the site runs)")

    name = models.CharField(max_length=100, verbose_name=_("name"))
    slug = models.SlugField(
        max_length=30,
        unique=True,
        help_text=_(
            "Short name the model sees before each tool's name "
            "(slug__tool): letters, digits, - and _."
        ),
        verbose_name=_("slug"),
    )
    transport = models.CharField(
        max_length=5,
        choices=Transport,
        default=Transport.HTTP,
        verbose_name=_("transport"),
    )
    url = models.CharField(
        max_length=500,
        blank=True,
        help_text=_("Streamable HTTP: the endpoint, e.g. http://tools-box:8000/mcp"),
        verbose_name=_("url"),
    )
    headers = models.JSONField(
        default=dict,
        blank=True,
        help_text=_(
            'Streamable HTTP: headers sent with every request, e.g. {"X-Team": "docs"}.'
        ),
        verbose_name=_("headers"),
    )
    command = models.CharField(
        max_length=500,
        blank=True,
        help_text=_("stdio: the program to run, e.g. npx or /usr/local/bin/mcp-git"),
        verbose_name=_("command"),
    )
    args = models.JSONField(
        default=list,
        blank=True,
        help_text=_('stdio: its arguments, e.g. ["-y", "@scope/server"].'),
        verbose_name=_("arguments"),
    )
    env = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("stdio: environment variables it gets (besides PATH, HOME…)."),
        verbose_name=_("environment"),
    )
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    teams = models.ManyToManyField(
        "chat.Team",
        blank=True,
        related_name="tool_servers",
        help_text=_("Only members of these teams may use its tools. None: everyone."),
        verbose_name=_("teams"),
    )
    needs_approval = models.BooleanField(
        default=False,
        help_text=_("The user confirms every call of its tools."),
        verbose_name=_("needs approval"),
    )
    tools_needing_approval = models.JSONField(
        default=list,
        blank=True,
        help_text=_('Tools whose every call the user confirms, e.g. ["delete_file"].'),
        verbose_name=_("tools needing approval"),
    )
    timeout = models.PositiveIntegerField(
        default=default_tool_timeout,
        help_text=_("Seconds a call may take before it fails."),
        verbose_name=_("timeout"),
    )
    credential_header = models.CharField(
        max_length=100,
        blank=True,
        help_text=_(
            "Streamable HTTP: each user gives their own value for this header "
            "(e.g. Authorization). Blank: none."
        ),
        verbose_name=_("credential header"),
    )
    credential_prefix = models.CharField(
        max_length=20,
        blank=True,
        help_text=_('Put before the user\'s value, e.g. "Bearer ".'),
        verbose_name=_("credential prefix"),
    )
    # Changes with every save: the tool lists cached by `chat.tools.mcp` are
    # keyed by it, so an admin's change is seen at the next turn.
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = OfferedQuerySet["ToolServer"].as_manager()

    class Meta:
        verbose_name = _("tool server")
        verbose_name_plural = _("tool servers")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def needs_approval_for(self, tool: str) -> bool:
        return self.needs_approval or tool in self.tools_needing_approval

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        if self.transport == self.Transport.HTTP:
            parts = urlsplit(self.url.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                errors["url"] = _("Enter the server's http:// or https:// address.")
            if not _is_str_map(self.headers) or not all(
                HEADER_NAME.match(name) for name in self.headers
            ):
                errors["headers"] = _("Give an object of header names and text values.")
            if self.credential_header and not HEADER_NAME.match(self.credential_header):
                errors["credential_header"] = _("Enter a header name.")
        else:
            if not self.command.strip():
                errors["command"] = _("Enter the command that starts the server.")
            if not isinstance(self.args, list) or not all(
                isinstance(arg, str) for arg in self.args
            ):
                errors["args"] = _("Give a list of texts.")
            if not _is_str_map(self.env):
                errors["env"] = _("Give an object of names and text values.")
        if not isinstance(self.tools_needing_approval, list) or not all(
            isinstance(tool, str) for tool in self.tools_needing_approval
        ):
            errors["tools_needing_approval"] = _("Give a list of tool names.")
        if errors:
            raise ValidationError(errors)


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and isinstance(item, str) for key, item in value.items()
    )


def _fernet(secret: str) -> Fernet:
    # A key of its own for credentials, derived from the site's secret: the
    # secret itself signs sessions and must not double as an encryption key.
    key = HKDF(
        algorithm=hashes.SHA256(),
        length=32,
        salt=b"chatsite",
        info=b"tool server credentials",
    ).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def credentials_cipher() -> MultiFernet:
    """Encrypts with SECRET_KEY's key, decrypts with it or a fallback's (so a
    rotated secret, kept in SECRET_KEY_FALLBACKS a while, loses nothing)."""
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet(secret) for secret in secrets])


class ToolCredentialQuerySet(models.QuerySet["ToolCredential"]):
    def of(self, user: AbstractBaseUser | AnonymousUser) -> ToolCredentialQuerySet:
        return self.filter(user_id=user.pk or 0)


class ToolCredential(models.Model):
    """The value a user gives for a server's `credential_header` (a token),
    encrypted at rest and never shown back: a page says only whether it is set."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="tool_credentials",
        verbose_name=_("user"),
    )
    server = models.ForeignKey(
        ToolServer,
        on_delete=models.CASCADE,
        related_name="credentials",
        verbose_name=_("server"),
    )
    encrypted = models.TextField(verbose_name=_("encrypted value"))
    updated_at = models.DateTimeField(auto_now=True, verbose_name=_("updated at"))

    objects = ToolCredentialQuerySet.as_manager()

    class Meta:
        verbose_name = _("tool credential")
        verbose_name_plural = _("tool credentials")
        constraints = [
            models.UniqueConstraint(
                fields=["user", "server"], name="one_tool_credential"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} for {self.server}"

    @classmethod
    def store(cls, user: AbstractBaseUser, server: ToolServer, value: str) -> None:
        """Set (or, with a blank value, forget) `user`'s credential for `server`."""
        value = value.strip()
        if not value:
            cls.objects.filter(user_id=user.pk, server=server).delete()
            return
        encrypted = credentials_cipher().encrypt(value.encode()).decode()
        cls.objects.update_or_create(
            user_id=user.pk, server=server, defaults={"encrypted": encrypted}
        )

    def value(self) -> str | None:
        """The credential, or None when no key of the site opens it (the
        secret changed and its old value is gone: the user gives it again)."""
        try:
            return credentials_cipher().decrypt(self.encrypted.encode()).decode()
        except InvalidToken:
            return None
