"""The user page's section of credentials for tool servers: its form and
context (answered by `chat.web.account.tool_credentials`, drawn by
templates/chat/_tool_credentials.html)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from chat.http.requests import SignedInRequest
from chat.models import ToolCredential, ToolServer

# A header's value: what one credential may be at most.
MAX_CHARS = 4000


class CredentialForm(forms.Form):
    value = forms.CharField(
        label=_("Credential"),
        max_length=MAX_CHARS,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}),
    )


def servers_taking_credentials(user: Any) -> list[ToolServer]:
    """The servers `user` may use that take a credential of theirs."""
    return list(
        ToolServer.objects.usable_by(user)
        .filter(transport=ToolServer.Transport.HTTP)
        .exclude(credential_header="")
        .order_by("name")
    )


def tool_credentials_section(
    request: SignedInRequest,
    *,
    notice: str = "",
    failed: tuple[int, CredentialForm] | None = None,
) -> dict[str, Any]:
    """The section's context; `failed`: a server's form with its errors."""
    mine = set(
        ToolCredential.objects.of(request.user).values_list("server_id", flat=True)
    )
    rows = [
        {
            "server": server,
            "is_set": server.pk in mine,
            "form": failed[1]
            if failed is not None and failed[0] == server.pk
            else CredentialForm(auto_id=f"id_credential_{server.pk}_%s"),
        }
        for server in servers_taking_credentials(request.user)
    ]
    return {"tool_credentials": rows, "tool_credentials_notice": notice}
