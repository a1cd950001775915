"""A tool server as the MCP client needs it: plain values read from its row
(`chat.models.ToolServer`), so that the client, on its own thread
(`chat.tools.mcp.thread`), touches no model."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chat.models import ToolCredential, ToolServer


@dataclass(frozen=True, slots=True)
class ServerConfig:
    pk: int
    slug: str
    name: str
    transport: str
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    timeout: float = 60.0
    # Changes with every save of the row: the tool lists cached are keyed by it.
    version: str = ""
    needs_approval: bool = False
    tools_needing_approval: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, server: ToolServer) -> ServerConfig:
        return cls(
            pk=server.pk,
            slug=server.slug,
            name=server.name,
            transport=server.transport,
            url=server.url.strip(),
            headers=tuple(sorted(server.headers.items())),
            command=server.command.strip(),
            args=tuple(server.args),
            env=tuple(sorted(server.env.items())),
            timeout=float(server.timeout),
            version=server.updated_at.isoformat() if server.updated_at else "",
            needs_approval=server.needs_approval,
            tools_needing_approval=frozenset(server.tools_needing_approval),
        )

    @property
    def source(self) -> str:
        """The `ToolSpec.source` of its tools."""
        return f"mcp:{self.pk}"

    @property
    def launch(self) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
        """What a stdio server is started with: a change restarts it."""
        return (self.command, self.args, self.env)

    def needs_approval_for(self, tool: str) -> bool:
        return self.needs_approval or tool in self.tools_needing_approval


def user_headers(
    server: ToolServer, credential: ToolCredential | None
) -> dict[str, str]:
    """The headers a user's calls carry: the server's, and the user's
    credential in the server's `credential_header` (when both are set)."""
    headers = dict(server.headers)
    value = credential.value() if credential is not None else None
    if server.credential_header and value:
        headers[server.credential_header] = server.credential_prefix + value
    return headers


def headers_digest(headers: Mapping[str, str]) -> str:
    """A digest of `headers` (a user's credential among them), for keys."""
    text = "\n".join(f"{name}: {value}" for name, value in sorted(headers.items()))
    return hashlib.sha256(text.encode()).hexdigest()
